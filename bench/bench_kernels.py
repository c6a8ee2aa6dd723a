"""Kernels for the launch-latency benchmarks (tiny bodies: the host cost is what is measured)."""
import triton
import triton.language as tl


@triton.jit
def one_arg(out):
    tl.store(out, 1.0)


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
def args64(out, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, a42, a43, a44, a45, a46, a47, a48, a49, a50, a51, a52, a53, a54, a55, a56, a57, a58, a59, a60, a61, a62):
    tl.store(out, a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15 + a16 + a17 + a18 + a19 + a20 + a21 + a22 + a23 + a24 + a25 + a26 + a27 + a28 + a29 + a30 + a31 + a32 + a33 + a34 + a35 + a36 + a37 + a38 + a39 + a40 + a41 + a42 + a43 + a44 + a45 + a46 + a47 + a48 + a49 + a50 + a51 + a52 + a53 + a54 + a55 + a56 + a57 + a58 + a59 + a60 + a61 + a62)


@triton.jit
def nested_tuple(out, t, nested, scale):
    x = tl.load(t[0]) + tl.load(nested[0][0]) + nested[0][1] + nested[1][1]
    tl.store(out, x * scale + t[1])


@triton.jit
def tensordesc_copy(in_desc, out_desc, BM: tl.constexpr, BN: tl.constexpr):
    tile = in_desc.load([0, 0])
    out_desc.store([0, 0], tile)
