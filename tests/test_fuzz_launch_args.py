"""Fuzzing the launch path with generated signatures and arguments (issue 6, bad input).

Hypothesis generates Triton-shaped signatures (every scalar type, pointers, nested tuples up to
depth 3, empty tuples, constexprs in and out of tuples, 0-8 arguments, names from fn.arg_names,
from the signature's keys or by position)
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

The bugs this module found (A-H at the end) are fixed; each keeps a minimal regression test,
and their inputs are part of the generated mix.

At least MIN_CALLS generated calls are made (counted in CALLS, checked by the last test).
"""
from __future__ import annotations

import collections
import enum
import functools
import json
import math
import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import fuzz_signatures as F
from fuzz_signatures import (BOOL_TYPES, FLOAT_TYPES, FP16_OVERFLOW, FP32_OVERFLOW, INT_RANGE,
                             CpuTensor, FakeTensor, GarbageTensor, IndexLike, RaisingTensor,
                             is_pointer)
from launcher import CudaLauncher, LaunchSpec, triton_adapter

MIN_CALLS = 10_000
CALLS = {"good": 0, "bad": 0, "anything": 0, "pinned": 0}  # "pinned": the regression tests of fixed bugs
STATS = collections.Counter()  # what was exercised, printed by the last test
FUZZ_TESTS = {"test_good_calls_pack_like_the_reference", "test_bad_calls_name_the_parameter",
              "test_anything_anywhere_never_crashes"}
_RAN = set()

FUZZ = dict(deadline=None, database=None, print_blob=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

HUGE_INT = F.HUGE_INT


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
    """What triton.set_allocator (and _allocation.set_profile_allocator) install: records,
    returns a fake buffer."""

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
    _allocation.set_profile_allocator(p)
    yield g, p
    _allocation._allocator.set(old_g)
    _allocation._profile_allocator.set(old_p)


_launchers: dict = {}


def launcher_for(kernel: F.Kernel):
    launcher = _launchers.get(kernel)
    if launcher is None:
        launcher = _launchers[kernel] = CudaLauncher(kernel.src(), kernel.metadata())
    return launcher


def restored_launcher_for(kernel: F.Kernel):
    """The launcher of the kernel's spec written to JSON and read back (what a bundle holds)."""
    key = ("json", kernel)
    launcher = _launchers.get(key)
    if launcher is None:
        spec = LaunchSpec.from_json(json.loads(json.dumps(launcher_for(kernel).spec.to_json())))
        assert spec == launcher_for(kernel).spec
        launcher = _launchers[key] = CudaLauncher.from_spec(
            spec, global_allocator=triton_adapter.global_scratch_allocator,
            profile_allocator=triton_adapter.profile_scratch_allocator)
    return launcher


class _Run:
    """One dry run by one path: its output or exception, the hooks that ran, its scratch."""

    def __init__(self, dry_run, base, args, allocators, launch_md):
        g, p = allocators
        n_g, n_p = len(g.calls), len(p.calls)
        self.hooks = Hooks()
        self.out = self.error = None
        try:
            self.out = dry_run(*base, launch_md, self.hooks.enter, self.hooks.exit, *args)
        except Exception as e:  # judged by the caller
            self.error = e
        self.allocations = (g.calls[n_g:], p.calls[n_p:])
        self.scratch_ptrs = (g.ptrs[-1] if g.ptrs[n_g:] else 0, p.ptrs[-1] if p.ptrs[n_p:] else 0)


class Outcome:
    """One call, made three ways that must agree: the generated fast path, the plan-driven
    packer, and the generated path of the spec after a JSON round trip. The first is judged
    by the caller; the others must give the same bytes (their own scratch pointers aside), the
    same exception with the same message, the same hooks and the same allocations."""

    def __init__(self, kernel, base, args, allocators, counter):
        CALLS[counter] += 1
        launch_md = {"launch": CALLS[counter]}
        runs = [_Run(launcher_for(kernel).dry_run, base, args, allocators, launch_md),
                _Run(launcher_for(kernel).dry_run_planned, base, args, allocators, launch_md),
                _Run(restored_launcher_for(kernel).dry_run, base, args, allocators, launch_md)]
        first = runs[0]
        for how, run in zip(("plan-driven", "from JSON"), runs[1:]):
            assert type(run.error) is type(first.error), (how, run.error, first.error)
            assert str(run.error) == str(first.error), (how, str(run.error), str(first.error))
            assert run.hooks.calls == first.hooks.calls, how
            assert run.allocations == first.allocations, how
            if first.out is not None:
                assert run.out[:-2] == first.out[:-2], how
                assert run.out[-2:] == [p.to_bytes(8, "little") for p in run.scratch_ptrs], how
        self.hooks, self.out, self.error = first.hooks, first.out, first.error
        self.allocations, self.scratch_ptrs = first.allocations, first.scratch_ptrs
        self.launch_md = launch_md
        STATS["calls checked three ways (generated, plan-driven, from JSON)"] += 1


def check_good(kernel, base, args, o: Outcome, skip=None):
    """A successful call: both hooks ran, Triton's scratch allocations, reference bytes."""
    if o.error is not None:
        raise o.error
    assert o.hooks.calls == ["enter", "exit"] and o.hooks.md is o.launch_md
    # Scratch: one allocation of grid * num_ctas * size bytes per launch (Triton's rule).
    n_programs = base[0] * base[1] * base[2] * base[5][1]
    for calls, size, align in zip(o.allocations, (kernel.global_scratch, kernel.profile_scratch),
                                  (128, 8)):
        assert calls == ([(n_programs * size, align, base[3])] if size else [])
    assert o.out == F.reference_dry_run(kernel, args, o.scratch_ptrs, skip)


def check_refused(kernel, o: Outcome, exc_types, must_match):
    """A refused call: the right class, a message starting with the kernel's name and matching
    must_match (a regex), no hook run and no scratch allocated."""
    if not isinstance(o.error, exc_types):
        raise AssertionError(f"expected {exc_types}, got {o.error!r}") from o.error
    msg = str(o.error)
    assert o.hooks.calls == [], f"the enter hook ran for a bad call ({msg})"
    assert o.allocations == ([], []), f"scratch was allocated for a bad call ({msg})"
    assert msg.startswith(f"kernel {kernel.name!r}"), msg
    assert re.search(must_match, msg), (must_match, msg)
    return msg


def check_bad(kernel, base, args, allocators, exc_types, must_name, also=(), counter="bad"):
    """The call raises one of exc_types naming `must_name` (a literal) and every string of
    `also`; no hook ran and no scratch was allocated."""
    o = Outcome(kernel, base, args, allocators, counter)
    msg = check_refused(kernel, o, exc_types, re.escape(must_name))
    for s in also:
        assert s in msg, (s, msg)
    return msg


def names_place(kernel, display):
    """A regex: the message names `display`, or a place inside it (an item of a tuple)."""
    return rf"^kernel {re.escape(repr(kernel.name))}: parameter '{re.escape(display)}(\[\d+\])*'"


def _depth(ty):
    return 1 + max(map(_depth, ty), default=0) if isinstance(ty, tuple) else 0


def _kernel_stats(kernel):
    STATS[f"kernels with tuple depth {max(map(_depth, kernel.types), default=0)}"] += 1
    STATS[f"kernels named by {kernel.naming}"] += 1
    STATS["kernels with scratch"] += bool(kernel.global_scratch or kernel.profile_scratch)

    def visit(ty, in_tuple):
        if isinstance(ty, tuple):
            STATS["tuples" if ty else "tuples (empty)"] += 1
            for t in ty:
                visit(t, True)
        else:
            STATS[f"{'constexprs' if ty == 'constexpr' else 'parameters'} "
                  f"{'in' if in_tuple else 'out of'} tuples"] += 1

    for ty in kernel.types:
        visit(ty, False)


# --------------------------------------------------------------------------------------------
# Good calls


@settings(max_examples=520, **FUZZ)
@given(kernel=F.kernels(), data=st.data())
def test_good_calls_pack_like_the_reference(allocators, kernel, data):
    _RAN.add("test_good_calls_pack_like_the_reference")
    _kernel_stats(kernel)
    for _ in range(8):  # eight calls per kernel
        args = data.draw(F.good_args(kernel), label="args")
        base = data.draw(F.launch_bases(), label="base")
        check_good(kernel, base, args, Outcome(kernel, base, args, allocators, "good"))


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


@functools.lru_cache(maxsize=None)
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


@functools.lru_cache(maxsize=None)
def _index(n):
    return st.integers(0, n - 1)


def pick(data, seq, label):
    """One item of seq (cheaper than a new sampled_from strategy per draw)."""
    return seq[data.draw(_index(len(seq)), label=label)]


RAISING_TENSORS = st.builds(RaisingTensor, st.sampled_from(F.EXCEPTIONS))
GARBAGE_TENSORS = st.builds(GarbageTensor, st.sampled_from(
    ["0x1000", 4096.0, None, b"\x00" * 8, [4096], object(), 1j, np.float64(1.0)]))
NON_SEQUENCES = st.sampled_from([0, 3, None, 1.5, object(), FakeTensor(0x1000), CpuTensor(),
                                 IndexLike(2)])


def _kind(ty):
    if isinstance(ty, tuple):
        return "tuple"
    if ty == "constexpr":
        return "constexpr"
    return "pointer" if is_pointer(ty) else "float" if ty in FLOAT_TYPES else "int"


MUTATIONS = ("arity", "type", "range", "tuple_length", "non_sequence", "data_ptr_raises",
             "data_ptr_garbage", "cpu_tensor")


@settings(max_examples=520, **FUZZ)
@given(kernel=F.kernels(), data=st.data())
def test_bad_calls_name_the_parameter(allocators, kernel, data):
    _RAN.add("test_bad_calls_name_the_parameter")
    _kernel_stats(kernel)
    args = data.draw(F.good_args(kernel), label="good args")
    base = data.draw(F.launch_bases(), label="base")
    by_kind = {}
    for s in F.sites(kernel):
        by_kind.setdefault(_kind(s.type), []).append(s)
    leaves = by_kind.get("pointer", []) + by_kind.get("int", []) + by_kind.get("float", [])
    applicable = {
        "type": leaves, "range": leaves, "tuple_length": by_kind.get("tuple"),
        "non_sequence": by_kind.get("tuple"), "data_ptr_raises": by_kind.get("pointer"),
        "data_ptr_garbage": by_kind.get("pointer"), "cpu_tensor": by_kind.get("pointer"),
    }
    kinds = [m for m in MUTATIONS if applicable.get(m)] or ["arity"]
    for i in range(8):  # eight bad calls per kernel, one mutation each, the first of the count
        mutation = "arity" if i == 0 else pick(data, kinds, "mutation")
        STATS[f"mutation {mutation}"] += 1
        if mutation == "arity":
            n = pick(data, [n for n in (0, kernel.arity - 1, kernel.arity + 1, kernel.arity + 3)
                            if n >= 0 and n != kernel.arity], "count")
            bad = (list(args) + [0, None, 1.0])[:n]
            check_bad(kernel, base, bad, allocators, TypeError,
                      f"kernel {kernel.name!r} takes {kernel.arity} arguments",
                      also=[f"got {n}"])
            continue
        site = pick(data, applicable[mutation], "site")
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
            m = pick(data, [k for k in (n - 1, n + 1, n + 2, 0) if k >= 0 and k != n], "length")
            value = (good + [0, 1.5, None])[:m]
            value = pick(data, [value, tuple(value)], "value")
            check_bad(kernel, base, F.replace(args, site.path, value), allocators, ValueError,
                      name, also=[f"sequence of {n}"])
        elif mutation == "non_sequence":
            value = data.draw(NON_SEQUENCES, label="value")
            check_bad(kernel, base, F.replace(args, site.path, value), allocators, TypeError,
                      name, also=[f"sequence of {len(ty)}"])
        elif mutation == "data_ptr_raises":
            value = data.draw(RAISING_TENSORS, label="value")
            check_bad(kernel, base, F.replace(args, site.path, value), allocators, TypeError,
                      name, also=["data_ptr()", value.exc.__name__])
        elif mutation == "data_ptr_garbage":
            value = data.draw(GARBAGE_TENSORS, label="value")
            check_bad(kernel, base, F.replace(args, site.path, value), allocators, TypeError,
                      name, also=["data_ptr()"])
        elif mutation == "cpu_tensor":
            check_bad(kernel, base, F.replace(args, site.path, CpuTensor()), allocators,
                      TypeError, name, also=["expects", str(ty)])


# --------------------------------------------------------------------------------------------
# Nothing crashes: anything, anywhere


@settings(max_examples=600, **FUZZ)
@given(kernel=F.kernels(max_args=6).filter(lambda k: k.arity > 0), data=st.data())
def test_anything_anywhere_never_crashes(allocators, kernel, data):
    _RAN.add("test_anything_anywhere_never_crashes")
    _kernel_stats(kernel)
    args = data.draw(F.good_args(kernel), label="good args")
    base = data.draw(F.launch_bases(), label="base")
    all_sites = F.sites(kernel)
    for _ in range(6):  # six calls per kernel, one changed place each
        site = pick(data, all_sites, "site")
        value = data.draw(F.anything(), label="value")
        changed = F.replace(args, site.path, value)
        o = Outcome(kernel, base, changed, allocators, "anything")
        STATS[f"anything: {type(o.error).__name__ if o.error else 'accepted'}"] += 1
        if o.error is None:
            # Accepted: hooks ran, scratch as usual, every parameter outside the place as before.
            check_good(kernel, base, changed, o, skip=site.path)
        else:
            check_refused(kernel, o, (TypeError, OverflowError, ValueError),
                          names_place(kernel, site.display))


# --------------------------------------------------------------------------------------------
# Bugs this module found, fixed; a minimal regression test for each.

BASE = (1, 1, 1, 0, 0, (4, 1, 0))  # grid 1x1x1, stream 0, function 0, (num_warps, ctas, shared)


def _one(ty, arg="x"):
    """A kernel 'k' with one argument of type `ty`."""
    return F.Kernel("k", (arg,), (arg,), (ty,), "ast")


def _accepted_or_named(kernel, value, allocators, expect_bytes, errors=(TypeError,)):
    """Either packed as expect_bytes, or refused with one of `errors` naming the parameter."""
    o = Outcome(kernel, BASE, [value], allocators, "pinned")
    if o.error is None:
        assert o.out[0] == expect_bytes
    else:
        check_refused(kernel, o, errors, names_place(kernel, kernel.display[0]))


def _refused_named(kernel, value, allocators, errors=(TypeError, OverflowError, ValueError)):
    check_refused(kernel, Outcome(kernel, BASE, [value], allocators, "pinned"), errors,
                  names_place(kernel, kernel.display[0]))


class _Color(enum.IntEnum):
    ADDRESS = 0x1000


@pytest.mark.parametrize("value", [True, _Color.ADDRESS, F.IntSubclass(0x1000)],
                         ids=["bool", "IntEnum", "int-subclass"])
def test_fixed_bug_A_int_subclass_for_pointer(allocators, value):
    # Was: AttributeError: '<type>' object has no attribute 'data_ptr', from the fast path's
    # `v if v.__class__ is int else v.data_ptr()`. Either packing the address or a TypeError
    # naming 'x' is fine (cf90de1 chose the TypeError).
    _accepted_or_named(_one("*fp32"), value, allocators, int(value).to_bytes(8, "little"))


@pytest.mark.parametrize("ty", ["i1", "u1"])
def test_fixed_bug_B_index_object_for_i1(allocators, ty):
    # i32 accepts IndexLike(7) (struct uses __index__); i1 should accept IndexLike(1) or refuse
    # it with a named error. Was: ValueError() with an empty message: the fast path's
    # `v is True or v is False or v == 0 or v == 1` check fails, the slow path (operator.index)
    # finds nothing wrong, and diagnose() re-raised the fast path's bare ValueError.
    _accepted_or_named(_one(ty), IndexLike(1), allocators, b"\x01", (TypeError, ValueError))


@pytest.mark.parametrize("ty,value", [
    ("i32", F.RaisingIndex(RuntimeError)), ("i1", F.RaisingIndex(RuntimeError)),
    ("fp32", F.RaisingFloat(RuntimeError)), ("fp16", F.RaisingIndex(ZeroDivisionError)),
    ("i64", F.RaisingIndex(ValueError)),  # a ValueError, but without kernel or parameter name
], ids=repr)
def test_fixed_bug_C_raising_dunder(allocators, ty, value):
    # Was: the exception raised by __index__/__float__ propagates as is (RuntimeError etc.):
    # errors._as_int catches only TypeError, errors._check_float only TypeError/ValueError.
    _refused_named(_one(ty), value, allocators)


class _EqLiar:
    def __eq__(self, other):
        return True

    __hash__ = None

    def __index__(self):
        return 5


@pytest.mark.parametrize("ty", ["i1", "u1"])
def test_fixed_bug_D_eq_liar_for_i1(allocators, ty):
    # Was: the fast path checked i1 with ==, struct packed __index__(): accepted, and the
    # kernel's i1 parameter received the byte 0x05. Now: OverflowError (5 is not 0/1).
    _refused_named(_one(ty), _EqLiar(), allocators, (OverflowError, TypeError))


@pytest.mark.parametrize("make", [lambda: {0x10: "a", 0x20: "b"}, lambda: {0x10, 0x20},
                                  lambda: iter([0x10, 0x20])], ids=["dict", "set", "iterator"])
def test_fixed_bug_E_non_sequence_for_tuple(allocators, make):
    # Was: accepted (a dict packs its keys, a set in hash order). Triton's own launcher
    # parses tuples with PyArg_ParseTuple "(..)", which refuses non-sequences with TypeError.
    _refused_named(_one(("i32", "i32"), arg="t"), make(), allocators, TypeError)


class _NumpyPtr:
    def data_ptr(self):
        return np.int64(0x1000)


def test_fixed_bug_F_data_ptr_non_int_blamed_for_others(allocators):
    # Was: alone, x was accepted (packed as 0x1000: struct takes __index__); with a bad n, the
    # slow path refused x's data_ptr() result ("returned numpy.int64, expected an int") and the
    # error names 'x' instead of 'n'. Expected: the same verdict on x both times.
    kernel = F.Kernel("k", ("x", "n"), ("x", "n"), ("*fp32", "i32"), "ast")
    alone = Outcome(kernel, BASE, [_NumpyPtr(), 5], allocators, "pinned")
    with_bad_n = Outcome(kernel, BASE, [_NumpyPtr(), 2**40], allocators, "pinned")
    blamed = "x" if alone.error is not None else "n"
    check_refused(kernel, with_bad_n, (TypeError, OverflowError), names_place(kernel, blamed))


def test_fixed_bug_G_data_ptr_property_raises(allocators):
    # Was: errors._check_pointer's getattr(value, "data_ptr", None) let a RuntimeError through.
    _refused_named(_one("*fp32"), F.RaisingDataPtrAttribute(RuntimeError), allocators)


@pytest.mark.parametrize("ty", ["*fp32", "i32", "fp32"])
def test_fixed_bug_H_int_too_long_to_print(allocators, ty):
    # Was: formatting the message ("got {v}") of an int over 4300 digits raised Python's
    # ValueError "Exceeds the limit (4300 digits) for integer string conversion" instead.
    _refused_named(_one(ty), HUGE_INT, allocators, OverflowError)


# --------------------------------------------------------------------------------------------


def test_zz_at_least_10000_generated_calls():
    """Runs last (file order): the fuzz tests above made at least MIN_CALLS calls."""
    if _RAN != FUZZ_TESTS:
        pytest.skip(f"only {sorted(_RAN)} of the fuzz tests ran in this session")
    total = CALLS["good"] + CALLS["bad"] + CALLS["anything"]
    print(f"\ngenerated calls: {total} {CALLS}")
    for k, v in sorted(STATS.items()):
        print(f"  {k}: {v}")
    assert total >= MIN_CALLS, CALLS
