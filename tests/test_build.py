"""Packaging: the sdist holds what the build needs, the wheel is cp310-abi3 with the licence and the
.pth hook at its root and py.typed in the package, both are the distribution triton-launcher at
launcher.__version__, and a build without a working C compiler (or Python.h) says what is missing.

Each build runs in a subprocess on a copy of the package's files, with this Python's setuptools
(no build isolation, no network). `.ci/run` also installs the sdist and the wheel into fresh venvs.
"""
import os
import re
import runpy
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD_FILES = ["pyproject.toml", "setup.py", "MANIFEST.in", "LICENSE", "README.md", "launcher-autoinstall.pth"]
VERSION = re.search(r'^__version__ = "([^"]+)"$', open(os.path.join(ROOT, "launcher", "__init__.py")).read(),
                    re.M).group(1)


def _setuptools_ok():
    try:
        import cffi  # noqa: F401
        import setuptools
    except ImportError:
        return False
    return tuple(int(p) for p in re.findall(r"\d+", setuptools.__version__)[:1]) >= (77,)


pytestmark = pytest.mark.skipif(not _setuptools_ok(), reason="building needs setuptools>=77 and cffi here "
                                "(the test extra brings them)")


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """The files a build reads, copied out of the checkout (so builds leave nothing in it)."""
    dst = tmp_path_factory.mktemp("tree")
    for name in BUILD_FILES:
        shutil.copy2(os.path.join(ROOT, name), dst / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.o", "*.pyc")
    shutil.copytree(os.path.join(ROOT, "cdefs"), dst / "cdefs", ignore=ignore)
    shutil.copytree(os.path.join(ROOT, "launcher"), dst / "launcher", ignore=ignore)
    return dst


def _backend(hook, tree, out, env=None):
    """Call setuptools' PEP 517 hook `hook` (build_sdist / build_wheel) in a subprocess in `tree`."""
    code = (f"import sys; from setuptools import build_meta; print(build_meta.{hook}(sys.argv[1]))")
    proc = subprocess.run([sys.executable, "-c", code, str(out)], cwd=tree, capture_output=True, text=True,
                          env=env, timeout=600)
    return proc


@pytest.fixture(scope="module")
def sdist(tree, tmp_path_factory):
    out = tmp_path_factory.mktemp("sdist")
    proc = _backend("build_sdist", tree, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out / proc.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def wheel_from_sdist(sdist, tmp_path_factory):
    """The wheel built from the unpacked sdist, as pip (and tox) build it."""
    src = tmp_path_factory.mktemp("unpacked")
    with tarfile.open(sdist) as tar:
        tar.extractall(src, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(src)
    (top,) = list(src.iterdir())
    out = tmp_path_factory.mktemp("wheel")
    proc = _backend("build_wheel", top, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out / proc.stdout.strip().splitlines()[-1]


def test_sdist_holds_what_the_build_needs(sdist):
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    # triton-launcher: the PyPI name `launcher` is another project's
    assert sdist.name == f"triton_launcher-{VERSION}.tar.gz", sdist.name
    for needed in ["cdefs/build.py", "cdefs/launcher.c", "cdefs/launcher.h", "setup.py", "pyproject.toml",
                   "LICENSE", "launcher-autoinstall.pth", "launcher/__init__.py", "launcher/fence/checker.py",
                   "launcher/py.typed"]:
        assert needed in names, f"{needed} missing from the sdist"
    assert not [n for n in names if n.endswith((".so", ".o"))]


def test_wheel_from_the_sdist_is_abi3_with_licence_and_hook(wheel_from_sdist):
    assert wheel_from_sdist.name == f"triton_launcher-{VERSION}-cp310-abi3-linux_x86_64.whl", wheel_from_sdist.name
    with zipfile.ZipFile(wheel_from_sdist) as whl:
        names = whl.namelist()
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        wheel_meta = whl.read(f"{dist_info}/WHEEL").decode()
        metadata = whl.read(f"{dist_info}/METADATA").decode()
        licence = whl.read(f"{dist_info}/licenses/LICENSE").decode()
        whl_entry_points = whl.read(f"{dist_info}/entry_points.txt").decode()
    assert "Tag: cp310-abi3-" in wheel_meta
    assert [n for n in names if n.startswith("launcher/_native")] == ["launcher/_native.abi3.so"]
    assert [n for n in names if n.startswith("launcher/_call")] == ["launcher/_call.abi3.so"]  # cdefs/call.c
    assert "launcher-autoinstall.pth" in names  # at the root: lands in site-packages for every Python
    assert "launcher/py.typed" in names  # PEP 561: type checkers read the package's annotations
    assert dist_info == f"triton_launcher-{VERSION}.dist-info"
    assert re.search(r"^Name: triton-launcher$", metadata, re.M) and re.search(rf"^Version: {re.escape(VERSION)}$",
                                                                               metadata, re.M)
    entry_points = whl_entry_points
    assert re.search(r"^launcher = launcher\.__main__:main$", entry_points, re.M)  # the command stays `launcher`
    assert not [n for n in names if ".data/" in n]
    assert "License-Expression: MIT" in metadata and "License-File: LICENSE" in metadata
    assert licence == open(os.path.join(ROOT, "LICENSE")).read()


def test_licence_file_is_mit_as_pyproject_says():
    pyproject = open(os.path.join(ROOT, "pyproject.toml")).read()
    assert re.search(r'^license = "MIT"$', pyproject, re.M)  # an SPDX expression, not a table
    assert re.search(r'^license-files = \["LICENSE"\]$', pyproject, re.M)
    assert re.search(r'^requires = \["setuptools>=77"', pyproject, re.M)
    text = open(os.path.join(ROOT, "LICENSE")).read()
    assert text.startswith("MIT License\n") and "THE SOFTWARE IS PROVIDED \"AS IS\"" in text


def _pip_wheel(tree, out, **env_changes):
    env = dict(os.environ, **{k: v for k, v in env_changes.items() if v is not None})
    for k, v in env_changes.items():
        if v is None:
            env.pop(k, None)
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-w", str(out),
           str(tree)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


def _assert_says_what_is_needed(output):
    assert "cannot build launcher's native libraries" in output, output
    assert "a C compiler: gcc or clang" in output and "Python.h" in output and "python3-dev" in output, output


def test_no_working_compiler_is_named_in_the_build_error(tree, tmp_path):
    proc = _pip_wheel(tree, tmp_path, CC="/bin/false")
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    _assert_says_what_is_needed(output)
    assert "the C compiler '/bin/false' does not work" in output, output
    assert not re.search(r"^\s*/bin/false\s+-", output, re.M), "the raw compiler command line is shown"


def test_no_compiler_on_path_is_named_in_the_build_error(tree, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    proc = _pip_wheel(tree, tmp_path / "out", PATH=str(bindir), CC=None)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    _assert_says_what_is_needed(output)
    assert "no C compiler found" in output and "is not on PATH" in output, output


def test_missing_python_headers_are_named():
    setup = runpy.run_path(os.path.join(ROOT, "setup.py"), run_name="setup_under_test")
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler here")
    problem = setup["toolchain_problem"]([cc], ["/nonexistent/include/python3"])
    assert problem.startswith("the Python headers are missing: no Python.h in /nonexistent/include/python3")
    assert "python3-dev" in problem
    assert setup["toolchain_problem"]([cc], [__import__("sysconfig").get_paths()["include"]]) is None
