"""Who is in charge of a guarded kernel's call: what stock Triton does with code that replaced a
kernel's run (its class's or its own), a JIT function passed as an argument whose source
changed, a grid callable that writes into its arguments and another active driver, the guard
does too. Each scenario runs twice, stock (the guard off) and guarded, on Triton's JIT with the
CPU driver (tests/cpu_triton: launches are launcher dry runs), and both must see the same."""
from __future__ import annotations

import contextlib
import sys

import pytest

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402
from triton.runtime.driver import driver  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

from cpu_triton import CpuDriver, FakeTensor, cpu_triton  # noqa: E402
from launcher import fast_dispatch  # noqa: E402


@triton.jit
def double(v):
    return v * 2


_DOUBLE = double._src


@triton.jit
def scale_kernel(x, n, BLOCK: tl.constexpr = 64):
    offs = tl.arange(0, BLOCK)
    tl.store(x + offs, tl.load(x + offs, mask=offs < n) * 2, mask=offs < n)


@triton.jit
def apply_kernel(x, n, FN: tl.constexpr, BLOCK: tl.constexpr = 64):
    offs = tl.arange(0, BLOCK)
    tl.store(x + offs, FN(tl.load(x + offs, mask=offs < n)), mask=offs < n)


@triton.jit
def apply_any(x, n, fn, BLOCK: tl.constexpr = 64):  # a JIT function to a parameter not marked constexpr
    offs = tl.arange(0, BLOCK)
    tl.store(x + offs, fn(tl.load(x + offs, mask=offs < n)), mask=offs < n)


X = FakeTensor(0x7F0000001000, tl.float32)


def both(scenario, *kernels):
    """scenario(cpu driver) run stock, then with the guard on: (stock's answer, guarded's)."""
    out = []
    for guarded in (False, True):
        with cpu_triton(90, *kernels) as cpu:
            if guarded:
                fast_dispatch.enable()
            try:
                out.append(scenario(cpu))
            finally:
                fast_dispatch.disable()
    return out


@pytest.mark.parametrize("kernel", [apply_kernel, apply_any], ids=["constexpr", "not marked constexpr"])
def test_a_jit_function_argument_whose_source_changed_launches_the_new_code(kernel):
    def scenario(cpu):
        double._unsafe_update_src(_DOUBLE)
        try:
            kernel[(1,)](X, 16, double)
            kernel[(1,)](X, 16, double)  # a hit under the guard
            double._unsafe_update_src(_DOUBLE.replace("v * 2", "v * 3"))
            return ["3.000000e+00" in kernel[(1,)](X, 16, double).asm["ttir"] for _ in range(2)]
        finally:
            double._unsafe_update_src(_DOUBLE)

    assert both(scenario, kernel) == [[True, True]] * 2


def test_a_wrapper_put_on_the_class_after_the_guard_sees_every_call_and_disable_keeps_it():
    tritons = JITFunction.run

    def scenario(cpu):
        scale_kernel[(1,)](X, 16)  # the guard is in front of the kernel from here
        seen, original = [], JITFunction.run

        def traced(self, *args, **kwargs):
            seen.append(kwargs.get("warmup"))
            return original(self, *args, **kwargs)

        JITFunction.run = traced
        try:
            scale_kernel[(1,)](X, 16)
            scale_kernel.run(X, 16, grid=(1,), warmup=False)
            scale_kernel[(1,)](X, 16)
            fast_dispatch.disable()
            kept = JITFunction.run is traced
        finally:
            JITFunction.run = tritons
        return seen, kept, len(cpu.launches)

    stock, guarded = both(scenario, scale_kernel)
    assert stock == guarded == ([False] * 3, True, 4)


@contextlib.contextmanager
def counting_class_run():
    """A wrapper of the class's run now (as profilers put one there) for the block: yields the list
    it appends to on every call; the run it wrapped is put back after."""
    seen, original = [], JITFunction.run

    def traced(self, *args, **kwargs):
        seen.append(1)
        return original(self, *args, **kwargs)

    JITFunction.run = traced
    try:
        yield seen
    finally:
        JITFunction.run = original


def test_a_wrapper_on_the_class_before_the_guard_sees_every_call():
    with counting_class_run() as seen:
        counts = both(lambda cpu: [scale_kernel[(1,)](X, 16) and len(cpu.launches) for _ in range(3)], scale_kernel)
    assert counts == [[1, 2, 3]] * 2 and len(seen) == 6
    assert "JITFunction.run is other code's (it was replaced before the guard was switched on)" in \
        fast_dispatch.fallback_counts()


def test_kernel_grid_taken_before_a_run_of_the_kernels_own_calls_that_run():
    def scenario(cpu):
        scale_kernel[(1,)](X, 16)
        taken = scale_kernel[(2,)]
        inner, seen = scale_kernel.run, []

        def wrapper(*args, **kwargs):
            seen.append(kwargs["grid"])
            return inner(*args, **kwargs)

        scale_kernel.run = wrapper
        try:
            taken(X, 16)
            scale_kernel[(3,)](X, 16)
        finally:
            del scale_kernel.run
        scale_kernel[(4,)](X, 16)
        return seen, [launch.grid for launch in cpu.launches]

    stock, guarded = both(scenario, scale_kernel)
    assert stock == guarded == ([(2,), (3,)], [(1, 1, 1), (2, 1, 1), (3, 1, 1), (4, 1, 1)])


def test_a_wrapper_set_while_guarded_runs_once_per_call_after_disable():
    def scenario(cpu):
        scale_kernel[(1,)](X, 16)
        inner, seen = scale_kernel.run, []

        def wrapper(x, n, **kwargs):
            seen.append(1)
            return inner(x, n + 1, **kwargs)

        scale_kernel.run = wrapper
        try:
            fast_dispatch.disable()
            scale_kernel[(1,)](X, 16)
        finally:
            del scale_kernel.run
        return len(seen), int.from_bytes(cpu.launches[-1].params[1], "little"), len(cpu.launches)

    stock, guarded = both(scenario, scale_kernel)
    assert stock == guarded == (1, 17, 2)


@pytest.mark.parametrize("options", [{}, {"num_warps": 4}], ids=["hit", "general path"])
def test_what_a_grid_callable_writes_into_its_arguments_is_launched(options):
    def grid(meta):
        meta["n"] = 1000
        return (1,)

    def scenario(cpu):
        sent = []
        for _ in range(3):
            scale_kernel[grid](X, 16, **options)
            sent.append(int.from_bytes(cpu.launches[-1].params[1], "little"))
        scale_kernel[lambda meta: (1,)](X, 16, **options)  # one that writes nothing
        return sent + [int.from_bytes(cpu.launches[-1].params[1], "little")]

    assert both(scenario, scale_kernel) == [[1000, 1000, 1000, 16]] * 2


def test_another_active_driver_gives_the_device_and_stream():
    class Other(CpuDriver):
        def get_current_stream(self, device=None):
            return 0x77

        def get_current_device(self):
            return 1

    def scenario(cpu):
        streams, saved = [], triton.knobs.runtime.launch_enter_hook
        triton.knobs.runtime.launch_enter_hook = lambda metadata: streams.append(metadata.get()["stream"])
        try:
            scale_kernel[(1,)](X, 16)
            scale_kernel[(1,)](X, 16)
            other = Other(90)
            driver.set_active(other)
            scale_kernel[(1,)](X, 16)
            scale_kernel[(1,)](X, 16)
        finally:
            triton.knobs.runtime.launch_enter_hook = saved
        return streams, sorted(scale_kernel.device_caches), len(cpu.launches), len(other.launches)

    stock, guarded = both(scenario, scale_kernel)
    assert stock == guarded == ([0, 0, 0x77, 0x77], [0, 1], 2, 2)


def test_another_active_driver_without_hooks_is_asked_for_the_stream_on_every_call():
    asked = []

    class Other(CpuDriver):
        def get_current_stream(self, device=None):
            asked.append(device)
            return 0x77

    def scenario(cpu):
        scale_kernel[(1,)](X, 16)
        scale_kernel[(1,)](X, 16)
        driver.set_active(Other(90))
        asked.clear()
        for _ in range(3):
            scale_kernel[(1,)](X, 16)
        return len(asked) >= 3, len(cpu.launches)

    stock, guarded = both(scenario, scale_kernel)
    assert stock == guarded == (True, 5)


def test_the_guards_class_run_left_behind_with_the_guard_off_dispatches_as_tritons():
    """Other code that put back what it saw on the class while the guard was on leaves the guard's
    run there with the guard off; a kernel's own run that calls it does not loop."""
    tritons = JITFunction.run
    with cpu_triton(90, scale_kernel) as cpu:
        fast_dispatch.enable()
        left = JITFunction.run
        fast_dispatch.disable()
        JITFunction.run = left
        try:
            inner = scale_kernel.run  # the class's run, bound
            scale_kernel.run = lambda *args, **kwargs: inner(*args, **kwargs)
            scale_kernel[(1,)](X, 16)
            del scale_kernel.run
            scale_kernel[(2,)](X, 16)
        finally:
            JITFunction.run = tritons
        assert [launch.grid for launch in cpu.launches] == [(1, 1, 1), (2, 1, 1)]


def test_a_kernel_first_called_under_a_class_wrapper_leaves_every_call_to_it_and_hits_once_it_is_gone():
    tritons = JITFunction.run

    def scenario(cpu):
        with counting_class_run() as seen:
            for _ in range(3):
                scale_kernel[(1,)](X, 16)  # its first calls: under the wrapper
        hits = fast_dispatch.stats()["hits"]
        for _ in range(5):
            scale_kernel[(1,)](X, 16)
        return len(seen), len(cpu.launches), fast_dispatch.stats()["hits"] - hits

    try:
        (s_seen, s_launches, _), (g_seen, g_launches, g_hits) = both(scenario, scale_kernel)
    finally:
        JITFunction.run = tritons
    assert (s_seen, s_launches) == (g_seen, g_launches) == (3, 8) and g_hits >= 4


def test_another_active_driver_with_the_same_getters_makes_a_guard_that_hits():
    with cpu_triton(90, scale_kernel) as cpu:
        fast_dispatch.enable()
        try:
            for _ in range(3):
                scale_kernel[(1,)](X, 16)
            other = CpuDriver(90)  # as two of Triton's GPU drivers: the same getter functions
            other.get_current_device, other.get_current_stream = cpu.get_current_device, cpu.get_current_stream
            driver.set_active(other)
            hits = fast_dispatch.stats()["hits"]
            for _ in range(10):
                scale_kernel[(1,)](X, 16)
            assert fast_dispatch.stats()["hits"] - hits >= 8
        finally:
            fast_dispatch.disable()


class _Holder:
    @triton.constexpr_function
    def twice(self, v):
        return v * 2


_HOLDER = _Holder()


@triton.jit
def sized_by_fn(x, n, F: tl.constexpr, BLOCK: tl.constexpr = 64):
    offs = tl.arange(0, F(BLOCK))
    tl.store(x + offs, tl.load(x + offs, mask=offs < n) * 2, mask=offs < n)


def test_a_bound_constexpr_function_argument_is_keyed_by_its_cache_key():
    """A bound @triton.constexpr_function is a JITCallable without a `hash` of its own."""
    if not hasattr(triton, "constexpr_function"):
        pytest.skip("no triton.constexpr_function on this release")
    out = both(lambda cpu: [sized_by_fn[(1,)](X, 16, _HOLDER.twice) is not None and len(cpu.launches)
                            for _ in range(3)], sized_by_fn)
    assert out == [[1, 2, 3]] * 2


def test_a_functools_wraps_wrapper_is_not_tritons_run():
    import functools

    from launcher import triton_adapter as A

    run = JITFunction.run

    @functools.wraps(run)
    def wrapper(*args, **kwargs):
        return run(*args, **kwargs)

    assert A.is_tritons_run(run) and not A.is_tritons_run(wrapper)


def test_one_test_of_what_a_grid_wrote_for_the_hit_and_the_generated_code():
    """launcher._call.grid_wrote (the C hit's bound_changed, which the generated code calls too): a name is the
    same key where it is an equal str (a dict literal's keys are its code's constants), a value only where it is
    the same object; a key added, removed, replaced or reordered is a write."""
    from launcher import _call, fast_dispatch

    assert fast_dispatch._grid_wrote is _call.grid_wrote
    big = 10 ** 30
    name = "".join(["n", "ame"])  # equal to "name", another object
    assert name == "name" and name is not sys.intern("name")
    assert _call.grid_wrote({name: big, "b": 2}, ("name", "b"), (big, 2)) is False
    assert _call.grid_wrote({"name": 10 ** 30 + 0 * big, "b": 2}, ("name", "b"), (big, 2)) is True  # equal, not it
    assert _call.grid_wrote({"b": 2, "name": big}, ("name", "b"), (big, 2)) is True
    assert _call.grid_wrote({"name": big}, ("name", "b"), (big, 2)) is True
    assert _call.grid_wrote({"name": big, "b": 2, "c": 3}, ("name", "b"), (big, 2)) is True
    assert _call.grid_wrote({"other": big, "b": 2}, ("name", "b"), (big, 2)) is True
    with pytest.raises(TypeError, match="tuples of one length"):
        _call.grid_wrote({}, ("a",), ())
