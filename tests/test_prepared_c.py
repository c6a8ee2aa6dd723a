"""The C call of prepared launches (cdefs/call.c, launcher._call) on the CPU, in dry runs.

tests/test_prepared.py shows that it packs what the general path packs and refuses what it
refuses; these are about the C code itself: what _fast_set accepts, what the call does when
Python code it runs (data_ptr(), a grid callable, an encoder, the stream getter) raises, closes
the launch or is called from several threads, and that it holds no references it should not."""
import gc
import sys
import threading
import weakref

import pytest

import kernels as K
from cpu_triton import FakeTensor
from launcher._call import FastCall
from launcher.prepared import PreparedLaunch
from launcher.specialization import AssumptionError

pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")
from test_prepared import A0, A1, prepared  # noqa: E402


def add(grid=(4,), **kw):
    x = FakeTensor(A0, tl.float32)
    return prepared(K.add_kernel, (x, x, x, 1024, 256), grid=grid, **kw)[0]


def spy(p):
    """The calls that reach p.launch (the general path)."""
    general, seen = p.launch, []
    p.launch = lambda *a, **k: seen.append((a, k)) or general(*a, **k)
    return seen


def test_a_prepared_launch_is_a_fast_call_with_its_c_path_set():
    p = add()
    assert isinstance(p, FastCall) and type(p) is PreparedLaunch
    assert p._fast_ready() == (False, True)


def _lib():
    from launcher import driver

    return driver.native()[1]


L = _lib()
POINTER, INT, FLOAT, TUPLE = L.LAUNCHER_CHECK_POINTER, L.LAUNCHER_CHECK_INT, L.LAUNCHER_CHECK_FLOAT, L.LAUNCHER_CHECK_TUPLE


@pytest.mark.parametrize("change, error", [
    ({"template": b"\0" * 8}, ValueError),  # shorter than the launch header
    ({"grid": (1, 2)}, TypeError),
    ({"grid": (1 << 40, 1, 1)}, OverflowError),
    ({"n_min": 9}, ValueError),
    ({"trailing": ()}, ValueError),
    ({"names": ("x",)}, ValueError),
    ({"plan": 0}, ValueError),
    ({"checks": ((POINTER, FakeTensor, tl.float32, 15, 1 << 20),)}, ValueError),  # outside the buffer
    ({"checks": ((POINTER, FakeTensor, tl.float32, 15, 8),)}, ValueError),  # over the launch header
    ({"checks": ((POINTER, FakeTensor, tl.float32, True, 48),)}, TypeError),  # a mask is an int, not a bool
    ({"checks": ((99,),)}, ValueError),  # no such kind
    ({"checks": (("pointer",),)}, TypeError),  # kinds are the header's numbers
    ({"checks": ((INT, 0, 1, 0, 48, ord("x")),)}, ValueError),
    ({"checks": ((INT, 0, 1, 0, 48, "i"),)}, TypeError),  # codes too
    ({"checks": ("not a tuple",)}, TypeError),
    ({"checks": ((TUPLE, ((FLOAT, 48, ord("e")),)),)}, ValueError),
    ({"stream_args": [1]}, TypeError),
    ({"keywords": [("x_ptr", 0)]}, TypeError),
    ({"defaults": [()] * 5}, TypeError),
    ({"keywords": {"x_ptr": 5}}, ValueError),  # beyond the parameters
    ({"keywords": {"x_ptr": 0, "y_ptr": 0}}, ValueError),  # two names, one parameter
    ({"keywords": {"x_ptr": 0.0}}, ValueError),
    ({"keywords": {0: 0}}, ValueError),  # names are strs
    ({"defaults": ((),) * 4}, ValueError),
    ({"defaults": ((),) * 4 + ((1, 2),)}, ValueError),
    ({"defaults": ((),) * 4 + ([1],)}, ValueError),
])
def test_a_malformed_configuration_is_refused_and_leaves_only_the_general_path(change, error):
    p = add()
    cfg = p._fast_config()
    cfg.update(change)
    with pytest.raises(error):
        p._fast_set(cfg)
    assert p._fast_ready() == (False, False)
    x = FakeTensor(A0, tl.float32)
    seen = spy(p)
    assert p(x, x, x, 64, 256) == p.launch(x, x, x, 64, 256)  # the general path still works
    assert len(seen) == 2


def test_a_configuration_missing_a_key_is_a_key_error():
    p = add()
    cfg = p._fast_config()
    del cfg["split"]
    with pytest.raises(KeyError, match="split"):
        p._fast_set(cfg)
    with pytest.raises(TypeError):
        p._fast_set([])


def test_a_closed_launch_refuses_every_call_and_drops_its_c_path():
    p = add()
    p.close()
    assert p._fast_ready() == (False, False)
    x = FakeTensor(A0, tl.float32)
    for call in (lambda: p(), lambda: p(x, x, x, 64), lambda: p(x, x, x, n=64)):
        with pytest.raises(ValueError, match="closed"):
            call()


class Boom(Exception):
    pass


class Tensor(FakeTensor):  # a tensor class whose data_ptr() can be made to raise or close the launch
    action = None

    def data_ptr(self):
        if Tensor.action is not None:
            Tensor.action()
        return self.ptr


def test_python_code_the_call_runs_may_raise_close_the_launch_or_interrupt():
    x = Tensor(A0, tl.float32)
    p = prepared(K.add_kernel, (x, x, x, 1024, 256))[0]
    try:
        Tensor.action = lambda: (_ for _ in ()).throw(Boom("data_ptr failed"))
        with pytest.raises(AssumptionError, match="parameter 'x_ptr': .*data_ptr\\(\\) raised Boom") as info:
            p(x, x, x, 64)  # the C path declines; the general path names what data_ptr() raised
        assert isinstance(info.value.__context__.__cause__, Boom)  # what data_ptr() raised, kept
        Tensor.action = lambda: (_ for _ in ()).throw(KeyboardInterrupt())
        with pytest.raises(KeyboardInterrupt):
            p(x, x, x, 64)
        Tensor.action = p.close  # closed while its arguments are checked: nothing is launched
        with pytest.raises(ValueError, match="closed"):
            p(x, x, x, 64)
    finally:
        Tensor.action = None


def test_a_raising_stream_getter_and_grid_callable_raise_their_errors():
    def stream():
        raise Boom("no stream")

    x = FakeTensor(A0, tl.float32)
    p = _with(stream=stream)
    with pytest.raises(Boom, match="no stream"):
        p(x, x, x, 64)

    calls = []

    def grid(meta):
        calls.append(dict(meta))
        if meta["n"] == 48:
            raise Boom("no grid")
        return (meta["n"] // meta["BLOCK"],)

    q = add(grid=grid)
    q(x, x, x, 2048)
    assert calls[-1] == {"x_ptr": x, "y_ptr": x, "out_ptr": x, "n": 2048, "BLOCK": 256}
    with pytest.raises(Boom, match="no grid"):
        q(x, x, x, 48)


@pytest.mark.parametrize("grid", [lambda m: (1 << 40,), lambda m: (), lambda m: "ab", lambda m: (1.5,),
                                  lambda m: [2, 1, 1, 1], lambda m: None])
def test_a_grid_callable_returning_what_the_c_path_cannot_pack_goes_to_the_general_path(grid):
    x = FakeTensor(A0, tl.float32)
    p = add(grid=lambda m: (4,))
    p.grid_fn = grid
    p._fast_setup()
    seen = spy(p)
    with pytest.raises((TypeError, ValueError, OverflowError)):
        p(x, x, x, 64)
    assert len(seen) == 1


def test_arguments_the_c_path_declines_are_judged_by_the_general_path():
    x, y = FakeTensor(A0, tl.float32), FakeTensor(A1, tl.float32)
    p = add()
    seen = spy(p)
    good = p(x, x, x, 64, 256)
    assert not seen
    for args in [(y, x, x, 64), (x, x, x, 65), (x, x, x, True), (x, x, x, 1 << 31), (x, x, x, 64.0),
                 (FakeTensor(A0, tl.float16), x, x, 64), (x, x, x, 64, 128), (object(), x, x, 64), (x, x, x, -(1 << 70))]:
        with pytest.raises((ValueError, TypeError, OverflowError)):
            p(*args)
    assert len(seen) == 9
    assert p(A0, A0, A0, 64) == good  # int addresses are pointers too, in C
    assert len(seen) == 9


def test_threads_share_one_prepared_launch():
    p = add()
    xs = [FakeTensor(A0 + 16 * i, tl.float32) for i in range(8)]
    want = {i: p.launch(xs[i], xs[i], xs[i], 16 * i) for i in range(8)}
    bad = []

    def work(i):
        for _ in range(300):
            if p(xs[i], xs[i], xs[i], 16 * i) != want[i]:
                bad.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_no_reference_is_leaked_and_a_cycle_through_the_grid_is_collected():
    x = FakeTensor(A0, tl.float32)
    p = add()
    before = sys.getrefcount(x), sys.getrefcount(p)
    for _ in range(1000):
        p(x, x, x, 64)
        try:
            p(x, x, x, 65)
        except ValueError:
            pass
    assert (sys.getrefcount(x), sys.getrefcount(p)) == before

    holder = {}
    q = add(grid=lambda meta: (holder["p"].grid[0],) if holder else (4,))  # the grid refers back to the launch
    holder["p"] = q
    q(x, x, x, 64)
    gone = weakref.ref(q)
    del q, holder
    gc.collect()
    assert gone() is None


def _with(stream=lambda: 0x5EA, runtime=None, values=None):
    x = FakeTensor(A0, tl.float32)
    return prepared(K.add_kernel, values or (x, x, x, 1024, 256), stream=stream, runtime=runtime)[0]


def test_a_hook_read_that_closes_the_launch_refuses_the_call_and_does_not_crash():
    from triton.knobs import HookChain

    holder = {}

    class Runtime:
        launch_exit_hook = HookChain()

        @property
        def launch_enter_hook(self):
            holder["p"].close()
            return None

    p = holder["p"] = _with(runtime=Runtime())
    x = FakeTensor(A0, tl.float32)
    for call in (lambda: p(), lambda: p(x, x, x, 64)):
        with pytest.raises(ValueError, match="closed"):
            call()


def test_a_stream_with_index_is_taken_and_a_stream_getter_that_closes_the_launch_refuses_it():
    class Handle:
        def __index__(self):
            return 0x5EA

    x = FakeTensor(A0, tl.float32)
    p = _with(stream=lambda: Handle())
    assert p(x, x, x, 64) == p.launch(x, x, x, 64)
    holder = {}

    def closing():
        holder["p"].close()
        return 0x5EA

    q = holder["p"] = _with(stream=closing)
    with pytest.raises(ValueError, match="closed"):
        q(x, x, x, 64)


def test_a_cycle_through_a_checked_tensor_class_is_collected():
    class Owned(FakeTensor):
        owner = None

    x = Owned(A0, tl.float32)
    p = _with(values=(x, x, x, 1024, 256))
    Owned.owner = p  # the class the C check holds refers back to the launch
    gone = weakref.ref(p)
    del p, x, Owned
    gc.collect()
    assert gone() is None


def test_a_descriptor_of_another_rank_is_refused_by_every_path(monkeypatch):
    from triton.tools.tensor_descriptor import TensorDescriptor

    from launcher import triton_adapter as A
    from test_prepared import outcomes
    from triton_compile import compile_cpu

    sig = (("in_desc", "tensordesc<fp16[64, 64]>"), ("out_desc", "tensordesc<fp16[64, 64]>"), ("BM", "constexpr"),
           ("BN", "constexpr"))
    ck = compile_cpu(K.tma_copy_kernel, sig, (("BM", 64), ("BN", 64)), 80)  # decomposed: sizes and strides in slots

    def desc(shape=(256, 128), strides=(128, 1)):
        return TensorDescriptor(FakeTensor(A0, tl.float16), list(shape), list(strides), [64, 64])

    spec = A.spec_from_triton(ck.src, ck.metadata)
    p = PreparedLaunch(spec, A.jit_parameters(K.tma_copy_kernel), (desc(), desc(), 64, 64), {}, (1,), function=0xF00,
                       stream=lambda: 0x5EA, compiled=ck, dry_run=True)
    odd = desc()
    odd.shape, odd.strides = [256, 128, 7], [1]  # changed after it was made: 4 numbers, as a 2-d one has
    results = outcomes(p, (odd, desc(), 64, 64))
    assert results[0] == results[1] and results[0][0] == "error" and "expects a 2-d tensor descriptor" in results[0][1]


# ---- keywords: bound in C as Python binds them (cdefs/call.c bind_call), or declined ----
def test_constexprs_passed_again_and_parameters_by_name_are_taken_in_c_with_the_positional_bytes():
    import itertools

    x, y = FakeTensor(A0, tl.float32), FakeTensor(A0 + 0x40, tl.float32)
    p = add()
    seen = spy(p)
    want = p(x, y, x, 64, 256)
    names = ("x_ptr", "y_ptr", "out_ptr", "n", "BLOCK")
    values = (x, y, x, 64, 256)
    assert p(x, y, x, 64, BLOCK=256) == want
    assert p(x, y, x, n=64) == p(x, y, x, n=64, BLOCK=256) == want
    for k in range(5):  # the first k by position, the others by name in every order (BLOCK given or not)
        for order in itertools.permutations(range(k, 5)):
            for keep in (order, tuple(i for i in order if i != 4)):
                assert p(*values[:k], **{names[i]: values[i] for i in keep}) == want, (k, keep)
    assert not seen
    assert want == p.launch(x, y, x, 64, 256)


@pytest.mark.parametrize("call, error", [
    (lambda p, x: p(x, x, x, 64, BLOCK=128), "the kernel was compiled for the constexpr 256, got 128"),
    (lambda p, x: p(x, x, x, 64, BLOCK=256.0), "the kernel was compiled for the constexpr 256"),
    (lambda p, x: p(x, x, x, 64, x_ptr=x), "parameter 'x_ptr' given twice"),
    (lambda p, x: p(x, x, x, 64, 256, BLOCK=256), "parameter 'BLOCK' given twice"),
    (lambda p, x: p(x, x, x, 64, foo=1), "option 'foo' was prepared as '(not given)', got 1"),
    (lambda p, x: p(x, x, x, 64, num_warps=4), "option 'num_warps' was prepared as"),
    (lambda p, x: p(x, x, n=64), "parameter 'out_ptr' is missing"),
    (lambda p, x: p(BLOCK=256), "parameter 'x_ptr' is missing"),
    (lambda p, x: p(x, x, x, 64, 256, 7, BLOCK=256), "takes 5 arguments"),
    (lambda p, x: p(x, x, x, n=65), "parameter 'n'"),  # an argument that fails its test, by name
    (lambda p, x: p(x, x, x, n=64, stream=True), "stream= expects a CUstream handle"),
    (lambda p, x: p(x, x, x, 64, grid="ab"), "grid"),
])
def test_keyword_calls_the_c_path_cannot_take_go_to_the_general_path_unchanged(call, error):
    x = FakeTensor(A0, tl.float32)
    p = add()
    seen = spy(p)
    with pytest.raises((TypeError, ValueError)) as c:
        call(p, x)
    assert len(seen) == 1
    with pytest.raises(type(c.value)) as g:
        call(add().launch, x)  # the general path itself, called directly
    assert str(c.value) == str(g.value) and error in str(c.value)


def test_launch_options_grid_and_stream_go_to_launch_which_takes_them():
    x = FakeTensor(A0, tl.float32)
    p = add()
    seen = spy(p)
    assert p(x, x, x, 64, grid=(8,), stream=0x77) == p.launch(x, x, x, 64, grid=(8,), stream=0x77)
    assert [k for _, k in seen] == [{"grid": (8,), "stream": 0x77}, {"grid": (8,), "stream": 0x77}]


def _renamed(**change):
    """The add kernel's prepared launch with its parameters changed (names, defaults)."""
    import dataclasses

    from launcher import triton_adapter as A
    from test_prepared import compile_for_call

    x = FakeTensor(A0, tl.float32)
    values = (x, x, x, 1024, 256)
    ck = compile_for_call(K.add_kernel, values)
    params = tuple(dataclasses.replace(q, **change.get(q.name, {})) for q in A.jit_parameters(K.add_kernel))
    return PreparedLaunch(A.spec_from_triton(ck.src, ck.metadata), params, values, {}, (4,), function=0xF00,
                          stream=lambda: 0x5EA, compiled=ck, dry_run=True)


def test_a_parameter_left_out_takes_its_default_in_c_and_a_parameter_named_stream_is_launchs_keyword():
    x = FakeTensor(A0, tl.float32)
    p = _renamed(n={"default": 48})
    seen = spy(p)
    assert p(x, x, x) == p(x, x, x, 48) == p(x, y_ptr=x, out_ptr=x, BLOCK=256) == p.launch(x, x, x)
    assert len(seen) == 1
    q = _renamed(n={"name": "stream"})  # launch(..., stream=) is the stream: C leaves that keyword to it
    seen = spy(q)
    assert q(x, x, x, 64) == q.launch(x, x, x, 64)
    with pytest.raises(TypeError, match="parameter 'stream' is missing"):
        q(x, x, x, stream=64)
    assert len(seen) == 2


def test_a_callable_grid_sees_the_keyword_calls_values():
    calls = []
    x = FakeTensor(A0, tl.float32)
    p = add(grid=lambda meta: calls.append(dict(meta)) or (meta["n"] // meta["BLOCK"],))
    seen = spy(p)
    calls.clear()  # prepare's own evaluation
    assert p(x, x, out_ptr=x, n=2048) == p.launch(x, x, x, 2048)
    assert calls[0] == calls[1] == {"x_ptr": x, "y_ptr": x, "out_ptr": x, "n": 2048, "BLOCK": 256}
    assert len(seen) == 1


def test_a_keyword_call_that_closes_the_launch_or_raises_in_data_ptr_is_refused_and_leaks_nothing():
    x = Tensor(A0, tl.float32)
    p = prepared(K.add_kernel, (x, x, x, 1024, 256))[0]
    try:
        Tensor.action = lambda: (_ for _ in ()).throw(Boom("data_ptr failed"))
        with pytest.raises(AssumptionError, match=r"data_ptr\(\) raised Boom"):
            p(x, x, out_ptr=x, n=64)
        Tensor.action = p.close
        with pytest.raises(ValueError, match="closed"):
            p(x, x, out_ptr=x, n=64)
    finally:
        Tensor.action = None


def test_keyword_calls_leak_no_reference():
    x = FakeTensor(A0, tl.float32)
    p = _renamed(n={"default": 48})
    n, block = 10 ** 6 + 16, 256
    # block (256) is CPython's shared small int: any other code moves its count, so it is not counted
    # here (n, a large int, is: a keyword's value held too long would show there)
    before = sys.getrefcount(x), sys.getrefcount(p), sys.getrefcount(n)
    for _ in range(1000):
        p(x, x, x, n=n, BLOCK=block)
        p(out_ptr=x, y_ptr=x, x_ptr=x)  # the default and the prepared constexpr filled in
        for bad in ({"n": 10 ** 6 + 1}, {"x_ptr": x}, {"num_warps": 4}):  # declined: the general path raises
            try:
                p(x, x, x, **bad)
            except (TypeError, ValueError):
                pass
    assert (sys.getrefcount(x), sys.getrefcount(p), sys.getrefcount(n)) == before
