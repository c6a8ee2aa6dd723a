"""launcher: a precompiled, checked drop-in replacement for Triton's NVIDIA kernel launcher.

    import launcher
    launcher.install()          # every Triton kernel loaded from now on goes through us
    with launcher.installed():  # or for a block
        ...

Importing this package needs neither a GPU nor Triton; the CUDA driver is opened on first use.
"""
from launcher.cuda_launcher import CudaLauncher
from launcher.driver import CudaDriverNotFound, CudaError
from launcher.errors import UnsupportedKernel
from launcher.install import install, installed, is_installed, module_cache, uninstall
from launcher.modules import ModuleCache, SharedMemoryError
from launcher.tensormap import TensorMap

__version__ = "0.1.0"

__all__ = [
    "CudaLauncher", "CudaError", "CudaDriverNotFound", "ModuleCache", "SharedMemoryError",
    "TensorMap", "UnsupportedKernel", "install", "installed", "is_installed", "module_cache",
    "uninstall",
]
