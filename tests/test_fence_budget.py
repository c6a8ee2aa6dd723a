"""The cost of the fence check on hostile or huge PTX (red-team review of 2026-12-08), and its work budget.

The check runs before every kernel load, so no input may make it run for long:
- the algorithms are counted, not timed: the work must grow in proportion to the input where it did not;
- past its work budget (``dataflow.WORK_BUDGET`` steps) the check stops and the kernel is ``unknown``, with a finding
  of kind ``BUDGET`` that names the budget: never ``clean``, never a hang. The corpus stays far below the budget
  (``test_fence_corpus.py::test_the_check_stays_far_below_its_work_budget``).
"""
import json
import logging
import sys

from launcher.fence import check_kernel, check_ptx, check_ttgir, dataflow, main
from launcher.fence import checker, ptx as P
from launcher.fence.report import BUDGET

from fence_ptx_text import kernel


def mbarriers(n: int) -> str:
    """n cp.async, each tracked by its own mbarrier, then a fence, then a wait loop per mbarrier (Triton's
    waitLoop), in a loop: the review's 2000 mbarriers took 48 s."""
    body = ["\tmov.b32 \t%r2, global_smem;\n\tbfe.u32 %r50, %r2, 4, 14;\n\tcvt.u64.u32 %rd5, %r50;\n$LOOP:\n"]
    body += [f"\tcp.async.ca.shared.global [%r2+{16 * i}], [%rd1], 16;\n"
             f"\tcp.async.mbarrier.arrive.noinc.shared.b64 [%r2+{65536 + 8 * i}];\n" for i in range(n)]
    body.append("\tfence.proxy.async.shared::cta;\n")
    body += [f"$W{i}:\n\tmbarrier.try_wait.parity.shared.b64 %p2, [%r2+{65536 + 8 * i}], %r1;\n\t@!%p2 bra $W{i};\n"
             for i in range(n)]
    body.append("\twgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%r5,%r6}, %rd5, %rd5, 1, 1, 1, 0, 0;\n"
                "\t@%p1 bra $LOOP;\n\tret;")
    return kernel("".join(body))


def jump_table(n: int) -> str:
    """brx.idx over a .branchtargets table of n labels (one per line), each target storing, then a TMA store."""
    targets = ",\n\t\t".join(f"$L_t{i}" for i in range(n))
    body = ["\tmov.b32 \t%r2, global_smem;\n\tmov.u32 \t%r1, %tid.x;\n",
            f"$L_table: .branchtargets\n\t\t{targets};\n\tbrx.idx \t%r1, $L_table;\n"]
    body += [f"$L_t{i}:\n\tst.shared.b32 \t[%r2+{4 * i}], %r1;\n\tbra \t$L_end;\n" for i in range(n)]
    body.append("$L_end:\n\tcp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd1, {%r1, %r1}], [%r2];\n\tret;")
    return kernel("".join(body))


def storm(n: int) -> str:
    """n links, each a TMA store of the whole buffer on one side of a branch and a store to it on the other: the
    TMA store of link i meets the i stores before it, n * n / 2 (writer, reader) pairs in all."""
    body = ["\tmov.b32 \t%r2, global_smem;\n\tmov.u32 \t%r1, %tid.x;\n\tsetp.eq.b32 \t%p1, %r1, 0;\n"]
    for i in range(n):
        body.append(f"\t@%p1 bra \t$S{i};\n\tcp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r2], 65536;\n"
                    f"$S{i}:\n\tst.shared.b32 \t[%r2+{4 * i}], %r1;\n")
    body.append("\tret;")
    return kernel("".join(body))


# -- the algorithms ---------------------------------------------------------------------------------------


def test_an_arrive_does_not_rebuild_every_copy_in_flight(monkeypatch):
    """Each arrive used to rebuild every copy in flight (N x N entries, and their N-bit masks hashed again): copies
    in flight are now kept relative to a log of the commits, arrives and fences since they were issued. The
    entries built grow with N, not N * N."""
    built = []
    for cls in (dataflow._Pending, dataflow._Issued):
        real = cls.__init__
        monkeypatch.setattr(cls, "__init__", lambda self, *a, _real=real, **k: built.append(1) or _real(self, *a, **k))
    counts = []
    for n in (100, 200):
        built.clear()
        assert [f.severity for f in check_ptx(mbarriers(n))] == ["error"]  # made copies reach the wgmma unfenced
        counts.append(len(built))
    assert counts[1] < 2.5 * counts[0], counts  # quadratic would be 4x


def test_a_wait_on_every_barrier_is_one_mask_not_a_test_per_pair(monkeypatch):
    """The mask of each wait (the arrive barriers it may be) came from an overlap test per (arrive, wait) pair:
    barriers with resolved addresses are now looked up in sorted order."""
    tests = []
    real = P.PtxRegion.overlap
    monkeypatch.setattr(P.PtxRegion, "overlap", lambda self, other: tests.append(1) or real(self, other))
    check_ptx(mbarriers(300))
    assert len(tests) < 10 * 300, len(tests)  # 300 * 300 before


def test_a_long_jump_table_is_read_in_linear_time(monkeypatch):
    """A statement continued over many lines (a .branchtargets table) was searched again from its start at every
    line (5000 targets: 0.4 s in the parser alone, 20000: seconds)."""
    scanned = []
    real = P._depth
    monkeypatch.setattr(P, "_depth", lambda text: scanned.append(len(text)) or real(text))
    text = jump_table(3000)
    findings = check_ptx(text)
    assert [(f.severity, f.kind) for f in findings] == [("error", "RAW")]
    assert sum(scanned) < 2 * len(text), (sum(scanned), len(text))


def test_a_block_that_many_branch_to_joins_them_at_once():
    """The end of a jump table of N targets joined each target's state into what it had so far, N times: the
    states that reach a block are joined once, when it runs. Counted in budget steps."""
    spent = []
    for n in (1000, 2000):
        module = P.parse_ptx(jump_table(n))
        budget = dataflow.WorkBudget()
        dataflow.find_hazards(P.kernel_blocks(module, module.kernels[0]), budget=budget)
        spent.append(budget.spent)
    assert spent[1] < 2.5 * spent[0], spent


def test_a_storm_of_hazards_keeps_one_per_async_instruction():
    """N * N / 2 (writer, reader) pairs were all kept, then sorted (2000 links: 15 s and 700 MB); the check keeps
    the one it reports per async instruction and kind, as it chose it before: a certain one with the earliest
    writer."""
    n = 300
    findings = check_ptx(storm(n))
    assert len(findings) == n - 1 and {(f.severity, f.kind) for f in findings} == {("error", "RAW")}
    # link i's TMA store meets the stores of links 0..i-1 (link 0's meets none); link 0's is the one shown
    first_store = next(f.writer.line for f in findings)
    assert all(f.writer.line == first_store for f in findings)
    module = P.parse_ptx(storm(40))
    blocks = P.kernel_blocks(module, module.kernels[0])
    every = dataflow.find_hazards(blocks)
    assert len(every) == 40 * 39 // 2
    chosen = dataflow.find_hazards(blocks, representative=True)
    assert sorted((h.kind, h.generic.instruction.line, h.async_access.instruction.line, h.certain) for h in chosen) \
        == sorted((h.kind, h.generic.instruction.line, h.async_access.instruction.line, h.certain)
                  for h in checker.representative_hazards(every))


# -- the budget -------------------------------------------------------------------------------------------


def _the_budget_finding(findings, ir="ptx"):
    (finding,) = findings
    assert (finding.severity, finding.kind, finding.ir) == ("unknown", BUDGET, ir)
    assert "work budget" in finding.message and f"{dataflow.WORK_BUDGET:,} steps" in finding.message
    return finding


def test_a_kernel_past_the_work_budget_is_unknown_and_names_the_budget(caplog):
    """A hostile kernel (a storm of 3500 links, 6 million pairs) at the default budget: not decided, never
    clean, and said so in the log the load hook writes to. (Verdict and reason only; the cost is counted.)"""
    budget_spent = []
    real = checker.WorkBudget

    class Recording(real):
        __slots__ = ()

        def __init__(self, limit=None):
            super().__init__(limit)
            budget_spent.append(self)

    text = storm(3500)
    with caplog.at_level(logging.WARNING, logger="launcher.fence"):
        checker.WorkBudget = Recording
        try:
            report = check_kernel(ptx=text, info=False)
        finally:
            checker.WorkBudget = real
    assert report.verdict == "unknown"
    finding = _the_budget_finding(report.findings)
    assert finding.kernel == "k" and finding.writer.line == finding.reader.line > 0  # the .entry line
    assert "work budget" in caplog.text and "k" in caplog.text
    # it stopped where the budget ran out, not far past it
    (budget,) = budget_spent
    assert dataflow.WORK_BUDGET < budget.spent < dataflow.WORK_BUDGET + 100_000
    assert "not decided" in report.format_text()


def test_every_part_of_the_check_spends_from_the_budget(monkeypatch):
    """Reading the kernel, classifying its instructions, the address analysis and the dataflow analysis each
    spend from the one budget, so a kernel that is huge rather than hostile stops too."""
    calls = []  # (the function that spent, steps spent before it)

    class Recording(dataflow.WorkBudget):
        __slots__ = ()

        def spend(self, steps):
            if steps:
                calls.append((sys._getframe(1).f_code.co_name, self.spent))
            super().spend(steps)

    text = mbarriers(60)
    module = P.parse_ptx(text)
    budget = Recording(10 ** 9)
    dataflow.find_hazards(P.kernel_blocks(module, module.kernels[0], budget=budget), budget=budget)
    first = {}
    for name, before in calls:
        first.setdefault(name, before)
    assert list(first)[:3] == ["kernel_blocks", "_function_events", "_solve"] and "_run" in first, list(first)
    stopped_in = []
    real = checker.budget_finding

    def where(kernel, exceeded, **kw):
        traceback = exceeded.__traceback__
        while traceback.tb_next is not None and traceback.tb_next.tb_frame.f_code.co_name != "spend":
            traceback = traceback.tb_next
        stopped_in.append(traceback.tb_frame.f_code.co_name)
        return real(kernel, exceeded, **kw)

    monkeypatch.setattr(checker, "budget_finding", where)
    for part in ("kernel_blocks", "_function_events", "_solve", "_run"):
        monkeypatch.setattr(dataflow, "WORK_BUDGET", max(first[part], 1))  # its first spending goes past it
        _the_budget_finding(check_ptx(text))
        assert stopped_in[-1] == part
    monkeypatch.setattr(dataflow, "WORK_BUDGET", budget.spent)
    assert [f.kind for f in check_ptx(text)] == ["RAW"]  # what it takes is enough


def test_a_ttgir_past_the_budget_is_unknown_alone_and_info_beside_its_ptx(monkeypatch):
    ttgir = """\
#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#shared = #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>
#smem = #ttg.shared_memory
module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32} {
  tt.func public @k(%desc: !tt.tensordesc<tensor<64x64xf16, #shared>>) {
    %cst = arith.constant dense<1.000000e+00> : tensor<64x64xf16, #blocked>
    %c0_i32 = arith.constant 0 : i32
    %buf = ttg.local_alloc : () -> !ttg.memdesc<64x64xf16, #shared, #smem, mutable>
    ttg.local_store %cst, %buf : tensor<64x64xf16, #blocked> -> !ttg.memdesc<64x64xf16, #shared, #smem, mutable>
    ttng.async_tma_copy_local_to_global %desc[%c0_i32, %c0_i32] %buf : !tt.tensordesc<tensor<64x64xf16, #shared>>, \
!ttg.memdesc<64x64xf16, #shared, #smem, mutable>
    tt.return
  }
}
"""
    assert [f.kind for f in check_ttgir(ttgir)] == ["RAW"]
    monkeypatch.setattr(dataflow, "WORK_BUDGET", 1)
    _the_budget_finding(check_ttgir(ttgir), ir="ttgir")
    monkeypatch.undo()
    made = []

    class FirstOneSmall(dataflow.WorkBudget):  # check_kernel checks the TTGIR first, then the PTX
        __slots__ = ()

        def __init__(self, limit=None):
            super().__init__(1 if not made else limit)
            made.append(self)

    monkeypatch.setattr(checker, "WorkBudget", FirstOneSmall)
    report = check_kernel(ptx=kernel("\tret;"), ttgir=ttgir)  # the PTX decides: the TTGIR's stop is only info
    assert len(made) == 2
    assert report.verdict == "clean" and [(f.severity, f.kind) for f in report.findings] == [("info", BUDGET)]


def test_the_check_command_reports_the_budget(monkeypatch, tmp_path, capsys):
    path = tmp_path / "k.ptx"
    path.write_text(mbarriers(60))
    monkeypatch.setattr(dataflow, "WORK_BUDGET", 1_000)
    assert main(["--format", "json", str(path)]) == 0  # only errors fail the command
    (entry,) = json.loads(capsys.readouterr().out)["kernels"]
    assert entry["verdict"] == "unknown" and [f["kind"] for f in entry["findings"]] == [BUDGET]
