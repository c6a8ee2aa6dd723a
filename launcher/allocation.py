"""Scratch memory for kernels launched from bundles (global and profile scratch).

Some kernels need global memory at launch time (device-side tensor descriptors, some Gluon
kernels) or profile scratch. Triton asks `triton.set_allocator`; a bundle runs without Triton,
so it asks, in this order:
1. the allocator set with `launcher.set_allocator(fn)`: `fn(size, alignment, stream)` returns
   an object with `data_ptr()` that owns at least `size` bytes (the launcher keeps it alive
   until the launch is queued; the caller's allocator keeps the memory valid for the stream,
   as a stream-ordered allocator such as torch's does);
2. torch's caching allocator, when torch (with CUDA) is imported (`torch.empty(size,
   dtype=torch.int8)` on the current device, recorded on the launch stream);
3. else the launch is refused, before any driver call, with an error saying what to do.

The allocator is process-wide (all threads), not per thread as Triton's.
"""
from __future__ import annotations

import sys
import threading

_lock = threading.Lock()
_allocator = None


def set_allocator(allocator) -> None:
    """Use `allocator(size, alignment, stream) -> object with data_ptr()` for the scratch memory
    of bundled kernels (None: back to torch's, or none)."""
    if allocator is not None and not callable(allocator):
        raise TypeError(f"launcher.set_allocator expects a callable (size, alignment, stream) -> object with "
                        f"data_ptr(), or None; got {type(allocator).__name__}")
    global _allocator
    with _lock:
        _allocator = allocator


class _Aligned:
    """An allocation whose data_ptr() is moved up to an alignment the allocator did not give."""

    __slots__ = ("owner", "address")

    def __init__(self, owner, address):
        self.owner, self.address = owner, address

    def data_ptr(self):
        return self.address


def torch_allocator(size: int, alignment: int, stream):
    """Scratch from torch's caching allocator on the current device, kept for the launch stream."""
    import torch

    pad = alignment if alignment > 256 else 0  # torch's blocks are 512-byte aligned
    buf = torch.empty(size + pad, dtype=torch.int8, device=torch.device("cuda", torch.cuda.current_device()))
    if stream and stream != torch.cuda.current_stream().cuda_stream:
        buf.record_stream(torch.cuda.ExternalStream(stream))
    if pad:
        address = buf.data_ptr()
        return _Aligned(buf, address + (-address) % alignment)
    return buf


def allocator_for(kernel: str):
    """What CudaLauncher.from_spec takes as an allocator source for kernel `kernel`: a function
    returning the allocator to use now (the set one, else torch's, else one that refuses)."""
    def source():
        allocator = _allocator
        if allocator is not None:
            return allocator
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            return torch_allocator
        return refuse

    def refuse(size, alignment, stream):
        raise RuntimeError(f"kernel {kernel!r} needs {size} bytes of scratch memory at launch, and no allocator "
                           "is set: call launcher.set_allocator(fn) with fn(size, alignment, stream) returning an "
                           "object with data_ptr(), or import torch to use its allocator")

    return source
