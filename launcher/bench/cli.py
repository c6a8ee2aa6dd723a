"""`python -m launcher bench`: run the launch-latency suite on this GPU and report it, re-report a
JSON, or compare two runs.

    python -m launcher bench [--out DIR] [--rounds N] [--batch N] [--cpu auto|all|N] [-k EXPR] [-- PYTEST ARGS]
    python -m launcher bench --report bench.json [--out DIR]
    python -m launcher bench --compare A.json B.json [--tolerance 0.10] [--hot-only] [--out DIR]

A run writes DIR/bench.json (pytest-benchmark's JSON: `--benchmark-compare` and
`pytest-benchmark compare` read it), DIR/bench.md and DIR/bench.png. The suite is the module
launcher/bench/suite.py of the installed package, run by pytest in a process of its own, pinned
to one CPU (launcher/bench/cpu.py: by default the least busy one).

Exit status of a run: 0 when everything measured; 1 when some test of the suite failed (what
was measured is still reported); 3 when nothing can be measured here (no GPU, no torch, no
Triton, no pytest or pytest-benchmark), with the reason on stderr. `--compare` exits 0 when
every ratio agrees, 1 when one differs or is missing, 2 when a file cannot be read.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_NOTHING_MEASURED = 0, 1, 2, 3
SUITE = Path(__file__).resolve().with_name("suite.py")
NEEDED = (("pytest", "pytest"), ("pytest_benchmark", "pytest-benchmark"), ("triton", "triton"), ("torch", "torch"))


def preflight() -> str | None:
    """Why nothing can be measured in this environment, or None when the suite can run."""
    missing = [dist for module, dist in NEEDED if importlib.util.find_spec(module) is None]
    if missing:
        return (f"python -m launcher bench: nothing measured: it needs {', '.join(missing)}, not installed "
                "(pip install 'launcher[bench]' and a CUDA build of torch)")
    import torch

    if not torch.cuda.is_available():
        return ("python -m launcher bench: nothing measured: it needs an NVIDIA GPU that torch can use, "
                "and torch.cuda.is_available() is False here")
    return None


def _out_dir(args) -> Path:
    return Path(args.out or os.environ.get("LAUNCHER_BENCH_OUT") or "bench-results").resolve()


def report_json(json_path: Path, out: Path) -> int:
    from launcher.bench import report, results

    try:
        run = results.load(json_path)
    except results.BenchFileError as e:
        print(e, file=sys.stderr)
        return EXIT_BAD_INPUT
    out.mkdir(parents=True, exist_ok=True)
    md, png = out / "bench.md", out / "bench.png"
    try:
        report.write(run, md, png)
    except ImportError as e:  # no matplotlib: the report without its chart
        report.write(run, md, None)
        print(f"no chart ({e}); wrote {md}", file=sys.stderr)
        return EXIT_OK
    print(f"wrote {md}" + (f" and {png}" if run.of_kind("hot") else ""))
    return EXIT_OK


def run_suite(args) -> int:
    why = preflight()
    if why:
        print(why, file=sys.stderr)
        return EXIT_NOTHING_MEASURED
    out = _out_dir(args)
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / "bench.json"
    if json_path.exists():
        json_path.unlink()  # a stale file must never be reported as this run
    from launcher.bench import cpu

    try:
        choice = cpu.choose(getattr(args, "cpu", None) or "auto")
    except ValueError as e:
        print(f"python -m launcher bench: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    env = dict(os.environ)
    env[cpu.ENV] = json.dumps(choice)
    for flag, var in (("rounds", "LAUNCHER_BENCH_ROUNDS"), ("batch", "LAUNCHER_BENCH_BATCH")):
        value = getattr(args, flag, None)
        if value is not None:
            env[var] = str(value)
    cmd = [sys.executable, "-m", "pytest", str(SUITE), "-q", "-rs", "-p", "no:cacheprovider",
           "-c", os.devnull, "--rootdir", str(SUITE.parent), "--confcutdir", str(SUITE.parent),
           f"--benchmark-json={json_path}",
           "--benchmark-columns=median,iqr,rounds", "--benchmark-sort=name"]
    if getattr(args, "select", None):
        cmd += ["-k", args.select]
    cmd += list(getattr(args, "pytest_args", None) or [])
    # No ini file and no conftest from above the package: the suite runs the same from a wheel
    # and from a checkout. cwd is the output folder, so that a checkout in the current folder is
    # not imported in place of the installed package.
    rc = subprocess.call(cmd, cwd=out, env=env, preexec_fn=cpu.pinner(choice))
    if not json_path.exists():
        if rc in (0, 5):  # 5: every test skipped or deselected
            print(f"python -m launcher bench: nothing measured: the suite skipped everything (pytest exited {rc})",
                  file=sys.stderr)
            return EXIT_NOTHING_MEASURED
        print(f"python -m launcher bench: the suite failed before writing results (pytest exited {rc})",
              file=sys.stderr)
        return EXIT_FAILED
    from launcher.bench import results

    try:
        results.load(json_path)
    except results.BenchFileError as e:
        print(f"python -m launcher bench: nothing measured: {e}", file=sys.stderr)
        return EXIT_NOTHING_MEASURED
    status = report_json(json_path, out)
    print(f"wrote {json_path}")
    if rc:
        print(f"python -m launcher bench: some tests of the suite failed (pytest exited {rc})", file=sys.stderr)
        return EXIT_FAILED
    return status


def main(args) -> int:
    """Run the `bench` command for parsed arguments (launcher/__main__.py builds the parser)."""
    if getattr(args, "compare", None):
        from launcher.bench import compare

        a, b = args.compare
        out = (_out_dir(args) / "compare.md") if args.out else None
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
        return compare.main(a, b, tolerance=args.tolerance, hot_only=args.hot_only, out=out)
    if getattr(args, "report", None):
        return report_json(Path(args.report), _out_dir(args))
    return run_suite(args)
