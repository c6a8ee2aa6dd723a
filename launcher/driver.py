"""The one module that touches the CUDA driver: our native library and cuda.bindings.

Nothing here runs at import time: the native library is imported on first use and opens
libcuda.so.1 with dlopen only when something is launched; cuda.bindings (the cold path:
loading modules, device attributes) is imported on first use too.
"""
from __future__ import annotations

import functools
import threading

__all__ = ["CudaError", "CudaDriverNotFound", "native", "check", "cu"]


class CudaError(RuntimeError):
    """A CUDA driver call failed. `code` is the CUresult, `name` its CUDA_ERROR_* name."""

    def __init__(self, code: int, name: str | None, text: str | None, context: str = ""):
        self.code = int(code)
        self.name = name or f"CUresult {self.code}"
        self.text = text or "unknown error"
        # Starts like Triton's own message, so code matching on that keeps working.
        where = f"; {context}" if context else ""
        super().__init__(f"Triton Error [CUDA]: {self.text} ({self.name}{where})")


class CudaDriverNotFound(CudaError):
    """libcuda.so.1 (the NVIDIA driver) could not be found or initialised."""

    def __init__(self, detail: str = ""):
        RuntimeError.__init__(
            self,
            "the CUDA driver was not found: libcuda.so.1 could not be opened or initialised"
            + (f" ({detail})" if detail else "")
            + "; launching kernels needs an NVIDIA GPU and its driver",
        )
        self.code, self.name, self.text = -1, "CUDA_DRIVER_NOT_FOUND", str(self)


@functools.lru_cache(maxsize=None)
def native():
    """(ffi, lib) of the cffi extension built at install time."""
    try:
        from launcher import _native
    except ImportError as e:  # pragma: no cover - only for a broken install
        raise ImportError(
            "launcher's native library is not built; install the package with "
            "`pip install .` (it compiles cdefs/launcher.c with cffi)"
        ) from e
    return _native.ffi, _native.lib


def error_from_status(status: int, context: str = "") -> CudaError:
    """The exception for a status returned by the native library."""
    ffi, lib = native()
    if status == lib.LAUNCHER_ERROR_NO_DRIVER:
        return CudaDriverNotFound("dlopen failed")
    if status == lib.LAUNCHER_ERROR_NO_SYMBOL:
        return CudaDriverNotFound("libcuda.so.1 is too old: a driver function is missing")
    name = lib.launcher_error_name(status)
    text = lib.launcher_error_string(status)
    return CudaError(
        status,
        ffi.string(name).decode() if name != ffi.NULL else None,
        ffi.string(text).decode() if text != ffi.NULL else None,
        context,
    )


def ensure_driver() -> None:
    """Open and initialise libcuda.so.1, or raise CudaDriverNotFound / CudaError."""
    status = native()[1].launcher_driver_init()
    if status != 0:
        raise error_from_status(status, "cuInit")


_cu_lock = threading.Lock()
_cu_module = None


def cu():
    """cuda.bindings.driver, with the driver initialised (cuInit) once."""
    global _cu_module
    if _cu_module is None:
        with _cu_lock:
            if _cu_module is None:
                ensure_driver()
                from cuda.bindings import driver as cudrv

                check(cudrv.cuInit(0), "cuInit")
                _cu_module = cudrv
    return _cu_module


def check(result, context: str = ""):
    """Unwrap a cuda.bindings result tuple `(CUresult, *values)`, raising CudaError on failure."""
    err, *values = result if isinstance(result, tuple) else (result,)
    code = int(err)
    if code != 0:
        drv = _cu_module
        name = text = None
        if drv is not None:
            e1, n = drv.cuGetErrorName(err)
            e2, t = drv.cuGetErrorString(err)
            name = n.decode() if int(e1) == 0 and n else None
            text = t.decode() if int(e2) == 0 and t else None
        raise CudaError(code, name, text, context)
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)
