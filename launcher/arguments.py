"""Every rule a launch argument must follow, in one place: the plan-driven packer.

`flat_values(spec, args, encoders)` walks a spec's argument tree next to the arguments and
converts each one into what its parameters receive, raising an exception that names the kernel,
the parameter and what was expected: TypeError for a wrong count or type, OverflowError for a
value out of range, ValueError for a wrong tuple length or an unusable value.

It serves twice: a launcher's first launches go through it (no code to generate for a kernel
launched once), and when the generated fast path (launcher.codegen) fails, `diagnose` walks the
arguments with it to say which one is bad. The fast path follows exactly these rules, faster;
the tests hold the two to the same bytes and the same refusals.
"""
from __future__ import annotations

import collections.abc
import operator
import struct

from launcher import spec as S
from launcher.tensordesc import sizes_of
from launcher.tensormap import tensormap_bytes

__all__ = ["flat_values", "check_header", "diagnose"]

_U64 = S.INT_RANGES["u64"]
_I32 = S.INT_RANGES["i32"]


def _typename(value) -> str:
    t = type(value)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _name(spec, where) -> str:
    """A parameter's display name: `where` is the name, or an argument path (named on demand,
    so that the names of arguments that are fine are never built)."""
    return where if where.__class__ is str else spec.arg_name(where)


def _where(spec, where) -> str:
    return f"kernel {spec.kernel!r}: parameter {_name(spec, where)!r}"


def show(value) -> str:
    """A value for a message (huge ints are too long to print)."""
    if isinstance(value, int) and value.bit_length() > 256:
        return f"an int of {value.bit_length()} bits"
    try:
        text = repr(value)
    except Exception:
        text = f"<{_typename(value)}>"
    return text if len(text) <= 80 else text[:77] + "..."


def _raised(spec, where, what, value, e) -> TypeError:
    return TypeError(f"{_where(spec, where)} expects {what}, got {_typename(value)} whose conversion "
                     f"raised {type(e).__name__}: {e}")


def as_int(spec, where, value, what, bounds, ty=None) -> int:
    """An int in `bounds`; what: how an expected value is described, or None to describe the
    parameter type `ty` (only when there is something to say)."""
    if value.__class__ is int:
        v = value
    else:
        try:
            v = operator.index(value)
        except TypeError:
            raise TypeError(f"{_where(spec, where)} expects {what or S.describe_type(ty)}, got {_typename(value)}") from None
        except Exception as e:  # a user __index__ that raises something else
            raise _raised(spec, where, what or S.describe_type(ty), value, e) from e
    lo, hi = bounds
    if not lo <= v <= hi:
        raise OverflowError(f"{_where(spec, where)} expects {what or S.describe_type(ty)}, got {show(v)} (out of range)")
    return v


def pointer(spec, where, ty, value) -> int:
    """The address a pointer parameter receives: an int, a tensor's data_ptr(), or 0 for None."""
    if value is None:
        return 0
    if type(value) is int:
        return as_int(spec, where, value, None, _U64, ty)
    if isinstance(value, int):  # bool, IntEnum...: almost certainly a mistake for an address
        raise TypeError(f"{_where(spec, where)} expects {S.describe_type(ty)}, got {_typename(value)} "
                        f"(pass int({value!r}) for an address)")
    try:
        data_ptr = getattr(value, "data_ptr", None)
        ptr = data_ptr() if callable(data_ptr) else None
    except Exception as e:
        raise TypeError(f"{_where(spec, where)}: {_typename(value)}.data_ptr() raised "
                        f"{type(e).__name__}: {e}") from e
    if not callable(data_ptr):
        raise TypeError(f"{_where(spec, where)} expects {S.describe_type(ty)}, got {_typename(value)}")
    if ptr.__class__ is not int:
        try:
            ptr = operator.index(ptr)  # what the packer accepts: an int, or anything with __index__
        except Exception:
            raise TypeError(f"{_where(spec, where)}: {_typename(value)}.data_ptr() returned "
                            f"{_typename(ptr)}, expected an int") from None
    return as_int(spec, where, ptr, "a data_ptr() in [0, 2**64)", _U64)


_LIMITS = {"e": "65504", "f": "3.4028235e38", "d": "1.8e308"}


def real(spec, where, ty, value) -> float:
    if value.__class__ is float:
        f = value
    else:
        if isinstance(value, (str, bytes, bytearray)) or not hasattr(value, "__float__") and not hasattr(value, "__index__"):
            raise TypeError(f"{_where(spec, where)} expects {S.describe_type(ty)}, got {_typename(value)}")
        try:
            f = float(value)
        except OverflowError:
            raise OverflowError(f"{_where(spec, where)} expects {S.describe_type(ty)}, got {show(value)} "
                                f"(too large for a float)") from None
        except (TypeError, ValueError) as e:
            raise TypeError(f"{_where(spec, where)} expects {S.describe_type(ty)}, got {_typename(value)}") from e
        except Exception as e:  # a user __float__ that raises something else
            raise _raised(spec, where, S.describe_type(ty), value, e) from e
    code = S.SCALARS[ty][0]  # the struct code the packer uses
    try:
        struct.pack("<" + code, f)
    except (OverflowError, struct.error):
        raise OverflowError(f"{_where(spec, where)} expects {S.describe_type(ty)}, got {show(value)} "
                            f"(out of range: |x| <= {_LIMITS[code]}, or inf/nan)") from None
    return f


def scalar(spec, where, ty, value):
    if ty in S.BOOLS:
        return as_int(spec, where, value, None, (0, 1), ty)
    bounds = S.INT_RANGES.get(ty)
    if bounds is not None:
        return as_int(spec, where, value, None, bounds, ty)
    return real(spec, where, ty, value)


def _tensordesc(spec, arg, where, value, encoder) -> tuple:
    name = _name(spec, where)
    ndim = arg.desc.ndim
    missing = [a for a in ("base", "shape", "strides", "padding") if not hasattr(value, a)]
    if missing:
        raise TypeError(f"{_where(spec, name)} expects {S.describe_type(arg.type)}, got {_typename(value)}")
    try:
        shape, strides = list(sizes_of(value.shape, ndim)), list(sizes_of(value.strides, ndim))
    except TypeError:
        raise TypeError(f"{_where(spec, name)}: the descriptor's shape and strides must be sequences of ints, got "
                        f"{show(value.shape)} and {show(value.strides)}") from None
    if len(shape) != ndim or len(strides) != ndim:
        raise ValueError(f"{_where(spec, name)} expects a {ndim}-d tensor descriptor, "
                         f"got shape {shape} and strides {strides}")
    pointer(spec, name + ".base", "*" + arg.desc.dtype, value.base)
    for i, s in enumerate(shape):
        as_int(spec, f"{name}.shape[{i}]", s, "an int in [-2**31, 2**31)", _I32)
    for i, s in enumerate(strides):
        as_int(spec, f"{name}.strides[{i}]", s, "an int64", S.INT_RANGES["i64"])
    try:
        values = encoder(value)
    except (TypeError, ValueError, OverflowError) as e:
        raise type(e)(f"{_where(spec, name)}: {e}") from None
    # Each part as its parameter takes it (the encoder may pass a bool flag or a numpy int).
    out = []
    for index, v in zip(arg.params, values):
        p = spec.params[index]
        if p.kind == S.POINTER:
            out.append(pointer(spec, spec.param_name(index), p.type, v))
        elif p.kind == S.VALUE:
            out.append(scalar(spec, spec.param_name(index), p.type, v))
        else:
            out.append(v)
    return tuple(out)


def _walk(spec, arg, path, value, encoders, out):
    kind = arg.kind
    if kind == "constexpr":
        return
    if kind == "pointer":
        out.append(value if value.__class__ is int and 0 <= value <= _U64[1] else pointer(spec, path, arg.type, value))
    elif kind == "scalar":
        out.append(scalar(spec, path, arg.type, value))
    elif kind == "tuple":
        n = len(arg.children)
        if not isinstance(value, collections.abc.Sequence):
            raise TypeError(f"{_where(spec, path)} expects a sequence of {n}, got {_typename(value)}")
        try:
            items = list(value)
        except Exception as e:
            raise TypeError(f"{_where(spec, path)} expects a sequence of {n}; iterating "
                            f"{_typename(value)} raised {type(e).__name__}: {e}") from e
        if len(items) != n:
            raise ValueError(f"{_where(spec, path)} expects a sequence of {n}, got {len(items)} items")
        for i, (child, item) in enumerate(zip(arg.children, items)):
            _walk(spec, child, path + (i,), item, encoders, out)
    elif kind == "tensordesc":
        out.extend(_tensordesc(spec, arg, path, value, encoders[path]))
    else:  # tensormap
        try:
            out.append(tensormap_bytes(value))
        except TypeError as e:
            raise TypeError(f"{_where(spec, path)} (nvTmaDesc) {e}") from None


def stream_handle(stream, where: str = ""):
    """The handle of a stream= a caller passed (the one rule of every front door that takes one):
    an int as it is, an object with .cuda_stream (torch's) by that, anything else as it is, for
    the launcher to refuse. A bool is refused here, as a stream or as its .cuda_stream (an int to
    Python: True would be handle 1, the legacy stream). where: what names the call in the message ("kernel 'k': ")."""
    if stream.__class__ is int:
        return stream
    handle = getattr(stream, "cuda_stream", None) if stream.__class__ is not bool else None
    if stream.__class__ is bool or handle.__class__ is bool:
        got = repr(stream) if handle is None else f"{type(stream).__name__} whose cuda_stream is {handle!r}"
        raise TypeError(f"{where}stream= expects a CUstream handle (an int) or a stream object, got {got}")
    return handle if handle is not None else stream


def grid3(grid, kernel=None) -> tuple:
    """The grid's three dimensions (the one rule; every front door reads a grid here): its first
    one to three items, 1 for those it lacks, as Triton's JIT reads a grid. kernel: the name of a
    kernel whose grid must be a tuple or list of 1 to 3 items (prepared launches, bundles), refused
    otherwise with a TypeError naming it (not any iterable: a range or a generator may not end);
    without it, what Triton's path would do with it happens (the guard, in front of that path),
    except that a grid without len() is a TypeError that says what a grid is (Triton 3.6: a bare
    AssertionError for None, 3.9: len()'s TypeError). Each dimension's range is check_header's."""
    if kernel is not None:
        if not isinstance(grid, (tuple, list)):
            raise TypeError(f"kernel {kernel!r}: the grid must be a tuple of 1 to 3 ints or a callable "
                            f"returning one, got {type(grid).__name__}")
        if not 1 <= len(grid) <= 3:
            raise TypeError(f"kernel {kernel!r}: the grid must have 1 to 3 dimensions, got {len(grid)}")
    try:
        n = len(grid)
    except TypeError:  # Triton's path fails here too (len(), or its bare assert on None): say what a grid is
        raise TypeError(f"the grid must be a tuple of 1 to 3 ints or a callable returning one, "
                        f"got {type(grid).__name__}") from None
    return grid[0], grid[1] if n > 1 else 1, grid[2] if n > 2 else 1


def check_header(spec, grid_x, grid_y, grid_z, stream, function) -> tuple:
    """(function, stream, grid_x, grid_y, grid_z), each checked (the common case: ints in range)."""
    lo, hi = _I32
    if grid_x.__class__ is int and grid_y.__class__ is int and grid_z.__class__ is int and \
            stream.__class__ is int and function.__class__ is int and lo <= grid_x <= hi and \
            lo <= grid_y <= hi and lo <= grid_z <= hi and 0 <= stream <= _U64[1] and 0 <= function <= _U64[1]:
        return function, stream, grid_x, grid_y, grid_z
    grid = tuple(as_int(spec, f"grid{axis}", g, "an int in [-2**31, 2**31)", _I32)
                 for axis, g in zip("XYZ", (grid_x, grid_y, grid_z)))
    return (as_int(spec, "function", function, "a CUfunction handle (an int)", _U64),
            as_int(spec, "stream", stream, "a CUstream handle (an int)", _U64)) + grid


def check_kernel_metadata(spec, kernel_metadata) -> tuple:
    """(num_warps, num_ctas, shared) as Triton passes them (a tuple; any sequence), checked. Not
    any iterable: an iterator may not end (tuple() of itertools.count() never returns)."""
    md = tuple(kernel_metadata) if isinstance(kernel_metadata, collections.abc.Sequence) else None
    if md is None or len(md) != 3:
        raise TypeError(f"kernel {spec.kernel!r}: kernel_metadata must be a "
                        f"(num_warps, num_ctas, shared) tuple, got {show(kernel_metadata)}")
    return tuple(as_int(spec, f"kernel_metadata.{field}", v, f"an int in [{lo}, {hi}]", (lo, hi))
                 for field, v, lo, hi in zip(("num_warps", "num_ctas", "shared"), md,
                                             (1, 1, 0), (0xFFFF, 0xFFFF, 0xFFFFFFFF)))


def flat_values(spec, args, encoders) -> list:
    """The value of every kernel parameter but the two scratch pointers, in parameter order.

    encoders: {argument path: callable} for the tensor-descriptor arguments."""
    if len(args) != spec.arity:
        names = ", ".join(spec.arg_names)
        raise TypeError(f"kernel {spec.kernel!r} takes {spec.arity} arguments ({names}), got {len(args)}")
    out = []
    for i, (arg, value) in enumerate(zip(spec.args, args)):
        kind = arg.kind  # the common cases here (as _walk takes them), the others by _walk
        if kind == "pointer" and value.__class__ is int and 0 <= value <= _U64[1]:
            out.append(value)
        elif kind == "scalar" and value.__class__ is int and arg.type in _INTS and \
                _INTS[arg.type][0] <= value <= _INTS[arg.type][1]:
            out.append(value)
        elif kind != "constexpr":
            _walk(spec, arg, (i,), value, encoders, out)
    return out


_INTS = S.INT_RANGES  # every integer type's range (scalar() checks i1 and u1 as (0, 1), which it is)


def diagnose(spec, encoders, exc, grid_x, grid_y, grid_z, stream, function, kernel_metadata, args):
    """Raise the precise error for a launch whose fast path failed with `exc`."""
    check_header(spec, grid_x, grid_y, grid_z, stream, function)
    flat_values(spec, args, encoders)
    check_kernel_metadata(spec, kernel_metadata)
    if isinstance(exc, struct.error):  # the packer refused a value that passes when read again
        raise TypeError(f"kernel {spec.kernel!r}: an argument could not be packed ({exc}), yet every argument "
                        "passes its check when read again: a data_ptr(), __index__ or __float__ that answers "
                        "differently from one call to the next?") from exc
    raise exc
