"""What a new user meets first: the README's two lines, the command list, `info`'s lines about
install() and the LAUNCHER_INSTALL hook, the examples/ script, and a test run that keeps to
itself (a temporary Triton cache, no benchmarks, GPU tests skipped without a GPU). The message
for a bad install(fence_check=...) is tested in test_install.py."""
import os
import re
import subprocess
import sys
from importlib import metadata

import pytest

import conftest
from launcher import __main__ as cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = open(os.path.join(ROOT, "README.md")).read()
DEMO_LINE = 'pip install -e ".[test]" && python -m launcher demo'
TEST_LINE = 'pip install -e ".[test]" && python -m pytest'
SAFE_PATH = dict(os.environ, PYTHONSAFEPATH="1")  # Python 3.11+: not ./launcher from the checkout


def _run(args, env=None, cwd=None, timeout=600):
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)


def _installed():
    try:
        metadata.distribution(cli.DIST)  # triton-launcher: the PyPI name `launcher` is another project's
    except metadata.PackageNotFoundError:
        return False
    return True


# The README's two lines, and CI running the second one as written.

def test_readme_has_the_two_lines_and_says_what_the_install_needs():
    lines = README.splitlines()
    demo = [line for line in lines if line.startswith(DEMO_LINE)]
    tests = [line for line in lines if line.startswith(TEST_LINE)]
    assert len(demo) == 1 and len(tests) == 1
    start = lines.index(demo[0])
    assert lines[start - 1] == "```bash" and lines[start + 1] == tests[0]  # one block, pasted as is
    near = "\n".join(lines[start - 12:start + 12])
    assert "C compiler" in near and "Python headers" in near


def test_ci_runs_the_readme_test_line_as_written_in_every_venv():
    ci = open(os.path.join(ROOT, ".ci", "run")).read()
    # .ci/run reads both lines out of the README and evals them, so they cannot drift apart.
    assert "README.md" in ci and 'eval "$TEST_LINE"' in ci and 'eval "$DEMO_LINE"' in ci
    grep = re.search(r"readme_line\(\) \{ (.*); \}", ci).group(1)
    for what, line in (("'launcher demo'", DEMO_LINE), ("pytest", TEST_LINE)):
        found = _run(["bash", "-c", f"readme_line() {{ {grep}; }}; readme_line {what}"], cwd=ROOT)
        assert found.returncode == 0 and found.stdout.startswith(line), found.stdout + found.stderr


# `python -m launcher` / `launcher` with no command.

def test_no_command_lists_the_commands(capsys):
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    for name, _ in cli.COMMANDS:
        assert re.search(rf"^\s+{name}\s+\S", out, re.M), out
    assert "COMMAND --help" in out


def test_python_m_launcher_lists_the_commands(tmp_path):
    proc = _run([sys.executable, "-m", "launcher"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m launcher ") and "the following arguments" not in proc.stderr
    assert all(name in proc.stdout for name in ("demo", "info", "check", "bench"))


@pytest.mark.skipif(not _installed(), reason="launcher is not installed here (no console script)")
def test_console_script_lists_the_commands(tmp_path):
    script = os.path.join(os.path.dirname(sys.executable), "launcher")
    if not os.path.exists(script):
        pytest.skip(f"no console script next to {sys.executable}")
    proc = _run([script], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: launcher ") and "demo" in proc.stdout


# `--version`, and output into a pipe that closes early.

def test_version_has_one_home():
    import launcher

    pyproject = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    assert re.search(r'^name = "triton-launcher"$', pyproject, re.M) and cli.DIST == "triton-launcher"
    assert not re.search(r"^version = \"", pyproject, re.M)  # no literal: read from launcher.__version__
    assert re.search(r'^dynamic = \["version"\]$', pyproject, re.M)
    assert re.search(r'^version = \{attr = "launcher.__version__"\}', pyproject, re.M)
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", launcher.__version__)
    if _installed():  # the metadata is built from launcher.__version__
        assert metadata.version(cli.DIST) == launcher.__version__ == cli.version()


def test_python_m_launcher_version(tmp_path):
    import launcher

    proc = _run([sys.executable, "-m", "launcher", "--version"], cwd=tmp_path, env=SAFE_PATH)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout == f"launcher {cli.version()}\n"
    assert cli.version() == (metadata.version(cli.DIST) if _installed() else launcher.__version__)
    assert "--version" in _run([sys.executable, "-m", "launcher", "--help"], cwd=tmp_path).stdout


def test_version_falls_back_to_the_package_without_metadata(monkeypatch):
    import launcher

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert cli.version() == launcher.__version__


@pytest.mark.skipif(not _installed(), reason="launcher is not installed here (no console script)")
def test_console_script_version(tmp_path):
    script = os.path.join(os.path.dirname(sys.executable), "launcher")
    if not os.path.exists(script):
        pytest.skip(f"no console script next to {sys.executable}")
    proc = _run([script, "--version"], cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == f"launcher {metadata.version(cli.DIST)}\n", proc.stderr


@pytest.mark.parametrize("args", [["info"], ["--help"], ["--version"], ["check", "--help"]])
def test_a_closed_pipe_ends_the_command_quietly(tmp_path, args):
    """`launcher info | head -1`: the reader is gone before the command writes (the pipe's read
    end is closed at once here); no BrokenPipeError traceback, exit status 141 as for SIGPIPE."""
    proc = subprocess.Popen([sys.executable, "-m", "launcher", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp_path, env=SAFE_PATH)
    proc.stdout.close()
    _, err = proc.communicate(timeout=300)
    err = err.decode()
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception ignored" not in err, err
    # everything says 141; argparse's help on Python 3.11+ ignores a write that fails (exit status 0)
    assert proc.returncode == 141 or ("--help" in args and proc.returncode == 0), (proc.returncode, err)


# `info`: installed, and what LAUNCHER_INSTALL=1 does here.

def test_info_says_the_hook_is_missing_and_why(tmp_path):
    lines = cli.autoinstall_status(site_dirs=[str(tmp_path)], environ={"LAUNCHER_INSTALL": "1"})
    assert lines[0] == f"hook NOT installed: no launcher-autoinstall.pth in {tmp_path}"
    assert lines[1].startswith("so LAUNCHER_INSTALL=1 does nothing here (it is set): ")
    assert "launcher.install() works either way" in lines[1]


def test_info_says_what_the_hook_does(tmp_path):
    (tmp_path / "launcher-autoinstall.pth").write_text("")
    off = cli.autoinstall_status(site_dirs=[str(tmp_path)], environ={})
    on = cli.autoinstall_status(site_dirs=[str(tmp_path)], environ={"LAUNCHER_INSTALL": "1"})
    assert off[0] == on[0] == f"hook installed: {tmp_path / 'launcher-autoinstall.pth'}"
    assert off[1].startswith("LAUNCHER_INSTALL is not set: the hook does nothing")
    assert on[1] == "LAUNCHER_INSTALL=1: launcher.install() runs when triton is imported"
    # the values of every launcher switch (install.env_flag): false is off, on is on, yes is neither
    false = cli.autoinstall_status(site_dirs=[str(tmp_path)], environ={"LAUNCHER_INSTALL": "false"})
    assert false[1].startswith("LAUNCHER_INSTALL is 'false': the hook does nothing")
    assert cli.autoinstall_status(site_dirs=[str(tmp_path)], environ={"LAUNCHER_INSTALL": "on"})[1] == \
        "LAUNCHER_INSTALL=on: launcher.install() runs when triton is imported"
    yes = cli.autoinstall_status(site_dirs=[str(tmp_path)], environ={"LAUNCHER_INSTALL": "yes"})
    assert yes[1].startswith("LAUNCHER_INSTALL='yes' is not a value it takes: 1, true or on switch it on")
    assert yes[1].endswith("; the hook does nothing (it warns on stderr at start-up)")


def _info(tmp_path, **env):
    proc = _run([sys.executable, "-m", "launcher", "info"], env=dict(os.environ, **env), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.skipif(not _installed(), reason="launcher is imported from a source tree, not installed")
def test_this_install_has_the_hook_and_launcher_install_1_takes_effect(tmp_path):
    """The install these tests run from (editable in CI, the sdist's wheel under tox) has the hook,
    and `info` shows LAUNCHER_INSTALL=1 working: `installed True`."""
    plain = _info(tmp_path, LAUNCHER_INSTALL="")
    assert re.search(r"^installed\s+False \(launcher.install\(\) has not run in this process\)$", plain, re.M), plain
    assert re.search(r"^autoinstall\s+hook installed: .*launcher-autoinstall.pth$", plain, re.M), plain
    auto = _info(tmp_path, LAUNCHER_INSTALL="1")
    assert re.search(r"^installed\s+True \(by LAUNCHER_INSTALL=1, through the .pth hook\)$", auto, re.M), auto


# The examples/ script runs as it stands.

def test_examples_script_runs_as_it_stands(tmp_path):
    proc = _run([sys.executable, os.path.join(ROOT, "examples", "vector_add.py")], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if conftest.HAVE_GPU:
        assert "result correct" in proc.stdout
    else:
        assert "compiling add_kernel for sm_90 on the CPU" in proc.stdout
        assert "fence check: add_kernel: no proxy-fence hazards" in proc.stdout
        assert "launcher installed: True" in proc.stdout
        assert "Triton's launcher for this kernel is launcher's: True (" in proc.stdout


# The test run keeps to itself.

def test_tests_use_a_temporary_triton_cache():
    from triton import knobs

    from triton_compile import compile_cpu
    import kernels as K

    assert os.environ["TRITON_CACHE_DIR"] == conftest.TRITON_CACHE_DIR == knobs.cache.dir
    if conftest._MADE_CACHE:
        assert os.path.basename(conftest.TRITON_CACHE_DIR).startswith("launcher-tests-triton-cache-")
        assert not conftest.TRITON_CACHE_DIR.startswith(os.path.expanduser("~/.triton"))
    compile_cpu(K.add_kernel, (("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("out_ptr", "*fp32"), ("n", "i32"),
                               ("BLOCK", "constexpr")), (("BLOCK", 64),))
    assert os.listdir(conftest.TRITON_CACHE_DIR)


def test_a_cache_the_user_chose_is_kept():
    assert conftest.triton_cache_dir_for_tests({"TRITON_CACHE_DIR": "/somewhere/mine"}) == ("/somewhere/mine", False)
    made, is_new = conftest.triton_cache_dir_for_tests({})
    try:
        assert is_new and os.path.isdir(made) and not os.listdir(made)
    finally:
        os.rmdir(made)


def test_default_run_is_the_unit_tests_without_benchmarks(tmp_path):
    """`python -m pytest` in the checkout collects tests/ only (so no benchmark table, and
    `--benchmark-disable` has nothing to break)."""
    proc = _run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                 "--benchmark-disable"], cwd=ROOT, env=SAFE_PATH)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    collected = [line for line in proc.stdout.splitlines() if "::" in line]
    assert collected and all(line.startswith("tests/") for line in collected), collected[:5]


@pytest.mark.skipif(conftest.HAVE_GPU, reason="checks the run on a machine without a GPU")
def test_gpu_tests_skip_cleanly_without_a_gpu():
    proc = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_gpu.py",
                 "tests/test_gpu_reliability.py"], cwd=ROOT, env=SAFE_PATH)
    assert proc.returncode in (0, 5), proc.stdout + proc.stderr  # 5: pytest's "no test ran"
    # every test skipped, nothing run (the count depends on whether torch is installed: without it
    # the modules skip whole, with it each test does)
    assert re.search(r"^\d+ skipped in ", proc.stdout, re.M), proc.stdout
    assert "needs" in proc.stdout or "need" in proc.stdout  # the skip says why
