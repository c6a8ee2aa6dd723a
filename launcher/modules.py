"""The cubin module cache behind Triton's `load_binary` / `unload_module`.

Modules are keyed by content: (hash of the cubin bytes, verified by comparing the bytes on a
hit; the kernel name; the CUDA context), so a cubin loaded in two contexts (two devices) gets
a module in each.

Triton loads every CompiledKernel's cubin with cuModuleLoadData, and from 3.8 unloads it when
the CompiledKernel is collected. `ModuleCache` loads each (cubin, kernel name, context) once:
every holder of the same cubin in the same context shares one module, counted by reference,
so one kernel's unload never invalidates another's handle. Modules nobody holds stay loaded up
to a bound (least recently used first out) so that a kernel compiled again, or reloaded by a
new process-local CompiledKernel, costs a dictionary lookup instead of a module load.
"""
from __future__ import annotations

import collections
import os
import threading
from dataclasses import dataclass

from launcher import driver

DEFAULT_CAPACITY = 256
_SMALL_SHARED = 49152  # bytes of shared memory a kernel gets without opting in
# The CUDA 13.1+ numbers below (older bindings lack their names) are cdefs/launcher.h's, read by driver.


def _default_capacity() -> int:
    value = os.environ.get("LAUNCHER_MODULE_CACHE_SIZE", "")
    try:
        return max(0, int(value)) if value else DEFAULT_CAPACITY
    except ValueError:
        raise ValueError(f"LAUNCHER_MODULE_CACHE_SIZE must be a non-negative int, got {value!r}") from None


def max_shared_memory(device: int, *, oversized: bool) -> int:
    """Shared memory a block may use on `device`: the opt-in maximum, or on sm_107 the oversized
    maximum where the kernel's Triton release counts it (3.8+: `oversized`)."""
    if oversized and driver.device_capability(device) == (10, 7):
        return driver.device_attribute(device, "MAX_OVERSIZED_SHARED_MEMORY_PER_BLOCK")
    return driver.device_attribute(device, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")


class SharedMemoryError(ValueError):
    """A kernel asks for more shared memory than the device can give a block."""


@dataclass
class LoadedModule:
    key: tuple  # (hash of the cubin, its length, kernel name, context handle)
    name: str  # the kernel's name
    cubin: bytes  # compared on every hit, so equal hashes of different cubins never share
    module: int
    function: int
    n_regs: int
    n_spills: int
    n_max_threads: int
    refs: int = 0

    @property
    def size(self) -> int:
        """Bytes of the cubin."""
        return len(self.cubin)

    def result(self) -> tuple:
        """What Triton's load_binary returns."""
        return self.module, self.function, self.n_regs, self.n_spills, self.n_max_threads


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    loads: int = 0
    unloads: int = 0
    modules: int = 0
    held: int = 0  # modules with at least one holder
    bytes_held: int = 0  # cubin bytes of all loaded modules


class ModuleCache:
    """Reference-counted, bounded cache of loaded cubin modules. Thread-safe."""

    def __init__(self, capacity: int | None = None):
        self._capacity = _default_capacity() if capacity is None else int(capacity)
        self._lock = threading.Lock()
        self._entries: dict = {}  # key -> LoadedModule
        self._by_module: dict = {}  # module handle -> LoadedModule
        self._idle = collections.OrderedDict()  # key -> None, unreferenced, oldest first
        self._key_locks: dict = {}  # key -> Lock held while that key loads
        self._bytes = 0  # cubin bytes of the loaded modules
        self.stats = CacheStats()

    # -- configuration --
    @property
    def capacity(self) -> int:
        return self._capacity

    def set_capacity(self, capacity: int) -> None:
        if capacity < 0:
            raise ValueError(f"module cache capacity must be >= 0, got {capacity}")
        with self._lock:
            self._capacity = int(capacity)
            victims = self._evict_locked()
        self._unload(victims)

    # -- Triton's interface --
    def load_binary(self, name: str, kernel: bytes, shared: int, device: int, *,
                    oversized_shared: bool = False) -> tuple:
        """Triton's utils.load_binary: (module, function, n_regs, n_spills, n_max_threads).

        oversized_shared: the kernel's Triton release launches more than 228 KiB of shared
        memory in the oversized mode (the spec's conventions; Triton 3.8+)."""
        # Python caches a bytes object's hash, so the same CompiledKernel's cubin hashes once.
        key = (hash(kernel), len(kernel), name, self._context(device))
        with self._lock:
            entry = self._acquire_locked(key, kernel)
            if entry is not None:
                self.stats.hits += 1
                return entry.result()
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:  # one thread loads; the others find its entry
            with self._lock:
                entry = self._acquire_locked(key, kernel)
                if entry is not None:
                    self.stats.hits += 1
                    return entry.result()
                self.stats.misses += 1
                collision = key in self._entries  # same hash, different cubin: load, don't cache
            try:
                entry = self._load(key, name, kernel, shared, oversized_shared)
            except BaseException:
                with self._lock:
                    self._key_locks.pop(key, None)
                raise
            with self._lock:  # publish the entry and drop the key lock together
                self._key_locks.pop(key, None)
                self.stats.loads += 1
                if not collision:
                    entry.refs = 1
                    self._entries[key] = entry
                    self._by_module[entry.module] = entry
                    self._bytes += entry.size
                    self._update_stats_locked()
            return entry.result()

    def unload_module(self, module: int) -> bool:
        """Triton 3.8+'s utils.unload_module: drop one holder. False if not ours."""
        with self._lock:
            entry = self._by_module.get(int(module))
            if entry is None:
                return False
            if entry.refs > 0:
                entry.refs -= 1
            if entry.refs == 0:
                self._idle[entry.key] = None
                self._idle.move_to_end(entry.key)
            victims = self._evict_locked()
            self._update_stats_locked()
        self._unload(victims)
        return True

    def owns(self, module: int) -> bool:
        with self._lock:
            return int(module) in self._by_module

    def clear(self) -> int:
        """Unload every module nobody holds; returns how many were unloaded."""
        with self._lock:
            victims = [self._remove_locked(k) for k in list(self._idle)]
            self._update_stats_locked()
        self._unload(victims)
        return len(victims)

    def snapshot(self) -> CacheStats:
        with self._lock:
            return CacheStats(**vars(self.stats))

    # -- internals --
    def _acquire_locked(self, key, cubin):
        entry = self._entries.get(key)
        if entry is None or (entry.cubin is not cubin and entry.cubin != cubin):
            return None
        entry.refs += 1
        self._idle.pop(key, None)
        return entry

    def _evict_locked(self) -> list:
        victims = []
        while len(self._idle) > self._capacity:
            key, _ = self._idle.popitem(last=False)
            victims.append(self._remove_locked(key, in_idle=False))
        return victims

    def _remove_locked(self, key, in_idle=True):
        if in_idle:
            self._idle.pop(key, None)
        entry = self._entries.pop(key)
        self._by_module.pop(entry.module, None)
        self._bytes -= entry.size
        return entry

    def _update_stats_locked(self):
        """The counters, kept in O(1): every entry is held or idle, never both."""
        s = self.stats
        s.modules = len(self._entries)
        s.held = len(self._entries) - len(self._idle)
        s.bytes_held = self._bytes

    def _unload(self, entries):
        for entry in entries:
            self._unload_module(entry)
            with self._lock:
                self.stats.unloads += 1

    # -- the driver calls (a test double of the cache's bookkeeping overrides these three) --
    def _context(self, device: int) -> int:
        return driver.current_context(device)

    def _unload_module(self, entry: LoadedModule) -> None:
        driver.unload_module(entry.module, f"cuModuleUnload of kernel {entry.name!r}")

    def _load(self, key, name, kernel, shared, oversized_shared=False) -> LoadedModule:
        """Load a cubin on the current context's device, with what that device needs decided
        here, once: the shared-memory limit and opt-in, and non-portable cluster sizes."""
        device = driver.current_device()
        limit = max_shared_memory(device, oversized=oversized_shared)
        if shared > limit:
            raise SharedMemoryError(
                f"kernel {name!r} needs {shared} bytes of shared memory; device {device} "
                f"allows at most {limit} per block")
        mod = driver.load_module(kernel, name)
        try:
            fn = driver.module_function(mod, name)
            n_regs = driver.function_attribute(fn, "NUM_REGS")
            local = driver.function_attribute(fn, "LOCAL_SIZE_BYTES")
            max_threads = driver.function_attribute(fn, "MAX_THREADS_PER_BLOCK")
            optin = driver.device_attribute(device, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
            if shared > _SMALL_SHARED and optin > _SMALL_SHARED:
                self._allow_large_shared(fn, optin, name, oversized_shared)
            if driver.device_capability(device)[0] >= 9:
                # Clusters of 16 CTAs are non-portable: allow them once, here, rather than
                # before every launch (Triton sets this before each launch with num_ctas 16;
                # it only permits sizes above 8, so setting it for every kernel is harmless).
                driver.set_function_attribute(fn, "NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1, required=False)
        except BaseException:
            driver.unload_module(mod)
            raise
        return LoadedModule(key, name, kernel, mod, fn, n_regs, local // 4, max_threads)

    @staticmethod
    def _allow_large_shared(fn, optin, name, oversized_shared):
        """Give the function the device's opt-in maximum of dynamic shared memory, as Triton does."""
        oversized = driver.number("CU_SHARED_MEMORY_MODE_ALLOW_OVERSIZED_SHARED_MEMORY")
        if oversized_shared and driver.set_function_attribute(fn, "SHARED_MEMORY_MODE", oversized, required=False):
            return  # newer drivers: the kernel may use oversized shared memory (Triton 3.8+ tries this first)
        driver.prefer_shared_memory(fn)
        static = driver.function_attribute(fn, "SHARED_SIZE_BYTES")
        driver.set_function_attribute(fn, "MAX_DYNAMIC_SHARED_SIZE_BYTES", optin - static,
                                      f"allowing {optin - static} bytes of dynamic shared memory for kernel {name!r}")


_process_cache: list = []  # the process-wide ModuleCache, made on first use
_process_cache_lock = threading.Lock()


def module_cache() -> ModuleCache:
    """The process-wide module cache (created on first use): what Triton's loads (after
    launcher.install()), prepared launches and bundles share."""
    with _process_cache_lock:
        if not _process_cache:
            _process_cache.append(ModuleCache())
        return _process_cache[0]
