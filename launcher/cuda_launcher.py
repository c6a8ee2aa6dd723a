"""`CudaLauncher`: the launcher of a `LaunchSpec`, and Triton's `driver.active.launcher_cls`.

Triton builds one launcher per compiled kernel, `CudaLauncher(src, metadata)`, and calls it as

    launcher(gridX, gridY, gridZ, stream, function, kernel_metadata, launch_metadata,
             launch_enter_hook, launch_exit_hook, *args)

with every argument the kernel was called with (constexprs and nested tuples included).
Construction asks launcher.triton_adapter for the kernel's spec and nothing else of Triton;
`CudaLauncher.from_spec(spec)` makes the same launcher from a spec alone (bundles).

Kernels whose specs have the same shape (launcher.spec.LaunchSpec.shape_key) share one
`_Shape`: its native launch plan (validated by the C library once), its packer, its argument
encoders and its generated code. A new shape's first launches run the plan-driven packer
(launcher.arguments) in CudaLauncher itself; once the shape has launched `HOT_AFTER` times, its
launchers become instances of the shape's own subclass, whose __call__ is the fast path
generated for the shape (launcher.codegen). A new signature thus costs no class and no code
generation until it is launched again and again. One cffi call then launches (the GIL is
released around it). When anything is wrong with the arguments, an exception names the kernel
and the parameter, before any hook or driver call.
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
from launcher._call import FlatLaunch
from launcher.checks import c_checks
from launcher import spec as S
from launcher.tensormap import TensorMap, decomposer, descriptor_encoder, tensormap_bytes

log = logging.getLogger("launcher")

# Launch attributes and their values (cdefs/launcher.h; CUDA's launch-attribute enums).
_OVERSIZED_ABOVE = 228 * 1024  # Triton 3.8+ launches larger shared memory in the oversized mode


def launch_attributes(spec, num_ctas: int, shared: int) -> list:
    """The launch attributes of a kernel, in Triton's order: (id, (x, y, z))."""
    _, lib = driver.native()
    attrs = []
    if spec.conventions.oversized_shared and shared > _OVERSIZED_ABOVE:
        attrs.append((lib.LAUNCHER_ATTR_SHARED_MEMORY_MODE,
                      (driver.number("CU_SHARED_MEMORY_MODE_ALLOW_OVERSIZED_SHARED_MEMORY"), 0, 0)))
    if spec.launch_pdl:
        attrs.append((lib.LAUNCHER_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION, (1, 0, 0)))
    if spec.launch_cooperative_grid:
        attrs.append((lib.LAUNCHER_ATTR_COOPERATIVE, (1, 0, 0)))
    cluster = spec.cluster_dims if num_ctas == spec.num_ctas else (num_ctas, 1, 1)
    if cluster != (1, 1, 1):
        attrs.append((lib.LAUNCHER_ATTR_CLUSTER_DIMENSION, tuple(cluster)))
        attrs.append((lib.LAUNCHER_ATTR_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
                      (driver.number("CU_CLUSTER_SCHEDULING_POLICY_SPREAD"), 0, 0)))
    return attrs


@functools.lru_cache(maxsize=None)
def _native_kinds() -> dict:
    """The native library's code of each parameter kind."""
    _, lib = driver.native()
    return {S.VALUE: lib.LAUNCHER_PARAM_VALUE, S.POINTER: lib.LAUNCHER_PARAM_POINTER,
            S.TENSORMAP: lib.LAUNCHER_PARAM_TENSORMAP}


def native_plan(spec, num_warps: int, num_ctas: int, shared: int):
    """The validated native plan of `spec` launched with these warps, CTAs and shared memory."""
    kinds = _native_kinds()
    params = spec.layout.params
    return driver.make_plan([p.read_at for p in params], [p.size for p in params], [kinds[p.kind] for p in params],
                            spec.layout.size, spec.warp_size * num_warps, shared, num_ctas,
                            launch_attributes(spec, num_ctas, shared), context=f"kernel {spec.kernel!r}")


_pack_scratch = struct.Struct("<QQ").pack  # the two scratch pointers, after the head


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
        # A launch needs only the shape; the kernel's own spec is made on first use.
        state = shape_state(shape)
        self = object.__new__(state.hot or CudaLauncher)
        self._shape = state
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

    @property
    def packed_metadata(self) -> tuple:
        """What the shape's plan was made for (num_warps, num_ctas, shared): what Triton passes."""
        return self._shape.packed_metadata

    @classmethod
    def from_spec(cls, spec, *, global_allocator=None, profile_allocator=None) -> "CudaLauncher":
        """The launcher of a spec. global_allocator / profile_allocator: functions returning the
        scratch allocator to use at launch time (`alloc(size, align, stream) -> obj with
        data_ptr()`), needed only by kernels that take scratch memory."""
        state = shape_state(spec)
        self = object.__new__(state.hot or CudaLauncher)
        self._shape = state
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
        shape = self._shape
        spec = self.__dict__.get("spec") or shape.spec
        try:
            head = arguments.check_header(spec, grid_x, grid_y, grid_z, stream, function)
            values = arguments.flat_values(spec, args, shape.encoders)
        except Exception:
            if spec is self.spec:
                raise
            arguments.check_header(self.spec, grid_x, grid_y, grid_z, stream, function)
            arguments.flat_values(self.spec, args, shape.encoders)
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
        return plan, shape.pack_all(*head, 0, *values, g, p), (g_obj, p_obj)

    def _launch_planned(self, grid_x, grid_y, grid_z, stream, function, kernel_metadata, launch_metadata,
                        launch_enter_hook, launch_exit_hook, *args):
        shape = self._shape
        plan, buf, _keep = self._pack_planned(grid_x, grid_y, grid_z, stream, function, kernel_metadata, args)
        codegen.hooked_call(self, shape.c_launch, plan, buf, len(buf), launch_metadata, launch_enter_hook,
                            launch_exit_hook)
        shape.launches += 1
        if shape.launches >= self.HOT_AFTER:  # this launcher's next launches: the generated code
            self.__class__ = shape.make_hot()

    __call__ = _launch_planned

    def dry_run(self, gridX, gridY, gridZ, stream, function, kernel_metadata, launch_metadata,
                launch_enter_hook, launch_exit_hook, *args):
        """Everything a launch does (checks, packing, hooks, the C entry) but the driver call:
        returns the bytes each kernel parameter would receive, one `bytes` per parameter.
        Runs the generated fast path (`dry_run_planned` runs the plan-driven one)."""
        return self._shape.generated("dry_run")(self, gridX, gridY, gridZ, stream, function, kernel_metadata,
                                                launch_metadata, launch_enter_hook, launch_exit_hook, *args)

    def dry_run_planned(self, gridX, gridY, gridZ, stream, function, kernel_metadata, launch_metadata,
                        launch_enter_hook, launch_exit_hook, *args):
        """The dry run through the plan-driven packer, however hot the launcher is."""
        plan, buf, _keep = self._pack_planned(gridX, gridY, gridZ, stream, function, kernel_metadata, args)
        shape = self._shape
        out = shape.new_out()
        codegen.hooked_call(self, shape.c_dry_run, plan, buf, len(buf), launch_metadata, launch_enter_hook,
                            launch_exit_hook, out, shape.out_size)
        return shape.split(out)

    def pack(self, gridX, gridY, gridZ, stream, function, kernel_metadata, *args):
        """(native plan, packed buffer, scratch allocations): the checked arguments of one launch."""
        return self._shape.generated("pack")(self, gridX, gridY, gridZ, stream, function, kernel_metadata,
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

    def flat_launch(self, kernel_metadata, record=None):
        """`launch(function, stream, grid, *values)`, one C call that packs and launches (the bound
        method of launcher._call.FlatLaunch; cdefs/call.c says what it takes), where
        `kernel_metadata` is the spec's own and every parameter is a constexpr, a pointer, a
        scalar other than fp16, or a tuple of those (no descriptors, tensor maps or scratch);
        else None. values: every parameter's argument, in order (constexprs too: skipped), with
        pointers as ints or objects with data_ptr(). It returns None when launched, False when it
        declined (the caller then launches through `direct`, which converts and explains), or
        (status, packed bytes) for `_launch_failed`. For a caller whose own key has decided what
        the kernel assumed (the fast dispatch's hits, bundles): it checks types and ranges, not
        alignment or constexprs. record: a dry run instead, record(packed bytes, the bytes the
        driver would receive) for each call (the CPU tests)."""
        shape = self._shape
        if kernel_metadata != shape.packed_metadata:
            return None
        return shape.flat(record)

    def direct(self):
        """`launch(gridX, gridY, gridZ, stream, function, *args)`: a launch with the spec's own
        kernel metadata and no hooks, for a caller that launches this kernel again and again
        (bundles): the generated "direct" code bound to this launcher (the fast dispatch's hits call
        that code unbound, with the launcher)."""
        return types.MethodType(self._shape.generated("direct"), self)

    # -- helpers the generated code calls --
    def _plan_for(self, kernel_metadata):
        """The native plan for launching with `kernel_metadata` (num_warps, num_ctas, shared):
        the spec's own, or one made (once) for other values, which Triton never passes but a
        direct caller may."""
        shape = self._shape
        if kernel_metadata == shape.packed_metadata:
            return shape.plan
        md = arguments.check_kernel_metadata(self.spec, kernel_metadata)
        plan = shape.other_plans.get(md)
        if plan is None:
            plan = native_plan(self.spec, *md)
            with shape.lock:
                if len(shape.other_plans) >= 64:
                    shape.other_plans.clear()
                shape.other_plans[md] = plan
        return plan

    def _bad_call(self, exc, grid_x, grid_y, grid_z, stream, function, kernel_metadata, args):
        arguments.diagnose(self.spec, self._shape.encoders, exc, grid_x, grid_y, grid_z, stream, function,
                           kernel_metadata, args)

    def _launch_failed(self, status, buf):
        raise errors.launch_error(self.spec, status, buf)

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


def repeat_sequence(bounds, count: int) -> None:
    """Launch the BoundLaunches `bounds` one after another, `count` times, in one C call on the
    stream they were packed with (the C floor of a sequence of launches: the decode step's)."""
    bounds = list(bounds)
    if any(not isinstance(b, BoundLaunch) for b in bounds):
        raise TypeError("repeat_sequence takes BoundLaunch objects (CudaLauncher.bind)")
    if count.__class__ is not int or count < 0:
        raise ValueError(f"repeat_sequence: count must be an int >= 0, got {count!r}")
    streams = {b.stream for b in bounds}
    if len(streams) > 1:
        raise ValueError(f"repeat_sequence: the launches were bound to {len(streams)} streams, expected one")
    status, failed = driver.bound_sequence([b._handle for b in bounds], streams.pop() if streams else 0, count)
    if status and failed < 0:
        raise driver.error(status, "a sequence of bound launches")
    if status:
        bounds[failed].launcher._launch_failed(status, bounds[failed].buffer)


# ---- one _Shape per spec shape ----
_shapes_lock = threading.Lock()
_shapes: dict = {}
_MAX_SHAPES = 4096


def shape_state(spec) -> "_Shape":
    """The _Shape shared by every kernel of `spec`'s shape (cached)."""
    key = spec.shape_key
    state = _shapes.get(key)
    if state is not None:
        return state
    state = _Shape(spec)
    with _shapes_lock:
        if len(_shapes) >= _MAX_SHAPES:
            _shapes.clear()
        return _shapes.setdefault(key, state)


def clear_launcher_cache() -> None:
    """Forget every shape (launchers made since keep theirs): the next launcher of any shape is
    built as new (the cold-path benchmarks use this)."""
    with _shapes_lock:
        _shapes.clear()


class _NoHookChain:
    """Stands for Triton's HookChain where Triton is not installed (bundles): no hook is of it."""


def _hook_chain_type():
    try:
        return triton_adapter.hook_chain_type()
    except ImportError:
        return _NoHookChain


class _Shape:
    """What every launcher of one spec shape shares: the spec it was first made from (the shape's
    checks; names are the first kernel's), its native plan, its packer, the encoders of its
    tensor-descriptor arguments, its generated code (made on first use) and, once its launches are
    hot, `hot`: the CudaLauncher subclass whose __call__ is the generated launch."""

    def __init__(self, spec):
        ffi, _ = driver.native()
        self.c_launch, self.c_dry_run = driver.launch_entries()
        self.spec, self.packed_metadata = spec, spec.packed_metadata
        layout = spec.layout
        self.plan = plan = native_plan(spec, *spec.packed_metadata)
        self.out_size = out_size = driver.dry_run_size(plan)

        def new_out():
            return ffi.new("char[]", max(out_size, 1))

        bounds, pos = [], 0  # where each parameter's bytes lie in a dry run's output (one after another)
        for p in layout.params:
            bounds.append((pos, pos + p.size))
            pos += p.size

        def split_bytes(raw):  # a dry run's bytes, parameter by parameter
            return [raw[a:b] for a, b in bounds]

        def split(out):
            return split_bytes(ffi.buffer(out, out_size)[:])

        self.new_out, self.split, self.split_bytes = new_out, split, split_bytes
        self.encoders = encoders = {}  # argument path -> encoder of that tensor descriptor

        for path, a in S.leaves(layout.args):
            if a.kind == "tensordesc":
                encoders[path] = (descriptor_encoder(a.desc.meta, a.desc.ndim, spec.conventions)
                                  if a.desc.tma is not None else decomposer(spec.conventions.tensordesc_tf32_flag, a.desc.ndim))
        self.pack_all = pack_all = struct.Struct(layout.format).pack
        scratch = spec.global_scratch[0] or spec.profile_scratch[0]  # only then is the head packed apart
        self.flat_checks = None if scratch else c_checks(layout)  # FlatLaunch's, made once per shape
        self.flat_launch = None  # made on first use (flat)
        self.namespace = {
            "pack_all": pack_all, "pack_head": struct.Struct(layout.format_before_scratch).pack if scratch else None,
            "pack_scratch": _pack_scratch,
            "PLAN": plan, "PACKED_METADATA": spec.packed_metadata, "SIZE": layout.size,
            "OUT_SIZE": out_size, "c_launch": self.c_launch, "c_dry_run": self.c_dry_run,
            "new_out": new_out, "split": split, "TensorMap": TensorMap, "tensormap_bytes": tensormap_bytes,
            "index": operator.index, "is_sequence": _is_sequence, "NUM_CTAS": spec.num_ctas,
            "GLOBAL_ALIGN": spec.global_scratch[1], "PROFILE_ALIGN": spec.profile_scratch[1],
        }
        self.other_plans, self.lock, self.code, self.launches, self.hot = {}, threading.Lock(), {}, 0, None

    def flat(self, record=None):
        """The shape's FlatLaunch's launch (CudaLauncher.flat_launch), or None where it has none;
        with record, a dry run of it made for the caller."""
        if self.flat_checks is None:
            return None
        if record is None and self.flat_launch is not None:
            return self.flat_launch
        dry = {} if record is None else {"dry_run": driver.entry_address("launcher_dry_run"),
                                          "out_size": self.out_size, "record": record}
        launch = FlatLaunch(driver.address(self.plan), self.plan, driver.entry_address("launcher_launch"),
                            self.spec.layout.size, self.flat_checks, **dry).launch
        if record is None:
            self.flat_launch = launch
        return launch

    def generated(self, mode):
        """This shape's generated `mode` function (made on first use)."""
        return self.code.get(mode) or self._generate(mode)

    def _generate(self, mode):
        with self.lock:
            fn = self.code.get(mode)
            if fn is None:
                spec = self.spec
                namespace = dict(self.namespace, FLAT=self.flat() if mode == "launch" else None,
                                 HOOK_CHAIN=_hook_chain_type())
                fn = codegen.generate(mode, spec.layout, (spec.global_scratch[0], spec.profile_scratch[0]),
                                      namespace, self.encoders)
                self.code[mode] = fn
        return fn

    def make_hot(self) -> type:
        """The shape's CudaLauncher subclass, whose __call__ is its generated launch (made once,
        whether or not that code was generated before): launchers of the shape made from now on
        are of it, and those made before switch to it at their next launch."""
        if self.hot is None:
            launch = self.generated("launch")
            with self.lock:
                if self.hot is None:
                    layout = self.spec.layout
                    self.hot = type(f"CudaLauncher[{len(layout.args)} args, {len(layout.params)} params]",
                                    (CudaLauncher,), {"__call__": launch, "__module__": __name__})
        return self.hot
