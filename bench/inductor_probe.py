"""torch.compile with Inductor: its own static launcher against Triton's launcher and launcher's
(GPU; issue 37's question: would offering Inductor launcher's launches make a launch-bound
compiled step faster than Inductor's static launcher?).

    python bench/inductor_probe.py

One small, launch-bound step (eight reductions over an 8x1024 fp32 tensor, over alternate
dimensions so that Inductor makes several Triton kernels of them) is compiled three times in one
process, with the FX graph and autotune caches off:
  static:   Inductor's default (torch._inductor.config.use_static_cuda_launcher = True)
  stock:    use_static_cuda_launcher = False, launcher not installed (Triton's own launcher)
  launcher: use_static_cuda_launcher = False, after launcher.install() (launcher's launcher object)
A kernel keeps the launcher it was loaded with, so the three compiled steps can then run side by
side: interleaved rounds (each round runs each compiled step as a batch of steps, a
synchronisation before each, the order reversed every other round), and the median of each
step's time as a ratio to the static launcher's within the round. The three must compute
bit-identical results. Prints one table; exit 1 where the results differ.
"""
from __future__ import annotations

import os
import statistics
import sys
import time

os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")
os.environ.setdefault("TORCHINDUCTOR_AUTOTUNE_REMOTE_CACHE", "0")

import torch  # noqa: E402
import torch._inductor.config as inductor_config  # noqa: E402

import launcher  # noqa: E402

ROUNDS, WARMUP, STEPS = 40, 3, 100


def step(x, w):
    # Reductions over alternate dimensions: a softmax over the rows needs the whole column-wise
    # result before it, so Inductor cannot fuse them; each is a Triton kernel of its own (the
    # count is printed: a launch-bound step of several small launches).
    for i in range(8):
        x = torch.softmax(x * w, dim=-1) if i % 2 == 0 else torch.softmax(x, dim=0) + torch.rms_norm(x, (x.shape[-1],)) * 0.5
    return x


def compiled(static: bool, install: bool):
    torch._dynamo.reset()
    inductor_config.use_static_cuda_launcher = static
    inductor_config.force_disable_caches = True
    if install:
        launcher.install()
    else:
        launcher.uninstall()
    from torch._inductor import metrics

    metrics.reset()
    fn = torch.compile(lambda x, w: step(x, w), dynamic=False)
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(8, 1024, device="cuda", generator=gen)
    w = torch.randn(1024, device="cuda", generator=gen)
    out = fn(x, w)  # compiles and loads (each kernel with the launcher in effect now)
    torch.cuda.synchronize()
    launcher.uninstall()
    return fn, x, w, out, metrics.generated_kernel_count


def main() -> int:
    if not torch.cuda.is_available():
        print("no GPU: nothing measured")
        return 3
    paths = {"static": compiled(True, False), "stock": compiled(False, False), "launcher": compiled(False, True)}
    ref = paths["static"][3]
    same = {name: bool(torch.equal(p[3], ref)) for name, p in paths.items()}
    names = list(paths)
    times = {n: [] for n in names}
    for r in range(WARMUP + ROUNDS):
        order = names if r % 2 == 0 else names[::-1]
        for n in order:
            fn, x, w = paths[n][:3]
            torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            for _ in range(STEPS):
                fn(x, w)
            t1 = time.perf_counter_ns()
            if r >= WARMUP:
                times[n].append((t1 - t0) / STEPS / 1e3)
    torch.cuda.synchronize()
    print(f"torch {torch.__version__}, Triton {__import__('triton').__version__}, launcher {launcher.__version__}, "
          f"{torch.cuda.get_device_name()}; {ROUNDS} interleaved rounds of {STEPS} steps; Triton kernels per "
          f"step as compiled: {', '.join(f'{n} {p[4]}' for n, p in paths.items())}")
    print("| step compiled with | µs per step (median) | ratio to Inductor's static launcher (median [p25–p75]) "
          "| result identical to static's |")
    print("|---|---|---|---|")
    for n in names:
        ratios = sorted(a / b for a, b in zip(times[n], times["static"]))
        q = statistics.quantiles(ratios, n=4)
        print(f"| {n} | {statistics.median(times[n]):.1f} | {statistics.median(ratios):.2f} [{q[0]:.2f}–{q[2]:.2f}] "
              f"| {same[n]} |")
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
