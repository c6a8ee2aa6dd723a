"""Exceptions for bad launches, and the slow path that finds which argument is bad.

The generated fast path (launcher/cuda_launcher.py) packs all arguments in one go. When that
fails, `diagnose` walks the arguments again, one by one, and raises an exception naming the
kernel, the parameter and what was expected: TypeError for a wrong count or type, OverflowError
for a value out of range, ValueError for a wrong tuple length or an unusable value.
"""
from __future__ import annotations

import collections.abc
import operator
import struct

from launcher import driver, signature as sig
from launcher.driver import CudaError

__all__ = ["CudaError", "UnsupportedKernel", "diagnose", "launch_error"]

_U64 = (0, (1 << 64) - 1)
_I32 = (-(1 << 31), (1 << 31) - 1)


class UnsupportedKernel(RuntimeError):
    """A kernel this launcher cannot launch, with no stock launcher to hand it to."""


def _typename(value) -> str:
    t = type(value)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _where(plan, name) -> str:
    return f"kernel {plan.kernel!r}: parameter {name!r}"


def _show(value) -> str:
    """A value for a message (huge ints are too long to print)."""
    if isinstance(value, int) and value.bit_length() > 256:
        return f"an int of {value.bit_length()} bits"
    try:
        text = repr(value)
    except Exception:
        text = f"<{_typename(value)}>"
    return text if len(text) <= 80 else text[:77] + "..."


def _raised(plan, name, what, value, e) -> TypeError:
    return TypeError(f"{_where(plan, name)} expects {what}, got {_typename(value)} whose conversion "
                     f"raised {type(e).__name__}: {e}")


def _as_int(plan, name, value, what, bounds):
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{_where(plan, name)} expects {what}, got {_typename(value)}") from None
    except Exception as e:  # a user __index__ that raises something else
        raise _raised(plan, name, what, value, e) from e
    lo, hi = bounds
    if not lo <= v <= hi:
        raise OverflowError(f"{_where(plan, name)} expects {what}, got {_show(v)} (out of range)")
    return v


def _check_pointer(plan, name, ty, value):
    what = sig.describe_type(ty)
    if value is None:
        return
    if type(value) is int:
        _as_int(plan, name, value, what, _U64)
        return
    if isinstance(value, int):  # bool, IntEnum...: almost certainly a mistake for an address
        raise TypeError(f"{_where(plan, name)} expects {what}, got {_typename(value)} "
                        f"(pass int({value!r}) for an address)")
    try:
        data_ptr = getattr(value, "data_ptr", None)
        ptr = data_ptr() if callable(data_ptr) else None
    except Exception as e:
        raise TypeError(f"{_where(plan, name)}: {_typename(value)}.data_ptr() raised "
                        f"{type(e).__name__}: {e}") from e
    if not callable(data_ptr):
        raise TypeError(f"{_where(plan, name)} expects {what}, got {_typename(value)}")
    try:
        address = operator.index(ptr)  # what the packer accepts: an int, or anything with __index__
    except Exception:
        raise TypeError(f"{_where(plan, name)}: {_typename(value)}.data_ptr() returned "
                        f"{_typename(ptr)}, expected an int") from None
    _as_int(plan, f"{name}", address, "a data_ptr() in [0, 2**64)", _U64)


def _check_float(plan, name, ty, value):
    what = sig.describe_type(ty)
    if isinstance(value, (str, bytes, bytearray)) or not hasattr(value, "__float__") and not hasattr(value, "__index__"):
        raise TypeError(f"{_where(plan, name)} expects {what}, got {_typename(value)}")
    try:
        f = float(value)
    except OverflowError:
        raise OverflowError(f"{_where(plan, name)} expects {what}, got {_show(value)} "
                            f"(too large for a float)") from None
    except (TypeError, ValueError) as e:
        raise TypeError(f"{_where(plan, name)} expects {what}, got {_typename(value)}") from e
    except Exception as e:  # a user __float__ that raises something else
        raise _raised(plan, name, what, value, e) from e
    code = sig.SCALARS[ty][0]  # the struct code the packer uses
    try:
        struct.pack("<" + code, f)
    except (OverflowError, struct.error):
        limit = {"e": "65504", "f": "3.4028235e38", "d": "1.8e308"}[code]
        raise OverflowError(f"{_where(plan, name)} expects {what}, got {_show(value)} "
                            f"(out of range: |x| <= {limit}, or inf/nan)") from None


def _check_leaf(plan, param, value):
    ty = param.type
    if param.kind == sig.POINTER:
        _check_pointer(plan, param.name, ty, value)
    elif param.kind == sig.TENSORMAP:
        from launcher.tensormap import tensormap_bytes

        try:
            tensormap_bytes(value, param.name)
        except TypeError as e:
            raise TypeError(f"kernel {plan.kernel!r}: {e}") from None
    elif ty in ("i1", "u1"):
        _as_int(plan, param.name, value, sig.describe_type(ty), (0, 1))
    elif ty in sig.INT_RANGES:
        _as_int(plan, param.name, value, sig.describe_type(ty), sig.INT_RANGES[ty])
    elif ty in sig.FLOATS:
        _check_float(plan, param.name, ty, value)


def _check_tensordesc(plan, node, value):
    ndim = node.desc["ndim"]
    missing = [a for a in ("base", "shape", "strides", "padding") if not hasattr(value, a)]
    if missing:
        raise TypeError(f"{_where(plan, node.name)} expects {sig.describe_type(node.type)}, "
                        f"got {_typename(value)}")
    shape, strides = list(value.shape), list(value.strides)
    if len(shape) != ndim or len(strides) != ndim:
        raise ValueError(f"{_where(plan, node.name)} expects a {ndim}-d tensor descriptor, "
                         f"got shape {shape} and strides {strides}")
    _check_pointer(plan, node.name + ".base", "*" + node.desc["dtype"], value.base)
    for i, s in enumerate(shape):
        _as_int(plan, f"{node.name}.shape[{i}]", s, "an int in [-2**31, 2**31)", _I32)
    for i, s in enumerate(strides):
        _as_int(plan, f"{node.name}.strides[{i}]", s, "an int64", sig.INT_RANGES["i64"])


def _check_node(plan, node, value):
    if node.kind == "constexpr":
        return
    if node.kind == "tuple":
        n = len(node.children)
        if not isinstance(value, collections.abc.Sequence):
            raise TypeError(f"{_where(plan, node.name)} expects a sequence of {n}, "
                            f"got {_typename(value)}")
        try:
            items = list(value)
        except Exception as e:
            raise TypeError(f"{_where(plan, node.name)} expects a sequence of {n}; iterating "
                            f"{_typename(value)} raised {type(e).__name__}: {e}") from e
        if len(items) != n:
            raise ValueError(f"{_where(plan, node.name)} expects a sequence of {n}, "
                             f"got {len(items)} items")
        for child, item in zip(node.children, items):
            _check_node(plan, child, item)
    elif node.kind == "tensordesc":
        _check_tensordesc(plan, node, value)
    else:
        _check_leaf(plan, node.params[0], value)


def _owning_device(cu, address, current):
    """The other device whose context can reach `address`, or None (error path only)."""
    A = cu.CUpointer_attribute
    for ordinal in range(int(driver.check(cu.cuDeviceGetCount(), "cuDeviceGetCount"))):
        if ordinal == current:
            continue
        dev = driver.check(cu.cuDeviceGet(ordinal), "cuDeviceGet")
        ctx = driver.check(cu.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        try:
            driver.check(cu.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
            try:
                err, _ = cu.cuPointerGetAttribute(A.CU_POINTER_ATTRIBUTE_DEVICE_POINTER, address)
            finally:
                cu.cuCtxPopCurrent()
        finally:
            cu.cuDevicePrimaryCtxRelease(dev)
        if int(err) == 0:
            return ordinal
    return None


def _whose(address) -> str:
    """What an address the current context cannot reach is: another GPU's memory, or host memory."""
    if address is None:
        return ""
    try:
        cu = driver.cu()
        current = int(driver.check(cu.cuCtxGetDevice(), "cuCtxGetDevice"))
        owner = _owning_device(cu, address, current)
        if owner is not None:
            return (f"{address:#x} (memory of cuda:{owner}; the launch is on cuda:{current}, which has "
                    f"no peer access to it: launch on cuda:{owner} or enable peer access)")
    except Exception:  # the message must not fail; say what is known
        pass
    return f"{address:#x} (host memory? a CPU tensor? use a CUDA tensor or pinned host memory)"


def diagnose(plan, base, args, exc):
    """Raise the precise error for a launch whose fast path failed with `exc`."""
    grid_x, grid_y, grid_z, stream, function, kernel_metadata = base
    for axis, g in zip("XYZ", (grid_x, grid_y, grid_z)):
        _as_int(plan, f"grid{axis}", g, "an int in [-2**31, 2**31)", _I32)
    _as_int(plan, "stream", stream, "a CUstream handle (an int)", _U64)
    _as_int(plan, "function", function, "a CUfunction handle (an int)", _U64)
    try:
        md = tuple(kernel_metadata)
    except TypeError:
        md = None
    if md is None or len(md) != 3:
        raise TypeError(f"kernel {plan.kernel!r}: kernel_metadata must be a "
                        f"(num_warps, num_ctas, shared) tuple, got {kernel_metadata!r}")
    for field, v, hi in zip(("num_warps", "num_ctas", "shared"), md, (0xFFFF, 0xFFFF, 0xFFFFFFFF)):
        _as_int(plan, f"kernel_metadata.{field}", v, f"an int in [0, {hi}]", (0, hi))
    if len(args) != plan.arity:
        names = ", ".join(plan.arg_names())
        raise TypeError(f"kernel {plan.kernel!r} takes {plan.arity} arguments ({names}), "
                        f"got {len(args)}")
    for node, value in zip(plan.args, args):
        _check_node(plan, node, value)
    raise exc


def launch_error(plan, rc, buf) -> Exception:
    """The exception for a failed launch (status rc from the native library; buf: what was packed)."""
    _, lib = driver.native()
    if rc == lib.LAUNCHER_ERROR_BAD_POINTER:
        i = lib.launcher_last_bad_param()
        p = plan.params[i] if 0 <= i < len(plan.params) else None
        name = p.name if p else f"#{i}"
        address = struct.unpack_from("<Q", buf, p.offset)[0] if p else None
        return ValueError(f"{_where(plan, name)}: the pointer {_whose(address)} cannot be accessed "
                          "from the current device")
    if rc == lib.LAUNCHER_ERROR_TOO_LARGE:
        return ValueError(f"kernel {plan.kernel!r}: {plan.size} bytes of parameters "
                          "exceed what a kernel can take (32764)")
    return driver.error_from_status(rc, f"launching kernel {plan.kernel!r}")
