"""The fence check that runs before each kernel is loaded (Triton's kernel_load_start_hook)."""
from __future__ import annotations

import logging
import os
import threading

log = logging.getLogger("launcher.fence")

FENCE_POLICIES = ("off", "warn", "error")
_installed: list = []  # the FenceCheckHook launcher.install() put in Triton, while installed


def policy_from(policy: str | None) -> str:
    """The policy given as the fence_check argument, else $LAUNCHER_FENCE_CHECK, else "warn"; an
    invalid one is named where it came from (the argument or the environment variable)."""
    if policy is not None:
        source, value = "fence_check", policy
    else:
        source, value = "LAUNCHER_FENCE_CHECK", os.environ.get("LAUNCHER_FENCE_CHECK", "").strip() or "warn"
    normalised = value.strip().lower() if isinstance(value, str) else value
    if normalised not in FENCE_POLICIES:
        raise ValueError(f"{source} must be one of {', '.join(FENCE_POLICIES)}, got {value!r}")
    return normalised


def fence_policy() -> str:
    """The fence policy in effect: the one install() set while installed, else
    $LAUNCHER_FENCE_CHECK (off, warn or error; default warn). Bundled kernels follow it too."""
    hook = _installed[0] if _installed else None
    return hook.policy if hook is not None else policy_from(None)


def set_installed(hook) -> None:
    """install() / uninstall(): the hook whose policy is in effect (None: the environment's)."""
    _installed[:] = [hook] if hook is not None else []


class FenceCheckHook:
    """Checks each kernel's IR once (by hash) before its cubin is loaded.

    policy "warn" logs one warning per kernel with an error finding; "error" raises
    launcher.fence.FenceHazardError, so the cubin is never loaded; "off" does nothing.
    """

    def __init__(self, policy: str):
        self.policy = policy
        self.chained = None  # a user's plain hook we replaced, called after us
        self._seen: dict = {}  # kernel hash -> FenceHazardError or None
        self._lock = threading.Lock()
        self._said_no_ptx = False

    def __call__(self, module, function, name, metadata_group, hash, *rest):
        if self.policy != "off":
            self.check(name, metadata_group, hash)
        if self.chained is not None:
            self.chained(module, function, name, metadata_group, hash, *rest)

    def check(self, name, metadata_group, kernel_hash):
        from launcher import fence

        with self._lock:
            known = kernel_hash in self._seen
            error = self._seen.get(kernel_hash)
        if not known:
            try:
                # errors are all a load acts on: the TTGIR bounds operands but its info findings are skipped
                report = fence.check_metadata_group(metadata_group or {}, name, info=False)
            except Exception as e:  # an unreadable cache entry must not stop the kernel loading
                log.warning("fence check of %r failed (%s: %s); the kernel is loaded unchecked",
                            name, type(e).__name__, e)
                report = None
            error = None
            if report is None:
                if not self._said_no_ptx:
                    self._said_no_ptx = True
                    log.info("fence check skipped for %r and later kernels without PTX in the "
                             "Triton cache (TRITON_STORE_BINARY_ONLY?)", name)
            elif report.errors:
                error = fence.FenceHazardError(report)
                if self.policy == "warn":
                    log.warning("%s", report.format_text())
            with self._lock:
                self._seen[kernel_hash] = error
        if error is not None and self.policy == "error":
            raise error
