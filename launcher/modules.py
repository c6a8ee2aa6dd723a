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
_SHARED_MEMORY_MODE, _ALLOW_OVERSIZED = 17, 3  # CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE (CUDA 13.1+)


def _default_capacity() -> int:
    value = os.environ.get("LAUNCHER_MODULE_CACHE_SIZE", "")
    try:
        return max(0, int(value)) if value else DEFAULT_CAPACITY
    except ValueError:
        raise ValueError(f"LAUNCHER_MODULE_CACHE_SIZE must be a non-negative int, got {value!r}") from None


def device_attribute(device: int, name_or_value) -> int:
    """cuDeviceGetAttribute of device ordinal `device`: a CU_DEVICE_ATTRIBUTE_* name (without
    the prefix, e.g. "WARP_SIZE") or a raw enum value."""
    cu = driver.cu()
    A = cu.CUdevice_attribute
    attr = getattr(A, "CU_DEVICE_ATTRIBUTE_" + name_or_value) if isinstance(name_or_value, str) else A(name_or_value)
    dev = driver.check(cu.cuDeviceGet(device), f"cuDeviceGet({device})")
    return driver.check(cu.cuDeviceGetAttribute(attr, dev), "cuDeviceGetAttribute")


def device_capability(device: int) -> tuple:
    return (device_attribute(device, "COMPUTE_CAPABILITY_MAJOR"),
            device_attribute(device, "COMPUTE_CAPABILITY_MINOR"))


def max_shared_memory(device: int) -> int:
    """Shared memory a block may use on `device`: the opt-in maximum, or on sm_107 with
    Triton 3.8+ the oversized maximum (Triton's get_device_properties()["max_shared_mem"])."""
    from launcher.versions import triton_version

    if device_capability(device) == (10, 7) and triton_version() >= (3, 8):
        return device_attribute(device, 150)  # CU_DEVICE_ATTRIBUTE_MAX_OVERSIZED_SHARED_MEMORY_PER_BLOCK
    return device_attribute(device, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")


class SharedMemoryError(ValueError):
    """A kernel asks for more shared memory than the device can give a block."""


@dataclass
class LoadedModule:
    key: tuple  # (hash of the cubin, its length, kernel name, context handle)
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


def current_context(device: int) -> int:
    """The current CUDA context (a handle), or `device`'s primary context made current when
    there is none, as Triton's load_binary does. Asked of the native library: it is on the
    path of every module-cache hit."""
    ffi, lib = driver.native()
    status = ffi.new("int *")
    ctx = lib.launcher_current_context(device, status)
    if status[0]:
        raise driver.error_from_status(status[0], f"making a context current on device {device}")
    return ctx


class ModuleCache:
    """Reference-counted, bounded cache of loaded cubin modules. Thread-safe."""

    def __init__(self, capacity: int | None = None):
        self._capacity = _default_capacity() if capacity is None else int(capacity)
        self._lock = threading.Lock()
        self._entries: dict = {}  # key -> LoadedModule
        self._by_module: dict = {}  # module handle -> LoadedModule
        self._idle = collections.OrderedDict()  # key -> None, unreferenced, oldest first
        self._key_locks: dict = {}  # key -> Lock held while that key loads
        self.stats = CacheStats()
        self._shared_warned = set()

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
    def load_binary(self, name: str, kernel: bytes, shared: int, device: int) -> tuple:
        """Triton's utils.load_binary: (module, function, n_regs, n_spills, n_max_threads)."""
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
                entry = self._load(key, name, kernel, shared)
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
        return entry

    def _update_stats_locked(self):
        s = self.stats
        s.modules = len(self._entries)
        s.held = sum(1 for e in self._entries.values() if e.refs > 0)
        s.bytes_held = sum(e.size for e in self._entries.values())

    def _unload(self, entries):
        for entry in entries:
            self._unload_module(entry)
            with self._lock:
                self.stats.unloads += 1

    # -- the driver calls (a test double of the cache's bookkeeping overrides these three) --
    def _context(self, device: int) -> int:
        return current_context(device)

    def _unload_module(self, entry: LoadedModule) -> None:
        cu = driver.cu()
        err, = cu.cuModuleUnload(cu.CUmodule(entry.module))
        # An unload can only fail for a context already destroyed (process teardown).
        if int(err) not in (0, int(cu.CUresult.CUDA_ERROR_DEINITIALIZED),
                            int(cu.CUresult.CUDA_ERROR_CONTEXT_IS_DESTROYED),
                            int(cu.CUresult.CUDA_ERROR_INVALID_CONTEXT)):
            driver.check((err,), f"cuModuleUnload of kernel {entry.key[1]!r}")

    def _load(self, key, name, kernel, shared) -> LoadedModule:
        cu = driver.cu()
        A = cu.CUfunction_attribute
        dev = driver.check(cu.cuCtxGetDevice(), "cuCtxGetDevice")
        optin = driver.check(cu.cuDeviceGetAttribute(
            cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev),
            "cuDeviceGetAttribute")
        limit = max_shared_memory(int(dev))
        if shared > limit:
            raise SharedMemoryError(
                f"kernel {name!r} needs {shared} bytes of shared memory; device {int(dev)} "
                f"allows at most {limit} per block")
        mod = driver.check(cu.cuModuleLoadData(kernel), f"loading kernel {name!r} (cuModuleLoadData)")
        try:
            fn = driver.check(cu.cuModuleGetFunction(mod, name.encode()), f"cuModuleGetFunction({name!r})")
            n_regs = driver.check(cu.cuFuncGetAttribute(A.CU_FUNC_ATTRIBUTE_NUM_REGS, fn), "cuFuncGetAttribute")
            local = driver.check(cu.cuFuncGetAttribute(A.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn), "cuFuncGetAttribute")
            max_threads = driver.check(cu.cuFuncGetAttribute(A.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn),
                                       "cuFuncGetAttribute")
            if shared > _SMALL_SHARED and optin > _SMALL_SHARED:
                self._allow_large_shared(cu, fn, dev, optin, name)
        except BaseException:
            cu.cuModuleUnload(mod)
            raise
        return LoadedModule(key, kernel, int(mod), int(fn), int(n_regs), int(local) // 4, int(max_threads))

    @staticmethod
    def _allow_large_shared(cu, fn, dev, optin, name):
        """Give the function the device's opt-in maximum of dynamic shared memory, as Triton does."""
        from launcher.versions import triton_version

        if triton_version() >= (3, 8) and _has_attr(cu, _SHARED_MEMORY_MODE):
            # Newer drivers: let the kernel use oversized shared memory (Triton 3.8+ tries this first).
            err, = cu.cuFuncSetAttribute(fn, cu.CUfunction_attribute(_SHARED_MEMORY_MODE), _ALLOW_OVERSIZED)
            if int(err) == 0:
                return
        A = cu.CUfunction_attribute
        driver.check(cu.cuFuncSetCacheConfig(fn, cu.CUfunc_cache.CU_FUNC_CACHE_PREFER_SHARED), "cuFuncSetCacheConfig")
        static = driver.check(cu.cuFuncGetAttribute(A.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn), "cuFuncGetAttribute")
        driver.check(cu.cuFuncSetAttribute(fn, A.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin - static),
                     f"allowing {optin - static} bytes of dynamic shared memory for kernel {name!r}")


def _has_attr(cu, value: int) -> bool:
    try:
        cu.CUfunction_attribute(value)
        return True
    except ValueError:
        return False
