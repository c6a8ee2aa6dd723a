"""`python -m launcher info | check | demo | bench`."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path


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
    print(f"installed      {launcher.is_installed()}")
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


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "check":
        from launcher import fence

        return fence.main(argv[1:])
    ap = argparse.ArgumentParser(prog="python -m launcher", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="versions, driver, devices, caches")
    sub.add_parser("check", help="check PTX/TTGIR files or a Triton cache for missing proxy fences")
    sub.add_parser("demo", help="compile kernels, check their fences, compare launchers on a GPU")
    b = sub.add_parser("bench", help="launch-latency suite (GPU) -> JSON, Markdown, PNG; or compare two runs",
                       description="Interleaved launch-latency benchmarks. Exit status: 0 measured, 1 a test "
                                   "failed or (--compare) a ratio differs, 2 unreadable input, 3 nothing can be "
                                   "measured here (no GPU, torch, Triton or pytest-benchmark).")
    b.add_argument("--out", default=None, metavar="DIR",
                   help="where bench.json, bench.md and bench.png go ($LAUNCHER_BENCH_OUT, else ./bench-results)")
    b.add_argument("--rounds", type=int, help="interleaved rounds per kernel (default 40)")
    b.add_argument("--batch", type=int, help="launches per path per round (default 500)")
    b.add_argument("-k", dest="select", metavar="EXPR", help="only the suite's tests matching EXPR (pytest -k)")
    b.add_argument("--report", metavar="JSON", help="write bench.md and bench.png from an earlier bench.json")
    b.add_argument("--compare", nargs=2, metavar=("A.json", "B.json"),
                   help="two runs side by side; exit 1 when a ratio differs by more than --tolerance")
    b.add_argument("--tolerance", type=float, default=0.10, help="for --compare (default 0.10: ±10%%)")
    b.add_argument("--hot-only", action="store_true", help="for --compare: only the hot launch paths")
    b.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = ap.parse_args(argv)
    if args.cmd == "info":
        return info(args)
    if args.cmd == "demo":
        from launcher import demo

        return demo.main()
    return bench(args)


if __name__ == "__main__":
    sys.exit(main())
