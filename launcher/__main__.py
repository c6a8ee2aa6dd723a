"""`python -m launcher info | check | inspect | demo | bench`, and `--version`."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


HOOK = "launcher-autoinstall.pth"
DIST = "triton-launcher"  # the distribution (pip's name); the package and the command are `launcher`


def version() -> str:
    """The version of the installed distribution (its metadata), else launcher.__version__ (a
    source tree on sys.path): pyproject.toml reads the version from launcher.__version__."""
    from importlib import metadata

    try:
        return metadata.version(DIST)
    except metadata.PackageNotFoundError:
        import launcher

        return launcher.__version__


def _site_dirs() -> list[str]:
    import site

    dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return list(dict.fromkeys(dirs))


def _install_kind() -> tuple[str, str]:
    """("editable" | "wheel" | "not installed", where) for the launcher this process imports."""
    import json
    from importlib import metadata

    try:
        dist = metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        return "not installed", str(Path(__file__).resolve().parent)
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        direct = {}
    where = str(dist.locate_file(""))
    return ("editable" if direct.get("dir_info", {}).get("editable") else "wheel"), where


def autoinstall_status(site_dirs: list[str] | None = None, environ=None) -> list[str]:
    """What LAUNCHER_INSTALL=1 does in this Python, and why, as lines for `info`."""
    environ = os.environ if environ is None else environ
    site_dirs = _site_dirs() if site_dirs is None else site_dirs
    from launcher.install import env_flag

    hooks = [os.path.join(d, HOOK) for d in site_dirs if os.path.isfile(os.path.join(d, HOOK))]
    value = environ.get("LAUNCHER_INSTALL", "")
    try:
        active, problem = env_flag("LAUNCHER_INSTALL", environ), None
    except ValueError as e:
        active, problem = False, str(e)
    if hooks:
        lines = [f"hook installed: {hooks[0]}"]
        if problem:
            lines.append(f"{problem}; the hook does nothing (it warns on stderr at start-up)")
        elif active:
            lines.append(f"LAUNCHER_INSTALL={value}: launcher.install() runs when triton is imported")
        else:
            lines.append(f"LAUNCHER_INSTALL is {'not set' if not value else repr(value)}: the hook does nothing "
                         "(set it to 1 to install launcher in every process of this Python)")
        return lines
    kind, where = _install_kind()
    if kind == "not installed":
        why = (f"launcher is not installed in this Python; it is imported from {where} through sys.path. "
               "`pip install .` or `pip install -e .` installs the hook")
    elif kind == "editable":
        why = ("this editable install did not put it there (one made by an older launcher, or by "
               "`setup.py develop`); `pip install -e .` again installs it")
    else:
        why = f"the installed files are incomplete; reinstall it (pip install --force-reinstall {DIST})"
    return [f"hook NOT installed: no {HOOK} in {', '.join(site_dirs) or 'any site-packages'}",
            f"so LAUNCHER_INSTALL=1 does nothing here{' (it is set)' if active or problem else ''}: {why}. "
            "launcher.install() works either way"]


def info(args) -> int:
    import platform

    import launcher
    from launcher import driver

    print(f"launcher       {launcher.__version__} ({Path(launcher.__file__).parent})")
    print(f"python         {platform.python_version()}")
    for mod in ("triton", "cuda.bindings", "cffi", "torch"):
        try:
            m = __import__(mod, fromlist=["__version__"])
            print(f"{mod:14s} {getattr(m, '__version__', '?')}")
        except ImportError:
            print(f"{mod:14s} not installed")
    try:
        ffi, lib = driver.native()
        print(f"native library {Path(sys.modules['launcher._native'].__file__).name}")
    except ImportError as e:
        print(f"native library MISSING: {e}")
        return 1
    try:
        driver.ensure_driver()
        n = driver.device_count()
        version = driver.driver_version()
        print(f"CUDA driver    {version // 1000}.{version % 1000 // 10}, {n} device(s)")
        for i in range(n):
            print(f"  device {i}: {driver.device_name(i)}")
    except driver.CudaError as e:
        print(f"CUDA driver    {e}")
    installed = launcher.is_installed()
    how = ""
    if installed and "launcher._autoinstall" in sys.modules:
        how = " (by LAUNCHER_INSTALL=1, through the .pth hook)"
    elif not installed:
        how = " (launcher.install() has not run in this process)"
    print(f"installed      {installed}{how}")
    for i, line in enumerate(autoinstall_status()):
        print(f"{'autoinstall' if i == 0 else '':14s} {line}")
    fd = launcher.fast_dispatch_stats()
    fallbacks = ", ".join(f"{n} {why}" for why, n in sorted(fd["fallbacks"].items(), key=lambda kv: -kv[1])) or "none"
    print(f"fast dispatch  {'on' if fd['enabled'] else 'off'}: {fd['guarded kernels']} kernels guarded, "
          f"hits {fd['hits']}, misses {fd['misses']}, fallbacks: {fallbacks}")
    s = launcher.module_cache().snapshot()
    print(f"module cache   capacity {launcher.module_cache().capacity}, {s.modules} loaded "
          f"({s.held} held, {s.bytes_held} bytes), hits {s.hits}, misses {s.misses}, "
          f"loads {s.loads}, unloads {s.unloads}")
    hits, misses = driver.pointer_cache_stats()
    print(f"pointer checks range-cache hits {hits} (this thread), driver queries {misses}")
    return 0


def bench(args) -> int:
    """Run the launch-latency suite and report it, re-report a JSON, or compare two runs
    (launcher/bench/cli.py; imported only here, so that `import launcher` never loads it)."""
    from launcher.bench import cli

    return cli.main(args)


COMMANDS = (
    ("demo", "compile a few kernels, show what the fence check finds; on a GPU, launch through stock Triton "
             "and launcher and compare"),
    ("info", "versions, native library, CUDA driver and devices, whether launcher is installed "
             "(and the LAUNCHER_INSTALL hook), cache counters"),
    ("check", "fence-check .ptx/.ttgir files or a Triton cache directory (`check --help`)"),
    ("inspect", "the kernels, variants, targets and autotune choices of a bundle (`inspect --help`)"),
    ("bench", "launch-latency benchmarks on a GPU -> JSON, Markdown, PNG"),
    ("show-generated", "print the code generated for a kernel: MODULE:KERNEL (the guarded fast path) or "
                       "BUNDLE KERNEL (a bundled kernel's call) (`show-generated --help`)"),
)


def _prog() -> str:
    """`python -m launcher` or `launcher` (the console script), as the user typed it."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "python -m launcher" if name in ("", "-c", "__main__.py") else name


class _VersionAction(argparse.Action):
    """--version: the version, looked up only when asked for."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print launcher's version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"launcher {version()}")
        parser.exit()


def main(argv=None) -> int:
    """The command line; its exit status. Output into a pipe that closed early (`launcher info |
    head -1`) ends it quietly, with 141 (128 + SIGPIPE) as a shell reports a process killed so."""
    try:
        try:
            return _main(argv)
        finally:  # (--help and --version exit through here too)
            sys.stdout.flush()  # a broken pipe surfaces here, not at exit where it cannot be caught
    except BrokenPipeError:
        try:  # what is left in stdout's buffer goes nowhere, and interpreter exit does not fail on it
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 141


def _main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "check":
        from launcher import fence

        return fence.main(argv[1:])
    if argv and argv[0] == "inspect":
        from launcher import bundle_inspect

        return bundle_inspect.main(argv[1:])
    prog = _prog()
    if argv and argv[0] == "show-generated":
        from launcher import show_generated

        return show_generated.main(argv[1:], prog=f"{prog} show-generated")
    ap = argparse.ArgumentParser(
        prog=prog,
        description="launcher: a precompiled, checked drop-in replacement for Triton's NVIDIA kernel launcher. "
                    "The same commands run as `launcher COMMAND` and `python -m launcher COMMAND`.",
        epilog=f"`{prog} COMMAND --help` shows a command's options.")
    ap.add_argument("--version", action=_VersionAction)
    sub = ap.add_subparsers(dest="cmd", title="commands", metavar="COMMAND")
    parsers = {name: sub.add_parser(name, help=text, description=text) for name, text in COMMANDS}
    b = parsers["bench"]
    b.description = ("Interleaved launch-latency benchmarks. Exit status: 0 measured, 1 a test failed or "
                     "(--compare) a ratio differs, 2 unreadable input, 3 nothing can be measured here (no GPU, "
                     "torch, Triton or pytest-benchmark).")
    b.add_argument("--out", default=None, metavar="DIR",
                   help="where bench.json, bench.md and bench.png go ($LAUNCHER_BENCH_OUT, else ./bench-results)")
    b.add_argument("--rounds", type=int, help="interleaved rounds per kernel (default 40)")
    b.add_argument("--batch", type=int, help="launches per path per round (default 500)")
    b.add_argument("--cpu", default="auto", metavar="auto|all|N",
                   help="pin the suite to the least busy CPU (auto, the default), to CPU N, or not at all (all)")
    b.add_argument("-k", dest="select", metavar="EXPR", help="only the suite's tests matching EXPR (pytest -k)")
    b.add_argument("--report", metavar="JSON", help="write bench.md and bench.png from an earlier bench.json")
    b.add_argument("--compare", nargs=2, metavar=("A.json", "B.json"),
                   help="two runs side by side; exit 1 when a ratio differs by more than --tolerance")
    b.add_argument("--tolerance", type=float, default=0.10, help="for --compare (default 0.10: ±10%%)")
    b.add_argument("--hot-only", action="store_true", help="for --compare: only the hot launch paths")
    b.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = ap.parse_args(argv)
    if args.cmd is None:  # no command: say what there is
        ap.print_help()
        return 0
    if args.cmd == "info":
        return info(args)
    if args.cmd == "demo":
        from launcher import demo

        return demo.main()
    return bench(args)


if __name__ == "__main__":
    sys.exit(main())
