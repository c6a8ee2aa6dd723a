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


@pytest.fixture(scope="module")
def compiler_fenced():
    """A kernel whose TTGIR shows a hazard that Triton's late pass fences in the PTX (every release)."""
    return fk.compiled_gluon("load_then_tma_load", False)


def test_cache_directory_exit_status_and_json(unfenced, fenced, tmp_path, capsys):
    copy_to_cache(fenced, tmp_path)
    assert main(["check", str(tmp_path)]) == 0
    copy_to_cache(unfenced, tmp_path)
    expected = 0 if fk.COMPILER_FENCES_ASYNC_READS else 1
    capsys.readouterr()
    assert main(["check", "--format", "json", str(tmp_path)]) == expected
    output = json.loads(capsys.readouterr().out)
    assert set(output) == {"kernels", "unreadable"} and output["unreadable"] == []
    # every kernel checked is listed, the clean one too, with its files, verdict and findings
    kernels = output["kernels"]
    assert len(kernels) == 2
    for kernel in kernels:
        assert set(kernel) == {"kernel", "ptx", "ttgir", "verdict", "findings"}
        assert kernel["kernel"] == "straight_tma_store"
        assert kernel["ptx"].endswith(".ptx") and kernel["ttgir"].endswith(".ttgir")
    verdicts = sorted(k["verdict"] for k in kernels)
    assert verdicts == (["clean", "clean"] if fk.COMPILER_FENCES_ASYNC_READS else ["clean", "error"])
    findings = [f for k in kernels for f in k["findings"]]
    assert {"kernel", "severity", "kind", "writer", "reader", "source_line", "buffer", "scope", "hint", "message",
            "ir", "file"} == set(findings[0])
    assert [f["severity"] for f in findings].count("error") == expected


def test_directory_without_kernels_is_bad_input(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("not a kernel")
    assert main(["check", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path}:0: no .ptx or .ttgir file" in err
    assert main(["check", "--format", "json", str(tmp_path)]) == 2
    output = json.loads(capsys.readouterr().out)
    assert output["kernels"] == [] and output["unreadable"][0]["file"] == str(tmp_path)


@pytest.mark.parametrize("suffix, reason", [(".ptx", "not PTX"), (".ttgir", "not TTGIR")])
def test_empty_file_is_bad_input(suffix, reason, tmp_path, capsys):
    empty = tmp_path / f"k{suffix}"
    empty.write_text("")
    assert main(["check", str(empty)]) == 2
    assert f"{empty}:1: {reason}" in capsys.readouterr().err


def test_ttgir_findings_name_the_ttgir_file_and_its_lines(compiler_fenced, tmp_path, capsys):
    directory = copy_to_cache(compiler_fenced, tmp_path)
    ttgir_path = str(directory / "load_then_tma_load.ttgir")
    ttgir_lines = compiler_fenced.asm["ttgir"].splitlines()
    assert main(["check", "--format", "json", str(tmp_path)]) == 0
    (kernel,) = json.loads(capsys.readouterr().out)["kernels"]
    ttgir_findings = [f for f in kernel["findings"] if f["ir"] == "ttgir"]
    assert [f["severity"] for f in ttgir_findings] == ["info"]
    for finding in ttgir_findings:
        assert finding["file"] == ttgir_path
        for place in ("writer", "reader"):  # the line in that file holds the op the finding shows
            op = finding[place]["text"].split(" : ")[0]
            assert op in " ".join(ttgir_lines[finding[place]["line"] - 1].split())
    assert main(["check", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    line = ttgir_findings[0]["reader"]["line"]
    assert f"async:   {ttgir_path}:{line}: " in text


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
    fifo = tmp_path / "f.ptx"
    os.mkfifo(fifo)  # read without blocking and refused, as a device is (nothing read from /dev/zero)
    for path in (fifo, "/dev/zero"):
        assert main([str(path)]) == 2
        assert "cannot read: not a regular file" in capsys.readouterr().err
    crlf = tmp_path / "crlf.ptx"  # Windows newlines read as text mode reads them
    crlf.write_bytes(unfenced.asm["ptx"].replace("\n", "\r\n").encode())
    assert main([str(crlf)]) == main([str(ptx)])


def test_unreadable_kernel_is_loaded_unchecked_with_the_line(unfenced, tmp_path, caplog):
    """A construct the parser does not know makes the kernel unreadable: the load hook says so, with the
    file and line, and the kernel still loads (warn policy)."""
    from launcher.fence_hook import FenceCheckHook

    lines = unfenced.asm["ptx"].splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("ret;"))
    lines.insert(at, "\t.unknown_directive 1;")
    ptx = tmp_path / "straight_tma_store.ptx"
    ptx.write_text("\n".join(lines))
    with caplog.at_level("WARNING", logger="launcher.fence"):
        FenceCheckHook("warn")(None, None, "straight_tma_store", {"straight_tma_store.ptx": str(ptx)}, "h1")
    assert "loaded unchecked" in caplog.text and f"{ptx}:{at + 1}:" in caplog.text
    assert main([str(ptx)]) == 2


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


def test_the_metadata_json_gives_the_shared_bytes(tmp_path):
    # check_metadata_group and the check command bound every region by the kernel's shared allocation, which
    # Triton's cache records in the kernel's metadata .json
    from launcher.fence.checker import metadata_shared

    good, bad, other = tmp_path / "k.json", tmp_path / "bad.json", tmp_path / "other.json"
    good.write_text('{"name": "k", "shared": 164328, "num_warps": 4}')
    bad.write_text("{not json")
    other.write_text('{"shared": true}')
    assert metadata_shared(str(good)) == 164328
    assert metadata_shared(str(bad)) is None and metadata_shared(str(other)) is None
    assert metadata_shared(str(tmp_path / "missing.json")) is None and metadata_shared(None) is None
