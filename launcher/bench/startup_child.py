"""One fresh process of the startup benchmark, run by path (never imported):

    python startup_child.py prepare DIR   compile the 20 kernels of startup_kernels.py with stock
                                          Triton (filling $TRITON_CACHE_DIR), launch each once, and
                                          export them to DIR/startup.bundle where launcher.export exists
    python startup_child.py triton        import triton, then the first launch of each kernel
    python startup_child.py bundle PATH   with `import triton` made to fail: import launcher,
                                          load_bundle(PATH), then the first launch of each kernel

Both timed modes start the clock after `import torch` and after the CUDA context and the
tensors exist, and stop it after a synchronisation that follows the 20th launch. The process
prints one JSON line: the mode, "ms" (the timed span), "import_ms" (the imports and the bundle
load), "launch_ms" (each first launch), whether the results are right, and whether Triton was
imported.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# Run by path, this folder (inside the launcher package) comes first on sys.path: drop it, so
# that none of its modules shadows another and `import launcher` finds the installed package.
if sys.path and os.path.realpath(sys.path[0] or os.curdir) == os.path.realpath(HERE):
    del sys.path[0]

NAMES = [f"k{i:02d}" for i in range(20)]  # as in startup_kernels.py


def _triton_kernels():
    import importlib.util

    spec = importlib.util.spec_from_file_location("launcher_bench_startup_kernels",
                                                  os.path.join(HERE, "startup_kernels.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.NAMES == NAMES, "startup_kernels.py and startup_child.py name the kernels differently"
    return [getattr(module, n) for n in NAMES]


def _bundle_kernel(bundle, name):
    try:
        return bundle[name]
    except (TypeError, KeyError):
        return getattr(bundle, name)


def main(argv) -> int:
    mode = argv[0]
    import torch

    x = torch.arange(128, device="cuda", dtype=torch.float32)
    outs = [torch.full_like(x, -1.0) for _ in NAMES]
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    if mode in ("triton", "prepare"):
        kernels = _triton_kernels()  # imports triton
    elif mode == "bundle":
        sys.modules["triton"] = None  # `import triton` fails in this process: the bundle runs without it
        import launcher

        t_import = time.perf_counter()
        bundle = launcher.load_bundle(argv[1])
        kernels = [_bundle_kernel(bundle, n) for n in NAMES]
        phases = {"import_launcher_ms": (t_import - t0) * 1e3, "load_bundle_ms": (time.perf_counter() - t_import) * 1e3}
    else:
        print(f"unknown mode {mode!r}", file=sys.stderr)
        return 2
    t_loaded = time.perf_counter()
    launch_ms, compiled = [], []
    for kernel, out in zip(kernels, outs):
        t = time.perf_counter()
        compiled.append(kernel[(1,)](x, out))
        launch_ms.append((time.perf_counter() - t) * 1e3)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    correct = all(torch.equal(out, x * (i + 1) + (i + 0.5)) for i, out in enumerate(outs))
    result = {"mode": mode, "ms": (t1 - t0) * 1e3, "import_ms": (t_loaded - t0) * 1e3, "launch_ms": launch_ms,
              "correct": bool(correct), "triton_imported": sys.modules.get("triton") is not None}
    if mode == "bundle":
        result.update(phases, modules_after=sorted(m for m in sys.modules if m.split(".")[0] in ("cuda", "launcher")))
    if mode == "prepare":
        result["exported"] = False
        try:
            import launcher
        except ImportError as e:
            result["export_error"] = f"import launcher: {e}"
        else:
            if hasattr(launcher, "export"):
                path = os.path.join(argv[1], "startup.bundle")
                launcher.export(path, *compiled)
                result.update(exported=True, bundle=path)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
