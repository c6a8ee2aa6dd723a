"""Per launch (GPU): host time of `k[grid](...)` from a bundle against Triton's `kernel[grid](...)`.

    python bench/bundle_launch.py [--out DIR] [--batches 40] [--per 500]

For each kernel (vector add with a constexpr keyword, 16 mixed scalars and pointers, a nested
tuple), the same call is made through Triton's JIT (stock launcher) and from a bundle captured
from those very calls, in one process, interleaved batch by batch (the order alternates).
A batch is `--per` launches timed on the host, then a synchronisation; the figure is the
median over batches, in microseconds per launch. Writes bundle_launch.json and
bundle_launch.md to --out. Goal: the bundle path at most half of Triton's JIT path.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def calls(torch, K):
    """(name, JIT function, grid, args, kwargs) of the measured calls."""
    x = torch.rand(1024, device="cuda")
    y = torch.rand(1024, device="cuda")
    out = torch.empty(1024, device="cuda")
    p = [torch.rand(4, device="cuda") for _ in range(4)]
    return [
        ("vector add (5 args)", K.add, (1,), (x, y, out, 1000), {"BLOCK": 1024}),
        ("16 mixed", K.mixed16, (1,), (*p, 3, 5, 7, 9, 1.5, 2.5, 3.5, 4.5, 2**40, 2**41, 2**42, 2**43), {}),
        ("nested tuple", K.nested_tuple, (1,), (out, (x, 3), ((y, 5), (2, 1.5)), 2.0), {}),
    ]


def timed(fn, per):
    t0 = time.perf_counter_ns()
    for _ in range(per):
        fn()
    return (time.perf_counter_ns() - t0) / per / 1e3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "bench-results"))
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--per", type=int, default=500)
    args = ap.parse_args(argv)
    import torch
    import triton

    import launcher

    sys.path.insert(0, HERE)
    import bundle_bench_kernels as K

    os.makedirs(args.out, exist_ok=True)
    bundle_path = os.path.join(tempfile.mkdtemp(prefix="bundle-launch-"), "launch.bundle")
    cases = calls(torch, K)
    with launcher.capture(bundle_path):
        for _name, fn, grid, a, kw in cases:
            fn[grid](*a, **kw)
    torch.cuda.synchronize()
    bundle = launcher.load_bundle(bundle_path)
    rows = []
    for name, fn, grid, a, kw in cases:
        k = bundle[fn.__name__]
        paths = {"triton": lambda: fn[grid](*a, **kw), "bundle": lambda: k[grid](*a, **kw)}
        for f in paths.values():  # warm: compile, load, make the fast paths hot
            for _ in range(10):
                f()
        samples = {p: [] for p in paths}
        for b in range(args.batches):
            order = list(paths.items())
            if b % 2:
                order.reverse()
            for p, f in order:
                torch.cuda.synchronize()
                samples[p].append(timed(f, args.per))
        torch.cuda.synchronize()
        med = {p: statistics.median(v) for p, v in samples.items()}
        rows.append({"kernel": name, "us": med, "ratio": med["bundle"] / med["triton"],
                     "spread": {p: [min(v), max(v)] for p, v in samples.items()}})
    lines = [f"Host time per launch, us (median of {args.batches} batches of {args.per}; Triton "
             f"{triton.__version__}, torch {torch.__version__}):", ""]
    cols = list(rows[0]["us"])
    lines.append("| kernel | " + " | ".join(cols) + " | bundle / triton |")
    lines.append("|---" * (len(cols) + 2) + "|")
    for r in rows:
        lines.append(f"| {r['kernel']} | " + " | ".join(f"{r['us'][c]:.2f}" for c in cols) + f" | {r['ratio']:.2f} |")
    lines += ["", "Goal: bundle / triton at most 0.5 (the bundle path at most half of Triton's JIT path)."]
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(args.out, "bundle_launch.json"), "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d %H:%M"), "batches": args.batches, "per": args.per,
                   "triton_version": triton.__version__, "rows": rows}, f, indent=2)
    with open(os.path.join(args.out, "bundle_launch.md"), "w") as f:
        f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
