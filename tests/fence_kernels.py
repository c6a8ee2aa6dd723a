"""Gluon and Triton kernels compiled on the CPU for the fence-checker tests.

Each Gluon kernel takes a ``FENCE`` constexpr: ``True`` puts ``fence_async_shared()`` where the
program needs it, ``False`` leaves it out. Triton 3.6.0 compiles the unfenced form into PTX without
a fence; Triton 3.9.0 inserts one (PR #9610). The tests compare the checker with the PTX.

The Gluon API was renamed between 3.6 and 3.9 (``async_copy_shared_to_global`` -> ``async_store``,
``async_copy_global_to_shared`` -> ``async_load``...); the aliases below pick what the installed
version has.
"""
import functools
import re

import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia import blackwell
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma, warpgroup_mma

try:
    from triton.experimental.gluon._runtime import GluonASTSource
except ImportError:  # pragma: no cover - both supported versions have it
    GluonASTSource = None

TRITON_VERSION = tuple(int(p) for p in re.findall(r"\d+", triton.__version__)[:3])
# Triton >= 3.7.1 fences generic writes before async-proxy reads in its late pass (PR #9610,
# cherry-picked into release/3.7.x as #10537): 3.7.0 does not, 3.7.1 does.
COMPILER_FENCES_ASYNC_READS = TRITON_VERSION >= (3, 7, 1)
# ...and a write made in a noinline helper the kernel calls: only from 3.9 (3.7.1 and 3.8 leave it unfenced)
COMPILER_FENCES_ACROSS_CALLS = TRITON_VERSION >= (3, 9)

tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global
tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
cp_async_load = getattr(async_copy, "async_load", None) or async_copy.async_copy_global_to_shared

SMEM_LAYOUT = "NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)"
DESC_64x64 = f"tensordesc<fp16[64, 64],{SMEM_LAYOUT}>"


def compile_kernel(fn, signature, constexprs=None, *, arch=90, num_warps=4, attrs=None, **options):
    """Compile ``fn`` for ``sm_<arch>`` without a GPU; returns the CompiledKernel.

    ``attrs``: {(parameter index,): [["tt.divisibility", 16]]}, as Triton's JIT passes for aligned
    arguments; ``options``: further compile options (num_stages, debug...).
    """
    is_gluon = type(fn).__name__ == "GluonJITFunction"
    source_cls = GluonASTSource if is_gluon else triton.compiler.ASTSource
    constexprs = dict(constexprs or {})
    for name, value in constexprs.items():
        signature.setdefault(name, "constexpr")
    src = source_cls(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options={"num_warps": num_warps, **options})


@gluon.jit
def _ones_tile(BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    return gl.full([BLOCK, BLOCK], 1.0, gl.float16, layout)


@gluon.jit
def straight_tma_store(desc, FENCE: gl.constexpr):
    smem = gl.allocate_shared_memory(gl.float16, [64, 64], desc.layout)
    smem.store(_ones_tile(64))
    if FENCE:
        fence_async_shared()
    tma_store(desc, [0, 0], smem)
    tma.store_wait(0)


@gluon.jit
def loop_tma_store(desc, n, FENCE: gl.constexpr):
    # The store at the end of iteration i is read by the TMA store of iteration i + 1.
    smem = gl.allocate_shared_memory(gl.float16, [64, 64], desc.layout)
    x = _ones_tile(64)
    smem.store(x)
    fence_async_shared()
    for i in range(n):
        tma_store(desc, [i * 64, 0], smem)
        tma.store_wait(0)
        smem.store(x + i.to(gl.float16))
        if FENCE:
            fence_async_shared()


@gluon.jit
def branch_tma_store(desc, flag, FENCE: gl.constexpr):
    # Unfenced form: a fence on the taken path only; fenced form: a fence on both paths.
    smem = gl.allocate_shared_memory(gl.float16, [64, 64], desc.layout)
    smem.store(_ones_tile(64))
    if flag > 0:
        fence_async_shared()
    else:
        if FENCE:
            fence_async_shared()
    tma_store(desc, [0, 0], smem)
    tma.store_wait(0)


@gluon.jit
def wgmma_operands(out_ptr, FENCE: gl.constexpr):
    shared: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, 64, 16])
    a = gl.allocate_shared_memory(gl.float16, [64, 64], shared)
    b = gl.allocate_shared_memory(gl.float16, [64, 64], shared)
    a.store(_ones_tile(64))
    b.store(_ones_tile(64))
    if FENCE:
        fence_async_shared()
    acc = gl.zeros([64, 64], gl.float32, acc_layout)
    acc = warpgroup_mma(a, b, acc)
    rows = gl.arange(0, 64, gl.SliceLayout(1, acc_layout))
    cols = gl.arange(0, 64, gl.SliceLayout(0, acc_layout))
    gl.store(out_ptr + rows[:, None] * 64 + cols[None, :], acc)


@gluon.jit
def load_then_tma_load(desc, out_ptr, FENCE: gl.constexpr):
    # Generic read of a buffer, then a TMA load overwrites it (WAR). Triton's late pass fences this
    # in both versions, so the PTX is fenced either way; only the TTGIR shows the hazard.
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    smem = gl.allocate_shared_memory(gl.float16, [64, 64], desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    smem.store(_ones_tile(64))
    fence_async_shared()
    x = smem.load(layout)
    if FENCE:
        fence_async_shared()
    mbarrier.expect(bar, 64 * 64 * 2)
    tma_load(desc, [0, 0], bar, smem)
    mbarrier.wait(bar, 0)
    y = smem.load(layout)
    rows = gl.arange(0, 64, gl.SliceLayout(1, layout))
    cols = gl.arange(0, 64, gl.SliceLayout(0, layout))
    gl.store(out_ptr + rows[:, None] * 64 + cols[None, :], x + y)
    mbarrier.invalidate(bar)


@gluon.jit
def disjoint_buffers_tma_store(desc, FENCE: gl.constexpr):
    # `scratch` is written after the fence but never read by the async proxy: no hazard.
    smem = gl.allocate_shared_memory(gl.float16, [64, 64], desc.layout)
    scratch = gl.allocate_shared_memory(gl.float16, [64, 64], desc.layout)
    smem.store(_ones_tile(64))
    if FENCE:
        fence_async_shared()
    scratch.store(_ones_tile(64))
    tma_store(desc, [0, 0], smem)
    tma.store_wait(0)
    tma_store(desc, [64, 0], smem)
    tma.store_wait(0)


@gluon.jit
def tcgen05_operands(out_ptr, FENCE: gl.constexpr):
    shared: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    tmem_layout: gl.constexpr = blackwell.TensorMemoryLayout(block=(128, 64), col_stride=1)
    a = gl.allocate_shared_memory(gl.float16, [128, 64], shared)
    b = gl.allocate_shared_memory(gl.float16, [64, 64], shared)
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    a.store(gl.full([128, 64], 1.0, gl.float16, layout))
    b.store(gl.full([64, 64], 1.0, gl.float16, layout))
    if FENCE:
        fence_async_shared()
    acc = blackwell.allocate_tensor_memory(gl.float32, [128, 64], tmem_layout)
    blackwell.tcgen05_mma(a, b, acc, use_acc=False)
    reg_layout: gl.constexpr = gl.BlockedLayout([1, 64], [32, 1], [4, 1], [0, 1])
    out = acc.load(reg_layout)
    rows = gl.arange(0, 128, gl.SliceLayout(1, reg_layout))
    cols = gl.arange(0, 64, gl.SliceLayout(0, reg_layout))
    gl.store(out_ptr + rows[:, None] * 64 + cols[None, :], out)


# name -> (kernel, signature, constexprs apart from FENCE, arch, Gluon hazard kind when unfenced)
GLUON_CASES = {
    "straight_tma_store": (straight_tma_store, {"desc": DESC_64x64}, 90, "RAW"),
    "loop_tma_store": (loop_tma_store, {"desc": DESC_64x64, "n": "i32"}, 90, "RAW"),
    "branch_tma_store": (branch_tma_store, {"desc": DESC_64x64, "flag": "i32"}, 90, "RAW"),
    "wgmma_operands": (wgmma_operands, {"out_ptr": "*fp32"}, 90, "RAW"),
    "tcgen05_operands": (tcgen05_operands, {"out_ptr": "*fp32"}, 100, "RAW"),
    "load_then_tma_load": (load_then_tma_load, {"desc": DESC_64x64, "out_ptr": "*fp16"}, 90, "WAR"),
    "disjoint_buffers_tma_store": (disjoint_buffers_tma_store, {"desc": DESC_64x64}, 90, "RAW"),
}


@functools.lru_cache(maxsize=None)
def compiled_gluon(name, fence):
    fn, signature, arch, _ = GLUON_CASES[name]
    return compile_kernel(fn, dict(signature), {"FENCE": fence}, arch=arch)


# ---------------------------------------------------------------------------------------------
# Gluon kernels written as they should be (every fence in place): the checker must stay silent.


@gluon.jit
def _consumer_partition(smem, bar, out_ptr):
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    mbarrier.wait(bar, 0)
    x = smem.load(layout)
    rows = gl.arange(0, 64, gl.SliceLayout(1, layout))
    cols = gl.arange(0, 64, gl.SliceLayout(0, layout))
    gl.store(out_ptr + rows[:, None] * 64 + cols[None, :], x)


@gluon.jit
def _loader_partition(smem, bar, desc):
    mbarrier.expect(bar, 64 * 64 * 2)
    tma_load(desc, [0, 0], bar, smem)


@gluon.jit
def warp_specialized_load(desc, out_ptr):
    # gl.warp_specialize: the partitions are dispatched by brx.idx on a byte above the buffers, which
    # each warp reads with ld.shared.b8 while the loader's TMA writes the tile below it.
    smem = gl.allocate_shared_memory(gl.float16, [64, 64], desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    gl.warp_specialize([(_consumer_partition, (smem, bar, out_ptr)), (_loader_partition, (smem, bar, desc))],
                       [1], [24])
    mbarrier.invalidate(bar)


@gluon.jit
def scales_to_tensor_memory(out_ptr):
    # tcgen05_copy (shared -> tensor memory) after a fence, in a one-CTA module ("ttng.two-ctas" = false).
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [32, 1], [4, 1], [1, 0])
    shared: gl.constexpr = gl.SharedLinearLayout(
        offset_bases=[[0, 1], [0, 2], [32, 0], [0, 4], [1, 0], [2, 0], [4, 0], [8, 0], [16, 0], [0, 8]])
    smem = gl.allocate_shared_memory(gl.int8, [64, 16], shared)
    smem.store(gl.full([64, 16], 1, gl.int8, layout))
    fence_async_shared()
    tmem = blackwell.allocate_tensor_memory(gl.int8, [64, 16], blackwell.TensorMemoryScalesLayout())
    blackwell.tcgen05_copy(smem, tmem)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    blackwell.tcgen05_commit(bar)
    mbarrier.wait(bar, 0)
    mbarrier.invalidate(bar)


@gluon.jit
def store_through_device_descriptor(out_ptr, M, N):
    # The tile is fenced; the tensor map is built on the device afterwards (st.shared of its staging
    # buffer, tensormap.replace, tensormap.cp_fenceproxy), above the tile the TMA store reads.
    layout: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    smem = gl.allocate_shared_memory(gl.float16, [64, 64], layout)
    smem.store(_ones_tile(64))
    fence_async_shared()
    desc = tma.make_tensor_descriptor(out_ptr, [M, N], [N, 1], [64, 64], layout)
    tma_store(desc, [0, 0], smem)
    tma.store_wait(0)


# ---------------------------------------------------------------------------------------------
# cp.async (generic proxy) into wgmma operands: a fence orders only the copies that are complete.
# PLACE says where the fence goes: "none", "before_wait" (copies still in flight at the fence: the
# hazard stays), "after_wait" (right). COMPLETION: "group" waits with cp.async.wait_group 0; "mbarrier"
# has an mbarrier track the copies (cp.async.mbarrier.arrive) and waits on it; "two_barriers" has A's
# copies tracked by one mbarrier and B's by another, and "before_wait" fences between the two waits;
# "short_wait" waits with wait_group 1 for its one group, which leaves the copies in flight.


@gluon.jit
def cp_async_wgmma(a_ptr, b_ptr, out_ptr, PLACE: gl.constexpr, COMPLETION: gl.constexpr):
    shared: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, 64, 16])
    a = gl.allocate_shared_memory(gl.float16, [64, 64], shared)
    b = gl.allocate_shared_memory(gl.float16, [64, 64], shared)
    rows = gl.arange(0, 64, gl.SliceLayout(1, layout))
    cols = gl.arange(0, 64, gl.SliceLayout(0, layout))
    offsets = rows[:, None] * 64 + cols[None, :]
    if COMPLETION == "two_barriers":
        bar_a = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        bar_b = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        mbarrier.init(bar_a, count=128)
        mbarrier.init(bar_b, count=128)
        cp_async_load(a, a_ptr + offsets)
        async_copy.mbarrier_arrive(bar_a, increment_count=False)
        cp_async_load(b, b_ptr + offsets)
        async_copy.mbarrier_arrive(bar_b, increment_count=False)
        mbarrier.wait(bar_a, 0)
        if PLACE == "before_wait":
            fence_async_shared()  # orders A's copies; B's may still be in flight
        mbarrier.wait(bar_b, 0)
    else:
        cp_async_load(a, a_ptr + offsets)
        cp_async_load(b, b_ptr + offsets)
        if COMPLETION == "mbarrier":
            bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
            mbarrier.init(bar, count=128)
            async_copy.mbarrier_arrive(bar, increment_count=False)
            if PLACE == "before_wait":
                fence_async_shared()
            mbarrier.wait(bar, 0)
        else:
            async_copy.commit_group()
            if PLACE == "before_wait":
                fence_async_shared()
            async_copy.wait_group(1 if COMPLETION == "short_wait" else 0)
    if PLACE == "after_wait":
        fence_async_shared()
    acc = gl.zeros([64, 64], gl.float32, acc_layout)
    acc = warpgroup_mma(a, b, acc)
    out_rows = gl.arange(0, 64, gl.SliceLayout(1, acc_layout))
    out_cols = gl.arange(0, 64, gl.SliceLayout(0, acc_layout))
    gl.store(out_ptr + out_rows[:, None] * 64 + out_cols[None, :], acc)


@functools.lru_cache(maxsize=None)
def compiled_cp_async(place, completion):
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "out_ptr": "*fp32"}
    return compile_kernel(cp_async_wgmma, signature, {"PLACE": place, "COMPLETION": completion},
                          attrs={(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]})


# ---------------------------------------------------------------------------------------------
# Red-team kernels (2026-12-07), in our own words: each was a false alarm, a missed hazard or unreadable.


@gluon.jit
def adjacent_buffers(desc, FENCE: gl.constexpr):
    # `lo` is allocated just below `hi`; `hi` is written and fenced, `lo` is written after the fence and is not
    # read by the async proxy before its own fence. FENCE=False also writes `hi` after the fence: a hazard.
    lo = gl.allocate_shared_memory(gl.float16, [64, 64], desc.layout)
    hi = gl.allocate_shared_memory(gl.float16, [64, 64], desc.layout)
    hi.store(_ones_tile(64))
    fence_async_shared()
    lo.store(_ones_tile(64))
    if not FENCE:
        hi.store(_ones_tile(64))
    tma_store(desc, [0, 0], hi)
    tma.store_wait(0)
    fence_async_shared()
    tma_store(desc, [64, 0], lo)
    tma.store_wait(0)


@gluon.jit
def tail_write(desc, FENCE: gl.constexpr):
    # only the last 8 rows of the TMA store's 64-row source are written: the 64x64 box reads them all
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0])
    smem = gl.allocate_shared_memory(gl.float16, [128, 64], desc.layout)
    smem.slice(120, 8).store(gl.full([8, 64], 1.0, gl.float16, layout))
    if FENCE:
        fence_async_shared()
    tma_store(desc, [0, 0], smem.slice(64, 64))
    tma.store_wait(0)


@gluon.jit(noinline=True)
def _store_helper(smem):
    smem.store(_ones_tile(64))


@gluon.jit
def noinline_store(desc, FENCE: gl.constexpr):
    # Triton 3.6 names the helper after its specialization: a quoted MLIR symbol in the TTGIR
    smem = gl.allocate_shared_memory(gl.float16, [64, 64], desc.layout)
    _store_helper(smem)
    if FENCE:
        fence_async_shared()
    tma_store(desc, [0, 0], smem)
    tma.store_wait(0)


REDTEAM_CASES = {
    "adjacent_buffers": (adjacent_buffers, {"desc": DESC_64x64}),
    "tail_write": (tail_write, {"desc": DESC_64x64}),
    "noinline_store": (noinline_store, {"desc": DESC_64x64}),
}


@functools.lru_cache(maxsize=None)
def compiled_redteam(name, fence, arch=90):
    fn, signature = REDTEAM_CASES[name]
    return compile_kernel(fn, dict(signature), {"FENCE": fence}, arch=arch)
