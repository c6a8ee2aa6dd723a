"""Generated kernels and arguments for tests/test_fuzz_launch_args.py, and a reference packer.

Signatures are built the way Triton hands them to `driver.active.launcher_cls`: a `src` with
`.signature` (name -> type string, or nested tuples of them, "constexpr" included) and maybe
`.fn.arg_names`, and a `metadata` with the fields CudaLauncher reads. They are synthetic
(SimpleNamespace), so no Triton compile is needed per case.

The reference packer here is written from the rules, apart from launcher/spec.py and
launcher/cuda_launcher.py: drop constexprs, flatten tuples depth first, one entry per kernel
parameter (scalar bytes from tests/reference_packer.py), then the two scratch pointers.
"""
from __future__ import annotations

import functools
import math
import types
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from reference_packer import reference_bytes

# --------------------------------------------------------------------------------------------
# Types

# (lo, hi) of every integer type, written out here rather than taken from the package.
INT_RANGE = {
    "i1": (0, 1), "u1": (0, 1),
    "i8": (-2**7, 2**7 - 1), "u8": (0, 2**8 - 1),
    "i16": (-2**15, 2**15 - 1), "u16": (0, 2**16 - 1),
    "i32": (-2**31, 2**31 - 1), "u32": (0, 2**32 - 1),
    "i64": (-2**63, 2**63 - 1), "u64": (0, 2**64 - 1),
}
INT_TYPES = tuple(INT_RANGE)
BOOL_TYPES = ("i1", "u1")
FLOAT_TYPES = ("fp16", "bf16", "fp32", "f32", "fp64")
POINTER_TYPES = ("*fp32", "*fp16", "*bf16", "*fp64", "*i8", "*i32", "*i64", "*u8", "*i1")
SCALAR_TYPES = INT_TYPES + FLOAT_TYPES

# Finite doubles at or above these round to infinity in the target format (round half to
# even: the largest finite value has an odd significand, so the halfway point goes up).
FP16_OVERFLOW = 65520.0  # 65504 + half an ulp (32 / 2 = 16)
FP32_OVERFLOW = 2.0**128 - 2.0**103  # FLT_MAX + half an ulp (2**104 / 2)

# constexpr appears several times so that it is drawn often, in and out of tuples; () is an
# empty tuple (no parameters, but the argument must still be an empty sequence).
_LEAVES = SCALAR_TYPES + POINTER_TYPES + ("constexpr",) * 4 + ((),)


def is_pointer(ty) -> bool:
    return isinstance(ty, str) and ty.startswith("*")


def arg_type(depth: int = 3):
    """One signature entry: a type string, or a tuple (up to 3 wide) nested up to `depth`."""
    if depth == 0:
        return st.sampled_from(_LEAVES[:-1])  # () would be one level deeper
    leaf = st.sampled_from(_LEAVES)
    return st.one_of(leaf, st.lists(arg_type(depth - 1), min_size=1, max_size=3).map(tuple))


KERNEL_NAMES = ("add_kernel", "fused_attention", "_matmul_fwd", "k", "reduce_2d", "KernelX")
ARG_NAMES = ("x", "y", "out", "n", "t", "ptrs", "scale", "BLOCK", "a_ptr", "b", "stride_0",
             "flag", "eps", "M", "N", "K", "pair", "nested", "acc", "seed", "z", "idx")

# How the launcher learns display names (launcher/cuda_launcher.py:_arg_names):
#   "ast": signature keys are names and src.fn.arg_names lists them (ASTSource);
#   "keys": signature keys are names, no src.fn;
#   "ir": signature keys are positions, no src.fn (shown as "#0", "#1", ...);
#   "mismatch": src.fn.arg_names has a different length, so the keys are used.
NAMING = ("ast", "keys", "ir", "mismatch")


@dataclass(frozen=True)
class Kernel:
    name: str
    keys: tuple
    display: tuple  # the name each argument has in messages
    types: tuple  # signature entries, in order
    naming: str
    global_scratch: int = 0
    profile_scratch: int = 0
    cooperative: bool = False
    pdl: bool = False

    @property
    def arity(self) -> int:
        return len(self.types)

    def src(self):
        src = types.SimpleNamespace(signature=dict(zip(self.keys, self.types)))
        if self.naming == "ast":
            src.fn = types.SimpleNamespace(arg_names=list(self.keys))
        elif self.naming == "mismatch":
            src.fn = types.SimpleNamespace(arg_names=list(self.keys) + ["extra"])
        return src

    def metadata(self):
        return types.SimpleNamespace(
            name=self.name, tensordesc_meta=None,
            global_scratch_size=self.global_scratch, global_scratch_align=128,
            profile_scratch_size=self.profile_scratch, profile_scratch_align=8,
            launch_cooperative_grid=self.cooperative, launch_pdl=self.pdl,
            instrumentation_mode="", num_ctas=1, num_warps=4, shared=0, warp_size=32)


@st.composite
def kernels(draw, max_args: int = 8, depth: int = 3, scratch: bool = True):
    n = draw(st.integers(0, max_args))
    names = draw(st.lists(st.sampled_from(ARG_NAMES), min_size=n, max_size=n, unique=True))
    tys = tuple(draw(st.lists(arg_type(depth), min_size=n, max_size=n)))
    naming = draw(st.sampled_from(NAMING))
    if naming == "ir":
        keys = tuple(range(n))
        display = tuple(f"#{i}" for i in keys)
    else:
        keys = display = tuple(names)
    sizes = st.sampled_from((0, 0, 0, 256)) if scratch else st.just(0)
    return Kernel(draw(st.sampled_from(KERNEL_NAMES)), keys, display, tys, naming,
                  draw(sizes), draw(sizes), draw(st.booleans()), draw(st.booleans()))


# --------------------------------------------------------------------------------------------
# Argument objects


class FakeTensor:
    """A tensor stand-in: anything with data_ptr() is a pointer argument (no torch on CI)."""

    def __init__(self, ptr):
        self.ptr = ptr

    def data_ptr(self):
        return self.ptr

    def __repr__(self):
        return f"FakeTensor({self.ptr:#x})"


class CpuTensor:
    """A CPU tensor stand-in: tensor-like, but with no usable data_ptr().

    Without torch this only models the Python-side refusal (a TypeError). The real check of a
    CPU tensor's address (the pointer is not device-accessible) happens in C, on a GPU only.
    """

    device = "cpu"
    shape = (4,)
    dtype = "float32"

    def __repr__(self):
        return "CpuTensor()"


class RaisingTensor:
    """data_ptr() raises (a freed storage, a meta tensor, ...)."""

    def __init__(self, exc):
        self.exc = exc

    def data_ptr(self):
        raise self.exc("data_ptr failed")

    def __repr__(self):
        return f"RaisingTensor({self.exc.__name__})"


class GarbageTensor:
    """data_ptr() returns something that is not an int."""

    def __init__(self, value):
        self.value = value

    def data_ptr(self):
        return self.value

    def __repr__(self):
        return f"GarbageTensor({self.value!r})"


class IndexLike:
    """Not an int, but with __index__ (like numpy integers)."""

    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v

    def __repr__(self):
        return f"IndexLike({self.v})"


class FloatLike:
    def __init__(self, v):
        self.v = v

    def __float__(self):
        return self.v

    def __repr__(self):
        return f"FloatLike({self.v})"


class RaisingIndex:
    def __init__(self, exc):
        self.exc = exc

    def __index__(self):
        raise self.exc("__index__ failed")

    def __repr__(self):
        return f"RaisingIndex({self.exc.__name__})"


class RaisingFloat:
    def __init__(self, exc):
        self.exc = exc

    def __float__(self):
        raise self.exc("__float__ failed")

    def __repr__(self):
        return f"RaisingFloat({self.exc.__name__})"


class RaisingDataPtrAttribute:
    """Reading the data_ptr attribute itself raises (a property)."""

    def __init__(self, exc):
        self.exc = exc

    @property
    def data_ptr(self):
        raise self.exc("no storage")

    def __repr__(self):
        return f"RaisingDataPtrAttribute({self.exc.__name__})"


class IntSubclass(int):
    def __repr__(self):
        return f"IntSubclass({int(self)})"


HUGE_INT = 10**5000  # too many digits for str() (Python's int_max_str_digits, 4300)

EXCEPTIONS = (RuntimeError, ValueError, TypeError, KeyError, AttributeError, IndexError,
              OverflowError, ZeroDivisionError, NotImplementedError)


# --------------------------------------------------------------------------------------------
# Good values


def _floats_that_fit(ty):
    if ty == "fp64":
        return st.one_of(st.floats(), st.integers(-2**1023, 2**1023))
    if ty == "fp16":
        bound, width, top = FP16_OVERFLOW, 16, 65519
    else:
        bound, width, top = FP32_OVERFLOW, 32, 2**128 - 2**104
    edges = [math.inf, -math.inf, math.nan, -math.nan, 0.0, -0.0, bound * 0.9999999999999999,
             -bound * 0.9999999999999999, 5e-324, 2.0**-149, 2.0**-24, 2.0**-25]
    return st.one_of(
        st.floats(width=width),  # every value of the format, nan and inf included
        st.floats(-bound, bound, exclude_min=True, exclude_max=True),  # rounded on the way
        st.integers(-top, top),
        st.sampled_from(edges),
        st.booleans(),
    )


@functools.lru_cache(maxsize=None)
def good_leaf(ty):
    if is_pointer(ty):
        ptr = st.integers(0, 2**64 - 1)
        return st.one_of(st.none(), ptr, st.builds(FakeTensor, ptr),
                         st.sampled_from([0, 2**64 - 1, FakeTensor(0), FakeTensor(2**64 - 1)]))
    if ty in BOOL_TYPES:
        return st.sampled_from([True, False, 0, 1])
    if ty in INT_RANGE:
        lo, hi = INT_RANGE[ty]
        return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, 0]))
    if ty in FLOAT_TYPES:
        return _floats_that_fit(ty)
    if ty == "constexpr":
        return anything()  # ignored by the launcher, whatever it is
    raise AssertionError(ty)


# Strategies are cached per type: hypothesis validates a new strategy object on its first draw,
# which costs far more than the draw itself.
@functools.lru_cache(maxsize=None)
def good_value(ty):
    if isinstance(ty, tuple):
        items = st.tuples(*[good_value(t) for t in ty])
        return st.one_of(items, items.map(list))  # any sequence of the right length
    return good_leaf(ty)


def good_args(kernel: Kernel):
    return _good_args(kernel.types)


@functools.lru_cache(maxsize=4096)
def _good_args(types_):
    return st.tuples(*[good_value(t) for t in types_]).map(list)


@st.composite
def _launch_bases(draw):
    """(gridX, gridY, gridZ, stream, function, kernel_metadata): valid, else arbitrary."""
    grid = st.integers(0, 2**31 - 1) | st.integers(0, 4)
    return (draw(grid), draw(grid), draw(grid), draw(st.integers(0, 2**64 - 1)),
            draw(st.integers(0, 2**64 - 1)),
            (draw(st.sampled_from([1, 4, 8])), 1, draw(st.integers(0, 232448))))


LAUNCH_BASES = _launch_bases()


def launch_bases():
    return LAUNCH_BASES


# --------------------------------------------------------------------------------------------
# Arbitrary values (for the nothing-crashes property and for constexprs)


@functools.lru_cache(maxsize=None)
def anything():
    """A mix of Python objects, valid and not: what a caller might pass by mistake."""
    exc = st.sampled_from(EXCEPTIONS)
    return st.one_of(
        st.none(), st.booleans(), st.integers(), st.integers(-2**200, 2**200),
        st.floats(), st.text(max_size=4), st.binary(max_size=4),
        st.lists(st.integers(), max_size=4), st.tuples(st.integers(), st.floats()),
        st.dictionaries(st.integers(), st.integers(), max_size=3),
        st.frozensets(st.integers(), max_size=3), st.complex_numbers(),
        st.decimals(), st.fractions(),
        st.sampled_from([object(), object, int, len, Ellipsis, NotImplemented, range(3),
                         np.int64(3), np.uint64(2**64 - 1), np.float32(1.5), np.float64("nan"),
                         np.bool_(True), np.array([1, 2]), np.array(5), np.zeros((2, 2)),
                         CpuTensor(), b"\x00" * 8, bytearray(b"ab"), "0x1000", "cuda:0",
                         2**64, -1, 2**1024]),
        # built, not sampled: hypothesis shows a strategy's elements, and str() fails on these
        st.builds(lambda negative: -HUGE_INT if negative else HUGE_INT, st.booleans()),
        st.builds(FakeTensor, st.integers(-2**70, 2**70)),
        st.builds(RaisingTensor, exc),
        st.builds(GarbageTensor, st.sampled_from(["0x1000", 1.0, None, b"", [1], object()])),
        st.builds(IndexLike, st.integers(-2**70, 2**70)),
        st.builds(FloatLike, st.floats()),
        st.builds(RaisingIndex, exc),
        st.builds(RaisingFloat, exc),
        st.builds(RaisingDataPtrAttribute, exc),
        st.builds(IntSubclass, st.integers(-2**70, 2**70)),
    )


# --------------------------------------------------------------------------------------------
# The reference packer


class _NanFp16:
    """The fp16 parameter of a NaN: any NaN of that sign.

    Triton packs fp16 with PyFloat_Pack2, which keeps the sign but not the payload of a NaN
    (CPython 3.11 writes 0x7E00); numpy's float16 cast keeps the payload. Only "a NaN of this
    sign" is common to both, so that is what is compared.
    """

    def __init__(self, negative):
        self.negative = negative

    def __eq__(self, other):
        if not isinstance(other, bytes) or len(other) != 2:
            return NotImplemented
        bits = int.from_bytes(other, "little")
        is_nan = (bits & 0x7C00) == 0x7C00 and (bits & 0x3FF) != 0
        return is_nan and bool(bits >> 15) == self.negative

    def __repr__(self):
        return f"<fp16 NaN, {'-' if self.negative else '+'}>"


class _Any:
    """A parameter whose bytes are not checked."""

    def __eq__(self, other):
        return True

    def __repr__(self):
        return "<any>"


ANY_BYTES = _Any()


def leaf_bytes(ty: str, value):
    """The bytes a kernel parameter of type `ty` receives for a (valid) value."""
    if is_pointer(ty):
        if value is None:
            ptr = 0
        elif type(value) is int:
            ptr = value
        else:
            ptr = value.data_ptr()
        return reference_bytes(ty, ptr)
    if ty in INT_RANGE:
        return reference_bytes(ty, int(value))
    x = float(value)
    if ty == "fp16" and math.isnan(x):
        return _NanFp16(math.copysign(1.0, x) < 0)
    return reference_bytes(ty, x)


def reference_params(types_, args, skip=None):
    """Every kernel parameter of one call, constexprs dropped, tuples flattened depth first.

    skip: a path (tuple of indices) whose parameters are not checked (ANY_BYTES).
    """
    out = []

    def visit(ty, value, path):
        unchecked = skip is not None and path[:len(skip)] == skip
        if isinstance(ty, tuple):
            for i, t in enumerate(ty):
                visit(t, None if unchecked else value[i], path + (i,))
        elif ty != "constexpr":
            out.append(ANY_BYTES if unchecked else leaf_bytes(ty, value))

    for i, (ty, value) in enumerate(zip(types_, args)):
        visit(ty, value, (i,))
    return out


def reference_dry_run(kernel: Kernel, args, scratch_ptrs=(0, 0), skip=None):
    return reference_params(kernel.types, args, skip) + [
        p.to_bytes(8, "little") for p in scratch_ptrs]


# --------------------------------------------------------------------------------------------
# Sites: places in an argument list where one value can be changed


@dataclass(frozen=True)
class Site:
    path: tuple  # indices: (arg, item, item, ...)
    display: str  # "t[1][0]": how messages name it
    type: object  # the signature entry there


def sites(kernel: Kernel):
    out = []

    def visit(ty, path, display):
        out.append(Site(path, display, ty))
        if isinstance(ty, tuple):
            for i, t in enumerate(ty):
                visit(t, path + (i,), f"{display}[{i}]")

    for i, (ty, name) in enumerate(zip(kernel.types, kernel.display)):
        visit(ty, (i,), name)
    return out


def replace(args, path, value):
    """A copy of `args` with the item at `path` replaced (containers along it become lists)."""
    args = list(args)
    if len(path) == 1:
        args[path[0]] = value
    else:
        args[path[0]] = replace(args[path[0]], path[1:], value)
    return args


def get(args, path):
    for i in path:
        args = args[i]
    return args
