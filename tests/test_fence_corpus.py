"""The checker on kernels of our own, compiled on the CPU by the installed Triton for sm_90 and sm_100.

For every case and release, ``fence_corpus`` records how many ``fence.proxy.async`` the PTX holds and where
the checker must report an ``error`` (with the reason). The tests pin both: the compiler's behaviour first
(so that a Triton that changes it shows up as such), then the checker's findings:
- an ``error`` exactly where the release leaves a generic write unfenced before an async-proxy read, naming
  that write and that read, with the Python line of the read;
- no ``error`` where every path is fenced, and no ``unknown``: every address in these kernels is resolved from
  the PTX (and the operand sizes from the TTGIR), but in the one case that pins the analysis' known limit;
- nothing at all (no ``info`` either) on kernels without an async-proxy access;
- every kernel parses, including the statement forms each case is here for.
"""
import inspect
import re

import pytest

from launcher.fence import check_kernel, checker, dataflow
from launcher.fence.ptx import build_cfg, parse_ptx

import fence_corpus as fc

RELEASE = fc.installed_release()
CASES = [(name, arch) for name, case in fc.CORPUS.items() for arch in case.archs]
WITHOUT_ASYNC = [(name, arch) for name, arch in CASES if not fc.CORPUS[name].async_proxy]


def proxy_fences(ptx: str) -> int:
    return len(re.findall(r"\bfence\.proxy\.async(?!\.global)", ptx))


def _compiled(name, arch):
    if RELEASE is None:
        pytest.skip(f"no expectations recorded for Triton {fc.triton.__version__} (recorded: {fc.RELEASES})")
    return name, arch, fc.CORPUS[name], fc.compiled_corpus(name, arch)


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0]}-sm{c[1]}")
def compiled(request):
    return _compiled(*request.param)


@pytest.fixture(scope="module")
def report_of():
    reports = {}

    def report(name, arch, kernel):
        if (name, arch) not in reports:
            reports[(name, arch)] = check_kernel(ptx=kernel.asm["ptx"], ttgir=kernel.asm["ttgir"],
                                                 shared=kernel.metadata.shared)
        return reports[(name, arch)]
    return report


def test_compiler_emits_the_recorded_fences(compiled):
    name, arch, case, kernel = compiled
    assert proxy_fences(kernel.asm["ptx"]) == case.fences_for(RELEASE, arch), case.why


def test_the_ptx_holds_what_the_case_is_here_for(compiled):
    name, arch, case, kernel = compiled
    ptx = kernel.asm["ptx"]
    expected = {text for text, (releases, archs) in case.shows.items() if RELEASE in releases and arch in archs}
    for text in expected:
        assert text in ptx, f"{name}: the PTX no longer holds {text!r}"
    if "brx.idx" in ptx:  # a jump table: the dispatching block has an edge to every target it lists
        (function,) = parse_ptx(ptx).kernels
        blocks, successors = build_cfg(function)
        block_of = {index: n for n, members in enumerate(blocks) for index in members}
        jumps = [(n, function.instructions[members[-1]]) for n, members in enumerate(blocks)
                 if members and function.instructions[members[-1]].base == "brx"]
        assert jumps
        for n, jump in jumps:
            targets = function.tables[(0, jump.operands[1])]
            assert {block_of[function.labels[(0, t)]] for t in targets} <= set(successors[n])


def test_error_exactly_where_the_ptx_lacks_a_fence(compiled, report_of):
    name, arch, case, kernel = compiled
    report = report_of(name, arch, kernel)
    errors = report.errors
    assert len(errors) == case.errors_for(RELEASE, arch), (case.errors.why if case.errors else case.why) + \
        "\n" + report.format_text()
    if not errors:
        return
    lines, start = inspect.getsourcelines(case.kernel.fn)
    dot_line = start + next(i for i, text in enumerate(lines) if "tl.dot(" in text)
    ptx_lines = kernel.asm["ptx"].splitlines()
    for finding in errors:
        assert finding.kind == "RAW" and finding.scope == "cta"
        assert finding.writer.text.startswith(case.errors.writer), finding.format_text()
        reader = finding.reader.text.split(" ", 1)[1] if finding.reader.text.startswith("@") else finding.reader.text
        assert reader.startswith(case.errors.reader[arch]), finding.format_text()
        assert finding.source_line.endswith(f"fence_corpus.py:{dot_line}")
        for location in (finding.writer, finding.reader):
            assert " ".join(ptx_lines[location.line - 1].split()).rstrip(";") == location.text


def test_no_unknown_but_the_pinned_ones(compiled, report_of):
    """Every address and extent in these kernels is decided, but where a case pins an unknown (with why)."""
    name, arch, case, kernel = compiled
    report = report_of(name, arch, kernel)
    unknown = [f for f in report.findings if f.severity == "unknown"]
    assert len(unknown) == case.unknowns_for(RELEASE, arch), case.why + "\n" + report.format_text()
    for finding in unknown:
        assert "mul.hi.u64" in finding.message  # the message names what the analysis could not follow


@pytest.mark.parametrize("name, arch", WITHOUT_ASYNC, ids=[f"{n}-sm{a}" for n, a in WITHOUT_ASYNC])
def test_nothing_reported_without_an_async_proxy(name, arch, report_of):
    """No info, no unknown: with no async-proxy access there is nothing to order."""
    name, arch, case, kernel = _compiled(name, arch)
    assert report_of(name, arch, kernel).findings == [], case.why


def test_the_check_stays_far_below_its_work_budget(compiled, monkeypatch):
    """Past its work budget the check stops and the kernel is unknown (test_fence_budget.py): every kernel here
    takes under a tenth of it. (The largest kernel measured, the attention backward of the benchmark, sm_100 with
    3.6, takes 0.46 million of the 5 million steps: docs/fence.md, Cost.)"""
    name, arch, case, kernel = compiled
    budgets = []

    class Recording(checker.WorkBudget):
        __slots__ = ()

        def __init__(self, limit=None):
            super().__init__(limit)
            budgets.append(self)

    monkeypatch.setattr(checker, "WorkBudget", Recording)
    report = check_kernel(ptx=kernel.asm["ptx"], ttgir=kernel.asm["ttgir"], shared=kernel.metadata.shared)
    assert all(f.kind != "BUDGET" for f in report.findings)
    assert budgets and max(b.spent for b in budgets) < dataflow.WORK_BUDGET // 10, [b.spent for b in budgets]
