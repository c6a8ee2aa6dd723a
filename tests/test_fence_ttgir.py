"""TTGIR front end on hand-written modules: forms real Triton output has that the corpus kernels do not."""
from launcher.fence import check_ttgir
from launcher.fence.ttgir import async_operand_extents, shared_allocation

UNSTRUCTURED = """\
#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#shared = #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>
#smem = #ttg.shared_memory
module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.shared = 8208 : i32} {
  tt.func public @branchy(%desc: !tt.tensordesc<tensor<64x64xf16, #shared>>, %flag: i1) {
    %cst = arith.constant dense<1.000000e+00> : tensor<64x64xf16, #blocked>
    %c0_i32 = arith.constant 0 : i32
    %buf = ttg.local_alloc : () -> !ttg.memdesc<64x64xf16, #shared, #smem, mutable>
    cf.cond_br %flag, ^bb1, ^bb2
  ^bb1:  // pred: ^bb0
    ttg.local_store %cst, %buf : tensor<64x64xf16, #blocked> -> !ttg.memdesc<64x64xf16, #shared, #smem, mutable>
    FENCE
    cf.br ^bb2
  ^bb2:  // 2 preds: ^bb0, ^bb1
    ttng.async_tma_copy_local_to_global %desc[%c0_i32, %c0_i32] %buf : !tt.tensordesc<tensor<64x64xf16, #shared>>, \
!ttg.memdesc<64x64xf16, #shared, #smem, mutable>
    tt.return
  }
}
"""


def test_block_labels_with_their_predecessor_comments_parse():
    # MLIR prints unstructured blocks as `^bb1:  // pred: ^bb0` (Triton's own lit tests and scf-to-cf output).
    (finding,) = check_ttgir(UNSTRUCTURED.replace("FENCE", ""))
    assert (finding.severity, finding.kind) == ("info", "RAW")
    assert (finding.writer.line, finding.reader.line) == (11, 15)
    fenced = UNSTRUCTURED.replace("FENCE", "ttng.fence_async_shared {bCluster = false}")
    assert check_ttgir(fenced) == []


def test_the_allocation_size_is_read_from_the_module_attribute():
    assert shared_allocation(UNSTRUCTURED) == 8208
    assert shared_allocation(UNSTRUCTURED.replace(", ttg.shared = 8208 : i32", "")) is None


def test_each_mma_operand_gets_its_own_extent():
    # A (128x64 fp16, 16 KiB) and B (64x256 fp16, 32 KiB) of one warp_group_dot: each is bounded by itself.
    text = """\
#loc = loc("/src/k.py":7:20)
#shared = #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>
#smem = #ttg.shared_memory
    %d = ttng.warp_group_dot %a, %b, %acc {isAsync = true} : !ttg.memdesc<128x64xf16, #shared, #smem> * \
!ttg.memdesc<64x256xf16, #shared, #smem> -> tensor<128x256xf32, #mma> loc(#loc)
"""
    extents = async_operand_extents(text)
    assert extents[("/src/k.py:7:20", "mma:0")] == 128 * 64 * 2
    assert extents[("/src/k.py:7:20", "mma:1")] == 64 * 256 * 2
    assert extents[("/src/k.py:7", "mma:1")] == 64 * 256 * 2


QUOTED_CALL = """\
#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#shared = #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>
#smem = #ttg.shared_memory
module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32} {
  tt.func public @caller(%desc: !tt.tensordesc<tensor<64x64xf16, #shared>>) {
    %c0_i32 = arith.constant 0 : i32
    %smem = ttg.local_alloc : () -> !ttg.memdesc<64x64xf16, #shared, #smem, mutable>
    tt.call @"m._helper__MD[64, 64]\\22%x\\\\"(%smem) : (!ttg.memdesc<64x64xf16, #shared, #smem, mutable>) -> ()
    FENCE
    ttng.async_tma_copy_local_to_global %desc[%c0_i32, %c0_i32] %smem : !tt.tensordesc<tensor<64x64xf16, #shared>>, \
!ttg.memdesc<64x64xf16, #shared, #smem, mutable>
    tt.return
  }
  tt.func private @"m._helper__MD[64, 64]\\22%x\\\\"(%smem: !ttg.memdesc<64x64xf16, #shared, #smem, mutable>) {
    %cst = arith.constant dense<5.000000e+00> : tensor<64x64xf16, #blocked>
    ttg.local_store %cst, %smem : tensor<64x64xf16, #blocked> -> !ttg.memdesc<64x64xf16, #shared, #smem, mutable>
    tt.return
  }
}
"""


def test_quoted_symbol_names_with_escapes():
    # Triton 3.6 names a noinline Gluon helper after its specialization, which MLIR prints quoted
    # (`tt.func private @"rtk2._helper_store__...NVMMALAS[64, 64]ASMD__"`); the name may hold escapes (\\22 is a
    # quote) and characters that look like a value (%x). Before, the header was "cannot read function header".
    (finding,) = check_ttgir(QUOTED_CALL.replace("FENCE", ""))
    assert (finding.kind, finding.severity) == ("RAW", "info")
    fenced = QUOTED_CALL.replace("FENCE", "ttng.fence_async_shared {bCluster = false}")
    assert check_ttgir(fenced) == []
