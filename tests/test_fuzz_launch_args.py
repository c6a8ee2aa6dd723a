"""Fuzzing the launch path with generated signatures and arguments (issue 6, bad input).

Hypothesis generates Triton-shaped signatures (every scalar type, pointers, nested tuples up to
depth 3, constexprs in and out of tuples, 0-8 arguments, the three ways Triton names arguments)
as synthetic `src`/`metadata` objects (tests/fuzz_signatures.py; no Triton compile per case),
and argument lists for them. Every call goes through `dry_run`: the real launch path (argument
checks, packing, the C library) with the driver call replaced by writing out the kernel's
parameter bytes.

  * good calls pack byte-identically to the reference packer in tests/fuzz_signatures.py (its
    own flattening and constexpr dropping, scalar bytes from tests/reference_packer.py), run
    the enter and exit hooks, and allocate scratch as Triton does;
  * bad calls (one mutation each: argument count, wrong type, out of range, tuple length or
    non-sequence, data_ptr() raising or returning garbage, a CPU-tensor stand-in) raise the
    right exception class, with a message that starts with the kernel's name and names the
    mutated parameter (or the arity), before the enter hook and before any scratch allocation;
  * nothing crashes: any object from a broad mix, at any place in the arguments, is either
    accepted or refused with TypeError / OverflowError / ValueError naming the kernel and place.

"CPU tensors" are modelled as objects with no usable data_ptr() (a TypeError): torch is not
installed here. The check that a real CPU tensor's address is not device-accessible happens in
C on a GPU only, and is not exercised by this module.

Known package bugs (see KNOWN_BUGS) are kept out of the generated inputs, so that this module
passes, and are pinned by strict xfail tests at the end: when one is fixed, its xfail test
fails and the exclusion in `known_bug` should go. LAUNCHER_FUZZ_KNOWN_BUGS=1 puts them back
into the generated inputs.

At least MIN_CALLS generated calls are made (counted in CALLS, checked by the last test).
"""
from __future__ import annotations

import enum
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import fuzz_signatures as F
from fuzz_signatures import (BOOL_TYPES, FLOAT_TYPES, FP16_OVERFLOW, FP32_OVERFLOW, INT_RANGE,
                             CpuTensor, FakeTensor, GarbageTensor, IndexLike, RaisingTensor,
                             is_pointer)
from launcher import CudaLauncher

MIN_CALLS = 10_000
CALLS = {"good": 0, "bad": 0, "anything": 0}
FUZZ_TESTS = {"test_good_calls_pack_like_the_reference", "test_bad_calls_name_the_parameter",
              "test_anything_anywhere_never_crashes"}
_RAN = set()

INCLUDE_KNOWN_BUGS = bool(os.environ.get("LAUNCHER_FUZZ_KNOWN_BUGS"))

FUZZ = dict(deadline=None, database=None, print_blob=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# --------------------------------------------------------------------------------------------
# Known bugs in the package (at the commit this module was written against), each pinned by an
# xfail test below. `known_bug` says whether a value at a place of a given type hits one.

KNOWN_BUGS = {
    "A": "an int subclass (bool, IntEnum, ...) for a pointer: AttributeError from the fast path",
    "B": "an __index__ object equal to 0/1 for i1/u1: bare ValueError() without a message",
    "C": "__index__/__float__ raising a non-TypeError: the user's exception leaks, unnamed",
    "D": "an object == 0/1 whose __index__ is out of range, for i1/u1: packed unchecked",
    "E": "a dict/set/iterator for a tuple parameter is accepted (not a sequence)",
    "F": "data_ptr() returning a non-int with __index__ is accepted, but blamed when another "
         "argument is bad",
    "G": "reading the data_ptr attribute raising (a property): the exception leaks, unnamed",
}


def known_bug(ty, value):
    if INCLUDE_KNOWN_BUGS or isinstance(ty, tuple):
        return None
    if is_pointer(ty):
        if isinstance(value, int) and type(value) is not int and 0 <= value < 2**64:
            return "A"
        if isinstance(value, F.RaisingDataPtrAttribute) and value.exc is not AttributeError:
            return "G"
    if ty in BOOL_TYPES and isinstance(value, IndexLike) and value.v in (0, 1):
        return "B"
    if ty in INT_RANGE and isinstance(value, F.RaisingIndex) and value.exc is not TypeError:
        return "C"
    if ty in FLOAT_TYPES and isinstance(value, (F.RaisingIndex, F.RaisingFloat)) \
            and not issubclass(value.exc, (TypeError, ValueError)):
        return "C"
    return None


# --------------------------------------------------------------------------------------------
# Calling


class Hooks:
    def __init__(self):
        self.calls = []

    def enter(self, md):
        self.calls.append("enter")
        self.md = md

    def exit(self, md):
        self.calls.append("exit")


class RecordingAllocator:
    """Stands in for triton.set_allocator / set_profile_allocator: records, returns a fake."""

    def __init__(self, base):
        self.base = base
        self.calls = []
        self.ptrs = []

    def __call__(self, size, alignment, stream):
        ptr = self.base + 0x1000 * (len(self.calls) % 2**20)
        self.calls.append((size, alignment, stream))
        self.ptrs.append(ptr)
        return FakeTensor(ptr)


@pytest.fixture(scope="module", autouse=True)
def allocators():
    import triton
    from triton.runtime import _allocation

    g, p = RecordingAllocator(0x7F00_0000_0000), RecordingAllocator(0x7E00_0000_0000)
    old_g, old_p = _allocation._allocator.get(), _allocation._profile_allocator.get()
    triton.set_allocator(g)
    triton.set_profile_allocator(p)
    yield g, p
    _allocation._allocator.set(old_g)
    _allocation._profile_allocator.set(old_p)


_launchers: dict = {}


def launcher_for(kernel: F.Kernel):
    launcher = _launchers.get(kernel)
    if launcher is None:
        launcher = _launchers[kernel] = CudaLauncher(kernel.src(), kernel.metadata())
    return launcher


def dry_run(kernel, base, args, hooks, counter):
    CALLS[counter] += 1
    launch_md = {"launch": CALLS[counter]}
    return launcher_for(kernel).dry_run(*base, launch_md, hooks.enter, hooks.exit, *args), launch_md


def check_good(kernel, base, args, allocators, skip=None):
    g, p = allocators
    n_g, n_p = len(g.calls), len(p.calls)
    hooks = Hooks()
    out, launch_md = dry_run(kernel, base, args, hooks, "good" if skip is None else "anything")
    assert hooks.calls == ["enter", "exit"] and hooks.md is launch_md
    # Scratch: one allocation of grid * num_ctas * size bytes per launch (Triton's rule).
    scratch = []
    for alloc, before, size, align in ((g, n_g, kernel.global_scratch, 128),
                                       (p, n_p, kernel.profile_scratch, 8)):
        if size:
            n_programs = base[0] * base[1] * base[2] * base[5][1]
            assert alloc.calls[before:] == [(n_programs * size, align, base[3])]
            scratch.append(alloc.ptrs[-1])
        else:
            assert len(alloc.calls) == before
            scratch.append(0)
    assert out == F.reference_dry_run(kernel, args, scratch, skip)


def check_bad(kernel, base, args, allocators, exc_types, must_name, also=(), counter="bad"):
    """The call raises one of exc_types, starting with the kernel's name and containing
    must_name and every string of `also`; no hook ran and no scratch was allocated."""
    g, p = allocators
    n_alloc = len(g.calls), len(p.calls)
    hooks = Hooks()
    with pytest.raises(exc_types) as info:
        dry_run(kernel, base, args, hooks, counter)
    msg = str(info.value)
    assert hooks.calls == [], f"the enter hook ran for a bad call ({msg})"
    assert (len(g.calls), len(p.calls)) == n_alloc, "scratch was allocated for a bad call"
    assert msg.startswith(f"kernel {kernel.name!r}"), msg
    assert must_name in msg, (must_name, msg)
    for s in also:
        assert s in msg, (s, msg)
    return info.value


# --------------------------------------------------------------------------------------------
# Good calls


@settings(max_examples=450, **FUZZ)
@given(kernel=F.kernels(), data=st.data())
def test_good_calls_pack_like_the_reference(allocators, kernel, data):
    _RAN.add("test_good_calls_pack_like_the_reference")
    for _ in range(8):
        args = data.draw(F.good_args(kernel), label="args")
        if any(known_bug(s.type, F.get(args, s.path)) for s in F.sites(kernel)):
            continue  # a constexpr drawn from anything() is fine; only leaves matter, and
        base = data.draw(F.launch_bases(), label="base")  # pointer leaves never draw bool
        check_good(kernel, base, args, allocators)


# --------------------------------------------------------------------------------------------
# Bad calls: one mutation each


def _signed(strategy):
    return st.tuples(strategy, st.booleans()).map(lambda t: -t[0] if t[1] else t[0])


class NonCallableDataPtr:
    data_ptr = 0x1000


WRONG_TYPE = {
    # for pointers: CPU-tensor stand-ins, strings, floats, containers, non-int integers
    "pointer": st.one_of(st.floats(), st.sampled_from([
        "cuda:0", "0x1000", b"\x00" * 8, [0x1000], (0x1000,), {"ptr": 1}, object(), 1j,
        CpuTensor(), NonCallableDataPtr(), np.int64(0x1000), IndexLike(0x1000),
        F.FloatLike(4096.0)])),
    "int": st.one_of(st.floats(), st.sampled_from([
        "1", b"\x01", None, [1], (1,), 1j, CpuTensor(), FakeTensor(1), np.float64(2.0),
        F.FloatLike(1.0), object()]), st.decimals(allow_nan=False), st.fractions()),
    "float": st.sampled_from([
        "1.0", "nan", b"\x00\x00", None, [1.0], (1.0,), {}, 1j, object(), CpuTensor(),
        FakeTensor(1), np.array([1.0, 2.0]), bytearray(b"1")]),
}


def out_of_range(ty):
    if is_pointer(ty):
        bad = st.integers(2**64, 2**70) | st.integers(-2**70, -1)
        return bad | st.builds(FakeTensor, bad)
    if ty in INT_RANGE:
        lo, hi = INT_RANGE[ty]
        return st.integers(hi + 1, hi + 2**70) | st.integers(lo - 2**70, lo - 1) | \
            st.sampled_from([hi + 1, lo - 1, 2**200])
    if ty == "fp64":
        return _signed(st.integers(2**1024, 2**1100))
    bound = FP16_OVERFLOW if ty == "fp16" else FP32_OVERFLOW
    return _signed(st.floats(min_value=bound, allow_infinity=False)
                   | st.integers(math.ceil(bound), 2**1100) | st.just(bound))


def _kind(ty):
    if isinstance(ty, tuple):
        return "tuple"
    if ty == "constexpr":
        return "constexpr"
    return "pointer" if is_pointer(ty) else "float" if ty in FLOAT_TYPES else "int"


MUTATIONS = ("arity", "type", "range", "tuple_length", "non_sequence", "data_ptr_raises",
             "data_ptr_garbage", "cpu_tensor")


@settings(max_examples=450, **FUZZ)
@given(kernel=F.kernels(), data=st.data())
def test_bad_calls_name_the_parameter(allocators, kernel, data):
    _RAN.add("test_bad_calls_name_the_parameter")
    args = data.draw(F.good_args(kernel), label="good args")
    base = data.draw(F.launch_bases(), label="base")
    by_kind = {}
    for s in F.sites(kernel):
        by_kind.setdefault(_kind(s.type), []).append(s)
    leaves = by_kind.get("pointer", []) + by_kind.get("int", []) + by_kind.get("float", [])
    applicable = {
        "arity": True, "type": leaves, "range": leaves, "tuple_length": by_kind.get("tuple"),
        "non_sequence": by_kind.get("tuple"), "data_ptr_raises": by_kind.get("pointer"),
        "data_ptr_garbage": by_kind.get("pointer"), "cpu_tensor": by_kind.get("pointer"),
    }
    kinds = [m for m in MUTATIONS if applicable[m]]
    for _ in range(8):  # eight bad calls per kernel, one mutation each
        mutation = data.draw(st.sampled_from(kinds), label="mutation")
        if mutation == "arity":
            n = data.draw(st.sampled_from([n for n in (0, kernel.arity - 1, kernel.arity + 1,
                                                       kernel.arity + 3) if n >= 0
                                           and n != kernel.arity]), label="count")
            bad = (list(args) + [0, None, 1.0])[:n]
            check_bad(kernel, base, bad, allocators, TypeError,
                      f"kernel {kernel.name!r} takes {kernel.arity} arguments",
                      also=[f"got {n}"])
            continue
        site = data.draw(st.sampled_from(applicable[mutation]), label="site")
        ty, name = site.type, f"parameter {site.display!r}"
        if mutation == "type":
            value = data.draw(WRONG_TYPE[_kind(ty)], label="value")
            check_bad(kernel, base, F.replace(args, site.path, value), allocators, TypeError,
                      name, also=["expects", str(ty)])
        elif mutation == "range":
            value = data.draw(out_of_range(ty), label="value")
            err = check_bad(kernel, base, F.replace(args, site.path, value), allocators,
                            OverflowError, name, also=[] if is_pointer(ty) else [str(ty)])
            assert "out of range" in str(err) or "too large" in str(err)
        elif mutation == "tuple_length":
            n = len(ty)
            good = list(F.get(args, site.path))
            m = data.draw(st.sampled_from([k for k in (n - 1, n + 1, n + 2, 0) if k >= 0 and k != n]),
                          label="length")
            value = (good + [0, 1.5, None])[:m]
            value = data.draw(st.sampled_from([value, tuple(value)]), label="value")
            check_bad(kernel, base, F.replace(args, site.path, value), allocators, ValueError,
                      name, also=[f"sequence of {n}"])
        elif mutation == "non_sequence":
            value = data.draw(st.sampled_from([0, 3, None, 1.5, object(), FakeTensor(0x1000),
                                               CpuTensor(), IndexLike(2)]), label="value")
            check_bad(kernel, base, F.replace(args, site.path, value), allocators, TypeError,
                      name, also=[f"sequence of {len(ty)}"])
        elif mutation == "data_ptr_raises":
            value = data.draw(st.builds(RaisingTensor, st.sampled_from(F.EXCEPTIONS)), label="value")
            check_bad(kernel, base, F.replace(args, site.path, value), allocators, TypeError,
                      name, also=["data_ptr()", value.exc.__name__])
        elif mutation == "data_ptr_garbage":
            value = data.draw(st.builds(GarbageTensor, st.sampled_from(
                ["0x1000", 4096.0, None, b"\x00" * 8, [4096], object(), 1j, np.float64(1.0)])),
                label="value")
            check_bad(kernel, base, F.replace(args, site.path, value), allocators, TypeError,
                      name, also=["data_ptr()"])
        elif mutation == "cpu_tensor":
            check_bad(kernel, base, F.replace(args, site.path, CpuTensor()), allocators,
                      TypeError, name, also=["expects", str(ty)])


# --------------------------------------------------------------------------------------------
# Nothing crashes: anything, anywhere


@settings(max_examples=500, **FUZZ)
@given(kernel=F.kernels(max_args=6).filter(lambda k: k.arity > 0), data=st.data())
def test_anything_anywhere_never_crashes(allocators, kernel, data):
    _RAN.add("test_anything_anywhere_never_crashes")
    args = data.draw(F.good_args(kernel), label="good args")
    base = data.draw(F.launch_bases(), label="base")
    all_sites = F.sites(kernel)
    for _ in range(6):
        site = data.draw(st.sampled_from(all_sites), label="site")
        value = data.draw(F.anything().filter(lambda v: not known_bug(site.type, v)),
                          label="value")
        bad = F.replace(args, site.path, value)
        g, p = allocators
        n_alloc = len(g.calls), len(p.calls)
        hooks = Hooks()
        try:
            CALLS["anything"] += 1
            out = launcher_for(kernel).dry_run(*base, None, hooks.enter, hooks.exit, *bad)
        except (TypeError, OverflowError, ValueError) as e:
            msg = str(e)
            assert hooks.calls == [] and (len(g.calls), len(p.calls)) == n_alloc, msg
            assert msg.startswith(f"kernel {kernel.name!r}: parameter {site.display!r}"[:-1]), msg
            continue
        # Accepted: hooks ran, and every parameter outside the changed place is as before.
        assert hooks.calls == ["enter", "exit"]
        CALLS["anything"] -= 1  # counted again by check_good, which re-runs the call
        check_good(kernel, base, bad, allocators, skip=site.path)
        if site.type == "constexpr":
            assert out == F.reference_dry_run(
                kernel, args, out[len(out) - 2:] and [int.from_bytes(b, "little") for b in out[-2:]])


# --------------------------------------------------------------------------------------------
# Known bugs, pinned (strict: an xfail that starts passing fails, so the exclusion in
# known_bug and this test can go). Minimal reproductions, one per bug.


def _one(ty, name="k", arg="x"):
    kernel = F.Kernel(name, (arg,), (arg,), (ty,), "ast")
    return kernel


def _raises_named(kernel, args, allocators, exc=(TypeError, OverflowError, ValueError)):
    check_bad(kernel, (1, 1, 1, 0, 0, (4, 1, 0)), args, allocators, exc,
              f"parameter {kernel.display[0]!r}", counter="bad")


class _Color(enum.IntEnum):
    ADDRESS = 0x1000


@pytest.mark.xfail(strict=True, reason=KNOWN_BUGS["A"])
@pytest.mark.parametrize("value", [True, _Color.ADDRESS, F.IntSubclass(0x1000)])
def test_known_bug_A_int_subclass_for_pointer(allocators, value):
    # Expected: packed as the int address (as the slow path and Triton accept it) or a
    # TypeError naming 'x'. Actual: AttributeError: '<type>' object has no attribute 'data_ptr'.
    kernel = _one("*fp32")
    hooks = Hooks()
    try:
        out, _ = dry_run(kernel, (1, 1, 1, 0, 0, (4, 1, 0)), [value], hooks, "bad")
    except TypeError as e:
        assert "parameter 'x'" in str(e)
    else:
        assert out[0] == int(value).to_bytes(8, "little")


@pytest.mark.xfail(strict=True, reason=KNOWN_BUGS["B"])
@pytest.mark.parametrize("ty", ["i1", "u1"])
def test_known_bug_B_index_object_for_i1(allocators, ty):
    # i32 accepts IndexLike(7); i1 should accept IndexLike(1) (or refuse it with a named error).
    # Actual: ValueError('') from the fast path's 0/1 check, re-raised by the slow path.
    kernel = _one(ty)
    hooks = Hooks()
    try:
        out, _ = dry_run(kernel, (1, 1, 1, 0, 0, (4, 1, 0)), [IndexLike(1)], hooks, "bad")
    except (TypeError, ValueError) as e:
        assert str(e).startswith("kernel 'k': parameter 'x'"), repr(e)
    else:
        assert out[0] == b"\x01"


@pytest.mark.xfail(strict=True, reason=KNOWN_BUGS["C"])
@pytest.mark.parametrize("ty,value", [
    ("i32", F.RaisingIndex(RuntimeError)), ("i1", F.RaisingIndex(RuntimeError)),
    ("fp32", F.RaisingFloat(RuntimeError)), ("fp16", F.RaisingIndex(ZeroDivisionError)),
    ("i64", F.RaisingIndex(ValueError)),  # right class, but no kernel or parameter name
])
def test_known_bug_C_raising_dunder(allocators, ty, value):
    _raises_named(_one(ty), [value], allocators)


class _EqLiar:
    def __eq__(self, other):
        return True

    __hash__ = None

    def __index__(self):
        return 5


@pytest.mark.xfail(strict=True, reason=KNOWN_BUGS["D"])
@pytest.mark.parametrize("ty", ["i1", "u1"])
def test_known_bug_D_eq_liar_for_i1(allocators, ty):
    # Actual: accepted, and the kernel's i1 parameter receives the byte 0x05.
    _raises_named(_one(ty), [_EqLiar()], allocators, OverflowError)


@pytest.mark.xfail(strict=True, reason=KNOWN_BUGS["E"])
@pytest.mark.parametrize("value", [{0x10: "a", 0x20: "b"}, {0x10, 0x20}, iter([0x10, 0x20])],
                         ids=["dict", "set", "iterator"])
def test_known_bug_E_non_sequence_for_tuple(allocators, value):
    # Triton's launcher parses tuples with PyArg_ParseTuple "(..)", which needs a sequence.
    _raises_named(_one(("i32", "i32"), arg="t"), [value], allocators, TypeError)


class _NumpyPtr:
    def data_ptr(self):
        return np.int64(0x1000)


@pytest.mark.xfail(strict=True, reason=KNOWN_BUGS["F"])
def test_known_bug_F_data_ptr_non_int_blamed_for_others(allocators):
    # Alone, x is accepted (packed as 0x1000); with a bad n, the error names x instead of n.
    kernel = F.Kernel("k", ("x", "n"), ("x", "n"), ("*fp32", "i32"), "ast")
    out, _ = dry_run(kernel, (1, 1, 1, 0, 0, (4, 1, 0)), [_NumpyPtr(), 5], Hooks(), "bad")
    assert out[0] == (0x1000).to_bytes(8, "little")
    check_bad(kernel, (1, 1, 1, 0, 0, (4, 1, 0)), [_NumpyPtr(), 2**40], allocators,
              OverflowError, "parameter 'n'")


@pytest.mark.xfail(strict=True, reason=KNOWN_BUGS["G"])
def test_known_bug_G_data_ptr_property_raises(allocators):
    _raises_named(_one("*fp32"), [F.RaisingDataPtrAttribute(RuntimeError)], allocators)


# --------------------------------------------------------------------------------------------


def test_zz_at_least_10000_generated_calls():
    """Runs last (file order): the fuzz tests above made at least MIN_CALLS calls."""
    if _RAN != FUZZ_TESTS:
        pytest.skip(f"only {sorted(_RAN)} of the fuzz tests ran in this session")
    total = sum(CALLS.values())
    print(f"generated calls: {total} {CALLS}")
    assert total >= MIN_CALLS, CALLS
