"""The guarded fast path on the CPU (dry run, any Triton 3.6-3.9).

Triton's own dispatch is played here by `CpuTriton`: Triton's binder and cache key
(create_function_from_signature, compute_cache_key, _pack_args) choose the kernel, compiled on
the CPU for exactly that specialization, and "launching" it records the bytes its launcher would
pack (a dry run). Over generated calls the guard, in front of it, must launch the kernel
Triton's key chooses, with the bytes Triton's path packs, whether the call hits or misses."""
import os
import subprocess
import sys
import types

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import launcher
from launcher import CudaLauncher, codegen, fast_dispatch
from launcher.fast_dispatch import Guard
from cpu_triton import FakeTensor, recording_flat_launch

triton = pytest.importorskip("triton")
tl = triton.language


@triton.jit(do_not_specialize=["m"], do_not_specialize_on_alignment=["k"])
def guard_kernel(x, n, m, k, scale, t, opt, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n)
    tl.store(x + offs, v * scale + m + k + t[1], mask=offs < n)
    tl.store(t[0] + offs, v, mask=offs < n)
    if opt is not None:
        tl.store(opt + offs, v, mask=offs < n)



class CpuTriton:
    """Triton's JITFunction.run on the CPU: its key chooses the kernel; the launch is a dry run."""

    def __init__(self, *kernels):
        """kernels: JIT functions whose Triton caches start empty (another CpuTriton's kernels
        would launch into that one's records)."""
        from triton.backends.compiler import GPUTarget

        for k in kernels:
            k.device_caches.clear()
        from triton.compiler import make_backend

        self.target = GPUTarget("cuda", 90, 32)
        self.backend = make_backend(self.target)
        self.kernels = {}  # Triton's cache key -> compiled kernel
        self.launched = []  # (Triton's key, bytes) of every launch
        self.stock_launcher = False  # whether its launchers stand for Triton's stock one
        self.runs = 0
        self.flat_launches = 0  # hits that packed and launched themselves (CudaLauncher.flat_launch)

    def triton_key(self, jit, args, kwargs):
        from triton.runtime.jit import compute_cache_key, create_function_from_signature

        kwargs = dict(kwargs)
        kwargs["debug"] = kwargs.get("debug", jit.debug) or triton.knobs.runtime.debug
        kwargs["instrumentation_mode"] = triton.knobs.compilation.instrumentation_mode
        if "fpsan_homomorphic_casts" in vars(type(triton.knobs.compilation)):  # 3.9
            kwargs["fpsan_homomorphic_casts"] = triton.knobs.compilation.fpsan_homomorphic_casts
        binder = create_function_from_signature(jit.signature, jit.params, self.backend)
        bound, specialization, options = binder(*args, **kwargs)
        return compute_cache_key({}, specialization, options), bound, specialization, options, kwargs

    def run(self, jit, *args, grid, warmup, **kwargs):  # what the guard calls as Triton's path
        self.runs += 1
        key, bound, specialization, options, kwargs = self.triton_key(jit, args, kwargs)
        kernel = self.kernels.get(key)
        if kernel is None:
            opts, signature, constexprs, attrs = jit._pack_args(self.backend, kwargs, bound, specialization, options)
            src = triton.compiler.ASTSource(jit, signature, constexprs, attrs)
            ck = triton.compile(src, target=self.target, options=opts.__dict__)
            kernel = self.kernels[key] = Compiled(ck, key, self)
        jit.cache_key  # Triton computes the kernel's hash when it compiles
        caches = jit.device_caches.get(0)
        if caches is None:  # Triton's caches of one device, as JITFunction.run reads them, until cleared
            from triton.runtime.jit import create_function_from_signature

            binder = create_function_from_signature(jit.signature, jit.params, self.backend)
            caches = jit.device_caches[0] = ({}, {}, self.target, self.backend, binder)
        caches[0][key] = kernel
        if not warmup:
            g = grid(bound) if callable(grid) else grid
            g = (tuple(g) + (1, 1))[:3]
            kernel._run(*g, 0x5EA, kernel.function, kernel.packed_metadata, None, None, None, *bound.values())
        return kernel


class Compiled:
    """A CompiledKernel as the guard sees it: its launcher (a dry run that records), handles."""

    def __init__(self, ck, key, triton_):
        self.ck, self.key = ck, key
        self.function = 0xF00 + len(triton_.kernels)
        self.packed_metadata = ck.packed_metadata
        inner = CudaLauncher(ck.src, ck.metadata)

        def run(*call):
            triton_.launched.append((key, inner.dry_run(*call)))

        if not triton_.stock_launcher:
            run.checks_pointers = True  # it stands for launcher's own launcher (a dry run of it)
            run._launch_failed = inner._launch_failed

            def flat(grid, params):  # a hit that packed and launched itself
                triton_.flat_launches += 1
                triton_.launched.append((key, params))

            run.flat_launch = recording_flat_launch(inner, flat)
        self._run = run

    @property
    def run(self):
        return self._run

    def launch_metadata(self, grid, stream, *args):
        return None


def _forget_guard(jit):
    """Take a test's guard away from its kernel for good (attached or dormant)."""
    guard = jit.__dict__.pop(fast_dispatch._GUARD, None)
    if guard is not None:
        guard.detach()
    jit.__dict__.pop("run", None)


class Sixteen(int):
    """An int whose __int__ answers 16 whatever its value: Triton keys it, and the launch packs it,
    by its own value."""
    def __int__(self):
        return 16


A0, A1 = 0x7F0000001000, 0x7F0000001004
TENSORS = st.builds(FakeTensor, st.sampled_from([A0, A1]), st.just(tl.float32))
INTS = st.sampled_from([1, 16, 17, 2**31, 2**63 + 16, Sixteen(16), Sixteen(17), Sixteen(1)])
SMALL = st.sampled_from([1, 16, 2**40])


# The generated code tests each parameter's kind in the order a first call suggests: none (a
# tensor slot for every parameter), or a call whose scalars make one-entry slots.
EXAMPLES = {"no example": None,
            "scalars first": ((FakeTensor(A0, tl.float32), 16, 1, 1, 0.5, (FakeTensor(A0, tl.float32), 16), None),
                              {"BLOCK": 64})}


@pytest.fixture(scope="module", params=list(EXAMPLES))
def cpu_module(request):
    triton_ = CpuTriton(guard_kernel)
    guard = Guard(guard_kernel, triton_.run, device=lambda: 0, stream=lambda d: 0x5EA,
                  example=EXAMPLES[request.param])
    yield triton_, guard
    _forget_guard(guard_kernel)


@pytest.fixture
def cpu(cpu_module):
    """The module's guard, in front of its kernel (a test's disable() leaves it dormant)."""
    triton_, guard = cpu_module
    assert guard.attach(triton_.run)
    return cpu_module


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TENSORS, INTS, SMALL, SMALL, st.sampled_from([0.5, 2.0]), st.tuples(TENSORS, st.sampled_from([1, 16])),
       st.one_of(st.none(), TENSORS), st.sampled_from([64, 128]), st.booleans())
def test_the_guard_launches_the_kernel_triton_chooses_with_its_bytes(cpu, x, n, m, k, scale, t, opt, block, as_kw):
    triton_, guard = cpu
    if as_kw:  # the same call with keywords
        args, kwargs = (x,), dict(n=n, m=m, k=k, scale=scale, t=t, opt=opt, BLOCK=block)
    else:
        args, kwargs = (x, n, m, k, scale, t, opt), {"BLOCK": block}
    want_key = triton_.triton_key(guard_kernel, args, kwargs)[0]
    before = len(triton_.launched)
    kernel = guard.run(*args, grid=(2,), warmup=False, **kwargs)
    assert kernel.key == want_key, "the guard returned another kernel than Triton's key chooses"
    assert len(triton_.launched) == before + 1
    launched_key, got = triton_.launched[-1]
    assert launched_key == want_key
    values = (x, n, m, k, scale, t, opt, block)
    want = CudaLauncher(kernel.ck.src, kernel.ck.metadata).dry_run(2, 1, 1, 0x5EA, kernel.function,
                                                                   kernel.packed_metadata, None, None, None, *values)
    assert got == want


@triton.jit(do_not_specialize=["m"], do_not_specialize_on_alignment=["k"])
def flat_kernel(x, n, m, k, scale, opt, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n)
    tl.store(x + offs, v * scale + m + k, mask=offs < n)
    if opt is not None:
        tl.store(opt + offs, v, mask=offs < n)


FLAT_EXAMPLES = {"no example": None,
                 "scalars first": ((FakeTensor(A0, tl.float32), 16, 1, 1, 0.5, None), {"BLOCK": 64})}


@pytest.fixture(params=list(FLAT_EXAMPLES))
def flat_cpu(request, monkeypatch):
    """A guard in front of a kernel of pointers and scalars only, FakeTensor playing torch's
    Tensor: its hits pack and launch themselves (CudaLauncher.flat_launch) where the compiled
    kernel's constexprs are the declared ones (not where opt is None, or n is 1: Triton makes
    those constexprs)."""
    import sys
    import types

    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(Tensor=FakeTensor, cuda=types.SimpleNamespace()))
    triton_ = CpuTriton(flat_kernel)
    guard = Guard(flat_kernel, triton_.run, device=lambda: 0, stream=lambda d: 0x5EA,
                  example=FLAT_EXAMPLES[request.param])
    yield triton_, guard
    _forget_guard(flat_kernel)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TENSORS, INTS, SMALL, SMALL, st.sampled_from([0.5, 2.0]), st.one_of(st.none(), TENSORS),
       st.sampled_from([64, 128]), st.booleans(), st.sampled_from([(2,), (2, 3), (1, 2, 3)]))
def test_a_hit_that_packs_itself_launches_what_triton_chooses_with_its_bytes(flat_cpu, x, n, m, k, scale, opt,
                                                                            block, as_kw, grid):
    triton_, guard = flat_cpu
    if as_kw:
        args, kwargs = (x,), dict(n=n, m=m, k=k, scale=scale, opt=opt, BLOCK=block)
    else:
        args, kwargs = (x, n, m, k, scale, opt), {"BLOCK": block}
    want_key = triton_.triton_key(flat_kernel, args, kwargs)[0]
    for _ in range(2):  # a miss or a hit, then a hit
        before = len(triton_.launched)
        kernel = guard.run(*args, grid=grid, warmup=False, **kwargs)
        assert kernel.key == want_key and len(triton_.launched) == before + 1
        launched_key, got = triton_.launched[-1]
        assert launched_key == want_key
        want = CudaLauncher(kernel.ck.src, kernel.ck.metadata).dry_run(
            *(grid + (1, 1))[:3], 0x5EA, kernel.function, kernel.packed_metadata, None, None, None,
            x, n, m, k, scale, opt, block)
        assert got == want


def test_hits_pack_and_launch_in_one_c_call_whatever_triton_made_constexpr(flat_cpu):
    """Where Triton made an argument a constexpr (None, 1) too, and where a tensor comes to a
    parameter whose first argument was a scalar (None for opt, in "scalars first"): the C call
    skips the constexprs and reads a tensor's data_ptr() itself."""
    triton_, guard = flat_cpu
    x = FakeTensor(A0, tl.float32)
    for opt, n in ((x, 16), (None, 16), (x, 1)):
        args = (x, n, 17, 5, 0.5, opt)
        guard.run(*args, grid=(2,), warmup=False, BLOCK=64)
        flat_before, hits = triton_.flat_launches, fast_dispatch.stats()["hits"]
        guard.run(*args, grid=(2,), warmup=False, BLOCK=64)
        assert fast_dispatch.stats()["hits"] == hits + 1
        assert triton_.flat_launches == flat_before + 1, (opt, n)


def test_a_hit_the_c_call_declines_is_launched_by_the_direct_launch(flat_cpu):
    """Values of another type than the C call packs (a bool where an int goes, a grid of numpy-
    like ints, a list of one float) go to the direct launch, which packs what Triton's would."""
    triton_, guard = flat_cpu
    x = FakeTensor(A0, tl.float32)

    class Index:
        def __init__(self, v):
            self.v = v

        def __index__(self):
            return self.v

    for args, grid in (((x, 16, 17, 5, 0.5, None), (Index(2),)), ((x, 16, True, 5, 0.5, None), (2,)),
                       ((x, 16, 17, 5, 0.5, None), [2, 1, 1, 1])):
        guard.run(*args, grid=grid, warmup=False, BLOCK=64)
        kernel = guard.run(*args, grid=grid, warmup=False, BLOCK=64)
        want = CudaLauncher(kernel.ck.src, kernel.ck.metadata).dry_run(
            2, 1, 1, 0x5EA, kernel.function, kernel.packed_metadata, None, None, None, *args, 64)
        assert triton_.launched[-1][1] == want


class IndexTensor(FakeTensor):
    """A tensor that is an int too, as a one-element integer torch tensor is (__index__):
    struct would pack that value where the kernel takes its address."""

    def __index__(self):
        return 0x1234


@pytest.mark.parametrize("tensor_class, example", [
    (IndexTensor, ((5, 16, 1, 1, 0.5, None), {"BLOCK": 64})),  # torch's class, where a first call had an int
    (FakeTensor, None),  # a subclass of torch's, keyed by the general classifier
])
def test_a_tensor_that_is_an_int_too_is_launched_by_its_address(monkeypatch, tensor_class, example):
    import sys
    import types

    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(Tensor=tensor_class, cuda=types.SimpleNamespace()))
    triton_ = CpuTriton(flat_kernel)
    guard = Guard(flat_kernel, triton_.run, device=lambda: 0, stream=lambda d: 0x5EA, example=example)
    try:
        x = IndexTensor(A0, tl.float32)
        args = (x, 16, 17, 5, 0.5, tensor_class(A1 + 12, tl.float32))
        for _ in range(3):
            kernel = guard.run(*args, grid=(2,), warmup=False, BLOCK=64)
            want = CudaLauncher(kernel.ck.src, kernel.ck.metadata).dry_run(
                2, 1, 1, 0x5EA, kernel.function, kernel.packed_metadata, None, None, None, *args, 64)
            assert triton_.launched[-1][1] == want and want[0] == A0.to_bytes(8, "little")
        assert triton_.runs == 1 and triton_.flat_launches == 2  # the C call reads data_ptr() too
    finally:
        _forget_guard(flat_kernel)


@triton.jit
def no_params():
    pass


def test_a_kernel_without_parameters_is_guarded():
    triton_ = CpuTriton(no_params)
    guard = Guard(no_params, triton_.run, device=lambda: 0, stream=lambda d: 0x5EA)
    try:
        first = guard.run(grid=(1,), warmup=False)
        hits = fast_dispatch.stats()["hits"]
        second = guard.run(grid=(1,), warmup=False)
        assert first is second and triton_.runs == 1 and fast_dispatch.stats()["hits"] == hits + 1
    finally:
        _forget_guard(no_params)


def test_a_repeated_call_hits_without_triton(cpu):
    triton_, guard = cpu
    x = FakeTensor(A0, tl.float32)
    args = (x, 16, 1, 1, 0.5, (x, 16), None)
    guard.run(*args, grid=(1,), warmup=False, BLOCK=64)
    runs, hits = triton_.runs, fast_dispatch.stats()["hits"]
    for _ in range(5):
        guard.run(*args, grid=(1,), warmup=False, BLOCK=64)
    assert triton_.runs == runs and fast_dispatch.stats()["hits"] == hits + 5


def test_a_miss_triton_has_compiled_is_launched_from_its_cache(cpu):
    """A call the guard has no record for, of a specialization Triton has compiled (here through
    Triton's path with the guard bypassed), is found in Triton's cache as Triton's run finds it:
    Triton's run does not run, the launch packs the bytes Triton's path packed, it counts as a
    miss, and the next call hits."""
    triton_, guard = cpu
    x = FakeTensor(A1, tl.float32)
    args = (x, 48, 1, 1, 0.5, (x, 16), None)  # BLOCK=256: a key no other test of the module makes
    triton_.run(guard_kernel, *args, grid=(3,), warmup=False, BLOCK=256)
    runs, want = triton_.runs, triton_.launched[-1]
    misses, hits = fast_dispatch.stats()["misses"], fast_dispatch.stats()["hits"]
    kernel = guard.run(*args, grid=(3,), warmup=False, BLOCK=256)
    assert triton_.runs == runs, "a miss Triton's cache answers ran Triton's path"
    assert triton_.launched[-1] == want and kernel.key == want[0]
    assert fast_dispatch.stats()["misses"] == misses + 1 and fast_dispatch.stats()["hits"] == hits
    guard.run(*args, grid=(3,), warmup=False, BLOCK=256)
    assert triton_.runs == runs and fast_dispatch.stats()["hits"] == hits + 1
    assert triton_.launched[-1] == want


@triton.jit
def recall_kernel(x, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x + offs, tl.load(x + offs, mask=offs < n) * 2, mask=offs < n)


def test_a_miss_finds_what_tritons_own_run_would_launch():
    """With Triton's own JITFunction.run (its driver on the CPU: launches are dry runs of
    launcher's launcher): a miss of a specialization Triton's path has compiled and loaded is
    launched from Triton's own cache with the bytes Triton's path launches, without Triton's run.
    One that warmup() compiled but nothing loaded yet, and one never compiled, take Triton's path
    (its first launch loads it, with Triton's hooks and errors), and are hits after."""
    from cpu_triton import cpu_triton

    jit_run = fast_dispatch.A.jit_function_class().run
    runs = []

    def original(self, *args, **kwargs):
        runs.append(kwargs.get("warmup"))
        return jit_run(self, *args, **kwargs)

    with cpu_triton(90, recall_kernel) as d:
        x = FakeTensor(A0, tl.float32)
        want = {}
        for n in (1000, 32):  # Triton's path, no guard: two specializations, compiled and loaded
            jit_run(recall_kernel, x, n, grid=(2,), warmup=False, BLOCK=64)
            want[n] = d.launches[-1].params
        recall_kernel.warmup(x, 1, grid=(2,), BLOCK=64)  # compiled, never loaded
        guard = Guard(recall_kernel, original, device=d.get_current_device, stream=d.get_current_stream)
        try:
            for n in (1000, 32):
                guard.run(x, n, grid=(2,), warmup=False, BLOCK=64)
                assert runs == [] and d.launches[-1].params == want[n], "not what Triton's path launched"
            guard.run(x, 1, grid=(2,), warmup=False, BLOCK=64)  # compiled, not loaded: Triton's path
            assert runs == [False]
            guard.run(x, 1, grid=(2,), warmup=False, BLOCK=64)  # recorded: a hit
            assert runs == [False] and d.launches[-1].params == d.launches[-2].params
            guard.run(x, 32, grid=(2,), warmup=False, BLOCK=128)  # never compiled: Triton's path
            assert runs == [False, False]
        finally:
            _forget_guard(recall_kernel)


def test_a_kernel_whose_load_fails_raises_tritons_error(monkeypatch):
    """A kernel compiled by warmup() and not loaded yet is loaded by Triton's path, so a load
    that fails raises Triton's error (with launch hooks unset too: nothing retries the load)."""
    from cpu_triton import cpu_triton

    jit_run = fast_dispatch.A.jit_function_class().run
    with cpu_triton(90, recall_kernel) as d, triton.knobs.runtime.scope():
        triton.knobs.runtime.launch_enter_hook = triton.knobs.runtime.launch_exit_hook = None
        x = FakeTensor(A0, tl.float32)
        recall_kernel.warmup(x, 32, grid=(2,), BLOCK=64)

        def load_binary(*args):
            raise RuntimeError("the cubin does not load")

        monkeypatch.setattr(d.utils, "load_binary", load_binary)
        guard = Guard(recall_kernel, jit_run, device=d.get_current_device, stream=d.get_current_stream)
        try:
            with pytest.raises(RuntimeError, match="the cubin does not load"):
                guard.run(x, 32, grid=(2,), warmup=False, BLOCK=64)
        finally:
            _forget_guard(recall_kernel)


@pytest.fixture
def switched(monkeypatch):
    """JITFunction.run played by CpuTriton, the guard off and guard_kernel without one: the
    test switches the guard on and off. Yields (CpuTriton, JITFunction class, arguments)."""
    triton_ = CpuTriton(guard_kernel)
    monkeypatch.setattr(fast_dispatch.A, "device_and_stream_getters", lambda: (_device0, _stream0))
    config = types.SimpleNamespace(_active=object())  # Triton's driver config: the getters' driver stays active
    monkeypatch.setattr(fast_dispatch.A, "active_driver", lambda: (config, config._active))
    jit_cls = fast_dispatch.A.jit_function_class()
    run = lambda self, *a, **kw: triton_.run(self, *a, **kw)  # noqa: E731
    monkeypatch.setattr(jit_cls, "run", run)
    tritons = fast_dispatch.A.is_tritons_run
    monkeypatch.setattr(fast_dispatch.A, "is_tritons_run", lambda r: r is run or tritons(r))  # it plays Triton's run
    x = FakeTensor(A0, tl.float32)
    was_on = fast_dispatch.enabled()
    fast_dispatch.disable()
    _forget_guard(guard_kernel)
    try:
        yield triton_, jit_cls, (x, 16, 1, 1, 0.5, (x, 16), None)
    finally:
        fast_dispatch.disable()
        _forget_guard(guard_kernel)
        if was_on:
            fast_dispatch.enable()


def test_a_guard_sleeps_through_disable_and_comes_back_with_its_records(switched, monkeypatch):
    """disable() takes every guard away, enable() puts the same ones back (no new code, no
    records lost); a guard made for another Triton run or other getters is made anew."""
    triton_, jit_cls, args = switched
    fast_dispatch.enable()
    guard_kernel.run(*args, grid=(1,), warmup=False, BLOCK=64)  # a miss: Triton's path
    guard = guard_kernel.__dict__[fast_dispatch._GUARD]
    assert guard_kernel.__dict__["run"] is guard.run and triton_.runs == 1
    fast_dispatch.disable()
    assert "run" not in guard_kernel.__dict__ and fast_dispatch.stats()["guarded kernels"] == 0
    guard_kernel.run(*args, grid=(1,), warmup=False, BLOCK=64)  # Triton's own dispatch
    assert triton_.runs == 2
    fast_dispatch.enable()
    hits = fast_dispatch.stats()["hits"]
    guard_kernel.run(*args, grid=(1,), warmup=False, BLOCK=64)  # the same guard hits at once
    assert guard_kernel.__dict__[fast_dispatch._GUARD] is guard and guard_kernel.__dict__["run"] is guard.run
    assert triton_.runs == 2 and fast_dispatch.stats()["hits"] == hits + 1
    fast_dispatch.disable()
    monkeypatch.setattr(fast_dispatch.A, "device_and_stream_getters", lambda: (lambda: 0, _stream0))
    fast_dispatch.enable()  # another device getter: the dormant guard is out of date
    misses = fast_dispatch.stats()["misses"]
    guard_kernel.run(*args, grid=(1,), warmup=False, BLOCK=64)  # a new guard's miss, from Triton's cache
    assert guard_kernel.__dict__[fast_dispatch._GUARD] is not guard and triton_.runs == 2
    assert fast_dispatch.stats()["misses"] == misses + 1


def _device0():
    return 0


def _stream0(device):
    return 0x5EA


def test_kernel_grid_binds_the_grid_to_the_guard_and_follows_disable(switched):
    """While the guard is on, kernel[grid] is the guard's call with the grid bound (after the
    kernel's first run put a guard in front of it); a hit launches the bytes Triton's path
    launched. After disable(), JITFunction.__getitem__ is Triton's again and a kernel[grid]
    taken earlier dispatches through Triton's path."""

    triton_, jit_cls, args = switched
    own_getitem = jit_cls.__dict__.get("__getitem__")
    fast_dispatch.enable()
    guard_kernel[(2,)](*args, BLOCK=64)  # Triton's lambda: run puts the guard in front, a miss
    guard = guard_kernel.__dict__[fast_dispatch._GUARD]
    assert triton_.runs == 1
    bound = guard_kernel[(2,)]
    assert type(bound).__name__ == "GuardCall" and bound.keyer is guard.keyer and bound.grid == (2,)
    hits = fast_dispatch.stats()["hits"]
    bound(*args, BLOCK=64)
    assert triton_.runs == 1 and fast_dispatch.stats()["hits"] == hits + 1
    assert triton_.launched[-1] == triton_.launched[-2], "a hit launched other bytes than Triton's path"
    fast_dispatch.disable()
    assert jit_cls.__dict__.get("__getitem__") is own_getitem
    bound(*args, BLOCK=64)  # taken while on, called after: Triton's own dispatch
    assert triton_.runs == 2 and fast_dispatch.stats()["hits"] == hits + 1
    assert type(guard_kernel[(2,)]).__name__ != "GuardCall"


def test_kernel_grid_binds_as_python_and_keys_a_miss_once(switched):
    """kernel[grid](...) under the guard takes positional and keyword arguments as the kernel's
    signature does (each form a hit), refuses what Python's binding refuses with its TypeError,
    and keys a miss once (the C hit's key goes to the general path); launch options are keyed by
    the general path."""
    triton_, jit_cls, args = switched
    fast_dispatch.enable()
    guard_kernel[(2,)](*args, BLOCK=64)  # the first run puts the guard in front (a miss)
    guard = guard_kernel.__dict__[fast_dispatch._GUARD]
    names = ("x", "n", "m", "k", "scale", "t", "opt")
    hits, runs = fast_dispatch.stats()["hits"], triton_.runs
    for call_args, kwargs in [(args, {"BLOCK": 64}), ((), dict(zip(names, args), BLOCK=64)),
                              (args[:3], dict(zip(names[3:], args[3:]), BLOCK=64)), ((*args, 64), {})]:
        guard_kernel[(2,)](*call_args, **kwargs)
        assert triton_.launched[-1] == triton_.launched[0]
    assert fast_dispatch.stats()["hits"] == hits + 4 and triton_.runs == runs
    for call_args, kwargs, error in [(args, {}, "BLOCK"), ((*args, 64, 1), {}, "positional"),
                                     (args, {"BLOCK": 64, "x": args[0]}, "multiple values"),
                                     ((), {"BLOCK": 64}, "required")]:
        with pytest.raises(TypeError, match=error):
            guard_kernel[(2,)](*call_args, **kwargs)
    key = codegen.cells(guard.general)["_launcher_KEY"]
    real_key, keyed = key.cell_contents, []
    key.cell_contents = lambda *a: keyed.append(1) or real_key(*a)
    try:
        misses = fast_dispatch.stats()["misses"]
        guard_kernel[(2,)](*args[:1], 17, *args[2:], BLOCK=64)  # n=17: a new key, a miss
        assert fast_dispatch.stats()["misses"] == misses + 1 and triton_.runs == runs + 1 and keyed == []
        guard_kernel[(2,)](*args, BLOCK=64, num_warps=4)  # launch options: the general path keys
        assert keyed == [1]
    finally:
        key.cell_contents = real_key


def test_what_would_make_triton_choose_again_makes_the_guard_miss(cpu):
    triton_, guard = cpu
    x = FakeTensor(A0, tl.float32)
    args = (x, 16, 1, 1, 0.5, (x, 16), None)
    call = lambda **kw: guard.run(*args, grid=(1,), warmup=False, BLOCK=64, **kw)  # noqa: E731
    call()
    runs = triton_.runs
    guard_kernel.hash = None  # what _unsafe_update_src does to a changed source
    call()
    assert triton_.runs == runs + 1
    guard_kernel.device_caches.clear()  # clearing the kernel's cache
    call()
    assert triton_.runs == runs + 2
    call(num_warps=8)  # another launch option is another key
    assert triton_.runs == runs + 3
    with triton.knobs.runtime.scope():  # restores the knob and the environment it sets
        triton.knobs.runtime.debug = True  # a knob in Triton's cache key
        call()
        assert triton_.runs == runs + 4
    if "fpsan_homomorphic_casts" in vars(type(triton.knobs.compilation)):  # 3.9's knob in its cache key
        with triton.knobs.compilation.scope():
            triton.knobs.compilation.fpsan_homomorphic_casts = not triton.knobs.compilation.fpsan_homomorphic_casts
            call()
            assert triton_.runs == runs + 5
        runs += 1
        with triton.knobs.compilation.scope():  # the value set just above, now through its environment variable
            misses = fast_dispatch.stats()["misses"]
            os.environ["TRITON_FPSAN_HOMOMORPHIC_CASTS"] = "0" if triton.knobs.compilation.fpsan_homomorphic_casts else "1"
            call()  # another key (the guard misses); Triton's cache holds that kernel: no compile
            assert fast_dispatch.stats()["misses"] == misses + 1 and triton_.runs == runs + 4
            # the holder's own setting wins over the variable (no setenv: only the holder changes)
            value = triton.knobs.compilation.fpsan_homomorphic_casts
            triton.knobs.compilation.__dict__["fpsan_homomorphic_casts"] = not value
            assert triton.knobs.compilation.fpsan_homomorphic_casts is (not value)
            kernel = call()
            assert kernel.key == triton_.triton_key(guard_kernel, args, {"BLOCK": 64})[0]
        # read through what decides its value (the holder's own setting, the environment's), not its descriptor
        # (the holder's __dict__ read as the instance dict: Triton's knobs are plain Python objects)
        assert ("own", triton.knobs.compilation, "fpsan_homomorphic_casts", fast_dispatch._UNSET, True) in fast_dispatch._knobs()
    guard_kernel.pre_run_hooks.append(lambda *a, **k: None)
    try:
        before = fast_dispatch.fallback_counts()
        call()
        assert triton_.runs == runs + 5
        assert fast_dispatch.fallback_counts()["pre-run hooks or a stages hook"] == \
            before.get("pre-run hooks or a stages hook", 0) + 1
    finally:
        guard_kernel.pre_run_hooks.clear()


def test_an_unkeyable_argument_takes_tritons_path(cpu):
    triton_, guard = cpu
    x = FakeTensor(A0, tl.float32)
    runs = triton_.runs
    before = fast_dispatch.fallback_counts()
    with pytest.raises(Exception):  # Triton's own path refuses a string: its error, not ours
        guard.run(x, "sixteen", 1, 1, 0.5, (x, 16), None, grid=(1,), warmup=False, BLOCK=64)
    assert triton_.runs == runs + 1
    assert sum(fast_dispatch.fallback_counts().values()) == sum(before.values()) + 1


def test_the_generated_guard_is_visible():
    import inspect

    source = inspect.getsource(guard_kernel.__dict__["run"]) if "run" in guard_kernel.__dict__ else None
    assert source is None or source.lstrip().startswith("def run(x, n, m, k, scale, t, opt, BLOCK, *, grid, warmup")


def test_stats_and_enable_disable_are_public():
    assert launcher.fast_dispatch_stats()["enabled"] in (True, False)
    assert set(launcher.fast_dispatch_stats()) >= {"hits", "misses", "fallbacks"}


def test_install_puts_the_guard_in_front_of_every_jit_function_and_uninstall_removes_it(monkeypatch):
    from triton.runtime.jit import JITFunction

    original = JITFunction.run
    launcher.uninstall()
    try:
        launcher.install(fast_dispatch=True)
        assert JITFunction.run is fast_dispatch._first_run and launcher.fast_dispatch_stats()["enabled"]
        launcher.install(fast_dispatch=False)  # switched off on an installed launcher
        assert JITFunction.run is original
        launcher.install(fast_dispatch=True)
    finally:
        launcher.uninstall()
    assert JITFunction.run is original and not launcher.fast_dispatch_stats()["enabled"]
    monkeypatch.setenv("LAUNCHER_FAST_DISPATCH", "1")
    try:
        launcher.install()
        assert JITFunction.run is fast_dispatch._first_run
    finally:
        launcher.uninstall()
    with pytest.raises(TypeError, match="fast_dispatch"):
        launcher.install(fast_dispatch="yes")
    launcher.uninstall()


@pytest.mark.parametrize("example", list(EXAMPLES))
def test_tensors_in_tuples_keyed_inline_choose_what_triton_chooses(monkeypatch, example):
    """With torch's Tensor class known to the guard, tensors (also those inside tuples) are
    keyed by the generated code and _item_key, not by the general classifier: the kernel
    chosen, on a miss and on the hit that follows, is still the one Triton's key chooses."""
    import itertools
    import sys
    import types

    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(Tensor=FakeTensor, cuda=types.SimpleNamespace()))
    triton_ = CpuTriton(guard_kernel)
    guard = Guard(guard_kernel, triton_.run, device=lambda: 0, stream=lambda d: 0x5EA, example=EXAMPLES[example])
    try:
        assert guard._made_with[3] is FakeTensor
        for x, t0, n, opt in itertools.product([A0, A1], [A0, A1], [1, 16, 17], [None, A0, A1]):
            opt = None if opt is None else FakeTensor(opt, tl.float32)  # where the example had None
            args = (FakeTensor(x, tl.float32), n, 1, 1, 0.5, (FakeTensor(t0, tl.float32), 16), opt)
            want = triton_.triton_key(guard_kernel, args, {"BLOCK": 64})[0]
            for _ in range(2):  # a miss, then a hit
                assert guard.run(*args, grid=(1,), warmup=False, BLOCK=64).key == want
            assert triton_.launched[-1] == triton_.launched[-2], "the hit launched other bytes"
    finally:
        _forget_guard(guard_kernel)


def test_a_tensor_descriptor_falls_back_without_an_exception_after_the_first(cpu):
    """The first descriptor of a class raises NoKey inside the guard; its class is remembered,
    so later calls fall back through a returned NoKey (no exception), counted the same way."""
    triton_, guard = cpu

    class FakeDescriptor:
        block_shape, base = [64], None

    desc = FakeDescriptor()
    x = FakeTensor(A0, tl.float32)
    before = fast_dispatch.fallback_counts()
    original, paths = guard.original, []
    guard.original = lambda *a, **k: paths.append(1) or original(*a, **k)  # Triton's path, counted
    try:
        for _ in range(3):
            with pytest.raises(Exception):  # Triton's own path refuses this stand-in: its error, not ours
                guard.run(x, 16, 1, 1, 0.5, (x, 16), desc, grid=(1,), warmup=False, BLOCK=64)
    finally:
        guard.original = original
    after = fast_dispatch.fallback_counts()
    assert after["a tensor descriptor"] == before.get("a tensor descriptor", 0) + 3
    assert len(paths) == 3  # once per call: Triton's error is not taken for the key's (and the path run again)
    assert {r: c for r, c in after.items() if r != "a tensor descriptor"} == \
        {r: c for r, c in before.items() if r != "a tensor descriptor"}
    assert fast_dispatch._NO_KEY_CLASSES[FakeDescriptor].args == ("a tensor descriptor",)


def test_the_finder_answers_what_tritons_cache_holds_and_not_a_compile_in_flight(cpu):
    """cached_kernel_finder finds the kernel Triton's run would launch, by Triton's binder and
    cache key, and nothing while the cache holds the future of an asynchronous compile."""
    triton_, guard = cpu
    x = FakeTensor(A0, tl.float32)
    args = (x, 16, 1, 1, 0.5, (x, 16), None)
    kernel = guard.run(*args, grid=(1,), warmup=False, BLOCK=64)
    find = fast_dispatch.A.cached_kernel_finder()
    values = args + (64,)
    assert find(guard_kernel, guard_kernel.device_caches.get(0), values, {})[0] is kernel
    assert find(guard_kernel, guard_kernel.device_caches.get(1), values, {}) is None  # no caches on that device
    cache = guard_kernel.device_caches[0][0]
    (key,) = [k for k, v in cache.items() if v is kernel]

    class Future:
        def result(self):
            return kernel

    cache[key] = Future()
    try:
        assert find(guard_kernel, guard_kernel.device_caches.get(0), values, {}) is None
        cache[key] = kernel.ck  # Triton's own CompiledKernel (no `result` asked of it)
        assert find(guard_kernel, guard_kernel.device_caches.get(0), values, {})[0] is kernel.ck
    finally:
        cache[key] = kernel


def test_parameters_named_like_builtins_hide_none_the_guard_uses():
    """A kernel whose parameters are named len, tuple, int, float and str: the guard's code refers
    to no builtin by its own name (a parameter would hide it; `hash` is an attribute there), and
    its hits launch the kernel Triton's key chooses."""
    import builtins

    from kernels import builtin_names_kernel

    triton_ = CpuTriton(builtin_names_kernel)
    guard = Guard(builtin_names_kernel, triton_.run, device=lambda: 0, stream=lambda d: 0x5EA)
    try:
        for fn in (guard.run, guard.general):
            assert set(fn.__code__.co_names) & set(vars(builtins)) <= {"hash"}
        x = FakeTensor(A0, tl.float32)
        args = (x, 3, x, 5, 1.5, 7)
        want = triton_.triton_key(builtin_names_kernel, args, {"BLOCK": 64})[0]
        hits = fast_dispatch.stats()["hits"]
        for grid in ((1,), lambda meta: (meta["len"],)):  # a miss, then hits (the callable grid too)
            for _ in range(2):
                assert guard.run(*args, grid=grid, warmup=False, BLOCK=64).key == want
        assert fast_dispatch.stats()["hits"] == hits + 3
        assert triton_.launched[-1] == triton_.launched[-2]
    finally:
        _forget_guard(builtin_names_kernel)
        builtin_names_kernel.device_caches.clear()  # the stand-in kernels are this test's alone


def test_a_parameter_first_given_a_descriptor_falls_back_before_anything_is_classified(monkeypatch):
    """A guard made from a first call with a tensor descriptor tests that parameter's class first:
    a call with a descriptor there takes Triton's path once, counted, with nothing classified or
    looked up; a call with a tensor there is keyed and hits as before."""

    class FakeDescriptor:
        block_shape, base = [64], None

    x = FakeTensor(A0, tl.float32)
    desc_call = (x, 16, 1, 1, 0.5, (x, 16), FakeDescriptor())
    triton_ = CpuTriton(guard_kernel)
    paths = []
    guard = Guard(guard_kernel, lambda *a, **k: paths.append(1), device=lambda: 0, stream=lambda d: 0x5EA,
                  example=(desc_call, {"BLOCK": 64}))
    try:
        classified = []
        cells = codegen.cells(guard.general)
        key = cells["_launcher_KEY"].cell_contents
        cells["_launcher_KEY"].cell_contents = lambda *a: classified.append(a)
        before = fast_dispatch.fallback_counts().get("a tensor descriptor", 0)
        for _ in range(3):
            guard.run(*desc_call, grid=(1,), warmup=False, BLOCK=64)
        assert len(paths) == 3 and not classified
        assert fast_dispatch.fallback_counts()["a tensor descriptor"] == before + 3
        guard.original = triton_.run  # a tensor there: keyed (a miss, then a hit)
        cells["_launcher_KEY"].cell_contents = key
        args = desc_call[:6] + (x,)
        want = triton_.triton_key(guard_kernel, args, {"BLOCK": 64})[0]
        hits = fast_dispatch.stats()["hits"]
        for _ in range(2):
            assert guard.run(*args, grid=(1,), warmup=False, BLOCK=64).key == want
        assert fast_dispatch.stats()["hits"] == hits + 1
    finally:
        _forget_guard(guard_kernel)


def test_torch_imported_after_the_guard_was_made_keys_tensors_inline_after_a_miss(monkeypatch):
    """A guard made before torch was imported keys tensors through the general classifier; the
    first miss after torch appears switches its generated code to torch's Tensor class (in the
    function's own closure cells), and the kernel chosen is still Triton's."""
    import sys
    import types

    monkeypatch.setitem(sys.modules, "torch", None)  # not imported
    triton_ = CpuTriton(guard_kernel)
    guard = Guard(guard_kernel, triton_.run, device=lambda: 0, stream=lambda d: 0x5EA)
    try:
        assert guard.keyer.tensor is fast_dispatch._NoTensor
        monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(Tensor=FakeTensor, cuda=types.SimpleNamespace()))
        x = FakeTensor(A0, tl.float32)
        args = (x, 16, 1, 1, 0.5, (x, 16), None)
        want = triton_.triton_key(guard_kernel, args, {"BLOCK": 64})[0]
        assert guard.run(*args, grid=(1,), warmup=False, BLOCK=64).key == want  # a miss
        assert guard.keyer.tensor is FakeTensor
        for _ in range(2):  # a miss with the inline key, then a hit
            assert guard.run(*args, grid=(1,), warmup=False, BLOCK=64).key == want
        hits = fast_dispatch.stats()["hits"]
        guard.run(*args, grid=(1,), warmup=False, BLOCK=64)
        assert fast_dispatch.stats()["hits"] == hits + 1
    finally:
        _forget_guard(guard_kernel)


def test_the_current_device_getter_answers_0_only_where_one_device_is_visible():
    """launcher.devices: with one visible device the getter is a C call answering 0; with more,
    torch's raw current-device function (a stand-in torch here: the rule, not torch, is tested)."""
    import types

    from launcher.devices import only_device, torch_device_getter

    raw = lambda: 3  # noqa: E731
    for count, want in ((1, only_device), (2, raw), (8, raw)):
        torch = types.SimpleNamespace(cuda=types.SimpleNamespace(device_count=lambda c=count: c),
                                      _C=types.SimpleNamespace(_cuda_getDevice=raw))
        assert torch_device_getter(torch) is want
    assert only_device() == 0


def test_a_kernel_the_stock_launcher_launches_always_takes_tritons_path(switched):
    """A hit hands the launcher the data_ptr() its key read, which Triton's stock launcher would
    take unchecked (it checks tensors, not ints): kernels it launches are never recorded, so
    every call takes Triton's path, counted as a fallback."""
    triton_, _, args = switched
    triton_.stock_launcher = True
    fast_dispatch.enable()
    reason = "a kernel Triton's stock launcher launches"
    before, hits, misses = fast_dispatch.fallback_counts().get(reason, 0), fast_dispatch.stats()["hits"], fast_dispatch.stats()["misses"]
    for _ in range(3):
        guard_kernel.run(*args, grid=(1,), warmup=False, BLOCK=64)
    assert triton_.runs == 3 and fast_dispatch.stats()["hits"] == hits and fast_dispatch.stats()["misses"] == misses
    assert fast_dispatch.fallback_counts()[reason] == before + 3


def test_kernel_grid_leaves_a_run_set_by_the_user_and_another_getitem_in_charge(switched):
    """kernel[grid] is the guard's call only where the guard's run is the kernel's run: a run
    the user set on the kernel is what kernel[grid] calls, as with Triton's own __getitem__; a
    __getitem__ something else put on JITFunction before enable() stays, and disable() leaves
    one set while the guard was on."""
    triton_, jit_cls, args = switched
    fast_dispatch.enable()
    guard_kernel[(1,)](*args, BLOCK=64)
    calls = []
    user_run = guard_kernel.__dict__["run"]
    guard_kernel.run = lambda *a, **kw: calls.append(1) or user_run(*a, **kw)
    guard_kernel[(1,)](*args, BLOCK=64)
    assert calls == [1] and not isinstance(guard_kernel[(1,)], types.MethodType)
    fast_dispatch.disable()
    assert guard_kernel.__dict__["run"] is not user_run, "disable() took away the user's run"
    _forget_guard(guard_kernel)

    def other(self, grid):
        return lambda *a, **kw: self.run(*a, grid=grid, warmup=False, **kw)

    jit_cls.__getitem__ = other
    try:
        fast_dispatch.enable()
        assert jit_cls.__dict__["__getitem__"] is other
        fast_dispatch.disable()
        assert jit_cls.__dict__["__getitem__"] is other
        fast_dispatch.enable()
        jit_cls.__getitem__ = mine = lambda self, grid: other(self, grid)  # noqa: E731
        fast_dispatch.disable()
        assert jit_cls.__dict__["__getitem__"] is mine
    finally:
        fast_dispatch.disable()
        del jit_cls.__getitem__


def test_kernel_grid_in_c_reads_as_the_attributes_do(switched):
    """JITFunction.__getitem__ while the guard is on is launcher._call.GuardItem: kernel[grid] is
    the guard's call bound to the grid for JITFunction itself (read from the kernel's __dict__)
    and for a subclass (read as attributes: its __getattribute__ and properties honoured); grid None,
    a kernel without a guard and a `_launcher_call` that fails to read are Triton's; reached
    as an attribute it binds like a method; it leaks no references."""
    import sys
    triton_, jit_cls, args = switched
    fast_dispatch.enable()
    item = jit_cls.__dict__["__getitem__"]
    assert type(item).__name__ == "GuardItem" and jit_cls.__getitem__ is item
    assert item.triton_getitem is next(vars(c)["__getitem__"] for c in jit_cls.__mro__[1:] if "__getitem__" in vars(c))
    guard_kernel[(1,)](*args, BLOCK=64)  # the first run puts the guard in front (a miss)
    guard = guard_kernel.__dict__[fast_dispatch._GUARD]
    bound = guard_kernel.__getitem__((3,))  # as an attribute: bound to the kernel like a method
    assert type(bound).__name__ == "GuardCall" and bound.keyer is guard.keyer and bound.grid == (3,)
    assert type(guard_kernel[None]).__name__ != "GuardCall"  # Triton's, which fails later as it does
    grid = (1,)
    guard_kernel[grid]  # the last call made for a grid of ints is kept (and handed out again): one reference each
    before = sys.getrefcount(grid), sys.getrefcount(guard.keyer)
    for _ in range(1000):
        guard_kernel[grid]
    assert (sys.getrefcount(grid), sys.getrefcount(guard.keyer)) == before
    with pytest.raises(TypeError):
        item(guard_kernel)  # not kernel[grid]: Triton's own __getitem__ says why
    hits = fast_dispatch.stats()["hits"]
    guard_kernel[grid](*args, BLOCK=64)
    assert fast_dispatch.stats()["hits"] == hits + 1

    class Sub(jit_cls):  # not JITFunction itself: GuardItem reads attributes, as Python would
        reads = 0

        def __getattribute__(self, name):
            if name == fast_dispatch._CALL:
                type(self).reads += 1
            return object.__getattribute__(self, name)

    sub = object.__new__(Sub)
    sub.__dict__.update(guard_kernel.__dict__)
    assert type(sub[(2,)]).__name__ == "GuardCall" and sub[(2,)].keyer is guard.keyer and Sub.reads == 2

    class Broken(jit_cls):
        @property
        def _launcher_call(self):
            raise RuntimeError("unreadable")

    broken = object.__new__(Broken)
    broken.__dict__.update(guard_kernel.__dict__)
    assert type(broken[(1,)]).__name__ != "GuardCall"  # Triton's __getitem__, not an error
    fresh = object.__new__(jit_cls)  # no guard attached: Triton's
    assert type(fresh[(1,)]).__name__ != "GuardCall"
    assert fast_dispatch._plain(jit_cls) and not fast_dispatch._plain(Sub) and not fast_dispatch._plain(Broken)


def test_the_knobs_in_the_key_are_those_tritons_run_reads():
    """The guard's key and its lookup of Triton's cache read the knobs JITFunction.run puts into
    the keywords of its cache key, on this release: read out of run's own source."""
    import inspect
    import re

    source = inspect.getsource(fast_dispatch.A.jit_function_class().run)
    read = re.findall(r'kwargs\["(\w+)"\] = .*?knobs\.(\w+)\.(\w+)', source)
    assert read and all(name == attr for name, _, attr in read)
    want = [(getattr(triton.knobs, holder), attr) for _, holder, attr in read]
    assert [(h, a) for h, a in fast_dispatch.A.dispatch_knobs()] == want


def test_a_knob_read_from_the_environment_keys_by_what_decides_its_value(monkeypatch):
    """Where a knob in the key is a Triton env descriptor, the guard keys it by the holder's own
    setting and by the function its get() reads the environment with: that pair decides the
    value exactly as the descriptor computes it, whatever the variable holds."""
    sources = [(h, a, fast_dispatch.A.knob_source(h, a)) for h, a in fast_dispatch.A.dispatch_knobs()]
    for holder, attr, source in sources:
        if source is None:
            continue
        read, (env_key, default) = source
        for value in (None, "1", "0", "true", "TRUE", " on ", "", "x"):
            if value is None:
                monkeypatch.delenv(env_key, raising=False)
            else:
                monkeypatch.setenv(env_key, value)
            assert attr not in holder.__dict__
            assert read(env_key, default) == getattr(holder, attr), (attr, value)
    if "fpsan_homomorphic_casts" in vars(type(triton.knobs.compilation)):  # 3.9: the one env descriptor
        assert [a for _, a, source in sources if source is not None] == ["fpsan_homomorphic_casts"]


@pytest.mark.parametrize("specialize, align", [(True, True), (True, False), (False, True), (False, False)])
def test_an_int_key_is_its_class_and_the_table_remembers_it(specialize, align):
    """specialization.int_key, the one rule for an int argument's key (the guard and bundles key
    ints by it, and the generated code looks ints up in its table first): 1 only where Triton
    specializes it, the i32 / i64 / u64 range, the sign, divisibility by 16 only where Triton
    looks at it; the guard's int_key gives NoKey beyond 64 bits, the rule None."""
    from launcher.fast_dispatch import NoKey, int_key
    from launcher.specialization import INT_KEYS, int_key as rule, int_type

    edges = [0, 1, 2, 15, 16, 17, -1, -16, 2**31 - 16, 2**31 - 1, 2**31, 2**31 + 16, -2**31, -2**31 - 1,
             2**63 - 16, 2**63 - 1, 2**63, 2**63 + 16, -2**63, 2**64 - 16, 2**64 - 1]

    def triton_class(v):  # what decides Triton's kernel, and the sign (an unsigned annotation refuses it)
        if specialize and v == 1:
            return "one"
        return (int_type(v), v < 0, (v % 16 == 0) if specialize and align else specialize)

    keys = {v: int_key(v, specialize, align) for v in edges}
    assert keys == {v: rule(v, specialize, align) for v in edges}
    classes = {}
    for v, k in keys.items():  # one key per class, one class per key
        classes.setdefault(k, set()).add(triton_class(v))
    assert all(len(c) == 1 for c in classes.values()), classes
    assert len(classes) == len({triton_class(v) for v in edges})
    assert [int_type(v) for v in (2**31 - 1, 2**31, -2**63, 2**63, 2**64 - 1)] == ["i32", "i64", "i64", "u64", "u64"]
    assert all(INT_KEYS[specialize, align].get(v) == k for v, k in keys.items())
    assert 0 not in keys.values()  # the bundle's generated call tests `table.get(v) or ...`
    for v in (2**64, -2**63 - 1):
        assert rule(v, specialize, align) is None and int_type(v) is None
        with pytest.raises(NoKey, match="beyond 64 bits"):
            int_key(v, specialize, align)


def test_a_hit_follows_what_tritons_kernel_cache_holds_under_its_key():
    """An entry holds while Triton's kernel cache holds its kernel under its key: a kernel put in
    its place there is what the next call launches, and after the cache is emptied the call
    takes Triton's path (which compiles again), as without the guard."""
    import triton.language as tl

    from cpu_triton import cpu_triton
    from kernels import store_kernel

    x = FakeTensor(A0, tl.float32)
    with cpu_triton(90, store_kernel):
        fast_dispatch.enable()
        try:
            k16 = store_kernel[(1,)](x, 16)
            assert store_kernel[(1,)](x, 16) is k16  # a hit
            k17 = store_kernel[(1,)](x, 17)
            cache = store_kernel.device_caches[0][0]
            (key16,) = [k for k, v in cache.items() if v is k16]
            cache[key16] = k17
            assert store_kernel[(1,)](x, 16) is k17
            cache.clear()
            again = store_kernel[(1,)](x, 16)
            assert again is not k16 and again is not k17
        finally:
            fast_dispatch.disable()
            store_kernel.__dict__.pop("_launcher_guard", None)


@pytest.mark.parametrize("inside", ["a launch", "disable", "disable and enable", "disable and enable, every time"])
def test_code_an_argument_runs_on_a_first_call_may_launch_or_switch_the_guard(inside):
    """Making a kernel's guard reads its first call's arguments (data_ptr(), dtype: the caller's
    code). That code may launch another kernel (its own first call: another guard to make) or
    switch the guard: the call completes as without the guard (no lock is held meanwhile).
    In a process of its own: before the fix, it hung."""
    code = f"""
import sys
sys.path[:0] = {[str(os.path.dirname(__file__))]!r}
import triton.language as tl
from cpu_triton import FakeTensor, cpu_triton
from kernels import add_kernel, store_kernel
from launcher import fast_dispatch

class Lazy(FakeTensor):
    done = False

    def data_ptr(self):  # the first time it is asked (Triton asks again), unless every time
        if Lazy.done and not {inside!r}.endswith("every time"):
            return self.ptr
        Lazy.done = True
        if {inside!r} == "a launch":
            store_kernel[(1,)](FakeTensor(0x10000, tl.float32), 3)  # its own first call
        else:
            fast_dispatch.disable()
            if {inside!r}.startswith("disable and enable"):
                fast_dispatch.enable()
        return self.ptr

with cpu_triton(90, add_kernel, store_kernel) as d:
    fast_dispatch.enable()
    x = FakeTensor(0x20000, tl.float32)
    add_kernel[(1,)](x, x, Lazy(0x30000, tl.float32), 16, BLOCK=16)
    add_kernel[(1,)](x, x, x, 16, BLOCK=16)
    sys.setrecursionlimit(400)  # a redispatch that never ends fails fast
    add_kernel[(1,)](x, x, Lazy(0x30000, tl.float32), 16, BLOCK=16)
    print([launch.name for launch in d.launches])
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    names = eval(r.stdout.strip().splitlines()[-1])
    assert names.count("add_kernel") == 3 and names.count("store_kernel") == (inside == "a launch")


def test_a_grid_that_is_not_one_is_named_as_such():
    """A grid without len() (None, or a callable's None) fails on Triton's path too (a bare
    assert, a len() error); the guard says what a grid is instead."""
    import triton.language as tl

    from cpu_triton import cpu_triton
    from kernels import store_kernel

    x = FakeTensor(A0, tl.float32)
    with cpu_triton(90, store_kernel):
        fast_dispatch.enable()
        try:
            store_kernel[(1,)](x, 16)  # a hit from now on
            for grid in (None, lambda meta: None, 5):
                with pytest.raises(TypeError, match="the grid must be a tuple of 1 to 3 ints or a callable"):
                    store_kernel[grid](x, 16)
        finally:
            fast_dispatch.disable()
            store_kernel.__dict__.pop("_launcher_guard", None)


def test_launch_options_are_keyed_by_class_too():
    """num_warps=4.0 is not num_warps=4 to Triton (it keys options by str() and then fails on the
    float): the guard does not answer it with the kernel compiled for 4."""
    import triton.language as tl

    from cpu_triton import cpu_triton
    from kernels import store_kernel

    x = FakeTensor(A0, tl.float32)
    outcomes = []
    for on in (False, True):
        with cpu_triton(90, store_kernel):
            if on:
                fast_dispatch.enable()
            try:
                store_kernel[(1,)](x, 16, num_warps=4)
                try:
                    store_kernel[(1,)](x, 16, num_warps=4.0)
                    outcomes.append("launched")
                except TypeError:
                    outcomes.append("TypeError")
            finally:
                fast_dispatch.disable()
                store_kernel.__dict__.pop("_launcher_guard", None)
    assert outcomes[0] == outcomes[1], outcomes


def test_kernels_with_keyword_only_parameters_take_tritons_path():
    """Triton 3.9 takes keyword-only and *args parameters; the guard's generated code binds by
    position, so such a kernel is left unguarded (counted), whatever the release."""
    import triton

    from kernels import keyword_only

    kernel = triton.jit(keyword_only)
    guard = Guard(kernel, lambda *a, **k: "triton's path", device=lambda: 0, stream=lambda d: 0)
    try:
        before = fast_dispatch.fallback_counts().get("keyword-only, positional-only or variadic parameters", 0)
        assert guard.run(0, grid=(1,), warmup=False, BLOCK=16) == "triton's path"
        assert fast_dispatch.fallback_counts()["keyword-only, positional-only or variadic parameters"] == before + 1
    finally:
        guard.detach()


def test_guards_of_one_signature_share_code_but_each_reads_its_own_values():
    """Two kernels of one source: their guards share one code object and one globals dict, which
    holds only what is the same for every kernel (Triton's knobs, the counters, the key
    functions), and read their own kernel, caches and entries from closure cells (no globals of
    their own, so calls that alternate between them keep the interpreter's caches); called in
    turn, each records and launches what its own kernel's Triton cache holds."""
    jits = [triton.jit(guard_kernel.fn) for _ in range(2)]
    triton_ = CpuTriton(*jits)
    guards = [Guard(j, triton_.run, device=lambda: 0, stream=lambda d: 0x5EA) for j in jits]
    try:
        a, b = guards
        assert a.general.__code__ is b.general.__code__ and a.general.__globals__ is b.general.__globals__
        own = {"_launcher_JIT", "_launcher_ENTRIES", "_launcher_KEYER", "_launcher_STREAM", "_launcher_TENSOR", "_launcher_recall"}
        assert not own & a.general.__globals__.keys() and "_launcher_RT" in a.general.__globals__
        assert not set(a.general.__code__.co_names) & own
        for guard, jit in zip(guards, jits):
            cells = codegen.cells(guard.general)
            assert cells["_launcher_JIT"].cell_contents is jit and cells["_launcher_ENTRIES"].cell_contents is guard.entries
        x = FakeTensor(A0, tl.float32)
        args = (x, 16, 1, 1, 0.5, (x, 16), None)
        for _ in range(2):  # a miss, then a hit, in turn
            for guard, jit in zip(guards, jits):
                kernel = guard.keyer.call((1,), *args, BLOCK=64)
                assert kernel is triton_.kernels[kernel.key] and kernel in jit.device_caches[0][0].values()
        assert all(len(g.entries) == 1 for g in guards)
    finally:
        for j in jits:
            _forget_guard(j)


def test_a_miss_records_launchers_own_kernels_with_parts_made_once_per_shape():
    """An entry of a kernel of launcher's own launcher holds its shape's generated direct launch
    and its C flat launch (CudaLauncher.flat_launch), tuples included: made once per shape and
    metadata, so that a miss does not make them again. Descriptors leave the hit to the direct
    launch."""
    import cpu_corpus as C

    ck = C.BY_NAME["vector_add"].compile()
    a, b = CudaLauncher(ck.src, ck.metadata), CudaLauncher(ck.src, ck.metadata)
    md = a.packed_metadata
    parts = fast_dispatch._launch_parts(a, md)
    assert parts[0] is a._shape.generated("direct")
    assert parts[1] is a.flat_launch(md) is a._shape.flat()
    assert fast_dispatch._launch_parts(b, md) is parts
    assert a.flat_launch(md[:-1] + (md[-1] + 16,)) is None  # other metadata: the direct launch
    ck = C.BY_NAME["tuples"].compile()
    run = CudaLauncher(ck.src, ck.metadata)
    assert run.flat_launch(run.packed_metadata) is not None
    ck = C.BY_NAME["host_tma"].compile()
    run = CudaLauncher(ck.src, ck.metadata)
    assert run.flat_launch(run.packed_metadata) is None

def test_a_miss_is_keyed_once():
    """GuardKey.hit keys a call it cannot launch and hands the key to the general path (a miss
    does not key again); a call with launch options is keyed by the general path alone."""
    x = FakeTensor(A0, tl.float32)
    args = (x, 16, 1, 1, 0.5, (x, 16), None)
    triton_ = CpuTriton(guard_kernel)
    guard = Guard(guard_kernel, triton_.run, device=lambda: 0, stream=lambda d: 0x5EA, example=(args, {"BLOCK": 64}))
    try:
        cell = codegen.cells(guard.general)["_launcher_KEY"]
        key, calls = cell.cell_contents, []
        cell.cell_contents = lambda *a: calls.append(1) or key(*a)
        misses = fast_dispatch.stats()["misses"]
        want = triton_.triton_key(guard_kernel, args, {"BLOCK": 64})[0]
        assert guard.run(*args, grid=(1,), warmup=False, BLOCK=64).key == want  # a miss: Triton's path
        assert guard.run(*args, grid=(1,), warmup=False, BLOCK=64).key == want  # a hit
        assert fast_dispatch.stats()["misses"] == misses + 1 and calls == []
        guard.run(*args, grid=(1,), warmup=False, BLOCK=64, num_warps=4)  # options: the general path keys
        assert calls == [1]
    finally:
        _forget_guard(guard_kernel)


def test_a_function_constexpr_keys_apart_from_another_of_its_name():
    """Two @triton.jit functions of one name (a factory's) passed as a constexpr are two keys:
    each call hits the kernel Triton compiled for its own function."""
    from cpu_triton import cpu_triton
    import kernels as K

    was_on = fast_dispatch.enabled()
    with cpu_triton(90, K.combine_kernel):
        fast_dispatch.enable()
        try:
            x = FakeTensor(A0, tl.float32)
            add, mul = K.combiner("add"), K.combiner("mul")
            k_add, k_mul = K.combine_kernel[(1,)](x, x, add), K.combine_kernel[(1,)](x, x, mul)
            assert k_add is not k_mul and k_add.asm["ptx"] != k_mul.asm["ptx"]
            hits = fast_dispatch.stats()["hits"]
            assert K.combine_kernel[(1,)](x, x, mul) is k_mul and K.combine_kernel[(1,)](x, x, add) is k_add
            assert fast_dispatch.stats()["hits"] == hits + 2
        finally:
            fast_dispatch.disable()
            _forget_guard(K.combine_kernel)
            if was_on:
                fast_dispatch.enable()
