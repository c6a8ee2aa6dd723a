"""Typical small calls into third-party Triton libraries, stock against launcher (GPU; .ci/h200.sh's
third-party-ops phase, with the wheels of .ci/third_party_fetch.sh installed).

    python3 .ci/third_party_ops.py [--rounds 30] [--calls 200]

Ops (small shapes, launch-bound): FlagGems through torch under `flag_gems.use_gems()` (add, softmax,
layer_norm, sum) and Liger-Kernel's LigerRMSNorm forward and SwiGLU (LigerSiLUMulFunction) forward.

A kernel keeps the launcher it was loaded with, and these libraries hold their kernels in
module-level objects (FlagGems' LibEntry even keeps the compiled kernels in a cache of its own and
launches them itself), so stock and launcher cannot share one process: two worker processes run
side by side, one stock (launcher not even imported), one with launcher.install() before any
kernel is loaded. Each worker warms every op, then the parent runs interleaved rounds: each round
runs, for each op, a batch of CALLS calls in each path (stock; launcher with its guard off; launcher
with its guard on, switched per batch with launcher.install(fast_dispatch=True/False)), a
synchronisation before each batch, the order of the paths reversed every other round, one worker
at a time. Reported: the median µs per call of each path, the median of the per-round ratios to
stock's, and the guard's hits, misses and fallbacks per call in its batches (FlagGems' LibEntry
launches its cached kernels itself, bypassing JITFunction.run: few hits are expected there). The
outputs of one call of each op must be bit-identical in both workers; exit 1 where they differ.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time

PATHS = ("stock", "launcher", "guard")


# ---------------------------------------------------------------- worker side

def _ops(torch):
    """{name: (call, context factory or None)}; a library that does not import is left out (named)."""
    ops, missing = {}, []
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn(8, 1024, device=dev, generator=g)
    y = torch.randn(8, 1024, device=dev, generator=g)
    w = torch.randn(1024, device=dev, generator=g)
    b = torch.randn(1024, device=dev, generator=g)
    try:
        import flag_gems

        ops["flag_gems add 8x1024"] = (lambda: torch.add(x, y), flag_gems.use_gems)
        ops["flag_gems softmax 8x1024"] = (lambda: torch.softmax(x, dim=-1), flag_gems.use_gems)
        ops["flag_gems layer_norm 8x1024"] = (lambda: torch.nn.functional.layer_norm(x, (1024,), w, b),
                                              flag_gems.use_gems)
        ops["flag_gems sum 8x1024"] = (lambda: torch.sum(x, dim=-1), flag_gems.use_gems)
    except Exception as e:  # noqa: BLE001 - reported, the other library still runs
        missing.append(f"flag_gems: {type(e).__name__}: {e}")
    try:
        from liger_kernel.ops.swiglu import LigerSiLUMulFunction
        from liger_kernel.transformers.rms_norm import LigerRMSNorm

        norm = LigerRMSNorm(1024).to(dev)
        ops["liger LigerRMSNorm fwd 8x1024"] = (lambda: norm(x), None)
        ops["liger SiLUMul fwd 8x1024"] = (lambda: LigerSiLUMulFunction.apply(x, y), None)
    except Exception as e:  # noqa: BLE001
        missing.append(f"liger_kernel: {type(e).__name__}: {e}")
    return ops, missing


def worker(mode: str) -> int:
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever the libraries print goes to stderr, not into the protocol
    launcher = None
    if mode == "launcher":
        import launcher  # installed before any kernel is loaded: every kernel gets launcher's launcher

        launcher.install(fast_dispatch=False)
    import contextlib

    import torch

    torch.set_grad_enabled(False)
    ops, missing = _ops(torch)

    def counts():
        if launcher is None:
            return None
        s = launcher.fast_dispatch_stats()
        return [s["hits"], s["misses"], sum(s["fallbacks"].values())]

    def batch(name, path, n):
        call, ctx = ops[name]
        if launcher is not None:
            launcher.install(fast_dispatch=(path == "guard"))
        with (ctx() if ctx else contextlib.nullcontext()):
            c0 = counts()
            torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            for _ in range(n):
                call()
            t1 = time.perf_counter_ns()
            c1 = counts()
        torch.cuda.synchronize()
        if launcher is not None:
            launcher.install(fast_dispatch=False)
        return (t1 - t0) / n / 1e3, None if c0 is None else [b - a for a, b in zip(c0, c1)]

    digests = {}
    for name in ops:  # warm: compile and load under this worker's mode (both guard states in launcher's)
        for path in (("launcher", "guard") if launcher is not None else ("stock",)):
            batch(name, path, 3)
        call, ctx = ops[name]
        with (ctx() if ctx else contextlib.nullcontext()):
            out = call()
        torch.cuda.synchronize()
        digests[name] = hashlib.sha1(out.detach().contiguous().cpu().numpy().tobytes()).hexdigest()
    lm = sys.modules.get("launcher")  # in the stock worker: not imported, or at least not installed
    info = {"ops": list(ops), "missing": missing, "digests": digests, "torch": torch.__version__,
            "installed": bool(lm is not None and lm.is_installed()),
            "triton": __import__("triton").__version__, "gpu": torch.cuda.get_device_name()}
    proto.write(json.dumps(info) + "\n")
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd is None:
            break
        us, delta = batch(cmd["op"], cmd["path"], cmd["n"])
        proto.write(json.dumps([us, delta]) + "\n")
    return 0


# ---------------------------------------------------------------- parent side

class Worker:
    def __init__(self, mode):
        env = dict(os.environ)
        env.pop("LAUNCHER_FAST_DISPATCH", None)
        env.pop("LAUNCHER_INSTALL", None)  # the stock worker must stay stock
        self.p = subprocess.Popen([sys.executable, __file__, "--worker", mode], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env, bufsize=1)

    def read(self):
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"worker exited ({self.p.wait()}): see its stderr above")
        return json.loads(line)

    def batch(self, op, path, n):
        self.p.stdin.write(json.dumps({"op": op, "path": path, "n": n}) + "\n")
        return self.read()

    def close(self):
        try:
            self.p.stdin.write("null\n")
            self.p.stdin.close()
        except OSError:
            pass
        self.p.wait(timeout=60)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--worker", choices=("stock", "launcher"))
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker)
    try:
        import torch

        if not torch.cuda.is_available():
            print("no GPU: nothing measured")
            return 3
    except ImportError:
        print("no torch: nothing measured")
        return 3
    t_start = time.perf_counter()
    workers = {"stock": Worker("stock"), "launcher": Worker("launcher")}
    try:
        info = {m: w.read() for m, w in workers.items()}
        s, lw = info["stock"], info["launcher"]
        for m in info["stock"]["missing"]:
            print(f"left out: {m}")
        if s["installed"] or not lw["installed"]:
            print(f"launcher installed: stock worker {s['installed']}, launcher worker {lw['installed']}: not measured")
            return 1
        ops = [op for op in s["ops"] if op in lw["ops"]]
        same = {op: s["digests"][op] == lw["digests"][op] for op in ops}
        times = {(op, p): [] for op in ops for p in PATHS}
        guard = {op: [0, 0, 0] for op in ops}
        for r in range(args.warmup + args.rounds):
            order = PATHS if r % 2 == 0 else PATHS[::-1]
            for op in ops:
                for path in order:
                    us, delta = workers["stock" if path == "stock" else "launcher"].batch(op, path, args.calls)
                    if r >= args.warmup:
                        times[op, path].append(us)
                        if path == "guard" and delta:
                            guard[op] = [a + b for a, b in zip(guard[op], delta)]
    finally:
        for w in workers.values():
            w.close()
    print(f"torch {s['torch']}, Triton {s['triton']}, {s['gpu']}; {args.rounds} interleaved rounds, batches of "
          f"{args.calls} calls; stock and launcher in two worker processes ({time.perf_counter() - t_start:.0f} s)")
    print("| op | stock µs/call | launcher µs/call | launcher+guard µs/call | launcher / stock (median [p25–p75]) "
          "| guard / stock | guard per call: hits / misses / fallbacks | output identical |")
    print("|---|---|---|---|---|---|---|---|")
    for op in ops:
        med = {p: statistics.median(times[op, p]) for p in PATHS}
        cells = []
        for p in ("launcher", "guard"):
            ratios = [a / b for a, b in zip(times[op, p], times[op, "stock"])]
            q = statistics.quantiles(ratios, n=4)
            cells.append(f"{statistics.median(ratios):.2f} [{q[0]:.2f}–{q[2]:.2f}]")
        n = args.rounds * args.calls
        hits, misses, falls = (v / n for v in guard[op])
        print(f"| {op} | {med['stock']:.1f} | {med['launcher']:.1f} | {med['guard']:.1f} | {cells[0]} | {cells[1]} "
              f"| {hits:.2f} / {misses:.2f} / {falls:.2f} | {same[op]} |")
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
