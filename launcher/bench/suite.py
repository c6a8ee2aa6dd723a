"""The launch-latency suite: pytest-benchmark tests, run by `python -m launcher bench` (GPU).

Every test runs interleaved rounds (launcher.bench.rounds): a round runs each path once, a batch
of BATCH launches after a synchronisation, and the order is reversed every other round. The
figures of every path, round by round, go into the benchmark's `extra_info` (the layout is in
launcher.bench.results); pytest-benchmark's own stats time one whole round.

Tests:
  test_hot[kernel]           every launch path of one kernel, against the C floor of each round
  test_fast_dispatch_miss    a fast-dispatch miss against Triton's path
  test_decode_step           a decode-like step of 8 launches: stock eager, launcher installed,
                             the guard, a bundle and a CUDA graph, against stock eager's step
  test_cold_new_signature    a launcher for a signature never seen: construction + first launch
  test_cold_same_shape       a launcher for a kernel whose signature was seen under another name
  test_cold_module_load      a module-cache hit against cuModuleLoadData
  test_startup               time to first launches of 20 kernels, bundle against Triton, in
                             fresh processes

Paths that need features launcher does not have yet (`launcher.prepare`, `install(fast_dispatch=)`,
`launcher.export`/`load_bundle`) are skipped with the reason, and recorded as skipped.

Environment: LAUNCHER_BENCH_BATCH (500), LAUNCHER_BENCH_ROUNDS (40), LAUNCHER_BENCH_WARMUP (3),
LAUNCHER_BENCH_COLD_ROUNDS (20), LAUNCHER_BENCH_STARTUP_PROCS (5), LAUNCHER_BENCH_DECODE_STEPS (100).
"""
from __future__ import annotations

import ctypes
import inspect
import json
import os
import re
import subprocess
import sys

import pytest

try:
    import torch
except ImportError:
    torch = None
if torch is None or not torch.cuda.is_available():
    pytest.skip("the launch benchmarks need an NVIDIA GPU and torch (none here)", allow_module_level=True)

import triton  # noqa: E402
from triton import knobs  # noqa: E402

import launcher  # noqa: E402
from launcher.bench import cpu  # noqa: E402
from launcher.bench import decode as D  # noqa: E402
from launcher.bench import env as bench_env  # noqa: E402
from launcher.bench import kernels as K  # noqa: E402
from launcher.bench import names as N  # noqa: E402
from launcher.bench import sites  # noqa: E402
from launcher.bench.cases import Case, plain_cases  # noqa: E402
from launcher.bench.features import (FastDispatch, Unavailable, bundle_kernel,  # noqa: E402
                                     clear_launcher_caches, fast_dispatch_available, fast_summary)
from launcher.bench.results import LAYOUT  # noqa: E402
from launcher.bench.rounds import Path, Rounds, round_order  # noqa: E402
from launcher.triton_adapter import triton_version  # noqa: E402


def _env_int(name, default):
    value = os.environ.get(name, "")
    return int(value) if value.strip() else default


BATCH = _env_int("LAUNCHER_BENCH_BATCH", 500)
ROUNDS = _env_int("LAUNCHER_BENCH_ROUNDS", 40)
WARMUP = _env_int("LAUNCHER_BENCH_WARMUP", 3)
COLD_ROUNDS = _env_int("LAUNCHER_BENCH_COLD_ROUNDS", 20)
STARTUP_PROCS = _env_int("LAUNCHER_BENCH_STARTUP_PROCS", 5)
DECODE_STEPS = _env_int("LAUNCHER_BENCH_DECODE_STEPS", 100)  # steps of 8 launches per batch
GCC_ROUNDS = 10  # stock Triton 3.6 runs gcc for a new signature (~0.2 s each)
TWINS = 3  # kernels of the same shape under other names, per round of the same-shape test
MISS_ROUNDS, MISS_BATCH = 20, 25  # each miss needs a kernel the guard has not seen: 25 per batch
MODULE_OPS = 20
STOCK_COMPILES_LAUNCHERS = triton_version() < (3, 7)  # 3.6 generates C per signature; 3.7+ is variadic
DEV = "cuda"
LOOP = range(BATCH)
ORDER = "alternating: the paths in the listed order on even rounds, reversed on odd rounds"


def sync():
    torch.cuda.synchronize()


def stream():
    return torch.cuda.current_stream().cuda_stream


@pytest.fixture(scope="session")
def env():
    return bench_env.collect()


def record(benchmark, env, kind, group, times, *, unit, ops, warmup, skipped=None, invalid=None,
           notes=None, ratios=None, cpu_note="", **extra):
    """Store a test's figures in its benchmark's extra_info (the layout of launcher.bench.results).
    cpu_note: the CPUs its rounds ran on (the Rounds of timed_rounds: r.cpu_note)."""
    rounds = max((len(v) for v in times.values()), default=0)  # 1 under --benchmark-disable
    notes = {**(notes or {}), **({"CPU": cpu_note} if cpu_note else {})}
    benchmark.extra_info.update(
        launcher_bench=LAYOUT, kind=kind, group=group, unit=unit, ops_per_batch=ops, rounds=rounds,
        warmup_rounds=warmup, order=ORDER, paths={k: list(v) for k, v in times.items()},
        skipped=dict(skipped or {}), invalid=dict(invalid or {}), notes=notes,
        ratios=[list(r) for r in ratios or []], env=env, **extra)


def timed_rounds(benchmark, paths, rounds, warmup, rerun=True):
    """Run `rounds` recorded rounds under pytest-benchmark (after `warmup` unrecorded ones), each
    on the least busy CPU (launcher.bench.cpu.Settler, where the bench command pinned the suite).
    rerun=False for paths whose batches use up a fixed supply (new kernels, new guards): no
    untimed batch after a move (launcher.bench.rounds)."""
    settler = cpu.Settler(cpu.recorded())
    r = Rounds(paths, sync=sync, settle=settler, rerun_after_move=rerun)
    r.warmup(warmup)
    benchmark.pedantic(r.round, rounds=rounds, iterations=1, warmup_rounds=0)
    sync()
    r.cpu_note = settler.note()  # for record(): where these rounds ran
    return r


# ---- the hot kernels ----
class FreshDescriptors:
    """Host TensorDescriptor pairs (in, out) over 64x64 fp16 tiles whose base addresses were never
    used before in this process: tile k starts 16 bytes after tile k-1, so every launch has new
    tensor maps to encode (ours caches them by address; stock encodes every time)."""

    SLOTS = 1 << 20  # 16 MB per buffer; a run takes about a quarter of a million

    def __init__(self):
        from triton.tools.tensor_descriptor import TensorDescriptor

        self.TD = TensorDescriptor
        self.src = torch.zeros(self.SLOTS * 8 + 4096, device=DEV, dtype=torch.float16)
        self.dst = torch.zeros_like(self.src)
        self.next = 0

    def _desc(self, buf, slot):
        return self.TD(buf[slot * 8: slot * 8 + 4096].view(64, 64), [64, 64], [64, 1], [64, 64])

    def take(self, n) -> list:
        out = []
        for _ in range(n):
            slot = self.next % self.SLOTS
            self.next += 1
            out.append((self._desc(self.src, slot), self._desc(self.dst, slot)))
        return out


def make_cases() -> list:
    cases = plain_cases(lambda n: torch.zeros(n, device=DEV))
    from triton.tools.tensor_descriptor import TensorDescriptor

    m = torch.zeros(64, 64, device=DEV, dtype=torch.float16)
    m2 = torch.zeros_like(m)
    cases.append(Case(N.TENSORDESC, K.tensordesc_copy, (1,),
                      (TensorDescriptor.from_tensor(m, [64, 64]), TensorDescriptor.from_tensor(m2, [64, 64])),
                      {"BM": 64, "BN": 64}))
    fresh = FreshDescriptors()
    cases.append(Case(N.TENSORDESC_FRESH, K.tensordesc_copy, (1,), fresh.take(1)[0], {"BM": 64, "BN": 64},
                      fresh=fresh.take))
    assert [c.name for c in cases] == N.KERNELS
    return cases


@pytest.fixture(scope="module")
def cases():
    """Every kernel compiled twice, each in a JITFunction of its own: by stock Triton (launcher not
    installed) and with launcher installed. Nothing is swapped in Triton's caches between paths."""
    cs = make_cases()
    launcher.uninstall()
    for c in cs:
        c.jit["stock"] = triton.jit(c.fn)
        c.ck["stock"] = c.jit["stock"][c.grid](*c.args, **c.kwargs)
    launcher.install()
    for c in cs:
        c.jit["ours"] = triton.jit(c.fn)
        c.ck["ours"] = c.jit["ours"][c.grid](*c.args, **c.kwargs)
        assert isinstance(c.ck["ours"]._run, launcher.CudaLauncher), f"{c.name}: ours is not launcher's"
        assert not isinstance(c.ck["stock"]._run, launcher.CudaLauncher), f"{c.name}: stock is launcher's"
    sync()
    return {c.name: c for c in cs}


def batch_path(name, c, head, ns, transform=tuple, kwargs=None, before=None, after=None) -> Path:
    """BATCH launches written as a user writes the call (launcher.bench.sites): `head(*args,
    **kwargs)` with the arguments as names and the keywords spelt out, where head is an
    expression over `ns` ("k[grid]": kernel[grid] taken in every call). The arguments are the
    case's, or fresh ones for every launch (made before the batch, untimed) when the case has
    them. `transform` turns the user's arguments into what the call takes."""
    kwargs = kwargs or {}
    if c.fresh is None:
        return Path(name, sites.batch(head, ns, transform(c.args), kwargs, BATCH), BATCH, before, after)
    todo = []

    def prepare():
        todo[:] = [transform(a) for a in c.fresh(BATCH)]
        if before is not None:
            before()

    return Path(name, sites.each(head, ns, todo, kwargs, len(transform(c.args))), BATCH, prepare, after)


def _bound(c):
    ck = c.ck["ours"]
    return ck._run.bind(*c.grid3, stream(), ck.function, ck.packed_metadata, *c.runtime(c.args))


def p_floor(c, ctx):
    bound = _bound(c)
    return Path(N.FLOOR, lambda: bound.repeat(BATCH), BATCH)


def p_bind(c, ctx):
    if c.fresh is not None:
        raise Unavailable("bind() packs its arguments once: no fresh descriptors per launch")
    return batch_path(N.BIND, c, "bound", {"bound": _bound(c)}, transform=lambda a: ())


def _launcher_call(c, who, hooks) -> dict:
    """The names of a launcher object's call, run(gx, gy, gz, s, fn, md, lm, enter, exit_, *args),
    as CompiledKernel.run calls it (LAUNCHER_HEAD)."""
    ck = c.ck[who]
    s = stream()
    gx, gy, gz = c.grid3
    if hooks:
        enter, exit_ = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
        lm = ck.launch_metadata(c.grid, s, *c.runtime(c.args))
    else:
        enter = exit_ = lm = None
    return dict(run=ck._run, gx=gx, gy=gy, gz=gz, s=s, fn=ck.function, md=ck.packed_metadata, lm=lm, enter=enter,
                exit_=exit_)


LAUNCHER_HEAD = "run(gx, gy, gz, s, fn, md, lm, enter, exit_,"


def p_launcher(who, hooks):
    name = {("ours", False): N.OURS_LAUNCHER_NONE, ("stock", False): N.STOCK_LAUNCHER_NONE,
            ("ours", True): N.OURS_LAUNCHER, ("stock", True): N.STOCK_LAUNCHER}[who, hooks]
    return name, lambda c, ctx: batch_path(name, c, LAUNCHER_HEAD, _launcher_call(c, who, hooks), transform=c.runtime)


class _NoHooks:
    """Triton's launch hooks set to None for one batch (before/after of a path)."""

    def __init__(self):
        self.saved = None

    def on(self):
        self.saved = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
        knobs.runtime.launch_enter_hook = knobs.runtime.launch_exit_hook = None

    def off(self):
        knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook = self.saved


def p_compiled(who, hooks):
    name = {("ours", False): N.OURS_COMPILED_NONE, ("stock", False): N.STOCK_COMPILED_NONE,
            ("ours", True): N.OURS_COMPILED, ("stock", True): N.STOCK_COMPILED}[who, hooks]

    def build(c, ctx):
        ns = {"ck": c.ck[who], "grid": c.grid3}  # CompiledKernel[grid](...) as users write it
        if hooks:
            return batch_path(name, c, "ck[grid]", ns, transform=c.runtime)
        nh = _NoHooks()
        return batch_path(name, c, "ck[grid]", ns, transform=c.runtime, before=nh.on, after=nh.off)

    return name, build


def p_jit(who):
    name = N.OURS_JIT if who == "ours" else N.STOCK_JIT

    def build(c, ctx):
        return batch_path(name, c, "kernel[grid]", {"kernel": c.jit[who], "grid": c.grid}, kwargs=c.kwargs)

    return name, build


# ---- paths of features launcher does not have yet: skipped with the reason until it does ----
def _fresh_like(value):
    """The same arguments with every torch tensor replaced by a new one (other memory)."""
    if isinstance(value, torch.Tensor):
        return torch.zeros_like(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_fresh_like(v) for v in value)
    return value


def _has_tensor(value):
    if isinstance(value, torch.Tensor):
        return True
    return isinstance(value, (tuple, list)) and any(_has_tensor(v) for v in value)


def _check_vector_add(c, call):
    """call(x, y, out, n) writes x + y into out: checked on random data before measuring."""
    if c.name != N.VECTOR_ADD:
        return
    x, y = torch.rand(1024, device=DEV), torch.rand(1024, device=DEV)
    out = torch.full_like(x, -1.0)
    call(x, y, out, 1000)
    sync()
    if not torch.equal(out[:1000], x[:1000] + y[:1000]):
        raise AssertionError(f"{c.name}: wrong result through this path")


def p_prepared(c, ctx):
    if not hasattr(launcher, "prepare"):
        raise Unavailable("launcher.prepare does not exist yet")
    if c.fresh is not None:
        raise Unavailable("p() launches the arguments packed at prepare time: no fresh descriptors per launch")
    p = ctx.prepared(c)
    return batch_path(N.PREPARED, c, "p", {"p": p}, transform=lambda a: ())


def p_prepared_new(c, ctx):
    if not hasattr(launcher, "prepare"):
        raise Unavailable("launcher.prepare does not exist yet")
    p = ctx.prepared(c)
    with_kwargs = ctx.prepared_form(c, p)
    return _new_args_path(N.PREPARED_NEW, c, p, c.kwargs if with_kwargs else {})


def p_prepared_keywords(c, ctx):
    """p(*new_args, **constexprs): the constexprs passed again by keyword, as users write a call."""
    if not hasattr(launcher, "prepare"):
        raise Unavailable("launcher.prepare does not exist yet")
    if not c.kwargs:
        raise Unavailable("the kernel has no constexpr passed by keyword")
    return _new_args_path(N.PREPARED_KW, c, ctx.prepared(c), c.kwargs)


def _new_args_path(name, c, p, kw):
    """`name`: the prepared launch p called as p(*new_args, **kw), with other tensors on every call
    (or the case's fresh arguments)."""
    _check_vector_add(c, lambda *a: p(*a, **kw))
    if c.fresh is not None:
        return batch_path(name, c, "p", {"p": p}, kwargs=kw)
    if not _has_tensor(c.args):
        raise Unavailable("no tensor argument to replace")
    pool = [_fresh_like(c.args) for _ in range(8)]
    todo = [pool[i % len(pool)] for i in LOOP]
    return Path(name, sites.each("p", {"p": p}, todo, kw, len(c.args)), BATCH)


def p_fast(c, ctx):
    if not fast_dispatch_available(launcher):
        raise Unavailable("launcher.install(fast_dispatch=...) does not exist yet")
    fd = FastDispatch(launcher)
    jit, grid, kw = triton.jit(c.fn), c.grid, c.kwargs
    ours = c.jit["ours"]
    args = c.args if c.fresh is None else c.fresh(1)[0]
    how = fd.establish(lambda: [jit[grid](*args, **kw) for _ in range(3)],
                       lambda: [ours[grid](*args, **kw) for _ in range(3)])
    per_batch = []
    before, after = _guard_switch(fd, per_batch)
    ctx.fast_batches = per_batch
    ctx.fast_how = how
    return batch_path(N.FAST, c, "kernel[grid]", {"kernel": jit, "grid": grid}, kwargs=kw, before=before,
                      after=after)


def _guard_switch(fd, batches):
    """(before, after) of a batch through the guard: switched on for the batch and off after it,
    with the batch's hits, misses and fallbacks appended to `batches`."""
    state = {}

    def before():
        fd.set(True)
        state["s"] = fd.snapshot()

    def after():
        s = fd.snapshot()
        fd.set(False)
        batches.append(fd.delta(state["s"], s))

    return before, after


def p_bundle(c, ctx):
    if not (hasattr(launcher, "export") and hasattr(launcher, "load_bundle")):
        raise Unavailable("launcher.export / launcher.load_bundle do not exist yet")
    path = os.path.join(ctx.tmp, re.sub(r"\W+", "_", c.name) + ".bundle")
    launcher.export(path, c.ck["ours"])
    k = bundle_kernel(launcher.load_bundle(path), c.fn.__name__)
    grid, kw = c.grid, c.kwargs
    _check_vector_add(c, lambda *a: k[grid](*a, **kw))
    return batch_path(N.BUNDLE, c, "k[grid]", {"k": k, "grid": grid}, kwargs=kw)


# ---- peers ----
def p_inductor(c, ctx):
    if c.flat is None:
        raise Unavailable("Inductor's static launcher: no host tensor descriptors in this torch")
    if c.name == N.NESTED:
        raise Unavailable("Inductor's static launcher takes flat arguments only (no tuples)")
    try:
        from torch._inductor.runtime.static_triton_launcher import StaticallyLaunchedCudaKernel
    except ImportError:
        from torch._inductor.runtime.static_cuda_launcher import StaticallyLaunchedCudaKernel
    ck = c.ck["stock"]
    path = os.path.join(ctx.tmp, ck.name + ".cubin")
    with open(path, "wb") as fh:
        fh.write(ck.asm["cubin"])
    ck._cubin_path = path
    sk = StaticallyLaunchedCudaKernel(ck)
    sk.load_kernel(torch.cuda.current_device())
    gx, gy, gz = c.grid3
    s = stream()
    return batch_path(N.INDUCTOR, c, "run(gx, gy, gz, s,", dict(run=sk.run, gx=gx, gy=gy, gz=gz, s=s))


_NP_TYPES = {"i32": "int32", "i64": "int64", "fp32": "float32"}
_CT = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "fp32": ctypes.c_float}


def p_cuda_core(c, ctx):
    if c.flat is None:
        raise Unavailable("cuda.core: no CUtensorMap-by-value kernel argument for a Triton tensordesc")
    import numpy as np
    from cuda.core import LaunchConfig, ObjectCode, Stream, launch

    ck = c.ck["ours"]
    kernel = ObjectCode.from_cubin(ck.asm["cubin"]).get_kernel(ck.name)
    cfg = LaunchConfig(grid=c.grid3, block=(32 * ck.metadata.num_warps, 1, 1), shmem_size=ck.metadata.shared)
    s = Stream.from_handle(stream())
    flat = [(fn, None if ty.startswith("*") else getattr(np, _NP_TYPES[ty])) for fn, ty in c.flat]

    def call():
        launch(s, cfg, kernel, *[fn() if conv is None else conv(fn()) for fn, conv in flat], 0, 0)

    return Path(N.CUDA_CORE, _repeat(call), BATCH)


def p_cuda_bindings(c, ctx):
    if c.flat is None:
        raise Unavailable("cuda.bindings (values, types) form: no 128-byte CUtensorMap type")
    from cuda.bindings import driver as cu

    ck = c.ck["ours"]
    f = cu.CUfunction(ck.function)
    gx, gy, gz = c.grid3
    block, shared, s = 32 * ck.metadata.num_warps, ck.metadata.shared, cu.CUstream(stream())
    flat = c.flat
    types = tuple(ctypes.c_void_p if ty.startswith("*") else _CT[ty] for _, ty in flat) + (ctypes.c_void_p,) * 2

    def call():
        values = tuple(fn() for fn, _ in flat) + (0, 0)
        err, = cu.cuLaunchKernel(f, gx, gy, gz, block, 1, 1, shared, s, (values, types), 0)
        return err

    err = call()
    if int(err):
        raise Unavailable(f"cuLaunchKernel returned {err}")
    return Path(N.CUDA_BINDINGS, _repeat(call), BATCH)


def _repeat(call):
    def run():
        for _ in LOOP:
            call()
    return run


# The paths of a hot kernel, in round order. Core paths must work: an error fails the test.
# Optional ones (features to come, peers) are skipped with the reason, or the error, recorded.
CORE = [(N.FLOOR, p_floor), (N.BIND, p_bind), p_launcher("ours", False), p_launcher("stock", False),
        p_launcher("ours", True), p_launcher("stock", True), p_compiled("ours", False),
        p_compiled("stock", False), p_compiled("ours", True), p_compiled("stock", True),
        p_jit("ours"), p_jit("stock")]
OPTIONAL = [(N.PREPARED, p_prepared), (N.PREPARED_NEW, p_prepared_new), (N.PREPARED_KW, p_prepared_keywords),
            (N.FAST, p_fast),
            (N.BUNDLE, p_bundle), (N.INDUCTOR, p_inductor), (N.CUDA_CORE, p_cuda_core),
            (N.CUDA_BINDINGS, p_cuda_bindings)]
HOT_RATIOS = [(N.BUNDLE, N.STOCK_JIT), (N.BUNDLE, N.OURS_JIT), (N.FAST, N.OURS_JIT), (N.FAST, N.STOCK_JIT)]


class HotContext:
    """What the path builders of one kernel share: a temporary folder, the prepared launch."""

    def __init__(self, tmp):
        self.tmp = tmp
        self._prepared = None
        self._form = None
        self.fast_batches = None
        self.fast_how = None

    def prepared(self, c):
        if self._prepared is None:
            jit = triton.jit(c.fn)
            p = launcher.prepare(jit, c.grid, *c.args, **c.kwargs)
            p()
            sync()
            self._prepared = p
        return self._prepared

    def prepared_form(self, c, p) -> bool:
        """Whether p(*new_args) wants the constexprs again as keywords (tried without first)."""
        if self._form is None:
            args = c.fresh(1)[0] if c.fresh is not None else _fresh_like(c.args)
            try:
                p(*args)
                self._form = False
            except TypeError:
                if not c.kwargs:
                    raise
                p(*args, **c.kwargs)
                self._form = True
            sync()
        return self._form


def _probe(path):
    """One batch outside the rounds: a path that cannot launch fails here, not in round 3."""
    if path.before is not None:
        path.before()
    path.run()
    if path.after is not None:
        path.after()
    sync()


@pytest.mark.parametrize("name", N.KERNELS, ids=[re.sub(r"\W+", "-", k) for k in N.KERNELS])
def test_hot(benchmark, cases, env, tmp_path, name):
    c = cases[name]
    launcher.install()
    ctx = HotContext(str(tmp_path))
    paths, skipped, invalid, notes = [], {}, {}, {}
    for pname, build in CORE:
        try:
            paths.append(build(c, ctx))
        except Unavailable as e:
            skipped[pname] = str(e)
    for pname, build in OPTIONAL:
        try:
            p = build(c, ctx)
            _probe(p)
            paths.append(p)
        except Unavailable as e:
            skipped[pname] = str(e)
        except Exception as e:  # noqa: BLE001 - a path that fails is reported, the others measured
            skipped[pname] = f"failed: {type(e).__name__}: {str(e)[:300]}"
        finally:
            sync()
    if ctx.fast_batches is not None:
        ctx.fast_batches.clear()  # the probe's batch
    by_name = {p.name: p for p in paths}
    ordered = [by_name[p] for p in N.HOT_PATHS if p in by_name]
    benchmark.group = f"hot: {name}"
    r = timed_rounds(benchmark, ordered, ROUNDS, WARMUP)
    if ctx.fast_batches is not None and N.FAST in by_name:
        keyable = c.name not in (N.TENSORDESC, N.TENSORDESC_FRESH)  # descriptors give no key
        notes[N.FAST], why = fast_summary(ctx.fast_batches[WARMUP:], ctx.fast_how, BATCH, keyable)
        if why:
            invalid[N.FAST] = why
    record(benchmark, env, "hot", name, r.times, cpu_note=r.cpu_note, unit="µs per launch", ops=BATCH, warmup=WARMUP,
           skipped=skipped, invalid=invalid, notes=notes, ratios=HOT_RATIOS, triton_version=triton.__version__,
           call_sites=sites.WRITTEN)
    for pname, why in skipped.items():
        print(f"[{name}] {pname}: skipped: {why}")


# ---- fast-dispatch miss ----
def test_fast_dispatch_miss(benchmark, env):
    """Calls the guard has no record for but Triton has compiled, against the same calls without
    the guard. Every round takes two new groups of MISS_BATCH kernels (each a JITFunction of its
    own) warmed alike: each kernel was called with n=1024 with fast dispatch off (so Triton
    compiled that specialization: n is then divisible by 16); those of the first group were also
    called with n=1000 with it on (so their guard knows that key). Before the batch, untimed,
    every kernel gets a warmup() call with n=1024 (which puts a dormant guard back in front of
    its kernel and records nothing). The timed call passes n=1024: with fast dispatch on, a miss
    that takes Triton's path without compiling; without it, Triton's path on equally new objects."""
    if not fast_dispatch_available(launcher):
        pytest.skip("launcher.install(fast_dispatch=...) does not exist yet")
    launcher.install()
    x, y, out = (torch.zeros(1024, device=DEV) for _ in range(3))
    grid = (1,)
    fd = FastDispatch(launcher)

    def warm(jit, with_guard):
        fd.set(False)
        jit[grid](x, y, out, 1024, BLOCK=1024)
        if with_guard:
            fd.set(True)
            jit[grid](x, y, out, 1000, BLOCK=1024)
            fd.set(False)

    probe = triton.jit(K.add.fn)
    warm(probe, False)
    how = fd.establish(lambda: [probe[grid](x, y, out, 1000, BLOCK=1024) for _ in range(2)],
                       lambda: [probe[grid](x, y, out, 1000, BLOCK=1024) for _ in range(2)])
    groups = {True: [], False: []}
    for _ in range(MISS_ROUNDS + 1):  # one warm-up round
        for guarded in (True, False):
            group = [triton.jit(K.add.fn) for _ in range(MISS_BATCH)]
            for j in group:
                warm(j, guarded)
            groups[guarded].append(group)
    sync()
    todo, counts, state = {}, [], {}

    def before(guarded):
        def prepare():
            todo[guarded] = groups[guarded].pop(0)
            fd.set(guarded)
            for j in todo[guarded]:
                j.warmup(x, y, out, 1024, BLOCK=1024, grid=grid)
            state["s"] = fd.snapshot()
        return prepare

    def run(guarded):
        def calls():
            for j in todo[guarded]:
                j[grid](x, y, out, 1024, BLOCK=1024)
        return calls

    def after():
        s = fd.snapshot()
        fd.set(False)
        counts.append(fd.delta(state["s"], s))

    paths = [Path(N.MISS, run(True), MISS_BATCH, before(True), after),
             Path(N.TRITON_PATH, run(False), MISS_BATCH, before(False))]
    benchmark.group = "cold: " + N.FAST_MISS
    r = timed_rounds(benchmark, paths, MISS_ROUNDS, 1, rerun=False)
    known = [b for b in counts[1:] if b is not None]
    invalid, notes = {}, {N.MISS: f"guard {how}"}
    if known and all(b.get("misses") is not None for b in known):
        lo = min(b["misses"] for b in known)
        notes[N.MISS] += f"; misses per batch of {MISS_BATCH}: {lo}–{max(b['misses'] for b in known)}"
        if lo < MISS_BATCH or any(b.get("hits") for b in known):
            invalid[N.MISS] = f"not every call was a miss: {known}"
    record(benchmark, env, "cold", N.FAST_MISS, r.times, cpu_note=r.cpu_note, unit="µs per call", ops=MISS_BATCH,
           warmup=1, invalid=invalid, notes=notes, ratios=[(N.MISS, N.TRITON_PATH)])


# ---- the decode step ----
class DecodeStep:
    """The buffers of the decode step (launcher.bench.decode) and its launches through each path's
    kernels: `step(kernels)` is one step, the eight `kernels[name][grid](*args, **kwargs)` calls."""

    def __init__(self):
        data = D.inputs()
        self.buf = {n: torch.empty(D.SHAPES[n], device=DEV) for n in D.BUFFERS}
        for n in D.INPUTS:
            self.buf[n].copy_(torch.tensor(data[n], dtype=torch.float32).view(D.SHAPES[n]))
        self.plan = D.launches(self.buf)
        self.expected = None  # stock eager's outputs, once checked against the reference
        self.stock = self.ours = self.stock_ck = self.ours_ck = None  # {name: JITFunction or CompiledKernel}
        self.graph, self.graph_device_us, self.graph_error = None, None, ""

    def step(self, kernels):
        """One step: the eight calls written out one after another, as a decoder's code has them
        (launcher.bench.sites.sequence)."""
        return sites.sequence([(f"k{i}[grid{i}]", {f"k{i}": kernels[name], f"grid{i}": grid}, args, kw)
                               for i, (name, grid, args, kw) in enumerate(self.plan)])

    def compiled(self, kernels) -> dict:
        """One step, keeping what each `kernel[grid](...)` returned (its CompiledKernel), by name."""
        out = {}
        for name, grid, args, kw in self.plan:
            out.setdefault(name, kernels[name][grid](*args, **kw))
        sync()
        return out

    def outputs(self, step) -> dict:
        """Every output buffer after one step on outputs filled with NaN (what it does not write fails)."""
        for n in D.OUTPUTS:
            self.buf[n].fill_(float("nan"))
        sync()
        step()
        sync()
        return {n: self.buf[n].clone() for n in D.OUTPUTS}

    def check_reference(self, step) -> None:
        """Stock eager's outputs against the pure-Python reference (float64): kept as `expected`."""
        got, ref = self.outputs(step), D.reference()
        for n in D.OUTPUTS:
            want = torch.tensor(ref[n], dtype=torch.float64, device=DEV).view(D.SHAPES[n])
            scale = float(want.abs().max())
            if not torch.allclose(got[n].double(), want, rtol=1e-3, atol=1e-5 * scale):
                worst = float((got[n].double() - want).abs().max())
                raise AssertionError(f"decode step, stock eager: {n} differs from the reference by up to {worst:.3g}")
        self.expected = got

    def check(self, name, step) -> None:
        """The path computes exactly what stock eager computed (bit for bit)."""
        got = self.outputs(step)
        for n in D.OUTPUTS:
            if not torch.equal(got[n], self.expected[n]):
                diff = (got[n] - self.expected[n]).abs()
                raise AssertionError(f"decode step, {name}: {n} is not stock eager's (max |diff| "
                                     f"{float(diff.nan_to_num(float('inf')).max()):.3g})")


def _steps(step):
    todo = range(DECODE_STEPS)

    def run():
        for _ in todo:
            step()

    return run


def _capture_graph(step):
    """A CUDA graph of one step (warmed on a side stream first, as torch asks), and the device
    time of one replay (CUDA events over 20 replays), for context."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(side)
    sync()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    sync()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    g.replay()
    start.record()
    for _ in range(20):
        g.replay()
    end.record()
    sync()
    return g, start.elapsed_time(end) * 1e3 / 20


@pytest.fixture(scope="module")
def decode():
    """The four kernels of the decode step compiled in JITFunctions of their own, as `cases` does:
    by stock Triton (launcher not installed), then with launcher installed. The CUDA graph of
    stock's step is captured while launcher is not installed. Stock's outputs are checked
    against the pure-Python reference here."""
    d = DecodeStep()
    fns = {n: getattr(K, n).fn for n in D.KERNELS}
    launcher.uninstall()
    d.stock = {n: triton.jit(fns[n]) for n in D.KERNELS}
    d.stock_ck = d.compiled(d.stock)
    d.check_reference(d.step(d.stock))
    try:
        d.graph, d.graph_device_us = _capture_graph(d.step(d.stock))
    except Exception as e:  # noqa: BLE001 - the graph path is then skipped with the reason
        d.graph_error = f"failed: {type(e).__name__}: {str(e)[:300]}"
        sync()
    launcher.install()
    d.ours = {n: triton.jit(fns[n]) for n in D.KERNELS}
    d.ours_ck = d.compiled(d.ours)
    for n in D.KERNELS:
        assert isinstance(d.ours_ck[n]._run, launcher.CudaLauncher), f"{n}: ours is not launcher's"
        assert not isinstance(d.stock_ck[n]._run, launcher.CudaLauncher), f"{n}: stock is launcher's"
    return d


def _decode_fast(d, ctx):
    """The guard's path, as p_fast builds it: JITFunctions of its own, the guard switched on for
    each batch and off after it, with its counts per batch."""
    if not fast_dispatch_available(launcher):
        raise Unavailable("launcher.install(fast_dispatch=...) does not exist yet")
    fd = FastDispatch(launcher)
    guarded = {n: triton.jit(getattr(K, n).fn) for n in D.KERNELS}
    step, ours = d.step(guarded), d.step(d.ours)
    ctx.fast_how = fd.establish(lambda: [step() for _ in range(3)], lambda: [ours() for _ in range(3)])
    before, after = _guard_switch(fd, ctx.fast_batches)

    def checked():
        before()
        try:
            step()
        finally:
            after()

    d.check(N.FAST, checked)
    return Path(N.FAST, _steps(step), DECODE_STEPS, before, after)


def _decode_bundle(d, ctx):
    if not (hasattr(launcher, "export") and hasattr(launcher, "load_bundle")):
        raise Unavailable("launcher.export / launcher.load_bundle do not exist yet")
    path = os.path.join(ctx.tmp, "decode.bundle")
    launcher.export(path, *(d.ours_ck[n] for n in D.KERNELS))
    bundle = ctx.bundle = launcher.load_bundle(path)  # held while its kernels run
    ks = {n: bundle_kernel(bundle, n) for n in D.KERNELS}
    step = d.step(ks)
    d.check(N.BUNDLE, step)
    return Path(N.BUNDLE, _steps(step), DECODE_STEPS)


def _decode_floor(d, ctx):
    """The step's C floor: its eight launches bound once with ours' CompiledKernels
    (CudaLauncher.bind) and launched one after another in one C loop, a batch of DECODE_STEPS
    steps in one call (cuda_launcher.repeat_sequence): what the GPU host's driver costs for the
    step's eight kernels in turn, with nothing above cuLaunchKernelEx."""
    from launcher import cuda_launcher
    from launcher.arguments import grid3

    if not hasattr(cuda_launcher, "repeat_sequence"):
        raise Unavailable("launcher.cuda_launcher.repeat_sequence does not exist yet")
    s, bounds = stream(), []
    for name, grid, args, kw in d.plan:
        ck = d.ours_ck[name]
        values = inspect.signature(getattr(K, name).fn).bind(*args, **kw).arguments.values()  # constexprs too
        bounds.append(ck._run.bind(*grid3(grid), s, ck.function, ck.packed_metadata, *values))
    d.check(N.FLOOR, lambda: cuda_launcher.repeat_sequence(bounds, 1))
    return Path(N.FLOOR, lambda: cuda_launcher.repeat_sequence(bounds, DECODE_STEPS), DECODE_STEPS)


def _decode_graph(d, ctx):
    if d.graph is None:
        raise Unavailable(d.graph_error)
    replay = d.graph.replay
    d.check(N.GRAPH, replay)
    return Path(N.GRAPH, _steps(replay), DECODE_STEPS)


class _DecodeContext:
    def __init__(self, tmp):
        self.tmp = tmp
        self.fast_batches = []
        self.fast_how = None
        self.bundle = None


def test_decode_step(benchmark, env, decode, tmp_path):
    """A decode-like step of eight launches (rmsnorm, axpby, softmax, silu-mul, twice; 8x1024 fp32;
    launcher.bench.decode) through every path in the same interleaved rounds: a round runs each
    path once, a batch of DECODE_STEPS steps after a synchronisation. Stock eager and launcher
    installed are the core paths (as stock.jit and ours.jit of test_hot); the guard, the bundle
    and the CUDA graph are skipped with the reason where they cannot run. Before timing, each
    path's outputs are asserted identical to stock eager's (and stock's close to the reference)."""
    d = decode
    launcher.install()
    ctx = _DecodeContext(str(tmp_path))
    stock, ours = d.step(d.stock), d.step(d.ours)
    d.check(N.OURS_JIT, ours)
    paths = [Path(N.STOCK_JIT, _steps(stock), DECODE_STEPS), Path(N.OURS_JIT, _steps(ours), DECODE_STEPS)]
    skipped, invalid, notes = {}, {}, {}
    for pname, build in ((N.FAST, _decode_fast), (N.BUNDLE, _decode_bundle), (N.FLOOR, _decode_floor),
                         (N.GRAPH, _decode_graph)):
        try:
            paths.append(build(d, ctx))
        except Unavailable as e:
            skipped[pname] = str(e)
        except AssertionError:
            raise  # a path that computes something else fails the test
        except Exception as e:  # noqa: BLE001 - a path that fails is reported, the others measured
            skipped[pname] = f"failed: {type(e).__name__}: {str(e)[:300]}"
        finally:
            sync()
    ctx.fast_batches.clear()  # the check's step
    benchmark.group = "decode: " + N.DECODE
    r = timed_rounds(benchmark, paths, ROUNDS, WARMUP)
    if ctx.fast_how is not None and N.FAST in r.times:
        notes[N.FAST], why = fast_summary(ctx.fast_batches[WARMUP:], ctx.fast_how,
                                          DECODE_STEPS * D.LAUNCHES_PER_STEP, True)
        if why:
            invalid[N.FAST] = why
    if d.graph_device_us is not None:
        notes[N.GRAPH] = f"device time of one replayed step (CUDA events): {d.graph_device_us:.1f} µs"
    record(benchmark, env, "decode", N.DECODE, r.times, cpu_note=r.cpu_note, unit="µs per step", ops=DECODE_STEPS,
           warmup=WARMUP, skipped=skipped, invalid=invalid, notes=notes,
           ratios=[(p, N.STOCK_JIT) for p in N.DECODE_PATHS if p != N.STOCK_JIT]
           + [(p, N.FLOOR) for p in N.DECODE_PATHS if p not in (N.FLOOR, N.GRAPH)],
           launches_per_step=D.LAUNCHES_PER_STEP, shape=f"{D.ROWS}x{D.COLS} fp32", triton_version=triton.__version__,
           call_sites=sites.WRITTEN)
    for pname, why in skipped.items():
        print(f"[{N.DECODE}] {pname}: skipped: {why}")


# ---- cold paths ----
def stock_launcher_cls():
    cls = getattr(launcher.CudaLauncher, "stock_launcher_cls", None)
    if cls is None:
        from triton.backends.nvidia import driver as nv

        cls = nv.CudaLauncher
    if isinstance(cls, type) and issubclass(cls, launcher.CudaLauncher):
        raise AssertionError("could not find Triton's own launcher class")
    return cls


@pytest.fixture(scope="module")
def cold_kernels(tmp_path_factory):
    """COLD_ROUNDS + 1 kernels of distinct 16-argument signatures, each with TWINS kernels of the
    same shape under other names, compiled and loaded beforehand with their arguments: the timed
    part is the launcher only."""
    from triton.compiler import ASTSource

    launcher.install()
    target = triton.runtime.driver.active.get_current_target()

    def compiled(fn, sig):
        ck = triton.compile(ASTSource(fn=fn, signature=sig), target=target)
        ck._init_handles()
        return ck

    out = []
    for a, sig_a, twins in K.load_cold_kernels(COLD_ROUNDS + 1, str(tmp_path_factory.mktemp("cold")), TWINS):
        args = K.cold_arguments(sig_a, lambda: torch.zeros(1, device=DEV))
        out.append((compiled(a, sig_a), [compiled(b, sig_b) for b, sig_b in twins], args))
    sync()
    return out


class _FreshTritonCache:
    """An empty Triton cache for one stock construction (3.6 then runs gcc, as for a new signature)."""

    def __init__(self, root):
        self.root, self.saved, self.n = root, None, 0

    def on(self):
        self.saved = os.environ.get("TRITON_CACHE_DIR")
        self.n += 1
        os.environ["TRITON_CACHE_DIR"] = os.path.join(self.root, f"empty-{self.n}")

    def off(self):
        if self.saved is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = self.saved


def test_cold_new_signature(benchmark, env, cold_kernels, tmp_path):
    """Construction + first launch of a launcher for a 16-argument signature never seen before:
    our caches are cleared before each, and stock 3.6 gets an empty Triton cache (gcc runs)."""
    launcher.install()
    stock_cls = stock_launcher_cls()
    rounds = GCC_ROUNDS if STOCK_COMPILES_LAUNCHERS else COLD_ROUNDS
    s = stream()

    def path(name, make, before=None, after=None):
        it = iter(cold_kernels)
        cur = {}

        def pick():
            cur["k"] = next(it)
            if before is not None:
                before()

        def run():
            ck, _, args = cur["k"]
            make(ck.src, ck.metadata)(1, 1, 1, s, ck.function, ck.packed_metadata, None, None, None, *args)

        return Path(name, run, 1, pick, after)

    empty = _FreshTritonCache(str(tmp_path))
    paths = [path(N.OURS, launcher.CudaLauncher, before=clear_launcher_caches),
             path(N.STOCK, stock_cls, *((empty.on, empty.off) if STOCK_COMPILES_LAUNCHERS else (None, None)))]
    benchmark.group = "cold: " + N.COLD_NEW
    r = timed_rounds(benchmark, paths, rounds, 1, rerun=False)
    notes = {N.STOCK: "Triton %s: %s" % (triton.__version__, "gcc builds the launcher (empty Triton cache)"
                                         if STOCK_COMPILES_LAUNCHERS else "Triton's precompiled variadic launcher")}
    record(benchmark, env, "cold", N.COLD_NEW, r.times, cpu_note=r.cpu_note, unit="µs", ops=1, warmup=1, notes=notes,
           ratios=[(N.OURS, N.STOCK)])


def test_cold_same_shape(benchmark, env, cold_kernels):
    """The launcher for a kernel whose signature has the shape of one seen before under another
    kernel name and other parameter names: the first kernel's launcher is built (untimed), then
    those of its TWINS twins (timed, per launcher)."""
    launcher.install()
    stock_cls = stock_launcher_cls()

    def path(name, make, clear):
        it = iter(cold_kernels)
        cur = {}

        def before():
            cur["k"] = next(it)
            if clear:
                clear_launcher_caches()
            first = cur["k"][0]
            make(first.src, first.metadata)

        def run():
            for twin in cur["k"][1]:
                make(twin.src, twin.metadata)

        return Path(name, run, TWINS, before)

    paths = [path(N.OURS, launcher.CudaLauncher, True), path(N.STOCK, stock_cls, False)]
    benchmark.group = "cold: " + N.COLD_SHAPE
    r = timed_rounds(benchmark, paths, COLD_ROUNDS, 1, rerun=False)
    record(benchmark, env, "cold", N.COLD_SHAPE, r.times, cpu_note=r.cpu_note, unit="µs per launcher", ops=TWINS,
           warmup=1, ratios=[(N.OURS, N.STOCK)])


def test_cold_module_load(benchmark, env):
    """A module-cache hit (and its release) against cuModuleLoadData (and cuModuleUnload) of the
    same cubin, MODULE_OPS of each per round. The driver reloads an image it has seen cheaply:
    this is that case, not a first load."""
    from cuda.bindings import driver as cu

    launcher.install()
    x = torch.zeros(1024, device=DEV)
    ck = triton.jit(K.add.fn)[(1,)](x, x, x, 1000, BLOCK=1024)
    cubin, name, shared = ck.kernel, ck.name, ck.metadata.shared
    cache, dev = launcher.module_cache(), torch.cuda.current_device()
    ops = range(MODULE_OPS)

    def load_unload():
        for _ in ops:
            err, mod = cu.cuModuleLoadData(cubin)
            cu.cuModuleUnload(mod)

    def hit_release():
        for _ in ops:
            cache.unload_module(cache.load_binary(name, cubin, shared, dev)[0])

    err, mod = cu.cuModuleLoadData(cubin)
    assert int(err) == 0, f"cuModuleLoadData: {err}"
    cu.cuModuleUnload(mod)
    hits = cache.snapshot().hits
    hit_release()
    assert cache.snapshot().hits - hits == MODULE_OPS, "the module cache did not hit"
    paths = [Path(N.MODULE_LOAD, load_unload, MODULE_OPS), Path(N.MODULE_HIT, hit_release, MODULE_OPS)]
    benchmark.group = "cold: " + N.COLD_MODULE
    r = timed_rounds(benchmark, paths, ROUNDS, WARMUP)
    record(benchmark, env, "cold", N.COLD_MODULE, r.times, cpu_note=r.cpu_note, unit="µs per op", ops=MODULE_OPS,
           warmup=WARMUP, ratios=[(N.MODULE_HIT, N.MODULE_LOAD)])


# ---- startup in fresh processes ----
CHILD = os.path.join(os.path.dirname(os.path.abspath(K.__file__)), "startup_child.py")


def _child(args, env_vars, timeout=300) -> dict:
    proc = subprocess.run([sys.executable, CHILD, *args], env=env_vars, capture_output=True, text=True,
                          timeout=timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode or not lines:
        raise RuntimeError(f"startup child {args[0]} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return json.loads(lines[-1])


def test_startup(benchmark, env, tmp_path):
    """Time to the first launch of each of 20 small kernels in a fresh process, after `import torch`
    and CUDA set-up in both: a bundle (import launcher, load_bundle) against Triton with a warm
    cache (import triton). STARTUP_PROCS processes each, alternating."""
    child_env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "triton-cache"))
    child_env.pop("LAUNCHER_INSTALL", None)  # the Triton path is stock Triton
    prep = _child(["prepare", str(tmp_path)], child_env, timeout=600)
    assert prep["correct"], "the startup kernels computed wrong results"
    modes = {N.STARTUP_TRITON: ["triton"]}
    skipped = {}
    if prep.get("exported"):
        modes[N.STARTUP_BUNDLE] = ["bundle", prep["bundle"]]
    else:
        skipped[N.STARTUP_BUNDLE] = prep.get("export_error") or "launcher.export does not exist yet"
    order = list(modes)
    times = {m: [] for m in order}
    details = {m: [] for m in order}
    count = {"r": 0}

    def one_round():
        for m in round_order(order, count["r"]):
            res = _child(modes[m], child_env)
            times[m].append(res["ms"])
            details[m].append(res)
        count["r"] += 1

    benchmark.group = "startup"
    benchmark.pedantic(one_round, rounds=STARTUP_PROCS, iterations=1, warmup_rounds=0)
    invalid, notes = {}, {}
    for m in order:
        wrong = [i for i, d in enumerate(details[m]) if not d["correct"]]
        if wrong:
            invalid[m] = f"wrong results in processes {wrong}"
        imports = sorted(d["import_ms"] for d in details[m])
        notes[m] = (f"imports and loading: {imports[len(imports) // 2]:.1f} ms (median); "
                    f"Triton imported: {sorted({d['triton_imported'] for d in details[m]})}")
    record(benchmark, env, "startup", N.STARTUP, times, unit="ms", ops=1, warmup=0,
           skipped=skipped, invalid=invalid, notes=notes, ratios=[(N.STARTUP_TRITON, N.STARTUP_BUNDLE)],
           processes={m: details[m] for m in order})
