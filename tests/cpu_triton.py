"""Triton's JIT on a machine without a GPU, for the bundle tests.

`CpuDriver` is a Triton driver (triton.runtime.driver.set_active) that targets a chosen
NVIDIA architecture and "launches" every kernel with launcher's dry run: the real argument
checks and packing through the C library, with the bytes each parameter would receive
recorded instead of a driver call. No kernel runs and nothing here stands in for a launch on
a GPU (tests/test_gpu_bundles.py launches on the H200): it lets `kernel[grid](...)`,
`kernel.warmup(...)`, @triton.autotune and @triton.heuristics run their Python side, so that
what launcher.capture records can be tested on CI.
"""
from __future__ import annotations

import contextlib
import operator
import struct
from dataclasses import dataclass


@dataclass
class Launch:
    name: str
    spec: object  # the LaunchSpec of what ran
    grid: tuple
    params: list  # bytes per kernel parameter


class _Utils:
    def __init__(self):
        self.loaded = 0

    def load_binary(self, name, kernel, shared, device):
        self.loaded += 1
        return (self.loaded, 0x1000 + self.loaded, 32, 0, 1024)

    def unload_module(self, module):
        return None

    def get_device_properties(self, device):
        return {"max_shared_mem": 232448, "max_num_regs": 65536, "multiprocessor_count": 132, "warpSize": 32,
                "sm_clock_rate": 1980000, "mem_clock_rate": 2619000, "mem_bus_width": 5120}


class CpuDriver:
    """A Triton driver for `arch` whose launches are launcher dry runs (see the module docstring)."""

    def __init__(self, arch: int = 90, quiet: bool = False):
        from triton.backends.compiler import GPUTarget

        self.target = GPUTarget("cuda", arch, 32)
        self.quiet = quiet  # launches record nothing (bench/hit_instructions.py counts a hit's own work)
        self.utils = _Utils()
        self.launches: list[Launch] = []
        self.bench = None  # what autotuners benchmark with, when they ask the driver

    @staticmethod
    def is_active():
        return False

    def get_current_device(self):
        return 0

    def set_current_device(self, device):
        pass

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        return self.target

    def get_benchmarker(self):
        return self.bench

    def launcher_cls(self, src, metadata):
        from launcher import CudaLauncher

        real = CudaLauncher(src, metadata)

        def launch(gx, gy, gz, stream, function, kernel_metadata, launch_metadata, enter, exit_, *args):
            params = real.dry_run(gx, gy, gz, stream, function, kernel_metadata, launch_metadata, enter, exit_, *args)
            if not self.quiet:
                self.launches.append(Launch(metadata.name, real.spec, (gx, gy, gz), params))

        launch.checks_pointers = real.checks_pointers  # it is launcher's own launcher (a dry run of it)
        launch._launch_failed = real._launch_failed
        if self.quiet:  # the C dry run, whose record call (operator.is_, a C function) keeps nothing
            launch.flat_launch = lambda kernel_metadata: real.flat_launch(kernel_metadata, record=operator.is_)
        else:
            launch.flat_launch = recording_flat_launch(
                real, lambda grid, params: self.launches.append(Launch(metadata.name, real.spec, grid, params)))
        return launch


def recording_flat_launch(real, record):
    """A stand-in for `real.flat_launch` (a CudaLauncher's: the C call in which the fast
    dispatch's hits pack and launch) that is the C dry run of the same checks and plan, each
    launch recorded as record(grid, bytes of each parameter)."""
    from launcher.spec import HEADER_FORMAT

    def flat_launch(kernel_metadata):
        def recorded(packed, out):
            _, _, gx, gy, gz, _ = struct.unpack_from("<" + HEADER_FORMAT, packed)
            record((gx, gy, gz), real._shape.split_bytes(out))

        return real.flat_launch(kernel_metadata, record=recorded)

    return flat_launch


@contextlib.contextmanager
def cpu_triton(arch: int = 90, *jit_functions, quiet: bool = False):
    """Make `CpuDriver(arch, quiet)` Triton's active driver for the block. The JIT caches of
    `jit_functions` are emptied on the way out, so their kernels die while it is active."""
    import triton
    from triton.runtime.driver import driver

    d = CpuDriver(arch, quiet)
    old = driver._active
    driver.set_active(d)
    old_alloc = None
    try:
        from triton.runtime import _allocation

        old_alloc = _allocation._allocator.get()

        class Scratch:
            def __init__(self, ptr):
                self.ptr = ptr

            def data_ptr(self):
                return self.ptr

        triton.set_allocator(lambda size, align, stream: Scratch(0x7E0000000000))
        yield d
    finally:
        for fn in jit_functions:
            base = fn
            while hasattr(base, "fn") and not hasattr(base, "device_caches"):
                base = base.fn
            caches = getattr(base, "device_caches", None)
            if caches is not None:
                caches.clear()
            if hasattr(fn, "cache") and isinstance(fn.cache, dict):
                fn.cache.clear()
        import gc

        gc.collect()  # kernels that die now unload through this driver (Triton 3.9's __del__)
        if old_alloc is not None:
            from triton.runtime import _allocation

            _allocation._allocator.set(old_alloc)
        driver._active = old


class FakeTensor:
    """data_ptr() and a Triton dtype (or its name): a tensor as Triton's JIT or a prepared launch sees one
    (no torch on CI)."""

    def __init__(self, ptr, dtype):
        self.ptr, self.dtype = ptr, dtype

    def data_ptr(self):
        return self.ptr

    def __repr__(self):
        return f"FakeTensor({self.ptr:#x}, {self.dtype})"


class Raising(FakeTensor):
    """A tensor whose data_ptr() raises RuntimeError("no address")."""

    def data_ptr(self):
        raise RuntimeError("no address")


class NoDtype:
    """A tensor-like whose dtype raises RuntimeError("no dtype") (its data_ptr() answers)."""

    def __init__(self, address):
        self.address = address

    def data_ptr(self):
        return self.address

    @property
    def dtype(self):
        raise RuntimeError("no dtype")


def triton_specialization(fn, *args, **kwargs):
    """What Triton's JIT computes for a call of JIT function `fn` (the CpuDriver must be active):
    (specialization list, options) from its own binder."""
    binder = fn.device_caches[0][4]
    _bound, specialization, options = binder(*args, **kwargs)
    return specialization, options
