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
"""
import os

_STOCK = os.environ.get("LAUNCHER_TRITON_TESTS_STOCK", "").strip() == "1"
_header = []


def pytest_configure(config):
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
    if _STOCK:
        return
    import launcher

    s = launcher.fast_dispatch_stats()
    by_count = sorted(s["fallbacks"].items(), key=lambda kv: -kv[1])
    reasons = ", ".join(f"{reason}: {n}" for reason, n in by_count) or "none"
    terminalreporter.write_line(
        f"fast dispatch ({'on' if s['enabled'] else 'off'}, {s['guarded kernels']} guarded kernels): "
        f"{s['hits']} hits, {s['misses']} misses, {sum(s['fallbacks'].values())} fallbacks ({reasons})")
