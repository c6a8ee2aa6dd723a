"""`CudaLauncher`: the launcher of a `LaunchSpec`, and Triton's `driver.active.launcher_cls`.

Triton builds one launcher per compiled kernel, `CudaLauncher(src, metadata)`, and calls it as

    launcher(gridX, gridY, gridZ, stream, function, kernel_metadata, launch_metadata,
             launch_enter_hook, launch_exit_hook, *args)

with every argument the kernel was called with (constexprs and nested tuples included).
Construction asks launcher.triton_adapter for the kernel's spec and nothing else of Triton;
`CudaLauncher.from_spec(spec)` makes the same launcher from a spec alone (bundles).

Kernels whose specs have the same shape (launcher.spec.LaunchSpec.shape_key) share one
subclass: its native launch plan (validated by the C library once), its argument encoders and
its generated code. A new shape's first launches run the plan-driven packer
(launcher.arguments); once the class has launched `HOT_AFTER` times, the fast path generated
for its shape (launcher.codegen) takes over. One cffi call then launches (the GIL is released
around it). When anything is wrong with the arguments, an exception names the kernel and the
parameter, before any hook or driver call.
"""
from __future__ import annotations

import collections.abc
import functools
import logging
import operator
import struct
import threading
import types

from launcher import arguments, codegen, driver, errors, triton_adapter
from launcher import spec as S
from launcher.tensormap import DescriptorEncoder, TensorMap, decomposer, tensormap_bytes

log = logging.getLogger("launcher")

# Launch attributes and their values (cdefs/launcher.h; CUDA's launch-attribute enums).
_SPREAD = 1  # CU_CLUSTER_SCHEDULING_POLICY_SPREAD
_OVERSIZED = 3  # CU_SHARED_MEMORY_MODE_ALLOW_OVERSIZED
_OVERSIZED_ABOVE = 228 * 1024  # Triton 3.8+ launches larger shared memory in the oversized mode


def launch_attributes(spec, num_ctas: int, shared: int) -> list:
    """The launch attributes of a kernel, in Triton's order: (id, (x, y, z))."""
    _, lib = driver.native()
    attrs = []
    if spec.conventions.oversized_shared and shared > _OVERSIZED_ABOVE:
        attrs.append((lib.LAUNCHER_ATTR_SHARED_MEMORY_MODE, (_OVERSIZED, 0, 0)))
    if spec.launch_pdl:
        attrs.append((lib.LAUNCHER_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION, (1, 0, 0)))
    if spec.launch_cooperative_grid:
        attrs.append((lib.LAUNCHER_ATTR_COOPERATIVE, (1, 0, 0)))
    cluster = spec.cluster_dims if num_ctas == spec.num_ctas else (num_ctas, 1, 1)
    if cluster != (1, 1, 1):
        attrs.append((lib.LAUNCHER_ATTR_CLUSTER_DIMENSION, tuple(cluster)))
        attrs.append((lib.LAUNCHER_ATTR_CLUSTER_SCHEDULING_POLICY_PREFERENCE, (_SPREAD, 0, 0)))
    return attrs


def native_plan(spec, num_warps: int, num_ctas: int, shared: int):
    """The validated native plan of `spec` launched with these warps, CTAs and shared memory."""
    _, lib = driver.native()
    kinds = {S.VALUE: lib.LAUNCHER_PARAM_VALUE, S.POINTER: lib.LAUNCHER_PARAM_POINTER,
             S.TENSORMAP: lib.LAUNCHER_PARAM_TENSORMAP}
    params = spec.layout.params
    return driver.make_plan([p.read_at for p in params], [p.size for p in params], [kinds[p.kind] for p in params],
                            spec.layout.size, spec.warp_size * num_warps, shared, num_ctas,
                            launch_attributes(spec, num_ctas, shared), context=f"kernel {spec.kernel!r}")


def _is_sequence(value) -> bool:
    return isinstance(value, collections.abc.Sequence)


class CudaLauncher:
    """Launches one compiled kernel described by a LaunchSpec (`self.spec`)."""

    # Launchers for unsupported kernels come from here (the stock class, set by install()).
    stock_launcher_cls = None
    # Every pointer, an int or a tensor's data_ptr(), is checked where it is packed (the C
    # library's LAUNCHER_ERROR_BAD_POINTER): the fast dispatch may hand it ints.
    checks_pointers = True
    HOT_AFTER = 2  # launches by the plan-driven packer before the generated fast path

    def __new__(cls, src, metadata):
        try:
            shape = triton_adapter.shape_spec(src, metadata)
        except (triton_adapter.UnsupportedKernel, S.UnsupportedSignature) as e:
            stock = cls.stock_launcher_cls
            name = getattr(metadata, "name", "?")
            if stock is None:
                raise errors.UnsupportedKernel(
                    f"kernel {name!r}: {e} is not supported by launcher and no stock Triton "
                    "launcher is available to fall back to") from None
            log.debug("kernel %r: %s; using the stock Triton launcher", name, e)
            return stock(src, metadata)
        # A launch needs only the shape (its class); the kernel's own spec is made on first use.
        self = object.__new__(shape_class(shape))
        self._triton = (shape, src, metadata)
        self.name = metadata.name
        self.global_allocator = triton_adapter.global_scratch_allocator
        self.profile_allocator = triton_adapter.profile_scratch_allocator
        return self

    @functools.cached_property
    def spec(self) -> S.LaunchSpec:
        """This kernel's LaunchSpec. A launcher Triton made derives it from its shape's on first
        use (the plan-driven packer, bind, dry runs, errors); from_spec sets it."""
        return triton_adapter.kernel_spec(*self._triton)

    def __init__(self, *args, **kwargs):
        """Everything is set by from_spec (Triton calls __init__ after __new__ returns)."""

    @classmethod
    def from_spec(cls, spec, *, global_allocator=None, profile_allocator=None) -> "CudaLauncher":
        """The launcher of a spec. global_allocator / profile_allocator: functions returning the
        scratch allocator to use at launch time (`alloc(size, align, stream) -> obj with
        data_ptr()`), needed only by kernels that take scratch memory."""
        self = object.__new__(shape_class(spec))
        self.spec = spec
        self.name = spec.kernel
        if global_allocator is not None:
            self.global_allocator = global_allocator
        if profile_allocator is not None:
            self.profile_allocator = profile_allocator
        return self

    # The allocators used when none was given (a kernel needing scratch then says so).
    @staticmethod
    def global_allocator():
        return _no_allocator

    profile_allocator = global_allocator

    # -- the plan-driven path: a shape's first launches, and dry runs / packs while it is cold --
    def _pack_planned(self, grid_x, grid_y, grid_z, stream, function, kernel_metadata, args):
        """(plan, packed buffer, scratch allocations), every argument checked on the way."""
        # The checks need this kernel's own spec only for the names in their messages: where
        # it is not made yet, the shape's checks, and this kernel's where they refuse.
        spec = self.__dict__.get("spec") or type(self)._spec
        try:
            head = arguments.check_header(spec, grid_x, grid_y, grid_z, stream, function)
            values = arguments.flat_values(spec, args, self._encoders)
        except Exception:
            if spec is self.spec:
                raise
            arguments.check_header(self.spec, grid_x, grid_y, grid_z, stream, function)
            arguments.flat_values(self.spec, args, self._encoders)
            raise  # not reached: the same rules refuse again, naming this kernel's parameter
        plan = self._plan_for(kernel_metadata)
        # Everything is checked: only now is scratch memory allocated.
        g_size, p_size = spec.global_scratch[0], spec.profile_scratch[0]
        g_obj = p_obj = None
        if g_size or p_size:
            n_programs = head[2] * head[3] * head[4] * spec.num_ctas
            if g_size:
                g_obj = self.global_allocator()(n_programs * g_size, spec.global_scratch[1], stream)
            if p_size:
                p_obj = self.profile_allocator()(n_programs * p_size, spec.profile_scratch[1], stream)
        g = g_obj.data_ptr() if g_obj is not None else 0
        p = p_obj.data_ptr() if p_obj is not None else 0
        return plan, self._pack_all(*head, 0, *values, g, p), (g_obj, p_obj)

    def _launch_planned(self, grid_x, grid_y, grid_z, stream, function, kernel_metadata, launch_metadata,
                        launch_enter_hook, launch_exit_hook, *args):
        cls = type(self)
        plan, buf, _keep = self._pack_planned(grid_x, grid_y, grid_z, stream, function, kernel_metadata, args)
        if launch_enter_hook is not None:
            launch_enter_hook(launch_metadata)
        status = self._c_launch(plan, buf, len(buf))
        if status:
            self._launch_failed(status, buf)
        if launch_exit_hook is not None:
            launch_exit_hook(launch_metadata)
        cls._launches += 1
        if cls._launches >= cls.HOT_AFTER:
            cls._make_hot()

    __call__ = _launch_planned

    def dry_run(self, gridX, gridY, gridZ, stream, function, kernel_metadata, launch_metadata,
                launch_enter_hook, launch_exit_hook, *args):
        """Everything a launch does (checks, packing, hooks, the C entry) but the driver call:
        returns the bytes each kernel parameter would receive, one `bytes` per parameter.
        Runs the generated fast path (`dry_run_planned` runs the plan-driven one)."""
        return self._generated("dry_run")(self, gridX, gridY, gridZ, stream, function, kernel_metadata,
                                          launch_metadata, launch_enter_hook, launch_exit_hook, *args)

    def dry_run_planned(self, gridX, gridY, gridZ, stream, function, kernel_metadata, launch_metadata,
                        launch_enter_hook, launch_exit_hook, *args):
        """The dry run through the plan-driven packer, however hot the launcher is."""
        plan, buf, _keep = self._pack_planned(gridX, gridY, gridZ, stream, function, kernel_metadata, args)
        if launch_enter_hook is not None:
            launch_enter_hook(launch_metadata)
        out = self._new_out()
        status = self._c_dry_run(plan, buf, len(buf), out, self._out_size)
        if status:
            self._launch_failed(status, buf)
        if launch_exit_hook is not None:
            launch_exit_hook(launch_metadata)
        return self._split(out)

    def pack(self, gridX, gridY, gridZ, stream, function, kernel_metadata, *args):
        """(native plan, packed buffer, scratch allocations): the checked arguments of one launch."""
        return self._generated("pack")(self, gridX, gridY, gridZ, stream, function, kernel_metadata,
                                       None, None, None, *args)

    def bind(self, gridX, gridY, gridZ, stream, function, kernel_metadata, *args) -> "BoundLaunch":
        """Check and pack the arguments once; the result launches them again and again.

        For a launch repeated with the same arguments (a decode loop, a benchmark): each call
        of the returned object is one cffi call, with no Python packing at all. Tensors must
        stay alive and where they are (the result holds references to them); scratch memory
        is allocated once, here. Hooks are not run (there is no launch_metadata to give them).
        """
        plan, buf, keep = self.pack(gridX, gridY, gridZ, stream, function, kernel_metadata, *args)
        return BoundLaunch(self, plan, buf, (args, keep))

    def direct(self):
        """`launch(gridX, gridY, gridZ, stream, function, *args)`: a launch with the spec's own
        kernel metadata and no hooks, for a caller that launches this kernel again and again
        (the fast dispatch's hits, bundles): the generated "direct" code bound to this launcher."""
        return types.MethodType(type(self)._generated("direct"), self)

    # -- helpers the generated code calls --
    def _plan_for(self, kernel_metadata):
        """The native plan for launching with `kernel_metadata` (num_warps, num_ctas, shared):
        the spec's own, or one made (once) for other values, which Triton never passes but a
        direct caller may."""
        cls = type(self)
        if kernel_metadata == cls.packed_metadata:
            return cls._plan
        md = arguments.check_kernel_metadata(self.spec, kernel_metadata)
        plan = cls._other_plans.get(md)
        if plan is None:
            plan = native_plan(self.spec, *md)
            with cls._lock:
                if len(cls._other_plans) >= 64:
                    cls._other_plans.clear()
                cls._other_plans[md] = plan
        return plan

    def _bad_call(self, exc, grid_x, grid_y, grid_z, stream, function, kernel_metadata, args):
        arguments.diagnose(self.spec, self._encoders, exc, grid_x, grid_y, grid_z, stream, function,
                           kernel_metadata, args)

    def _launch_failed(self, status, buf):
        raise errors.launch_error(self.spec, status, buf)

    # -- the shape class's generated code --
    @classmethod
    def _generated(cls, mode):
        """This shape's generated `mode` function (made on first use)."""
        return cls._code.get(mode) or cls._generate(mode)

    @classmethod
    def _generate(cls, mode):
        with cls._lock:
            fn = cls._code.get(mode)
            if fn is None:
                fn = codegen.generate(mode, cls._spec.layout, (cls._spec.global_scratch[0], cls._spec.profile_scratch[0]),
                                      cls._namespace, cls._encoders)
                cls._code[mode] = fn
        return fn

    @classmethod
    def _make_hot(cls):
        """Launches of this shape go through its generated code from now on, whether or not
        that code was generated before."""
        cls.__call__ = cls._generated("launch")


def _no_allocator(size, align, stream):
    raise RuntimeError("Kernel requires a runtime memory allocation, but no allocator was set. "
                       "Use launcher.set_allocator (or triton.set_allocator) to specify an allocator.")


class BoundLaunch:
    """A launch with its arguments packed once (see CudaLauncher.bind), on the stream it was
    packed with."""

    __slots__ = ("launcher", "buffer", "stream", "_keepalive", "_handle", "_launch", "_repeat")

    def __init__(self, launcher, plan, buffer, keepalive):
        self.launcher = launcher
        self.buffer = buffer
        self.stream = struct.unpack_from("<Q", buffer, S.HEADER_STREAM_AT)[0]
        self._keepalive = (plan, keepalive)
        self._handle, self._launch, self._repeat = driver.bind(plan, buffer)

    def __call__(self):
        status = self._launch(self._handle, self.stream)
        if status:
            self.launcher._launch_failed(status, self.buffer)

    def repeat(self, count: int):
        """Launch `count` times in one C call (the C floor of the benchmarks)."""
        status = self._repeat(self._handle, self.stream, count)
        if status:
            self.launcher._launch_failed(status, self.buffer)


# ---- one class per spec shape ----
_classes_lock = threading.Lock()
_classes: dict = {}
_MAX_CLASSES = 4096


def shape_class(spec) -> type:
    """The CudaLauncher subclass shared by every kernel of `spec`'s shape (cached)."""
    key = spec.shape_key
    cls = _classes.get(key)
    if cls is not None:
        return cls
    cls = _make_shape_class(spec)
    with _classes_lock:
        if len(_classes) >= _MAX_CLASSES:
            _classes.clear()
        return _classes.setdefault(key, cls)


def clear_launcher_cache() -> None:
    """Forget every shape class (launchers made since keep theirs): the next launcher of any
    shape is built as new (the cold-path benchmarks use this)."""
    with _classes_lock:
        _classes.clear()


def _make_shape_class(spec) -> type:
    ffi, _ = driver.native()
    c_launch, c_dry_run = driver.launch_entries()
    layout = spec.layout
    plan = native_plan(spec, *spec.packed_metadata)
    out_size = driver.dry_run_size(plan)
    split_at, pos = [], 0
    for p in layout.params:
        split_at.append((pos, pos + p.size))
        pos += p.size

    def new_out():
        return ffi.new("char[]", max(out_size, 1))

    def split(out):
        raw = bytes(ffi.buffer(out, out_size))
        return [raw[a:b] for a, b in split_at]

    encoders = {}  # argument path -> encoder of that tensor descriptor

    def visit(args, prefix):
        for i, a in enumerate(args):
            path = prefix + (i,)
            if a.kind == "tuple":
                visit(a.children, path)
            elif a.kind == "tensordesc":
                encoders[path] = (DescriptorEncoder(a.desc.meta, a.desc.ndim, spec.conventions)
                                  if a.desc.tma is not None else decomposer(spec.conventions.tensordesc_tf32_flag))

    visit(layout.args, ())
    pack_all = struct.Struct(layout.format).pack
    head = struct.Struct(layout.format_before_scratch)
    pack_scratch = struct.Struct("<QQ").pack
    namespace = {
        "pack_all": pack_all, "pack_head": head.pack, "pack_scratch": pack_scratch,
        "PLAN": plan, "PACKED_METADATA": spec.packed_metadata, "SIZE": layout.size,
        "OUT_SIZE": out_size, "c_launch": c_launch, "c_dry_run": c_dry_run,
        "new_out": new_out, "split": split, "TensorMap": TensorMap, "tensormap_bytes": tensormap_bytes,
        "index": operator.index, "is_sequence": _is_sequence, "NUM_CTAS": spec.num_ctas,
        "GLOBAL_ALIGN": spec.global_scratch[1], "PROFILE_ALIGN": spec.profile_scratch[1],
    }
    attrs = {
        "packed_metadata": spec.packed_metadata,  # what the shape's plan was made for (Triton passes it)
        "_spec": spec, "_plan": plan, "_other_plans": {}, "_lock": threading.Lock(), "_code": {},
        "_launches": 0, "_namespace": namespace, "_encoders": encoders,
        "_pack_all": staticmethod(pack_all),
        "_c_launch": staticmethod(c_launch), "_c_dry_run": staticmethod(c_dry_run),
        "_new_out": staticmethod(new_out), "_split": staticmethod(split), "_out_size": out_size,
    }
    return type(f"CudaLauncher[{len(layout.args)} args, {len(layout.params)} params]", (CudaLauncher,), attrs)
