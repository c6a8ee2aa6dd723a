"""Shared test setup: the `gpu` marker and a fixture for a PATH with no C compiler."""
import os
import shutil

import pytest


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
