"""Kernels for the bundle benchmarks (bench/bundle_startup.py, bench/bundle_launch.py).

k00 ... k19: twenty small, different kernels (startup: the first launch of each); add, mixed16
and nested_tuple: the per-launch comparison. Tiny bodies: the host cost is what is measured.
"""
import triton
import triton.language as tl


@triton.jit
def k00(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 2.0 + 0.0, mask=mask)


@triton.jit
def k01(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 3.0 + 1.0, mask=mask)


@triton.jit
def k02(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 4.0 + 2.0, mask=mask)


@triton.jit
def k03(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 5.0 + 3.0, mask=mask)


@triton.jit
def k04(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 6.0 + 4.0, mask=mask)


@triton.jit
def k05(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 7.0 + 5.0, mask=mask)


@triton.jit
def k06(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 8.0 + 6.0, mask=mask)


@triton.jit
def k07(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 9.0 + 7.0, mask=mask)


@triton.jit
def k08(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 10.0 + 8.0, mask=mask)


@triton.jit
def k09(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 11.0 + 9.0, mask=mask)


@triton.jit
def k10(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 12.0 + 10.0, mask=mask)


@triton.jit
def k11(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 13.0 + 11.0, mask=mask)


@triton.jit
def k12(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 14.0 + 12.0, mask=mask)


@triton.jit
def k13(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 15.0 + 13.0, mask=mask)


@triton.jit
def k14(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 16.0 + 14.0, mask=mask)


@triton.jit
def k15(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 17.0 + 15.0, mask=mask)


@triton.jit
def k16(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 18.0 + 16.0, mask=mask)


@triton.jit
def k17(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 19.0 + 17.0, mask=mask)


@triton.jit
def k18(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 20.0 + 18.0, mask=mask)


@triton.jit
def k19(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 21.0 + 19.0, mask=mask)


STARTUP = [k00, k01, k02, k03, k04, k05, k06, k07, k08, k09, k10, k11, k12, k13, k14, k15, k16, k17, k18, k19]


@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@triton.jit
def mixed16(p0, p1, p2, p3, i0, i1, i2, i3, f0, f1, f2, f3, l0, l1, l2, l3):
    s = (i0 + i1 + i2 + i3).to(tl.float32) + f0 + f1 + f2 + f3 + (l0 + l1 + l2 + l3).to(tl.float32)
    tl.store(p0, s + tl.load(p1) + tl.load(p2) + tl.load(p3))


@triton.jit
def nested_tuple(out, t, nested, scale):
    x = tl.load(t[0]) + tl.load(nested[0][0]) + nested[0][1] + nested[1][1]
    tl.store(out, x * scale + t[1])
