"""`python -m launcher show-generated`: the code the guard generates for a @triton.jit kernel, and
a bundled kernel's generated call, printed as they are made at run time (no GPU needed)."""
from __future__ import annotations

import linecache
import os
import subprocess
import sys

import pytest

import launcher
from launcher import codegen, fast_dispatch
from launcher.show_generated import main

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "kernels.py")


def _run(*args):
    return subprocess.run([sys.executable, "-m", "launcher", "show-generated", *args], capture_output=True,
                          text=True, cwd=HERE, timeout=300)


def test_the_guard_of_a_kernel_is_printed_once_and_compiles():
    proc = _run(f"{KERNELS}:many_args_kernel")
    assert proc.returncode == 0, proc.stderr
    source = proc.stdout
    # one body per kernel: the general path of kernel[grid]'s C call; run (what autotuners call) calls that C call
    assert source.count("def _launcher_general(grid, _launcher_keyed, _launcher_options, out, a0,") == 1
    assert source.count("def _launcher_run(") == 1 and "_launcher_KEYER.call(grid, out, a0," in source
    assert source.count("_launcher_ENTRIES.get(") == 1
    assert (", ".join(codegen.RESERVED + f for f in codegen.GuardEntry._fields) + " = _launcher_e") in source
    assert "_lg_" not in source and "\\\n" not in source  # one prefix; no line continued (or joined) by a backslash
    compile(source, "<show-generated>", "exec")


def test_the_printed_guard_is_the_code_a_guard_runs():
    """What the command prints for a kernel is the source of the functions a guard makes for it."""
    import kernels as K

    printed = fast_dispatch.guard_source(K.add_kernel)
    guard = fast_dispatch.Guard(K.add_kernel, lambda *a, **k: None, device=lambda: 0, stream=lambda d: 0)
    try:
        lines = linecache.getlines(guard.general.__code__.co_filename)  # codegen.define's wrapper around it
        made = [line[4:].rstrip() for line in lines[1:-1] if line.strip() and not line.strip().startswith("return (")]
        assert [line.rstrip() for line in printed.splitlines() if line.strip()] == made
    finally:
        guard.detach()
        K.add_kernel.__dict__.pop(fast_dispatch._GUARD, None)


def test_a_module_by_name_and_under_decorators(monkeypatch, capsys):
    monkeypatch.syspath_prepend(HERE)
    assert main(["kernels:add_kernel"]) == 0
    assert "def _launcher_general(grid, _launcher_keyed, _launcher_options, x_ptr, y_ptr, out_ptr, n, BLOCK):" in \
        capsys.readouterr().out


@pytest.mark.parametrize("target, message", [
    (f"{KERNELS}:no_such_kernel", "has no 'no_such_kernel'"),
    ("no_such_module_here:k", "no_such_module_here: cannot import it"),
    ("just_a_name", "expected MODULE:KERNEL"),
    (f"{KERNELS}:triton", "expected a @triton.jit function"),
])
def test_what_cannot_be_shown_is_one_line_and_exit_2(target, message):
    proc = _run(target)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr


def test_a_bundled_kernels_call(tmp_path):
    import cpu_corpus as C

    path = tmp_path / "small.bundle"
    launcher.export(path, C.BY_NAME["vector_add"].compile())
    proc = _run(str(path), "add_kernel")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("def launch(_launcher_grid, /, ") and "_launcher_FIND(_launcher_device(), " in proc.stdout
    proc = _run(str(path), "no_such_kernel")
    assert proc.returncode == 2 and "has no kernel 'no_such_kernel'" in proc.stderr
