"""pytest plugin for .ci/h200.sh's triton-tests phase: Triton's own runtime tests, through launcher.

Why it exists: those tests (test_launch.py, test_cache.py, test_specialize.py in
.device/triton_tests) are Triton's code, fetched and run unchanged, so nothing in them installs
launcher. Loaded with `-p conftest_launcher` (from .ci on PYTHONPATH), this plugin installs it
before any test runs, checks that Triton's driver really launches through it, and reports the fast
dispatch guard's counters: a pass then says the tests ran through launcher and its guard, not
silently through stock Triton.

- LAUNCHER_TRITON_TESTS_STOCK=1: nothing is installed (the stock baseline); the header says so.
- Otherwise: launcher.install(fast_dispatch=True), or as $LAUNCHER_FAST_DISPATCH says where set;
  the header names the launcher class Triton's active driver uses, and the summary ends with a
  `fast dispatch (...): ...` line (hits, misses, fallbacks by reason) that h200.sh greps for.
- In both modes, where Triton's AMD backend cannot be imported (the Triton 3.9 packed for the GPU
  machine drops it), test_specialize.py's module-level `from triton.backends.amd.compiler import
  HIPBackend` gets a stand-in class, and the cases parametrized with it are deselected and counted
  in the summary: the CUDA cases run, and nothing else changes.
"""
import os
import sys
import types

_STOCK = os.environ.get("LAUNCHER_TRITON_TESTS_STOCK", "").strip() == "1"
_header = []
_dropped = []


def _hip_stand_in():
    """A stand-in for HIPBackend where the AMD backend is not installed (see the docstring), else None."""
    try:
        import triton.backends.amd.compiler  # noqa: F401
        return None
    except ImportError:
        pass

    class HIPBackend:
        """stand-in: Triton's AMD backend is not installed here"""

    package, module = types.ModuleType("triton.backends.amd"), types.ModuleType("triton.backends.amd.compiler")
    package.__path__, package.compiler, module.HIPBackend = [], module, HIPBackend
    sys.modules.setdefault("triton.backends.amd", package)
    sys.modules.setdefault("triton.backends.amd.compiler", module)
    return HIPBackend


_HIP = None


def pytest_collection_modifyitems(config, items):
    if _HIP is None:
        return
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        (drop if any(v is _HIP for v in params.values()) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
        _dropped.extend(drop)


def pytest_configure(config):
    global _HIP
    _HIP = _hip_stand_in()
    if _STOCK:
        _header.append("launcher: not installed, stock Triton (LAUNCHER_TRITON_TESTS_STOCK=1)")
        return
    import launcher
    from launcher.cuda_launcher import CudaLauncher
    from triton.backends.nvidia import driver as nv
    from triton.runtime.driver import driver

    # install() reads $LAUNCHER_FAST_DISPATCH (and checks its value) when given None.
    launcher.install(fast_dispatch=None if "LAUNCHER_FAST_DISPATCH" in os.environ else True)
    assert nv.CudaLauncher is CudaLauncher, f"Triton's CudaLauncher is {nv.CudaLauncher!r}, not launcher's"
    try:
        active = driver.active
    except RuntimeError as e:  # no GPU here (collection only): no driver to check
        _header.append(f"launcher: installed; Triton's active driver not checked ({e})")
        return
    assert active.launcher_cls is CudaLauncher, (
        f"Triton's active driver launches through {active.launcher_cls!r}, not launcher's CudaLauncher")
    _header.append(f"launcher: installed; Triton's active driver launches through "
                   f"{CudaLauncher.__module__}.{CudaLauncher.__qualname__}")


def pytest_report_header(config):
    return list(_header)


def pytest_terminal_summary(terminalreporter):
    if _dropped:
        terminalreporter.write_line(f"deselected {len(_dropped)} HIPBackend cases: Triton's AMD backend is not "
                                    "installed here")
    if _STOCK:
        return
    import launcher

    s = launcher.fast_dispatch_stats()
    by_count = sorted(s["fallbacks"].items(), key=lambda kv: -kv[1])
    reasons = ", ".join(f"{reason}: {n}" for reason, n in by_count) or "none"
    terminalreporter.write_line(
        f"fast dispatch ({'on' if s['enabled'] else 'off'}, {s['guarded kernels']} guarded kernels): "
        f"{s['hits']} hits, {s['misses']} misses, {sum(s['fallbacks'].values())} fallbacks ({reasons})")
