"""The one module that touches the CUDA driver.

Two roads lead there, each for its own kind of call, and nothing else in launcher calls either:
- the hot path (every launch, and the current context or device) goes through our native
  library (cdefs/launcher.c, built by cffi at install time);
- every cold call (loading and unloading modules, function and device attributes, occupancy,
  stream capture, limits, pointer ownership, error names) goes through cuda.bindings.

Failures of both become one exception type, `CudaError`, made by one translator, `error()`.
Nothing here runs at import time: the native library is imported on first use and opens
libcuda.so.1 with dlopen only when something is launched; cuda.bindings is imported on first use.
"""
from __future__ import annotations

import functools
import struct
import threading

__all__ = ["CudaError", "CudaDriverNotFound", "PlanError", "native", "error", "check"]


class CudaError(RuntimeError):
    """A CUDA driver call failed. `code` is the CUresult, `name` its CUDA_ERROR_* name."""

    def __init__(self, code: int, name: str | None, text: str | None, context: str = ""):
        self.code = int(code)
        self.name = name or f"CUresult {self.code}"
        self.text = text or "unknown error"
        # Starts like Triton's own message, so code matching on that keeps working.
        where = f"; {context}" if context else ""
        super().__init__(f"Triton Error [CUDA]: {self.text} ({self.name}{where})")


class CudaDriverNotFound(CudaError):
    """libcuda.so.1 (the NVIDIA driver) could not be found or initialised."""

    def __init__(self, detail: str = ""):
        RuntimeError.__init__(
            self,
            "the CUDA driver was not found: libcuda.so.1 could not be opened or initialised"
            + (f" ({detail})" if detail else "")
            + "; launching kernels needs an NVIDIA GPU and its driver",
        )
        self.code, self.name, self.text = -1, "CUDA_DRIVER_NOT_FOUND", str(self)


class PlanError(ValueError):
    """The native library refused a launch plan or a packed buffer (see launcher_plan_new)."""


@functools.lru_cache(maxsize=None)
def native():
    """(ffi, lib) of the cffi extension built at install time."""
    try:
        from launcher import _native
    except ImportError as e:  # pragma: no cover - only for a broken install
        raise ImportError(
            "launcher's native library is not built; install the package with "
            "`pip install .` (it compiles cdefs/launcher.c with cffi)"
        ) from e
    return _native.ffi, _native.lib


def number(name: str) -> int:
    """A CUDA enum value the native header names (cdefs/launcher.h: CU_*, CUDA_ERROR_*): the one
    home of every driver number launcher uses; cuda.bindings is asked only for others."""
    return getattr(native()[1], name)


def _header_numbers(prefix: str) -> dict:
    """{name without `prefix`: number} of the header's enums whose names start with `prefix`."""
    lib = native()[1]
    return {n[len(prefix):]: getattr(lib, n) for n in dir(lib) if n.startswith(prefix)}


@functools.lru_cache(maxsize=None)
def _teardown() -> frozenset:
    """cuModuleUnload's results for a context already gone (process teardown): not errors."""
    return frozenset(number(n) for n in ("CUDA_ERROR_DEINITIALIZED", "CUDA_ERROR_INVALID_CONTEXT",
                                         "CUDA_ERROR_CONTEXT_IS_DESTROYED"))


def __getattr__(name):  # PEP 562: the header's numbers under the names callers and tests know
    if name == "FUNCTION_ATTRIBUTES":
        return _header_numbers("CU_FUNC_ATTRIBUTE_")
    if name == "DEVICE_ATTRIBUTES":
        return _header_numbers("CU_DEVICE_ATTRIBUTE_")
    if name == "CU_FUNC_CACHE_PREFER_SHARED":
        return number(name)
    if name == "_TEARDOWN":
        return _teardown()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---- errors: one translator for both roads ----
def _error_names(code: int):
    """(CUDA_ERROR_* name, description) of a CUresult, from the driver; (None, None) without one."""
    try:
        cu = _bindings(init=False)
        e1, name = cu.cuGetErrorName(cu.CUresult(code))
        e2, text = cu.cuGetErrorString(cu.CUresult(code))
    except Exception:  # no driver, or a code the bindings do not know
        return None, None
    return (name.decode() if int(e1) == 0 and name else None,
            text.decode() if int(e2) == 0 and text else None)


_OWN_ERRORS = {  # our negative status codes: (name, text)
    "LAUNCHER_ERROR_BAD_POINTER": "a pointer argument cannot be accessed from the current device",
    "LAUNCHER_ERROR_BAD_PLAN": "malformed launch plan",
    "LAUNCHER_ERROR_BAD_BUFFER": "the packed argument buffer does not have the plan's size",
    "LAUNCHER_ERROR_BAD_GRID": "the grid (times the cluster size) does not fit the driver's 32-bit dimensions",
    "LAUNCHER_ERROR_NO_MEMORY": "out of host memory",
    "LAUNCHER_ERROR_BAD_GEOMETRY": "a tensor map's rank, sizes or strides are out of range",
}


def error(status: int, context: str = "") -> Exception:
    """The exception for a failed driver call: a CUresult, or a status of our native library."""
    _, lib = native()
    status = int(status)
    if status == lib.LAUNCHER_ERROR_NO_DRIVER:
        return CudaDriverNotFound("dlopen failed")
    if status == lib.LAUNCHER_ERROR_NO_SYMBOL:
        return CudaDriverNotFound("libcuda.so.1 is too old: a driver function is missing")
    if status in (lib.LAUNCHER_ERROR_BAD_PLAN, lib.LAUNCHER_ERROR_BAD_BUFFER):
        name = "LAUNCHER_ERROR_BAD_PLAN" if status == lib.LAUNCHER_ERROR_BAD_PLAN else "LAUNCHER_ERROR_BAD_BUFFER"
        return PlanError(f"{context}: {_OWN_ERRORS[name]}" if context else _OWN_ERRORS[name])
    for name, text in _OWN_ERRORS.items():
        if status == getattr(lib, name):
            return CudaError(status, name, text, context)
    name, text = _error_names(status)
    return CudaError(status, name, text, context)


def check(result, context: str = ""):
    """Unwrap a cuda.bindings result `(CUresult, *values)`, raising `error()` on failure."""
    err, *values = result if isinstance(result, tuple) else (result,)
    code = int(err)
    if code != 0:
        raise error(code, context)
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def ensure_driver() -> None:
    """Open and initialise libcuda.so.1, or raise CudaDriverNotFound / CudaError."""
    status = native()[1].launcher_driver_init()
    if status != 0:
        raise error(status, "cuInit")


_bindings_lock = threading.Lock()
_bindings_module = None


def _bindings(init: bool = True):
    """cuda.bindings.driver; with init, the driver is opened and initialised (cuInit) once."""
    global _bindings_module
    if not init:
        from cuda.bindings import driver as cudrv

        return cudrv
    if _bindings_module is None:
        with _bindings_lock:
            if _bindings_module is None:
                ensure_driver()
                from cuda.bindings import driver as cudrv

                check(cudrv.cuInit(0), "cuInit")
                _bindings_module = cudrv
    return _bindings_module


# ---- the hot path: our native library ----
def current_context(device: int) -> int:
    """The current CUDA context (a handle), or `device`'s primary context made current when
    there is none, as Triton's load_binary does."""
    ffi, lib = native()
    status = ffi.new("int *")
    ctx = lib.launcher_current_context(device, status)
    if status[0]:
        raise error(status[0], f"making a context current on device {device}")
    return ctx


def current_device() -> int:
    """The device of the current context (device 0's primary context when there is none)."""
    ffi, lib = native()
    status = ffi.new("int *")
    device = lib.launcher_current_device(status)
    if status[0]:
        raise error(status[0], "finding the current device")
    return device


_PLAN_DETAIL = {  # launcher_plan_new's reasons, in words
    "LAUNCHER_PLAN_TOO_MANY_PARAMS": "too many parameters ({where})",
    "LAUNCHER_PLAN_BAD_SIZE": "packed size {where} is below the header or above the parameter space",
    "LAUNCHER_PLAN_BAD_KIND": "parameter {where} has an unknown kind",
    "LAUNCHER_PLAN_BAD_PARAM_SIZE": "parameter {where} has a size that is not positive or wrong for its kind",
    "LAUNCHER_PLAN_BAD_OFFSET": "parameter {where} lies outside the packed buffer, overlaps its header "
                                "or is misaligned for its kind",
    "LAUNCHER_PLAN_TOO_LARGE": "the parameters take {where} bytes, more than a kernel can take",
    "LAUNCHER_PLAN_BAD_ATTRS": "launch attribute {where} is unknown, or there are too many",
    "LAUNCHER_PLAN_BAD_BLOCK": "the block size or cluster size is zero",
}


def make_plan(offsets, sizes, kinds, args_size: int, block_x: int, shared: int, cluster_x: int,
              attrs=(), context: str = "launch plan"):
    """A validated native launch plan (freed when the returned object is collected).

    attrs: (id, (x, y, z)) launch attributes. Raises PlanError naming what is wrong."""
    ffi, lib = native()
    n = len(offsets)
    if not (len(sizes) == len(kinds) == n):
        raise PlanError(f"{context}: {n} offsets, {len(sizes)} sizes and {len(kinds)} kinds")
    u32 = (0, (1 << 32) - 1)
    for label, v in (("block size", block_x), ("shared memory", shared), ("cluster size", cluster_x)):
        if not u32[0] <= v <= u32[1]:
            raise PlanError(f"{context}: {label} {v} is out of range")
    try:  # one int array: offsets, sizes, attribute ids, then the two outputs (detail, where)
        ints = ffi.new("int[]", [*offsets, *sizes, *(a[0] for a in attrs), 0, 0])
        c_kinds = ffi.new("unsigned char[]", list(kinds))
        c_values = ffi.new("uint32_t[]", [v for a in attrs for v in a[1]]) if attrs else ffi.NULL
    except (OverflowError, TypeError) as e:
        raise PlanError(f"{context}: {e}") from None
    out = n + n + len(attrs)
    plan = lib.launcher_plan_new(n, ints, ints + n, c_kinds, args_size, block_x, shared, cluster_x,
                                 len(attrs), ints + 2 * n, c_values, ints + out, ints + out + 1)
    if plan == ffi.NULL:
        detail, where = ints[out], ints[out + 1]
        if detail == -1:
            raise MemoryError(f"{context}: out of memory")
        reason = next((text for name, text in _PLAN_DETAIL.items() if getattr(lib, name) == detail),
                      f"reason {detail}")
        raise PlanError(f"{context}: {reason.format(where=where)}")
    return ffi.gc(plan, lib.launcher_plan_free)


def dry_run_size(plan) -> int:
    return native()[1].launcher_plan_dry_run_size(plan)


def launch_entries() -> tuple:
    """The C entries the generated code calls: launch (plan, buf, len) and dry run (plan, buf,
    len, out, out_len)."""
    lib = native()[1]
    return lib.launcher_launch, lib.launcher_dry_run


def address(cdata) -> int:
    """The address a native pointer (a plan, a bound launch) holds, as an int."""
    ffi = native()[0]
    return int(ffi.cast("uintptr_t", cdata))


def entry_address(name: str) -> int:
    """The address of the native library's function `name` (launcher._call calls it directly)."""
    ffi, lib = native()
    return int(ffi.cast("uintptr_t", ffi.addressof(lib, name)))


def bind(plan, buf: bytes):
    """A native launch packed once: (handle, launch function, repeat function)."""
    ffi, lib = native()
    status = ffi.new("int *")
    bound = lib.launcher_bound_new(plan, buf, len(buf), status)
    if bound == ffi.NULL:
        raise error(status[0], "binding a launch")
    return ffi.gc(bound, lib.launcher_bound_free), lib.launcher_bound_launch, lib.launcher_bound_repeat


def bound_sequence(handles: list, stream: int, count: int) -> tuple:
    """The bound launches `handles` (bind's) one after another, `count` times, in one C loop on
    `stream`: (status, index of the launch a failure is about)."""
    ffi, lib = native()
    if not 0 < len(handles) <= lib.LAUNCHER_SEQUENCE_MAX:
        raise ValueError(f"a sequence is 1 to {lib.LAUNCHER_SEQUENCE_MAX} bound launches, got {len(handles)}")
    failed = ffi.new("int *")
    status = lib.launcher_bound_sequence(ffi.new("launcher_bound *[]", handles), len(handles), stream, count, failed)
    return status, failed[0]


def last_bad_param() -> int:
    return native()[1].launcher_last_bad_param()


def pointer_cache_stats() -> tuple:
    """(range-cache hits in this thread, driver queries in all threads)."""
    ffi, lib = native()
    hits, misses = ffi.new("uint64_t *"), ffi.new("uint64_t *")
    lib.launcher_pointer_cache_stats(hits, misses)
    return hits[0], misses[0]


def pointer_cache_clear() -> None:
    native()[1].launcher_pointer_cache_clear()


def struct_format(ctype: str) -> str:
    """The `struct` format (little-endian, no padding) of a C struct of the native header, read
    from ffi, so that Python packs it without repeating its layout."""
    ffi, _ = native()
    codes = {"uint64_t": "Q", "int64_t": "q", "uint32_t": "I", "int32_t": "i"}
    t = ffi.typeof(ctype)
    fmt = "<"
    for _, f in t.fields:
        if f.type.kind == "array":
            fmt += f"{f.type.length}{codes[f.type.item.cname]}"
        else:
            fmt += codes[f.type.cname]
    if struct.calcsize(fmt) != ffi.sizeof(t):
        raise ImportError(f"{ctype} has padding the packer does not know: rebuild launcher")
    return fmt


def encode_tensor(elem_type: int, global_address: int, shape, strides, box, elem_size: int, interleave: int,
                  swizzle: int, l2_promotion: int, oob_fill: int, clear_bit21_below: int = 0) -> bytes:
    """The 128 bytes of a tiled CUtensorMap (launcher_encode_tensor_map): `shape` and `strides` (in
    elements) outermost first, `box` innermost first. Raises ValueError for a geometry out of
    range or a global address the current context cannot reach."""
    return tensor_map_encoder(elem_type, box, elem_size, interleave, swizzle, l2_promotion, oob_fill,
                              clear_bit21_below)(global_address, shape, strides)


def tensor_map_encoder(elem_type: int, box, elem_size: int, interleave: int, swizzle: int, l2_promotion: int,
                       oob_fill: int, clear_bit21_below: int = 0):
    """encode(global_address, shape, strides) -> bytes: encode_tensor for tensor maps that share
    everything but the tensor (what a descriptor encoder calls for each new one): the format is
    made once, and each encode is one C call with the address and one array of sizes and strides."""
    ffi, lib = native()
    rank = len(box)
    try:
        fmt = ffi.new("launcher_tensor_map_format *", {
            "elem_type": elem_type, "rank": rank, "box": list(box), "elem_size": elem_size, "interleave": interleave,
            "swizzle": swizzle, "l2_promotion": l2_promotion, "oob_fill": oob_fill,
            "clear_bit21_below": clear_bit21_below})
    except (OverflowError, TypeError, IndexError, ValueError):
        fmt = None  # every encode refuses the geometry (a rank above 5, a box entry out of range)
    char128, new, unpack, c_encode = ffi.typeof("char[128]"), ffi.new, ffi.unpack, lib.launcher_encode_tensor_map
    bad_geometry = lib.LAUNCHER_ERROR_BAD_GEOMETRY

    def encode(global_address, shape, strides):
        if len(shape) != rank or len(strides) != rank:  # the C reads `rank` entries of each
            raise ValueError(f"tensor map shape {list(shape)}, strides {list(strides)} and block "
                             f"{list(box)[::-1]} have different ranks")
        out = new(char128)
        try:
            rc = c_encode(out, fmt, global_address, (*shape, *strides)) if fmt is not None else bad_geometry
        except (OverflowError, TypeError):
            rc = bad_geometry
        if not rc:
            return unpack(out, 128)
        if rc == bad_geometry:
            raise ValueError(f"tensor map shape {list(shape)}, strides {list(strides)} and block {list(box)[::-1]} "
                             f"must be one to five non-negative 64-bit sizes each (the block positive)")
        if rc == lib.LAUNCHER_ERROR_BAD_POINTER:
            raise ValueError(f"tensor descriptor base {global_address:#x} cannot be accessed from the "
                             "device (a CPU tensor?)")
        raise error(rc, "cuTensorMapEncodeTiled")

    encode.format = fmt  # for launcher._call.DescEncoder, which calls the C function itself (None: refused)
    return encode


# ---- the cold path: cuda.bindings ----
def device_count() -> int:
    cu = _bindings()
    return int(check(cu.cuDeviceGetCount(), "cuDeviceGetCount"))


def _device(ordinal: int):
    cu = _bindings()
    return cu, check(cu.cuDeviceGet(ordinal), f"cuDeviceGet({ordinal})")


def device_attribute(device: int, name) -> int:
    """cuDeviceGetAttribute of device ordinal `device`; `name` without the
    CU_DEVICE_ATTRIBUTE_ prefix (e.g. "WARP_SIZE"), or an int for an attribute the installed
    bindings do not name yet."""
    attr = _attribute_number(name, "CUdevice_attribute", "CU_DEVICE_ATTRIBUTE_")
    return _out_call("int *", "launcher_device_get_attribute", int(device), attr,
                     context=f"cuDeviceGetAttribute({name}) of device {device}")


def device_capability(device: int) -> tuple:
    return (device_attribute(device, "COMPUTE_CAPABILITY_MAJOR"),
            device_attribute(device, "COMPUTE_CAPABILITY_MINOR"))


def device_name(device: int) -> str:
    cu, dev = _device(device)
    raw = check(cu.cuDeviceGetName(256, dev), "cuDeviceGetName")
    return raw.split(b"\0")[0].decode()


@functools.lru_cache(maxsize=None)
def driver_version() -> int:
    """The CUDA driver's version, e.g. 13000 for 13.0 (asked once: it cannot change in a process)."""
    return _out_call("int *", "launcher_driver_version", context="cuDriverGetVersion")


def set_current_device(device: int) -> None:
    cu, dev = _device(device)
    ctx = check(cu.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")


# The attributes a kernel's load asks for are named in the native header (cdefs/launcher.h:
# CU_FUNC_ATTRIBUTE_*, CU_DEVICE_ATTRIBUTE_*), so that the load goes through the native library
# and never imports cuda.bindings; tests/test_header_codes.py holds them to cuda.bindings. Other
# names are looked up in cuda.bindings.
def _attribute_number(name, enum_name: str, prefix: str) -> int:
    if isinstance(name, int):
        return name
    value = getattr(native()[1], prefix + name, None)
    if value is None:
        value = int(getattr(getattr(_bindings(init=False), enum_name), prefix + name))
    return value


def _out_call(ctype: str, entry: str, *args, context: str):
    """Call the native `entry` with `args` and an out-pointer of `ctype` last: the value it
    wrote, or error(status, context) raised."""
    ffi, lib = native()
    out = ffi.new(ctype)
    status = getattr(lib, entry)(*args, out)
    if status:
        raise error(status, context)
    return out[0]


def load_module(image: bytes, name: str) -> int:
    return _out_call("uint64_t *", "launcher_module_load", image, context=f"loading kernel {name!r} (cuModuleLoadData)")


def unload_module(module: int, context: str = "cuModuleUnload") -> None:
    """Unload a module. An unload can only fail for a context already destroyed (process
    teardown), which is not an error."""
    status = native()[1].launcher_module_unload(int(module))
    if status and status not in _teardown():
        raise error(status, context)


def module_function(module: int, name: str) -> int:
    return _out_call("uint64_t *", "launcher_module_function", int(module), name.encode(),
                     context=f"cuModuleGetFunction({name!r})")


def function_attribute(function: int, name) -> int:
    """cuFuncGetAttribute; `name` without the CU_FUNC_ATTRIBUTE_ prefix, or a raw value."""
    attr = _attribute_number(name, "CUfunction_attribute", "CU_FUNC_ATTRIBUTE_")
    return _out_call("int *", "launcher_function_get_attribute", int(function), attr,
                     context=f"cuFuncGetAttribute({name})")


def set_function_attribute(function: int, name, value: int, context: str = "", *, required: bool = True) -> bool:
    """cuFuncSetAttribute; `name` without the CU_FUNC_ATTRIBUTE_ prefix, or a raw value.
    required=False: return False instead of raising when the driver (or the installed
    bindings) does not support it."""
    try:
        attr = _attribute_number(name, "CUfunction_attribute", "CU_FUNC_ATTRIBUTE_")
    except (ValueError, AttributeError):
        if required:
            raise
        return False
    status = native()[1].launcher_function_set_attribute(int(function), attr, int(value))
    if status:
        if required:
            raise error(status, context or f"cuFuncSetAttribute({name}, {value})")
        return False
    return True


def prefer_shared_memory(function: int) -> None:
    lib = native()[1]
    status = lib.launcher_function_set_cache_config(int(function), lib.CU_FUNC_CACHE_PREFER_SHARED)
    if status:
        raise error(status, "cuFuncSetCacheConfig")


def stream_is_capturing(stream: int) -> bool:
    cu = _bindings()
    status = check(cu.cuStreamIsCapturing(cu.CUstream(int(stream))), "cuStreamIsCapturing")
    return int(status) != int(cu.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE)


def occupancy_max_active_clusters(function: int, shared: int, cluster_dim: int) -> int:
    """Triton's cuOccupancyMaxActiveClusters utility (128 threads, a (cluster_dim, 1, 1) grid)."""
    cu = _bindings()
    set_function_attribute(function, "MAX_DYNAMIC_SHARED_SIZE_BYTES", shared)
    set_function_attribute(function, "NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1)
    attr = cu.CUlaunchAttribute()
    attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster_dim, 1, 1
    config = cu.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = cluster_dim, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = 128, 1, 1
    config.sharedMemBytes = shared
    config.hStream = cu.CUstream(0)
    config.attrs = [attr]
    config.numAttrs = 1
    return int(check(cu.cuOccupancyMaxActiveClusters(cu.CUfunction(int(function)), config),
                     "cuOccupancyMaxActiveClusters"))


def printf_fifo_size() -> int:
    cu = _bindings()
    return int(check(cu.cuCtxGetLimit(cu.CUlimit.CU_LIMIT_PRINTF_FIFO_SIZE), "cuCtxGetLimit"))


def set_printf_fifo_size(size: int) -> None:
    cu = _bindings()
    check(cu.cuCtxSetLimit(cu.CUlimit.CU_LIMIT_PRINTF_FIFO_SIZE, size), "cuCtxSetLimit")


def pointer_owner(address: int) -> tuple:
    """(current device, the other device whose context reaches `address`, or None).
    For error messages only: it makes each other device's primary context current in turn."""
    cu = _bindings()
    current = int(check(cu.cuCtxGetDevice(), "cuCtxGetDevice"))
    A = cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_POINTER
    for ordinal in range(device_count()):
        if ordinal == current:
            continue
        dev = check(cu.cuDeviceGet(ordinal), "cuDeviceGet")
        ctx = check(cu.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        try:
            check(cu.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
            try:
                err, _ = cu.cuPointerGetAttribute(A, address)
            finally:
                cu.cuCtxPopCurrent()
        finally:
            cu.cuDevicePrimaryCtxRelease(dev)
        if int(err) == 0:
            return current, ordinal
    return current, None
