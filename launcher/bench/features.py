"""The suite's side of launcher features that are still to come (torch-free, tested on the CPU).

The suite measures paths through `launcher.prepare`, `launcher.install(fast_dispatch=...)` and
`launcher.export`/`launcher.load_bundle` as soon as they exist, and until then skips them with
the reason. What it needs from them is found here, by looking, never by version:

- fast dispatch is there when `launcher.install` takes `fast_dispatch`; it is switched on for
  one batch and off after it, and `launcher.fast_dispatch_stats()` (where it exists) shows
  what the guard did in each batch: "hits", "misses" and "fallbacks", as ints, or mappings of
  reason to count, read from a mapping or from attributes;
- a bundle kernel is `bundle[name]`, or else `bundle.name`;
- our launcher caches are cleared with `launcher.cuda_launcher.clear_launcher_cache()`.
"""
from __future__ import annotations

import collections.abc
import inspect


class Unavailable(Exception):
    """A path that cannot be measured here (a feature launcher does not have yet, a peer that
    cannot launch this kernel): it is skipped and the reason recorded."""


def fast_dispatch_available(launcher) -> bool:
    try:
        return "fast_dispatch" in inspect.signature(launcher.install).parameters
    except (TypeError, ValueError):
        return False


def count(stats, key):
    """stats[key] or stats.key as an int: a mapping of counts per reason is summed."""
    value = stats.get(key) if isinstance(stats, collections.abc.Mapping) else getattr(stats, key, None)
    if isinstance(value, collections.abc.Mapping):
        return sum(int(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return len(value)
    return None if value is None else int(value)


class FastDispatch:
    """Switches launcher's fast dispatch on for one batch and off after it, and counts what the
    guard did in between with launcher.fast_dispatch_stats() (where it exists)."""

    KEYS = ("hits", "misses", "fallbacks")

    def __init__(self, launcher):
        self.launcher = launcher
        self.how = "install"

    def snapshot(self):
        stats = getattr(self.launcher, "fast_dispatch_stats", None)
        if stats is None:
            return None
        s = stats()
        counts = {k: count(s, k) for k in self.KEYS}
        return None if all(v is None for v in counts.values()) else counts

    @staticmethod
    def delta(before, after):
        if before is None or after is None:
            return None
        return {k: after[k] - before[k] if after[k] is not None and before[k] is not None else None
                for k in FastDispatch.KEYS}

    def set(self, on: bool) -> None:
        if self.how == "reinstall":
            self.launcher.uninstall()
        self.launcher.install(fast_dispatch=on)

    def establish(self, call_on, call_off) -> str:
        """Find a way to switch the guard on and off between batches, checked with the counters:
        call_on() must move them with the guard on, call_off() must not with it off. Tries
        install(fast_dispatch=...) on an installed launcher, then uninstall() + install(...).
        Returns how (for the report); raises Unavailable when neither works. Leaves it off."""
        tried = []
        for how in ("install", "reinstall"):
            self.how = how
            s0 = self.snapshot()
            self.set(True)
            call_on()
            s1 = self.snapshot()
            self.set(False)
            call_off()
            s2 = self.snapshot()
            on, off = self.delta(s0, s1), self.delta(s1, s2)
            if on is None:
                self.how = "install"
                return "switched with install(fast_dispatch=...), unverified: no fast_dispatch_stats counters"
            if any(on.values()) and not any(off.values()):
                return ("switched with install(fast_dispatch=...)" if how == "install"
                        else "switched with uninstall() + install(fast_dispatch=...)")
            tried.append(f"{how}: guard on {on}, guard off {off}")
        raise Unavailable("cannot switch fast dispatch off between batches: " + "; ".join(tried))


def fast_summary(batches, how, batch, expect_hits) -> tuple:
    """(note, why the figures are not what the path is named for, or "") from the per-batch
    counts of FastDispatch.delta."""
    known = [b for b in batches if b is not None]
    if not known:
        return f"guard {how}; not counted", ""
    span = {k: (min(b[k] for b in known), max(b[k] for b in known)) for k in FastDispatch.KEYS
            if all(b[k] is not None for b in known)}
    note = f"guard {how}; per batch of {batch}: " + ", ".join(f"{k} {lo}–{hi}" for k, (lo, hi) in span.items())
    hits_lo = span.get("hits", (None, None))[0]
    if expect_hits and hits_lo is not None and hits_lo < batch - 1:
        return note, f"expected a hit on (nearly) every call, got as few as {hits_lo} of {batch}"
    return note, ""


def bundle_kernel(bundle, name):
    try:
        return bundle[name]
    except (TypeError, KeyError):
        return getattr(bundle, name)


def clear_launcher_caches() -> None:
    """Forget every launcher our package built, so that the next signature is new to it."""
    from launcher import cuda_launcher

    cuda_launcher.clear_launcher_cache()
