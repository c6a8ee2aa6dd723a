"""The checker never crashes: on malformed PTX/TTGIR it returns findings or raises ParseError, nothing else.

Mutants of real kernels (lines dropped, duplicated, swapped or cut; tokens replaced by stray text, braces,
semicolons or other instructions' operands; the file truncated) from a fixed seed, so that a failure
reproduces.
"""
import random

import pytest

from launcher.fence import ParseError, Report, check_kernel, check_ttgir

import fence_corpus as fc

SOURCES = [("checked_scale", 90), ("warp_specialized_load", 100), ("matmul_pipelined", 90),
           ("matmul_warp_specialized", 100)]
MUTANTS = 40
STRAY = ["{", "}", ";", ",", "(", ")", "[", "]", "@%p1", "%r1", "global_smem", "$L__BB0_1:", ".branchtargets",
         "brx.idx %r1, $L_nowhere;", "bra $L__missing;", "call.uni f, (p);", "// comment", "/*", "*/", '"', "0x",
         "st.shared.b32 [%r1], %r2;", "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd1, {%r1}], [%r9];",
         "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%f1}, %rd1, %rd2, 1, 1, 1, 0, 0;",
         "tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r3, 1;", "fence.proxy.async;", "", "\x00", "é",
         "cp.async.commit_group;", "cp.async.wait_group 1;", "cp.async.wait_group %r1;", "cp.async.wait_all;",
         "cp.async.mbarrier.arrive.noinc.shared.b64 [%r1];", "ttg.async_wait {num = 1 : i32}", "ttg.async_wait"]


def mutate(text: str, rng: random.Random) -> str:
    lines = text.splitlines()
    for _ in range(rng.randint(1, 4)):
        if not lines:
            break
        i = rng.randrange(len(lines))
        action = rng.randrange(7)
        if action == 0:
            del lines[i]
        elif action == 1:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif action == 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif action == 3:
            lines[i] = lines[i][:rng.randrange(len(lines[i]) + 1)]
        elif action == 4:
            tokens = lines[i].split()
            if tokens:
                tokens[rng.randrange(len(tokens))] = rng.choice(STRAY)
            lines[i] = " ".join(tokens)
        elif action == 5:
            lines.insert(i, rng.choice(STRAY))
        else:
            lines = lines[:i]
    return "\n".join(lines)


def _checked(call):
    try:
        result = call()
    except ParseError as error:
        assert error.filename and error.line >= 0 and error.reason
        return "unreadable"
    return result


@pytest.mark.parametrize("name, arch", SOURCES, ids=[f"{n}-sm{a}" for n, a in SOURCES])
def test_malformed_input_gives_findings_or_parse_error(name, arch):
    kernel = fc.compiled_corpus(name, arch)
    ptx, ttgir = kernel.asm["ptx"], kernel.asm["ttgir"]
    rng = random.Random(f"{name}-{arch}")
    outcomes = {"readable": 0, "unreadable": 0}
    for _ in range(MUTANTS):
        bad_ptx, bad_ttgir = mutate(ptx, rng), mutate(ttgir, rng)
        for call in (lambda: check_kernel(ptx=bad_ptx, ttgir=ttgir), lambda: check_kernel(ptx=ptx, ttgir=bad_ttgir),
                     lambda: check_ttgir(bad_ttgir)):
            result = _checked(call)
            outcomes["unreadable" if result == "unreadable" else "readable"] += 1
            assert result == "unreadable" or isinstance(result, (Report, list))
    assert outcomes["unreadable"] > 0 and outcomes["readable"] > 0  # the mutants exercise both outcomes


@pytest.mark.parametrize("text", ["", "\n\n", "}", "{", ".version 8.7", ".version 8.7\n.entry k(", ";;;",
                                  ".visible .entry k()\n{\n", ".entry k() { ret; }", "\x00\x01", "ret;"])
def test_degenerate_ptx(text):
    result = _checked(lambda: check_kernel(ptx=text))
    assert result == "unreadable" or isinstance(result, Report)


@pytest.mark.parametrize("name, arch", SOURCES, ids=[f"{n}-sm{a}" for n, a in SOURCES])
def test_a_kernel_cut_off_before_its_first_function_is_unreadable_not_clean(name, arch):
    """A Triton-compiled kernel's PTX cut before its `.entry` (its header alone) and its TTGIR cut
    before its `tt.func` (inside `module attributes {`) are refused with the file and line: a header
    is not a kernel checked clean. Neither input at all is a TypeError."""
    kernel = fc.compiled_corpus(name, arch)
    ptx, ttgir = kernel.asm["ptx"], kernel.asm["ttgir"]
    header = ptx[:ptx.index(".entry")].rsplit("\n", 1)[0]
    module = ttgir[:ttgir.index("tt.func")]
    for call in (lambda: check_kernel(ptx=header), lambda: check_kernel(ptx=header, ttgir=ttgir, info=False),
                 lambda: check_ttgir(module), lambda: check_kernel(ttgir=module)):
        with pytest.raises(ParseError, match="cut off before its first"):
            call()
    with pytest.raises(TypeError, match="ptx=, ttgir="):
        check_kernel()
