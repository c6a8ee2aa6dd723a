"""The checker on real PTX from Gluon kernels compiled on the CPU, against what each Triton emits.

Triton 3.6.0 compiles these kernels without ``fence_async_shared()`` into PTX with no fence before the
async-proxy read; Triton 3.9.0 inserts one (PR #9610). The tests first pin that compiler behaviour
(the fence count in the PTX) and then require an ``error`` exactly where the fence is missing.
"""
import inspect

import pytest

from launcher.fence import check_kernel, check_ptx, check_ttgir

import fence_kernels as fk

# (case, hand fence) -> number of fence.proxy.async in the PTX of (Triton 3.6, Triton 3.9)
FENCES_IN_PTX = {
    ("straight_tma_store", False): (0, 1), ("straight_tma_store", True): (1, 1),
    ("loop_tma_store", False): (1, 2), ("loop_tma_store", True): (2, 2),  # 1 = the fence before the loop
    ("branch_tma_store", False): (1, 2), ("branch_tma_store", True): (1, 1),  # both-path fences merged
    ("wgmma_operands", False): (0, 1), ("wgmma_operands", True): (1, 1),
    ("tcgen05_operands", False): (0, 1), ("tcgen05_operands", True): (1, 1),
    ("load_then_tma_load", False): (2, 2), ("load_then_tma_load", True): (2, 2),  # WAR: fenced by both
    ("disjoint_buffers_tma_store", False): (0, 1), ("disjoint_buffers_tma_store", True): (1, 1),
}
# the Python statement of the async-proxy access, as it appears in the kernel source
ASYNC_STATEMENT = {
    "straight_tma_store": "tma_store(", "loop_tma_store": "tma_store(", "branch_tma_store": "tma_store(",
    "wgmma_operands": "acc = warpgroup_mma(a", "tcgen05_operands": "blackwell.tcgen05_mma(",
    "disjoint_buffers_tma_store": "tma_store(desc, [0, 0]", "load_then_tma_load": "tma_load(",
}
CASES = sorted(FENCES_IN_PTX)


def proxy_fences(ptx: str) -> int:
    return sum(1 for line in ptx.splitlines()
               if "fence.proxy.async" in line and "fence.proxy.async.global" not in line)


def python_line(case: str) -> int:
    fn = fk.GLUON_CASES[case][0].fn
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if text.strip().startswith(ASYNC_STATEMENT[case]))


def error_expected(case: str, fence: bool) -> bool:
    kind = fk.GLUON_CASES[case][3]
    return not fence and kind == "RAW" and not fk.COMPILER_FENCES_ASYNC_READS


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0]}-{'fenced' if c[1] else 'unfenced'}")
def compiled(request):
    case, fence = request.param
    try:
        kernel = fk.compiled_gluon(case, fence)
    except Exception as exc:  # noqa: BLE001 - a Triton that cannot compile the case for this target
        pytest.skip(f"Triton {fk.triton.__version__} cannot compile {case}: {exc}")
    return case, fence, kernel


def test_compiler_emits_the_expected_fences(compiled):
    case, fence, kernel = compiled
    expected_36, expected_39 = FENCES_IN_PTX[(case, fence)]
    expected = expected_39 if fk.COMPILER_FENCES_ASYNC_READS else expected_36
    assert proxy_fences(kernel.asm["ptx"]) == expected


def test_error_exactly_where_the_ptx_lacks_the_fence(compiled):
    case, fence, kernel = compiled
    errors = [f for f in check_ptx(kernel.asm["ptx"]) if f.severity == "error"]
    if not error_expected(case, fence):
        assert errors == []
        return
    assert len(errors) == 1
    (finding,) = errors
    assert finding.kernel == case and finding.kind == "RAW" and finding.scope == "cta"
    assert finding.source_line.endswith(f"fence_kernels.py:{python_line(case)}")
    reader = finding.reader.text
    assert "cp.async.bulk.tensor" in reader or "wgmma.mma_async" in reader or "tcgen05.mma" in reader
    assert finding.writer.text.startswith("st.shared")
    ptx_lines = kernel.asm["ptx"].splitlines()
    assert " ".join(ptx_lines[finding.reader.line - 1].split()) == reader + ";"


def test_ttgir_shows_the_hazard_before_the_late_fence_pass(compiled):
    """``asm["ttgir"]`` is captured before Triton's late pass, so every unfenced form shows its hazard."""
    case, fence, kernel = compiled
    findings = check_ttgir(kernel.asm["ttgir"])
    if fence:
        assert findings == []
        return
    (finding,) = findings
    assert finding.severity == "info" and finding.ir == "ttgir"
    assert finding.kind == fk.GLUON_CASES[case][3]
    assert finding.source_line.endswith(f"fence_kernels.py:{python_line(case)}")
    assert finding.buffer in ("%smem", "%a")


def test_check_kernel_splits_errors_from_compiler_fixed_hazards(compiled):
    case, fence, kernel = compiled
    report = check_kernel(ptx=kernel.asm["ptx"], ttgir=kernel.asm["ttgir"])
    assert report.kernel == case
    assert bool(report.errors) == error_expected(case, fence)
    severities = sorted(f.severity for f in report.findings)  # no unknown: the TTGIR bounds every operand
    if fence:
        assert severities == []
    elif error_expected(case, fence):
        assert severities == ["error"]  # the TTGIR hazard is the same one: it is not repeated as info
    else:
        assert severities == ["info"]  # the compiler fenced it
        assert "compiler added the fence" in report.findings[-1].message


def test_ptx_alone_cannot_bound_a_tma_box():
    """Without the TTGIR, a write above a TMA store's source may lie in its box: unknown, saying why.
    (disjoint_buffers_tma_store, fenced form: ``scratch`` is written after the fence, above ``smem``.)"""
    kernel = fk.compiled_gluon("disjoint_buffers_tma_store", True)
    (finding,) = check_ptx(kernel.asm["ptx"])
    assert finding.severity == "unknown" and "TMA box size is in the tensor map" in finding.message
    assert check_kernel(ptx=kernel.asm["ptx"], ttgir=kernel.asm["ttgir"]).findings == []
