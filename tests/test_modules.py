"""ModuleCache bookkeeping: keying, reference counts, eviction order, threads (CPU).

The three driver calls (context, load, unload) are replaced by a recorder: these tests are
about the cache's own logic. Real loads, sharing and unloads are tested on the H200
(tests/test_gpu.py)."""
import threading
import time

import pytest

from launcher.modules import LoadedModule, ModuleCache


class RecordingCache(ModuleCache):
    def __init__(self, capacity=None, load_delay=0.0):
        super().__init__(capacity)
        self.ctx = 1
        self.loaded, self.unloaded = [], []
        self.load_delay = load_delay
        self._next = 100

    def _context(self, device):
        return self.ctx

    def _load(self, key, name, kernel, shared, oversized_shared=False):
        time.sleep(self.load_delay)
        self._next += 1
        self.loaded.append((name, key[-1]))
        return LoadedModule(key, name, kernel, self._next, self._next + 1000, 32, 0, 1024)

    def _unload_module(self, entry):
        self.unloaded.append(entry.module)


CUBIN_A, CUBIN_B = b"\x7fELF-a" * 100, b"\x7fELF-b" * 100


def test_same_cubin_name_and_context_share_one_module():
    c = RecordingCache()
    r1 = c.load_binary("k", CUBIN_A, 0, 0)
    r2 = c.load_binary("k", bytes(bytearray(CUBIN_A)), 0, 0)  # equal content, another object
    assert r1 == r2 and len(c.loaded) == 1
    s = c.snapshot()
    assert (s.hits, s.misses, s.loads, s.modules, s.held) == (1, 1, 1, 1, 1)


def test_different_name_cubin_or_context_load_separately():
    c = RecordingCache()
    c.load_binary("k", CUBIN_A, 0, 0)
    c.load_binary("k2", CUBIN_A, 0, 0)
    c.load_binary("k", CUBIN_B, 0, 0)
    c.ctx = 2  # another device's context
    c.load_binary("k", CUBIN_A, 0, 1)
    assert len(c.loaded) == 4 and c.snapshot().modules == 4


def test_references_keep_a_module_until_the_last_holder_lets_go():
    c = RecordingCache(capacity=0)
    mod = c.load_binary("k", CUBIN_A, 0, 0)[0]
    c.load_binary("k", CUBIN_A, 0, 0)
    assert c.unload_module(mod) and c.unloaded == []  # one holder left
    assert c.owns(mod)
    assert c.unload_module(mod) and c.unloaded == [mod]  # capacity 0: unloaded at once
    assert not c.owns(mod)
    assert c.unload_module(mod) is False  # not ours any more: the caller unloads it


def test_idle_modules_are_evicted_least_recently_used_first():
    c = RecordingCache(capacity=2)
    mods = [c.load_binary(f"k{i}", CUBIN_A, 0, 0)[0] for i in range(4)]
    for m in mods[:3]:
        c.unload_module(m)  # idle: k0, k1, k2 (k3 still held)
    assert c.unloaded == [mods[0]]  # only two idle ones are kept
    again = c.load_binary("k1", CUBIN_A, 0, 0)[0]  # a hit revives k1
    assert again == mods[1] and len(c.loaded) == 4
    c.unload_module(mods[3])  # idle now: k2, k3 (k1 held) -> within capacity
    assert c.unloaded == [mods[0]]
    c.unload_module(again)  # idle: k2, k3, k1 -> evict k2, the oldest
    assert c.unloaded == [mods[0], mods[2]]
    assert c.clear() == 2 and sorted(c.unloaded) == sorted([mods[0], mods[2], mods[3], mods[1]])


def test_capacity_from_the_environment(monkeypatch):
    monkeypatch.setenv("LAUNCHER_MODULE_CACHE_SIZE", "7")
    assert RecordingCache().capacity == 7
    monkeypatch.setenv("LAUNCHER_MODULE_CACHE_SIZE", "lots")
    with pytest.raises(ValueError, match="LAUNCHER_MODULE_CACHE_SIZE"):
        RecordingCache()


def test_lowering_the_capacity_evicts_only_idle_modules():
    c = RecordingCache(capacity=10)
    held = c.load_binary("held", CUBIN_A, 0, 0)[0]
    idle = c.load_binary("idle", CUBIN_A, 0, 0)[0]
    c.unload_module(idle)
    c.set_capacity(0)
    assert c.unloaded == [idle] and c.owns(held)


def test_concurrent_loads_of_one_cubin_load_it_once():
    c = RecordingCache(load_delay=0.05)
    results = []
    threads = [threading.Thread(target=lambda: results.append(c.load_binary("k", CUBIN_A, 0, 0)))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(c.loaded) == 1 and len(set(results)) == 1
    s = c.snapshot()
    assert s.misses == 1 and s.hits == 7 and s.held == 1


def test_stats_count_bytes_held():
    c = RecordingCache()
    c.load_binary("a", CUBIN_A, 0, 0)
    c.load_binary("b", CUBIN_B + b"x", 0, 0)
    assert c.snapshot().bytes_held == len(CUBIN_A) + len(CUBIN_B) + 1
