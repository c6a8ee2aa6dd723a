"""Prepared launches on the CPU (dry run, any Triton 3.6-3.9).

Kernels are compiled for the specialization Triton's JIT computes for the prepared arguments
(triton._C.libtriton.native_specialize_impl), so each prepared launch holds a kernel exactly as
kernel[grid] would have chosen it. Over generated argument sets, a call raises exactly when an
assumption of that kernel is broken (judged here from Triton's own specialization of the new
arguments, independently of launcher.specialization), and otherwise packs the bytes the JIT
path's launcher packs. The C path (launcher._call) and the general path must agree on every call."""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import kernels as K
import launcher
from launcher import CudaLauncher, triton_adapter as A
from launcher.prepared import PreparedLaunch
from launcher.specialization import AssumptionError
from triton_compile import compile_cpu
from cpu_triton import FakeTensor, NoDtype, Raising

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")



def native(value, specialize=True, align=True):
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend

    return native_specialize_impl(BaseBackend, value, False, specialize, align)


def jit_specialization(fn, values):
    """signature, constexprs and attrs Triton's JIT computes for a call of `fn`: its binder's
    specialization, with constexprs and divisibility found at every path, tuples included."""
    params = A.jit_parameters(fn)
    signature, constexprs, attrs = {}, {}, {}

    def walk(path, ty, attr, value):
        if isinstance(ty, tuple):
            for j, (t, a, v) in enumerate(zip(ty, attr, value)):
                walk(path + (j,), t, a, v)
        elif ty == "constexpr":
            constexprs[path] = attr if len(path) == 1 else value
        elif attr == "D":
            attrs[path] = True

    for i, (p, v) in enumerate(zip(params, values)):
        if p.is_constexpr:
            signature[p.name] = "constexpr"
            constexprs[(i,)] = v
            continue
        ty, attr = native(v, not p.do_not_specialize, not p.do_not_specialize_on_alignment)
        signature[p.name] = ty
        walk((i,), ty, attr, v)
    return signature, constexprs, attrs


def compile_for_call(fn, values):
    signature, constexprs, attrs = jit_specialization(fn, values)
    return compile_cpu(fn, tuple(signature.items()), tuple(constexprs.items()), 90, tuple(attrs))


def prepared(fn, values, grid=(4,), runtime=None, stream=lambda: 0x5EA):
    ck = compile_for_call(fn, values)
    spec = A.spec_from_triton(ck.src, ck.metadata)
    return PreparedLaunch(spec, A.jit_parameters(fn), tuple(values), {}, grid, function=0xF00,
                          stream=stream, runtime=runtime, compiled=ck, dry_run=True), ck


def outcomes(p, values) -> list:
    """What the C path p(*values) and the general path p.launch(*values) each did:
    ("bytes", the dry run's bytes), ("refused", the AssumptionError) or ("error", the error)."""
    results = []
    for call in (p, p.launch):
        try:
            results.append(("bytes", call(*values)))
        except AssumptionError as e:
            results.append(("refused", str(e)))
        except (TypeError, OverflowError, ValueError) as e:
            results.append(("error", f"{type(e).__name__}: {e}"))
    return results


def breaks(ck, fn, values) -> bool:
    """Does a call break an assumption of `ck`? Triton's specialization of the call against ck's."""
    new_sig, new_consts, new_attrs = jit_specialization(fn, values)
    sig = dict(ck.src.signature)
    consts = dict(ck.src.constants)
    aligned = {k for k, v in ck.src.attrs.items() if v}
    for i, p in enumerate(A.jit_parameters(fn)):
        old, new = sig[p.name], new_sig[p.name]
        if old == "constexpr":
            a, b = consts[(i,)], new_consts.get((i,), object())
            if type(a) is not type(b) or a != b:
                return True
            continue
        if old.startswith("*"):
            if new != old or ((i,) in aligned and (i,) not in new_attrs):
                return True
            continue
        if old in ("i32", "i64", "u64"):
            value = values[i]
            if type(value) is not int:
                return True
            # a smaller int for an i64 kernel computes the same; for a u64 one (unsigned) it does not
            lo, hi = {"i32": (-2**31, 2**31 - 1), "i64": (-2**63, 2**63 - 1), "u64": (2**63, 2**64 - 1)}[old]
            if not lo <= value <= hi or ((i,) in aligned and value % 16):
                return True
            continue
        if new != old:
            return True
    return False


# The prepared calls: each compiles the kernel Triton would compile for it.
A0, A1 = 0x7F0000001000, 0x7F0000001004  # 16-byte aligned, 4-byte aligned
PREPARED_ADD = [
    (FakeTensor(A0, tl.float32), FakeTensor(A0, tl.float32), FakeTensor(A0, tl.float32), 1024, 256),
    (FakeTensor(A1, tl.float32), FakeTensor(A0, tl.float32), FakeTensor(A0, tl.float32), 1000, 256),
    (FakeTensor(A0, tl.float32), FakeTensor(A1, tl.float32), FakeTensor(A1, tl.float32), 2**40, 256),
    (FakeTensor(A0, tl.float32), FakeTensor(A0, tl.float32), FakeTensor(A0, tl.float32), 1, 256),
    (FakeTensor(A0, tl.float32), FakeTensor(A0, tl.float32), FakeTensor(A0, tl.float32), 2**63 + 16, 256),
]

ADDRESSES = st.sampled_from([A0, A1, A0 + 8, A0 + 16, 0x7F0000002000])
TENSORS = st.builds(FakeTensor, ADDRESSES, st.sampled_from([tl.float32, tl.float32, tl.float16]))
INTS = st.sampled_from([0, 1, 16, 17, 1024, 1000, -16, 2**31 - 1, 2**31, 2**40, -2**40, 2**63 + 16, 2**64 - 1])
N = st.one_of(INTS, st.sampled_from([16.0, True]))
BLOCK = st.sampled_from([256, 256, 256, 128, 256.0])


@pytest.fixture(scope="module")
def add_prepared():
    return [prepared(K.add_kernel, values) for values in PREPARED_ADD]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, len(PREPARED_ADD) - 1), TENSORS, TENSORS, TENSORS, N, BLOCK)
def test_a_new_call_raises_exactly_when_it_breaks_an_assumption(add_prepared, which, x, y, out, n, block):
    p, ck = add_prepared[which]
    values = (x, y, out, n, block)
    try:
        expected_break = breaks(ck, K.add_kernel, values)
    except (OverflowError, TypeError):  # Triton cannot specialize it at all
        expected_break = True
    results = outcomes(p, values)
    assert results[0] == results[1], results
    outcome, detail = results[0]
    if expected_break:
        assert outcome in ("refused", "error"), (values, results)
        assert detail.startswith("kernel 'add_kernel': parameter '") or "kernel 'add_kernel'" in detail, detail
    else:
        assert outcome == "bytes", (values, results)
        jit_path = CudaLauncher(ck.src, ck.metadata).dry_run(4, 1, 1, 0x5EA, 0xF00, p.spec.packed_metadata,
                                                            None, None, None, *values)
        assert detail == jit_path


def test_the_same_arguments_pack_once_and_equal_the_jit_path(add_prepared):
    for (p, ck), values in zip(add_prepared, PREPARED_ADD):
        want = CudaLauncher(ck.src, ck.metadata).dry_run(4, 1, 1, 0x5EA, 0xF00, p.spec.packed_metadata,
                                                        None, None, None, *values)
        assert p() == want == p.launch() == p(*values)


def test_trailing_constexprs_may_be_left_out_and_keywords_work(add_prepared):
    p, _ = add_prepared[0]
    x = FakeTensor(A0, tl.float32)
    assert p(x, x, x, 32) == p(x, x, x, 32, 256) == p(x, x, x, n=32) == p(x, x, out_ptr=x, n=32, BLOCK=256)
    with pytest.raises(AssumptionError, match="parameter 'BLOCK': the kernel was compiled for the constexpr 256, got 128"):
        p(x, x, x, 32, BLOCK=128)
    with pytest.raises(TypeError, match="parameter 'n' is missing"):
        p(x, x, x)
    with pytest.raises(TypeError, match="takes 5 arguments"):
        p(x, x, x, 32, 256, 7)
    with pytest.raises(AssumptionError, match="option 'num_warps' was prepared as"):
        p(x, x, x, 32, num_warps=8)


def test_the_common_calls_take_the_c_path_and_the_rest_the_general_one(add_prepared):
    """p(*args) and p(*args, **kwargs) of the prepared kinds are launcher._call's tp_call: bound,
    checked and packed in C, no call of p.launch; launch options, a call Python's binding refuses
    and an argument that fails a test go to p.launch."""
    p, _ = add_prepared[0]
    assert p._fast_ready() == (False, True)  # a dry run binds no launch: p() takes launch() too
    general, fell_back = p.launch, []
    p.launch = lambda *a, **k: fell_back.append((a, k)) or general(*a, **k)
    try:
        x = FakeTensor(A0 + 0x40, tl.float32)
        p(x, x, x, 2048, 256)
        p(x, x, x, 2048)  # the trailing constexpr left out
        assert not fell_back
        p(x, x, x, n=2048)  # a parameter by name
        p(x, x, x, 2048, BLOCK=256)  # the constexpr again, as prepared
        assert not fell_back
        with pytest.raises(AssumptionError, match="option 'num_warps'"):
            p(x, x, x, 2048, num_warps=4)  # a launch option: the general path refuses it
        with pytest.raises(TypeError, match="parameter 'out_ptr' is missing"):
            p(x, x)  # the general path explains
    finally:
        del p.launch
    assert [k for _, k in fell_back] == [{"num_warps": 4}, {}], fell_back


def test_a_callable_grid_is_evaluated_with_the_new_arguments():
    grid = lambda meta: (meta["n"] // meta["BLOCK"], 1, 1)  # noqa: E731
    x = FakeTensor(A0, tl.float32)
    p, ck = prepared(K.add_kernel, (x, x, x, 1024, 256), grid=grid)
    assert p.grid == (4, 1, 1)
    seen = []
    p._launcher = _Recorder(p._launcher, seen)  # the general path's launcher call records its grid
    p.launch(x, x, x, 2048)
    assert seen[-1][:3] == (8, 1, 1)


class _Recorder:
    def __init__(self, inner, seen):
        self.inner, self.seen = inner, seen

    def dry_run(self, *call):
        self.seen.append(call)
        return self.inner.dry_run(*call)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_launch_hooks_run_when_set_and_the_default_empty_chains_count_as_unset():
    from triton import knobs

    x = FakeTensor(A0, tl.float32)
    p, _ = prepared(K.add_kernel, (x, x, x, 1024, 256), runtime=knobs.runtime)
    seen = []
    saved = knobs.runtime.launch_enter_hook
    try:
        assert p() and not seen
        knobs.runtime.launch_enter_hook.add(lambda md: seen.append(md.get()["name"]))
        p(x, x, x, 16)
        p()
        assert seen == ["add_kernel", "add_kernel"]
    finally:
        knobs.runtime.launch_enter_hook = saved
        saved.calls.clear()


def test_tuples_are_checked_item_by_item():
    values = (FakeTensor(A0, tl.float32), (FakeTensor(A0, tl.float32), 16, 3), ((FakeTensor(A0, tl.float32), 4), (1, 0.5)), 2, 1.5)
    p, ck = prepared(K.tuple_kernel, values)
    assert p(*values) == CudaLauncher(ck.src, ck.metadata).dry_run(4, 1, 1, 0x5EA, 0xF00, p.spec.packed_metadata,
                                                                   None, None, None, *values)
    bad = (values[0], (FakeTensor(A1, tl.float32), 16, 3)) + values[2:]
    with pytest.raises(AssumptionError, match=r"parameter 't\[0\]': the kernel was compiled for a pointer divisible by 16"):
        p(*bad)
    p(values[0], (values[1][0], 16, 4), *values[2:])  # t[2] is an i32 here: 3 is no constexpr
    with pytest.raises(AssumptionError, match=r"parameter 'nested\[1\]\[0\]': the kernel was compiled for the constexpr 1, got 2"):
        p(values[0], values[1], ((values[2][0][0], 4), (2, 0.5)), *values[3:])


TUPLE_VALUES = (FakeTensor(A0, tl.float32), (FakeTensor(A0, tl.float32), 16, 3),
                ((FakeTensor(A0, tl.float32), 4), (1, 0.5)), 2, 1.5)
ITEMS = st.one_of(TENSORS, INTS, st.sampled_from([0.5, 1.5, 2.0, True, None]))
T = st.one_of(st.tuples(TENSORS, INTS, st.sampled_from([3, 3, 4])), st.tuples(TENSORS, INTS),
              st.lists(ITEMS, min_size=3, max_size=3), st.tuples(ITEMS, ITEMS, ITEMS))
NESTED = st.one_of(st.tuples(st.tuples(TENSORS, INTS), st.tuples(st.sampled_from([1, 1, 2]), st.sampled_from([0.5, 2.0, 3]))),
                   st.tuples(st.tuples(TENSORS, INTS, INTS), st.tuples(ITEMS, ITEMS)),
                   st.tuples(st.lists(ITEMS, min_size=2, max_size=2), st.tuples(ITEMS, ITEMS)))


@pytest.fixture(scope="module")
def tuple_prepared():
    return prepared(K.tuple_kernel, TUPLE_VALUES)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TENSORS, T, NESTED, st.sampled_from([2, 2, 3]), st.sampled_from([1.5, 0.25, 2]))
def test_tuple_arguments_take_the_fast_path_and_it_agrees_with_the_general_one(tuple_prepared, out, t, nested, k,
                                                                                 scale):
    """Tuples are checked item by item in the C path: a call it takes packs the bytes the
    general path packs, and one it does not take is refused (or packed) as the general path does."""
    p, ck = tuple_prepared
    values = (out, t, nested, k, scale)
    results = outcomes(p, values)
    assert results[0] == results[1], results
    if results[0][0] == "bytes":
        assert results[0][1] == CudaLauncher(ck.src, ck.metadata).dry_run(4, 1, 1, 0x5EA, 0xF00, p.spec.packed_metadata,
                                                                          None, None, None, *values)


def test_a_prepared_tuple_kernel_has_a_fast_path():
    p, _ = prepared(K.tuple_kernel, TUPLE_VALUES)
    assert p._fast_ready()[1]
    general, fell_back = p.launch, []
    p.launch = lambda *a, **k: fell_back.append(a) or general(*a, **k)  # what the C path falls back to
    x = FakeTensor(A0 + 0x40, tl.float32)
    p(x, (x, 32, 3), ((x, 20), (1, 2.5)), 2, 0.5)
    assert not fell_back
    with pytest.raises(AssumptionError, match="parameter 't': the kernel was compiled for a tuple of 3, got \\["):
        p(x, [x, 32, 3], ((x, 20), (1, 2.5)), 2, 0.5)  # a list: the general path refuses it, as Triton does
    assert len(fell_back) == 1


def test_a_kernel_with_unknown_assumptions_cannot_be_prepared():
    x = FakeTensor(A0, tl.float32)
    ck = compile_for_call(K.add_kernel, (x, x, x, 1024, 256))
    spec = A.spec_from_triton(ck.src, ck.metadata).derive(aligned=None, constants=None)  # as from a PTX source
    with pytest.raises(AssumptionError, match="is not known"):
        PreparedLaunch(spec, A.jit_parameters(K.add_kernel), (x, x, x, 1024, 256), {}, (1,), function=0,
                       stream=lambda: 0, dry_run=True)


def test_prepare_is_public():
    assert launcher.prepare is launcher.prepared.prepare
    assert issubclass(launcher.AssumptionError, ValueError)


def test_heuristics_are_evaluated_again_and_must_choose_the_same_constexprs():
    import triton

    h = triton.heuristics(values={"BLOCK": lambda a: 256 if a["n"] <= 4096 else 1024})(K.add_kernel)
    x = FakeTensor(A0, tl.float32)
    ck = compile_for_call(K.add_kernel, (x, x, x, 1024, 256))
    spec = A.spec_from_triton(ck.src, ck.metadata)
    p = PreparedLaunch(spec, A.jit_parameters(K.add_kernel), (x, x, x, 1024, 256), {}, (4,), function=0,
                       stream=lambda: 0, compiled=ck, dry_run=True, layers=(("heuristics", h, {"BLOCK": 256}),))
    assert p(x, x, x, 2048) == p.launch(x, x, x, 2048)
    with pytest.raises(AssumptionError, match=r"@triton.heuristics choose BLOCK=1024 for these arguments; "
                                              r"the prepared kernel has BLOCK=256"):
        p(x, x, x, 8192)


def test_an_autotune_key_that_chooses_another_config_is_refused():
    import triton

    tuner = triton.autotune(configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 512})], key=["n"])(K.add_kernel)
    x = FakeTensor(A0, tl.float32)
    ck = compile_for_call(K.add_kernel, (x, x, x, 1024, 256))
    spec = A.spec_from_triton(ck.src, ck.metadata)
    key = A.autotune_key(tuner, (x, x, x, 1024), {})
    assert key == (1024, "fp32", "fp32", "fp32")
    tuner.cache[key] = tuner.configs[0]
    tuner.cache[(2048, "fp32", "fp32", "fp32")] = tuner.configs[0]
    tuner.cache[(4096, "fp32", "fp32", "fp32")] = tuner.configs[1]
    p = PreparedLaunch(spec, A.jit_parameters(K.add_kernel), (x, x, x, 1024, 256), {}, (4,), function=0,
                       stream=lambda: 0, compiled=ck, dry_run=True,
                       layers=(("autotune", tuner, (key, tuner.configs[0])),))
    p(x, x, x, 2048)  # another key, the same config
    with pytest.raises(AssumptionError, match=r"@triton.autotune key \(4096, .*\) chooses BLOCK: 512"):
        p(x, x, x, 4096)
    with pytest.raises(AssumptionError, match=r"key \(8192, .*\) was never tuned"):
        p(x, x, x, 8192)


@pytest.mark.parametrize("arch", [80, 90])  # descriptors decomposed (sm_80) or TMA-lowered (sm_90)
def test_host_descriptors_take_the_fast_path_and_it_agrees_with_the_general_one(arch, monkeypatch):
    """A new host TensorDescriptor of the prepared class, dtype and block shape goes through the
    C path (its launcher's encoder gives the parameters); the bytes equal the general
    path's, and another dtype or block is refused as the general path refuses it. The C tensor-map
    encoder is swapped for one that writes the address (no GPU here)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    from launcher import driver
    from triton_compile import compile_cpu

    monkeypatch.setattr(driver, "tensor_map_encoder", lambda *conventions: lambda a, shape, strides: a.to_bytes(8, "little") * 16)
    monkeypatch.setattr(driver, "driver_version", lambda: 13000)
    sig = (("in_desc", "tensordesc<fp16[64, 64]>"), ("out_desc", "tensordesc<fp16[64, 64]>"), ("BM", "constexpr"),
           ("BN", "constexpr"))
    ck = compile_cpu(K.tma_copy_kernel, sig, (("BM", 64), ("BN", 64)), arch)

    def desc(address, dtype=tl.float16, block=(64, 64)):
        return TensorDescriptor(FakeTensor(address, dtype), [256, 128], [128, 1], list(block))

    values = (desc(A0), desc(A0 + 0x8000), 64, 64)
    spec = A.spec_from_triton(ck.src, ck.metadata)
    p = PreparedLaunch(spec, A.jit_parameters(K.tma_copy_kernel), values, {}, (1,), function=0xF00,
                       stream=lambda: 0x5EA, compiled=ck, dry_run=True)
    assert p._fast_ready()[1]
    for new in [(desc(A0 + 0x100), desc(A0 + 0x200), 64, 64), (desc(A1), desc(A0), 64, 64),
                (desc(A0, tl.float32), desc(A0), 64, 64), (desc(A0, block=(32, 64)), desc(A0), 64, 64),
                (desc(A0), desc(A0), 64, 32)]:
        results = outcomes(p, new)
        assert results[0] == results[1], (new, results)
    assert p(*values) == CudaLauncher(ck.src, ck.metadata).dry_run(1, 1, 1, 0x5EA, 0xF00, p.spec.packed_metadata,
                                                                   None, None, None, *values)
    general, fell_back = p.launch, []
    p.launch = lambda *a, **k: fell_back.append(a) or general(*a, **k)  # what the C path falls back to
    p(desc(A0 + 0x300), desc(A0 + 0x400), 64, 64)
    p(TensorDescriptor(FakeTensor(A0, tl.float16), [256, 128], [128, 1], (64, 64)), desc(A0), 64, 64)  # a tuple block
    assert not fell_back  # both took the C path
    with pytest.raises(AssumptionError):
        p(desc(A0, tl.float32), desc(A0), 64, 64)
    assert len(fell_back) == 1
    # a descriptor prepared as any object with base, shape, strides and block_shape: a later one of
    # that class without them is refused as the general path refuses it, not with an AttributeError
    import types

    def ns_desc(address):
        return types.SimpleNamespace(base=FakeTensor(address, tl.float16), shape=[256, 128], strides=[128, 1],
                                     block_shape=[64, 64], padding="zero")

    q = PreparedLaunch(spec, A.jit_parameters(K.tma_copy_kernel), (ns_desc(A0), ns_desc(A0), 64, 64), {}, (1,),
                       function=0xF00, stream=lambda: 0x5EA, compiled=ck, dry_run=True)
    assert q(ns_desc(A0 + 0x100), ns_desc(A0), 64, 64) == q.launch(ns_desc(A0 + 0x100), ns_desc(A0), 64, 64)
    for bad in (types.SimpleNamespace(shape=[256, 128]), types.SimpleNamespace(base=None, block_shape=[64, 64])):
        with pytest.raises(AssumptionError):
            q(bad, ns_desc(A0), 64, 64)


@pytest.mark.parametrize("fn, prepared_value, new_value", [
    (K.pair_constexpr_kernel, (1, 2), (1.0, 2.0)),
    (K.pair_constexpr_kernel, (1, 0), (True, False)),
], ids=["floats for ints", "bools for ints"])
def test_the_fast_path_refuses_a_constexpr_the_general_path_refuses(fn, prepared_value, new_value):
    """p(...) and p.launch(...) agree on constexprs that compare equal but are another constant
    ((1.0, 2.0) for (1, 2), bools for ints): the C test of a tuple constexpr is identity,
    anything else goes to the general path, which refuses it."""
    x = FakeTensor(0x7F0000001000, tl.float32)
    p, _ = prepared(fn, (x, prepared_value))
    fast, general = outcomes(p, (x, new_value))
    assert fast[0] == general[0] == "refused", (fast, general)
    assert outcomes(p, (x, tuple(prepared_value)))[0][0] == "bytes"


def test_an_autotune_key_is_the_calls_own_not_its_defaults():
    """The autotune key of a new call is what Autotuner.run computes for it: a parameter the call
    does not pass (a default) is not in it, so the prepared arguments again are accepted."""
    x = FakeTensor(0x7F0000001000, tl.float32)
    tuner = triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})],
                            key=["n", "MODE"])(K.default_key_kernel)
    key = A.autotune_key(tuner, (x, 1024), {})
    assert key == (1024, "fp32")
    tuner.cache[key] = config = tuner.configs[0]
    values = (x, 1024, config.kwargs["BLOCK"], 0)
    ck = compile_for_call(K.default_key_kernel, values)
    p = PreparedLaunch(A.spec_from_triton(ck.src, ck.metadata), A.jit_parameters(K.default_key_kernel), values, {},
                       (1,), function=0, stream=lambda: 0, compiled=ck, dry_run=True,
                       layers=(("autotune", tuner, (key, config)),))
    assert p.launch(x, 1024) == p.launch()
    with pytest.raises(AssumptionError, match="never tuned"):
        p.launch(x, 2048)


def test_prepare_refuses_keyword_only_parameters_with_a_clear_error():
    with pytest.raises(TypeError, match="keyword-only, positional-only or variadic parameters"):
        launcher.prepare(triton.jit(K.keyword_only), (1,), 0, BLOCK=16)


def test_a_function_constexpr_is_the_one_triton_would_compile():
    """A @triton.jit function passed again as a constexpr is taken where Triton would launch the
    same kernel for it (its cache_key: its source) and refused on both paths where it would not:
    two functions of one name (a factory's) are two constants, and the error names both."""
    x = FakeTensor(A0, tl.float32)
    p, _ = prepared(K.combine_kernel, (x, x, K.combiner("add")))
    fast, general = outcomes(p, (x, x, K.combiner("mul")))
    assert fast[0] == general[0] == "refused", (fast, general)
    assert "'COMBINE'" in general[1] and general[1].count("combiner.<locals>.combine (Triton's key") == 2
    assert outcomes(p, (x, x, K.combiner("add")))[0][0] == "bytes"  # another object of the same source


def test_a_bool_parameter_takes_bools_and_an_annotated_one_0_or_1_too():
    """Triton types an int 0 as i32 and makes 1 a constexpr: neither fits a kernel compiled for a
    bool, unless the parameter's annotation (tl.int1) types it; an int for a parameter annotated
    as a float is converted, as Triton does."""
    x = FakeTensor(A0, tl.float32)
    p, _ = prepared(K.flag_kernel, (x, True, True, 2.0))
    assert p(x, False, 0, 3) == p.launch(x, False, 0, 3)  # annotated: 0 for typed_flag, an int for scale
    for bad in (0, 1):
        with pytest.raises(AssumptionError, match=r"parameter 'flag': the kernel was compiled for a bool \(u1; "):
            p(x, bad, True, 2.0)
        with pytest.raises(AssumptionError, match="parameter 'flag'"):
            p.launch(x, bad, True, 2.0)


def test_a_u64_parameter_refuses_ints_triton_types_as_signed():
    x = FakeTensor(A0, tl.float32)
    p, _ = prepared(K.add_kernel, (x, x, x, 2**63 + 16, 256))
    assert p(x, x, x, 2**64 - 16)
    for call in (p, p.launch):
        with pytest.raises(AssumptionError, match=r"parameter 'n': .*above the i64 range \(u64; .*got 4096"):
            call(x, x, x, 4096)


def test_constexprs_a_call_leaves_out_keep_their_prepared_values_not_the_defaults():
    x = FakeTensor(A0, tl.float32)
    p, _ = prepared(K.default_key_kernel, (x, 16, 256, 1))  # MODE=1 where its default is 0
    assert p(x, 32) == p.launch(x, 32) == p(x, 32, 256, 1)
    with pytest.raises(AssumptionError, match="parameter 'MODE'"):
        p.launch(x, 32, MODE=0)


def test_heuristics_see_the_prepared_options_and_a_layer_set_constexpr_with_a_default():
    import triton

    h = triton.heuristics(values={"MODE": lambda a: a["num_warps"] // 2})(K.default_key_kernel)
    x = FakeTensor(A0, tl.float32)
    ck = compile_for_call(K.default_key_kernel, (x, 16, 256, 2))
    spec = A.spec_from_triton(ck.src, ck.metadata)
    p = PreparedLaunch(spec, A.jit_parameters(K.default_key_kernel), (x, 16, 256, 2), {"num_warps": 4}, (4,),
                       function=0, stream=lambda: 0, compiled=ck, dry_run=True,
                       layers=(("heuristics", h, {"MODE": 2}),))
    assert p(x, 32, 256) == p.launch(x, 32, 256) == p.launch(x, 32, 256, num_warps=4)


def test_a_closed_prepared_launch_launches_nothing():
    x = FakeTensor(A0, tl.float32)
    released = []
    ck = compile_for_call(K.add_kernel, (x, x, x, 1024, 256))
    spec = A.spec_from_triton(ck.src, ck.metadata)
    p = PreparedLaunch(spec, A.jit_parameters(K.add_kernel), (x, x, x, 1024, 256), {}, (4,), function=0,
                       stream=lambda: 0, compiled=ck, dry_run=True, release=lambda: released.append(1))
    p.close()
    p.close()
    assert released == [1]
    for call in (p, p.launch):
        with pytest.raises(ValueError, match="this prepared launch was closed"):
            call()
    with pytest.raises(TypeError, match="stream= expects a CUstream handle"):
        prepared(K.add_kernel, (x, x, x, 1024, 256))[0].launch(stream=True)


def test_a_pointer_whose_readers_raise_is_refused_naming_the_parameter():
    """A tensor-like whose data_ptr() or dtype raises: the prepared call's check names the kernel,
    the parameter and what raised (specialization.address_and_dtype), as the launcher object does."""
    x = FakeTensor(A0, tl.float32)
    p = prepared(K.add_kernel, (x, x, x, 1024, 256))[0]
    for call in (p, p.launch):
        with pytest.raises(AssumptionError, match=r"kernel 'add_kernel': parameter 'x_ptr': .*Raising.data_ptr\(\) "
                                                  "raised RuntimeError: no address"):
            call(Raising(A0, tl.float32), x, x, 1024, 256)
        with pytest.raises(AssumptionError, match="parameter 'y_ptr': .*NoDtype.dtype raised RuntimeError: no dtype"):
            call(x, NoDtype(A0), x, 1024, 256)


def test_launch_takes_a_stream_object_as_bundles_and_kernel_calls_do():
    """launch(stream=s) reads a stream object's .cuda_stream (torch.cuda.Stream), by the one rule
    of every front door (arguments.stream_handle); a bool or anything else is refused."""
    import types

    x = FakeTensor(A0, tl.float32)
    p = prepared(K.add_kernel, (x, x, x, 1024, 256))[0]
    assert p.launch(stream=types.SimpleNamespace(cuda_stream=0x5EB)) == p.launch(stream=0x5EB)
    for bad in (True, "stream", 1.5):
        with pytest.raises(TypeError):
            p.launch(stream=bad)
    with pytest.raises(TypeError, match="stream= expects a CUstream handle .*, got SimpleNamespace whose "
                                        "cuda_stream is True"):
        p.launch(stream=types.SimpleNamespace(cuda_stream=True))
