"""launcher: a precompiled, checked drop-in replacement for Triton's NVIDIA kernel launcher.

    import launcher
    launcher.install()          # every Triton kernel loaded from now on goes through us
    with launcher.installed():  # or for a block
        ...

Importing this package needs neither a GPU nor Triton; the CUDA driver is opened on first use.
"""
from launcher.cuda_launcher import BoundLaunch, CudaLauncher
from launcher.driver import CudaDriverNotFound, CudaError, PlanError
from launcher.errors import UnsupportedKernel
from launcher.install import install, installed, is_installed, module_cache, uninstall
from launcher.modules import ModuleCache, SharedMemoryError
from launcher.prepared import PreparedLaunch, prepare
from launcher.specialization import AssumptionError
from launcher.spec import Conventions, LaunchSpec, SpecError
from launcher.tensormap import TensorMap


def fast_dispatch_stats() -> dict:
    """The guarded fast path's counters: hits, misses and fallbacks with their reasons."""
    from launcher import fast_dispatch

    return fast_dispatch.stats()


def clear_pointer_cache() -> None:
    """Forget the device memory ranges that pointer checks remember (in every thread).

    Tensors keep their memory alive, so their pointers are always checked correctly. An int
    address into memory freed after it was last checked (cudaFree, torch.cuda.empty_cache())
    can still pass until this is called; Triton itself does not check int addresses at all."""
    from launcher import driver

    driver.pointer_cache_clear()


# Bundles: kernels exported from Triton, called without it (docs/bundles.md). Imported on first
# use, so that `import launcher` costs the drop-in's users nothing more.
_BUNDLE_NAMES = {
    "export": "launcher.bundle_export", "capture": "launcher.bundle_export",
    "load_bundle": "launcher.bundle_kernel", "Bundle": "launcher.bundle_kernel", "BundleKernel": "launcher.bundle_kernel",
    "BundleError": "launcher.bundle_format", "NoVariantError": "launcher.variants",
    "set_allocator": "launcher.allocation", "TensorDescriptor": "launcher.tensordesc",
}


def __getattr__(name):
    module = _BUNDLE_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'launcher' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = [
    "AssumptionError", "BoundLaunch", "Bundle", "BundleError", "BundleKernel", "Conventions", "CudaDriverNotFound",
    "CudaError", "CudaLauncher", "LaunchSpec", "ModuleCache", "NoVariantError", "PlanError", "PreparedLaunch",
    "SharedMemoryError", "SpecError", "TensorDescriptor", "TensorMap", "UnsupportedKernel", "capture",
    "clear_pointer_cache", "export", "fast_dispatch_stats", "install", "installed", "is_installed", "load_bundle",
    "module_cache", "prepare", "set_allocator", "uninstall",
]
