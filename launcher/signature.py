"""Triton kernel signature -> flat parameter plan, computed once per kernel.

A Triton signature lists every argument the kernel was called with, constexprs included, with
nested tuples and host tensor descriptors as they were passed. The kernel itself takes a flat
list of parameters: constexprs dropped, tuples flattened depth first, each tensor descriptor
expanded (into a CUtensorMap or a pointer, and shapes and strides), and two scratch pointers
at the end. `plan_signature` computes that layout once: the tree of arguments (`ArgNode`), the
flat parameters (`Param`) with their byte offsets in one packed buffer, and the struct format
that packs them all in one call.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

# Kinds of parameter, as the native library knows them (cdefs/launcher.h).
VALUE, POINTER, TENSORMAP = 0, 1, 2

# The launch header packed before the kernel parameters (launch_header in cdefs/launcher.c):
# function, stream, grid x/y/z, num_warps, num_ctas, shared memory bytes, 4 reserved bytes.
HEADER_FORMAT = "QQiiiHHI4x"
HEADER_SIZE = struct.calcsize("<" + HEADER_FORMAT)
MAX_PARAM_BYTES = 32764  # kernel parameter space since CUDA 12.1 (MAX_PARAM_BYTES in launcher.c)

# Scalar types: struct code, storage size and alignment, bytes the kernel reads, and at which
# offset within the storage. bf16 is packed as fp32 and the kernel reads its upper half, which
# is Triton's own conversion (round to fp32, then truncate).
SCALARS = {
    "i1": ("B", 1, 1, 0), "u1": ("B", 1, 1, 0),
    "i8": ("b", 1, 1, 0), "u8": ("B", 1, 1, 0),
    "i16": ("h", 2, 2, 0), "u16": ("H", 2, 2, 0),
    "i32": ("i", 4, 4, 0), "u32": ("I", 4, 4, 0),
    "i64": ("q", 8, 8, 0), "u64": ("Q", 8, 8, 0),
    "fp16": ("e", 2, 2, 0), "bf16": ("f", 4, 2, 2),
    "fp32": ("f", 4, 4, 0), "f32": ("f", 4, 4, 0), "fp64": ("d", 8, 8, 0),
}
INT_RANGES = {
    "i1": (0, 1), "u1": (0, 1),
    "i8": (-(1 << 7), (1 << 7) - 1), "u8": (0, (1 << 8) - 1),
    "i16": (-(1 << 15), (1 << 15) - 1), "u16": (0, (1 << 16) - 1),
    "i32": (-(1 << 31), (1 << 31) - 1), "u32": (0, (1 << 32) - 1),
    "i64": (-(1 << 63), (1 << 63) - 1), "u64": (0, (1 << 64) - 1),
}
FLOATS = ("fp16", "bf16", "fp32", "f32", "fp64")

_TENSORDESC = re.compile(r"tensordesc(_im2col)?<([^[>]*)\[([^\]]*)\]")


class UnsupportedSignature(Exception):
    """A signature this launcher does not handle; the stock launcher takes the kernel."""


@dataclass
class Param:
    """One kernel parameter: where its value sits in the packed buffer and what it is."""

    name: str  # for messages: "x", "t[1]", "desc.shape[0]", "#3"
    type: str  # Triton type string: "*fp32", "i32", "nvTmaDesc", ...
    code: str  # struct code
    offset: int  # of the value's storage in the packed buffer
    size: int  # bytes the kernel reads
    read_at: int  # offset the kernel reads from (bf16: offset + 2)
    kind: int  # VALUE / POINTER / TENSORMAP


@dataclass
class ArgNode:
    """One argument as the caller passes it (a tree for tuples)."""

    name: str
    type: object  # signature entry: a type string or a tuple of entries
    kind: str  # "constexpr", "scalar", "pointer", "tensormap", "tuple", "tensordesc"
    children: list = field(default_factory=list)  # for tuples
    params: list = field(default_factory=list)  # the Params this argument fills (not for tuples)
    desc: dict | None = None  # for tensordesc: ndim, dtype, meta


@dataclass
class ArgPlan:
    """The whole layout of one signature."""

    kernel: str
    args: list  # [ArgNode] for every argument, constexprs included
    params: list  # [Param] in kernel order, the two scratch pointers last
    format: str  # struct format of header + params
    size: int  # bytes of the packed buffer

    @property
    def arity(self) -> int:
        return len(self.args)

    def arg_names(self) -> list:
        return [a.name for a in self.args]


def parse_tensordesc(ty: str):
    """('fp16', ndim, is_im2col) of a "tensordesc<fp16[64, 64]...>" type string."""
    m = _TENSORDESC.match(ty)
    if not m:
        raise UnsupportedSignature(f"malformed tensor descriptor type {ty!r}")
    ndim = m.group(3).count(",") + 1
    rank = re.search(r",input_rank=(\d+)", ty)
    if rank:
        ndim = int(rank.group(1))
    return m.group(2), ndim, bool(m.group(1))


class _Layout:
    """Assigns byte offsets as parameters are added, with natural alignment."""

    def __init__(self):
        self.offset = HEADER_SIZE
        self.format = [HEADER_FORMAT]
        self.params = []

    def add(self, name, ty, code, storage, align, size, read_offset, kind):
        pad = (-self.offset) % align
        if pad:
            self.format.append(f"{pad}x")
        self.offset += pad
        p = Param(name, ty, code, self.offset, size, self.offset + read_offset, kind)
        self.format.append(code)
        self.offset += storage
        self.params.append(p)
        return p

    def scalar(self, name, ty):
        if ty.startswith("*"):
            return self.add(name, ty, "Q", 8, 8, 8, 0, POINTER)
        if ty == "nvTmaDesc":
            return self.add(name, ty, "128s", 128, 128, 128, 0, TENSORMAP)
        if ty not in SCALARS:
            raise UnsupportedSignature(f"parameter {name!r} has an unknown type {ty!r}")
        code, storage, size, read_offset = SCALARS[ty]
        return self.add(name, ty, code, storage, storage, size, read_offset, VALUE)


def tensordesc_param_types(dtype: str, ndim: int, with_tma: bool, tf32_flag: bool) -> list:
    """The flat parameters one host TensorDescriptor becomes (Triton's expand_signature)."""
    if with_tma:
        head = [("", "nvTmaDesc")]
    else:
        head = [(".base", "*" + dtype)]
        head += [(f".shape[{i}]", "i64") for i in range(ndim)]
        head += [(f".strides[{i}]", "i64") for i in range(ndim)]
        head += [(".padding", "i1")]
        if tf32_flag:
            head += [(".round_f32_to_tf32", "i1")]
    tail = [(f".shape[{i}]", "i32") for i in range(ndim)]
    tail += [(f".strides[{i}]", "i64") for i in range(ndim)]
    return head + tail


def plan_signature(kernel: str, names, types, tensordesc_meta=None, *, tf32_flag=True) -> ArgPlan:
    """Plan the flat parameters of a kernel.

    names: one display name per argument; types: the signature entries (same order);
    tensordesc_meta: Triton's metadata.tensordesc_meta (one entry per descriptor, in order of
    appearance, or empty when the kernel does not use TMA for them); tf32_flag: whether the
    installed Triton passes round_f32_to_tf32 for decomposed descriptors (3.7+).
    """
    layout = _Layout()
    metas = list(tensordesc_meta or [])
    with_tma = bool(metas)
    desc_index = 0

    def visit(name, ty):
        nonlocal desc_index
        if isinstance(ty, (tuple, list)):
            node = ArgNode(name, tuple(ty), "tuple")
            node.children = [visit(f"{name}[{i}]", t) for i, t in enumerate(ty)]
            return node
        if not isinstance(ty, str):
            raise UnsupportedSignature(f"parameter {name!r} has an unknown type {ty!r}")
        if ty == "constexpr":
            return ArgNode(name, ty, "constexpr")
        if ty.startswith("tensordesc"):
            dtype, ndim, im2col = parse_tensordesc(ty)
            if im2col:
                raise UnsupportedSignature(f"parameter {name!r}: im2col tensor descriptors")
            meta = None
            if with_tma:
                if desc_index >= len(metas):
                    raise UnsupportedSignature("fewer tensordesc_meta entries than descriptors")
                meta = metas[desc_index]
            desc_index += 1
            node = ArgNode(name, ty, "tensordesc", desc={"dtype": dtype, "ndim": ndim, "meta": meta})
            for suffix, t in tensordesc_param_types(dtype, ndim, with_tma, tf32_flag):
                node.params.append(layout.scalar(name + suffix, t))
            return node
        p = layout.scalar(name, ty)
        kind = {POINTER: "pointer", TENSORMAP: "tensormap"}.get(p.kind, "scalar")
        return ArgNode(name, ty, kind, params=[p])

    args = [visit(n, t) for n, t in zip(names, types)]
    if with_tma and desc_index != len(metas):
        raise UnsupportedSignature(
            f"{len(metas)} tensordesc_meta entries for {desc_index} tensor descriptors")
    layout.scalar("<global scratch>", "*i8")
    layout.scalar("<profile scratch>", "*i8")
    fmt = "<" + "".join(layout.format)
    size = struct.calcsize(fmt)
    if size - HEADER_SIZE > MAX_PARAM_BYTES:
        raise ValueError(f"kernel {kernel!r} takes {size - HEADER_SIZE} bytes of parameters; "
                         f"CUDA allows at most {MAX_PARAM_BYTES}")
    return ArgPlan(kernel, args, layout.params, fmt, size)


def describe_type(ty) -> str:
    """How an argument's expected value is described in error messages."""
    if isinstance(ty, tuple):
        return f"a sequence of {len(ty)}"
    if ty.startswith("*"):
        return f"a tensor (or an int address, or None) for pointer type {ty}"
    if ty == "nvTmaDesc":
        return "a CUtensorMap object (with tma_desc_cpu_ptr())"
    if ty.startswith("tensordesc"):
        return f"a TensorDescriptor for {ty}"
    if ty in ("i1", "u1"):
        return f"a bool or 0/1 for {ty}"
    if ty in INT_RANGES:
        lo, hi = INT_RANGES[ty]
        return f"an int in [{lo}, {hi}] for {ty}"
    if ty in FLOATS:
        return f"a real number for {ty}"
    return ty
