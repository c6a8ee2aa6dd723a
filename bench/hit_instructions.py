"""Instructions per guard hit, counted on the CPU (no GPU): what docs/performance.md quotes as
"the CPU harness". Needs valgrind, torch (CPU build) and Triton.

    python bench/hit_instructions.py [--case add|mixed19|args64] [--hits 2000 12000] [--python PY]

A hit is `kernel[grid](...)` with the fast dispatch on, as users write it, where Triton's driver
is tests/cpu_triton's (compiles for sm_90 on the CPU) and every launch is launcher's dry run: the
key, lookup, checks and packing are the real ones, the driver call is not made (its place is
taken by the dry run's copy of the bytes). The count is callgrind's total over a process that
makes N hits after three warm-up calls; the difference of two N divided by their difference is
what one more hit costs, without the process's start-up (both processes run with one hash seed
and BLAS threads off, and stop if a counted call was not a hit). Instruction counts are stable from run
to run (unlike time on a shared machine), so they show what a change to the hit's code did
before the GPU can time it; they are not launch latency (no driver, no GIL hand-over, no cache
misses counted as time).

Cases: add (vector add: three torch tensors, an int, BLOCK=1024 by keyword), mixed19 (five
tensors, five small ints, four 2**40 ints, five floats), args64 (a tensor and 63 ints), decode
(the suite's decode step, its eight calls written out as the suite writes them; --hits counts
steps, and the count printed is per launch).
`--profile DIR` keeps the callgrind files (callgrind_annotate reads them).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile

from launcher.bench import decode  # torch-free

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _workload(case: str, hits: int) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    import torch

    import cpu_triton
    from launcher import fast_dispatch
    from launcher.bench import kernels, sites
    from launcher.bench.kernels import add, args64, mixed19  # the suite's kernels

    steps = [getattr(kernels, name) for name in decode.KERNELS]
    with cpu_triton.cpu_triton(90, add, args64, mixed19, *steps, quiet=True):  # launches record nothing
        fast_dispatch.enable()
        out = torch.zeros(1024)
        g = (1,)
        if case == "add":
            x, y = torch.zeros(1024), torch.zeros(1024)

            def step():
                add[g](x, y, out, 1000, BLOCK=1024)
        elif case == "args64":
            vals = list(range(2, 65))

            def step():
                args64[g](out, *vals)
        elif case == "decode":  # the suite's decode step: eight launches of four kernels, a hit each
            buf = {name: torch.zeros(shape) for name, shape in decode.SHAPES.items()}
            step = sites.sequence([(f"k{i}[grid{i}]", {f"k{i}": getattr(kernels, name), f"grid{i}": grid}, args, kw)
                                   for i, (name, grid, args, kw) in enumerate(decode.launches(buf))])  # as the suite calls it
        else:
            a = (*[torch.zeros(1) for _ in range(5)], 3, 5, 7, 9, 11, *[2**40 + k for k in (1, 3, 5, 7)],
                 0.5, 1.5, 2.5, 3.5, 4.5)

            def step():
                mixed19[g](*a)
        for _ in range(3):
            step()
        before = fast_dispatch.stats()
        for _ in range(hits):
            step()
        after = fast_dispatch.stats()
        if after["hits"] - before["hits"] != hits * _PER_STEP.get(case, 1) or any(after[k] != before[k] for k in ("misses", "fallbacks")):
            sys.exit(f"not every call was a hit: {before} -> {after}")  # a count of something else


_PER_STEP = {"decode": decode.LAUNCHES_PER_STEP}  # hits per step of a case


def _count(python: str, case: str, hits: int, out: str) -> int:
    # no idle BLAS threads; one hash seed, so that the two processes' start-ups match
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONHASHSEED="0")
    r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", python, __file__,
                        "--run", case, str(hits)], env=env, capture_output=True, text=True)
    m = re.search(r"Collected\s*:\s*([\d,]+)", r.stderr)
    if r.returncode or not m:
        sys.exit(f"callgrind failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return int(m.group(1).replace(",", ""))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", default="add", choices=("add", "mixed19", "args64", "decode"))
    ap.add_argument("--hits", type=int, nargs=2, default=(2000, 12000))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--profile", help="keep the callgrind files in this folder")
    ap.add_argument("--run", nargs=2, help=argparse.SUPPRESS)  # the workload itself, under valgrind
    a = ap.parse_args(argv)
    if a.run:
        _workload(a.run[0], int(a.run[1]))
        return 0
    lo, hi = sorted(a.hits)
    if lo == hi:
        ap.error("--hits needs two different numbers")
    # one process first, uncounted: Triton's cache then holds the kernels, so that neither count
    # below includes a compile (the first process would, and the difference would lose it)
    warm = subprocess.run([a.python, __file__, "--run", a.case, "0"], capture_output=True, text=True)
    if warm.returncode:
        sys.exit(f"the workload failed ({warm.returncode}):\n{warm.stderr[-3000:]}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = a.profile or tmp
        os.makedirs(folder, exist_ok=True)
        counts = [_count(a.python, a.case, n, os.path.join(folder, f"callgrind.{a.case}.{n}")) for n in (lo, hi)]
    per = _PER_STEP.get(a.case, 1)
    print(f"{a.case}: {(counts[1] - counts[0]) / (hi - lo) / per:,.0f} instructions per hit "
          f"({lo} and {hi} {'steps' if per > 1 else 'hits'}: {counts[0]:,} and {counts[1]:,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
