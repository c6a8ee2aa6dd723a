"""`TensorDescriptor`: launcher's own host tensor descriptor, for kernels taking one from a bundle.

It holds what Triton's `triton.tools.tensor_descriptor.TensorDescriptor` holds (base, shape,
strides, block_shape, padding, round_f32_to_tf32) and checks the same rules, raising
ValueError or TypeError naming the field instead of asserting. The base is a torch tensor
(anything with data_ptr() and a dtype) or an object with `__cuda_array_interface__` (CuPy,
Numba), which is wrapped in a `CudaArray`. Bundled kernels take Triton's descriptor too, when
Triton is installed.
"""
from __future__ import annotations

import itertools
import operator
from dataclasses import dataclass

from launcher.specialization import array_layout, dtype_name

_ITEMSIZE = {"fp16": 2, "bf16": 2, "fp32": 4, "fp64": 8, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "i32": 4, "u32": 4,
             "i64": 8, "u64": 8, "u1": 1, "fp8e4nv": 1, "fp8e5": 1, "fp8e4b15": 1, "fp8e4b8": 1, "fp8e5b16": 1}
_FLOATS = {"fp16", "bf16", "fp32", "fp64", "fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8", "fp8e5b16"}


class CudaArray:
    """A device array given by `__cuda_array_interface__`: its address and Triton dtype, with a
    reference to the object that owns the memory."""

    __slots__ = ("address", "dtype", "shape", "strides", "owner")

    def __init__(self, obj):
        found = array_layout(obj)  # the interface read once, and checked
        if found is None:
            raise TypeError(f"expects a tensor or an object with __cuda_array_interface__, got {type(obj).__name__}")
        self.address, self.dtype, self.shape, strides = found
        item = _ITEMSIZE[self.dtype]
        if strides is None:  # C-contiguous
            out, step = [], 1
            for s in reversed(self.shape):
                out.append(step)
                step *= s
            self.strides = tuple(reversed(out))
        else:
            if any(s % item for s in strides):
                raise ValueError(f"strides {list(strides)} (bytes) are not multiples of the element size {item}")
            self.strides = tuple(s // item for s in strides)
        self.owner = obj

    def data_ptr(self) -> int:
        return self.address

    def __repr__(self):
        return f"CudaArray({self.address:#x}, {self.dtype}, shape={list(self.shape)})"


def _base_of(base):
    if hasattr(base, "data_ptr") and hasattr(base, "dtype"):
        return base
    return CudaArray(base)


PADDINGS = ("zero", "nan")  # what a descriptor's padding may be (Triton's TensorDescriptor's too)


def sizes_of(sizes, ndim: int) -> tuple:
    """A descriptor's shape or strides, read as tuple() reads them but never past ndim + 1 items: an
    endless iterator comes back one too long (its reader's length check refuses it), not read forever."""
    return tuple(itertools.islice(sizes, ndim + 1))


def nan_padding(padding) -> bool:
    """Whether a descriptor's `padding` asks for NaN out of bounds: the one rule every path that
    encodes or decomposes a descriptor reads it by. Anything but 'zero' and 'nan' is a ValueError
    (Triton's launcher zero-fills it: a descriptor object of the user's own reaches it unchecked)."""
    if padding.__class__ is str and padding in PADDINGS:
        return padding == "nan"
    shown = repr(padding) if padding.__class__ in (str, int, float, type(None)) else f"a {type(padding).__name__}"
    raise ValueError(f"padding must be 'zero' or 'nan', got {shown[:60]}")


@dataclass
class TensorDescriptor:
    """A host tensor descriptor: a `block_shape` tile of `base` viewed as `shape` with `strides`
    (in elements; the last one 1), padded with zeros or NaNs out of bounds."""

    base: object
    shape: list
    strides: list
    block_shape: list
    padding: str = "zero"
    round_f32_to_tf32: bool = False

    def __post_init__(self):
        self.base = _base_of(self.base)
        self.shape = [self._int("shape", s) for s in self.shape]
        self.strides = [self._int("strides", s) for s in self.strides]
        self.block_shape = [self._int("block_shape", b) for b in self.block_shape]
        rank = len(self.shape)
        if not 1 <= rank <= 5:
            raise ValueError(f"TensorDescriptor: rank {rank}; a descriptor has 1 to 5 dimensions")
        if len(self.strides) != rank or len(self.block_shape) != rank:
            raise ValueError(f"TensorDescriptor: shape {self.shape}, strides {self.strides} and block_shape "
                             f"{self.block_shape} must have the same rank")
        address = self.base.data_ptr()
        if address % 16:
            raise ValueError(f"TensorDescriptor: base {address:#x} is not 16-byte aligned")
        for b in self.block_shape:
            if b <= 0 or b & (b - 1):
                raise ValueError(f"TensorDescriptor: block_shape {self.block_shape} must be powers of two")
        name = dtype_name(self.base.dtype)
        item = _ITEMSIZE.get(name)
        if item is None:
            raise TypeError(f"TensorDescriptor: no element size known for dtype {name}")
        for s in self.strides[:-1]:
            if s * item % 16:
                raise ValueError(f"TensorDescriptor: strides {self.strides} must be 16-byte aligned but the last")
        if any(s <= 0 for s in self.shape):
            raise ValueError(f"TensorDescriptor: shape {self.shape} must be positive")
        if self.strides[-1] != 1:
            raise ValueError(f"TensorDescriptor: the last dimension must be contiguous (strides {self.strides})")
        try:
            nan = nan_padding(self.padding)
        except ValueError as e:
            raise ValueError(f"TensorDescriptor: {e}") from None
        if nan and name not in _FLOATS:
            raise ValueError(f"TensorDescriptor: padding 'nan' needs a floating-point tensor, got {name}")
        if self.round_f32_to_tf32 and name != "fp32":
            raise ValueError(f"TensorDescriptor: round_f32_to_tf32 needs an fp32 tensor, got {name}")

    @staticmethod
    def _int(field, value):
        try:
            return operator.index(value)
        except TypeError:
            raise TypeError(f"TensorDescriptor: {field} must hold ints, got {type(value).__name__}") from None

    @staticmethod
    def from_tensor(tensor, block_shape, padding="zero", round_f32_to_tf32=False) -> "TensorDescriptor":
        """The descriptor of a whole tensor (torch, or anything with __cuda_array_interface__)."""
        base = _base_of(tensor)
        if isinstance(base, CudaArray):
            shape, strides = base.shape, base.strides
        else:
            shape, strides = tuple(tensor.shape), tuple(tensor.stride())
        return TensorDescriptor(base, list(shape), list(strides), list(block_shape), padding, round_f32_to_tf32)
