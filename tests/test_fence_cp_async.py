"""cp.async completion: a ``fence.proxy.async`` orders only the copies that are complete at the fence.

Real Gluon kernels compiled on the CPU (``fence_kernels.cp_async_wgmma``): ``cp.async`` copies into the
operands of a wgmma, completed by ``cp.async.wait_group`` or by mbarriers that track them
(``cp.async.mbarrier.arrive``). A fence written before the wait (for two mbarriers: between their waits)
leaves copies unordered with the wgmma, and neither Triton adds one after the wait (3.9's late pass counts
the earlier fence), so the PTX that runs has the hazard: it must be an ``error`` on both releases.
A ``wait_group 1`` for the one group ("short_wait") leaves the copies in flight: with no fence at all that
is reported as before; a fence after the copies leaves a race that no fence repairs, not reported.
"""
import pytest

from launcher.fence import check_kernel, check_ptx, check_ttgir

import fence_kernels as fk

COMPLETIONS = ("group", "mbarrier", "two_barriers", "short_wait")
PLACES = ("none", "before_wait", "after_wait")
WAIT = {"group": "cp.async.wait_group", "short_wait": "cp.async.wait_group", "mbarrier": "mbarrier.try_wait",
        "two_barriers": "mbarrier.try_wait"}


def proxy_fence_lines(ptx: str) -> list[int]:
    return [i for i, line in enumerate(ptx.splitlines())
            if "fence.proxy.async" in line and "fence.proxy.async.global" not in line]


def error_expected(completion: str, place: str) -> bool:
    if place == "none":  # Triton >= 3.7.1 fences it itself, after the wait
        return not fk.COMPILER_FENCES_ASYNC_READS
    return place == "before_wait" and completion != "short_wait"


@pytest.fixture(scope="module", params=[(c, p) for c in COMPLETIONS for p in PLACES], ids=lambda c: "-".join(c))
def compiled(request):
    completion, place = request.param
    return completion, place, fk.compiled_cp_async(place, completion)


def test_the_compiler_leaves_a_fence_written_before_the_wait_where_it_is(compiled):
    completion, place, kernel = compiled
    ptx = kernel.asm["ptx"]
    lines = ptx.splitlines()
    wait = max(i for i, line in enumerate(lines) if WAIT[completion] in line)  # the last wait
    fences = proxy_fence_lines(ptx)
    if place == "before_wait":
        assert len(fences) == 1 and fences[0] < wait
    elif place == "after_wait" or fk.COMPILER_FENCES_ASYNC_READS:
        assert len(fences) == 1 and fences[0] > wait
    else:
        assert fences == []


def test_error_exactly_where_no_fence_follows_the_copies_completion(compiled):
    completion, place, kernel = compiled
    errors = [f for f in check_ptx(kernel.asm["ptx"]) if f.severity == "error"]
    if not error_expected(completion, place):
        assert errors == []
        return
    assert {f.kind for f in errors} == {"RAW"}
    assert all(f.writer.text.startswith("cp.async.cg.shared.global") for f in errors)
    assert all(f.reader.text.startswith("wgmma.mma_async") for f in errors)


def test_the_ttgir_tells_the_same(compiled):
    completion, place, kernel = compiled
    hazards = [f for f in check_ttgir(kernel.asm["ttgir"]) if f.severity == "info"]
    # TTGIR comes before Triton's late fence pass: "none" is a hazard there on every release
    assert bool(hazards) == (place == "none" or place == "before_wait" and completion != "short_wait")
    assert all(f.writer.text.lstrip().split(" = ")[-1].startswith("ttg.async_copy_global_to_local")
               for f in hazards)


def test_the_load_hook_refuses_the_cubin(compiled, tmp_path):
    from launcher.fence import FenceHazardError
    from launcher.fence_hook import FenceCheckHook

    completion, place, kernel = compiled
    name = "cp_async_wgmma"
    group = {}
    for ext in ("ptx", "ttgir"):
        path = tmp_path / f"{name}.{ext}"
        path.write_text(kernel.asm[ext])
        group[path.name] = str(path)
    report = check_kernel(ptx=kernel.asm["ptx"], ttgir=kernel.asm["ttgir"])
    assert any(f.severity == "error" for f in report.findings) == error_expected(completion, place)
    hook = FenceCheckHook("error")
    if error_expected(completion, place):
        with pytest.raises(FenceHazardError, match="RAW"):
            hook(None, None, name, group, f"{completion}-{place}")
    else:
        hook(None, None, name, group, f"{completion}-{place}")


def test_an_async_wait_without_its_count_is_unreadable():
    from launcher.fence import ParseError

    kernel = fk.compiled_cp_async("after_wait", "group")
    ttgir = kernel.asm["ttgir"]
    line = next(i for i, text in enumerate(ttgir.splitlines(), 1) if "ttg.async_wait" in text)
    broken = "\n".join(text.replace("{num = 0 : i32}", "") if i == line else text
                       for i, text in enumerate(ttgir.splitlines(), 1))
    with pytest.raises(ParseError) as info:
        check_ttgir(broken, filename="k.ttgir")
    assert (info.value.filename, info.value.line) == ("k.ttgir", line)
    assert "without its count" in info.value.reason
