"""The checks the C calls of launcher._call carry out (cdefs/call.c), built in one place.

`c_checks(layout)` is what a flat launch (launcher._call.FlatLaunch: the fast dispatch's hits,
bundles) checks: each value's type and range, for a caller whose own key has decided what the
compiled kernel assumed. `c_checks(layout, Assumptions(...))` is what a prepared launch's
`p(*args)` (launcher._call.FastCall) checks: the same, and what the kernel was compiled for,
from the prepared call (alignment, int ranges by annotation, constexpr values, host descriptors),
the facts launcher.specialization.AssumptionCheck checks in Python. Each kind of argument has one
rule below, with or without assumptions.

A check is a tuple whose first item is one of cdefs/launcher.h's LAUNCHER_CHECK_* and whose pack
codes are its LAUNCHER_PACK_* (a parameter's struct code is its pack code); the header says what
each takes. They are built once per shape (or prepared launch), never per call. None means that
an argument has no test in C (a tensor map, an fp16 scalar, a descriptor without assumptions, a
pointer prepared with an address...): every call then takes the Python path, which converts,
checks and explains. The C never explains: it only declines.
"""
from __future__ import annotations

from typing import NamedTuple

from launcher import driver
from launcher import spec as S
from launcher.specialization import DIVISIBILITY_MASK, address_and_dtype, compiled_int_range

__all__ = ["Assumptions", "c_checks", "pack_code"]


class Assumptions(NamedTuple):
    """What a prepared launch's checks hold new arguments to: the prepared call's."""

    values: tuple  # the prepared call's argument values, in order
    aligned: frozenset  # argument paths the kernel assumed divisible by 16
    typed: frozenset  # argument indices typed by their annotations (AssumptionCheck.typed)
    encoders: dict  # argument path -> the launcher's encoder of that host tensor descriptor


def pack_code(param) -> int:
    """The LAUNCHER_PACK_* of a layout Param: its struct code's character; a tensor map's own."""
    lib = driver.native()[1]
    return lib.LAUNCHER_PACK_TENSORMAP if param.kind == S.TENSORMAP else ord(param.code)


def c_checks(layout, assumptions: Assumptions | None = None) -> tuple | None:
    """One check per argument of `layout` (its Args, with their Params' offsets), as
    launcher._call.FlatLaunch (no assumptions) and FastCall._fast_set (with them) take them, or
    None where an argument has no test in C."""
    lib = driver.native()[1]
    return _checks(lib, layout.args, layout.params, (), assumptions, None if assumptions is None else assumptions.values)


_EQ_CLASSES = (int, float, bool, str)  # constexprs that == compares as Triton's key does


def _checks(lib, args, params, prefix, assume, values) -> tuple | None:
    checks = []
    for i, arg in enumerate(args):
        path = prefix + (i,)
        value = None if values is None else values[i]
        slot = params[arg.params[0]] if arg.params else None
        kind = arg.kind
        if kind == "constexpr":
            # prepared: the same object, or one of the same class that compares equal (ints, floats,
            # bools, strings, None; == says (1, 2) is (1.0, 2.0), so other values must be that object)
            check = (lib.LAUNCHER_CHECK_SKIP,) if assume is None else \
                (lib.LAUNCHER_CHECK_CONSTEXPR, value, value is None or value.__class__ in _EQ_CLASSES)
        elif kind == "tuple":  # its items, in turn (prepared: with a tuple of its length)
            if assume is not None and (value.__class__ is not tuple or len(value) != len(arg.children)):
                return None
            items = _checks(lib, arg.children, params, path, assume, value)
            if items is None:
                return None
            check = (lib.LAUNCHER_CHECK_TUPLE, items)
        elif kind == "pointer":
            if assume is None:  # an int address, or what data_ptr() gives
                check = (lib.LAUNCHER_CHECK_ADDRESS, slot.offset)
            else:  # a tensor of the prepared class and dtype (or an int address), aligned as assumed
                check = _pointer(lib, value, path in assume.aligned, slot.offset)
                if check is None:
                    return None
        elif kind == "tensordesc":  # prepared: what the kernel assumed of it (dtype and block shape)
            check = None if assume is None else _descriptor(lib, arg, value, params, assume.encoders[path])
            if check is None:
                return None
        elif kind == "scalar" and arg.type in S.BOOLS:
            check = (lib.LAUNCHER_CHECK_BOOL, slot.offset)
        elif kind == "scalar" and arg.type in S.INT_RANGES:
            if assume is None:
                (lo, hi), aligned = S.INT_RANGES[arg.type], False
            else:
                (lo, hi), aligned = compiled_int_range(arg.type, path[0] in assume.typed), path in assume.aligned
            check = (lib.LAUNCHER_CHECK_INT, lo, hi, _mask(aligned), slot.offset, pack_code(slot))
        elif kind == "scalar" and pack_code(slot) in (lib.LAUNCHER_PACK_F32, lib.LAUNCHER_PACK_F64):
            check = (lib.LAUNCHER_CHECK_FLOAT, slot.offset, pack_code(slot))  # fp16 keeps struct's rounding
        else:  # tensor maps, fp16 scalars
            return None
        checks.append(check)
    return tuple(checks)


def _pointer(lib, value, aligned, offset):
    if value.__class__ is int or value is None:
        return None  # prepared with an address: the Python path checks new ones
    try:
        found = address_and_dtype(value)
    except TypeError:
        found = None
    if found is None or not hasattr(value, "dtype") or not callable(getattr(value, "data_ptr", None)):
        return None  # __cuda_array_interface__ objects: the Python path converts them
    return (lib.LAUNCHER_CHECK_POINTER, value.__class__, value.dtype, _mask(aligned), offset)


def _mask(aligned: bool) -> int:
    """A check's mask: the bits an address or int the kernel assumed divisible must not have."""
    return DIVISIBILITY_MASK if aligned else 0


def _descriptor(lib, arg, value, params, encoder):
    base, block = getattr(value, "base", None), getattr(value, "block_shape", None)
    if block is None or not hasattr(base, "dtype") or not callable(getattr(base, "data_ptr", None)):
        return None
    slots = tuple((params[j].offset, lib.LAUNCHER_PACK_BOOL if params[j].type in S.BOOLS else pack_code(params[j]))
                  for j in arg.params)  # a bool slot: a bool, or the int 0 or 1
    return (lib.LAUNCHER_CHECK_CALL, _descriptor_values(value.__class__, base.__class__, base.dtype, tuple(block),
                                                         arg.desc.ndim, encoder), slots)


def _descriptor_values(cls, base_cls, dtype, block, ndim, encoder):
    """The values a host descriptor of the prepared class, base class, dtype, block shape and
    rank packs (its encoder's), or None for any other (the Python path names what differs)."""
    as_list = list(block)

    def values(d):
        if d.__class__ is not cls:
            return None
        base = d.base
        if base.__class__ is not base_cls or base.dtype is not dtype or (d.block_shape != as_list and d.block_shape != block):
            return None
        if len(d.shape) != ndim or len(d.strides) != ndim:
            return None
        return tuple(encoder(d))

    return values
