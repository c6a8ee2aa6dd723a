"""Red-team findings of 2026-12-07 on real Gluon kernels compiled on the CPU (``fence_kernels.REDTEAM_CASES``).

- ``adjacent_buffers``: a buffer just below a TMA source written after the fence. Its swizzled offset
  ``(tid*16 & 2032) ^ (tid*2 & 112)`` was bounded by 2047 and that bound counted as written bytes: a false
  ``error`` on 3.6 and 3.9, sm_90 and sm_100. Now clean; the unfenced form stays an error on 3.6.
- ``tail_write``: only the last rows of a TMA store's source written, no fence. The 64x64 box reads them, but only
  its first 16 bytes counted as certain: ``unknown`` (a load lets it through). The TTGIR's exact box makes it an
  ``error`` on 3.6; 3.9 fences it itself.
- ``noinline_store``: Triton 3.6 prints the helper's symbol quoted; the TTGIR was unreadable.
"""
import pytest

from launcher.fence import check_kernel

import fence_kernels as fk


def verdict(kernel):
    return check_kernel(ptx=kernel.asm["ptx"], ttgir=kernel.asm["ttgir"], shared=kernel.metadata.shared).verdict


@pytest.mark.parametrize("arch", [90, 100])
def test_a_buffer_written_below_a_fenced_tma_source_is_clean(arch):
    assert verdict(fk.compiled_redteam("adjacent_buffers", True, arch)) == "clean"
    unfenced = verdict(fk.compiled_redteam("adjacent_buffers", False, arch))
    assert unfenced == ("clean" if fk.COMPILER_FENCES_ASYNC_READS else "error")


def test_an_unfenced_write_to_the_tail_of_a_tma_box_is_an_error():
    assert verdict(fk.compiled_redteam("tail_write", True)) == "clean"
    assert verdict(fk.compiled_redteam("tail_write", False)) == ("clean" if fk.COMPILER_FENCES_ASYNC_READS
                                                                else "error")


def test_a_noinline_helper_with_a_quoted_symbol_is_read():
    for fence in (True, False):
        kernel = fk.compiled_redteam("noinline_store", fence)
        expected = "clean" if fence or fk.COMPILER_FENCES_ACROSS_CALLS else "error"  # 3.7.1, 3.8: a real hazard
        assert verdict(kernel) == expected
