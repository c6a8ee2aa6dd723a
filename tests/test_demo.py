"""`python -m launcher demo` shows the fence check's point on every supported Triton:

- Triton 3.6 compiles the Gluon TMA-store kernel without the fence: an error with the Python line.
- Triton 3.7.1 and later insert the fence themselves: the demo says so, names the PTX line of the
  compiler's fence, and shows the error the checker gives for the same PTX without it (3.7.0 does
  not fence it yet: docs/fence.md).
"""
import dataclasses
import inspect
import os
import subprocess
import sys

import pytest

from launcher import demo, fence, triton_adapter

VERSION = triton_adapter.triton_version()
RELEASE = triton_adapter.triton_release()
TMA_STORE_LINE = next(i for i, text in enumerate(inspect.getsource(demo).splitlines(), 1)
                      if text.strip() == "tma_store(desc, [0, 0], smem)")
PYTHON_LINE = f"demo.py:{TMA_STORE_LINE}"


@pytest.fixture(scope="module")
def results():
    return {r.label: r for r in demo.check_kernels()}


def _unfenced(results):
    result = results.get("gluon_tma_store (FENCE=False)")
    if result is None or result.report is None:
        pytest.fail(f"the Gluon kernel did not compile on Triton {VERSION}: "
                    f"{result.not_compiled if result else 'no Gluon'}")
    return result


def test_plain_and_fenced_kernels_are_clean(results):
    for label in ("vector_add", "softmax", "tuple_args", "gluon_tma_store (FENCE=True)"):
        assert results[label].verdict == "clean", (label, results[label].report.format_text())


@pytest.mark.skipif(RELEASE >= (3, 7, 1), reason="Triton 3.6 and 3.7.0 emit the unfenced PTX")
def test_on_triton_36_the_missing_fence_is_an_error_with_the_python_line(results):
    result = _unfenced(results)
    assert result.verdict == "1 missing fence(s)"
    (error,) = result.report.errors
    assert error.ir == "ptx" and error.source_line.endswith(PYTHON_LINE)
    assert result.compiler_fences == []
    text = "\n".join(demo.describe(result, "3.6.0"))
    assert "error: RAW generic write reaches async-proxy read without fence.proxy.async" in text
    assert PYTHON_LINE in text and "fence_async_shared()" in text


@pytest.mark.skipif(RELEASE < (3, 7, 1), reason="Triton 3.7.1+ inserts the fence")
def test_on_triton_37_to_39_the_compiler_fence_is_shown_and_taking_it_out_is_an_error(results):
    result = _unfenced(results)
    assert result.verdict == "fenced by the compiler"
    assert result.report.errors == []
    (info,) = [f for f in result.report.findings if f.severity == fence.INFO]
    (cf,) = result.compiler_fences
    assert cf.finding is info and info.source_line.endswith(PYTHON_LINE)
    ((line, instruction),) = cf.ptx_lines
    assert instruction.startswith("fence.proxy.async")
    (error,) = cf.without.errors
    assert error.source_line.endswith(PYTHON_LINE) and error.ir == "ptx"
    assert error.writer.line < line < error.reader.line  # the fence sat between the two accesses
    text = "\n".join(demo.describe(result, "3.9.0"))
    assert f"Triton 3.9.0's compiler inserted one (PTX line {line}: fence.proxy.async" in text
    assert "info: RAW" in text and "error: RAW" in text and text.count(PYTHON_LINE) >= 2


def test_every_supported_triton_shows_an_error_for_the_unfenced_kernel(results):
    """Whichever way the installed Triton compiles it, the demo ends up showing the error."""
    result = _unfenced(results)
    shown = result.report.errors + [e for cf in result.compiler_fences for e in cf.without.errors]
    assert shown and all(e.source_line.endswith(PYTHON_LINE) for e in shown)


def test_the_compiler_fence_search_works_on_any_ptx():
    """explain_compiler_fences is not tied to the demo's kernel: on a hand-written PTX whose one
    fence orders a store before a TMA store, it names that fence for a matching info finding."""
    fenced, unfenced = _tiny_ptx(fence=True), _tiny_ptx(fence=False)
    assert fence.check_kernel(ptx=fenced, name="k").errors == []
    (error,) = fence.check_kernel(ptx=unfenced, name="k").errors
    info = dataclasses.replace(error, severity=fence.INFO, ir="ttgir")
    report = fence.Report("k", [info])
    (cf,) = demo.explain_compiler_fences(fenced, None, report)
    assert cf.finding is info and cf.ptx_lines == [(_fence_line(fenced), "fence.proxy.async.shared::cta;")]
    assert [e.kind for e in cf.without.errors] == ["RAW"]
    assert demo.explain_compiler_fences(fenced, None, fence.Report("k", [])) == []


def _fence_line(ptx):
    return next(i for i, text in enumerate(ptx.split("\n"), 1) if demo.FENCE_RE.match(text))


def _tiny_ptx(fence):
    return "\n".join([
        ".version 8.0", ".target sm_90a", ".address_size 64",
        ".extern .shared .align 128 .b8 global_smem[];",
        ".visible .entry k(.param .u64 .ptr .global .align 1 k_param_0)", "{",
        "\t.reg .b32 \t%r<4>;", "\t.reg .b64 \t%rd<2>;",
        "\tld.param.u64 \t%rd1, [k_param_0];",
        "\tmov.u32 \t%r1, global_smem;",
        "\tmov.u32 \t%r2, 0;",
        "\tst.shared.v4.b32 \t[%r1], {%r2, %r2, %r2, %r2};",
        "\tfence.proxy.async.shared::cta;" if fence else "",
        "\tcp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd1, {%r2, %r2}], [%r1];",
        "\tret;", "}", ""])


def test_demo_command_says_which_triton_cache_it_uses(tmp_path):
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "launcher", "demo"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"Triton cache: {tmp_path / 'cache'} (from TRITON_CACHE_DIR)" in out
    assert "gluon_tma_store (FENCE=False)" in out and PYTHON_LINE in out
    assert ("missing fence" in out) or ("fenced by the compiler" in out)
    assert os.listdir(tmp_path / "cache")


def test_cache_note_names_the_users_cache_when_none_is_set(monkeypatch):
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    note = demo._cache_note()
    assert note.startswith("Triton cache: ") and "Triton's default" in note and "TRITON_CACHE_DIR" in note


def test_demo_without_triton_says_what_to_install(tmp_path):
    """Where Triton is not installed (`import triton` fails): one line on stderr, exit status 2."""
    code = ("import sys; sys.modules['triton'] = None\n"  # every `import triton` fails from here on
            "from launcher.__main__ import main\n"
            "sys.exit(main(['demo']))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        f'launcher demo compiles Triton kernels, and Triton is not installed in this Python ({sys.executable}): '
        'pip install "triton-launcher[triton]" (or pip install triton)'], proc.stderr
