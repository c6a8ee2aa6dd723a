"""`CudaUtils`: what Triton's NVIDIA driver compiles from driver.c, supplied without a compiler.

Every Triton release compiles `driver.c` into a `cuda_utils` module with gcc the first time
its NVIDIA driver is used. This class offers the same functions, through launcher.driver, for
the installed Triton release (3.6: fill_tma_descriptor; 3.7+: the tiled and im2col variants;
3.8+: unload_module and the device/stream helpers). Anything else Triton asks for (its own
`launch`, used only by kernels handed to the stock launcher) comes from the stock module,
compiled on first use as Triton would.
"""
from __future__ import annotations

import threading

from launcher import driver, triton_adapter
from launcher.modules import ModuleCache, max_shared_memory
from launcher.tensormap import encode_tiled


class CudaUtils:
    """Drop-in for `triton.backends.nvidia.driver.CudaUtils` (an instance of it)."""

    def __init__(self, module_cache: ModuleCache, stock_utils_cls=None, stock_utils=None):
        """stock_utils: Triton's own CudaUtils, where it was already made before install():
        launchers made before install() then keep getting Triton's own tensor-map type."""
        self.modules = module_cache
        self._stock_cls = stock_utils_cls
        self._stock = stock_utils
        self._stock_lock = threading.Lock()
        self._release = triton_adapter.release()
        setattr(self, self._release.fill_tma_name, self._fill_tma_descriptor)

    # -- modules --
    def load_binary(self, name, kernel, shared, device):
        return self.modules.load_binary(name, kernel, shared, device,
                                        oversized_shared=self._release.conventions.oversized_shared)

    def unload_module(self, module):
        if not self.modules.unload_module(module):  # loaded before install(), by stock code
            driver.unload_module(module)
        return None

    # -- devices --
    def get_device_properties(self, device):
        attr = driver.device_attribute
        return {
            "max_shared_mem": max_shared_memory(device, oversized=self._release.oversized_shared_limit),
            "max_num_regs": attr(device, "MAX_REGISTERS_PER_BLOCK"),
            "multiprocessor_count": attr(device, "MULTIPROCESSOR_COUNT"),
            "warpSize": attr(device, "WARP_SIZE"),
            "sm_clock_rate": attr(device, "CLOCK_RATE"),
            "mem_clock_rate": attr(device, "MEMORY_CLOCK_RATE"),
            "mem_bus_width": attr(device, "GLOBAL_MEMORY_BUS_WIDTH"),
        }

    def get_device_capability(self, device):
        return driver.device_capability(device)

    def get_current_device(self):
        return driver.current_device()

    def set_current_device(self, device):
        driver.set_current_device(device)

    def get_default_stream(self, device):
        driver.set_current_device(device)
        return 0

    def is_stream_capturing(self, stream):
        return driver.stream_is_capturing(stream)

    def cuOccupancyMaxActiveClusters(self, func, shared, cluster_dim):
        return driver.occupancy_max_active_clusters(func, shared, cluster_dim)

    def set_printf_fifo_size(self, size):
        if size < 0:
            raise ValueError("fifo size must be non-negative")
        driver.current_context(0)
        # Setting the limit after a kernel used printf fails even when unchanged: skip no-ops.
        if driver.printf_fifo_size() != size:
            driver.set_printf_fifo_size(size)

    # -- tensor maps --
    def _fill_tma_descriptor(self, global_address, swizzle, elem_size, elem_type, block_size,
                             shape, strides, padding):
        """fill_tma_descriptor (3.6) / fill_tma_descriptor_tiled (3.7+)."""
        if self._stock is not None:  # stock launchers made before install() need stock's type
            return getattr(self._stock, self._release.fill_tma_name)(
                global_address, swizzle, elem_size, elem_type, block_size, shape, strides, padding)
        return encode_tiled(global_address, swizzle, elem_size, elem_type, block_size, shape,
                            strides, padding, clear_bit21=self._release.conventions.tma_clear_bit21)

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
