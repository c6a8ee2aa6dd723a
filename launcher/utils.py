"""`CudaUtils`: what Triton's NVIDIA driver compiles from driver.c, supplied without a compiler.

Every Triton release compiles `driver.c` into a `cuda_utils` module with gcc the first time
its NVIDIA driver is used. This class offers the same functions from our precompiled library
and cuda.bindings, for the installed Triton version (3.6: fill_tma_descriptor; 3.7+: the tiled
and im2col variants; 3.8+: unload_module and the device/stream helpers). Anything else Triton
asks for (its own `launch`, used only by kernels handed to the stock launcher) comes from the
stock module, compiled on first use as Triton would.
"""
from __future__ import annotations

import threading

from launcher import driver
from launcher.modules import ModuleCache, current_context, device_attribute, device_capability, max_shared_memory
from launcher.tensormap import TensorMap, encode_tiled
from launcher.versions import triton_version


class CudaUtils:
    """Drop-in for `triton.backends.nvidia.driver.CudaUtils` (an instance of it)."""

    def __init__(self, module_cache: ModuleCache, stock_utils_cls=None, stock_utils=None):
        """stock_utils: Triton's own CudaUtils, where it was already made before install():
        launchers made before install() then keep getting Triton's own tensor-map type."""
        self.modules = module_cache
        self._stock_cls = stock_utils_cls
        self._stock = stock_utils
        self._stock_lock = threading.Lock()
        if triton_version() < (3, 7):
            self.fill_tma_descriptor = self.fill_tma_descriptor_tiled

    # -- modules --
    def load_binary(self, name, kernel, shared, device):
        return self.modules.load_binary(name, kernel, shared, device)

    def unload_module(self, module):
        if not self.modules.owns(module):  # loaded before install(), by stock code
            cu = driver.cu()
            driver.check(cu.cuModuleUnload(cu.CUmodule(int(module))), "cuModuleUnload")
        else:
            self.modules.unload_module(module)
        return None

    # -- devices --
    def get_device_properties(self, device):
        return {
            "max_shared_mem": max_shared_memory(device),
            "max_num_regs": device_attribute(device, "MAX_REGISTERS_PER_BLOCK"),
            "multiprocessor_count": device_attribute(device, "MULTIPROCESSOR_COUNT"),
            "warpSize": device_attribute(device, "WARP_SIZE"),
            "sm_clock_rate": device_attribute(device, "CLOCK_RATE"),
            "mem_clock_rate": device_attribute(device, "MEMORY_CLOCK_RATE"),
            "mem_bus_width": device_attribute(device, "GLOBAL_MEMORY_BUS_WIDTH"),
        }

    def get_device_capability(self, device):
        return device_capability(device)

    def get_current_device(self):
        current_context(0)
        return int(driver.check(driver.cu().cuCtxGetDevice(), "cuCtxGetDevice"))

    def set_current_device(self, device):
        cu = driver.cu()
        dev = driver.check(cu.cuDeviceGet(device), f"cuDeviceGet({device})")
        ctx = driver.check(cu.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        driver.check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    def get_default_stream(self, device):
        self.set_current_device(device)
        return 0

    def is_stream_capturing(self, stream):
        cu = driver.cu()
        status = driver.check(cu.cuStreamIsCapturing(cu.CUstream(int(stream))), "cuStreamIsCapturing")
        return int(status) != int(cu.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE)

    def cuOccupancyMaxActiveClusters(self, func, shared, cluster_dim):
        cu = driver.cu()
        fn = cu.CUfunction(int(func))
        A = cu.CUfunction_attribute
        driver.check(cu.cuFuncSetAttribute(fn, A.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared),
                     "cuFuncSetAttribute")
        driver.check(cu.cuFuncSetAttribute(fn, A.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                     "cuFuncSetAttribute")
        attr = cu.CUlaunchAttribute()
        attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x = cluster_dim
        attr.value.clusterDim.y = 1
        attr.value.clusterDim.z = 1
        config = cu.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = cluster_dim, 1, 1
        config.blockDimX, config.blockDimY, config.blockDimZ = 128, 1, 1
        config.sharedMemBytes = shared
        config.hStream = cu.CUstream(0)
        config.attrs = [attr]
        config.numAttrs = 1
        return int(driver.check(cu.cuOccupancyMaxActiveClusters(fn, config), "cuOccupancyMaxActiveClusters"))

    def set_printf_fifo_size(self, size):
        if size < 0:
            raise ValueError("fifo size must be non-negative")
        cu = driver.cu()
        current_context(0)
        limit = cu.CUlimit.CU_LIMIT_PRINTF_FIFO_SIZE
        # Setting the limit after a kernel used printf fails even when unchanged: skip no-ops.
        if driver.check(cu.cuCtxGetLimit(limit), "cuCtxGetLimit") != size:
            driver.check(cu.cuCtxSetLimit(limit, size), "cuCtxSetLimit")

    # -- tensor maps --
    def fill_tma_descriptor_tiled(self, global_address, swizzle, elem_size, elem_type, block_size,
                                  shape, strides, padding):
        if self._stock is not None:  # stock launchers made before install() need stock's type
            fill = getattr(self._stock, "fill_tma_descriptor_tiled", None) or self._stock.fill_tma_descriptor
            return fill(global_address, swizzle, elem_size, elem_type, block_size, shape, strides, padding)
        return encode_tiled(global_address, swizzle, elem_size, elem_type, block_size, shape,
                            strides, padding, clear_bit21=triton_version() >= (3, 7))

    # -- what only the stock module has: compiled on first use, as Triton would --
    STOCK_ONLY = frozenset({"launch", "build_signature_metadata", "fill_tma_descriptor_im2col"})

    def __getattr__(self, name):
        if name not in self.STOCK_ONLY or self._stock_cls is None:
            raise AttributeError(f"launcher's CudaUtils has no {name!r}")
        return getattr(self.stock(), name)

    def stock(self):
        """Triton's own CudaUtils (compiling driver.c, as Triton does, on first use)."""
        with self._stock_lock:
            if self._stock is None:
                # Not stock_cls(): its __new__ names the module global we replaced.
                obj = object.__new__(self._stock_cls)
                self._stock_cls.__init__(obj)
                self._stock = obj
        return self._stock


PyCUtensorMap = TensorMap
