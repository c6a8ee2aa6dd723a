"""The cost of the fence check on hostile or huge PTX (red-team review of 2026-12-08).

The check runs before every kernel load, so no input may make it run for long: the algorithms are counted, not
timed: the work must grow in proportion to the input where it did not.
"""
from launcher.fence import check_ptx, checker, dataflow
from launcher.fence import ptx as P

HEADER = """
.version 8.7
.target sm_90a
.address_size 64
.extern .shared .align 16 .b8 global_smem[];
"""


def kernel(body: str, name: str = "k") -> str:
    return HEADER + f".visible .entry {name}(\n\t.param .u32 {name}_param_0\n)\n.reqntid 128\n{{\n{body}\n}}\n"


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
