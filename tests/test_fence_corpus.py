"""No ``error`` on ordinary Triton kernels (sm_90 and sm_100); every ``unknown`` is recorded here
and explained in docs/fence.md."""
import pytest

from launcher.fence import check_kernel

import fence_corpus as fc

# (kernel, arch) -> number of `unknown` findings expected; everything else must have none
EXPECTED_UNKNOWN = {}


@pytest.mark.parametrize("arch", fc.ARCHS)
@pytest.mark.parametrize("name", sorted(fc.CORPUS))
def test_no_error_on_ordinary_kernels(name, arch):
    kernel = fc.compiled_corpus(name, arch)
    report = check_kernel(ptx=kernel.asm["ptx"], ttgir=kernel.asm["ttgir"])
    assert report.errors == [], report.format_text()
    unknown = [f for f in report.findings if f.severity == "unknown"]
    assert len(unknown) == EXPECTED_UNKNOWN.get((name, arch), 0), report.format_text()
