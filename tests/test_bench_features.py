"""How the suite finds and drives features still to come (fast dispatch, bundles, cache clearing),
against fake launcher modules on the CPU. These test the harness's guards, not the features."""
import types

import pytest

from launcher.bench.features import (FastDispatch, Unavailable, bundle_kernel, clear_launcher_caches, count,
                                     fast_dispatch_available, fast_summary)


class FakeLauncher:
    """A launcher module with fast dispatch: `toggles` says whether install() on an installed
    launcher changes the setting (else only uninstall() + install() does)."""

    def __init__(self, toggles=True, stats="dict"):
        self.installed = False
        self.on = False
        self.toggles = toggles
        self.counts = {"hits": 0, "misses": 0, "fallbacks": {}}
        self._stats = stats

    def install(self, *, fence_check=None, fast_dispatch=False):
        if self.installed and not self.toggles:
            return
        self.installed, self.on = True, fast_dispatch

    def uninstall(self):
        self.installed = self.on = False

    def fast_dispatch_stats(self):
        if self._stats == "attrs":
            return types.SimpleNamespace(hits=self.counts["hits"], misses=self.counts["misses"],
                                         fallbacks=dict(self.counts["fallbacks"]))
        return {k: (dict(v) if isinstance(v, dict) else v) for k, v in self.counts.items()}

    def call(self, keyable=True):
        """kernel[grid](...): counted by the guard only when it is on."""
        if not self.on:
            return
        if keyable:
            self.counts["hits"] += 1
        else:
            self.counts["fallbacks"]["tensor descriptor"] = self.counts["fallbacks"].get("tensor descriptor", 0) + 1


class NoStatsLauncher(FakeLauncher):
    fast_dispatch_stats = None  # a launcher with fast dispatch but no counters


def test_fast_dispatch_is_found_by_the_install_parameter():
    assert fast_dispatch_available(FakeLauncher())
    assert not fast_dispatch_available(types.SimpleNamespace(install=lambda *, fence_check=None: None))
    assert not fast_dispatch_available(types.SimpleNamespace(install=None))


def test_counts_read_ints_mappings_per_reason_and_attributes():
    assert count({"hits": 3}, "hits") == 3
    assert count({"fallbacks": {"a": 2, "b": 1}}, "fallbacks") == 3
    assert count(types.SimpleNamespace(misses=4), "misses") == 4
    assert count({}, "hits") is None and count(object(), "hits") is None


@pytest.mark.parametrize("stats", ["dict", "attrs"])
def test_establish_switches_with_install_when_it_toggles(stats):
    fake = FakeLauncher(toggles=True, stats=stats)
    fake.install()
    fd = FastDispatch(fake)
    how = fd.establish(lambda: [fake.call() for _ in range(3)], lambda: [fake.call() for _ in range(3)])
    assert how == "switched with install(fast_dispatch=...)" and fd.how == "install" and not fake.on
    s0 = fd.snapshot()
    fd.set(True)
    for _ in range(5):
        fake.call()
    fd.set(False)
    assert fd.delta(s0, fd.snapshot()) == {"hits": 5, "misses": 0, "fallbacks": 0}


def test_establish_falls_back_to_reinstalling_when_install_does_not_toggle():
    fake = FakeLauncher(toggles=False)
    fake.install()
    fd = FastDispatch(fake)
    how = fd.establish(lambda: [fake.call() for _ in range(3)], lambda: [fake.call() for _ in range(3)])
    assert fd.how == "reinstall" and "uninstall() + install" in how and not fake.on and fake.installed


def test_establish_refuses_a_guard_that_cannot_be_told_apart():
    fake = FakeLauncher()
    fake.install()
    fd = FastDispatch(fake)
    with pytest.raises(Unavailable, match="cannot switch fast dispatch off"):
        fd.establish(lambda: None, lambda: None)  # nothing counted with the guard on


def test_establish_without_counters_says_unverified():
    fake = NoStatsLauncher()
    fake.install()
    how = FastDispatch(fake).establish(lambda: fake.call(), lambda: fake.call())
    assert "unverified" in how


def test_a_fallback_only_guard_is_told_apart_too():
    fake = FakeLauncher()
    fake.install()
    fd = FastDispatch(fake)
    fd.establish(lambda: fake.call(keyable=False), lambda: fake.call(keyable=False))
    assert fd.how == "install"


def test_fast_summary_flags_batches_that_did_not_hit():
    full = [{"hits": 500, "misses": 0, "fallbacks": 0}] * 3
    note, why = fast_summary(full, "switched", 500, expect_hits=True)
    assert "hits 500–500" in note and why == ""
    partial = full + [{"hits": 12, "misses": 488, "fallbacks": 0}]
    _, why = fast_summary(partial, "switched", 500, expect_hits=True)
    assert "as few as 12 of 500" in why
    _, why = fast_summary([{"hits": 0, "misses": 0, "fallbacks": 500}], "switched", 500, expect_hits=False)
    assert why == ""
    assert fast_summary([None, None], "unverified", 500, True) == ("guard unverified; not counted", "")


def test_bundle_kernels_by_item_or_attribute():
    k = object()
    assert bundle_kernel({"add": k}, "add") is k
    assert bundle_kernel(types.SimpleNamespace(add=k), "add") is k
    with pytest.raises(AttributeError):
        bundle_kernel(types.SimpleNamespace(), "add")


def test_clearing_our_launcher_caches_forgets_every_shape():
    """What the cold-path benchmarks call before each new signature: the next launcher of any
    shape is built as new (its _Shape made again)."""
    from launcher import cuda_launcher

    from cpu_corpus import BY_NAME

    ck = BY_NAME["vector_add"].compile()
    first = cuda_launcher.CudaLauncher(ck.src, ck.metadata)._shape
    assert cuda_launcher.CudaLauncher(ck.src, ck.metadata)._shape is first
    clear_launcher_caches()
    assert cuda_launcher.CudaLauncher(ck.src, ck.metadata)._shape is not first
