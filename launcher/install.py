"""Switch Triton's NVIDIA driver to this package, and back.

`install()` replaces `triton.backends.nvidia.driver.CudaLauncher` and `CudaUtils` (so a driver
created later is ours from the start) and patches the active driver if Triton already made one.
Kernels loaded before keep working: their launchers are theirs. `uninstall()` restores stock;
modules our cache loaded stay valid until their last holder lets go.
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading

from launcher import triton_adapter
from launcher.cuda_launcher import CudaLauncher
from launcher.fence_hook import FENCE_POLICIES, fence_policy, policy_from, set_installed
from launcher.modules import ModuleCache, module_cache
from launcher.utils import CudaUtils

log = logging.getLogger("launcher")

_lock = threading.RLock()
_state: dict = {}  # while installed: what we replaced

__all__ = ["install", "installed", "is_installed", "module_cache", "uninstall", "fence_policy", "FENCE_POLICIES"]


def is_installed() -> bool:
    return bool(_state)


class _StockUtilsAfterUninstall:
    """Stock CudaUtils (the one a driver had, or one made on first use) that still lets our
    cache own the modules it loaded: their holders release them through the cache."""

    def __init__(self, stock_cls, cache: ModuleCache, stock=None):
        self._stock_cls = stock_cls
        self._cache = cache
        self._stock = stock

    def _get(self):
        if self._stock is None:  # the module global is stock again: the normal singleton
            self._stock = self._stock_cls()
        return self._stock

    def unload_module(self, module):
        if not self._cache.unload_module(module):
            return self._get().unload_module(module)
        return None

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._get(), name)


def _unwrap(utils):
    """Triton's own CudaUtils behind `utils` (None where none was made yet)."""
    return utils._stock if isinstance(utils, _StockUtilsAfterUninstall) else utils


# The one rule for launcher's on/off environment variables (LAUNCHER_FAST_DISPATCH, and
# LAUNCHER_INSTALL through the .pth hook): these values, in any case, blanks around them ignored.
FLAG_VALUES = {"1": True, "true": True, "on": True, "0": False, "false": False, "off": False, "": False}


def env_flag(name: str, environ=None) -> bool:
    """Whether the environment variable `name` switches something on: 1, true or on; 0, false,
    off, empty or unset switch it off; any other value is a ValueError that names the variable
    and the values it takes."""
    raw = (os.environ if environ is None else environ).get(name, "")
    value = raw.strip().lower()
    if value not in FLAG_VALUES:
        raise ValueError(f"{name}={raw!r} is not a value it takes: 1, true or on switch it on; 0, false, off "
                         "or empty (or unset) switch it off")
    return FLAG_VALUES[value]


def _fast_dispatch_wanted(fast_dispatch: bool | None) -> bool:
    if fast_dispatch is not None:
        if not isinstance(fast_dispatch, bool):
            raise TypeError(f"install(fast_dispatch=...) takes True or False, got {fast_dispatch!r}")
        return fast_dispatch
    return env_flag("LAUNCHER_FAST_DISPATCH")


TRITON_MISSING = ('Triton is not installed in this Python ({python}): pip install "triton-launcher[triton]" '
                  "(or pip install triton)")


class TritonNotInstalled(ModuleNotFoundError):
    """launcher.install() (the drop-in for Triton's launcher) where Triton cannot be imported;
    the message says what to install. Bundles need no Triton (launcher.load_bundle)."""


def _require_triton() -> None:
    try:
        triton_adapter.import_triton()
    except ModuleNotFoundError as e:
        if e.name != "triton":  # Triton is there, and something it imports is not: Triton's error
            raise
        import sys

        raise TritonNotInstalled(
            "launcher.install() replaces Triton's NVIDIA launcher, and " + TRITON_MISSING.format(python=sys.executable)
            + ". Bundles need no Triton: launcher.load_bundle() works without it.", name="triton") from None


def install(*, fence_check: str | None = None, fast_dispatch: bool | None = None) -> None:
    """Make Triton launch and load every kernel loaded from now on through this package.

    fence_check: "off", "warn" (default) or "error" — what to do when a kernel's IR shows a
    missing proxy fence (see launcher.fence); defaults to $LAUNCHER_FENCE_CHECK.
    fast_dispatch: put launcher's guard in front of every @triton.jit kernel's dispatch
    (launcher.fast_dispatch); defaults to $LAUNCHER_FAST_DISPATCH=1. On an installed launcher
    it switches the guard on or off.
    """
    from launcher import fast_dispatch as guard

    with _lock:
        policy = policy_from(fence_check)
        if _state:
            if fence_check is not None:
                _state["fence"].policy = policy
            if fast_dispatch is not None:
                guard.enable() if fast_dispatch else guard.disable()
            return
        wants_guard = _fast_dispatch_wanted(fast_dispatch)
        _require_triton()
        if not triton_adapter.is_supported():
            lo, hi = triton_adapter.SUPPORTED
            raise RuntimeError(f"launcher supports Triton {lo[0]}.{lo[1]} to {hi[0]}.{hi[1]}, "
                               f"found {'.'.join(map(str, triton_adapter.triton_version()))}")
        from launcher.fence_hook import FenceCheckHook

        nv = triton_adapter.nvidia_driver_module()
        existing = triton_adapter.existing_cuda_drivers(nv)
        # Triton's own CudaUtils object, if one exists already (not one our uninstall() made
        # lazily: asking that for a tensor map would compile driver.c).
        stock_utils = next((_unwrap(d.utils) for d in existing if not isinstance(d.utils, CudaUtils)), None)
        utils = CudaUtils(module_cache(), stock_utils_cls=nv.CudaUtils, stock_utils=stock_utils)

        class UtilsFactory:  # what CudaDriver.__init__ calls: CudaUtils()
            def __new__(cls):
                return utils

        hook = FenceCheckHook(policy)
        _state.update(
            nv=nv, utils=utils, fence=hook,
            saved_module={k: getattr(nv, k) for k in ("CudaUtils", "CudaLauncher", "PyCUtensorMap")},
            saved_drivers=[(d, d.utils, d.launcher_cls) for d in existing],
        )
        CudaLauncher.stock_launcher_cls = nv.CudaLauncher
        nv.CudaUtils = UtilsFactory
        nv.CudaLauncher = CudaLauncher
        if nv.PyCUtensorMap is None:
            from launcher.tensormap import TensorMap

            nv.PyCUtensorMap = TensorMap
        for d, _, _ in _state["saved_drivers"]:
            d.utils = utils
            d.launcher_cls = CudaLauncher
        triton_adapter.add_kernel_load_hook(hook)
        set_installed(hook)
        if wants_guard:
            guard.enable()
        log.debug("launcher installed (fence check: %s, fast dispatch: %s)", policy, wants_guard)


def uninstall() -> None:
    """Restore Triton's stock launcher and utilities."""
    from launcher import fast_dispatch

    with _lock:
        fast_dispatch.disable()
        if not _state:
            return
        nv = _state["nv"]
        for k, v in _state["saved_module"].items():
            setattr(nv, k, v)
        stock_cls, cache = _state["saved_module"]["CudaUtils"], module_cache()
        new_drivers_utils = _StockUtilsAfterUninstall(stock_cls, cache)
        saved = {id(d): (u, lc) for d, u, lc in _state["saved_drivers"]}
        for d in triton_adapter.existing_cuda_drivers(nv):
            if id(d) in saved:  # made before install(): back to what it had
                utils, d.launcher_cls = saved[id(d)]
                d.utils = _StockUtilsAfterUninstall(stock_cls, cache, stock=_unwrap(utils))
            elif d.utils is _state["utils"]:  # made while installed
                d.utils = new_drivers_utils
                d.launcher_cls = _state["saved_module"]["CudaLauncher"]
        triton_adapter.remove_kernel_load_hook(_state["fence"])
        set_installed(None)
        CudaLauncher.stock_launcher_cls = None
        _state.clear()


@contextlib.contextmanager
def installed(*, fence_check: str | None = None, fast_dispatch: bool | None = None):
    """`with launcher.installed(): ...` — install for the block, then restore what was there."""
    from launcher import fast_dispatch as guard

    was = is_installed()
    policy = _state["fence"].policy if was else None
    guarded = guard.enabled()
    install(fence_check=fence_check, fast_dispatch=fast_dispatch)
    try:
        yield
    finally:
        if not was:
            uninstall()
        elif _state:
            _state["fence"].policy = policy
            guard.enable() if guarded else guard.disable()
