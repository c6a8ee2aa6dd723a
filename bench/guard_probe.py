"""Where a guard hit's host time goes (GPU): a breakdown of `kernel[grid](...)` with the fast
dispatch on, interleaved against the C floor; not the benchmark (python -m launcher bench is).

    python bench/guard_probe.py [--rounds 30] [--batch 500]

One kernel (vector add: three tensors, an int, a constexpr). Each round runs every row once, a
batch of BATCH calls after a synchronisation, the order reversed every other round; printed: the
median over rounds of each row's µs per call and of its ratio to the floor of the same round.
Rows, from the whole hit down to its parts:
  floor               cuLaunchKernelEx in a C loop (BoundLaunch.repeat)
  prepared p(*new)    launcher.prepare's C call with the arguments passed again
  guard kernel[grid]  the whole hit, as users write it (GuardItem hands out a GuardCall, whose
                      C call binds the arguments and makes the hit)
  via lambda *a, **kw the same hit called as the suite called every path before its call
                      sites were written out (launcher.bench.sites): what that wrapper cost
  kernel[grid] taken once  the GuardCall taken once, called each time (no GuardItem)
  keyer.call()        GuardKey.call(grid, ...): the binding and the hit (no GuardCall made)
  C hit               GuardKey.hit with the arguments bound (heads, key, lookup, checks, launch)
  C key               GuardKey.key alone: the heads, the key and the data_ptr() reads, no lookup
  flat launch         the entry's FlatLaunch.launch with the values already read
  device + stream     the current-device and current-stream getters a hit calls
  3 data_ptr + dtype  what any path reads of the three tensors
  L + ...             in situ: each call after one real launch (the bound launch's C call), less
                      "L + a trivial C call": what a part costs where a hit meets it, cache misses
                      included (Triton's getenv_bool of 3.9's fpsan knob and its holder's own
                      setting, the knobs and hooks a hit reads, the getters, the tensors' reads,
                      the whole C key)
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import triton
import triton.language as tl

import launcher
from launcher import codegen, fast_dispatch


@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--batch", type=int, default=500)
    a = ap.parse_args()
    x = torch.zeros(1024, device="cuda")
    n, grid = 1000, (1,)
    launcher.install(fast_dispatch=True)
    for _ in range(3):  # Triton's path, then the recorded entry: hits from here on
        ck = add[grid](x, x, x, n, BLOCK=1024)
    torch.cuda.synchronize()
    guard = add.__dict__[fast_dispatch._GUARD]
    keyer = guard.keyer
    hit, key, device = keyer.hit, keyer.key, keyer.device
    dev = device()
    get_stream = codegen.cells(guard.general)["_launcher_STREAM"].cell_contents
    keyed = key(dev, (), x, x, x, n, 1024)
    entry = guard.entries[keyed[0]]
    flat, function = entry[codegen.GuardEntry._fields.index("flat")], ck.function
    values = (x.data_ptr(), x.data_ptr(), x.data_ptr(), n, 1024)
    stream = torch.cuda.current_stream().cuda_stream
    p = launcher.prepare(add, grid, x, x, x, n, BLOCK=1024)
    bound = ck._run.bind(1, 1, 1, stream, function, ck.packed_metadata, x, x, x, n, 1024)
    call, taken = keyer.call, add[grid]
    kw = {"BLOCK": 1024}
    wrapped = lambda *a: add[grid](*a, **kw)  # noqa: E731 - the suite's old call site
    B = a.batch
    rows = {
        "floor": lambda: bound.repeat(B),
        "prepared p(*new)": lambda: [p(x, x, x, n) for _ in range(B)],
        "guard kernel[grid]": lambda: [add[grid](x, x, x, n, BLOCK=1024) for _ in range(B)],
        "via lambda *a, **kw": lambda: [wrapped(x, x, x, n) for _ in range(B)],
        "kernel[grid] taken once": lambda: [taken(x, x, x, n, BLOCK=1024) for _ in range(B)],
        "keyer.call()": lambda: [call(grid, x, x, x, n, BLOCK=1024) for _ in range(B)],
        "C hit": lambda: [hit(grid, x, x, x, n, 1024) for _ in range(B)],
        "C key": lambda: [key(dev, (), x, x, x, n, 1024) for _ in range(B)],
        "flat launch": lambda: [flat(function, stream, grid, *values) for _ in range(B)],
        "device + stream": lambda: [get_stream(device()) for _ in range(B)],
        "3 data_ptr + dtype": lambda: [(x.data_ptr(), x.dtype, x.data_ptr(), x.dtype, x.data_ptr(), x.dtype)
                                       for _ in range(B)],
    }
    # In situ: each call of these rows follows a real launch (one C call of the bound launch), as
    # every part of a hit does; a part's cost there (the row less "L + a trivial C call") includes
    # the cache misses the driver's launch leaves it, which the rows above, repeated without
    # launches in between, do not see.
    launch1, handle, on = bound._launch, bound._handle, bound.stream
    trivial = (0).__index__
    from triton._C.libtriton import getenv_bool
    from triton import knobs
    rt, comp = knobs.runtime, knobs.compilation
    fpsan = "TRITON_FPSAN_HOMOMORPHIC_CASTS"

    def knob_reads():
        return (rt.add_stages_inspection_hook, rt.launch_enter_hook.calls, rt.launch_exit_hook.calls, rt.debug,
                comp.instrumentation_mode)
    rows.update({
        "L: launch alone": lambda: [launch1(handle, on) for _ in range(B)],
        "L + a trivial C call": lambda: [(launch1(handle, on), trivial()) for _ in range(B)],
        "L + getenv_bool": lambda: [(launch1(handle, on), getenv_bool(fpsan, False)) for _ in range(B)],
        "L + fpsan own setting": lambda: [(launch1(handle, on), comp.__dict__.get("fpsan_homomorphic_casts"))
                                          for _ in range(B)],
        "L + knobs and hooks": lambda: [(launch1(handle, on), knob_reads()) for _ in range(B)],
        "L + device + stream": lambda: [(launch1(handle, on), get_stream(device())) for _ in range(B)],
        "L + 3 data_ptr + dtype": lambda: [(launch1(handle, on), x.data_ptr(), x.dtype, x.data_ptr(), x.dtype,
                                            x.data_ptr(), x.dtype) for _ in range(B)],
        "L + C key": lambda: [(launch1(handle, on), key(dev, (), x, x, x, n, 1024)) for _ in range(B)],
    })
    before = fast_dispatch.stats()
    samples = {k: [] for k in rows}
    for r in range(a.rounds + 2):
        order = list(rows) if r % 2 == 0 else list(reversed(rows))
        got = {}
        for k in order:
            torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            rows[k]()
            got[k] = (time.perf_counter_ns() - t0) / B / 1e3
        if r >= 2:
            for k in rows:
                samples[k].append((got[k], got[k] / got["floor"]))
    torch.cuda.synchronize()
    after = fast_dispatch.stats()
    print(f"Triton {triton.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}; "
          f"{a.rounds} rounds of {B}; guard hits +{after['hits'] - before['hits']}, "
          f"misses +{after['misses'] - before['misses']}")
    print(f"{'row':22s} {'µs':>7s} {'x floor':>8s}")
    for k, s in samples.items():
        print(f"{k:22s} {statistics.median(v for v, _ in s):7.3f} {statistics.median(q for _, q in s):8.2f}")
    print("in situ, after a launch: µs more than \"L + a trivial C call\" (median of the rounds' differences)")
    base = [v for v, _ in samples["L + a trivial C call"]]
    for k in [k for k in rows if k.startswith("L + ") and k != "L + a trivial C call"]:
        print(f"  {k[4:]:20s} {statistics.median(v - b for (v, _), b in zip(samples[k], base)):7.3f}")


if __name__ == "__main__":
    main()
