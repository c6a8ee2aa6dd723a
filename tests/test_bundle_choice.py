"""Which variant a bundled kernel runs (issue 13), against what Triton's JIT computes.

Variants of one kernel are compiled by Triton's own JIT (`kernel.warmup`, on the CPU) for a set
of seed calls. For generated calls, the property test compares the bundle's choice with the
specialization Triton's binder computes for the same arguments: when the bundle holds the
variant of exactly that specialization, it is the one chosen; otherwise the chosen variant is
one whose every assumption the call satisfies, and none that the call satisfies is more
specialised; when nothing is chosen, none fits (or several do and none includes the others).
The choice is also a function of the key the generated call path caches it under.
"""

import sys
import types

import pytest
import triton.language as tl
from hypothesis import HealthCheck, given, settings, strategies as st

import bundle_cases as BC
import bundle_kernels as B
import launcher
from cpu_triton import FakeTensor, NoDtype, Raising, cpu_triton, triton_specialization
from launcher import NoVariantError
from launcher import bundle_format as BF
from launcher import bundle_kernel as BK

A, U = 0x7F0000001000, 0x7F0000002004  # a 16-byte aligned and a misaligned address
SEEDS = [  # (x, out, n, stride, scale, kwargs)
    ((A, tl.float32), (A, tl.float32), 4096, 1, 2.0, {}),
    ((A, tl.float32), (A, tl.float32), 4096, 16, 2.0, {}),
    ((U, tl.float32), (A, tl.float32), 4097, 3, 2.0, {}),
    ((A, tl.float32), (A, tl.float32), 2**33, 16, 2.0, {}),
    ((A, tl.float32), (A, tl.float32), 1, 1, 2.0, {}),
    ((A, tl.float32), (A, tl.float32), 2**63 + 16, 3, 2.0, {}),
    ((A, tl.float16), (A, tl.float32), 4096, 3, 2.0, {}),
    ((A, tl.float32), (A, tl.float32), 4096, 3, 2.0, {"BLOCK": 128}),
    ((A, tl.float32), (A, tl.float32), -32, 3, 2.0, {}),
    ((U, tl.float32), (U, tl.float32), 4097, 5, 1.0, {}),
]



def _call_args(seed):
    x, out, n, stride, scale, kwargs = seed
    return (FakeTensor(*x), FakeTensor(*out), n, stride, scale), kwargs


@pytest.fixture(scope="module")
def scale(tmp_path_factory):
    """(the bundled scale_kernel, its variants, the JIT function), with Triton's CPU driver on."""
    path = tmp_path_factory.mktemp("choice") / "scale.bundle"
    with cpu_triton(90, B.scale_kernel):
        cks = []
        for seed in SEEDS:
            args, kwargs = _call_args(seed)
            cks.append(B.scale_kernel.warmup(*args, grid=(1,), **kwargs))
        launcher.export(path, *cks)
        del cks
        bundle = launcher.load_bundle(path)
        yield bundle.scale_kernel, BF.read_bundle(path)


# ---- Triton's specialization, and what a variant assumes, side by side ----
def _variant_specialization(spec):
    """A variant's specialization in Triton's terms: [(type, "D"/""/None or the constexpr)]."""
    constants, aligned = dict(spec.constants), set(spec.aligned)
    out = []
    for i, a in enumerate(spec.args):
        if a.kind == "constexpr":
            out.append(("constexpr", constants.get((i,))))
        elif a.type in ("fp32", "u1"):
            out.append((a.type, None))
        else:
            out.append((a.type, "D" if (i,) in aligned else ""))
    return out


def _same(a, b):
    return type(a) is type(b) and a == b


def _exact(variant_spec, triton_spec):
    return all(vt == tt and (_same(va, ta) if vt == "constexpr" else va == ta)
               for (vt, va), (tt, ta) in zip(_variant_specialization(variant_spec), triton_spec))


_RANK = {"i32": 0, "i64": 1, "u64": 2}


def _implied(variant_spec, triton_spec, values):
    """Whether a call Triton specializes as `triton_spec` meets every assumption of the variant."""
    for (vt, va), (tt, ta), value in zip(_variant_specialization(variant_spec), triton_spec, values):
        if vt == "constexpr":
            if not (tt == "constexpr" and _same(va, ta)):
                return False
            continue
        if tt == "constexpr":  # an int 1 the variant takes as a value
            if not (ta == 1 and vt in _RANK and va == ""):
                return False
            continue
        if vt in _RANK:
            # a smaller int fits an i64 variant (signed, it computes the same); a u64 one is unsigned
            if tt not in _RANK or _RANK[tt] > _RANK[vt] or (vt == "u64" and tt != "u64"):
                return False
        elif vt != tt:
            return False
        if va == "D" and ta != "D":
            return False
    return True


# Mostly values near the seeds' (so that many calls have a variant), some anywhere.
TENSORS = st.builds(FakeTensor, st.sampled_from([A, A, A, U, A + 8, A + 0x100]),
                    st.sampled_from([tl.float32, tl.float32, tl.float32, tl.float16, tl.bfloat16]))
SEEDISH = st.sampled_from([1, 16, 3, 5, 4096, 4097, -32, 2**33, 2**63 + 16])
INTS = st.one_of(SEEDISH, SEEDISH, st.sampled_from([0, 17, -16, -1, 2**31 - 16, 2**31, 2**33 + 1, 2**63 - 16, 2**63,
                                                    2**64 - 16, -2**31, -2**31 - 16, -2**63]),
                 st.integers(-2**63, 2**64 - 1))
SCALES = st.one_of(st.sampled_from([2.0, 1.0, 0.5]), st.floats(allow_nan=False, allow_infinity=False, width=32),
                   st.sampled_from([2, 1]))
KWARGS = st.sampled_from([{}, {}, {}, {"BLOCK": 128}, {"BLOCK": 256}, {"BLOCK": 64}])
_KEYS = {}


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TENSORS, TENSORS, INTS, INTS, SCALES, KWARGS)
def test_the_variant_chosen_is_tritons_specialization_or_the_most_specialised_correct_one(scale, x, out, n, stride,
                                                                                        s, kwargs):
    kernel, data = scale
    args = (x, out, n, stride, s)
    triton_spec, _ = triton_specialization(B.scale_kernel, *args, **kwargs)
    values = list(args) + [kwargs.get("BLOCK", 256)]
    variants = [data.variants[v] for v in data.kernels["bundle_kernels.scale_kernel"].variants]
    exact = [v for v in variants if _exact(v.spec, triton_spec)]
    implied = [v for v in variants if _implied(v.spec, triton_spec, values)]
    try:
        chosen = kernel.choose(arch=90)(*args, **kwargs)
    except NoVariantError as e:
        chosen, error = None, str(e)
    if exact:
        assert chosen is not None and chosen.id == exact[0].id, (triton_spec, chosen and chosen.describe())
    if chosen is not None:
        assert chosen.id in {v.id for v in implied}, (triton_spec, chosen.describe())
        ranked = {v.id: kernel.chooser.by_id[v.id].atoms for v in implied}
        assert not any(ranked[v] > chosen.atoms for v in ranked), triton_spec
        if (0,) in chosen.spec.aligned:
            assert x.data_ptr() % 16 == 0  # a misaligned pointer never reaches an aligned kernel
    else:
        atoms = [kernel.chooser.by_id[v.id].atoms for v in implied]
        assert not implied or not any(all(a >= b for b in atoms) for a in atoms), error
    # the call path caches the choice by this key: equal keys must choose alike
    if kernel._call is None:
        kernel._generate()
    values = args + (kwargs.get("BLOCK", BK.V.MISSING),)
    key = kernel.key(0, *values)  # the generated call's key
    got = chosen.id if chosen is not None else None
    assert _KEYS.setdefault(key, got) == got, (key, args)


def recording_call(kernel, monkeypatch, torch_tensors):
    """(a fresh copy of the bundled `kernel`, the keys its calls compute, its generated call, that
    call's source): its slow path only records the key (nothing is chosen or launched); with
    torch_tensors, FakeTensor plays torch.Tensor, as where torch with CUDA is imported (tensors of
    its Tensor class are keyed inline)."""
    if torch_tensors:
        torch = type(sys)("torch")
        torch.Tensor = FakeTensor
        monkeypatch.setitem(sys.modules, "torch", torch)
        monkeypatch.setattr(BK, "_torch_raw", [lambda: 0, lambda device: 0])
    else:
        monkeypatch.delitem(sys.modules, "torch", raising=False)
        monkeypatch.setattr(BK, "_torch_raw", [])
        monkeypatch.setattr(BK, "_current_device", lambda: 0)
    fresh = BK.BundleKernel(kernel.bundle, kernel.entry, kernel._variants)
    keys = []
    fresh._slow = lambda grid, stream, args, options, key: keys.append(key)
    fresh._cache[("another key",)] = None  # something recorded: a call looks its key up (else it is made after the checks)
    call = fresh._generate()
    lines = __import__("linecache").getlines(call.__code__.co_filename)
    return fresh, keys, call, "".join(lines[1:])  # the source, without the line naming what it reads (codegen.define)


@pytest.mark.parametrize("torch_tensors", [False, True])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(x=TENSORS, out=TENSORS, n=INTS, stride=INTS, s=SCALES, kwargs=KWARGS)
def test_the_generated_call_keys_by_the_one_rule(scale, monkeypatch, torch_tensors, x, out, n, stride, s, kwargs):
    """The generated call keys its arguments in one C call (GuardKey.find, BundleKernel.key):
    the device, then two items per parameter, by the rules the guard's key follows: a torch
    tensor by dtype and alignment, an int by specialization.int_key, a float by class, a
    constexpr by class and value; other arguments (tensors of other classes) by key_of. Its
    slow path is replaced by one that records the key (nothing is chosen or launched); with
    torch_tensors, FakeTensor plays torch.Tensor."""
    from launcher.specialization import int_key

    kernel, _ = scale
    fresh, keys, call, source = recording_call(kernel, monkeypatch, torch_tensors)
    assert "_launcher_FIND(_launcher_device(), x_ptr, out_ptr, n, stride, scale, BLOCK, )" in source
    assert fresh._generate() is call and fresh[(1,)].keyer is fresh._keyer  # one call and one keyer per kernel
    fresh[(1,)](x, out, n, stride, s, **kwargs)
    values = (x, out, n, stride, s, kwargs.get("BLOCK", BK.V.MISSING))
    assert keys == [fresh.key(0, *values)], (values, keys)

    def tensor(t):
        return (t.dtype, t.data_ptr() % 16 == 0) if torch_tensors else (BK.key_of(t), None)

    def scalar(v):
        return (int_key(v) if v.__class__ is int else v.__class__), None

    block = kwargs.get("BLOCK", BK.V.MISSING)
    assert keys[0] == (0, *tensor(x), *tensor(out), *scalar(n), *scalar(stride), *scalar(s), block.__class__, block)


@pytest.fixture(scope="module")
def tuples(tmp_path_factory):
    """The bundled tests/kernels.tuple_kernel (a tuple and a nested tuple), two variants."""
    import kernels as K

    path = tmp_path_factory.mktemp("tuples") / "tuples.bundle"
    with cpu_triton(90, K.tuple_kernel):
        cks = [K.tuple_kernel.warmup(FakeTensor(A, tl.float32), (FakeTensor(p, tl.float32), n, 3),
                                     ((FakeTensor(A, tl.float32), m), (5, 0.5)), 2, 1.5, grid=(1,))
               for p, n, m in ((A, 16, 4), (U, 7, 16))]
        launcher.export(path, *cks)
        del cks
        yield launcher.load_bundle(path).tuple_kernel


ITEMS = st.one_of(TENSORS, INTS, SCALES, st.none(), st.booleans())
TUPLE_LIKE = st.one_of(st.tuples(TENSORS, INTS, st.just(3)), st.tuples(TENSORS, INTS, INTS),
                       st.lists(ITEMS, max_size=4), st.tuples(ITEMS, ITEMS), st.lists(ITEMS, max_size=3).map(tuple))
NESTED_LIKE = st.one_of(st.tuples(st.tuples(TENSORS, INTS), st.tuples(st.just(5), SCALES)),
                        st.tuples(st.one_of(TUPLE_LIKE, ITEMS), st.one_of(TUPLE_LIKE, ITEMS)), TUPLE_LIKE, ITEMS)


@pytest.mark.parametrize("torch_tensors", [False, True])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(out=TENSORS, t=TUPLE_LIKE, nested=NESTED_LIKE, scale=SCALES)
def test_tuples_are_keyed_item_by_item_and_equal_keys_choose_alike(tuples, monkeypatch, torch_tensors, out, t, nested,
                                                                    scale):
    """Tuples are keyed item by item in C (GuardKey, Triton's full specialization of items),
    lists and whatever else a tuple parameter gets by key_of: calls with equal keys choose the
    same variant, or fail alike."""
    fresh, keys, _, _ = recording_call(tuples, monkeypatch, torch_tensors)
    fresh[(1,)](out, t, nested, 2, scale)
    assert keys == [fresh.key(0, out, t, nested, 2, scale)]
    if t.__class__ is not tuple:
        assert keys[0][3:5] == (BK.key_of(t, FakeTensor if torch_tensors else None), None)
    try:
        got = fresh.choose(arch=90)(out, t, nested, 2, scale).id
    except Exception as e:
        got = type(e).__name__
    assert _TUPLE_KEYS.setdefault((torch_tensors, keys[0]), got) == got, (t, nested)


_TUPLE_KEYS = {}


def _entry(**fields):
    """A stand-in for a bundle's entry (bundle_kernel._Entry) that adjusts no argument: its parts
    are its flat launch, function and stream getter."""
    import types

    return types.SimpleNamespace(parts=(fields["flat"], fields["function"], fields["stream"]), **fields)


def test_a_hit_launches_torch_tensors_as_the_addresses_its_key_read(tuples, monkeypatch):
    """Torch tensors passed where every variant takes a pointer reach the launch as the
    data_ptr() their key read; tuples and every other argument as passed (the flat launch reads
    the addresses inside tuples)."""
    fresh, keys, _, _ = recording_call(tuples, monkeypatch, True)
    out, x, y = FakeTensor(A, tl.float32), FakeTensor(U, tl.float32), FakeTensor(A + 64, tl.float32)
    call = (out, (x, 7, 3), ((y, 4), (5, 0.5)), 2, 1.5)
    fresh[(1,)](*call)  # the slow path records the key
    launched = []
    fresh._cache[keys[0]] = _entry(function=9, stream=lambda: 0, flat=lambda *a: launched.append(a),  # None: launched
                                   grid3=lambda grid, args: (1, 1, 1))
    fresh[(1,)](*call)
    fresh[(1, 2, 3)](*call[:3], k=2, scale=1.5)
    fresh[lambda meta: (1,)](*call)  # a grid to evaluate: the generated call's path, which launches alike
    want = (A, (x, 7, 3), ((y, 4), (5, 0.5)), 2, 1.5)
    # the grid as the call gave it (the flat launch takes a tuple of 1 to 3) where the C call launched
    assert launched == [(9, 0, (1,), *want), (9, 0, (1, 2, 3), *want), (9, 0, (1, 1, 1), *want)]


def test_the_c_call_launches_a_plain_hit_and_leaves_the_rest_to_the_generated_call(tuples, monkeypatch):
    """k[grid] is a C call (GuardKey.set_bundle_call): a hit whose entry adjusts nothing, with a
    tuple grid and no keyword that names no parameter, is launched there (the grid as given; a
    flat launch that does not launch goes to the entry's not_flat with the grid as three ints);
    an entry that adjusts the arguments, launch options, stream=, a surplus positional argument and
    a grid to evaluate go, as they came, to the generated call."""
    fresh, keys, _, _ = recording_call(tuples, monkeypatch, True)
    out, x, y = FakeTensor(A, tl.float32), FakeTensor(U, tl.float32), FakeTensor(A + 64, tl.float32)
    call = (out, (x, 7, 3), ((y, 4), (5, 0.5)), 2, 1.5)
    fresh[(1,)](*call)  # the slow path records the key
    assert len(keys) == 1
    flat, not_flat, ran = [], [], []
    answer = [None]
    entry = fresh._cache[keys[0]] = _entry(
        function=9, stream=lambda: 5, flat=lambda *a: flat.append(a) or answer[0],
        not_flat=lambda *a: not_flat.append(a), grid3=lambda grid, args: (1, 1, 1),
        run=lambda *a: ran.append(a), metadata=(), complete=lambda args: args)
    fresh[(2, 3)](*call)
    assert len(flat) == 1 and flat[0][:3] == (9, 5, (2, 3)) and not not_flat
    answer[0] = False  # declined: the entry's direct launch converts and explains
    fresh[(2, 3)](*call)
    assert not_flat == [(False, 2, 3, 1, 5, A, *call[1:])]
    answer[0] = None
    parts, entry.parts = entry.parts, None  # fills or device arrays: the generated call completes the arguments
    fresh[(2,)](*call)
    assert len(flat) == 2 and len(ran) == 1 and len(keys) == 1
    entry.parts = parts
    fresh[(2,)](*call, num_warps=4)  # options: the generated call's slow path, with them
    assert len(keys) == 2 and keys[-1] is None and len(flat) == 2
    fresh[(2,)](*call, stream=None)  # stream=None is the current stream: the generated call launches it
    assert len(flat) == 3
    with pytest.raises(TypeError, match="takes 5 positional arguments"):
        fresh[(2,)](*call, 1)
    with pytest.raises(TypeError, match="multiple values for argument 'k'"):
        fresh[(2,)](*call, k=2)


def test_the_last_calls_entry_serves_only_its_own_key_and_release_forgets_it(tuples, monkeypatch):
    """The generated call remembers the last (key, entry) it looked up: a call of another key looks
    its own up (or takes the slow path), and release() (which unloads the modules) forgets the pair,
    so the next call takes the slow path, not the released entry."""
    fresh, keys, _, _ = recording_call(tuples, monkeypatch, True)
    out, x, y = FakeTensor(A, tl.float32), FakeTensor(U, tl.float32), FakeTensor(A + 64, tl.float32)
    calls = [(out, (x, 7, 3), ((y, 4), (5, 0.5)), 2, 1.5), (out, (y, 7, 3), ((y, 4), (5, 0.5)), 2, 1.5)]
    launched = []
    for function, call in enumerate(calls):
        fresh[(1,)](*call)  # the slow path records the key
        fresh._cache[keys[-1]] = _entry(function=function, stream=lambda: 0,
                                        flat=lambda f, *a: launched.append(f))  # None: launched
    assert len(keys) == 2 and keys[0] != keys[1]
    for _ in range(2):
        for call in calls + calls[::-1]:
            fresh[(1,)](*call)
    assert launched == [0, 1, 1, 0] * 2
    fresh.release()
    fresh[(1,)](*calls[0])
    assert len(keys) == 3 and launched == [0, 1, 1, 0] * 2  # the slow path, not the remembered entry


@pytest.mark.parametrize("torch_tensors", [False, True])
def test_parameters_named_like_builtins_hide_none_the_generated_call_uses(tmp_path, monkeypatch, torch_tensors):
    """A kernel whose parameters are named len, tuple, int, float and str: its generated call
    refers to no builtin by its own name (a parameter would hide it), and keys as BundleKernel.key does."""
    import builtins

    import kernels as K

    path = tmp_path / "builtins.bundle"
    with cpu_triton(90, K.builtin_names_kernel):
        ck = K.builtin_names_kernel.warmup(FakeTensor(A, tl.float32), 3, FakeTensor(A, tl.float32), 5, 1.5, 7,
                                           BLOCK=64, grid=(1,))
        launcher.export(path, ck)
        del ck
    kernel = launcher.load_bundle(path).builtin_names_kernel
    fresh, keys, call, _ = recording_call(kernel, monkeypatch, torch_tensors)
    assert not set(call.__code__.co_names) & set(vars(builtins))
    values = (FakeTensor(A, tl.float32), 3, FakeTensor(A, tl.float32), 5, 1.5, 7)
    fresh[(1,)](*values, BLOCK=64)
    assert keys == [fresh.key(0, *values, 64)]


DESCRIPTOR_BLOCKS = st.sampled_from([[64, 64], [64, 32], [32, 64], [16]])


@settings(max_examples=300, deadline=None)
@given(a=st.tuples(TENSORS, DESCRIPTOR_BLOCKS, st.sampled_from([None, "swizzle128", "swizzle64"])),
       b=st.tuples(TENSORS, DESCRIPTOR_BLOCKS, st.sampled_from([None, "swizzle128", "swizzle64"])))
def test_a_descriptor_key_holds_what_its_triton_type_says(a, b):
    """key_of skips formatting Triton's type string of a host descriptor, but keys everything in
    it: descriptors with equal keys have equal types (so choose alike)."""
    import types

    from launcher.specialization import _tensordesc_type

    def desc(base, block, layout):
        d = types.SimpleNamespace(base=base, shape=[64] * len(block), strides=[1] * len(block), block_shape=block)
        if layout is not None:
            d.layout = layout
        return d

    da, db = desc(*a), desc(*b)
    if BK.key_of(da) == BK.key_of(db):
        assert _tensordesc_type(da) == _tensordesc_type(db)
    odd = types.SimpleNamespace(base=None, block_shape=[1])  # no dtype: keyed by what Triton's type says
    assert BK.key_of(odd) == (types.SimpleNamespace, _tensordesc_type(odd))


# ---- the rules, one by one ----
def _t(ptr, dtype=tl.float32):
    return FakeTensor(ptr, dtype)


def test_a_misaligned_pointer_never_reaches_a_kernel_compiled_for_aligned_ones(scale):
    kernel, _ = scale
    for x in (_t(U), U, _t(A + 8), A + 4):
        v = kernel.choose(arch=90)(x, _t(A), 4097, 3, 2.0)
        assert (0,) not in v.spec.aligned
    assert (0,) in kernel.choose(arch=90)(_t(A), _t(A), 4096, 16, 2.0).spec.aligned


def test_int_ranges_need_their_variants(scale):
    kernel, _ = scale
    assert kernel.choose(arch=90)(_t(A), _t(A), 2**33, 16, 2.0).spec.args[2].type == "i64"
    assert kernel.choose(arch=90)(_t(A), _t(A), 2**63 + 16, 3, 2.0).spec.args[2].type == "u64"
    with pytest.raises(NoVariantError, match=r"no variant fits these arguments \(parameter 'n' rules out 9, "
                                             r"parameter 'x_ptr' rules out 1\)"):
        kernel.choose(arch=90)(_t(A), _t(A), 2**33 + 1, 16, 2.0)
    assert dict(kernel.choose(arch=90)(_t(A), _t(A), 1, 1, 2.0).spec.constants)[(2,)] == 1


def test_a_u64_variant_never_takes_an_int_triton_types_as_signed(scale):
    kernel, _ = scale
    assert kernel.choose(arch=90)(_t(A), _t(A), 4096, 3, 2.0).spec.args[2].type == "i32"
    with pytest.raises(NoVariantError, match=r"above the i64 range \(u64; "):
        kernel.choose(arch=90)(_t(A), _t(A), 4096 + 2**33, 3, 2.0, BLOCK=256)  # i64 variants: aligned n only


def _deep(depth):
    t = ()
    for _ in range(depth):
        t = (t,)
    return t


def test_calls_no_variant_takes_fail_with_their_own_error_before_any_driver_call(scale):
    """What is wrong with a call itself (arguments, options, grid, stream=) is said before the
    device is asked anything (on CI, where there is no driver, before CudaDriverNotFound); deep
    or self-containing constexprs and options are refused before anything hashes them."""
    kernel, _ = scale
    x = _t(A)
    selfref = []
    selfref.append(selfref)

    class Lying(FakeTensor):
        def data_ptr(self):
            return "%d"

    cases = [
        (lambda: kernel[(1,)](x, x, 4096, 3, 2.0, BLOCK=_deep(100_000)), TypeError,
         "parameter 'BLOCK': tuples and lists nested more than 32 deep"),
        (lambda: kernel[(1,)](x, x, 4096, 3, 2.0, BLOCK=selfref), TypeError, "parameter 'BLOCK': tuples and lists"),
        (lambda: kernel[(1,)](x, x, 4096, 3, 2.0, num_warps=selfref), TypeError, "'num_warps': tuples and lists"),
        (lambda: kernel[(1,)](x, x, "4096", 3, 2.0), NoVariantError, "parameter 'n' rules out 9"),
        (lambda: kernel[(1,)](x, x, 4096, 3, 2.0, foo=1), TypeError, "unexpected keyword argument 'foo'"),
        (lambda: kernel[range(10**12)](x, x, 4096, 3, 2.0), TypeError, "the grid must be a tuple of 1 to 3 ints"),
        (lambda: kernel[[1] * 10**6](x, x, 4096, 3, 2.0), TypeError, "the grid must have 1 to 3 dimensions, got 1000000"),
        (lambda: kernel[(2**31, 1)](x, x, 4096, 3, 2.0), OverflowError, "parameter 'gridX'"),
        (lambda: kernel[(1,)](x, x, 4096, 3, 2.0, stream="s"), TypeError, "parameter 'stream'"),
        (lambda: kernel[(1,)](x, x, 4096, 3, 2.0, stream=True), TypeError, "stream= expects a CUstream handle"),
        (lambda: kernel[(1,)](Lying(A, tl.float32), x, 4096, 3, 2.0), NoVariantError,
         r"parameter 'x_ptr'.*data_ptr\(\) returned str, expected an int"),
        (lambda: kernel[(1,)](Raising(A, tl.float32), x, 4096, 3, 2.0), NoVariantError,
         r"parameter 'x_ptr'.*Raising.data_ptr\(\) raised RuntimeError: no address"),
        (lambda: kernel[(1,)](x, NoDtype(A), 4096, 3, 2.0), NoVariantError,
         r"parameter 'out_ptr'.*NoDtype.dtype raised RuntimeError: no dtype"),
        (lambda: kernel[(1,)](x, x, 4096, 3, 2.0, stream=types.SimpleNamespace(cuda_stream=True)), TypeError,
         "stream= expects a CUstream handle"),
    ]
    for call, error, text in cases:
        with pytest.raises(error, match=text):
            call()


def test_dtypes_and_constexprs_must_match(scale):
    kernel, _ = scale
    assert kernel.choose(arch=90)(_t(A, tl.float16), _t(A), 4096, 3, 2.0).spec.args[0].type == "*fp16"
    with pytest.raises(NoVariantError, match=r"(?s)parameter 'x_ptr' fits no variant.*compiled for a fp16 tensor .*"
                                             r"got a bf16 tensor") as info:
        kernel.choose(arch=90)(_t(A, tl.bfloat16), _t(A), 4096, 3, 2.0)
    assert str(info.value).count("\n  ") == len(SEEDS)  # every variant is listed
    with pytest.raises(NoVariantError, match="(?s)no variant fits these arguments \\(parameter 'BLOCK' rules out 4, "
                                             ".*compiled for the constexpr 256, got 64"):
        kernel.choose(arch=90)(_t(A), _t(A), 4096, 3, 2.0, BLOCK=64)
    with pytest.raises(NoVariantError, match="(?s)parameter 'scale'.*compiled for a float"):
        kernel.choose(arch=90)(_t(U), _t(U), 4097, 5, 2)


def test_compile_options_must_match_and_default_to_tritons(scale):
    kernel, _ = scale
    for before in (None, 64):  # what a call failed on before does not name this call's fault
        if before is not None:
            with pytest.raises(NoVariantError, match="parameter 'BLOCK' rules out"):
                kernel.choose(arch=90)(_t(A), _t(A), 4096, 3, 2.0, BLOCK=before)
        with pytest.raises(NoVariantError, match=r"(?s)\(compile options rules out \d+\).*compiled with num_warps=4, "
                                                 "the call asks for num_warps=8"):
            kernel.choose(arch=90)(_t(A), _t(A), 4096, 3, 2.0, num_warps=8)
    assert kernel.choose(arch=90)(_t(A), _t(A), 4096, 3, 2.0, num_warps=4).spec.num_warps == 4
    for other in (4.0, True):  # another constant, as a prepared launch and Triton's key tell them (spec.same_value)
        with pytest.raises(NoVariantError, match=f"compiled with num_warps=4, the call asks for num_warps={other}"):
            kernel.choose(arch=90)(_t(A), _t(A), 4096, 3, 2.0, num_warps=other)
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'nmu_warps': it is neither a parameter"):
        kernel.choose(arch=90)(_t(A), _t(A), 4096, 3, 2.0, nmu_warps=4)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'scale'"):
        kernel.choose(arch=90)(_t(A), _t(A), 4096, 3)


def test_another_architecture_is_never_chosen(scale):
    kernel, _ = scale
    with pytest.raises(NoVariantError, match="the bundle has variants for sm_90 only; this device is sm_100"):
        kernel.choose(arch=100)(_t(A), _t(A), 4096, 3, 2.0)


def test_a_launch_chooses_for_the_devices_architecture(scale, tmp_path, monkeypatch):
    """BundleKernel._choose (what a launch and prepare() call): the choice among all variants,
    made before the device is asked, is the device's where every variant is for its
    architecture; otherwise the device's architecture chooses again."""
    kernel, _ = scale
    monkeypatch.setattr(BK, "_current_device", lambda: 0)
    call = kernel._bind(_t(A), _t(A), 4096, 16, 2.0)[:2]
    kernel._archs[0] = 90
    assert kernel._choose(*call)[1].id == kernel.choose(arch=90)(_t(A), _t(A), 4096, 16, 2.0).id
    kernel._archs[0] = 100
    with pytest.raises(NoVariantError, match="variants for sm_90 only; this device is sm_100"):
        kernel._choose(*call)
    kernel._archs.clear()
    path = tmp_path / "two.bundle"
    with cpu_triton(90, B.scale_kernel):
        ck90 = B.scale_kernel.warmup(_t(A), _t(A), 4096, 16, 2.0, grid=(1,))
    with cpu_triton(100, B.scale_kernel):
        ck100 = B.scale_kernel.warmup(_t(A), _t(A), 4096, 16, 2.0, grid=(1,))
        launcher.export(path, ck90, ck100)
    two = launcher.load_bundle(path).scale_kernel
    for arch in (90, 100):
        two._archs[0] = arch
        assert two._choose(*two._bind(_t(A), _t(A), 4096, 16, 2.0)[:2])[1].arch == arch


def test_ambiguous_calls_take_the_recorded_variant_or_are_refused(tmp_path, scale):
    kernel, data = scale
    call = (A, _t(A), 4096, 3, 2.0)  # an int address: fp32 and fp16 variants both fit, neither includes the other
    with pytest.raises(NoVariantError, match="several variants fit this call and none is more specialised"):
        kernel.choose(arch=90)(*call)
    fp16 = kernel.choose(arch=90)(_t(A, tl.float16), _t(A), 4096, 3, 2.0)
    from launcher import variants as V

    names = ("x_ptr", "out_ptr", "n", "stride", "scale")
    forms = {n: V.call_form(v) for n, v in zip(names, call)}
    k = data.kernels["bundle_kernels.scale_kernel"]
    for options in ({}, {"num_warps": 4}):  # a call recorded with compile options: the same options take it
        recorded = BF.Call(forms, options, fp16.id)
        path = tmp_path / "recorded.bundle"
        BF.write_bundle(path, data.replace(kernels={k.name: k.replace(calls=(recorded,))}), "test")
        choose = launcher.load_bundle(path).scale_kernel.choose(arch=90)
        assert choose(*call, **options).id == fp16.id
        if options:
            with pytest.raises(NoVariantError, match="several variants fit this call"):
                choose(*call)  # not the options it was recorded with


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    path = tmp_path_factory.mktemp("captured") / "c.bundle"
    BC.capture_workload(path, 90)
    return launcher.load_bundle(path)


def _ptr(p):
    class T:
        dtype = "fp32"

        def data_ptr(self):
            return p

    return T()


def test_a_constant_compiled_in_for_an_argument_keys_that_argument_by_value(captured, tmp_path):
    """A variant with a constant compiled in for a parameter that is not a constexpr (a tuple item
    compiled as a constexpr; a manifest that says BLOCK is not a constexpr) keys that argument by
    value: a call of another value is not the cached call's key (it would launch the constant)."""
    import cpu_corpus as C

    path = tmp_path / "tuples.bundle"
    launcher.export(path, C.BY_NAME["tuples"].compile())  # t = (ptr, i32, constexpr 3), as compiled from its signature
    k = launcher.load_bundle(path).tuple_kernel
    key = lambda third: k.key(0, BC.OUT, (BC.X, 16, third), ((BC.Y, 4), (1, 0.5)), 2, 1.5)  # noqa: E731
    assert key(3) != key(4) and key(3) == key(3)
    data = captured.data
    entry = data.kernels["kernels.add_kernel"]
    loose = entry.replace(params=tuple(p.replace(constexpr=False) if p.name == "BLOCK" else p for p in entry.params))
    path = tmp_path / "loose.bundle"
    BF.write_bundle(path, data.replace(kernels={**data.kernels, entry.name: loose}), "test")
    add = launcher.load_bundle(path)["kernels.add_kernel"]
    x = _t(A)
    assert add.key(0, x, x, x, 4096, 1024) != add.key(0, x, x, x, 4096, 2048)


def test_autotuned_kernels_take_the_config_recorded_for_the_key(captured):
    k = captured.tuned_add
    x, y, out = _ptr(BC.P[0]), _ptr(BC.P[1]), _ptr(BC.P[2])
    assert dict(k.choose(arch=90)(x, y, out, 4096).spec.constants)[(4,)] == 512
    assert k.choose(arch=90)(x, y, out, 4096).spec.num_warps == 8
    assert dict(k.choose(arch=90)(x, y, out, 100).spec.constants)[(4,)] == 128
    with pytest.raises(NoVariantError, match=r"the autotune key \(2000, fp32, fp32, fp32\) .* was never tuned.*"
                                             r"the bundle knows the keys \(4096, fp32, fp32, fp32\); "
                                             r"\(100, fp32, fp32, fp32\)"):
        k.choose(arch=90)(x, y, out, 2000)
    v = k.choose(arch=90)(x, y, out, 2000, BLOCK=1024)  # the caller passes a config
    assert dict(v.spec.constants)[(4,)] == 1024 and v.options["num_stages"] == 2
    assert k.dry_run(BC.GRIDS["cdiv_n_block"], arch=90)(x, y, out, 2000, BLOCK=1024)[3] == (2000).to_bytes(4, "little")


def test_heuristics_kernels_take_what_was_recorded_or_what_the_caller_passes(captured):
    k = captured.heuristic_add
    x, y, out = _ptr(BC.P[0]), _ptr(BC.P[1]), _ptr(BC.P[2])
    assert dict(k.choose(arch=90)(x, y, out, 1000).spec.constants)[(5,)] is False
    assert dict(k.choose(arch=90)(x, y, out, 512).spec.constants)[(4,)] == 512
    with pytest.raises(NoVariantError, match="BLOCK, EVEN \\(computed by @triton.heuristics\\) were not recorded for "
                                             "these arguments: pass BLOCK, EVEN"):
        k.choose(arch=90)(x, y, out, 640)
    assert k.choose(arch=90)(x, y, out, 640, BLOCK=1024, EVEN=False).id == k.choose(arch=90)(x, y, out, 1000).id
    with pytest.raises(NoVariantError, match="parameter 'EVEN' rules out 1, parameter 'BLOCK' rules out 1"):
        k.choose(arch=90)(x, y, out, 640, BLOCK=1024, EVEN=True)
    # Some of the names passed: Triton's Heuristics.run computes them all over what was passed, so the
    # bundle takes every recorded value (never the caller's BLOCK beside an EVEN recorded for another BLOCK)
    partial = dict(k.choose(arch=90)(x, y, out, 512, BLOCK=1024).spec.constants)
    assert (partial[(4,)], partial[(5,)]) == (512, True)
    with pytest.raises(NoVariantError, match="pass BLOCK, EVEN"):
        k.choose(arch=90)(x, y, out, 640, BLOCK=1024)


def test_heuristics_inputs_and_autotune_keys_are_keyed_by_value_inside_tuples_too():
    """A heuristic may read any item of a tuple argument: the generated call's cache keys such
    arguments by value, item by item (a tuple of other values is another key)."""
    assert BK.raw_key((4096, 7)) != BK.raw_key((4112, 7))
    assert BK.raw_key(((1, 2.5), [3])) != BK.raw_key(((1, 2.5), [4]))
    assert BK.raw_key((4096, 7)) == BK.raw_key((4096, 7)) and BK.raw_key((1,)) != BK.raw_key((True,))


def test_tensor_descriptors_from_launchers_own_type(tmp_path):
    import cpu_corpus as C

    path = tmp_path / "tma.bundle"
    launcher.export(path, *(C.BY_NAME["host_tma"].compile(a) for a in (80, 90)))
    k = launcher.load_bundle(path).tma_copy_kernel

    class Base:
        def __init__(self, p, dtype):
            self.p, self.dtype = p, dtype

        def data_ptr(self):
            return self.p

    d = launcher.TensorDescriptor(Base(A, "fp16"), [256, 256], [256, 1], [64, 64])
    assert k.choose(arch=90)(d, d, 64, 64).arch == 90
    params = k.dry_run((4, 4), arch=80)(d, d, BM=64, BN=64)
    assert params[0] == A.to_bytes(8, "little") and params[1] == (256).to_bytes(8, "little")
    bad = launcher.TensorDescriptor(Base(A, "fp32"), [256, 256], [256, 1], [64, 64])
    with pytest.raises(NoVariantError, match="(?s)parameter 'in_desc'.*compiled for tensordesc<fp16\\[64, 64\\]>, "
                                             "got tensordesc<fp32\\[64, 64\\]>"):
        k.choose(arch=90)(bad, d, 64, 64)
    narrow = launcher.TensorDescriptor(Base(A, "fp16"), [256, 256], [256, 1], [64, 32])
    with pytest.raises(NoVariantError, match=r"compiled for tensordesc<fp16\[64, 64\]>, got tensordesc<fp16\[64, 32\]>"):
        k.choose(arch=90)(narrow, d, 64, 64)  # the block shape is part of the type (AssumptionCheck fix)
    with pytest.raises(ValueError, match="base 0x7f0000002004 is not 16-byte aligned"):
        launcher.TensorDescriptor(Base(U, "fp16"), [256, 256], [256, 1], [64, 64])
    with pytest.raises(ValueError, match="the last dimension must be contiguous"):
        launcher.TensorDescriptor(Base(A, "fp16"), [256, 256], [512, 2], [64, 64])


def test_cuda_array_interface_objects_are_pointers_and_descriptor_bases(tmp_path, scale):
    kernel, _ = scale

    class Array:
        def __init__(self, p, typestr="<f4", shape=(256, 256)):
            self.__cuda_array_interface__ = {"data": (p, False), "typestr": typestr, "shape": shape,
                                             "strides": None, "version": 3}

    assert (0,) in kernel.choose(arch=90)(Array(A), Array(A), 4096, 16, 2.0).spec.aligned
    assert kernel.choose(arch=90)(Array(A, "<f2"), Array(A), 4096, 3, 2.0).spec.args[0].type == "*fp16"
    params = kernel.dry_run((1,), arch=90)(Array(A), Array(A + 0x100), 4096, 16, 2.0)
    assert params[0] == A.to_bytes(8, "little") and params[1] == (A + 0x100).to_bytes(8, "little")
    d = launcher.TensorDescriptor.from_tensor(Array(A, "<f2"), [64, 64])
    assert d.shape == [256, 256] and d.strides == [256, 1] and d.base.dtype == "fp16"


def test_the_grid_may_be_a_callable_of_the_meta_parameters(scale):
    kernel, _ = scale
    seen = []

    def grid(meta):
        seen.append(dict(meta))
        return (meta["n"] // meta["BLOCK"],)

    kernel.dry_run(grid, arch=90)(_t(A), _t(A), 4096, 16, 2.0)
    assert seen == [{"x_ptr": seen[0]["x_ptr"], "out_ptr": seen[0]["out_ptr"], "n": 4096, "stride": 16,
                     "scale": 2.0, "BLOCK": 256}]
    with pytest.raises(TypeError, match="the grid must have 1 to 3 dimensions"):
        kernel.dry_run((1, 1, 1, 1), arch=90)(_t(A), _t(A), 4096, 16, 2.0)
