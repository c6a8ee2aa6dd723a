"""`CudaLauncher`: the drop-in for Triton's `driver.active.launcher_cls`.

Triton builds one launcher per compiled kernel, `CudaLauncher(src, metadata)`, and calls it as

    launcher(gridX, gridY, gridZ, stream, function, kernel_metadata, launch_metadata,
             launch_enter_hook, launch_exit_hook, *args)

with every argument the kernel was called with (constexprs and nested tuples included).
Construction plans the signature once (launcher/signature.py) and generates a Python function
for exactly that signature: it unpacks tuples, reads `data_ptr()`, encodes tensor descriptors
and packs everything with one precompiled `struct.Struct`, which also range-checks every
scalar. One cffi call then launches (the GIL is released around it). When anything is wrong
with the arguments, a slow path walks them again and raises an exception that names the
kernel and the parameter, before any hook or driver call.
"""
from __future__ import annotations

import collections.abc
import functools
import logging
import operator
import struct
import threading

from launcher import driver, errors, signature as sig
from launcher.signature import ArgPlan, UnsupportedSignature
from launcher.tensormap import DescriptorEncoder, tensormap_bytes
from launcher.versions import profile_scratch_allocator, scratch_allocator, triton_version

log = logging.getLogger("launcher")

_BASE_ARGS = ("gridX", "gridY", "gridZ", "stream", "function", "kernel_metadata",
              "launch_metadata", "launch_enter_hook", "launch_exit_hook")


def _arg_names(src) -> list:
    """Display names of a kernel's arguments: names for ASTSource, positions for IRSource."""
    keys = list(src.signature.keys())
    fn = getattr(src, "fn", None)
    arg_names = getattr(fn, "arg_names", None)
    if arg_names is not None and len(arg_names) == len(keys):
        return list(arg_names)
    return [k if isinstance(k, str) else f"#{k}" for k in keys]


def _is_sequence(value) -> bool:
    return isinstance(value, collections.abc.Sequence)


def unsupported_reason(metadata) -> str | None:
    """Why a kernel must go to the stock launcher, or None."""
    mode = getattr(metadata, "instrumentation_mode", "") or ""
    if "gsan" in str(mode):
        return "gsan instrumentation"
    return None


class _Generated:
    """The source and namespace of one signature's generated function.

    mode says what it does after packing: "launch"; "dry_run" (write the bytes each kernel
    parameter would receive instead of launching); "pack" (return the packed buffer, for bind()).
    """

    def __init__(self, plan: ArgPlan, metadata, mode: str):
        self.plan = plan
        self.lines = []
        self.ns = {}
        self.values = []
        self.mode = mode
        self.metadata = metadata

    def emit(self, line, depth=1):
        self.lines.append("    " * depth + line)

    def bind(self, name, value):
        self.ns[name] = value
        return name

    def unpack(self, nodes, names, depth):
        """Emit code that turns the arguments `names` (nodes) into packed values."""
        for node, var in zip(nodes, names):
            if node.kind == "constexpr":
                continue
            if node.kind == "tuple":
                inner = [f"{var}_{i}" for i in range(len(node.children))]
                # Any sequence, as Triton takes; not a dict, set or iterator.
                self.emit(f"if {var}.__class__ is not tuple and not _is_sequence({var}): raise TypeError", depth)
                if inner:
                    self.emit(f"{', '.join(inner)}, = {var}", depth)
                else:
                    self.emit(f"if len({var}): raise ValueError", depth)
                self.unpack(node.children, inner, depth)
            elif node.kind == "pointer":
                v = f"v{len(self.values)}"
                self.emit(f"{v} = {var} if {var}.__class__ is int else "
                          f"{var}.data_ptr() if {var} is not None else 0", depth)
                self.values.append(v)
            elif node.kind == "tensormap":
                v = f"v{len(self.values)}"
                fn = self.bind(f"_tma_{len(self.values)}", functools.partial(tensormap_bytes, name=node.name))
                self.emit(f"{v} = {var}.data if {var}.__class__ is _TensorMap else {fn}({var})", depth)
                self.values.append(v)
            elif node.kind == "tensordesc":
                vs = [f"v{len(self.values) + i}" for i in range(len(node.params))]
                fn = self.bind(f"_desc_{len(self.values)}", self.tensordesc_expander(node))
                self.emit(f"{', '.join(vs)}, = {fn}({var})", depth)
                self.values.extend(vs)
            else:  # scalar
                if node.type in ("i1", "u1"):  # bools and 0/1; the int itself, not what == says
                    v = f"v{len(self.values)}"
                    self.emit(f"{v} = _index({var})", depth)
                    self.emit(f"if {v} != 0 and {v} != 1: raise ValueError", depth)
                    self.values.append(v)
                else:
                    self.values.append(var)

    def tensordesc_expander(self, node):
        meta = node.desc["meta"]
        if meta is not None:
            return DescriptorEncoder(node.name, meta, node.desc["ndim"], version=triton_version())
        tf32 = triton_version() >= (3, 7)

        def decompose(d):
            base = d.base
            ptr = base if base.__class__ is int else base.data_ptr() if base is not None else 0
            shape, strides = tuple(d.shape), tuple(d.strides)
            flags = (d.padding == "nan", bool(d.round_f32_to_tf32)) if tf32 else (d.padding == "nan",)
            return (ptr, *shape, *strides, *flags, *shape, *strides)

        return decompose

    def build(self, name):
        plan = self.plan
        md = self.metadata
        args = [f"a{i}" for i in range(plan.arity)]
        self.lines.append(f"def {name}(self, {', '.join(_BASE_ARGS)}, *args):")
        self.emit("try:")
        if args:
            self.emit(f"{', '.join(args)}, = args", 2)
        else:
            self.emit("if args: raise ValueError", 2)
        self.unpack(plan.args, args, 2)
        self.emit("num_warps, num_ctas, shared = kernel_metadata", 2)
        head = "function, stream, gridX, gridY, gridZ, num_warps, num_ctas, shared"
        values = ", ".join([head] + self.values)
        gsize, psize = md.global_scratch_size or 0, md.profile_scratch_size or 0
        keep = []  # scratch allocations, alive as long as the packed buffer is used
        if gsize or psize:
            # Check everything first, then allocate: a bad argument allocates nothing.
            self.bind("_pack_args", struct.Struct(plan.format[:-2]).pack)
            self.bind("_pack_scratch", struct.Struct("<QQ").pack)
            self.emit(f"buf = _pack_args({values})", 2)
            self.emit("n_programs = gridX * gridY * gridZ * num_ctas", 2)
            for var, size, align, alloc in (
                    ("g", gsize, md.global_scratch_align, scratch_allocator),
                    ("p", psize, md.profile_scratch_align, profile_scratch_allocator)):
                if size:
                    self.bind(f"_alloc_{var}", alloc)
                    self.emit(f"{var}_obj = _alloc_{var}()(n_programs * {size}, {align}, stream)", 2)
                    keep.append(f"{var}_obj")
                    self.emit(f"{var} = {var}_obj.data_ptr() if {var}_obj is not None else 0", 2)
                else:
                    self.emit(f"{var} = 0", 2)
            self.emit("buf += _pack_scratch(g, p)", 2)
        else:
            self.bind("_pack_all", struct.Struct(plan.format).pack)
            self.emit(f"buf = _pack_all({values}, 0, 0)", 2)
        self.emit("except Exception as exc:")
        self.emit(f"self._fail(exc, ({', '.join(_BASE_ARGS[:6])}), args)", 2)
        if self.mode == "pack":
            self.emit(f"return buf, ({''.join(k + ', ' for k in keep)})")
            return "\n".join(self.lines) + "\n"
        self.emit("if launch_enter_hook is not None:")
        self.emit("launch_enter_hook(launch_metadata)", 2)
        if self.mode == "dry_run":
            self.emit("out = _new_out()")
            self.emit("rc = _launch(_plan, buf, out)")
        else:
            self.emit("rc = _launch(_plan, buf, _NULL)")
        self.emit("if rc:")
        self.emit("self._launch_failed(rc, buf)", 2)
        self.emit("if launch_exit_hook is not None:")
        self.emit("launch_exit_hook(launch_metadata)", 2)
        if self.mode == "dry_run":
            self.emit("return _split(out)")
        return "\n".join(self.lines) + "\n"


class CudaLauncher:
    """Launches one compiled Triton kernel; `launcher_cls` for Triton's NVIDIA driver."""

    # Launchers for unsupported kernels come from here (the stock class, set by install()).
    stock_launcher_cls = None

    def __new__(cls, src, metadata):
        reason = unsupported_reason(metadata)
        plan = None
        if reason is None:
            try:
                plan = plan_kernel(src, metadata)
            except UnsupportedSignature as e:
                reason = str(e)
        if reason is not None:
            stock = cls.stock_launcher_cls
            if stock is None:
                raise errors.UnsupportedKernel(
                    f"kernel {getattr(metadata, 'name', '?')!r}: {reason} is not supported by "
                    "launcher and no stock Triton launcher is available to fall back to")
            log.debug("kernel %r: %s; using the stock Triton launcher", metadata.name, reason)
            return stock(src, metadata)
        self = super().__new__(_launch_class(plan, metadata))
        return self

    def __init__(self, src, metadata):
        self.name = metadata.name
        self.metadata = metadata

    # The per-signature subclass defines __call__ (generated when the class is made); dry_run
    # and pack are generated on first use, so that a new signature costs one compile.
    def dry_run(self, gridX, gridY, gridZ, stream, function, kernel_metadata, launch_metadata,
                launch_enter_hook, launch_exit_hook, *args):
        """Everything a launch does (checks, packing, hooks, the C entry) but the driver call:
        returns the bytes each kernel parameter would receive, one `bytes` per parameter."""
        return self._generated("dry_run")(self, gridX, gridY, gridZ, stream, function, kernel_metadata,
                                          launch_metadata, launch_enter_hook, launch_exit_hook, *args)

    def pack(self, gridX, gridY, gridZ, stream, function, kernel_metadata, launch_metadata,
             launch_enter_hook, launch_exit_hook, *args):
        """(packed buffer, scratch allocations): the checked arguments of one launch."""
        return self._generated("pack")(self, gridX, gridY, gridZ, stream, function, kernel_metadata,
                                       launch_metadata, launch_enter_hook, launch_exit_hook, *args)

    @classmethod
    def _generated(cls, mode):
        fn = cls.__dict__.get(f"_{mode}_fn")
        if fn is None:
            fn = _generate(cls.plan, cls._metadata, cls._namespace, mode, mode)
            setattr(cls, f"_{mode}_fn", fn)
        return fn

    def _fail(self, exc, base, args):
        errors.diagnose(self.plan, base, args, exc)

    def _launch_failed(self, rc, buf):
        raise errors.launch_error(self.plan, rc, buf)

    def bind(self, gridX, gridY, gridZ, stream, function, kernel_metadata, *args) -> "BoundLaunch":
        """Check and pack the arguments once; the result launches them again and again.

        For a launch repeated with the same arguments (a decode loop, a benchmark): each call
        of the returned object is one cffi call, with no Python packing at all. Tensors must
        stay alive and where they are; scratch memory is allocated once, here. Hooks are not
        run (there is no launch_metadata to give them).
        """
        buf, keep = self.pack(gridX, gridY, gridZ, stream, function, kernel_metadata, None, None, None, *args)
        return BoundLaunch(self, buf, (args, keep))


class BoundLaunch:
    """A launch with its arguments packed once (see CudaLauncher.bind)."""

    __slots__ = ("launcher", "buffer", "_keepalive", "_launch", "_plan", "_null")

    def __init__(self, launcher, buffer, keepalive):
        self.launcher = launcher
        self.buffer = buffer
        self._keepalive = keepalive
        ffi, lib = driver.native()
        self._launch = lib.launcher_launch
        self._plan = launcher._keepalive[3]
        self._null = ffi.NULL

    def __call__(self):
        rc = self._launch(self._plan, self.buffer, self._null)
        if rc:
            self.launcher._launch_failed(rc, self.buffer)

    def repeat(self, count: int):
        """Launch `count` times in one C call (the C floor of the benchmarks)."""
        _, lib = driver.native()
        rc = lib.launcher_launch_repeat(self._plan, self.buffer, count)
        if rc:
            self.launcher._launch_failed(rc, self.buffer)


def plan_kernel(src, metadata) -> ArgPlan:
    return sig.plan_signature(
        metadata.name, _arg_names(src), list(src.signature.values()),
        getattr(metadata, "tensordesc_meta", None), tf32_flag=triton_version() >= (3, 7))


def _generate(plan, md, namespace, mode, fname):
    """Compile the generated function of one mode for a signature."""
    gen = _Generated(plan, md, mode)
    source = gen.build(fname)
    ns = dict(namespace, **gen.ns)
    exec(compile(source, f"<launcher {plan.kernel} {fname}>", "exec"), ns)
    fn = ns[fname]
    fn.source = source
    return fn


_classes_lock = threading.Lock()
_classes: dict = {}
_MAX_CLASSES = 4096


def _class_key(plan: ArgPlan, md) -> tuple:
    metas = getattr(md, "tensordesc_meta", None) or []
    return (plan.kernel, tuple(plan.arg_names()), repr([a.type for a in plan.args]), repr(metas),
            md.global_scratch_size, md.global_scratch_align, md.profile_scratch_size,
            md.profile_scratch_align, bool(md.launch_cooperative_grid), bool(md.launch_pdl))


def _launch_class(plan: ArgPlan, md) -> type:
    """The CudaLauncher subclass whose __call__ is generated for this signature (cached)."""
    key = _class_key(plan, md)
    cls = _classes.get(key)
    if cls is not None:
        return cls
    ffi, lib = driver.native()
    params = plan.params
    offsets = ffi.new("int[]", [p.read_at for p in params])
    sizes = ffi.new("int[]", [p.size for p in params])
    kinds = ffi.new("unsigned char[]", [p.kind for p in params])
    cplan = ffi.new("launcher_plan *", {
        "n_params": len(params), "args_size": plan.size, "offsets": offsets, "sizes": sizes,
        "kinds": kinds, "launch_cooperative_grid": int(bool(md.launch_cooperative_grid)),
        "launch_pdl": int(bool(md.launch_pdl))})
    out_size = sum(p.size for p in params)
    split_at = []
    pos = 0
    for p in params:
        split_at.append((pos, pos + p.size))
        pos += p.size

    def new_out():
        return ffi.new("char[]", max(out_size, 1))

    def split(out):
        raw = bytes(ffi.buffer(out, out_size))
        return [raw[a:b] for a, b in split_at]

    from launcher.tensormap import TensorMap
    namespace = {"_launch": lib.launcher_launch, "_plan": cplan, "_NULL": ffi.NULL,
                 "_TensorMap": TensorMap, "_new_out": new_out, "_split": split,
                 "_index": operator.index, "_is_sequence": _is_sequence}
    attrs = {"plan": plan, "_keepalive": (offsets, sizes, kinds, cplan), "_metadata": md,
             "_namespace": namespace, "__call__": _generate(plan, md, namespace, "launch", "__call__")}
    cls = type(f"CudaLauncher[{plan.kernel}]", (CudaLauncher,), attrs)
    with _classes_lock:
        if len(_classes) >= _MAX_CLASSES:
            _classes.clear()
        cls = _classes.setdefault(key, cls)
    return cls
