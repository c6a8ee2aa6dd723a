"""The C packer and the Python packer agree, over generated layouts and values (dry runs, CPU).

The C packs every launch it takes (launcher._call.FlatLaunch: the fast dispatch's hits and
bundles, with launcher.checks.c_checks(layout)); the Python packer (launcher.arguments, the
plan-driven path) remains to explain what the C declines. So, for any signature and any values:
- when the C packs a call, the Python packer takes it too, with the same bytes;
- when the Python packer refuses a call (an error naming the kernel), the C declined it;
- when the C declines a call the Python packer takes, some value lies outside what the C packs
  itself (exact ints, floats, bools and tuples, ints or data_ptr() objects for pointers): for
  those, declining and refusing are the same thing.
And c_checks has a check for a layout exactly when every leaf has one (not fp16)."""
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzz_signatures as F
from cpu_triton import FakeTensor  # a tensor as a prepared launch sees one (its dtype: a name Triton knows)
from launcher import CudaLauncher
from launcher.checks import c_checks
from test_flat_launch import GRIDS, Recorder, _flat_types, _taken

FUZZ = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
REFUSALS = (TypeError, ValueError, OverflowError)


def near_miss(ty):
    """Values of the C's own types just outside what `ty` takes, and the other exact types."""
    if isinstance(ty, tuple):
        n = len(ty)
        return st.sampled_from([tuple(range(n + 1)), tuple(range(max(n - 1, 0))), list(range(n)), None])
    if ty == "constexpr":
        return F.anything()
    if F.is_pointer(ty):
        return st.sampled_from([-1, 2**64, True, None, 0.0, F.FakeTensor(-16), F.FakeTensor(2**64)])
    if ty in F.BOOL_TYPES:
        return st.sampled_from([2, -1, 0.0, 1.0, None])
    if ty in F.INT_RANGE:
        lo, hi = F.INT_RANGE[ty]
        return st.sampled_from([lo - 1, hi + 1, -2**64, 2**64, float(hi), True, None])
    big = 1e300 if ty == "fp64" else 3.5e38
    return st.sampled_from([big, -big, math.inf, 2**1024, 1, "1.0", None])


def python_outcome(launcher, grid, stream, function, args):
    """("bytes", what each parameter receives) from the plan-driven packer, or ("refused", error)."""
    try:
        return "bytes", launcher.dry_run_planned(*grid, stream, function, launcher.packed_metadata, None, None, None,
                                                 *args)
    except REFUSALS as e:
        return "refused", e


@settings(max_examples=400, **FUZZ)
@given(kernel=F.kernels(max_args=6, scratch=False), data=st.data())
def test_the_c_packer_and_the_python_packer_agree(kernel, data):
    launcher = CudaLauncher(kernel.src(), kernel.metadata())
    shape = launcher._shape
    has_checks = all(map(_flat_types, kernel.types))
    assert (c_checks(shape.spec.layout) is not None) == has_checks
    if not has_checks:
        assert launcher.flat_launch(launcher.packed_metadata) is None
        return
    rec = Recorder(launcher)
    flat = launcher.flat_launch(launcher.packed_metadata, record=rec)
    args = data.draw(F.good_args(kernel), label="args")
    for _ in range(4):
        changed = args
        if kernel.arity and data.draw(st.booleans(), label="change one"):
            site = data.draw(st.sampled_from(F.sites(kernel)), label="site")
            value = data.draw(st.one_of(near_miss(site.type), F.anything()), label="value")
            changed = F.replace(args, site.path, value)
        grid = data.draw(GRIDS, label="grid")
        stream, function = data.draw(st.integers(0, 2**64 - 1)), data.draw(st.integers(0, 2**64 - 1))
        c = flat(function, stream, grid, *changed)
        kind, py = python_outcome(launcher, grid, stream, function, changed)
        if c is None:  # the C packed it: the Python packer takes it, with the same bytes
            assert kind == "bytes", py
            assert rec.calls.pop() == (grid, py)
        else:
            assert c is False and not rec.calls
            if kind == "refused":  # the Python packer explains, naming the kernel
                assert str(py).startswith(f"kernel {kernel.name!r}"), py
            else:  # taken by Python alone: some value is not one the C packs itself
                assert not all(map(_taken, kernel.types, changed)), changed


# ---- prepared launches: launcher._call.FastCall with the prepared call's assumptions ----
CONSTEXPRS = st.sampled_from([1, 16, 2.5, True, False, "x", None, (1, 2), 0])
ADDRESSES = st.sampled_from([0x7F0000001000, 0x7F0000001004, 0x7F0000001010, 0x7F0000002008, 0])


def _dtype(ty):
    """The dtype of a tensor a kernel compiled for pointer type `ty` takes (None: none we model)."""
    from launcher.specialization import dtype_name

    return ty[1:] if dtype_name(ty[1:]) == ty[1:] else None


@st.composite
def prepared_value(draw, ty, typed):
    """A value a kernel compiled for `ty` was prepared with: its C path checks new ones."""
    if isinstance(ty, tuple):
        return tuple(draw(prepared_value(t, False)) for t in ty)
    if ty == "constexpr":
        return draw(CONSTEXPRS)
    if F.is_pointer(ty):
        dtype = _dtype(ty)
        address = draw(ADDRESSES)
        return address if dtype is None else FakeTensor(address, dtype)
    if ty in F.BOOL_TYPES:
        return draw(st.booleans())
    if ty in F.INT_RANGE:
        lo, hi = F.INT_RANGE[ty]
        if ty == "u64" and not typed:  # Triton compiles an unannotated u64 only above the i64 range
            lo = 2**63
        return draw(st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, max(lo, 0), max(lo, 16)])))
    return draw(st.floats(-1e30, 1e30))


def new_value(ty, prepared):
    """A new argument for a parameter prepared with `prepared`: like it, beside it, or anything."""
    same = st.just(prepared)
    if isinstance(ty, tuple) or ty == "constexpr":
        return st.one_of(same, near_miss(ty), F.anything(), CONSTEXPRS)
    if F.is_pointer(ty):
        like = ([FakeTensor(a, prepared.dtype) for a in (0x7F0000003000, 0x7F0000003004)]
                if isinstance(prepared, FakeTensor) else [])
        return st.one_of(same, ADDRESSES, st.sampled_from(like + [FakeTensor(0x7F0000003000, "fp64")]), near_miss(ty))
    if ty in F.BOOL_TYPES:
        return st.one_of(same, st.sampled_from([True, False, 0, 1]), near_miss(ty))
    if ty in F.INT_RANGE:
        lo, hi = F.INT_RANGE[ty]
        return st.one_of(same, st.integers(lo, hi), st.sampled_from([lo, hi, 0, 16, 17, 2**63, 2**63 + 16]),
                         near_miss(ty), st.builds(F.IntSubclass, st.integers(lo, hi)))
    return st.one_of(same, st.floats(), st.integers(-2**70, 2**70), near_miss(ty))


def prepared_taken(ty, value, prepared, typed=False) -> bool:
    """Whether the C call of a launch prepared with `prepared` packs `value` itself (its exact
    types: the prepared object or an equal one of its class for a constexpr, a tensor of the
    prepared class and dtype or an int for a pointer, exact ints, floats, bools and tuples)."""
    if ty == "constexpr":
        return value is prepared or (value.__class__ is prepared.__class__ and
                                     prepared.__class__ in (int, float, bool, str) and value == prepared)
    if isinstance(ty, tuple):
        return value.__class__ is tuple and len(value) == len(ty) and all(map(prepared_taken, ty, value, prepared))
    if F.is_pointer(ty):
        return value.__class__ is int or (value.__class__ is FakeTensor and value.dtype is prepared.dtype)
    if ty in F.BOOL_TYPES:
        return value is True or value is False
    if ty in F.INT_RANGE:
        return value.__class__ is int
    return value.__class__ is float


def _prepare(kernel, data):
    from launcher import spec as S
    from launcher import triton_adapter as A
    from launcher.prepared import PreparedLaunch

    typed = [data.draw(st.booleans(), label=f"annotated {i}") and isinstance(t, str) and t != "constexpr"
             for i, t in enumerate(kernel.types)]
    params = tuple(A.Parameter(str(k), A.EMPTY, t == "constexpr", False, False, t if a else "")
                   for k, t, a in zip(kernel.keys, kernel.types, typed))
    values = tuple(data.draw(prepared_value(t, a), label=f"prepared {i}")
                   for i, (t, a) in enumerate(zip(kernel.types, typed)))
    aligned, constants = [], []

    def visit(ty, path, value):
        if isinstance(ty, tuple):
            for j, (t, v) in enumerate(zip(ty, value)):
                visit(t, path + (j,), v)
        elif ty == "constexpr":
            constants.append((path, S.encode_constant(value)))
        elif F.is_pointer(ty) or (ty in F.INT_RANGE and ty not in F.BOOL_TYPES):
            address = value if value.__class__ is int else value.data_ptr()
            if address % 16 == 0 and data.draw(st.booleans(), label=f"aligned {path}"):
                aligned.append(path)

    for i, (t, v) in enumerate(zip(kernel.types, values)):
        visit(t, (i,), v)
    spec = CudaLauncher(kernel.src(), kernel.metadata()).spec.derive(aligned=tuple(aligned), constants=tuple(constants))
    return PreparedLaunch(spec, params, values, {}, (2, 1, 1), function=0xF00, stream=lambda: 0x5EA,
                          dry_run=True), values, typed


@settings(max_examples=300, **FUZZ)
@given(kernel=F.kernels(max_args=5, scratch=False).filter(lambda k: k.arity and all(map(_flat_types, k.types))),
       data=st.data())
def test_a_prepared_launchs_c_call_and_its_python_path_agree(kernel, data):
    """p(*args) in C packs what p.launch(*args) (the assumption check, then the Python packer)
    packs; what p.launch refuses, the C declined (to p.launch, which raises); and what the C
    declines that p.launch takes has a value outside what the C packs itself."""
    from launcher.specialization import AssumptionError

    p, values, typed = _prepare(kernel, data)
    # a pointer prepared with an address has no test in C (the Python path checks new ones): no C call at all
    has_c = not any(F.is_pointer(site.type) and F.get(values, site.path).__class__ is int for site in F.sites(kernel))
    assert p._fast_ready()[1] == has_c
    general, declined = p.launch, []
    p.launch = lambda *a, **k: declined.append(a) or general(*a, **k)
    for _ in range(4):
        new = list(values)
        if kernel.arity:
            i = data.draw(st.integers(0, kernel.arity - 1), label="argument")
            new[i] = data.draw(new_value(kernel.types[i], values[i]), label="value")
        declined.clear()
        try:
            c = ("bytes", p(*new))
        except (AssumptionError,) + REFUSALS as e:
            c = ("refused", e)
        try:
            py = ("bytes", general(*new))
        except (AssumptionError,) + REFUSALS as e:
            py = ("refused", e)
        if not declined:  # the C packed it: the Python path takes it, with the same bytes
            assert c[0] == "bytes" and py == c, (new, py)
        elif py[0] == "refused":  # the Python path explains, naming the kernel
            assert c[0] == "refused" and str(py[1]).startswith(f"kernel {kernel.name!r}"), py
        elif has_c:  # taken by Python alone: some value is not one the C packs itself
            assert not all(map(prepared_taken, kernel.types, new, values)), new
        _agrees_by_keyword(p, kernel, values, new, c, not declined, declined, data)


def _outcome(call):
    from launcher.specialization import AssumptionError

    try:
        return "bytes", call()
    except (AssumptionError,) + REFUSALS as e:
        return "refused", f"{type(e).__name__}: {e}"


def _agrees_by_keyword(p, kernel, values, new, c, taken, declined, data):
    """The call `new` split at random between positional arguments and keywords (in a random
    order; a constexpr may be left out, taking its prepared value) gives what the positional
    call gives, the same bytes or the same refusal, and the C takes it exactly when it took the
    positional call."""
    names = [q.name for q in p.params]
    k = data.draw(st.integers(0, kernel.arity), label="positional")
    rest = data.draw(st.permutations(range(k, kernel.arity)), label="keyword order")
    left_out = {i for i in rest if kernel.types[i] == "constexpr" and data.draw(st.booleans(), label=f"leave out {i}")}
    if left_out and any(new[i] is not values[i] for i in left_out):  # the positional call it stands for
        full = [values[i] if i in left_out else v for i, v in enumerate(new)]
        declined.clear()
        c = _outcome(lambda: p(*full))
        taken = not declined
    else:
        c = ("bytes", c[1]) if c[0] == "bytes" else ("refused", f"{type(c[1]).__name__}: {c[1]}")
    if k == 0 and len(left_out) == len(rest):
        taken = False  # p(): the launch bound at prepare time, which a dry run has not (launch() runs)
    declined.clear()
    by_keyword = _outcome(lambda: p(*new[:k], **{names[i]: new[i] for i in rest if i not in left_out}))
    assert by_keyword == c, (k, rest, left_out, new)
    assert (not declined) == taken, (k, rest, left_out, new)
