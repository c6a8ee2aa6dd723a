"""The names the suite writes into its JSON and the report reads back: kernels, paths, groups.

A path named "ours.X" is compared with "stock.X" of the same kernel and round, when both exist.
"""

# Hot kernels, in report order.
ONE_ARG = "1 arg"
VECTOR_ADD = "vector add"
MIXED16 = "16 mixed"
MIXED19 = "19 mixed"
ARGS64 = "64 args"
NESTED = "nested tuple"
TENSORDESC = "host tensordesc"
TENSORDESC_FRESH = "host tensordesc, fresh"
KERNELS = [ONE_ARG, VECTOR_ADD, MIXED16, MIXED19, ARGS64, NESTED, TENSORDESC, TENSORDESC_FRESH]

# Hot paths, in report (and round) order.
FLOOR = "floor"
BIND = "ours.bind"
OURS_LAUNCHER_NONE = "ours.launcher (hooks None)"
STOCK_LAUNCHER_NONE = "stock.launcher (hooks None)"
OURS_LAUNCHER = "ours.launcher (default hooks)"
STOCK_LAUNCHER = "stock.launcher (default hooks)"
OURS_COMPILED_NONE = "ours.compiled (hooks None)"
STOCK_COMPILED_NONE = "stock.compiled (hooks None)"
OURS_COMPILED = "ours.compiled (default hooks)"
STOCK_COMPILED = "stock.compiled (default hooks)"
OURS_JIT = "ours.jit"
STOCK_JIT = "stock.jit"
PREPARED = "ours.prepared p()"
PREPARED_NEW = "ours.prepared p(*new)"
PREPARED_KW = "ours.prepared p(*new, **constexprs)"
FAST = "ours.fast-dispatch kernel[grid]"
BUNDLE = "ours.bundle k[grid]"
INDUCTOR = "inductor"
CUDA_CORE = "cuda.core"
CUDA_BINDINGS = "cuda.bindings"
HOT_PATHS = [FLOOR, BIND, OURS_LAUNCHER_NONE, STOCK_LAUNCHER_NONE, OURS_LAUNCHER, STOCK_LAUNCHER,
             OURS_COMPILED_NONE, STOCK_COMPILED_NONE, OURS_COMPILED, STOCK_COMPILED, OURS_JIT, STOCK_JIT,
             PREPARED, PREPARED_NEW, PREPARED_KW, FAST, BUNDLE, INDUCTOR, CUDA_CORE, CUDA_BINDINGS]

# What each path is, for the report.
PATH_TEXT = {
    FLOOR: "C floor: `BoundLaunch.repeat(N)`, a C loop over cuLaunchKernelEx",
    BIND: "ours, `bind()`: packed once, one cffi call per launch",
    OURS_LAUNCHER_NONE: "ours, launcher object as Triton calls it, hooks None",
    STOCK_LAUNCHER_NONE: "stock, launcher object, hooks None",
    OURS_LAUNCHER: "ours, launcher object, Triton's default (empty) hook chains",
    STOCK_LAUNCHER: "stock, launcher object, default hooks",
    OURS_COMPILED_NONE: "ours, `CompiledKernel[grid](...)`, hooks None",
    STOCK_COMPILED_NONE: "stock, `CompiledKernel[grid](...)`, hooks None",
    OURS_COMPILED: "ours, `CompiledKernel[grid](...)`, default hooks",
    STOCK_COMPILED: "stock, `CompiledKernel[grid](...)`, default hooks",
    OURS_JIT: "ours, `kernel[grid](...)` with launcher installed",
    STOCK_JIT: "stock, `kernel[grid](...)`: Triton's own path",
    PREPARED: "ours, `p = launcher.prepare(...)`, then `p()`",
    PREPARED_NEW: "ours, `p(*new_args)`: other tensors on every call, checked",
    PREPARED_KW: "ours, `p(*new_args, BLOCK=...)`: the same, with the constexprs passed again by keyword",
    FAST: "ours, `kernel[grid](...)` with `install(fast_dispatch=True)`",
    BUNDLE: "ours, `load_bundle(...).kernel[grid](...)`",
    INDUCTOR: "torch Inductor's StaticallyLaunchedCudaKernel.run",
    CUDA_CORE: "cuda.core `launch`",
    CUDA_BINDINGS: "cuda.bindings `cuLaunchKernel` with (values, types)",
}

# The decode step (launcher.bench.decode): one group, its paths named as the hot paths they
# time, eight launches at a time, and the CUDA graph of stock's step.
DECODE = "decode step: 8 launches, 8x1024 fp32"
GRAPH = "CUDA graph replay"
DECODE_PATHS = [STOCK_JIT, OURS_JIT, FAST, BUNDLE, FLOOR, GRAPH]
DECODE_TEXT = {
    STOCK_JIT: "stock eager: the eight `kernel[grid](...)` calls through Triton's own path and launcher",
    OURS_JIT: "the eight `kernel[grid](...)` calls with `launcher.install()` (fast dispatch off)",
    FAST: "the eight `kernel[grid](...)` calls with `launcher.install(fast_dispatch=True)`",
    BUNDLE: "the eight kernels exported with `launcher.export`, called as `bundle.k[grid](...)`",
    FLOOR: "C floor: the eight launches bound once, one C loop over cuLaunchKernelEx per batch "
           "(`cuda_launcher.repeat_sequence`)",
    GRAPH: "`torch.cuda.CUDAGraph` of stock's step, captured once, `replay()` per step",
}

# Cold groups and their paths.
COLD_NEW = "new signature (16 args): construction + first launch"
COLD_SHAPE = "same shape, another name (16 args): construction"
COLD_MODULE = "module load"
FAST_MISS = "fast-dispatch miss (vector add)"
STARTUP = "startup: 20 kernels in a fresh process"
OURS, STOCK = "ours", "stock"
MODULE_LOAD = "cuModuleLoadData + cuModuleUnload"
MODULE_HIT = "module cache hit + release"
MISS = "ours.fast-dispatch miss"
TRITON_PATH = "ours.jit (Triton's path)"
STARTUP_BUNDLE = "bundle: import launcher, load_bundle, first launches"
STARTUP_TRITON = "triton: import triton, first launches (warm cache)"


def twin(path: str):
    """The stock path an "ours." path is compared with, or None."""
    return "stock." + path[len("ours."):] if path.startswith("ours.") else None
