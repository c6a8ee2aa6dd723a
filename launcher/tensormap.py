"""CUtensorMap objects and host TensorDescriptor encoding (what Triton's driver.c does in C).

`TensorMap` stands in for Triton's `PyCUtensorMap`: 128 bytes, also reachable at a 128-byte
aligned host address (`tma_desc_cpu_ptr()`). `encode_tiled` applies Triton's conventions
(dimensions outermost first as Python sees them, element strides 1, 128-byte L2 promotion, the
CUTLASS bit-21 workaround where the kernel's Triton release applies it) around the driver's
encoder. `DescriptorEncoder` turns a host `TensorDescriptor` into the parameters a TMA-lowered
kernel takes, and remembers the maps it encoded (a map depends only on the address, shape,
strides and the kernel's block/swizzle), so a launch with the same tensor again does not encode
again. `descriptor_encoder` puts the C encoder of launcher._call (cdefs/call.c) in front of it:
the common descriptor is encoded there in one C call, the rest comes here.
"""
from __future__ import annotations

import functools
import operator

from launcher import driver
from launcher.tensordesc import nan_padding, sizes_of

_BIT21_DRIVERS = 13010  # drivers up to 13.1 get the CUTLASS workaround
_BIT21_EXTENT = 128 * 1024  # ... for tensors whose last byte lies below 128 KiB


@functools.lru_cache(maxsize=None)
def _device_to_host() -> dict:
    """Triton's TMA element types as the compiler numbers them (PTX's, in tensordesc_meta) -> the
    host's CUtensorMapDataType (cdefs/launcher.h's numbers): the same but for three (Triton's
    driver.py)."""
    n = driver.number
    table = {i: i for i in range(16)}
    table.update({8: n("CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ"), 9: n("CU_TENSOR_MAP_DATA_TYPE_FLOAT64"),
                  10: n("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16")})
    return table


def __getattr__(name):  # PEP 562: the header's numbers, read on first use (importing this loads nothing native)
    if name == "TMA_DTYPE_DEVICE_TO_HOST":
        return _device_to_host()
    if name == "TMA_TF32":
        return driver.number("CU_TENSOR_MAP_DATA_TYPE_TFLOAT32")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class TensorMap:
    """A 128-byte CUtensorMap, passed by value to kernels taking an nvTmaDesc."""

    __slots__ = ("data", "_buffer")

    def __init__(self, data: bytes = bytes(128)):
        try:  # not bytes(n) of an int, nor a str
            raw = bytes(data) if not isinstance(data, (int, str)) else None
        except TypeError:
            raw = None
        except ValueError as e:  # a sequence of ints, one not a byte
            raise ValueError(f"a CUtensorMap is 128 bytes: {e}") from None
        if raw is None:
            raise TypeError(f"a CUtensorMap is 128 bytes (bytes, bytearray or memoryview), got {type(data).__name__}")
        if len(raw) != 128:
            raise ValueError(f"a CUtensorMap is 128 bytes, got {len(raw)}")
        self.data = raw
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


def tensormap_bytes(obj) -> bytes:
    """The 128 bytes of an nvTmaDesc argument: our TensorMap or Triton's own PyCUtensorMap."""
    if obj.__class__ is TensorMap:
        return obj.data
    from launcher.triton_adapter import stock_tensormap_type

    stock = stock_tensormap_type()
    if stock is not None and stock is not TensorMap and type(obj) is stock:
        # Triton's C object (3.6-3.9 driver.c: PyObject_HEAD, then the aligned 128-byte map as its
        # last member, so the map ends the object); it has no method that gives the bytes, and
        # CPython's id() is the object's address.
        ffi, _ = driver.native()
        return bytes(ffi.buffer(ffi.cast("char *", id(obj) + stock.__basicsize__ - 128), 128))
    raise TypeError(f"expects a CUtensorMap (launcher.TensorMap or Triton's PyCUtensorMap), "
                    f"got {type(obj).__name__}")


def encode_tiled(address: int, swizzle: int, elem_size: int, elem_type: int, block_size, shape,
                 strides, padding: int, *, clear_bit21: bool) -> TensorMap:
    """cuTensorMapEncodeTiled with Triton's conventions: `shape`, `strides` (in elements) and
    `block_size` outermost first, as in Python. clear_bit21: the kernel's Triton release applies
    the CUTLASS workaround (decided here against the driver's version). The ranks and sizes are
    checked by driver.tensor_map_encoder and the C library (ValueError)."""
    try:
        box = [operator.index(b) for b in reversed(block_size)]
    except TypeError:
        raise ValueError(f"tensor map block {list(block_size)} must be integers") from None
    return _encode(address, swizzle, elem_size, elem_type, box, shape, strides, padding, clear_bit21)


def _bit21_below(clear_bit21: bool) -> int:
    """What launcher_encode_tensor_map takes (clear_bit21_below): the CUTLASS workaround's extent where the kernel's
    release applies it and the driver is one it is for, else 0."""
    return _BIT21_EXTENT if clear_bit21 and driver.driver_version() <= _BIT21_DRIVERS else 0


def _encode_with(encode, address, shape, strides, swizzle, elem_size, elem_type, box, padding) -> bytes:
    """encode(address, shape, strides), where a driver error says what was asked (Triton's message)."""
    try:
        return encode(address, shape, strides)
    except driver.CudaDriverNotFound:
        raise
    except driver.CudaError as e:
        raise driver.CudaError(
            e.code, e.name, e.text,
            f"failed to create tensor map descriptor (elemType={elem_type} rank={len(shape)} "
            f"global_address={address:#x} elemSize={elem_size} swizzle={swizzle} padding={padding} "
            f"shape={list(shape)} strides={list(strides)} blockSize={list(box)[::-1]})") from None


def _map_encoder(swizzle, elem_size, elem_type, box, padding, bit21_below):
    """driver.tensor_map_encoder with Triton's conventions: `box` innermost first (as the driver
    takes it), element strides 1, 128-byte L2 promotion, NaN fill for NaN padding."""
    n = driver.number
    fill = n("CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA" if padding else "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")
    return driver.tensor_map_encoder(elem_type, box, elem_size, n("CU_TENSOR_MAP_INTERLEAVE_NONE"), swizzle,
                                     n("CU_TENSOR_MAP_L2_PROMOTION_L2_128B"), fill, bit21_below)


def _encode(address, swizzle, elem_size, elem_type, box, shape, strides, padding, clear_bit21) -> TensorMap:
    """One tensor map as a TensorMap (what Triton's fill_tma_descriptor returns)."""
    encode = _map_encoder(swizzle, elem_size, elem_type, box, padding, _bit21_below(clear_bit21))
    data = _encode_with(encode, address, shape, strides, swizzle, elem_size, elem_type, box, padding)
    tmap = TensorMap.__new__(TensorMap)
    tmap.data, tmap._buffer = data, None
    return tmap


class DescriptorEncoder:
    """Host TensorDescriptor -> (CUtensorMap bytes, shape..., strides...) for one TMA-lowered
    parameter. The maps it encoded are remembered by (address, shape, strides, padding, tf32):
    a launch with the same tensor again does not encode again, and one with new memory costs
    one C call and little Python.

    meta: Triton's tensordesc_meta entry for it; conventions: the spec's (launcher.spec)."""

    MAX_CACHED = 1024

    def __init__(self, meta: dict, ndim: int, conventions):
        self.ndim = ndim
        # `meta` was held to spec.check_tensordesc_meta when its layout was planned (layout_for)
        self.swizzle = meta["swizzle"]
        self.elem_size = meta["elem_size"]
        self.elem_type = meta["elem_type"]
        self.box = list(meta["block_size"])[::-1]  # innermost first, as the driver takes it
        self.fp4_padded = bool(meta.get("fp4_padded", False))
        self.tma_tf32 = conventions.tma_tf32
        self.original_shape = conventions.tma_original_shape
        self.clear_bit21 = conventions.tma_clear_bit21
        self._encoders = {}  # (NaN padding, tf32) -> driver.tensor_map_encoder's function, made at its first encode
        self.cache = {}
        self.fast = None  # the C encoder in front of this one (descriptor_encoder), armed with each format made

    def __call__(self, desc):
        shape = sizes_of(desc.shape, self.ndim)
        strides = sizes_of(desc.strides, self.ndim)
        tf32 = self.tma_tf32 and bool(getattr(desc, "round_f32_to_tf32", False))
        base = desc.base
        try:
            address = base if base.__class__ is int else base.data_ptr()
        except AttributeError:
            if base is None or not callable(getattr(base, "data_ptr", None)):
                raise TypeError(f"a TMA tensor descriptor's base must be a tensor (with data_ptr()) or an int "
                                f"address, got {type(base).__name__}") from None
            raise  # raised inside the tensor's own data_ptr()
        key = (address, shape, strides, nan_padding(desc.padding), tf32)
        data = self.cache.get(key)
        if data is None:
            data = self._encode(key)
        if self.fp4_padded and not self.original_shape:
            shape = shape[:-1] + (shape[-1] * 2,)
        return (data, *shape, *strides)

    def _encode(self, key) -> bytes:
        address, shape, strides, nan, tf32 = key
        if len(shape) != self.ndim or len(strides) != self.ndim:
            raise ValueError(f"expects a {self.ndim}-d tensor descriptor, got shape {list(shape)} "
                             f"and strides {list(strides)}")
        if strides[-1] != 1:
            raise ValueError(f"the last stride of a TMA tensor descriptor must be 1, got strides {list(strides)}")
        if self.fp4_padded:
            shape = shape[:-1] + (shape[-1] * 2,)
        elem_type = driver.number("CU_TENSOR_MAP_DATA_TYPE_TFLOAT32") if tf32 else _device_to_host()[self.elem_type]
        encode = self._encoders.get((nan, tf32))
        if encode is None:  # the driver's version decides the bit-21 workaround: asked here, not on the CPU tests' path
            encode = self._encoders[nan, tf32] = _map_encoder(self.swizzle, self.elem_size, elem_type, self.box, nan,
                                                              _bit21_below(self.clear_bit21))
            fmt = getattr(encode, "format", None)
            if self.fast is not None and not tf32 and fmt is not None:  # tf32-rounded maps stay here
                self.fast._arm(nan, driver.entry_address("launcher_encode_tensor_map"), driver.address(fmt), fmt)
        data = _encode_with(encode, address, shape, strides, self.swizzle, self.elem_size, elem_type, self.box,
                            1 if nan else 0)
        if len(self.cache) >= self.MAX_CACHED:
            self.cache.clear()
        self.cache[key] = data
        return data


def descriptor_encoder(meta: dict, ndim: int, conventions):
    """The encoder of one TMA-lowered descriptor parameter: launcher._call.DescEncoder, which
    encodes a common descriptor (an address, `ndim` int sizes and strides, the last stride 1,
    zero or NaN padding, no tf32 rounding) in one C call, in front of a DescriptorEncoder that
    takes everything else and explains what is wrong. fp4-padded descriptors stay in Python."""
    from launcher._call import DescEncoder

    slow = DescriptorEncoder(meta, ndim, conventions)
    if slow.fp4_padded:
        return slow
    slow.fast = DescEncoder(slow, ndim, slow.tma_tf32)
    return slow.fast


def decomposer(tf32_flag: bool, ndim: int):
    """Host TensorDescriptor -> the parameters a kernel without TMA lowering takes: base, shape,
    strides, padding (and round_f32_to_tf32 where the convention has it), shape, strides. A
    descriptor of another rank is a ValueError (its sizes would fill the strides' slots)."""
    def decompose(d):
        base = d.base
        ptr = base if base.__class__ is int else base.data_ptr() if base is not None else 0
        shape, strides = sizes_of(d.shape, ndim), sizes_of(d.strides, ndim)
        if len(shape) != ndim or len(strides) != ndim:
            raise ValueError(f"expects a {ndim}-d tensor descriptor, got shape {list(shape)} "
                             f"and strides {list(strides)}")
        # a descriptor without the flag (Triton 3.6's, or a user's own) is not rounded, as the TMA encoder takes it
        nan = nan_padding(d.padding)
        flags = (nan, bool(getattr(d, "round_f32_to_tf32", False))) if tf32_flag else (nan,)
        return (ptr, *shape, *strides, *flags, *shape, *strides)

    return decompose
