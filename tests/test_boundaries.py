"""The package's boundaries, read from its source (no import runs): every read of Triton's
runtime goes through launcher.triton_adapter; the bundle side (which runs where Triton is not
installed) imports neither Triton nor the drop-in's modules (install, the guard, CudaUtils)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "launcher"
# Modules that are Triton's users rather than readers of its runtime: the demo and the benchmark
# suite write kernels with triton.jit, as any user does; the .pth hook waits for `import triton`.
TRITON_USERS = {"triton_adapter.py", "demo.py", "_autoinstall.py"}
BUNDLE_SIDE = ("bundle_kernel.py", "bundle_format.py", "bundle_inspect.py", "variants.py", "elf.py",
               "allocation.py", "tensordesc.py", "specialization.py", "spec.py", "arguments.py", "codegen.py",
               "cuda_launcher.py", "modules.py", "fence_hook.py", "driver.py", "tensormap.py", "devices.py")


def imports(path: Path) -> set:
    """Every module `path` imports, at any depth of its code (`from launcher import x` gives launcher.x)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def test_only_the_adapter_reads_triton():
    readers = {p.name: sorted(m for m in imports(p) if m == "triton" or m.startswith("triton."))
               for p in PACKAGE.glob("*.py") if p.name not in TRITON_USERS}
    assert {name: found for name, found in readers.items() if found} == {}


@pytest.mark.parametrize("name", BUNDLE_SIDE)
def test_the_bundle_side_imports_neither_triton_nor_install(name):
    found = imports(PACKAGE / name)
    assert not {m for m in found if m.startswith("triton")}, name
    assert not {m for m in found if m in ("launcher.install", "launcher.fast_dispatch", "launcher.utils")}, name
