"""Unit tests of the PTX parser, CFG and classifier on snippets shaped like Triton's output."""
import pytest

from launcher.fence import ParseError, check_ptx
from launcher.fence.dataflow import AccessKind, Fence, Scope
from launcher.fence.ptx import build_cfg, function_blocks, parse_ptx

from fence_ptx_text import HEADER
from fence_ptx_text import kernel as _kernel


def kernel(body: str, name: str = "k") -> str:
    return _kernel(body, name, file="/src/kern.py")


STORE_THEN_TMA = """
	mov.u32 	%r3, %tid.x;
	shl.b32 	%r5, %r3, 4;
	and.b32 	%r6, %r5, 2032;
	mov.b32 	%r2, global_smem;
	add.s32 	%r10, %r2, %r6;
	.loc	1 14 15                         // kern.py:14:15
	st.shared.v4.b32 	[%r10], {1006648320, 1006648320, 1006648320, 1006648320};
	st.shared.v4.b32 	[%r10+2048], {1006648320, 1006648320, 1006648320, 1006648320};
	.loc	1 17 28
	bar.sync 	0;
	elect.sync 	%r11|%p2, -1;
	// begin inline asm
	@%p2 cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd1, {%r1, %r1}], [%r2];
	// end inline asm
	cp.async.bulk.commit_group;
	ret;
"""


def test_predicates_operands_and_source_lines():
    text = kernel(STORE_THEN_TMA)
    module = parse_ptx(text)
    (function,) = module.functions
    assert function.name == "k" and module.shared_symbols == {"global_smem"}
    tma = next(i for i in function.instructions if i.opcode.startswith("cp.async.bulk.tensor"))
    assert tma.predicate == "%p2"
    assert tma.operands == ["[%rd1, {%r1, %r1}]", "[%r2]"]
    assert tma.source == "/src/kern.py:17"
    store = next(i for i in function.instructions if i.opcode.startswith("st.shared"))
    assert store.source == "/src/kern.py:14"
    assert text.splitlines()[store.line - 1].strip().startswith("st.shared.v4.b32")


def test_store_then_tma_store_without_fence_is_an_error_with_addresses():
    (finding,) = check_ptx(kernel(STORE_THEN_TMA))
    assert (finding.severity, finding.kind, finding.scope) == ("error", "RAW", "cta")
    assert finding.writer.text.startswith("st.shared.v4.b32")
    assert finding.reader.text.startswith("@%p2 cp.async.bulk.tensor")
    assert finding.source_line == "/src/kern.py:17"
    assert finding.buffer == "global_smem[0, ?)"
    assert "fence_async_shared()" in finding.hint


@pytest.mark.parametrize("fence,expected", [
    ("fence.proxy.async.shared::cta;", 0),
    ("fence.proxy.async;", 0),
    ("fence.proxy.async.shared::cluster;", 0),
    ("membar.proxy.async;", 0),
    ("fence.proxy.async.global;", 1),  # orders global memory only
    ("@%p2 fence.proxy.async.shared::cta;", 1),  # may not run in the writing threads
    ("wgmma.fence.sync.aligned;", 1),
    ("fence.acq_rel.cta;", 1),
    ("mbarrier.arrive.shared::cta.b64 %rd3, [%r2+8192];", 1),
])
def test_only_unpredicated_proxy_async_fences_clear(fence, expected):
    body = STORE_THEN_TMA.replace("\tbar.sync \t0;", f"\t{fence}\n\tbar.sync \t0;")
    assert len([f for f in check_ptx(kernel(body)) if f.severity == "error"]) == expected


def test_disjoint_constant_addresses_do_not_conflict():
    body = """
	mov.b32 	%r2, global_smem;
	st.shared.v4.b32 	[%r2+16384], {%r1, %r1, %r1, %r1};
	add.s32 	%r4, %r2, 8192;
	cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r4], 4096;
	ret;
"""
    assert check_ptx(kernel(body)) == []
    overlapping = body.replace("16384", "8200")
    assert [f.severity for f in check_ptx(kernel(overlapping))] == ["error"]


def test_unresolved_address_is_unknown_with_reason():
    body = """
	ld.param.b32 	%r7, [k_param_0];
	st.shared.b32 	[%r7], %r1;
	mov.b32 	%r2, global_smem;
	cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r2], 4096;
	ret;
"""
    (finding,) = check_ptx(kernel(body))
    assert finding.severity == "unknown"
    assert "not derived from a shared-memory symbol" in finding.message


INLINE_ASM_WAIT_LOOP = """
	mov.b32 	%r2, global_smem;
	st.shared.b32 	[%r2], %r1;
	// begin inline asm
	{
	.reg .pred complete;
	waitLoop:
	mbarrier.try_wait.parity.shared::cta.b64 complete, [%r2+8192], %r5;
	@!complete bra.uni waitLoop;
	}
	// end inline asm
	// begin inline asm
	{
	.reg .pred complete;
	waitLoop:
	mbarrier.try_wait.parity.shared::cta.b64 complete, [%r2+8192], %r5;
	@!complete bra.uni waitLoop;
	}
	// end inline asm
	cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd1, {%r1, %r1}], [%r2+8192];
	ret;
"""


def test_inline_asm_braces_scope_their_labels():
    function = parse_ptx(kernel(INLINE_ASM_WAIT_LOOP)).functions[0]
    blocks, successors = build_cfg(function)
    waits = [i for i, instr in enumerate(function.instructions) if instr.opcode.startswith("mbarrier.try_wait")]
    block_of = {index: n for n, members in enumerate(blocks) for index in members}
    first, second = (block_of[w] for w in waits)
    assert first in successors[first] and second in successors[second]  # each loop branches to its own label
    assert second not in successors[first] or first + 1 == second
    # the generic write is a WAW hazard for the TMA load; mbarrier ops are not data accesses
    (finding,) = check_ptx(kernel(INLINE_ASM_WAIT_LOOP))
    assert (finding.kind, finding.severity) == ("WAW", "error")


LOOP = """
	mov.b32 	%r2, global_smem;
	mov.b32 	%r14, 0;
$L__BB0_2:
	@%p9 bra 	$L__BB0_4;
	cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd2, {%r14, %r14}], [%r2];
	cp.async.bulk.wait_group.read 	0;
	bar.sync 	0;
$L__BB0_4:
	st.shared.v4.b32 	[%r2], {%r13, %r13, %r13, %r13};
	FENCE
	add.s32 	%r14, %r14, 64;
	setp.ne.b32 	%p5, %r4, %r14;
	@%p5 bra 	$L__BB0_2;
	ret;
"""


def test_loop_back_edge_carries_the_write_to_the_next_iteration():
    function = parse_ptx(kernel(LOOP.replace("FENCE", ""))).functions[0]
    blocks, successors = build_cfg(function)
    assert len(blocks) == 5
    assert successors[3] == [1, 4]  # back edge and exit
    assert successors[1] == [2, 3]  # predicated branch: taken and fall-through
    (finding,) = check_ptx(kernel(LOOP.replace("FENCE", "")))
    assert finding.kind == "RAW" and finding.writer.line > finding.reader.line
    assert check_ptx(kernel(LOOP.replace("FENCE", "fence.proxy.async.shared::cta;"))) == []


def test_wgmma_descriptors_resolve_to_their_buffers():
    body = """
	mov.b32 	%r39, global_smem;
	st.shared.v4.b32 	[%r39+16384], {%r1, %r1, %r1, %r1};
	bfe.u32 	%r41, %r39, 4, 14;
	cvt.u64.u32 	%rd42, %r41;
	add.s32 	%r42, %r39, 8192;
	bfe.u32 	%r43, %r42, 4, 14;
	cvt.u64.u32 	%rd43, %r43;
	or.b64 	%rd1, %rd42, 4611686293305294848;
	or.b64 	%rd2, %rd43, 4611686293305294848;
	wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%f1,%f2}, %rd1, %rd2, 0, 1, 1, 0, 1;
	ret;
"""
    function = parse_ptx(kernel(body)).functions[0]
    (block,) = function_blocks(function, {"global_smem"})
    reads = [e for e in block.events if not isinstance(e, Fence) and e.kind is AccessKind.ASYNC_READ]
    assert [(r.region.lo, r.region.hi) for r in reads] == [(0, None), (8192, None)]
    # the store at 16384 may lie in either operand (extent unknown): unknown, not error
    assert [f.severity for f in check_ptx(kernel(body))] == ["unknown"]
    assert [f.severity for f in check_ptx(kernel(body.replace("16384", "8192")))] == ["error"]


def test_multicast_tma_load_needs_a_cluster_fence():
    body = """
	mov.b32 	%r2, global_smem;
	ld.shared.b32 	%r9, [%r2];
	fence.proxy.async.shared::cta;
	cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%r2], [%rd1, {%r1, %r1}], [%r3], %rs1;
	ret;
"""
    (finding,) = check_ptx(kernel(body))
    assert (finding.kind, finding.scope) == ("WAR", "cluster")
    assert "cluster=True" in finding.hint
    fixed = body.replace("fence.proxy.async.shared::cta", "fence.proxy.async.shared::cluster")
    assert check_ptx(kernel(fixed)) == []


def test_cp_async_and_stmatrix_are_generic_writes():
    function = parse_ptx(kernel("""
	mov.b32 	%r2, global_smem;
	cp.async.cg.shared.global [%r2], [%rd4], 16;
	stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r2+64], {%r1, %r1, %r1, %r1};
	ret;
""")).functions[0]
    (block,) = function_blocks(function, {"global_smem"})
    assert [e.kind for e in block.events] == [AccessKind.GENERIC_WRITE, AccessKind.GENERIC_WRITE]
    assert all(e.scope is Scope.CTA for e in block.events)


def test_declarations_and_debug_sections_are_skipped():
    text = ".extern .func (.param .b32 r) vprintf(.param .b64 a, .param .b64 b);\n" + kernel("\tret;") + \
        "\t.section\t.debug_abbrev\n\t{\n.b8 1\n\t}\n"
    module = parse_ptx(text)
    assert [f.name for f in module.functions] == ["k"]


def test_parse_error_names_file_and_line():
    with pytest.raises(ParseError) as info:
        check_ptx(kernel("\tmov.b32 %r1, 0\n\tret;"), filename="bad.ptx")
    assert info.value.filename == "bad.ptx" and info.value.line > 0
    with pytest.raises(ParseError):
        check_ptx(HEADER + ".visible .entry k()\n{\n\tret;\n")


# Hand-written snippets: Triton does not emit these constructs, so only a snippet can show that each one
# makes the kernel unreadable (ParseError at its line) rather than silently clean.
@pytest.mark.parametrize("bad, reason", [
    ("\t.foo 1;", "directive not understood"),
    ("\tbra $L__nowhere;", "branch to an unknown label"),
    ("\tbrx.idx %r1, $L_table;", "without a .branchtargets table"),
    ("$L_table: .branchtargets\n\t\t$L__BB0_1,\n\t\t$L__BB0_9;\n\tbrx.idx %r1, $L_table;", "unknown label '$L__BB0_9'"),
    ("\tcall (retval0), %rd1, (param0), prototype_0;", "call the checker cannot follow"),
    ("\tcall.uni undeclared, (param0);", "call the checker cannot follow"),
    ("\tfoo.shared.b32 %r1, [%r2];", "shared-memory instruction not understood"),
    ("\tst.shared.b32;", "needs operand"),
    ("\tmov.b32 %r1, 0\n\tmov.b32 %r2, 1;", "statement without ';'"),
    ("\t%r1 = add %r2, %r3;", "statement not understood"),
])
def test_constructs_the_checker_does_not_understand_make_the_kernel_unreadable(bad, reason):
    body = "$L__BB0_1:\n" + bad + "\n\tcp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r9], 16;\n\tret;"
    text = kernel(body)
    with pytest.raises(ParseError) as info:
        check_ptx(text, filename="k.ptx")
    assert reason in info.value.reason
    first_bad_line = next(i for i, line in enumerate(text.splitlines(), 1)
                          if line.strip() == bad.splitlines()[0].strip())
    assert info.value.filename == "k.ptx" and first_bad_line <= info.value.line <= first_bad_line + 3


def test_a_multi_line_jump_table_gives_an_edge_to_every_target():
    # Triton's form (tl.range(warp_specialize=True) on sm_100 has it too; see test_fence_corpus)
    function = parse_ptx(kernel("""
	mov.u32 	%r1, %tid.x;
	$L_brx_0: .branchtargets
		$L__BB0_1,
		$L__BB0_2,
		$L__BB0_3;
	brx.idx 	%r1, $L_brx_0;
$L__BB0_1:
	ret;
$L__BB0_2:
	ret;
$L__BB0_3:
	ret;
""")).functions[0]
    blocks, successors = build_cfg(function)
    assert function.tables[(0, "$L_brx_0")] == ["$L__BB0_1", "$L__BB0_2", "$L__BB0_3"]
    assert successors[0] == [1, 2, 3]


def test_calls_into_module_functions_are_followed():
    # Hand-written: a shared-memory write in a .func, then a TMA store in the caller. Triton's noinline
    # functions take scalars only, so no real kernel here has this shape; the CFG must still see it.
    text = HEADER + """
.func helper()
{
	mov.b32 	%r1, global_smem;
	st.shared.v4.b32 	[%r1], {%r2, %r2, %r2, %r2};
	ret;
}
.visible .entry k(
	.param .u64 k_param_0
)
{
	mov.b32 	%r3, global_smem;
	call.uni helper, ();
	cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r3], 4096;
	ret;
}
"""
    (finding,) = check_ptx(text)
    assert (finding.severity, finding.kind, finding.kernel) == ("error", "RAW", "k")
    assert finding.writer.text.startswith("st.shared.v4.b32") and finding.reader.text.startswith("cp.async.bulk")
    fenced = text.replace("\tcall.uni helper, ();", "\tcall.uni helper, ();\n\tfence.proxy.async.shared::cta;")
    assert check_ptx(fenced) == []


def test_descriptor_from_shift_and_mask_resolves_to_the_buffer():
    # The form Triton 3.6 emits for fp8 wgmma on sm_90 (see matmul_grouped_fp8 in the corpus):
    # ((address >> 4) + a warp's 512 units) & 16383, or-ed with the layout bits.
    body = """
	mov.b32 	%r39, global_smem;
	mov.u32 	%r1, %tid.x;
	shr.u32 	%r2, %r1, 5;
	shl.b32 	%r3, %r2, 7;
	and.b32 	%r4, %r3, 512;
	st.shared.v4.b32 	[%r39+32768], {%r1, %r1, %r1, %r1};
	add.s32 	%r40, %r39, 16384;
	shr.u32 	%r41, %r40, 4;
	add.s32 	%r42, %r4, %r41;
	and.b32 	%r43, %r42, 16383;
	cvt.u64.u32 	%rd42, %r43;
	or.b64 	%rd1, %rd42, 4611686293305294848;
	wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {%f1,%f2}, %rd1, %rd1, 0, 1, 1;
	ret;
"""
    function = parse_ptx(kernel(body)).functions[0]
    (block,) = function_blocks(function, {"global_smem"})
    (read, _) = [e for e in block.events if not isinstance(e, Fence) and e.kind is AccessKind.ASYNC_READ]
    assert (read.region.symbol, read.region.lo) == ("global_smem", 16384)  # 16384 + [0, 512 * 16]
    assert read.unresolved is not None  # the operand's extent: not in the PTX alone
    # a store above the operand's start may or may not be inside it (its extent is in the TTGIR only);
    # a store at its first bytes is certainly inside
    assert [f.severity for f in check_ptx(kernel(body))] == ["unknown"]
    assert [f.severity for f in check_ptx(kernel(body.replace("32768", "16384")))] == ["error"]


def test_a_wrapping_stage_counter_bounds_the_address():
    # Triton's pipelined loops: stage = (stage + 1 > 2) ? 0 : stage + 1, then base + stage * 16384.
    body = """
	mov.b32 	%r102, global_smem;
	mov.b32 	%r357, -1;
$L__BB0_2:
	add.s32 	%r160, %r357, 1;
	setp.gt.s32 	%p16, %r160, 2;
	selp.b32 	%r357, 0, %r160, %p16;
	shl.b32 	%r161, %r357, 14;
	add.s32 	%r162, %r102, %r161;
	st.shared.b32 	[%r162], %r1;
	@%p1 bra 	$L__BB0_2;
	ret;
"""
    function = parse_ptx(kernel(body)).functions[0]
    blocks = function_blocks(function, {"global_smem"})
    (store,) = [e for b in blocks for e in b.events]
    assert (store.region.lo, store.region.hi) == (0, 2 * 16384 + 4)


@pytest.mark.parametrize("line", [
    "a" + "::" * 40 + "!;",  # took time exponential in the number of '::' (the opcode pattern had two ways)
    "add.s32 " + " " * 20000 + "x",  # quadratic in the spaces before operands
])
def test_hostile_lines_are_refused_in_linear_time(line):
    """A bundle's PTX may be tampered with: every line pattern is linear."""
    with pytest.raises(ParseError, match="statement not understood|without ';'|not understood"):
        check_ptx(kernel(STORE_THEN_TMA.replace("\tret;", line + "\n\tret;")))


def test_a_shared_declaration_is_read_without_a_backtracking_pattern():
    from launcher.fence.ptx import _shared_symbol

    assert _shared_symbol(".shared .align 16 .b8 global_smem[];") == "global_smem"
    assert _shared_symbol(".shared .b32 x[4][2] = {1, 2}") == "x"
    assert _shared_symbol(".shared .b8") is None and _shared_symbol(".shared .b8 " + "a" * 8000 + "!") is None


def test_stage_arithmetic_that_cancels_stays_relational():
    # Triton 3.6, sm_90, the warp-specialized persistent matmul of tutorial 09 (128x128 tiles): the loader moves
    # a base by stage * 16376 for one TMA load, then takes the same product off again (mad with -16376) for the
    # next. Interval arithmetic on the loop-carried stage loses that the two cancel, and the second load seemed to
    # reach the state bytes Triton writes above the buffers (a false WAW error).
    body = """
	mov.b32 	%r290, global_smem;
	mov.b32 	%r284, 0;
	st.shared.v2.b32 	[global_smem+164320], {0, 16843009};
$L__BB0_2:
	mad.lo.s32 	%r277, %r284, 16376, %r290;
	mad.lo.s32 	%r292, %r284, -16376, %r277;
	add.s32 	%r281, %r292, 98304;
	add.s32 	%r280, %r290, 164128;
	mbarrier.arrive.expect_tx.shared.b64 _, [%r280], 8192;
	@%p31 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r281], [%rd43, {%r1, %r2}], [%r280];
	add.s32 	%r284, %r284, 1;
	@%p1 bra 	$L__BB0_2;
	ret;
"""
    function = parse_ptx(kernel(body)).functions[0]
    blocks = function_blocks(function, {"global_smem"})
    (load,) = [e for b in blocks for e in b.events if not isinstance(e, Fence) and e.kind is AccessKind.ASYNC_WRITE]
    assert (load.region.lo, load.region.hi) == (98304, 98304 + 8192)
    assert check_ptx(kernel(body)) == []
    # without the cancelling mad the stage grows without bound: the load may reach the store
    uncancelled = body.replace("mad.lo.s32 \t%r292, %r284, -16376, %r277;", "mov.b32 \t%r292, %r277;")
    assert [f.severity for f in check_ptx(kernel(uncancelled))] == ["unknown"]


def test_a_descriptor_stepped_in_a_loop_is_widened():
    # a descriptor advanced by 2 units (32 bytes) every iteration: the analysis must reach a fixed point
    body = """
	mov.b32 	%r39, global_smem;
	bfe.u32 	%r41, %r39, 4, 14;
	cvt.u64.u32 	%rd1, %r41;
$L__BB0_2:
	add.s64 	%rd1, %rd1, 2;
	wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%f1,%f2}, %rd1, %rd1, 0, 1, 1, 0, 1;
	st.shared.b32 	[%r39+65536], %r1;
	@%p1 bra 	$L__BB0_2;
	ret;
"""
    findings = check_ptx(kernel(body))
    assert [f.severity for f in findings] == ["unknown"]
    assert "without a bound" in findings[0].message
    assert check_ptx(kernel(body), shared=1024) == []  # the store lies past a 1 KiB allocation: no overlap


def test_a_register_defined_many_times_costs_joins_in_proportion():
    """A register redefined N times across blocks with back edges: the ("all", register) node joins
    only the definitions that changed since it was last evaluated, so the joins grow with N, not
    with N * N (hostile PTX in a bundle made the check take 43 s at N = 6400). Counted, not timed."""
    from launcher.fence import ptx as P

    def growing(n):
        body = ["\tmov.u32 \t%r1, %tid.x;", "\tsetp.lt.s32 \t%p1, %r1, 5;", "\tmov.b32 \t%r2, global_smem;",
                "\tmov.b32 \t%r3, %r2;", "$L__top:"]
        for i in range(n):
            body += ["\tadd.s32 \t%r3, %r3, 16;", "\tst.shared.b32 \t[%r3], %r1;", "\t@%p1 bra \t$L__top;", f"$L__n{i}:"]
        body.append("\tcp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%rd1, {%r1}], [%r2];")
        return kernel("\n".join(body))

    counts = []
    real = P._join
    for n in (200, 400):
        calls = [0]

        def counting(a, b):
            calls[0] += 1
            return real(a, b)

        P._join = counting
        try:
            check_ptx(growing(n))
        finally:
            P._join = real
        counts.append(calls[0])
    assert counts[1] < 3 * counts[0], counts  # quadratic would be about 4x



CP_ASYNC_GROUPS = """
	mov.b32 	%r2, global_smem;
	cp.async.cg.shared.global [%r2], [%rd4], 16;
	cp.async.commit_group;
	cp.async.cg.shared.global [%r2+4096], [%rd4], 16;
	cp.async.commit_group;
	WAIT
	fence.proxy.async.shared::cta;
	cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r2], 4096;
	cp.async.wait_group 0;
	cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r2], 8192;
	ret;
"""


@pytest.mark.parametrize("wait, unordered", [
    # wait_group 1: the older group is complete at the fence, the newest may not be
    ("cp.async.wait_group 1;", ["[%r2+4096]"]),
    ("cp.async.wait_group 0;", []),
    ("cp.async.wait_all;", []),  # the PTX ISA: a commit_group and a wait_group 0
    # both groups may be in flight at the fence: both are made at the wait_group 0 after it. The first
    # read may read the first copy in flight: a race that no fence repairs, not reported.
    ("cp.async.wait_group 2;", ["[%r2]", "[%r2+4096]"]),
    ("", ["[%r2]", "[%r2+4096]"]),
])
def test_a_cp_async_write_is_made_at_the_wait_that_completes_its_group(wait, unordered):
    from launcher.fence.dataflow import find_hazards

    function = parse_ptx(kernel(CP_ASYNC_GROUPS.replace("WAIT", wait))).functions[0]
    hazards = find_hazards(function_blocks(function, {"global_smem"}))
    assert all(h.kind == "RAW" and h.certain for h in hazards)
    assert all(h.async_access.instruction.text.endswith("8192") for h in hazards)
    assert sorted(h.generic.instruction.text.split()[1].rstrip(",") for h in hazards) == sorted(unordered)


def test_cp_async_wait_group_needs_a_constant():
    body = "\tcp.async.wait_group %r1;\n\tcp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r9], 16;\n\tret;"
    with pytest.raises(ParseError) as info:
        check_ptx(kernel(body))
    assert "constant count" in info.value.reason


CP_ASYNC_LOOP = """
	mov.b32 	%r2, global_smem;
	mov.b32 	%r5, 0;
$L__BB0_1:
	cp.async.cg.shared.global [%r2], [%rd4], 16;
	cp.async.commit_group;
	cp.async.wait_group COUNT;
	fence.proxy.async.shared::cta;
	cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r2], 4096;
	add.s32 	%r5, %r5, 1;
	setp.lt.s32 	%p1, %r5, 100;
	@%p1 bra 	$L__BB0_1;
	ret;
"""


@pytest.mark.parametrize("count", ["1", "1U", "16", "17", "1000", "99999999999999999999"])
def test_a_loop_with_a_large_wait_group_count_settles_in_a_few_rounds(count, monkeypatch):
    """A copy's age is counted up to a small cap: a wait_group of a large count (1000 is valid PTX) made
    the fixed point go round the loop once per count (88 s at 1000; 10**20 never ended)."""
    from launcher.fence import dataflow

    runs = []
    real_run = dataflow._run
    monkeypatch.setattr(dataflow, "_run", lambda *a, **k: runs.append(1) or real_run(*a, **k))
    findings = check_ptx(kernel(CP_ASYNC_LOOP.replace("COUNT", count)))
    assert len(runs) < 100
    # wait_group N (N >= 1) leaves this iteration's copy in flight past the fence and the read (a race, not
    # a fence matter); a later iteration's wait completes it, and that iteration's fence orders it
    assert findings == []


@pytest.mark.parametrize("text, value", [("16", 16), ("0x10", 16), ("0X1f", 31), ("010", 8), ("0", 0),
                                         ("0b101", 5), ("-7", -7), ("12U", 12), ("0x10U", 16), ("-0x10", -16),
                                         ("1_0", None), ("0f3F800000", None), ("%r1", None), ("08", None)])
def test_ptx_integer_literals(text, value):
    from launcher.fence.ptx import _constant

    assert _constant(text) == value


COMPLETE_THEN_FENCE = """
	mov.b32 	%r2, global_smem;
	cp.async.cg.shared.global [%r2], [%rd4], 16;
BEFORE
	fence.proxy.async.shared::cta;
	cp.async.wait_all;
	cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r2], 4096;
	ret;
"""
_ARRIVE = "\tcp.async.mbarrier.arrive.noinc.shared.b64 [%r2+8192];\n"
_TRY_WAIT = "\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2+8192], 0;\n"


@pytest.mark.parametrize("before, completed", [
    ("\tcp.async.commit_group;\n\tcp.async.wait_group 0;\n", True),
    # a predicated wait may not run in the writing thread: the copy may complete only at wait_all
    ("\tcp.async.commit_group;\n\t@%p1 cp.async.wait_group 0;\n", False),
    (_ARRIVE + _TRY_WAIT, True),
    (_ARRIVE + "\t@%p1 mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r2+8192], 0;\n", False),
    ("\t@%p1 " + _ARRIVE.lstrip("\t") + _TRY_WAIT, False),
    # test_wait answers whether the phase is complete; its answer may be no
    (_ARRIVE + "\tmbarrier.test_wait.parity.shared::cta.b64 %p2, [%r2+8192], 0;\n", False),
    # a wait on another mbarrier (8 bytes above) completes nothing this one tracks
    (_ARRIVE + _TRY_WAIT.replace("8192", "8200"), False),
    # ages are exact up to 16 newer groups; a wait_group of a larger count completes nothing it is not sure of
    ("\tcp.async.commit_group;\n" + "\tcp.async.commit_group;\n" * 16 + "\tcp.async.wait_group 16;\n", True),
    ("\tcp.async.commit_group;\n" + "\tcp.async.commit_group;\n" * 17 + "\tcp.async.wait_group 20;\n", False),
])
def test_only_a_completion_that_surely_happens_before_the_fence_lets_it_order_the_copy(before, completed):
    findings = check_ptx(kernel(COMPLETE_THEN_FENCE.replace("BEFORE\n", before)))
    assert [(f.severity, f.kind) for f in findings] == ([] if completed else [("error", "RAW")])


# -- red-team findings (2026-12-07): alignment of bitwise ops, bounds that are not certain, work bounds ------

ADJACENT = """
	mov.u32 	%r5, %tid.x;
	shl.b32 	%r7, %r5, 4;
	and.b32 	%r8, %r7, 2032;
	shl.b32 	%r9, %r5, 1;
	and.b32 	%r10, %r9, 112;
	xor.b32 	%r11, %r8, %r10;
	mov.b32 	%r4, global_smem;
	add.s32 	%r12, %r4, %r11;
	st.shared.v4.b32 	[%r12+8192], {%r5, %r5, %r5, %r5};
	fence.proxy.async.shared::cta;
	st.shared.v4.b32 	[%r12+6144], {%r5, %r5, %r5, %r5};
	bar.sync 	0;
	elect.sync 	%r13|%p1, -1;
	add.s32 	%r2, %r4, 8192;
	@%p1 cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd1, {%r1, %r1}], [%r2];
	ret;
"""


def test_xor_of_multiples_of_16_stays_a_multiple_of_16():
    # rtk3.adjacent_buffers: the swizzled offset (tid*16 & 2032) ^ (tid*2 & 112) is a multiple of 16 up to 2032, so
    # the write of the buffer just below the TMA source ends at 8192, where the TMA source begins. Before, the
    # xor was bounded by 2047 and the overlap counted as certain: a false error.
    assert check_ptx(kernel(ADJACENT)) == []
    # one 16-byte row higher, the threads with the highest offsets may write [8192, 8208); thread 0 writes
    # [6160, 6176): possible, not certain
    (finding,) = check_ptx(kernel(ADJACENT.replace("[%r12+6144]", "[%r12+6160]")))
    assert finding.severity == "unknown"


def test_an_address_bound_is_not_certain_overlap():
    # (tid*16 & 2032) ^ (tid & 7) is below 2048, but nothing says 2047 occurs (xor gives a bound, not the values
    # taken): a write at +6144 may reach the TMA source at 8192, not surely. Before, the bound + 16 bytes were
    # counted as written and this was an error.
    body = ADJACENT.replace("and.b32 	%r10, %r9, 112;", "and.b32 	%r10, %r5, 7;")
    (finding,) = check_ptx(kernel(body))
    assert finding.severity == "unknown"
    # where thread 0's write (offset 0: a value that occurs) is inside the TMA's first bytes, it is certain
    (finding,) = check_ptx(kernel(body.replace("[%r12+6144]", "[%r12+8192]").replace(
        "\tfence.proxy.async.shared::cta;\n", "")))
    assert finding.severity == "error"


def test_a_chain_of_forward_branches_runs_each_block_once():
    # chain_blocks of the red-team generator: before, the LIFO worklist re-ran the chain below every block whose
    # state grew (14-17 s for 800 links).
    from launcher.fence import dataflow
    links = "".join(f"\t@%p1 bra $L{i};\n\tst.shared.b32 [%r2+{4 * i}], %r1;\n$L{i}:\n" for i in range(300))
    body = ("\tmov.b32 	%r2, global_smem;\n\tmov.u32 	%r3, %tid.x;\n\tsetp.eq.b32 	%p1, %r3, 0;\n"
            + links + "\t@%p1 cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd1, {%r1, %r1}], [%r2];\n"
            + "\tret;")
    before = dataflow.STATS["block_runs"]
    assert [f.severity for f in check_ptx(kernel(body))] == ["error"]
    assert dataflow.STATS["block_runs"] - before <= 2 * 300 + 10  # each block once (two per link), and the tail


def test_many_mbarriers_tracking_copies_stay_cheap():
    # mbar of the red-team generator: N cp.async, each tracked by its own mbarrier, waited in turn, in a loop.
    # Completing a copy was a scan of its barriers against each wait (cubic); it is a bit mask now.
    from launcher.fence import dataflow
    n = 60
    body = ["\tmov.b32 	%r2, global_smem;\n\tbfe.u32 %r50, %r2, 4, 14;\n\tcvt.u64.u32 %rd5, %r50;\n$LOOP:\n"]
    body += [f"\tcp.async.ca.shared.global [%r2+{16 * i}], [%rd1], 16;\n"
             f"\tcp.async.mbarrier.arrive.noinc.shared.b64 [%r2+{65536 + 8 * i}];\n" for i in range(n)]
    body.append("\tfence.proxy.async.shared::cta;\n")
    body += [f"$W{i}:\n\tmbarrier.try_wait.parity.shared.b64 %p2, [%r2+{65536 + 8 * i}], %r1;\n\t@!%p2 bra $W{i};\n"
             for i in range(n)]
    body.append("\twgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%r5,%r6}, %rd5, %rd5, 1, 1, 1, 0, 0;\n"
                "\t@%p1 bra $LOOP;\n\tret;")
    before = dataflow.STATS["block_runs"]
    check_ptx(kernel("".join(body)))
    assert dataflow.STATS["block_runs"] - before <= 8 * n


def test_many_block_comments_on_one_line_are_read_in_linear_time():
    # _strip_comment searched for "//" and '"' from each comment to the end of the line: quadratic.
    from launcher.fence import ptx
    line = "\tmov.b32 	%r2, global_smem; " + "/* c */ " * 20000
    text, in_block = ptx._strip_comment(line, False)
    assert not in_block and text.split() == ["mov.b32", "%r2,", "global_smem;"]
    assert check_ptx(kernel(STORE_THEN_TMA.replace("\tret;", line + "\n\tret;")))[0].severity == "error"
