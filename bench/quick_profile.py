"""Where the host time of one launch goes (GPU): a quick breakdown, not the benchmark.

    python bench/quick_profile.py
"""
import statistics
import time

import torch
import triton
import triton.language as tl

import launcher


@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


def timeit(fn, batches=40, per=500):
    samples = []
    for _ in range(batches):
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        for _ in range(per):
            fn()
        samples.append((time.perf_counter_ns() - t0) / per / 1e3)
    torch.cuda.synchronize()
    return statistics.median(samples)


def main():
    x = torch.zeros(1024, device="cuda")
    s = torch.cuda.current_stream().cuda_stream
    add.device_caches.clear()
    stock = add[(1,)](x, x, x, 1000, BLOCK=1024)
    add.device_caches.clear()
    launcher.install()
    ours = add[(1,)](x, x, x, 1000, BLOCK=1024)
    args = (x, x, x, 1000, 1024)
    rows = {}
    for who, ck in (("stock", stock), ("ours", ours)):
        run, fn, md = ck._run, ck.function, ck.packed_metadata
        rows[f"{who} launcher, hooks None"] = timeit(lambda: run(1, 1, 1, s, fn, md, None, None, None, *args))
        rows[f"{who} launcher, int pointers"] = timeit(
            lambda: run(1, 1, 1, s, fn, md, None, None, None, x.data_ptr(), x.data_ptr(), x.data_ptr(), 1000, 1024))
    bound = ours._run.bind(1, 1, 1, s, ours.function, ours.packed_metadata, *args)
    rows["ours bound()"] = timeit(bound)
    rows["floor (C loop)"] = timeit(lambda: bound.repeat(500), per=1) / 500
    rows["ours pack only"] = timeit(lambda: ours._run.pack(1, 1, 1, s, ours.function, ours.packed_metadata,
                                                            None, None, None, *args))
    rows["3x data_ptr()"] = timeit(lambda: (x.data_ptr(), x.data_ptr(), x.data_ptr()))
    from launcher import driver
    ffi, lib = driver.native()
    L = ours._run
    fn, md = ours.function, ours.packed_metadata
    gen = type(L).__call__
    rows["ours: generated fn called directly"] = timeit(lambda: gen(L, 1, 1, 1, s, fn, md, None, None, None, *args))
    rows["ours: L(...) again"] = timeit(lambda: L(1, 1, 1, s, fn, md, None, None, None, *args))
    rows["cffi call of a no-op C function"] = timeit(lib.launcher_last_bad_param)
    plan, buf = L._shape.plan, bound.buffer
    out = ffi.new("char[]", 64)
    rows["C launch entry, dry run (no driver)"] = timeit(lambda: lib.launcher_dry_run(plan, buf, len(buf), out, 64))
    rows["C launch entry, real"] = timeit(lambda: lib.launcher_launch(plan, buf, len(buf)))
    rows["C bound launch"] = timeit(bound)
    for who, ck in (("stock", stock), ("ours", ours), ("stock", stock), ("ours", ours)):
        # Only the kernel cache (key -> CompiledKernel): the key cache beside it maps to key
        # strings, and overwriting those made Triton compile a new kernel with our launcher.
        for caches in add.device_caches.values():
            kernel_cache = caches[0]
            for k in list(kernel_cache):
                kernel_cache[k] = ck
        rows[f"{who} kernel[grid] (default hooks) #{len([r for r in rows if r.startswith(who + ' kernel')])}"] = \
            timeit(lambda: add[(1,)](x, x, x, 1000, BLOCK=1024))
    h, m = ffi.new("uint64_t *"), ffi.new("uint64_t *")
    lib.launcher_pointer_cache_stats(h, m)
    for k, v in rows.items():
        print(f"{k:32s} {v:7.3f} us")
    print("pointer range cache: hits", h[0], "misses", m[0])


if __name__ == "__main__":
    main()
