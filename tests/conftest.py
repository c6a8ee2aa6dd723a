"""Shared test setup: a temporary Triton cache, the `gpu` marker and a fixture for a PATH with no
C compiler."""
import atexit
import os
import shutil
import tempfile

import pytest


def triton_cache_dir_for_tests(environ) -> tuple[str, bool]:
    """(Triton cache directory for this test run, whether the tests made it). The user's own
    TRITON_CACHE_DIR is kept; otherwise a fresh temporary directory, so that the tests never fill
    ~/.triton/cache."""
    if environ.get("TRITON_CACHE_DIR"):
        return environ["TRITON_CACHE_DIR"], False
    return tempfile.mkdtemp(prefix="launcher-tests-triton-cache-"), True


# Set before any test module imports Triton; subprocesses of the tests inherit it.
TRITON_CACHE_DIR, _MADE_CACHE = triton_cache_dir_for_tests(os.environ)
os.environ["TRITON_CACHE_DIR"] = TRITON_CACHE_DIR
if _MADE_CACHE:
    atexit.register(shutil.rmtree, TRITON_CACHE_DIR, ignore_errors=True)


def pytest_report_header(config):
    return f"Triton cache: {TRITON_CACHE_DIR} ({'temporary' if _MADE_CACHE else 'TRITON_CACHE_DIR'})"


def _gpu_available() -> bool:
    if os.environ.get("LAUNCHER_TEST_NO_GPU"):
        return False
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


HAVE_GPU = _gpu_available()


def pytest_collection_modifyitems(config, items):
    if HAVE_GPU:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU and torch (runs on the H200)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def no_compiler(monkeypatch, tmp_path):
    """PATH without any C compiler, and Triton's build step made to fail loudly."""
    import triton.runtime.build as build

    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.delenv("CC", raising=False)
    assert shutil.which("gcc") is None and shutil.which("cc") is None

    def refuse(*a, **k):
        raise AssertionError("Triton tried to compile C code")

    for name in ("_build", "compile_module_from_src", "compile_module_from_file"):
        if hasattr(build, name):
            monkeypatch.setattr(build, name, refuse)
    yield
