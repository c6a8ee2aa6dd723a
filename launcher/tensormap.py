"""CUtensorMap objects and host TensorDescriptor encoding (what Triton's driver.c does in C).

`TensorMap` stands in for Triton's `PyCUtensorMap`: 128 bytes, also reachable at a 128-byte
aligned host address (`tma_desc_cpu_ptr()`). `DescriptorEncoder` turns a host
`TensorDescriptor` into the parameters a TMA-lowered kernel takes, and remembers the maps it
encoded (a map depends only on the address, shape, strides and the kernel's block/swizzle),
so launching with the same tensor again does not ask the driver to encode it again.
"""
from __future__ import annotations

import operator

from launcher import driver

# The TMA dtype enum values are slightly different on host vs device (Triton's driver.py).
TMA_DTYPE_DEVICE_TO_HOST = {i: i for i in range(16)}
TMA_DTYPE_DEVICE_TO_HOST.update({8: 10, 9: 8, 10: 9})
TMA_TF32 = 11


class TensorMap:
    """A 128-byte CUtensorMap, passed by value to kernels taking an nvTmaDesc."""

    __slots__ = ("data", "_buffer")

    def __init__(self, data: bytes = bytes(128)):
        if len(data) != 128:
            raise ValueError(f"a CUtensorMap is 128 bytes, got {len(data)}")
        self.data = bytes(data)
        self._buffer = None

    def tma_desc_cpu_ptr(self) -> int:
        """Host address of a 128-byte-aligned copy (for copying the map to the device)."""
        if self._buffer is None:
            ffi, _ = driver.native()
            raw = ffi.new("char[]", 256)
            addr = int(ffi.cast("uintptr_t", raw))
            start = (-addr) % 128
            ffi.memmove(raw + start, self.data, 128)
            self._buffer = (raw, addr + start)
        return self._buffer[1]

    def __repr__(self):
        return f"TensorMap({self.data[:16].hex()}...)"


def tensormap_bytes(obj, name: str) -> bytes:
    """The 128 bytes of an nvTmaDesc argument: our TensorMap or Triton's own PyCUtensorMap."""
    if obj.__class__ is TensorMap:
        return obj.data
    try:
        from triton.backends.nvidia import driver as nvdriver
        stock_type = nvdriver.PyCUtensorMap
    except Exception:  # pragma: no cover - triton not importable
        stock_type = None
    if stock_type is not None and type(obj) is stock_type:
        ffi, _ = driver.native()
        return bytes(ffi.buffer(ffi.cast("char *", obj.tma_desc_cpu_ptr()), 128))
    raise TypeError(f"parameter {name!r} (nvTmaDesc) expects a CUtensorMap "
                    f"(launcher.TensorMap or Triton's PyCUtensorMap), got {type(obj).__name__}")


def encode_tiled(address: int, swizzle: int, elem_size: int, elem_type: int, block_size, shape,
                 strides, padding: int, *, clear_bit21: bool) -> TensorMap:
    """cuTensorMapEncodeTiled with Triton's conventions (dims outermost first, as in Python)."""
    rank = len(shape)
    if not 1 <= rank <= 5 or len(strides) != rank or len(block_size) != rank:
        raise ValueError(f"tensor map rank mismatch: shape {list(shape)}, strides {list(strides)}, "
                         f"block {list(block_size)} (rank 1 to 5)")
    ffi, lib = driver.native()
    out = ffi.new("char[128]")
    rc = lib.launcher_encode_tiled(
        out, elem_type, rank, address,
        ffi.new("uint64_t[]", [operator.index(s) for s in shape]),
        ffi.new("uint64_t[]", [operator.index(s) for s in strides]),
        ffi.new("uint32_t[]", [operator.index(b) for b in block_size]),
        elem_size, swizzle, 1 if padding else 0, 1 if clear_bit21 else 0)
    if rc != 0:
        raise driver.error_from_status(
            rc, f"failed to create tensor map descriptor (elemType={elem_type} rank={rank} "
                f"global_address={address:#x} elemSize={elem_size} swizzle={swizzle} "
                f"padding={padding} shape={list(shape)} strides={list(strides)} "
                f"blockSize={list(block_size)})")
    return TensorMap(bytes(ffi.buffer(out, 128)))


class DescriptorEncoder:
    """Host TensorDescriptor -> (CUtensorMap, shape..., strides...) for one kernel parameter."""

    MAX_CACHED = 1024

    def __init__(self, name: str, meta: dict, ndim: int, *, version: tuple):
        self.name = name
        self.ndim = ndim
        self.swizzle = meta["swizzle"]
        self.elem_size = meta["elem_size"]
        self.elem_type = meta["elem_type"]
        self.block_size = list(meta["block_size"])
        self.fp4_padded = bool(meta.get("fp4_padded", False))
        self.newer = version >= (3, 7)  # tf32 rounding, original shape in the tail, bit 21
        self.cache = {}

    def __call__(self, desc):
        shape = tuple(desc.shape)
        strides = tuple(desc.strides)
        nan = desc.padding == "nan"
        tf32 = self.newer and bool(getattr(desc, "round_f32_to_tf32", False))
        base = desc.base
        address = base if base.__class__ is int else base.data_ptr()
        key = (address, shape, strides, nan, tf32)
        tmap = self.cache.get(key)
        if tmap is None:
            tmap = self._encode(address, shape, strides, nan, tf32)
        encoded_shape = shape
        if self.fp4_padded:
            encoded_shape = shape[:-1] + (shape[-1] * 2,)
        tail_shape = shape if self.newer else encoded_shape
        return (tmap.data, *tail_shape, *strides)

    def _encode(self, address, shape, strides, nan, tf32):
        if len(shape) != self.ndim or len(strides) != self.ndim:
            raise ValueError(f"parameter {self.name!r} expects a {self.ndim}-d tensor descriptor, "
                             f"got shape {list(shape)} and strides {list(strides)}")
        if strides[-1] != 1:
            raise ValueError(f"parameter {self.name!r}: the last stride of a TMA tensor "
                             f"descriptor must be 1, got strides {list(strides)}")
        check_device_pointer(address, self.name)
        encoded_shape = list(shape)
        if self.fp4_padded:
            encoded_shape[-1] *= 2
        elem_type = TMA_TF32 if tf32 else TMA_DTYPE_DEVICE_TO_HOST[self.elem_type]
        tmap = encode_tiled(address, self.swizzle, self.elem_size, elem_type, self.block_size,
                            encoded_shape, strides, 1 if nan else 0, clear_bit21=self.newer)
        if len(self.cache) >= self.MAX_CACHED:
            self.cache.clear()
        self.cache[(address, shape, strides, nan, tf32)] = tmap
        return tmap


def check_device_pointer(address: int, name: str) -> None:
    """Refuse a tensor descriptor whose base the device cannot reach (encoding would not)."""
    if address == 0:
        return
    cu = driver.cu()
    err, _ = cu.cuPointerGetAttribute(cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_POINTER, address)
    if int(err) == int(cu.CUresult.CUDA_ERROR_INVALID_VALUE):  # host memory
        raise ValueError(f"parameter {name!r}: tensor descriptor base {address:#x} cannot be "
                         "accessed from the device (a CPU tensor?)")
