"""The C flat launch (launcher._call.FlatLaunch, cdefs/call.c; CudaLauncher.flat_launch) on the CPU.

It is what the fast dispatch's hits and bundle hits launch through: one C call that packs the
header and every parameter's value and launches. Here it runs as a dry run (record=...), over
generated signatures and arguments (tests/fuzz_signatures.py): whatever it packs must be the
bytes the launcher's own dry run packs for the same call, and whatever it does not take (another
type, a list for a tuple, anything at all) it declines, returning False, without raising: the
caller's direct launch then converts, checks and explains."""
import gc
import struct
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzz_signatures as F
from launcher import CudaLauncher, codegen, driver
from launcher import _call
from launcher._call import FlatLaunch
from launcher.spec import HEADER_FORMAT, HEADER_SIZE

FUZZ = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
GRIDS = st.tuples(st.integers(1, 2**31 - 1), st.integers(1, 4), st.integers(1, 4))


def _flat_types(ty) -> bool:
    """Whether the C call has a check for every leaf of `ty`: not for fp16 scalars (bf16 ones are
    packed as fp32, which the native library rounds, as the launcher packs them)."""
    if isinstance(ty, tuple):
        return all(map(_flat_types, ty))
    return ty != "fp16"


def _taken(ty, value) -> bool:
    """Whether the C call packs `value` for `ty` itself: exact ints, floats, bools and tuples,
    pointers as ints or objects with an int data_ptr()."""
    if ty == "constexpr":
        return True
    if isinstance(ty, tuple):
        return value.__class__ is tuple and len(value) == len(ty) and all(map(_taken, ty, value))
    if F.is_pointer(ty):
        return value.__class__ is int or value.__class__ is F.FakeTensor
    if ty in F.BOOL_TYPES:
        return value is True or value is False
    if ty in F.INT_RANGE:
        return value.__class__ is int
    if ty in ("bf16", "fp32", "f32", "fp64"):  # good arguments fit the format
        return value.__class__ is float
    return False


class Recorder:
    def __init__(self, launcher):
        self.launcher, self.calls = launcher, []

    def __call__(self, packed, out):
        gx, gy, gz = struct.unpack_from("<" + HEADER_FORMAT, packed)[2:5]
        self.calls.append(((gx, gy, gz), self.launcher._shape.split_bytes(out)))


def _flat(kernel):
    launcher = CudaLauncher(kernel.src(), kernel.metadata())
    rec = Recorder(launcher)
    return launcher, launcher.flat_launch(launcher.packed_metadata, record=rec), rec


@settings(max_examples=300, **FUZZ)
@given(kernel=F.kernels(scratch=False), data=st.data())
def test_what_the_c_call_packs_is_what_the_launcher_packs(kernel, data):
    launcher, flat, rec = _flat(kernel)
    if not all(map(_flat_types, kernel.types)):
        assert flat is None
        return
    assert flat is not None
    for _ in range(6):
        args = data.draw(F.good_args(kernel), label="args")
        grid = data.draw(GRIDS, label="grid")
        stream, function = data.draw(st.integers(0, 2**64 - 1)), data.draw(st.integers(0, 2**64 - 1))
        result = flat(function, stream, grid, *args)
        taken = all(map(_taken, kernel.types, args))
        assert result is (None if taken else False), (args, result)
        if result is None:
            want = launcher.dry_run(*grid, stream, function, launcher.packed_metadata, None, None, None, *args)
            assert rec.calls.pop() == (grid, want)
        assert not rec.calls


@settings(max_examples=300, **FUZZ)
@given(kernel=F.kernels(max_args=6, scratch=False).filter(lambda k: k.arity > 0 and all(map(_flat_types, k.types))),
       data=st.data())
def test_anything_anywhere_is_packed_as_the_launcher_packs_it_or_declined(kernel, data):
    launcher, flat, rec = _flat(kernel)
    args = data.draw(F.good_args(kernel), label="good args")
    for _ in range(6):
        site = data.draw(st.sampled_from(F.sites(kernel)), label="site")
        changed = F.replace(args, site.path, data.draw(F.anything(), label="value"))
        result = flat(7, 0, (2, 1, 1), *changed)
        assert result is None or result is False
        if result is None:  # taken: the launcher takes it too, with the same bytes
            want = launcher.dry_run(2, 1, 1, 0, 7, launcher.packed_metadata, None, None, None, *changed)
            assert rec.calls.pop() == ((2, 1, 1), want)


@pytest.mark.parametrize("function, stream, grid", [
    (True, 0, (1,)), (1.0, 0, (1,)), (-1, 0, (1,)), (2**64, 0, (1,)), (0, None, (1,)), (0, -1, (1,)),
    (0, 0, ()), (0, 0, (1, 1, 1, 1)), (0, 0, (2**31,)), (0, 0, (1.0,)), (0, 0, (True,)), (0, 0, range(1, 2)),
    (0, 0, 7), (0, 0, None), (0, 0, {1: 1}),
])
def test_a_header_the_c_call_does_not_take_is_declined(function, stream, grid):
    kernel = F.Kernel("k", ("x", "n"), ("x", "n"), ("*fp32", "i32"), "ast")
    _, flat, rec = _flat(kernel)
    assert flat(function, stream, grid, 16, 3) is False and not rec.calls


def test_a_wrong_count_is_declined():
    kernel = F.Kernel("k", ("x", "n"), ("x", "n"), ("*fp32", "i32"), "ast")
    _, flat, rec = _flat(kernel)
    for values in ((), (16,), (16, 3, 4)):
        assert flat(0, 0, (1,), *values) is False
    assert flat(0, 0, [1, 2], 16, 3) is None and rec.calls[-1][0] == (1, 2, 1)  # a list grid is taken


def test_a_data_ptr_that_raises_something_other_than_an_exception_propagates():
    class Interrupting:
        def data_ptr(self):
            raise KeyboardInterrupt

    kernel = F.Kernel("k", ("x",), ("x",), ("*fp32",), "ast")
    _, flat, _ = _flat(kernel)
    with pytest.raises(KeyboardInterrupt):
        flat(0, 0, (1,), Interrupting())
    assert flat(0, 0, (1,), F.RaisingTensor(RuntimeError)) is False  # an Exception: declined


def test_a_driver_refusal_returns_the_status_and_the_packed_bytes():
    """With the launch entry a callback that refuses, the call returns (status, bytes packed),
    the bytes being the dry run's header and parameters."""
    ffi = driver.native()[0]
    kernel = F.Kernel("k", ("x", "n", "s"), ("x", "n", "s"), ("*fp32", "i64", "fp32"), "ast")
    launcher = CudaLauncher(kernel.src(), kernel.metadata())
    shape = launcher._shape
    seen = []

    @ffi.callback("int(*)(const void *, const char *, size_t)")
    def refuse(plan, buf, size):
        seen.append(ffi.buffer(buf, size)[:])
        return 701

    flat = FlatLaunch(driver.address(shape.plan), shape.plan, driver.address(refuse), shape.spec.layout.size,
                      shape.flat_checks).launch
    status, packed = flat(0xF0, 0x5EA, (3, 2), 0x1000, -5, 0.5)
    assert status == 701 and packed == seen[0]
    assert struct.unpack_from("<" + HEADER_FORMAT, packed)[:5] == (0xF0, 0x5EA, 3, 2, 1)
    want = launcher.pack(3, 2, 1, 0x5EA, 0xF0, launcher.packed_metadata, 0x1000, -5, 0.5)[1]
    assert packed == want


def test_malformed_checks_are_refused_when_made():
    lib = driver.native()[1]
    kernel = F.Kernel("k", ("x",), ("x",), ("*fp32",), "ast")
    shape = CudaLauncher(kernel.src(), kernel.metadata())._shape
    size = shape.spec.layout.size
    base = (driver.address(shape.plan), shape.plan, driver.entry_address("launcher_launch"), size)
    skip, address, int_ = lib.LAUNCHER_CHECK_SKIP, lib.LAUNCHER_CHECK_ADDRESS, lib.LAUNCHER_CHECK_INT
    for checks, exc in ((((address, size),), ValueError),  # outside the buffer
                        (((address, 0),), ValueError),  # over the launch header
                        (((skip, 1),), ValueError), (((99,),), ValueError), ((("skip",),), TypeError),
                        ([(skip,)], TypeError),
                        (((int_, 0, 1, 0, HEADER_SIZE, ord("x")),), ValueError),  # no such pack code
                        (((int_, 0, 1, 0, HEADER_SIZE, lib.LAUNCHER_PACK_F32),), ValueError),
                        (((int_, 0, 1, True, HEADER_SIZE, lib.LAUNCHER_PACK_I32),), TypeError),  # a bool mask
                        (((lib.LAUNCHER_CHECK_FLOAT, HEADER_SIZE, ord("e")),), ValueError)):  # fp16: not in C
        with pytest.raises(exc):
            FlatLaunch(*base, checks)
    with pytest.raises(ValueError):
        FlatLaunch(*base[:3], HEADER_SIZE - 1, ((skip,),))  # shorter than the launch header
    with pytest.raises(ValueError):
        FlatLaunch(*base, ((skip,),), record=print)  # a record without a dry run


def test_the_c_call_holds_no_reference_it_does_not_own():
    kernel = F.Kernel("k", ("x", "t"), ("x", "t"), ("*fp32", ("i32", "*fp16")), "ast")
    _, flat, rec = _flat(kernel)
    x, t = F.FakeTensor(0x1000), (5, F.FakeTensor(0x2000))
    before = (sys.getrefcount(x), sys.getrefcount(t), sys.getrefcount(t[1]))
    for _ in range(100):
        assert flat(1, 2, (1,), x, t) is None
        assert flat(1, 2, (1,), x, (5, None)) is False
    assert (sys.getrefcount(x), sys.getrefcount(t), sys.getrefcount(t[1])) == before
    rec.calls.clear()


def test_a_cycle_through_the_record_callback_is_collected():
    import weakref

    kernel = F.Kernel("k", ("x",), ("x",), ("*fp32",), "ast")
    launcher = CudaLauncher(kernel.src(), kernel.metadata())

    class Holder:
        pass

    h = Holder()
    h.flat = launcher.flat_launch(launcher.packed_metadata, record=lambda packed, out, h=h: None)
    ref = weakref.ref(h)
    del h
    gc.collect()
    assert ref() is None


class _Chain:  # what Triton's HookChain looks like to the generated launch (HOOK_CHAIN is swapped for it)
    def __init__(self, *calls):
        self.calls = list(calls)

    def __call__(self, md):
        for c in self.calls:
            c(md)


@settings(max_examples=60, **FUZZ)
@given(kernel=F.kernels(max_args=6, scratch=False).filter(lambda k: all(map(_flat_types, k.types))), data=st.data())
def test_a_hot_launcher_without_hooks_launches_in_one_c_call(kernel, data):
    """A hot launcher's __call__ (the generated launch) hands a call with no launch hooks set
    (None or an empty HookChain) and the shape's metadata to the shape's FlatLaunch: the bytes it
    packs are the launcher's own dry run's. With a hook set, or a value C declines, the generated
    Python packs and launches (its C entry records here: no GPU)."""
    launcher = CudaLauncher(kernel.src(), kernel.metadata())
    shape = launcher._shape
    rec = Recorder(launcher)
    shape.flat_launch = launcher.flat_launch(launcher.packed_metadata, record=rec)  # the dry FlatLaunch
    shape.code.pop("launch", None)
    python_launches = []
    saved = shape.namespace["c_launch"]
    shape.namespace["c_launch"] = lambda plan, buf, size: python_launches.append(bytes(buf)) or 0
    try:
        code = shape.generated("launch")
        codegen.cells(code)["HOOK_CHAIN"].cell_contents = _Chain
        args = data.draw(F.good_args(kernel), label="args")
        taken = all(map(_taken, kernel.types, args))
        entered = []
        for enter, leave in ((None, None), (_Chain(), _Chain()), (_Chain(entered.append), None)):
            hooked = enter is not None and bool(enter.calls)
            code(launcher, 3, 1, 1, 0x5EA, 7, launcher.packed_metadata, None, enter, leave, *args)
            if taken and not hooked:
                want = launcher.dry_run(3, 1, 1, 0x5EA, 7, launcher.packed_metadata, None, None, None, *args)
                assert rec.calls.pop() == ((3, 1, 1), want) and not python_launches
            else:
                assert not rec.calls and len(python_launches) == 1
                python_launches.clear()
        assert entered == [None]  # the hook set ran, with the launch metadata given (None)
    finally:
        shape.namespace["c_launch"] = saved
        shape.code.pop("launch", None)


def test_torch_tensors_pack_their_data_ptr_their_subclasses_their_own():
    """A torch.Tensor packs its data_ptr() (read through TensorBase's C function once a guard has
    named torch.Tensor its tensor class: cdefs/call.c's tensor reads), a subclass what its own
    data_ptr() answers, and a torch.Tensor.data_ptr set since what that answers."""
    torch = pytest.importorskip("torch")
    from launcher import fast_dispatch
    from launcher.specialization import INT_KEYS

    keyer = _call.GuardKey(((False, True, True, True, INT_KEYS[True, True]),), ("device",), torch.Tensor,
                           fast_dispatch.int_key, fast_dispatch.classify, fast_dispatch.NoKey, 15)
    x = torch.zeros(4)
    keyer.key(0, x)  # names torch.Tensor the tensor class
    kernel = F.Kernel("k", ("x", "n"), ("x", "n"), ("*fp32", "i32"), "ast")
    launcher, flat, rec = _flat(kernel)

    class Sub(torch.Tensor):
        def data_ptr(self):
            return 0x2008

    def packed(value):
        assert flat(0, 0, (1,), value, 3) is None
        return struct.unpack("<Q", rec.calls.pop()[1][0])[0]

    assert packed(x) == x.data_ptr()
    assert packed(torch.zeros(4).as_subclass(Sub)) == 0x2008
    try:
        torch.Tensor.data_ptr = lambda self: 0x3000
        assert packed(x) == 0x3000
    finally:
        del torch.Tensor.data_ptr
    assert packed(x) == x.data_ptr()
