"""Triton kernels the tests compile (on the CPU) and launch (on the GPU)."""
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def add_kernel_renamed(x_p, y_p, out_p, n, BLOCK: tl.constexpr):
    # vector add under another name and other argument names: the same spec shape
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_p + offs, tl.load(x_p + offs, mask=mask) + tl.load(y_p + offs, mask=mask), mask=mask)


@triton.jit
def scalars_kernel(out, a_i1, a_i8, a_i16, a_i32, a_i64, a_u1, a_u8, a_u16, a_u32, a_u64,
                   a_fp16, a_bf16, a_fp32, a_fp64):
    # Every scalar type, stored back as its raw bits (what the kernel received).
    tl.store(out + 0, a_i1.to(tl.int64))
    tl.store(out + 1, a_i8.to(tl.int64))
    tl.store(out + 2, a_i16.to(tl.int64))
    tl.store(out + 3, a_i32.to(tl.int64))
    tl.store(out + 4, a_i64.to(tl.int64))
    tl.store(out + 5, a_u1.to(tl.int64))
    tl.store(out + 6, a_u8.to(tl.int64))
    tl.store(out + 7, a_u16.to(tl.int64))
    tl.store(out + 8, a_u32.to(tl.int64))
    tl.store(out + 9, a_u64.to(tl.int64, bitcast=True))
    tl.store(out + 10, a_fp16.to(tl.int16, bitcast=True).to(tl.int64) & 0xFFFF)
    tl.store(out + 11, a_bf16.to(tl.int16, bitcast=True).to(tl.int64) & 0xFFFF)
    tl.store(out + 12, a_fp32.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF)
    tl.store(out + 13, a_fp64.to(tl.int64, bitcast=True))


SCALAR_TYPES = ("i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64",
                "fp16", "bf16", "fp32", "fp64")
SCALARS_SIGNATURE = (("out", "*i64"),) + tuple((f"a_{t}", t) for t in SCALAR_TYPES)


@triton.jit
def tuple_kernel(out, t, nested, k: tl.constexpr, scale):
    # t = (ptr, n, constexpr); nested = ((ptr, i32), (constexpr, fp32))
    offs = tl.arange(0, 16)
    mask = offs < t[1]
    x = tl.load(t[0] + offs, mask=mask)
    y = tl.load(nested[0][0] + offs, mask=mask)
    tl.store(out + offs, (x + y) * scale + nested[0][1] + nested[1][1] + t[2] + k, mask=mask)


TUPLE_SIGNATURE = (("out", "*fp32"), ("t", ("*fp32", "i32", "constexpr")),
                   ("nested", (("*fp32", "i32"), ("constexpr", "fp32"))), ("k", "constexpr"),
                   ("scale", "fp32"))
TUPLE_CONSTEXPRS = (((1, 2), 3), ((2, 1, 0), 5), ("k", 2))


@triton.jit
def many_args_kernel(out, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17):
    s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15 + a16 + a17
    tl.store(out, s)


@triton.jit
def tma_copy_kernel(in_desc, out_desc, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    tile = in_desc.load([pid_m * BM, pid_n * BN])
    out_desc.store([pid_m * BM, pid_n * BN], tile + 1)


@triton.jit
def device_desc_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm, pn = tl.program_id(0), tl.program_id(1)
    dst.store([pm * BM, pn * BN], src.load([pm * BM, pn * BN]) * 2)


@triton.jit
def matmul_kernel(a, b, c, M, N, Kd, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, Kd, BK):
        x = tl.load(a + rm[:, None] * Kd + (k + rk)[None, :])
        y = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * N + rn[None, :], acc)


@triton.jit
def grid3d_kernel(out, NX, NY):
    x, y, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    tl.store(out + (z * NY + y) * NX + x, x + 10 * y + 100 * z)


@triton.jit
def builtin_names_kernel(out, len, tuple, int, float, str, BLOCK: tl.constexpr):
    # parameters named as the builtins generated code uses (len, tuple, int, float, str)
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, (len + int + str) * float + tl.load(tuple + offs))


@triton.jit
def store_kernel(x, n):
    tl.store(x, n)


@triton.jit
def pair_constexpr_kernel(x, C: tl.constexpr):
    tl.store(x, C[0] + C[1])


@triton.jit
def default_key_kernel(x, n, BLOCK: tl.constexpr, MODE: tl.constexpr = 0):
    offs = tl.arange(0, BLOCK)
    tl.store(x + offs, tl.load(x + offs, mask=offs < n) + MODE, mask=offs < n)


def keyword_only(x, *, BLOCK: tl.constexpr):  # made a JITFunction where a test needs it (3.9 compiles it)
    tl.store(x + tl.arange(0, BLOCK), 1.0)


@triton.jit
def flag_kernel(x, flag, typed_flag: tl.int1, scale: tl.float32):
    if flag:
        tl.store(x, scale)
    if typed_flag:
        tl.store(x + 1, scale)


def combiner(op: str):
    """A @triton.jit combine function made by a factory: every one has the qualname
    `combiner.<locals>.combine`, whatever it computes (Triton keys each by its source)."""
    if op == "add":
        @triton.jit
        def combine(a, b):
            return a + b
    else:
        @triton.jit
        def combine(a, b):
            return a * b
    return combine


@triton.jit
def combine_kernel(x, out, COMBINE: tl.constexpr):
    # a function as a constexpr (as reductions take their combine function)
    offs = tl.arange(0, 16)
    v = tl.load(x + offs)
    tl.store(out + offs, COMBINE(v, v))
