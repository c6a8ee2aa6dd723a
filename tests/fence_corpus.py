"""Ordinary Triton kernels of our own (no hand-placed fences) compiled on the CPU for sm_90 and sm_100.

Each case names what it exercises in the checker; what the checker must report on each release is in
``fence_expectations.py``, next to the reason (what that release's PTX holds).

The pipelined matmuls are compiled as Triton's JIT compiles them for aligned tensors: every pointer and
every size marked divisible by 16 (``attrs``), so that the loads are vectorised and go through
``cp.async``. Without those attributes (the ``matmul`` case) there is no ``cp.async`` at all.
"""
import functools
from dataclasses import dataclass, field

import triton
import triton.language as tl

import fence_kernels as fk
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
def checked_scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # With debug=True: tl.device_assert brings the multi-line `.extern .func __assertfail(...)`.
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    tl.device_assert(x >= 0, "negative input")
    tl.store(out_ptr + offsets, x * 2, mask=offsets < n)


@triton.jit(noinline=True)
def _row_sum(x_ptr, n):
    offsets = tl.arange(0, 128)
    return tl.sum(tl.load(x_ptr + offsets, mask=offsets < n, other=0.0), axis=0)


@triton.jit
def call_row_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # A noinline function: a `.func` with its own shared-memory reduction, reached by `call.uni`.
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + _row_sum(x_ptr, n))


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
def matmul_pipelined(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # The masked pipelined tl.dot loop of issue 16: with aligned pointers its loads are cp.async into
    # shared memory, read by wgmma (sm_90) or tcgen05.mma (sm_100).
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16), mask=mask)


@triton.jit
def matmul_grouped_fp8(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # fp8, grouped tile order. On sm_90 its wgmma descriptors are built with shr + add + and, not bfe.
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = pid // (GROUP_M * num_pid_n)
    first_m = group * GROUP_M
    group_size = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * num_pid_n)) % group_size
    pid_n = (pid % (GROUP_M * num_pid_n)) // group_size
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + cm[:, None] * stride_cm + cn[None, :], acc.to(tl.float16),
             mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def matmul_tma(a_desc, b_desc, c_desc, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    off_m = tl.program_id(0) * BLOCK_M
    off_n = tl.program_id(1) * BLOCK_N
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]), acc)
    c_desc.store([off_m, off_n], acc.to(tl.float16))


@triton.jit
def matmul_warp_specialized(a_desc, b_desc, c_desc, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                            BLOCK_K: tl.constexpr):
    # tl.range(warp_specialize=True): on sm_100 the partitions are dispatched through a .branchtargets
    # jump table (brx.idx) on a byte kept above the buffers.
    off_m = tl.program_id(0) * BLOCK_M
    off_n = tl.program_id(1) * BLOCK_N
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in tl.range(0, K, BLOCK_K, warp_specialize=True):
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
def matmul_device_descriptors(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                              BLOCK_K: tl.constexpr):
    # Tensor maps built on the device: st.shared + tensormap.replace, then tensormap.cp_fenceproxy.
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    off_m = tl.program_id(0) * BLOCK_M
    off_n = tl.program_id(1) * BLOCK_N
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


@triton.jit
def fused_attention_warp_specialized(q_desc, k_desc, v_desc, o_desc, N_CTX, sm_scale, BLOCK_M: tl.constexpr,
                                     BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    # The forward attention of Triton's tutorial 06 as it runs on Blackwell: the key loop warp-specialized
    # (loads, two tcgen05 MMAs per step and the softmax in their own partitions).
    off_m = tl.program_id(0) * BLOCK_M
    q = q_desc.load([off_m, 0])
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    for start_n in tl.range(0, N_CTX, BLOCK_N, warp_specialize=True):
        qk = tl.dot(q, k_desc.load([start_n, 0]).T) * sm_scale
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(tl.float16), v_desc.load([start_n, 0]), acc * alpha[:, None])
        m_i = m_new
    o_desc.store([off_m, 0], (acc / l_i[:, None]).to(tl.float16))


@triton.jit
def attention_backward(q_ptr, k_ptr, v_ptr, do_ptr, m_ptr, d_ptr, dq_ptr, dk_ptr, dv_ptr, stride_tok, stride_head,
                       N_CTX, sm_scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
                       HEADS: tl.constexpr):
    # Attention backward for HEADS heads (unrolled): dK, dV over the queries, then dQ over the keys, five
    # pipelined dots per iteration. Over 10k lines of PTX: the big kernel of the fence-cost benchmark.
    offs_d = tl.arange(0, HEAD_DIM)
    for h in tl.static_range(HEADS):
        base = h * stride_head
        offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + base + offs_n[:, None] * stride_tok + offs_d[None, :])
        v = tl.load(v_ptr + base + offs_n[:, None] * stride_tok + offs_d[None, :])
        dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
        dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
        for start_m in range(0, N_CTX, BLOCK_M):
            offs_m = start_m + tl.arange(0, BLOCK_M)
            q = tl.load(q_ptr + base + offs_m[:, None] * stride_tok + offs_d[None, :])
            do = tl.load(do_ptr + base + offs_m[:, None] * stride_tok + offs_d[None, :])
            p_t = tl.math.exp2(tl.dot(k, tl.trans(q)) - tl.load(m_ptr + h * N_CTX + offs_m)[None, :])
            dv += tl.dot(p_t.to(tl.float16), do)
            dp_t = tl.dot(v, tl.trans(do))
            ds_t = (p_t * (dp_t - tl.load(d_ptr + h * N_CTX + offs_m)[None, :])).to(tl.float16)
            dk += tl.dot(ds_t, q)
        tl.store(dv_ptr + base + offs_n[:, None] * stride_tok + offs_d[None, :], dv.to(tl.float16))
        tl.store(dk_ptr + base + offs_n[:, None] * stride_tok + offs_d[None, :], (dk * sm_scale).to(tl.float16))
        offs_q = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        q = tl.load(q_ptr + base + offs_q[:, None] * stride_tok + offs_d[None, :])
        do = tl.load(do_ptr + base + offs_q[:, None] * stride_tok + offs_d[None, :])
        m = tl.load(m_ptr + h * N_CTX + offs_q)
        di = tl.load(d_ptr + h * N_CTX + offs_q)
        dq = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
        for start_n in range(0, N_CTX, BLOCK_N):
            offs_k = start_n + tl.arange(0, BLOCK_N)
            kk = tl.load(k_ptr + base + offs_k[:, None] * stride_tok + offs_d[None, :])
            vv = tl.load(v_ptr + base + offs_k[:, None] * stride_tok + offs_d[None, :])
            p = tl.math.exp2(tl.dot(q, tl.trans(kk)) - m[:, None])
            ds = (p * (tl.dot(do, tl.trans(vv)) - di[:, None])).to(tl.float16)
            dq += tl.dot(ds, kk)
        tl.store(dq_ptr + base + offs_q[:, None] * stride_tok + offs_d[None, :], (dq * sm_scale).to(tl.float16))


@triton.jit
def persistent_matmul_warp_specialized(a_ptr, b_ptr, c_ptr, M, N, K, NUM_SMS: tl.constexpr, BLOCK_M: tl.constexpr,
                                       BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # A persistent matmul over tiles with warp-specialized loads (tl.range(warp_specialize=True), not flattened,
    # as Triton's persistent-matmul tutorial runs it on Hopper) and tensor maps built on the device. On sm_90 Triton
    # 3.6 moves the loader's stage base by stage * 16376 and takes the product off again with a second mad.
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    tiles_n = tl.cdiv(N, BLOCK_N)
    for tile in tl.range(tl.program_id(0), tl.cdiv(M, BLOCK_M) * tiles_n, NUM_SMS, flatten=False,
                         warp_specialize=True):
        off_m = (tile // tiles_n) * BLOCK_M
        off_n = (tile % tiles_n) * BLOCK_N
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            acc = tl.dot(a_desc.load([off_m, k * BLOCK_K]), b_desc.load([off_n, k * BLOCK_K]).T, acc)
        c_desc.store([off_m, off_n], acc.to(tl.float16))


@triton.jit
def block_scaled_matmul(a_desc, a_scale_desc, b_desc, b_scale_desc, c_desc, K, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, NUM_STAGES: tl.constexpr):
    # mxfp8 x mxfp8 with e8m0 scales in the 5-D TMA layout (32 scales of 4 bytes per 128 rows): tl.dot_scaled
    # is tcgen05.mma ... block_scale on sm_100, its scales going through tensor memory (tcgen05.cp).
    off_m = (tl.program_id(0) % tl.cdiv(c_desc.shape[0], BLOCK_M)) * BLOCK_M
    off_n = (tl.program_id(0) // tl.cdiv(c_desc.shape[0], BLOCK_M)) * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages=NUM_STAGES):
        a = a_desc.load([off_m, k * BLOCK_K])
        b = b_desc.load([off_n, k * BLOCK_K])
        a_scale = a_scale_desc.load([0, off_m // 128, k, 0, 0])
        b_scale = b_scale_desc.load([0, off_n // 128, k, 0, 0])
        a_scale = a_scale.reshape(BLOCK_M // 128, 1, 32, 4, 4).trans(0, 3, 2, 1, 4).reshape(BLOCK_M, BLOCK_K // 32)
        b_scale = b_scale.reshape(BLOCK_N // 128, 1, 32, 4, 4).trans(0, 3, 2, 1, 4).reshape(BLOCK_N, BLOCK_K // 32)
        acc = tl.dot_scaled(a, a_scale, "e4m3", b.T, b_scale, "e4m3", acc)
    c_desc.store([off_m, off_n], acc.to(tl.float16))


def _desc(rows, cols, dtype="fp16"):
    return f"tensordesc<{dtype}[{rows}, {cols}]>"


RELEASES = ("3.6", "3.7.0", "3.7.1", "3.8", "3.9")
# Releases without PR #9610 (cherry-picked into 3.7.1): their late ProxyFenceInsertion pass never fences a
# generic write before an async-proxy *read* (cp.async -> wgmma/tcgen05.mma, st.shared -> TMA store).
UNFENCED_READS = ("3.6", "3.7.0")


def installed_release() -> str | None:
    """The installed Triton as a key of the expectations: 3.7.0 and 3.7.1 differ, other patches do not."""
    major, minor, patch = (tuple(int(p) for p in __import__("re").findall(r"\d+", triton.__version__)[:3]) +
                           (0, 0, 0))[:3]
    if (major, minor) == (3, 7):
        return "3.7.0" if patch == 0 else "3.7.1"
    key = f"{major}.{minor}"
    return key if key in RELEASES else None


@dataclass(frozen=True)
class Errors:
    """The ``error`` findings the checker must report on some releases, and why."""
    count: dict  # arch -> number of error findings
    writer: str  # the generic-proxy instruction each one names (prefix)
    reader: dict  # arch -> the async-proxy instruction each one names (prefix)
    releases: tuple = UNFENCED_READS
    why: str = ""


@dataclass(frozen=True)
class CompileJob:
    """What one kernel is compiled with, for each of ``archs``: the corpus's cases and the tutorials'
    configurations (``fence_tutorials.Config``) alike."""
    kernel: object  # the @triton.jit function (in fence_tutorials, its name in the tutorial file)
    signature: dict
    constexprs: dict = field(default_factory=dict)
    divisible: tuple = ()  # parameters marked divisible by 16, as the JIT marks aligned tensors and sizes
    options: dict = field(default_factory=dict)
    archs: tuple = (90, 100)

    def divisibility_attrs(self, arg_names) -> dict:
        """``attrs`` for compile_kernel: the ``divisible`` parameters, by their index in ``arg_names``."""
        names = list(arg_names)
        return {(names.index(p),): [["tt.divisibility", 16]] for p in self.divisible}


@dataclass(frozen=True)
class Case(CompileJob):
    fences: dict = field(default_factory=dict)  # arch or (release, arch) -> fence.proxy.async in the PTX
    errors: Errors | None = None  # None: no error on any release
    shows: dict = field(default_factory=dict)  # PTX text the case is here for: text -> (releases, archs)
    async_proxy: bool = True  # False: no async-proxy access, so nothing at all may be reported
    unknowns: dict = field(default_factory=dict)  # (release, arch) -> unknown findings the checker cannot avoid
    why: str = ""  # why the checker reports what it does where there is no error

    def fences_for(self, release: str, arch: int) -> int:
        return self.fences.get((release, arch), self.fences.get(arch, 0))

    def unknowns_for(self, release: str, arch: int) -> int:
        return self.unknowns.get((release, arch), 0)

    def errors_for(self, release: str, arch: int) -> int:
        return self.errors.count.get(arch, 0) if self.errors and release in self.errors.releases else 0


_MATMUL_SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
                     "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
_ALIGNED = tuple(_MATMUL_SIGNATURE)
_TILES = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}
_TMA_MATMUL = {"a_desc": _desc(128, 64), "b_desc": _desc(64, 128), "c_desc": _desc(128, 128), "K": "i32"}

ALL = RELEASES
CORPUS = {
    "vector_add": Case(vector_add, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                       {"BLOCK": 1024}, async_proxy=False, why="no shared memory, no async proxy"),
    "softmax": Case(softmax, {"out_ptr": "*fp32", "in_ptr": "*fp32", "row_stride": "i32", "n_cols": "i32"},
                    {"BLOCK": 1024}, async_proxy=False,
                    why="shared memory only as reduction scratch (st/ld.shared), no async proxy"),
    "layer_norm": Case(layer_norm, {"x_ptr": "*fp16", "y_ptr": "*fp16", "w_ptr": "*fp32", "b_ptr": "*fp32",
                                    "stride": "i32", "n": "i32", "eps": "fp32"}, {"BLOCK": 1024},
                       async_proxy=False, why="reduction scratch only, no async proxy"),
    "checked_scale": Case(checked_scale, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 1024},
                          options={"debug": True}, async_proxy=False,
                          shows={".extern .func __assertfail\n(": (ALL, (90, 100))},
                          why="no shared memory, no async proxy; the PTX declares __assertfail over 8 lines"),
    "call_row_sum": Case(call_row_sum, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 128},
                         async_proxy=False, shows={"call.uni (retval0)": (ALL, (90, 100))},
                         why="the callee's reduction scratch is generic only; the call is followed"),
    "matmul": Case(matmul, dict(_MATMUL_SIGNATURE), dict(_TILES), fences={90: 1, 100: 2},
                   why="unaligned loads go to registers; the dot operands are local_alloc(src), which the early "
                       "FenceInsertion pass fences on every release"),
    "matmul_pipelined": Case(
        matmul_pipelined, dict(_MATMUL_SIGNATURE), dict(_TILES), _ALIGNED, {"num_warps": 4, "num_stages": 3},
        fences={90: 1, 100: 2, ("3.6", 90): 0, ("3.6", 100): 0, ("3.7.0", 90): 0, ("3.7.0", 100): 0},
        errors=Errors(
            {90: 1, 100: 2}, "cp.async.cg.shared.global", {90: "wgmma.mma_async", 100: "tcgen05.mma"},
            why="the K loop's loads are cp.async into a 3-stage ring; each stage is read by wgmma (sm_90) or by "
                "tcgen05.mma (sm_100: the peeled first MMA and the loop's) after cp.async.wait_group and bar.sync, "
                "and the kernel has no fence.proxy.async. 3.7.1 and later put one before the MMA (PR #9610)."),
        shows={"cp.async.cg.shared.global": (ALL, (90, 100))}),
    "matmul_grouped_fp8": Case(
        matmul_grouped_fp8, {**_MATMUL_SIGNATURE, "a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv"},
        {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "GROUP_M": 8}, _ALIGNED, {"num_warps": 8, "num_stages": 3},
        fences={90: 1, 100: 2, ("3.6", 100): 0, ("3.7.0", 100): 0},
        errors=Errors(
            {100: 2}, "cp.async.cg.shared.global", {100: "tcgen05.mma"},
            why="sm_100: cp.async stages read by both tcgen05.mma with no fence in the kernel (3.7.1+ fence "
                "them). sm_90: B is transposed through registers into a local_alloc(src) that the early pass "
                "fences, and that fence also orders the cp.async of A: no error on any release."),
        shows={"16383;": (("3.6", "3.7.0", "3.7.1"), (90,))},
        why="sm_90 (3.6-3.7): the wgmma descriptor is (address >> 4) + warp offset, masked with 16383"),
    "matmul_tma": Case(matmul_tma, dict(_TMA_MATMUL), dict(_TILES), fences={90: 1, 100: 1},
                       why="TMA loads, read after the mbarrier wait; the epilogue's local_alloc(src) is fenced by "
                           "the TMA-store lowering on every release"),
    "matmul_warp_specialized": Case(
        matmul_warp_specialized, dict(_TMA_MATMUL), dict(_TILES), options={"num_warps": 8}, fences={90: 1, 100: 1},
        shows={".branchtargets": (ALL, (100,)), "brx.idx": (ALL, (100,))},
        why="sm_100: partitions dispatched by brx.idx on a byte above the buffers; the TMA loads end below "
            "their mbarriers, so they cannot reach it (sm_90 does not specialize this loop)"),
    "matmul_warp_specialized_narrow": Case(
        matmul_warp_specialized, {**_TMA_MATMUL, "a_desc": _desc(64, 64), "c_desc": _desc(64, 128)},
        {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64}, options={"num_warps": 4}, fences={90: 2, 100: 1},
        unknowns={(release, 90): 1 for release in RELEASES}, shows={"mul.hi.u64": (ALL, (90,))},
        why="a known limit, pinned: here LLVM strength-reduces the stage address into a pointer that grows by "
            "16384 per iteration minus 49152 * (i / 3), the division done with mul.hi by 0xAAAAAAAAAAAAAAAB; the "
            "interval analysis cannot see that this stays within the three stages, so one TMA load is unknown "
            "against the state bytes Triton writes above the buffers (sm_90; sm_100 lowers it otherwise)"),
    "persistent_matmul_tma": Case(persistent_matmul_tma, {**_TMA_MATMUL, "M": "i32", "N": "i32"},
                                  {"NUM_SMS": 132, **_TILES}, fences={90: 2, 100: 3},
                                  why="as matmul_tma; each copy of the epilogue's TMA store is fenced"),
    "matmul_device_descriptors": Case(
        matmul_device_descriptors, {k: v for k, v in _MATMUL_SIGNATURE.items() if not k.startswith("stride")},
        dict(_TILES), ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K"), fences={90: 2, 100: 2},
        shows={"tensormap.cp_fenceproxy": (ALL, (90, 100))},
        why="the tensor maps are staged in shared memory and copied out by tensormap.cp_fenceproxy (the "
            "late pass also fences the staging before the first TMA load); the epilogue store is fenced"),
    "fused_attention": Case(fused_attention, {"q_desc": _desc(128, 64), "k_desc": _desc(64, 64),
                                              "v_desc": _desc(64, 64), "o_desc": _desc(128, 64), "N_CTX": "i32",
                                              "sm_scale": "fp32"}, {"BLOCK_M": 128, "BLOCK_N": 64, "HEAD_DIM": 64},
                            fences={90: 2, 100: 2},
                            why="the late pass fences the V load after generic accesses it may overlap "
                                "(write-after-read/write: fenced since before 3.6); the epilogue store is fenced"),
    # Adapted from Triton's tutorials (09 persistent matmul, 10 block-scaled matmul): false alarms of issue 36.
    "persistent_matmul_warp_specialized": Case(
        persistent_matmul_warp_specialized, {k: v for k, v in _MATMUL_SIGNATURE.items() if not k.startswith("stride")},
        {"NUM_SMS": 132, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K"),
        {"num_warps": 4, "num_stages": 4}, archs=(90,), fences={90: 2},
        shows={"mad.lo.s32": (("3.6",), (90,)), "tensormap.cp_fenceproxy": (ALL, (90,))},
        why="sm_90 (sm_100 does not warp-specialize an unflattened persistent loop): the loader moves its stage "
            "base by stage * 16376 for one TMA load and takes it off again with a second mad (3.6); read as "
            "intervals, the next load seemed to reach the state bytes above the buffers (a false WAW error "
            "before issue 36); the linear forms keep the base"),
    "block_scaled_matmul": Case(
        block_scaled_matmul, {"a_desc": _desc(128, 128, "fp8e4nv"), "a_scale_desc": "tensordesc<u8[1, 1, 1, 2, 256]>",
                              "b_desc": _desc(256, 128, "fp8e4nv"), "b_scale_desc": "tensordesc<u8[1, 2, 1, 2, 256]>",
                              "c_desc": _desc(128, 256), "K": "i32"},
        {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "NUM_STAGES": 4}, ("K",), {"num_warps": 4}, archs=(100,),
        fences={100: 1}, shows={"kind::mxf8f6f4.block_scale": (ALL, (100,)), "tcgen05.cp": (ALL, (100,))},
        why="tcgen05 scaled MMA: TMA-loaded fp8 operands and scales (the scales copied to tensor memory by "
            "tcgen05.cp), the epilogue's TMA store fenced; each MMA operand is bounded by its own size"),
    "fused_attention_warp_specialized": Case(
        fused_attention_warp_specialized, {"q_desc": _desc(128, 128), "k_desc": _desc(128, 128),
                                           "v_desc": _desc(128, 128), "o_desc": _desc(128, 128), "N_CTX": "i32",
                                           "sm_scale": "fp32"}, {"BLOCK_M": 128, "BLOCK_N": 128, "HEAD_DIM": 128},
        ("N_CTX",), {"num_warps": 4, "num_stages": 2}, archs=(100,),
        fences={100: 3, ("3.6", 100): 1, ("3.7.0", 100): 1},
        why="the warp-specialized key loop on sm_100: TMA loads into stages, tcgen05 MMAs reading them after the "
            "mbarrier wait, P through tensor memory; the epilogue store fenced (3.7.1+ add two more fences)"),
    # Gluon, written as it should be (every fence in place): nothing may be reported.
    "warp_specialized_load": Case(
        fk.warp_specialized_load, {"desc": fk.DESC_64x64, "out_ptr": "*fp16"}, fences={90: 0, 100: 0},
        shows={"brx.idx": (("3.6", "3.7.0", "3.7.1"), (90, 100))},
        why="the loader's TMA writes the tile, the consumer reads it after the mbarrier wait (no fence needed); "
            "the dispatch byte each warp reads lies above the tile's mbarrier, which the TMA cannot cross"),
    "scales_to_tensor_memory": Case(
        fk.scales_to_tensor_memory, {"out_ptr": "*fp16"}, archs=(100,), fences={100: 1},
        shows={"tcgen05.cp": (ALL, (100,))},
        why="tcgen05_copy after fence_async_shared() in a one-CTA module: a CTA fence is enough (tcgen05 "
            "exists on sm_100 only)"),
    "store_through_device_descriptor": Case(
        fk.store_through_device_descriptor, {"out_ptr": "*fp16", "M": "i32", "N": "i32"}, fences={90: 1, 100: 1},
        shows={"tensormap.cp_fenceproxy": (ALL, (90, 100))},
        why="the tile is fenced; the tensor map staged after the fence is copied out by tensormap.cp_fenceproxy, "
            "not read by the TMA store"),
}

# The big kernel of the fence-cost benchmark (compiled there only: it takes seconds).
BIG = {
    "attention_backward": Case(
        attention_backward, {**{n: "*fp16" for n in ("q_ptr", "k_ptr", "v_ptr", "do_ptr")}, "m_ptr": "*fp32",
                             "d_ptr": "*fp32", **{n: "*fp16" for n in ("dq_ptr", "dk_ptr", "dv_ptr")},
                             "stride_tok": "i32", "stride_head": "i32", "N_CTX": "i32", "sm_scale": "fp32"},
        {"BLOCK_M": 64, "BLOCK_N": 128, "HEAD_DIM": 128, "HEADS": 2},
        ("q_ptr", "k_ptr", "v_ptr", "do_ptr", "m_ptr", "d_ptr", "dq_ptr", "dk_ptr", "dv_ptr", "stride_tok",
         "stride_head", "N_CTX"),
        {"num_warps": 4, "num_stages": 3}, archs=(100,),
        errors=Errors({100: 10}, "cp.async.cg.shared.global", {100: "tcgen05.mma"},
                      why="each of the 5 dots of each head reads cp.async stages with no fence before it "
                          "(3.7.1+ fence them)")),
}
ARCHS = (90, 100)


@functools.lru_cache(maxsize=None)
def compiled_corpus(name, arch):
    """Compile a case once per test session (CompiledKernel)."""
    case = CORPUS.get(name) or BIG[name]
    return compile_kernel(case.kernel, dict(case.signature), dict(case.constexprs), arch=arch,
                          attrs=case.divisibility_attrs(case.kernel.arg_names), **case.options)
