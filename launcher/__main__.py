"""`python -m launcher info | check | inspect | demo | bench`."""
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
    """Run the launch-latency suite, then write the Markdown table and chart."""
    roots = [Path(__file__).resolve().parent.parent / "bench", Path.cwd() / "bench"]
    root = next((r for r in roots if (r / "test_launch_latency.py").exists()), None)
    if root is None:
        print("bench/ not found: run from a checkout of the launcher repository", file=sys.stderr)
        return 2
    try:
        import torch

        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    if not has_gpu:
        print("python -m launcher bench needs an NVIDIA GPU and torch; none found, nothing measured.")
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / "bench.json"
    cmd = [sys.executable, "-m", "pytest", str(root / "test_launch_latency.py"), "-q", "-p", "no:cacheprovider",
           f"--benchmark-json={json_path}", "--benchmark-columns=median,iqr,rounds"] + args.pytest_args
    rc = subprocess.call(cmd, cwd=root)
    if not json_path.exists():
        return rc or 1
    sys.path.insert(0, str(root))
    import report

    report.main([str(json_path), "--markdown", str(out / "bench.md"), "--png", str(out / "bench.png")])
    print(f"wrote {json_path}, {out / 'bench.md'}, {out / 'bench.png'}")
    return rc


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "check":
        from launcher import fence

        return fence.main(argv[1:])
    if argv and argv[0] == "inspect":
        from launcher import bundle_inspect

        return bundle_inspect.main(argv[1:])
    ap = argparse.ArgumentParser(prog="python -m launcher", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="versions, driver, devices, caches")
    sub.add_parser("check", help="check PTX/TTGIR files or a Triton cache for missing proxy fences")
    sub.add_parser("inspect", help="list the kernels, variants and autotune choices of a bundle")
    sub.add_parser("demo", help="compile kernels, check their fences, compare launchers on a GPU")
    b = sub.add_parser("bench", help="launch-latency benchmarks (GPU) -> JSON, Markdown, PNG")
    b.add_argument("--out", default=os.environ.get("LAUNCHER_BENCH_OUT", "bench-results"))
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
