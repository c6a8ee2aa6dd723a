"""check_metadata_group and the `check` command on real Triton cache files."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from launcher.fence import FenceHazardError, Report, check_metadata_group, main

import fence_kernels as fk


def copy_to_cache(kernel, cache_dir):
    """Lay the kernel's cache files out as Triton does: <cache>/<hash>/<name>.<ext>."""
    paths = list(kernel.metadata_group.values())
    target = cache_dir / os.path.basename(os.path.dirname(paths[0]))
    target.mkdir(parents=True, exist_ok=True)
    for path in paths:
        shutil.copy(path, target)
    return target


@pytest.fixture(scope="module")
def unfenced():
    return fk.compiled_gluon("straight_tma_store", False)


@pytest.fixture(scope="module")
def fenced():
    return fk.compiled_gluon("straight_tma_store", True)


def test_metadata_group_is_checked_from_the_cache_files(unfenced):
    report = check_metadata_group(unfenced.metadata_group, unfenced.name)
    assert isinstance(report, Report) and report.kernel == "straight_tma_store"
    assert len(report.errors) == (0 if fk.COMPILER_FENCES_ASYNC_READS else 1)


def test_metadata_group_without_ptx_returns_none(unfenced, caplog):
    binary_only = {k: v for k, v in unfenced.metadata_group.items() if not k.endswith((".ptx", ".ttgir"))}
    with caplog.at_level("INFO", logger="launcher.fence"):
        assert check_metadata_group(binary_only, unfenced.name) is None
    assert "no PTX" in caplog.text


def test_fence_hazard_error_carries_the_report(unfenced):
    report = check_metadata_group(unfenced.metadata_group, unfenced.name)
    error = FenceHazardError(report)
    assert isinstance(error, RuntimeError) and error.report is report


def test_cache_directory_exit_status_and_json(unfenced, fenced, tmp_path, capsys):
    copy_to_cache(fenced, tmp_path)
    assert main(["check", str(tmp_path)]) == 0
    copy_to_cache(unfenced, tmp_path)
    expected = 0 if fk.COMPILER_FENCES_ASYNC_READS else 1
    capsys.readouterr()
    assert main(["check", "--format", "json", str(tmp_path)]) == expected
    findings = json.loads(capsys.readouterr().out)
    assert {"kernel", "severity", "kind", "writer", "reader", "source_line", "buffer", "scope", "hint",
            "message"} <= set(findings[0]) if findings else True
    assert [f["severity"] for f in findings].count("error") == expected


def test_single_files_and_bad_input(unfenced, tmp_path, capsys):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(unfenced.asm["ptx"])
    ttgir = tmp_path / "k.ttgir"
    ttgir.write_text(unfenced.asm["ttgir"])
    assert main([str(ptx)]) == (0 if fk.COMPILER_FENCES_ASYNC_READS else 1)
    assert main([str(ttgir)]) == 0  # TTGIR alone never yields an error: it is not what runs
    assert "info" in capsys.readouterr().out
    broken = tmp_path / "broken.ttgir"
    broken.write_text(unfenced.asm["ttgir"].replace("tt.return", "}}}", 1).replace("tt.func", "xx.func"))
    assert main([str(broken)]) == 2
    assert f"{broken}:" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.ptx")]) == 2


def test_module_entry_point_runs_without_triton(tmp_path, fenced):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(fenced.asm["ptx"])
    code = ("import sys, runpy; sys.argv = ['x', 'check', sys.argv[1]];"
            "runpy.run_module('launcher.fence', run_name='__main__')")
    result = subprocess.run([sys.executable, "-c", code, str(ptx)], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert result.returncode == 0, result.stderr
    check = subprocess.run([sys.executable, "-c", "import sys, launcher.fence; "
                            "print('triton' in sys.modules, 'torch' in sys.modules)"],
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert check.stdout.split() == ["False", "False"], check.stderr
