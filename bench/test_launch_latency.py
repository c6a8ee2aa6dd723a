"""Launch latency on the GPU: host time per launch, every launch path in one process and run.

Method (../shared/device.md): a round is a batch of BATCH launches of a tiny kernel, with a
synchronisation before each round (not timed); pytest-benchmark takes ROUNDS rounds and
reports per-round statistics; the report divides by BATCH. The C floor is a loop over
cuLaunchKernelEx inside our native library (one call launching BATCH times).

Paths, per kernel:
  floor            C loop, arguments packed once
  ours.bound       launcher.CudaLauncher.bind(): packed once, one cffi call per launch
  ours.launcher    our launcher object called as Triton calls it (default hooks / hooks None)
  ours.compiled    CompiledKernel[grid](*args) with launcher installed
  ours.jit         kernel[grid](*args) with launcher installed
  stock.*          the same three with Triton's own launcher
  inductor         torch's StaticallyLaunchedCudaKernel.run
  cuda.core        cuda.core.launch with numpy-typed scalars
  cuda.bindings    cuda.bindings.driver.cuLaunchKernel with (values, types)
"""
import ctypes
import os
import sys
import tempfile

import pytest

try:
    import torch
except ImportError:
    torch = None
if torch is None or not torch.cuda.is_available():
    pytest.skip("the launch benchmarks need an NVIDIA GPU and torch (none here)", allow_module_level=True)

import numpy as np  # noqa: E402
import triton  # noqa: E402
from triton import knobs  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import bench_kernels as K  # noqa: E402
import launcher  # noqa: E402

BATCH = int(os.environ.get("LAUNCHER_BENCH_BATCH", "500"))
ROUNDS = int(os.environ.get("LAUNCHER_BENCH_ROUNDS", "60"))
DEV = "cuda"


class Case:
    """One kernel: how the JIT is called, and its flat runtime arguments for the raw peers."""

    def __init__(self, name, jit, grid, args, kwargs, flat, warps=4):
        self.name, self.jit, self.grid, self.args, self.kwargs = name, jit, grid, args, kwargs
        self.flat = flat  # [(value_fn, type)] in kernel parameter order, scratch excluded
        self.stock = self.ours = None


def _ptr(t):
    return lambda: t.data_ptr()


def _val(v):
    return lambda: v


def make_cases():
    f = lambda n=1024: torch.zeros(n, device=DEV)  # noqa: E731
    x, y, out = f(), f(), f()
    cases = [Case("1 arg", K.one_arg, (1,), (out,), {}, [(_ptr(out), "*fp32")])]
    cases.append(Case("vector add (5)", K.add, (1,), (x, y, out, 1000), {"BLOCK": 1024},
                      [(_ptr(x), "*fp32"), (_ptr(y), "*fp32"), (_ptr(out), "*fp32"), (_val(1000), "i32")]))
    ps = [f(1) for _ in range(4)]
    ints, floats, longs = [3, 5, 7, 9], [0.5, 1.5, 2.5, 3.5], [2**40 + 1, 2**40 + 3, 2**40 + 5, 2**40 + 7]
    cases.append(Case("16 mixed", K.mixed16, (1,), (*ps, *ints, *floats, *longs), {},
                      [(_ptr(p), "*fp32") for p in ps] + [(_val(v), "i32") for v in ints]
                      + [(_val(v), "fp32") for v in floats] + [(_val(v), "i64") for v in longs]))
    vals = list(range(2, 65))
    cases.append(Case("64 args", K.args64, (1,), (out, *vals), {},
                      [(_ptr(out), "*fp32")] + [(_val(v), "i32") for v in vals]))
    a, b = f(1), f(1)
    cases.append(Case("nested tuple", K.nested_tuple, (1,), (out, (a, 3), ((b, 4), (2, 0.5)), 1.5), {},
                      [(_ptr(out), "*fp32"), (_ptr(a), "*fp32"), (_val(3), "i32"), (_ptr(b), "*fp32"),
                       (_val(4), "i32"), (_val(2), "i32"), (_val(0.5), "fp32"), (_val(1.5), "fp32")]))
    from triton.tools.tensor_descriptor import TensorDescriptor

    m = torch.zeros(64, 64, device=DEV, dtype=torch.float16)
    m2 = torch.zeros_like(m)
    cases.append(Case("host tensordesc", K.tensordesc_copy, (1,),
                      (TensorDescriptor.from_tensor(m, [64, 64]), TensorDescriptor.from_tensor(m2, [64, 64])),
                      {"BM": 64, "BN": 64}, None))
    return cases


def _clear(jit):
    jit.device_caches.clear()


def _use(jit, ck):
    """Make the JIT's cache hand out `ck` (so stock and ours can alternate in one process)."""
    for caches in jit.device_caches.values():
        for d in caches[:2]:
            for k in list(d):
                d[k] = ck


@pytest.fixture(scope="module")
def cases():
    cases = make_cases()
    for c in cases:
        launcher.uninstall()
        _clear(c.jit)
        c.stock = c.jit[c.grid](*c.args, **c.kwargs)
        launcher.install()
        _clear(c.jit)
        c.ours = c.jit[c.grid](*c.args, **c.kwargs)
        assert isinstance(c.ours._run, launcher.CudaLauncher)
        assert not isinstance(c.stock._run, launcher.CudaLauncher)
    torch.cuda.synchronize()
    return {c.name: c for c in cases}


CASE_NAMES = ["1 arg", "vector add (5)", "16 mixed", "64 args", "nested tuple", "host tensordesc"]


def measure(benchmark, name, path, fn, per_call=BATCH):
    """Time rounds of `fn` (which launches `per_call` times), synchronising between rounds."""
    benchmark.group = name
    benchmark.extra_info.update(kernel=name, path=path, launches_per_round=per_call)
    torch.cuda.synchronize()
    benchmark.pedantic(fn, setup=torch.cuda.synchronize, rounds=ROUNDS, iterations=1, warmup_rounds=3)
    torch.cuda.synchronize()


def batch(call):
    def run():
        for _ in range(BATCH):
            call()
    return run


def stream():
    return torch.cuda.current_stream().cuda_stream


def runtime_args(c):
    """The arguments of CompiledKernel[grid](...): constexprs included, as the JIT binds them."""
    return c.args + tuple(c.kwargs.values())


@pytest.mark.parametrize("name", CASE_NAMES)
def test_floor(benchmark, cases, name):
    c = cases[name]
    bound = c.ours._run.bind(*c.grid, *(1,) * (3 - len(c.grid)), stream(), c.ours.function,
                             c.ours.packed_metadata, *runtime_args(c))
    measure(benchmark, name, "floor", lambda: bound.repeat(BATCH))


@pytest.mark.parametrize("name", CASE_NAMES)
def test_ours_bound(benchmark, cases, name):
    c = cases[name]
    bound = c.ours._run.bind(*c.grid, *(1,) * (3 - len(c.grid)), stream(), c.ours.function,
                             c.ours.packed_metadata, *runtime_args(c))
    measure(benchmark, name, "ours.bound", batch(bound))


def _direct(c, ck, hooks):
    run, fn, md, s, args = ck._run, ck.function, ck.packed_metadata, stream(), runtime_args(c)
    gx, gy, gz = (*c.grid, 1, 1)[:3]
    if hooks:
        enter, exit_ = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
        lm = ck.launch_metadata(c.grid, s, *args)
    else:
        enter = exit_ = lm = None
    return lambda: run(gx, gy, gz, s, fn, md, lm, enter, exit_, *args)


@pytest.mark.parametrize("who", ["ours", "stock"])
@pytest.mark.parametrize("hooks", ["default-hooks", "hooks-None"])
@pytest.mark.parametrize("name", CASE_NAMES)
def test_launcher_object(benchmark, cases, name, who, hooks):
    c = cases[name]
    call = _direct(c, getattr(c, who), hooks == "default-hooks")
    measure(benchmark, name, f"{who}.launcher ({hooks})", batch(call))


class _NoHooks:
    def __enter__(self):
        self.saved = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
        knobs.runtime.launch_enter_hook = knobs.runtime.launch_exit_hook = None

    def __exit__(self, *exc):
        knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook = self.saved


@pytest.mark.parametrize("who", ["ours", "stock"])
@pytest.mark.parametrize("hooks", ["default-hooks", "hooks-None"])
@pytest.mark.parametrize("name", CASE_NAMES)
def test_compiled_kernel(benchmark, cases, name, who, hooks):
    c = cases[name]
    ck, args, grid = getattr(c, who), runtime_args(c), (*c.grid, 1, 1)[:3]
    call = lambda: ck[grid](*args)  # noqa: E731
    if hooks == "hooks-None":
        with _NoHooks():
            measure(benchmark, name, f"{who}.compiled ({hooks})", batch(call))
    else:
        measure(benchmark, name, f"{who}.compiled ({hooks})", batch(call))


@pytest.mark.parametrize("who", ["ours", "stock"])
@pytest.mark.parametrize("name", CASE_NAMES)
def test_jit(benchmark, cases, name, who):
    c = cases[name]
    _use(c.jit, getattr(c, who))
    call = lambda: c.jit[c.grid](*c.args, **c.kwargs)  # noqa: E731
    measure(benchmark, name, f"{who}.jit", batch(call))


def test_jit_alternating(benchmark, cases):
    """kernel[grid](...) ours vs stock, alternating batches, to compare within the run's spread."""
    import statistics
    import time

    c = cases["vector add (5)"]
    call = lambda: c.jit[c.grid](*c.args, **c.kwargs)  # noqa: E731
    timings = {"ours": [], "stock": []}
    for _ in range(20):
        for who in ("ours", "stock"):
            _use(c.jit, getattr(c, who))
            torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            for _ in range(BATCH):
                call()
            timings[who].append((time.perf_counter_ns() - t0) / BATCH / 1000)
    torch.cuda.synchronize()
    _use(c.jit, c.ours)
    benchmark.extra_info.update({f"{w}_median_us": statistics.median(v) for w, v in timings.items()})
    benchmark.extra_info.update({f"{w}_stdev_us": statistics.stdev(v) for w, v in timings.items()})
    measure(benchmark, "vector add (5)", "ours.jit (alternating run)", batch(call))


# ---- peers ----
def _first_call(call, who):
    """Run a peer once; if it cannot launch this kernel, skip with its error as the reason."""
    try:
        call()
        torch.cuda.synchronize()
    except Exception as e:
        pytest.skip(f"{who} could not launch it: {type(e).__name__}: {str(e)[:200]}")

def _inductor(c):
    try:
        from torch._inductor.runtime.static_triton_launcher import StaticallyLaunchedCudaKernel
    except ImportError:
        from torch._inductor.runtime.static_cuda_launcher import StaticallyLaunchedCudaKernel
    ck = c.stock
    path = os.path.join(tempfile.mkdtemp(), ck.name + ".cubin")
    with open(path, "wb") as fh:
        fh.write(ck.asm["cubin"])
    ck._cubin_path = path
    sk = StaticallyLaunchedCudaKernel(ck)
    sk.load_kernel(torch.cuda.current_device())
    return sk


@pytest.mark.parametrize("name", CASE_NAMES)
def test_inductor_static_launcher(benchmark, cases, name):
    c = cases[name]
    if c.flat is None:
        pytest.skip("Inductor's static launcher: no host tensor descriptors in this torch")
    if name == "nested tuple":
        pytest.skip("Inductor's static launcher takes flat arguments only (no tuples)")
    try:
        sk = _inductor(c)
    except Exception as e:  # torch version without it, or a kernel it refuses
        pytest.skip(f"Inductor's static launcher unavailable: {type(e).__name__}: {e}")
    gx, gy, gz = (*c.grid, 1, 1)[:3]
    s = stream()
    tensors = [a for a in c.args]
    call = lambda: sk.run(gx, gy, gz, s, *tensors)  # noqa: E731
    _first_call(call, "Inductor's static launcher")
    measure(benchmark, name, "inductor", batch(call))


_NP = {"i32": np.int32, "i64": np.int64, "fp32": np.float32}
_CT = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "fp32": ctypes.c_float}


@pytest.mark.parametrize("name", CASE_NAMES)
def test_cuda_core(benchmark, cases, name):
    c = cases[name]
    if c.flat is None:
        pytest.skip("cuda.core: no CUtensorMap-by-value kernel argument for a Triton tensordesc")
    from cuda.core import LaunchConfig, ObjectCode, Stream, launch

    ck = c.ours
    kernel = ObjectCode.from_cubin(ck.asm["cubin"]).get_kernel(ck.name)
    cfg = LaunchConfig(grid=(*c.grid, 1, 1)[:3], block=(32 * ck.metadata.num_warps, 1, 1),
                       shmem_size=ck.metadata.shared)
    s = Stream.from_handle(stream())
    flat = c.flat

    def call():
        args = [fn() if ty.startswith("*") else _NP[ty](fn()) for fn, ty in flat]
        launch(s, cfg, kernel, *args, 0, 0)

    _first_call(call, "cuda.core")
    measure(benchmark, name, "cuda.core", batch(call))


@pytest.mark.parametrize("name", CASE_NAMES)
def test_cuda_bindings(benchmark, cases, name):
    c = cases[name]
    if c.flat is None:
        pytest.skip("cuda.bindings (values, types) form: no 128-byte CUtensorMap type")
    from cuda.bindings import driver as cu

    ck = c.ours
    f = cu.CUfunction(ck.function)
    gx, gy, gz = (*c.grid, 1, 1)[:3]
    block, shared, s = 32 * ck.metadata.num_warps, ck.metadata.shared, cu.CUstream(stream())
    flat = c.flat
    types = tuple(ctypes.c_void_p if ty.startswith("*") else _CT[ty] for _, ty in flat) + (ctypes.c_void_p,) * 2

    def call():
        values = tuple(fn() for fn, _ in flat) + (0, 0)
        err, = cu.cuLaunchKernel(f, gx, gy, gz, block, 1, 1, shared, s, (values, types), 0)
        return err

    def first():
        err = call()
        if int(err):
            raise RuntimeError(f"cuLaunchKernel returned {err}")

    _first_call(first, "cuda.bindings")
    measure(benchmark, name, "cuda.bindings", batch(call))


# ---- cold costs ----
def test_cold_new_signature_ours(benchmark, cases):
    from launcher import cuda_launcher

    ck = cases["16 mixed"].ours

    def build():
        cuda_launcher._classes.clear()
        return launcher.CudaLauncher(ck.src, ck.metadata)

    benchmark.group = "cold: launcher for a new signature"
    benchmark.extra_info.update(kernel=benchmark.group, path="ours (16 mixed)", launches_per_round=1)
    benchmark.pedantic(build, rounds=20, iterations=1)


def test_cold_new_signature_stock(benchmark, cases):
    from triton.backends.nvidia import driver as nv

    ck = cases["16 mixed"].stock
    stock_cls = launcher.CudaLauncher.stock_launcher_cls or nv.CudaLauncher

    def build():
        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()  # empty cache: gcc runs
        return stock_cls(ck.src, ck.metadata)

    saved = os.environ.get("TRITON_CACHE_DIR")
    benchmark.group = "cold: launcher for a new signature"
    benchmark.extra_info.update(kernel=benchmark.group, path="stock (16 mixed; gcc, empty cache)", launches_per_round=1)
    try:
        benchmark.pedantic(build, rounds=5, iterations=1)
    finally:
        if saved is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = saved


def test_cold_module_load(benchmark, cases):
    from cuda.bindings import driver as cu

    cubin = cases["vector add (5)"].ours.kernel

    def load_unload():
        err, mod = cu.cuModuleLoadData(cubin)
        cu.cuModuleUnload(mod)

    benchmark.group = "cold: module load"
    benchmark.extra_info.update(kernel=benchmark.group, path="cuModuleLoadData + cuModuleUnload", launches_per_round=1)
    benchmark.pedantic(load_unload, rounds=50, iterations=1)


def test_cold_module_cache_hit(benchmark, cases):
    ck = cases["vector add (5)"].ours
    cache = launcher.module_cache()
    dev = torch.cuda.current_device()
    held = []

    def hit():
        held.append(cache.load_binary(ck.name, ck.kernel, ck.metadata.shared, dev)[0])

    benchmark.group = "cold: module load"
    benchmark.extra_info.update(kernel=benchmark.group, path="module cache hit", launches_per_round=1)
    try:
        benchmark.pedantic(hit, rounds=200, iterations=1)
    finally:
        for module in held:
            cache.unload_module(module)
