"""`LaunchSpec`: one serialisable description of how a compiled kernel is launched.

A spec holds no Triton objects. It says:
- which arguments the kernel is called with (a tree: constexprs, scalars, pointers, nested
  tuples, tensor descriptors) and the flat parameters they become, with kinds, sizes and byte
  offsets in one packed buffer (the `Layout`, shared by every kernel of the same shape);
- what the kernel needs to be launched: warps, CTAs and cluster, shared memory, cooperative
  grid, PDL, global and profile scratch, target architecture;
- what the compiler assumed about each argument: which ones are known divisible by 16, and the
  value of every constexpr (integers equal to 1 among them), so that a later caller can check
  an argument against what the kernel was compiled for;
- the conventions of the Triton release that compiled it, where releases differ in how they
  pass arguments (see `Conventions`).

`launcher.triton_adapter` builds specs from Triton's `src` and `metadata`; a spec round-trips
through JSON (`to_json` / `from_json`), which re-plans the layout and refuses a spec that
contradicts itself. Decisions that depend on a device or a driver are not in the spec: they
are made when the kernel is loaded (launcher.modules) or launched (launcher.cuda_launcher).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import operator
import re
import struct
import sys
from dataclasses import dataclass
from typing import NamedTuple

SPEC_FORMAT = "launcher.LaunchSpec"
SPEC_VERSION = 1

# Kinds of kernel parameter (their numbers in the native library are lib.LAUNCHER_PARAM_*).
VALUE, POINTER, TENSORMAP = "value", "pointer", "tensormap"

# Scalar types: struct code, storage size (= alignment), bytes the kernel reads, and at which
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
# Triton's bool types: packed as one byte, a bool or the int 0 or 1 (no other int)
BOOLS = ("i1", "u1")



class HeaderFacts(NamedTuple):
    """What the native library's header (cdefs/launcher.h) says about a packed buffer."""

    format: str  # struct format of the launch header that precedes the parameters (no "<")
    size: int  # its bytes
    function_at: int  # where the function handle, the stream and the grid sit in it
    stream_at: int
    grid_at: int
    max_param_bytes: int  # the kernel parameter space


@functools.lru_cache(maxsize=None)
def header_facts() -> HeaderFacts:
    """The header's facts, read from ffi on first use (importing this module loads nothing
    native); HEADER_FORMAT, HEADER_SIZE, HEADER_FUNCTION_AT, HEADER_STREAM_AT, HEADER_GRID_AT and
    MAX_PARAM_BYTES are these, as module attributes."""
    from launcher import driver

    ffi, lib = driver.native()
    fmt = driver.struct_format("launcher_header")[1:]
    at = [ffi.offsetof("launcher_header", f) for f in ("function", "stream", "grid_x")]
    return HeaderFacts(fmt, ffi.sizeof("launcher_header"), *at, lib.LAUNCHER_MAX_PARAM_BYTES)


_HEADER_ATTRIBUTES = {"HEADER_FORMAT": "format", "HEADER_SIZE": "size", "HEADER_FUNCTION_AT": "function_at",
                      "HEADER_STREAM_AT": "stream_at", "HEADER_GRID_AT": "grid_at", "MAX_PARAM_BYTES": "max_param_bytes"}


def __getattr__(name):  # PEP 562: the header's facts, read when first asked for, then plain globals
    field = _HEADER_ATTRIBUTES.get(name)
    if field is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(header_facts(), field)
    return value


GLOBAL_SCRATCH, PROFILE_SCRATCH = "<global scratch>", "<profile scratch>"

# Triton's names of element types (triton.language.core.dtype's, as its signatures spell them,
# 3.6 to 3.9): what a pointer type ("*fp16", "*kfp16" for a const pointer) or a tensor
# descriptor's element type may name.
TYPE_NAMES = frozenset(("i1", "u1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "fp16", "bf16",
                        "fp32", "fp64", "fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8", "fp8e5b16", "void"))

_TENSORDESC = re.compile(r"tensordesc(_im2col)?<([^[>]*)\[([^\]]*)\]")


class SpecError(ValueError):
    """A spec that is malformed or contradicts itself; the message names the field."""


class UnsupportedSignature(Exception):
    """A signature this launcher does not handle; the stock launcher takes the kernel."""


@dataclass(frozen=True)
class Conventions:
    """How the Triton release that compiled a kernel passes its arguments, where releases differ."""

    tensordesc_tf32_flag: bool = True  # decomposed descriptors carry round_f32_to_tf32 (3.7+)
    tma_original_shape: bool = True  # TMA descriptors are followed by the original, not the
    #                                  fp4-doubled, shape (3.7+)
    tma_tf32: bool = True  # round_f32_to_tf32 encodes a TF32 tensor map (3.7+)
    tma_clear_bit21: bool = True  # the CUTLASS bit-21 workaround on drivers <= 13.1 (3.7+)
    oversized_shared: bool = True  # more than 228 KiB of shared memory launches in the
    #                                oversized mode, and loads ask for it (3.8+)


class Param(NamedTuple):
    """One kernel parameter: what it is and where its value sits in the packed buffer."""

    path: tuple  # argument index, then indices into tuples; () for the scratch pointers
    suffix: str  # ".shape[0]" etc. for tensor-descriptor parts, the scratch names, else ""
    type: str  # Triton type string: "*fp32", "i32", "nvTmaDesc", ...
    kind: str  # VALUE / POINTER / TENSORMAP
    code: str  # struct code
    offset: int  # of the value's storage in the packed buffer
    size: int  # bytes the kernel reads
    read_at: int  # offset the kernel reads from (bf16: offset + 2)


class TensorDesc(NamedTuple):
    """A host tensor-descriptor argument: its element type, rank and, when the kernel lowers it
    to TMA, the compiler's metadata for it (block size, swizzle, element type and size)."""

    dtype: str
    ndim: int
    tma: tuple | None  # sorted (key, value) items of Triton's tensordesc_meta entry, or None

    @property
    def meta(self) -> dict | None:
        return None if self.tma is None else {k: list(v) if isinstance(v, tuple) else v for k, v in self.tma}


class Arg(NamedTuple):
    """One argument as the caller passes it (a tree for tuples)."""

    kind: str  # "constexpr", "scalar", "pointer", "tensormap", "tuple", "tensordesc"
    type: object  # signature entry: a type string, or a tuple of entries for tuples
    children: tuple = ()  # Args of a tuple
    params: tuple = ()  # indices of the Params this argument fills (not for tuples)
    desc: TensorDesc | None = None


class Layout:
    """The name-free part of a signature's plan, shared by every kernel of the same shape:
    the argument tree, the flat parameters and the struct format that packs header + params."""

    __slots__ = ("key", "args", "params", "format", "format_before_scratch", "size", "_hash")

    def __init__(self, key, args, params, fmt, fmt_before_scratch, size):
        self.key, self.args, self.params = key, args, params
        self.format, self.format_before_scratch, self.size = fmt, fmt_before_scratch, size
        self._hash = hash(key)

    def __eq__(self, other):
        return isinstance(other, Layout) and self.key == other.key

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"Layout({len(self.args)} args, {len(self.params)} params, {self.size} bytes)"

    @property
    def arity(self) -> int:
        return len(self.args)


def parse_tensordesc(ty: str):
    """('fp16', ndim, is_im2col) of a "tensordesc<fp16[64, 64]...>" type string."""
    m = _TENSORDESC.match(ty)
    if not m:
        raise UnsupportedSignature(f"malformed tensor descriptor type {ty!r}")
    ndim = m.group(3).count(",") + 1
    rank = re.search(r",input_rank=(\d+)", ty)
    if rank:
        ndim = int(rank.group(1)) if len(rank.group(1)) < 4 else 0
    if not 1 <= ndim <= 5:  # what a tensor map can have (and a bound on what a spec makes of it)
        raise UnsupportedSignature(f"tensor descriptor type {ty!r}: a rank other than 1 to 5")
    return m.group(2), ndim, bool(m.group(1))


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


def _freeze(value):
    """A hashable copy of JSON-like data (lists -> tuples, dicts -> sorted item tuples)."""
    if isinstance(value, dict):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


_TYPE_INFO: dict = {}  # type string -> (kind, struct code, storage, alignment, size read, read offset)


def _type_info(ty):
    """How a parameter of type `ty` is stored (None for a type the launcher does not know)."""
    info = _TYPE_INFO.get(ty)
    if info is None:
        if ty.startswith("*"):
            info = (POINTER, "Q", 8, 8, 8, 0)
        elif ty == "nvTmaDesc":
            info = (TENSORMAP, "128s", 128, 128, 128, 0)
        elif ty in SCALARS:
            code, storage, size, read = SCALARS[ty]
            info = (VALUE, code, storage, storage, size, read)
        else:
            return None
        _TYPE_INFO[ty] = info
    return info


_ARG_KINDS = {POINTER: "pointer", TENSORMAP: "tensormap", VALUE: "scalar"}
_new = tuple.__new__  # makes a Param or an Arg without NamedTuple's slower __new__ (planning is hot)
_CONSTEXPR = _new(Arg, ("constexpr", "constexpr", (), (), None))
_PADDING = {n: f"{n}x" for n in range(1, 128)}  # struct padding codes (alignments are at most 128)


class _Planner:
    """Assigns each parameter its offset, with natural alignment, as the arguments are walked."""

    def __init__(self, metas, tf32_flag):
        header = header_facts()
        self.params, self.fmt, self.offset = [], ["<", header.format], header.size
        self.metas, self.tf32_flag, self.desc_index = metas, tf32_flag, 0

    def add(self, path, suffix, ty) -> int:
        info = _TYPE_INFO.get(ty) or _type_info(ty)
        if info is None:
            raise UnsupportedSignature(f"parameter {_path_text(path)}{suffix} has an unknown type {ty!r}")
        kind, code, storage, align, size, read = info
        offset = self.offset
        pad = -offset % align
        if pad:
            self.fmt.append(_PADDING[pad])
            offset += pad
        self.fmt.append(code)
        self.offset = offset + storage
        self.params.append(_new(Param, (path, suffix, ty, kind, code, offset, size, offset + read)))
        return len(self.params) - 1

    def visit(self, path, ty) -> Arg:
        if ty.__class__ is str:
            if ty == "constexpr":
                return _CONSTEXPR
            if not ty.startswith("tensordesc"):
                i = self.add(path, "", ty)
                return _new(Arg, (_ARG_KINDS[self.params[i].kind], ty, (), (i,), None))
            return self.tensordesc(path, ty)
        if isinstance(ty, (tuple, list)):
            return Arg("tuple", tuple(_freeze(ty)), tuple(self.visit(path + (i,), t) for i, t in enumerate(ty)))
        raise UnsupportedSignature(f"parameter {_path_text(path)} has an unknown type {ty!r}")

    def tensordesc(self, path, ty) -> Arg:
        dtype, ndim, im2col = parse_tensordesc(ty)
        if im2col:
            raise UnsupportedSignature(f"parameter {_path_text(path)}: im2col tensor descriptors")
        meta = None
        if self.metas:
            if self.desc_index >= len(self.metas):
                raise UnsupportedSignature("fewer tensordesc_meta entries than descriptors")
            meta = self.metas[self.desc_index]
        self.desc_index += 1
        parts = tensordesc_param_types(dtype, ndim, bool(self.metas), self.tf32_flag)
        return Arg("tensordesc", ty, (), tuple(self.add(path, suffix, t) for suffix, t in parts),
                   TensorDesc(dtype, ndim, meta))


@functools.lru_cache(maxsize=4096)
def _layout(types: tuple, metas: tuple, tf32_flag: bool) -> Layout:
    planner = _Planner(metas, tf32_flag)
    visit, add = planner.visit, planner.add
    args = []
    for i, t in enumerate(types):  # a plain parameter here, the rest (constexprs, tuples, descriptors) by visit
        kind = _ARG_KINDS[_TYPE_INFO[t][0]] if t in _TYPE_INFO else None
        args.append(_new(Arg, (kind, t, (), (add((i,), "", t),), None)) if kind is not None else visit((i,), t))
    args = tuple(args)
    if metas and planner.desc_index != len(metas):
        raise UnsupportedSignature(f"{len(metas)} tensordesc_meta entries for {planner.desc_index} tensor descriptors")
    planner.add((), GLOBAL_SCRATCH, "*i8")
    planner.add((), PROFILE_SCRATCH, "*i8")
    fmt = planner.fmt
    fmt_all = "".join(fmt)
    fmt_before_scratch = "".join(fmt[:-2])  # the padding before the scratch pointers stays in
    return Layout((types, metas, tf32_flag), args, tuple(planner.params), fmt_all, fmt_before_scratch,
                  planner.offset)


def layout_for(types, tensordesc_meta=(), *, tf32_flag: bool) -> Layout:
    """The layout of a signature: `types` are the signature entries in argument order (tuples
    for tuple arguments), `tensordesc_meta` Triton's metadata entries (one per descriptor, in
    order of appearance, empty when the kernel does not use TMA for them), tf32_flag whether
    decomposed descriptors carry round_f32_to_tf32. Cached: equal signatures share one Layout."""
    types = tuple(types)
    if not tensordesc_meta and all(t.__class__ is str for t in types):  # the common case, cheaply
        return _layout(types, (), bool(tf32_flag))
    for i, (m, ty) in enumerate(zip(tensordesc_meta or (), _descriptor_types(types))):
        _, ndim, im2col = parse_tensordesc(ty)
        try:  # an entry Triton would not write (a newer field too): the stock launcher takes the kernel
            if not im2col:  # refused as such by the planner
                check_tensordesc_meta(m, f"tensordesc_meta[{i}]", ndim)
        except SpecError as e:
            raise UnsupportedSignature(str(e)) from None
    return _layout(_freeze(types), tuple(_freeze(m) for m in (tensordesc_meta or ())), bool(tf32_flag))


def _path_text(path) -> str:
    return "#" + "".join(f"[{i}]" for i in path) if path else "#"


def path_name(arg_names, path) -> str:
    """The display name of an argument path: "x", "t[1]", "nested[0][1]"."""
    if not path:
        return ""
    return arg_names[path[0]] + "".join(f"[{i}]" for i in path[1:])


# ---- constexpr values as data ----
# Tuples and lists in constexpr values and compile options nest at most this deep; a deeper one
# (or a list that holds itself) is refused before anything hashes, compares or encodes it.
MAX_CONSTANT_DEPTH = 32


def check_nesting(value, where: str) -> None:
    """TypeError where `value` nests tuples or lists deeper than MAX_CONSTANT_DEPTH; `where`
    names it in the message ("kernel 'k': parameter 'BLOCK'")."""
    todo = [(value, 1)]
    while todo:
        v, depth = todo.pop()
        if isinstance(v, (tuple, list)):
            if depth > MAX_CONSTANT_DEPTH:
                raise TypeError(f"{where}: tuples and lists nested more than {MAX_CONSTANT_DEPTH} deep "
                                "(or a list that contains itself) cannot be a constexpr or a compile option")
            todo.extend((x, depth + 1) for x in v)


def check_data_nesting(data, where: str) -> None:
    """SpecError where JSON data read from a file (an encoded constant, a compile option, a call
    form) nests lists deeper than MAX_CONSTANT_DEPTH: the rule check_nesting and encode_constant
    hold the tuples and lists these stand for to, applied when the file is read, so that nothing
    read is refused later when a call compares it. Objects add no level ({"tuple": [...]}, an
    encoded tuple, is one: its list)."""
    todo = [(data, 0)]
    while todo:
        v, depth = todo.pop()
        if isinstance(v, list):
            if depth >= MAX_CONSTANT_DEPTH:
                raise SpecError(f"{where}: tuples and lists nested more than {MAX_CONSTANT_DEPTH} deep (a constant "
                                "or a compile option may nest at most that deep)")
            todo.extend((x, depth + 1) for x in v)
        elif isinstance(v, dict):
            todo.extend((x, depth) for x in v.values())


def bounded(value):
    """The key of a constexpr tuple (or list): refused by check_nesting where it nests too deep to
    hash (hashing recurses in C; a tuple nested a million deep would exhaust its stack), else each
    item by class and value, so that (True, 4), (1, 4) and (1.0, 4), equal as tuples, key apart
    (Triton compiles each apart)."""
    check_nesting(value, "a constexpr")
    return _typed(value)


def _typed(value):
    if isinstance(value, (tuple, list)):
        return value.__class__, tuple([_typed(v) for v in value])
    return value.__class__, value


def _callable_key(value) -> str:
    """What Triton's cache key holds for a callable constexpr (compute_cache_key, 3.6 to 3.9): a
    JITCallable (a @triton.jit function, a constexpr function) by its cache_key, the hash of its
    source and what it depends on; any other object by str(), which for a Python function or a
    lambda names its address (so only that object matches, as in Triton)."""
    jit = sys.modules.get("triton.runtime.jit")  # a JITCallable exists only where Triton is imported
    jit_callable = getattr(jit, "JITCallable", None)
    if jit_callable is not None and isinstance(value, jit_callable):
        return value.cache_key
    return str(value)


def encode_constant(value, _depth: int = 0):
    """A constexpr value as JSON data. Plain numbers, bools, strings and None stand as they
    are; anything else is tagged, so that equal values encode equally and nothing decodes to
    code: {"dtype": "fp16"}, {"function": "module.qualname", "key": ...} (key: what Triton's
    cache key holds for it, _callable_key: two functions of one name are two constants unless
    Triton would compile them alike), {"tuple": [...]}, {"repr": "..."}.
    Nesting deeper than MAX_CONSTANT_DEPTH is a TypeError."""
    if _depth > MAX_CONSTANT_DEPTH:
        raise TypeError(f"a constant with tuples or lists nested more than {MAX_CONSTANT_DEPTH} deep "
                        "(or a list that contains itself)")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return operator.index(value)  # the int's own value, not a subclass's __int__
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, (tuple, list)):
        return {"tuple": [encode_constant(v, _depth + 1) for v in value]}
    inner = getattr(value, "value", None)  # tl.constexpr wraps a value
    if type(value).__name__ == "constexpr" and inner is not value:
        return encode_constant(inner, _depth + 1)
    if type(value).__name__ in ("dtype", "pointer_type", "block_type") and hasattr(value, "name"):
        return {"dtype": str(value)}
    fn = getattr(value, "fn", None)
    if fn is not None and hasattr(fn, "__qualname__"):  # a JITFunction
        return {"function": f"{fn.__module__}.{fn.__qualname__}", "key": _callable_key(value)}
    if callable(value) and hasattr(value, "__qualname__"):
        return {"function": f"{getattr(value, '__module__', '?')}.{value.__qualname__}", "key": _callable_key(value)}
    return {"repr": repr(value)}


def same_value(a, b) -> bool:
    """Whether two constexprs or compile options (values, or JSON data read back: a list for a
    tuple) are the same constant: encode_constant's, type-exact (4 and 4.0, 1 and True apart), as
    Triton's cache key tells them apart. The one rule of prepared launches and bundles."""
    return same_constant(encode_constant(a), encode_constant(b))


def show_constant(encoded) -> str:
    """An encoded constant for a message: a function by its name and the start of its key."""
    if isinstance(encoded, dict) and set(encoded) == {"function", "key"}:
        key = str(encoded["key"])
        return f"{encoded['function']} (Triton's key {key[:16]}{'...' if len(key) > 16 else ''})"
    return repr(encoded)


def _constant_key(encoded):
    """A hashable, type-exact form of an encoded constant (1, 1.0 and True stay apart)."""
    if isinstance(encoded, dict):
        return ("dict",) + tuple(sorted((k, _constant_key(v)) for k, v in encoded.items()))
    if isinstance(encoded, list):
        return ("list",) + tuple(_constant_key(v) for v in encoded)
    return (type(encoded).__name__, encoded)


def same_constant(a, b) -> bool:
    """Whether two encoded constants are the same value of the same type."""
    return _constant_key(a) == _constant_key(b)


# ---- the spec ----
@dataclass(frozen=True)
class LaunchSpec:
    """How one compiled kernel is launched (see the module docstring)."""

    kernel: str
    arg_names: tuple
    layout: Layout
    num_warps: int
    num_ctas: int = 1
    cluster_dims: tuple = (1, 1, 1)
    shared: int = 0
    warp_size: int = 32
    launch_cooperative_grid: bool = False
    launch_pdl: bool = False
    global_scratch: tuple = (0, 1)  # (bytes per program, alignment)
    profile_scratch: tuple = (0, 1)
    arch: int | None = None  # compute capability the cubin targets, e.g. 90 (None: unknown)
    conventions: Conventions = Conventions()
    # What the compiler assumed; None where it is not known (IR sources).
    aligned: tuple | None = ()  # argument paths known divisible by 16 (pointers: data_ptr())
    constants: tuple | None = ()  # (path, encoded value) of every constexpr

    # -- derived views --
    @property
    def args(self):
        return self.layout.args

    @property
    def params(self):
        return self.layout.params

    @property
    def arity(self) -> int:
        return len(self.layout.args)

    @property
    def packed_metadata(self) -> tuple:
        """(num_warps, num_ctas, shared): what Triton passes a launcher as kernel_metadata."""
        return (self.num_warps, self.num_ctas, self.shared)

    @functools.cached_property
    def shape_key(self) -> "ShapeKey":
        """What launching depends on: everything but names and the compiler's assumptions.
        Kernels with equal shape keys share one launcher class and its generated code."""
        return ShapeKey((self.layout, self.num_warps, self.num_ctas, self.cluster_dims, self.shared,
                         self.warp_size, self.launch_cooperative_grid, self.launch_pdl,
                         self.global_scratch, self.profile_scratch, self.conventions))

    def param_name(self, index: int) -> str:
        p = self.layout.params[index]
        return path_name(self.arg_names, p.path) + p.suffix if p.path else p.suffix

    def arg_name(self, path) -> str:
        return path_name(self.arg_names, path)

    def constant(self, path):
        """The encoded value of the constexpr at `path` (KeyError if there is none)."""
        for p, v in self.constants or ():
            if p == tuple(path):
                return v
        raise KeyError(path)

    def derive(self, **changes) -> "LaunchSpec":
        """A copy with some fields changed, for fields that leave the shape as it is (kernel,
        arg_names, arch, aligned, constants): cheaper than dataclasses.replace, whose __init__
        the launch path of a kernel of a seen shape cannot afford."""
        if not changes.keys() <= _NOT_SHAPE:
            raise TypeError(f"derive() changes only {sorted(_NOT_SHAPE)}, not {sorted(changes.keys() - _NOT_SHAPE)}")
        spec = object.__new__(LaunchSpec)
        spec.__dict__.update(self.__dict__)
        spec.__dict__.update(changes)
        return spec

    # -- JSON --
    def to_json(self) -> dict:
        """The spec as JSON data (see `from_json`)."""
        def arg_json(name, arg):
            return {"name": name, "type": _unfreeze(arg.type)}

        descs = [a.desc.meta for _, a in leaves(self.layout.args) if a.kind == "tensordesc" and a.desc.tma is not None]
        return {
            "format": SPEC_FORMAT, "version": SPEC_VERSION,
            "kernel": self.kernel,
            "args": [arg_json(n, a) for n, a in zip(self.arg_names, self.layout.args)],
            "tensordesc_meta": descs,
            "params": [{"name": self.param_name(i), "type": p.type, "kind": p.kind, "offset": p.offset,
                        "size": p.size, "read_at": p.read_at} for i, p in enumerate(self.layout.params)],
            "packed_size": self.layout.size,
            "launch": {"num_warps": self.num_warps, "num_ctas": self.num_ctas,
                       "cluster_dims": list(self.cluster_dims), "shared": self.shared,
                       "warp_size": self.warp_size, "cooperative_grid": self.launch_cooperative_grid,
                       "pdl": self.launch_pdl},
            "scratch": {"global": {"size": self.global_scratch[0], "align": self.global_scratch[1]},
                        "profile": {"size": self.profile_scratch[0], "align": self.profile_scratch[1]}},
            "target": {"backend": "cuda", "arch": self.arch},
            "conventions": dataclasses.asdict(self.conventions),
            "assumptions": None if self.aligned is None or self.constants is None else {
                "divisible_by_16": [list(p) for p in self.aligned],
                "constexprs": [[list(p), v] for p, v in self.constants]},
        }

    @classmethod
    def from_json(cls, data) -> "LaunchSpec":
        """Read a spec written by `to_json`. The layout is planned again from the arguments and
        must agree with the recorded parameters, so a spec that contradicts itself (an offset,
        a size, a kind edited) is refused with a SpecError naming the field."""
        return _spec_from_json(data)


_NOT_SHAPE = frozenset({"kernel", "arg_names", "arch", "aligned", "constants"})


class ShapeKey:
    """A spec's shape as a dictionary key whose hash is computed once (specs derived from one
    template share it, so a kernel of a seen shape finds its launcher class without hashing)."""

    __slots__ = ("key", "_hash")

    def __init__(self, key: tuple):
        self.key, self._hash = key, hash(key)

    def __eq__(self, other):
        return self is other or isinstance(other, ShapeKey) and self._hash == other._hash and self.key == other.key

    def __hash__(self):
        return self._hash


def leaves(args, prefix=()):
    """(path, Arg) of every argument of the tree `args` that is not a tuple, depth first in
    parameter order: the one walk over an argument layout (constexprs included; a tuple's items
    at path + (j,))."""
    for i, a in enumerate(args):
        if a.kind == "tuple":
            yield from leaves(a.children, prefix + (i,))
        else:
            yield prefix + (i,), a


def _unfreeze(ty):
    return [_unfreeze(t) for t in ty] if isinstance(ty, tuple) else ty


# ---- reading JSON, trusting nothing ----
def _field(data, key, kind, where):
    if not isinstance(data, dict) or key not in data:
        raise SpecError(f"{where}: missing field {key!r}")
    value = data[key]
    if kind is int and (type(value) is not int):
        raise SpecError(f"{where}.{key}: expected an integer, got {value!r}")
    if kind is bool and type(value) is not bool:
        raise SpecError(f"{where}.{key}: expected true or false, got {value!r}")
    if kind in (str, list, dict) and not isinstance(value, kind):
        raise SpecError(f"{where}.{key}: expected a {kind.__name__}, got {type(value).__name__}")
    return value


def _in_range(value, lo, hi, where):
    if not lo <= value <= hi:
        raise SpecError(f"{where}: {value} is out of range [{lo}, {hi}]")
    return value


def short_repr(value) -> str:
    """A value as a message shows it: its repr, cut to 60 characters (a hand-made object whose own
    repr raises: its class)."""
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def check_text(text: str, where: str) -> None:
    """The one rule for text read from a file that messages and `inspect` print: printable
    characters only (str.isprintable: no escape sequences, line breaks or lone surrogates)."""
    if not text.isprintable():
        raise SpecError(f"{where}: {short_repr(text)} holds characters that are not printable")


def pointer_type_ok(ty: str) -> bool:
    """Whether `ty` is a pointer type Triton writes: "*", or "*k" for a const pointer, then an
    element type of TYPE_NAMES (or another pointer type)."""
    return _POINTER_TYPE.fullmatch(ty) is not None


_POINTER_TYPE = re.compile(r"(?:\*k?)+(?:" + "|".join(sorted(TYPE_NAMES)) + ")")  # no type name starts with k


def _types_from_json(ty, where):
    if isinstance(ty, list):
        return tuple(_types_from_json(t, f"{where}[{i}]") for i, t in enumerate(ty))
    if not isinstance(ty, str):
        raise SpecError(f"{where}: a type must be a string or a list, got {ty!r}")
    check_text(ty, where)
    if ty.startswith("*") and not pointer_type_ok(ty):
        raise SpecError(f"{where}: {ty!r} is not a pointer type (a '*' and one of Triton's type names: "
                        f"{', '.join(sorted(TYPE_NAMES))})")
    if ty.startswith("tensordesc"):
        m = _TENSORDESC.match(ty)
        if m and m.group(2) not in TYPE_NAMES:
            raise SpecError(f"{where}: {ty!r} names no Triton element type")
    return ty


# The fields of Triton's tensordesc_meta entries (3.6 to 3.9: is_im2col from 3.9)
_META_KEYS = frozenset(("block_size", "elem_size", "elem_type", "fp4_padded", "is_im2col", "swizzle"))


def check_tensordesc_meta(m, where: str, ndim: int | None = None) -> None:
    """The one rule for a tensordesc_meta entry (Triton's, a bundle's, a hand-planned spec's):
    an object of Triton's fields (_META_KEYS; fp4_padded and is_im2col optional) in the ranges
    the encoder takes, its block one size in [1, 256] per dimension (`ndim` of them where the
    descriptor is known, else 1 to 5). SpecError naming the field (`where`: the entry's place)."""
    if not isinstance(m, dict):
        raise SpecError(f"{where}: expected an object, got {type(m).__name__}")
    extra = set(m) - _META_KEYS
    if extra:
        raise SpecError(f"{where}: unknown fields {sorted(map(str, extra))!r} (it holds {', '.join(sorted(_META_KEYS))})")
    _in_range(_field(m, "swizzle", int, where), 0, 6, f"{where}.swizzle")  # CUtensorMapSwizzle
    if _field(m, "elem_size", int, where) not in (1, 2, 4, 8):
        raise SpecError(f"{where}.elem_size: {m['elem_size']!r} bytes is not 1, 2, 4 or 8")
    _in_range(_field(m, "elem_type", int, where), 0, 15, f"{where}.elem_type")  # Triton's TMA element types
    for key in ("fp4_padded", "is_im2col"):
        if key in m:
            _field(m, key, bool, where)
    if m.get("is_im2col"):
        raise SpecError(f"{where}.is_im2col: im2col tensor descriptors are not supported")
    block = m.get("block_size")
    ranks = (ndim,) if ndim is not None else range(1, 6)
    if not isinstance(block, (list, tuple)) or len(block) not in ranks or not all(type(b) is int and 0 < b <= 256 for b in block):
        _field(m, "block_size", object, where)  # missing: says so
        sizes = f"{ndim}" if ndim is not None else "1 to 5"
        raise SpecError(f"{where}.block_size: {short_repr(block)} is not {sizes} sizes in [1, 256]")


def _descriptor_types(types):
    """The tensor-descriptor entries of a signature, in the order the planner meets them."""
    for t in types:
        if t.__class__ is str:
            if t.startswith("tensordesc"):
                yield t
        elif isinstance(t, (tuple, list)):
            yield from _descriptor_types(t)


def _path_from_json(p, arity, where):
    if not isinstance(p, list) or not p or not all(type(i) is int and i >= 0 for i in p) or p[0] >= arity:
        raise SpecError(f"{where}: {p!r} is not an argument path")
    return tuple(p)


def _check_assumption_paths(layout, aligned, constants, where) -> None:
    """Each recorded assumption names an argument it can hold for: a divisibility a pointer or an
    integer, a constexpr value a constexpr, each once. A path naming no such argument would be
    silently never checked."""
    kinds = dict(leaves(layout.args))
    for i, path in enumerate(aligned):
        arg = kinds.get(path)
        if arg is None or not (arg.kind == "pointer" or arg.kind == "scalar" and arg.type in INT_RANGES):
            raise SpecError(f"{where}.divisible_by_16[{i}]: {list(path)} is not a pointer or integer argument")
    if len(set(aligned)) != len(aligned):
        raise SpecError(f"{where}.divisible_by_16: a path appears twice")
    seen = set()
    for i, (path, _) in enumerate(constants):
        arg = kinds.get(path)
        if arg is None or arg.kind != "constexpr":
            raise SpecError(f"{where}.constexprs[{i}]: {list(path)} is not a constexpr argument")
        if path in seen:
            raise SpecError(f"{where}.constexprs[{i}]: {list(path)} appears twice")
        seen.add(path)


def _spec_from_json(data) -> LaunchSpec:
    where = "spec"
    if not isinstance(data, dict):
        raise SpecError(f"{where}: expected a JSON object, got {type(data).__name__}")
    if data.get("format") != SPEC_FORMAT:
        raise SpecError(f"{where}.format: expected {SPEC_FORMAT!r}, got {data.get('format')!r}")
    if type(data.get("version")) is not int or data.get("version") != SPEC_VERSION:  # not true, not 1.0
        raise SpecError(f"{where}.version: this launcher reads version {SPEC_VERSION}, got {data.get('version')!r}")
    kernel = _field(data, "kernel", str, where)
    check_text(kernel, f"{where}.kernel")
    args = _field(data, "args", list, where)
    names, types = [], []
    for i, a in enumerate(args):
        names.append(_field(a, "name", str, f"{where}.args[{i}]"))
        check_text(names[-1], f"{where}.args[{i}].name")
        types.append(_types_from_json(_field(a, "type", object, f"{where}.args[{i}]"), f"{where}.args[{i}].type"))
    conv = _field(data, "conventions", dict, where)
    fields = {f.name for f in dataclasses.fields(Conventions)}
    if set(conv) != fields:
        raise SpecError(f"{where}.conventions: expected the fields {sorted(fields)}, got {sorted(conv)}")
    conventions = Conventions(**{k: _field(conv, k, bool, f"{where}.conventions") for k in fields})
    metas = _field(data, "tensordesc_meta", list, where)
    for i, m in enumerate(metas):
        check_tensordesc_meta(m, f"{where}.tensordesc_meta[{i}]")
    try:
        layout = layout_for(types, metas, tf32_flag=conventions.tensordesc_tf32_flag)
    except UnsupportedSignature as e:
        raise SpecError(f"{where}.args: {e}") from None
    except (TypeError, ValueError, struct.error) as e:
        raise SpecError(f"{where}.args: {e}") from None
    header = header_facts()
    if layout.size - header.size > header.max_param_bytes:
        raise SpecError(f"{where}: the parameters take {layout.size - header.size} bytes; CUDA allows at most "
                        f"{header.max_param_bytes}")
    spec_names = tuple(names)
    recorded = _field(data, "params", list, where)
    if len(recorded) != len(layout.params):
        raise SpecError(f"{where}.params: {len(recorded)} parameters recorded, the arguments make {len(layout.params)}")
    probe = LaunchSpec(kernel, spec_names, layout, num_warps=1)
    for i, (r, p) in enumerate(zip(recorded, layout.params)):
        planned = {"name": probe.param_name(i), "type": p.type, "kind": p.kind, "offset": p.offset,
                   "size": p.size, "read_at": p.read_at}
        if not isinstance(r, dict) or set(r) != set(planned):
            raise SpecError(f"{where}.params[{i}]: expected the fields {sorted(planned)}")
        for key, value in planned.items():
            if r[key] != value or type(r[key]) is not type(value):
                raise SpecError(f"{where}.params[{i}].{key}: {r[key]!r} recorded, {value!r} when planned "
                                f"from the arguments")
    if _field(data, "packed_size", int, where) != layout.size:
        raise SpecError(f"{where}.packed_size: {data['packed_size']} recorded, {layout.size} when planned")
    launch = _field(data, "launch", dict, where)
    w = f"{where}.launch"
    num_warps = _in_range(_field(launch, "num_warps", int, w), 1, 64, f"{w}.num_warps")
    num_ctas = _in_range(_field(launch, "num_ctas", int, w), 1, 64, f"{w}.num_ctas")
    cluster = _field(launch, "cluster_dims", list, w)
    if len(cluster) != 3 or not all(type(c) is int and 1 <= c <= 64 for c in cluster):
        raise SpecError(f"{w}.cluster_dims: {cluster!r} is not three sizes in [1, 64]")
    if cluster != [num_ctas, 1, 1]:  # what launch_attributes launches; Triton 3.6-3.9 cluster CTAs along x only
        raise SpecError(f"{w}.cluster_dims: {cluster!r}, but a kernel of num_ctas {num_ctas} is launched in "
                        f"clusters of [{num_ctas}, 1, 1]")
    shared = _in_range(_field(launch, "shared", int, w), 0, (1 << 32) - 1, f"{w}.shared")
    warp_size = _in_range(_field(launch, "warp_size", int, w), 1, 64, f"{w}.warp_size")
    if num_warps * warp_size > 4096:
        raise SpecError(f"{w}: {num_warps} warps of {warp_size} threads is more than a block can have")
    coop = _field(launch, "cooperative_grid", bool, w)
    pdl = _field(launch, "pdl", bool, w)
    scratch = _field(data, "scratch", dict, where)

    def scratch_of(kind):
        s = _field(scratch, kind, dict, f"{where}.scratch")
        size = _in_range(_field(s, "size", int, f"{where}.scratch.{kind}"), 0, (1 << 40), f"{where}.scratch.{kind}.size")
        align = _in_range(_field(s, "align", int, f"{where}.scratch.{kind}"), 1, 1 << 20, f"{where}.scratch.{kind}.align")
        if align & (align - 1):
            raise SpecError(f"{where}.scratch.{kind}.align: {align} is not a power of two")
        return (size, align)

    target = _field(data, "target", dict, where)
    if target.get("backend") != "cuda":
        raise SpecError(f"{where}.target.backend: expected 'cuda', got {target.get('backend')!r}")
    arch = target.get("arch")
    if arch is not None and (type(arch) is not int or not 10 <= arch <= 1000):
        raise SpecError(f"{where}.target.arch: expected a compute capability such as 90, got {arch!r}")
    assumptions = data.get("assumptions", None)
    aligned = constants = None
    if assumptions is not None:
        w = f"{where}.assumptions"
        aligned = tuple(_path_from_json(p, len(types), f"{w}.divisible_by_16[{i}]")
                        for i, p in enumerate(_field(assumptions, "divisible_by_16", list, w)))
        constants = []
        for i, item in enumerate(_field(assumptions, "constexprs", list, w)):
            if not isinstance(item, list) or len(item) != 2:
                raise SpecError(f"{w}.constexprs[{i}]: expected [path, value]")
            check_data_nesting(item[1], f"{w}.constexprs[{i}]")
            constants.append((_path_from_json(item[0], len(types), f"{w}.constexprs[{i}]"), item[1]))
        constants = tuple(constants)
        _check_assumption_paths(layout, aligned, constants, w)
    return LaunchSpec(kernel, spec_names, layout, num_warps=num_warps, num_ctas=num_ctas,
                      cluster_dims=tuple(cluster), shared=shared, warp_size=warp_size,
                      launch_cooperative_grid=coop, launch_pdl=pdl,
                      global_scratch=scratch_of("global"), profile_scratch=scratch_of("profile"),
                      arch=arch, conventions=conventions, aligned=aligned, constants=constants)


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
    if ty in BOOLS:
        return f"a bool or 0/1 for {ty}"
    if ty in INT_RANGES:
        lo, hi = INT_RANGES[ty]
        return f"an int in [{lo}, {hi}] for {ty}"
    if ty in FLOATS:
        return f"a real number for {ty}"
    return ty
