"""Ordinary Triton kernels (no hand-placed fences) compiled for sm_90 and sm_100.

The fence checker must report no ``error`` on any of them; the test records each ``unknown``.
"""
import functools

import triton
import triton.language as tl

from fence_kernels import compile_kernel


@triton.jit
def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def softmax(out_ptr, in_ptr, row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * row_stride + cols, mask=cols < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * row_stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


@triton.jit
def layer_norm(x_ptr, y_ptr, w_ptr, b_ptr, stride, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n
    diff = tl.where(mask, x - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(diff * diff, axis=0) / n + eps)
    y = diff * rstd * tl.load(w_ptr + cols, mask=mask) + tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * stride + cols, y, mask=mask)


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
           BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16))


@triton.jit
def matmul_tma(a_desc, b_desc, c_desc, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    off_m = tl.program_id(0) * BLOCK_M
    off_n = tl.program_id(1) * BLOCK_N
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]), acc)
    c_desc.store([off_m, off_n], acc.to(tl.float16))


@triton.jit
def persistent_matmul_tma(a_desc, b_desc, c_desc, M, N, K, NUM_SMS: tl.constexpr, BLOCK_M: tl.constexpr,
                          BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    tiles_n = tl.cdiv(N, BLOCK_N)
    for tile in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=True):
        off_m = (tile // tiles_n) * BLOCK_M
        off_n = (tile % tiles_n) * BLOCK_N
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]), acc)
        c_desc.store([off_m, off_n], acc.to(tl.float16))


@triton.jit
def fused_attention(q_desc, k_desc, v_desc, o_desc, N_CTX, sm_scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    HEAD_DIM: tl.constexpr):
    off_m = tl.program_id(0) * BLOCK_M
    q = q_desc.load([off_m, 0])
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    for start_n in range(0, N_CTX, BLOCK_N):
        k = k_desc.load([start_n, 0])
        qk = tl.dot(q, k.T) * sm_scale
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = v_desc.load([start_n, 0])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_new
    o_desc.store([off_m, 0], (acc / l_i[:, None]).to(tl.float16))


def _desc(rows, cols):
    return f"tensordesc<fp16[{rows}, {cols}]>"


# name -> (kernel, signature, constexprs, num_warps)
CORPUS = {
    "vector_add": (vector_add, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                   {"BLOCK": 1024}, 4),
    "softmax": (softmax, {"out_ptr": "*fp32", "in_ptr": "*fp32", "row_stride": "i32", "n_cols": "i32"},
                {"BLOCK": 1024}, 4),
    "layer_norm": (layer_norm, {"x_ptr": "*fp16", "y_ptr": "*fp16", "w_ptr": "*fp32", "b_ptr": "*fp32",
                                "stride": "i32", "n": "i32", "eps": "fp32"}, {"BLOCK": 1024}, 4),
    "matmul": (matmul, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
                        "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"},
               {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, 4),
    "matmul_tma": (matmul_tma, {"a_desc": _desc(128, 64), "b_desc": _desc(64, 128), "c_desc": _desc(128, 128),
                                "K": "i32"}, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, 4),
    "persistent_matmul_tma": (persistent_matmul_tma,
                              {"a_desc": _desc(128, 64), "b_desc": _desc(64, 128), "c_desc": _desc(128, 128),
                               "M": "i32", "N": "i32", "K": "i32"},
                              {"NUM_SMS": 132, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, 4),
    "fused_attention": (fused_attention, {"q_desc": _desc(128, 64), "k_desc": _desc(64, 64),
                                          "v_desc": _desc(64, 64), "o_desc": _desc(128, 64), "N_CTX": "i32",
                                          "sm_scale": "fp32"}, {"BLOCK_M": 128, "BLOCK_N": 64, "HEAD_DIM": 64}, 4),
}
ARCHS = (90, 100)


@functools.lru_cache(maxsize=None)
def compiled_corpus(name, arch):
    fn, signature, constexprs, num_warps = CORPUS[name]
    return compile_kernel(fn, dict(signature), constexprs, arch=arch, num_warps=num_warps)
