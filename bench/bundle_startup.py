"""Startup (GPU): time to the first launch of each of 20 kernels in a fresh process.

    python bench/bundle_startup.py [--out DIR] [--runs 5]

Both paths start after `import torch` and torch's CUDA initialisation, with the inputs
allocated; the clock then runs until every kernel has been launched once and the device has
finished (torch.cuda.synchronize()).
- Triton path: `import triton`, import the kernels' module, the first launch of each kernel
  through Triton's JIT, from a warm Triton cache (stock launcher, as Triton ships).
- Bundle path: `import launcher`, `launcher.load_bundle(...)`, the first launch of each kernel
  from the bundle, in a process where `import triton` fails.
A first process warms a private Triton cache (compiling the kernels and Triton's launchers)
and captures the bundle; then the two paths alternate, `--runs` fresh processes each.
Writes bundle_startup.json and bundle_startup.md to --out. Goal: the bundle path at least 10x
faster than the Triton path.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
N = 4096


def _inputs():
    import torch

    torch.cuda.init()
    x = torch.rand(N, device="cuda")
    out = torch.empty(N, device="cuda")
    torch.cuda.synchronize()
    return x, out


def child_prepare(bundle):
    import torch
    import triton

    import launcher

    sys.path.insert(0, HERE)
    import bundle_bench_kernels as K

    x, out = _inputs()
    with launcher.capture(bundle):
        for k in K.STARTUP:
            k[(triton.cdiv(N, 1024),)](x, out, N, BLOCK=1024)
    torch.cuda.synchronize()
    print(json.dumps({"kernels": len(K.STARTUP), "triton": triton.__version__}))


def child_triton():
    x, out = _inputs()
    import torch

    t0 = time.perf_counter()
    import triton

    t_import = time.perf_counter()
    sys.path.insert(0, HERE)
    import bundle_bench_kernels as K

    for k in K.STARTUP:
        k[(triton.cdiv(N, 1024),)](x, out, N, BLOCK=1024)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    print(json.dumps({"total_ms": (t1 - t0) * 1e3, "import_ms": (t_import - t0) * 1e3,
                      "launches_ms": (t1 - t_import) * 1e3}))


def child_bundle(bundle):
    sys.modules["triton"] = None  # this path must not need Triton
    x, out = _inputs()
    import torch

    t0 = time.perf_counter()
    import launcher

    t_import = time.perf_counter()
    b = launcher.load_bundle(bundle)
    t_load = time.perf_counter()
    for i in range(20):
        b[f"k{i:02d}"][((N + 1023) // 1024,)](x, out, N, BLOCK=1024)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    loaded = [m for m, mod in sys.modules.items() if mod is not None and m.split(".")[0] == "triton"]
    assert not loaded, loaded
    print(json.dumps({"total_ms": (t1 - t0) * 1e3, "import_ms": (t_import - t0) * 1e3,
                      "load_ms": (t_load - t_import) * 1e3, "launches_ms": (t1 - t_load) * 1e3}))


def _run(mode, env, *args):
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", mode, *args], capture_output=True,
                          text=True, env=env, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} child failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _summary(runs, key):
    values = [r[key] for r in runs]
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "bench-results"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        mode, *rest = args.child
        {"prepare": child_prepare, "triton": child_triton, "bundle": child_bundle}[mode](*rest)
        return 0
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="bundle-startup-")
    env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(work, "triton-cache"))
    bundle = os.path.join(work, "startup.bundle")
    info = _run("prepare", env, bundle)
    triton_runs, bundle_runs = [], []
    for i in range(args.runs):  # alternate, so that drift affects both
        order = [("triton", triton_runs, ()), ("bundle", bundle_runs, (bundle,))]
        for mode, sink, extra in (order if i % 2 == 0 else order[::-1]):
            sink.append(_run(mode, env, *extra))
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M"), "runs": args.runs, "kernels": info["kernels"],
        "triton_version": info["triton"], "bundle_bytes": os.path.getsize(bundle),
        "triton": {k: _summary(triton_runs, k) for k in ("total_ms", "import_ms", "launches_ms")},
        "bundle": {k: _summary(bundle_runs, k) for k in ("total_ms", "import_ms", "load_ms", "launches_ms")},
        "raw": {"triton": triton_runs, "bundle": bundle_runs},
    }
    speedup = result["triton"]["total_ms"]["median"] / result["bundle"]["total_ms"]["median"]
    result["speedup"] = speedup
    lines = [
        f"Startup to the first launch of each of {info['kernels']} kernels (fresh processes, after import torch; "
        f"median of {args.runs}, min-max), Triton {info['triton']}:",
        "",
        "| path | total ms | import ms | load ms | first launches ms |",
        "|---|---|---|---|---|",
    ]
    for name, key in (("Triton (warm cache)", "triton"), ("bundle (no Triton)", "bundle")):
        r = result[key]
        cell = lambda k: (f"{r[k]['median']:.1f} ({r[k]['min']:.1f}-{r[k]['max']:.1f})" if k in r else "-")  # noqa: E731
        lines.append(f"| {name} | {cell('total_ms')} | {cell('import_ms')} | {cell('load_ms')} | {cell('launches_ms')} |")
    lines += ["", f"Speed-up of the bundle path: {speedup:.1f}x (goal: at least 10x). "
                  f"Bundle: {result['bundle_bytes']} bytes."]
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(args.out, "bundle_startup.json"), "w") as f:
        json.dump(result, f, indent=2)
    with open(os.path.join(args.out, "bundle_startup.md"), "w") as f:
        f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
