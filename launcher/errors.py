"""The exceptions a launch can raise, and the message of a launch the driver refused.

Argument errors (TypeError, OverflowError, ValueError naming the parameter) are raised by
launcher.arguments, before any driver call; this module explains what went wrong after the
arguments were accepted: a pointer the device cannot reach, or a CUDA error.
"""
from __future__ import annotations

import struct

from launcher import driver
from launcher.driver import CudaDriverNotFound, CudaError, PlanError
from launcher.spec import SpecError
from launcher.triton_adapter import UnsupportedKernel

__all__ = ["CudaError", "CudaDriverNotFound", "PlanError", "SpecError", "UnsupportedKernel", "launch_error"]


def _whose(address) -> str:
    """What an address the current context cannot reach is: another GPU's memory, or host memory."""
    try:
        current, owner = driver.pointer_owner(address)
        if owner is not None:
            return (f"{address:#x} (memory of cuda:{owner}; the launch is on cuda:{current}, which has "
                    f"no peer access to it: launch on cuda:{owner} or enable peer access)")
    except Exception:  # the message must not fail; say what is known
        pass
    return f"{address:#x} (host memory? a CPU tensor? use a CUDA tensor or pinned host memory)"


def launch_error(spec, status: int, buf: bytes) -> Exception:
    """The exception for a launch the native library returned `status` for (buf: what was packed)."""
    _, lib = driver.native()
    if status == lib.LAUNCHER_ERROR_BAD_POINTER:
        i = driver.last_bad_param()
        if 0 <= i < len(spec.params):
            name = spec.param_name(i)
            address = struct.unpack_from("<Q", buf, spec.params[i].offset)[0]
        else:
            name, address = f"#{i}", None
        where = _whose(address) if address is not None else "given"
        return ValueError(f"kernel {spec.kernel!r}: parameter {name!r}: the pointer {where} cannot be "
                          "accessed from the current device")
    return driver.error(status, f"launching kernel {spec.kernel!r}")
