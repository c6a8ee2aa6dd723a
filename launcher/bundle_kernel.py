"""Calling kernels from a bundle: `load_bundle(path)` and `bundle.kernel[grid](*args, **kwargs)`.

Works without Triton (torch optional). A bundled kernel is called as its Triton function is:
the same positional and keyword parameters and defaults, a grid tuple or a callable of the
meta-parameters (a dict of every argument by name), constexprs and compile options
(`BLOCK=1024`, `num_warps=8`), which must then match a variant, and `stream=`: a CUstream
handle (an int, or an object with `.cuda_stream`). Without `stream=`, kernels run on the
current stream of the current device: torch's, when torch is imported and an argument is a
torch tensor; otherwise the device's default (legacy) stream 0. The current device is torch's
when torch is imported, else the device of the driver's current context (device 0's primary
context if there is none). A call returns None.

The call path: one function generated per kernel, with the kernel's own signature (names
checked as Python identifiers when the bundle is read; nothing else from the file is code),
binds the arguments, computes a key of their specialization (type and dtype, 16-byte
alignment, int class and value 1, constexpr values; the exact values of autotune key and
heuristics inputs; the current device) and finds the launcher that key chose before: the
variant's CudaLauncher (launcher.cuda_launcher), its CUfunction on that device and what to
fill in for the arguments the call left to a layer. A key seen for the first time goes the
slow way: launcher.variants chooses the variant, the fence check runs on its PTX under the
install() policy (or $LAUNCHER_FENCE_CHECK), and its cubin is loaded through
launcher.module_cache(), held until the bundle is closed or collected.
"""
from __future__ import annotations

import functools
import logging
import sys
import threading
import weakref

from launcher import _call, allocation, codegen, driver
from launcher import bundle_format as BF
from launcher import spec as S
from launcher import variants as V
from launcher.arguments import check_header, flat_values, grid3, stream_handle
from launcher.cuda_launcher import CudaLauncher
from launcher.devices import torch_device_getter
from launcher.fence_hook import fence_policy
from launcher.tensormap import decomposer
from launcher.specialization import (DIVISIBILITY_MASK, INT_KEYS, _tensordesc_type, array_interface, divisible,
                                     int_key, item_key)

log = logging.getLogger("launcher.bundle")

_MAX_ENTRIES = 4096
_KEY_AFTER = ("the key of a call made while nothing was recorded",)  # _slow makes it after the checks


class _Required:
    """A positional parameter without a default that follows one with a default (Python's
    syntax needs a default there; a call that leaves it out is refused)."""

    def __repr__(self):
        return "<required>"


REQUIRED = _Required()


# ---- the specialization key of a call (a refinement of Triton's) ----
# A call is keyed by launcher._call.GuardKey, in C, as the guard keys one (launcher.fast_dispatch),
# with these rules for what it hands back: the common arguments (torch tensors, ints through
# specialization.int_key, floats, bools, None, constexprs) are keyed there; key_of keys the rest,
# raw_key what a layer reads by value.
_BEYOND_64_BITS = "int: beyond 64 bits"
_IK = INT_KEYS[True, True]


def key_of(v, tensor=None):
    """What the choice of a variant depends on in argument `v` (an argument GuardKey hands back,
    or an item of a tuple): as GuardKey keys ints, floats, bools, None and instances of `tensor`
    (torch.Tensor where the generated call keys torch's tensors)."""
    key = item_key(v, tensor)  # tensors, ints, floats, bools and None: keyed as every front door keys them
    if key is not NotImplemented:
        return key if key is not None else _BEYOND_64_BITS  # as GuardKey keys one (_int_key)
    cls = v.__class__
    if cls is tuple:
        return (tuple, tuple([key_of(x, tensor) for x in v]))
    if cls in _DESCRIPTOR_CLASSES and hasattr(v, "block_shape"):  # seen below before: no failing probes first
        return _descriptor_key(v)
    data_ptr = getattr(v, "data_ptr", None)
    if data_ptr is not None:
        return (cls, getattr(v, "dtype", None), divisible(data_ptr()))
    if cls is list or isinstance(v, tuple):
        return (tuple, tuple([key_of(x, tensor) for x in v]))
    cai = array_interface(v)
    if cai is not None:
        return (cls, cai[1], divisible(cai[0]))
    if hasattr(v, "block_shape"):  # a host tensor descriptor
        if len(_DESCRIPTOR_CLASSES) < 64:
            _DESCRIPTOR_CLASSES.add(cls)
        return _descriptor_key(v)
    return (cls, v)


_DESCRIPTOR_CLASSES = set()  # classes key_of found to be host tensor descriptors


def _descriptor_key(v):
    """A host tensor descriptor's key: what Triton's type of it says, without formatting it."""
    try:
        base = v.base
        return (v.__class__, base.__class__, base.dtype, tuple(v.block_shape), getattr(v, "layout", None))
    except (AttributeError, TypeError):
        return (v.__class__, _tensordesc_type(v))


def _int_key(v, specialize=True, align=True):
    """specialization.int_key, the one rule (an int beyond 64 bits keys as such: the slow path refuses it)."""
    key = int_key(v, specialize, align)
    return key if key is not None else _BEYOND_64_BITS


def _classify(v, specialize, align, tensor):
    """GuardKey's classify: key_of."""
    return key_of(v, tensor)


def raw_key(v):
    """The key of an argument whose exact value matters (autotune keys, heuristics inputs), where
    it is not an exact int, float, bool, str or None (GuardKey keys those by value)."""
    cls = v.__class__
    if cls in (int, float, bool, str) or v is None:
        return (cls, v)
    if cls is tuple or cls is list:  # item by item, by value (a heuristic may read any item)
        return (cls, tuple([raw_key(x) for x in v]))
    return key_of(v)


class _NoTensor:
    """GuardKey's tensor class where torch (with CUDA) is not imported: nothing is one."""


class _NeverKeys:
    """GuardKey's no_key class: every argument of a bundled kernel keys (the slow path explains)."""


def keyed_apart(value) -> bool:
    """Whether the key of an argument (key_params' third kind: ints by int_key's classes, floats
    and bools by class) tells a variant's constant `value` (encoded) from every other value of
    the argument: None, 1, or a value keyed by itself (a dtype, a function...); not another int, a
    float or a bool. A parameter that is not a constexpr but that a variant has such a constant
    compiled in for (a tuple item compiled as a constexpr, say) is keyed by value (raw_key):
    otherwise a call of another value would take the cached variant."""
    if value is None or value.__class__ is int and value == 1:
        return True
    return not isinstance(value, (int, float)) and not (isinstance(value, dict) and "float" in value)


def key_params(params, raw, kinds) -> tuple:
    """GuardKey's params for a bundled kernel (launcher._call's GuardKey): constexprs by value
    (spec.bounded), parameters a layer reads by value (raw_key), the rest as arguments, their
    ints by int_key's full specialization; the launch value (a torch tensor's data_ptr(), read
    once) is answered for those every variant takes as a pointer (or that no kind fits: `kinds`,
    _leaf_kind's per parameter)."""
    return tuple((1, True, True, False, S.bounded) if p.constexpr else
                 (2, True, True, False, raw_key) if p.name in raw else
                 (0, True, True, kind in ("pointer", "any"), _IK)
                 for p, kind in zip(params, kinds))


# ---- the generated call ----
def _leaf_kind(args):
    """How every variant takes an argument (the variants' launcher.spec.Arg at its place):
    "pointer", "int", "float", "descriptor", "tuple" or "any"."""
    kinds = {a.kind for a in args}
    types = {a.type for a in args}
    if kinds == {"pointer"}:
        return "pointer"
    if kinds <= {"scalar", "constexpr"} and types - {"constexpr"} <= set(S.INT_RANGES):
        return "int"
    if kinds == {"scalar"} and types <= set(S.FLOATS):
        return "float"
    if kinds == {"tensordesc"}:
        return "descriptor"
    if kinds == {"tuple"}:
        return "tuple"
    return "any"


def _compile(source, kind, namespace, qualname):
    """The function `source` defines, reading the names of `namespace` (codegen.define: kernels of
    one signature share its code). The builtins it uses come under names no parameter can take."""
    fn, = codegen.define(source, f"bundle {kind}", {**namespace, **codegen.BUNDLE_BUILTINS}, kind)
    fn.__qualname__ = qualname
    return fn


class _Entry:
    """What a specialization key chose: the launcher, CUfunction and fills of one variant on one device."""

    __slots__ = ("kernel", "variant", "run", "direct", "flat", "function", "metadata", "fills", "arrays", "parts",
                 "stream")

    def __init__(self, kernel, variant, run, function, fills, arrays, stream):
        self.kernel = kernel
        self.variant = variant
        self.run = run  # the variant's CudaLauncher
        self.direct = run.direct()  # its launch without hooks or metadata to pass
        self.flat = run.flat_launch(variant.spec.packed_metadata) or _declined  # the same in one C call
        self.function = function
        self.metadata = variant.spec.packed_metadata
        self.fills = fills  # ((index, value), ...) for the arguments the call did not pass
        self.arrays = arrays  # indices of arguments holding __cuda_array_interface__ objects
        self.stream = stream
        # what a call whose arguments need no adjusting (fills, device arrays) launches with, read
        # at once by the generated call and the C call (GuardKey.set_bundle_call); None where they do
        self.parts = None if fills or arrays else (self.flat, function, stream)

    def not_flat(self, result, gx, gy, gz, stream, *args):
        """After the C launch (flat) did not launch: it declined (False), so the direct launch
        converts, checks and explains; or the driver refused ((status, packed bytes))."""
        if result:
            self.run._launch_failed(*result)
        self.direct(gx, gy, gz, stream, self.function, *args)

    def complete(self, args):
        """The arguments as the launcher takes them: the fills in, device arrays as addresses."""
        args = list(args)
        for i, value in self.fills:
            args[i] = value
        for i in self.arrays:
            args[i] = addresses(args[i])
        return tuple(args)

    def grid3(self, grid, args):
        if self.fills:
            args = list(args)
            for i, value in self.fills:
                args[i] = value
        return self.kernel.grid3(grid, args)


def _unencoded(desc):
    """A TMA-lowered descriptor's parameters as the packer checks them, the map itself not encoded."""
    return (bytes(128), *desc.shape, *desc.strides)


def _declined(*args):
    """The C launch of a variant that has none (CudaLauncher.flat_launch): every call declines."""
    return False


def _is_array(v) -> bool:
    return getattr(v, "data_ptr", None) is None and getattr(v, "__cuda_array_interface__", None) is not None


def addresses(value):
    """`value` with every __cuda_array_interface__ object (in tuples too) replaced by its address."""
    if isinstance(value, (tuple, list)):
        return tuple(addresses(v) for v in value)
    if _is_array(value):
        return array_interface(value)[0]
    return value


class BundleKernel:
    """One kernel of a bundle: `k[grid](*args, **kwargs)` launches it (see the module docstring)."""

    def __init__(self, bundle, entry: BF.KernelEntry, variants):
        self.bundle = bundle
        self.name = entry.name
        self.function = entry.function
        self.entry = entry
        self.params = entry.params
        self.names = tuple(p.name for p in entry.params)
        self._variants = variants
        self._chooser = None  # made on the first call that needs it
        self._lock = threading.Lock()
        self._cache = {}  # specialization key -> _Entry
        self._keyer = None  # the key of a call and its lookup in _cache (launcher._call.GuardKey), made with _call
        self._launchers = {}  # variant id -> CudaLauncher
        self._functions = {}  # (variant id, device) -> CUfunction
        self._modules = []  # modules this kernel holds in launcher.module_cache()
        self._archs = {}  # device -> compute capability
        self._checkers = {}  # variant id -> (its spec under the kernel's name, encoders that check only)
        archs = {v.spec.arch for v in variants}
        self._only_arch = archs.pop() if len(archs) == 1 else None  # where every variant is for one architecture
        self._finalizer = weakref.finalize(self, _release, self._modules)
        self._finalizer.atexit = False
        self._layer_names = set()  # parameters a layer may supply
        self._raw = set()  # parameters whose exact value the choice depends on
        for layer in entry.layers:
            if layer.kind == "autotune":
                for c in layer.configs:
                    self._layer_names.update(c["kwargs"])
                self._raw.update(layer.key)
            else:
                self._layer_names.update(layer.names)
                for inputs, _ in layer.records:
                    self._raw.update(inputs)
        for v in variants:  # a constant compiled in for an argument its key would not tell apart
            self._raw.update(self.params[path[0]].name for path, value in v.spec.constants or ()
                             if not self.params[path[0]].constexpr and not keyed_apart(value))
        self._call = None  # the generated call path, made on first use
        self._bound = None  # k[grid]: the keyer's bind, set with _call
        self._binder = None

    @property
    def chooser(self) -> V.Chooser:
        if self._chooser is None:
            self._chooser = V.Chooser(self.entry, self._variants)
        return self._chooser

    def _bind(self, *args, **kwargs):
        """(arguments by parameter, compile options, stream) of a call, bound as the launch binds them."""
        if self._binder is None:
            signature, stream, namespace = codegen.bundle_signature(self.params, self._layer_names, False,
                                                                    V.MISSING, REQUIRED)
            self._binder = _compile(codegen.BUNDLE_BIND.format(signature=signature, names="".join(f"{n}, " for n in self.names),
                                                 stream=stream), "bind", namespace, self.name)
        return self._binder(*args, **kwargs)

    def _generate(self):
        with self._lock:  # one call and one keyer per kernel (release() forgets that keyer's last entry)
            if self._call is None:
                call = self._generate_call()
                self._bound = self._keyer.bind
                self._call = call
            return self._call

    def _generate_call(self):
        signature, stream, namespace = codegen.bundle_signature(self.params, self._layer_names, True, V.MISSING,
                                                                REQUIRED)
        torch = sys.modules.get("torch") if _torch_cuda() and _torch_raw else None  # tensors keyed by GuardKey
        kinds = [_leaf_kind([v.spec.args[i] for v in self._variants]) for i in range(len(self.params))]
        params = key_params(self.params, self._raw, kinds)
        self._keyer = _call.GuardKey(params, ("device",), torch.Tensor if torch is not None else _NoTensor, _int_key, _classify,
                                     _NeverKeys, DIVISIBILITY_MASK, None, self._cache)
        passed = [f"_launcher_p{i}" if param[3] else p.name for i, (p, param) in enumerate(zip(self.params, params))]
        positional = sum(1 for p in self.params if not p.keyword_only)
        device = _torch_raw[0] if _torch_raw else _current_device
        namespace.update(_launcher_slow=self._slow, _launcher_FIND=self._keyer.find, _launcher_device=device,
                         _launcher_CACHE=self._cache, _launcher_KEY_AFTER=_KEY_AFTER,
                         _launcher_stream_of=stream_handle, _launcher_too_many=self._too_many)
        source = codegen.BUNDLE_CALL.format(signature=signature, stream=stream, count=positional,
                                            names="".join(f"{n}, " for n in self.names),
                                            outs="".join(f"{n}, " for n in passed if n.startswith("_launcher_p")),
                                            passed="".join(f"{n}, " for n in passed))
        call = _compile(source, "launch", namespace, self.name)
        # k[grid](...) is the keyer's C call, which binds, finds and launches a hit; the generated
        # call takes every other call, as it came
        self._keyer.set_bundle_call(call, {n: i for i, n in enumerate(self.names)},
                                    codegen.bundle_defaults(self.params, self._layer_names, V.MISSING, REQUIRED),
                                    positional, device, self.name)
        return call

    def key(self, device, *values):
        """The key the generated call computes for these arguments (by parameter, as bound) on `device`."""
        if self._call is None:
            self._generate()
        return self._keyer.find(device, *values)[1]

    def __repr__(self):
        return f"<bundled kernel {self.name} ({len(self._variants)} variants)>"

    def __getitem__(self, grid):
        if grid is None:
            return functools.partial(self._call or self._generate(), grid)
        bind = self._bound
        if bind is None:
            self._generate()
            bind = self._bound
        return bind(grid)  # a C call (launcher._call.GuardCall): the generated call takes what its hit does not

    def _too_many(self, count, extra):
        raise TypeError(f"kernel {self.name!r} takes {count} positional arguments "
                        f"({', '.join(p.name for p in self.params if not p.keyword_only)}) but "
                        f"{count + len(extra)} were given")

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kernel {self.name!r} is launched as kernel[grid](*args, **kwargs)")

    def _prepare_launch(self, grid, args, kwargs):
        """launcher.prepare(k, grid, *args, **kwargs) of a bundled kernel: the variant this call
        chooses, loaded on the current device, as a PreparedLaunch (launcher.prepared)."""
        from launcher.prepared import PreparedLaunch
        from launcher.triton_adapter import EMPTY, Parameter

        if self.entry.layers:
            raise TypeError(f"kernel {self.name!r}: prepare() of a bundled kernel with @triton.autotune or "
                            "@triton.heuristics layers is not supported (new arguments could need another "
                            "choice); launch it as kernel[grid](...)")
        bound, options, stream = self._bind(*args, **kwargs)
        self._header(grid, stream)
        device, variant, values = self._choose(bound, options)
        function = self._load(variant, device)
        params = tuple(Parameter(p.name, V.decode_constant(p.default) if p.has_default else EMPTY, p.constexpr,
                                 p.do_not_specialize, p.do_not_specialize_on_alignment, p.annotation)
                       for p in self.params)
        entry = self._entry(variant, device, bound, values)
        stream_fn = entry.stream if stream is None else (lambda: stream_handle(stream))
        return PreparedLaunch(variant.spec, params, tuple(values), dict(options or {}), grid, function=function,
                              stream=stream_fn, device=device, convert=addresses)

    # -- choosing --
    def _prepare(self, args, options, arch):
        """(Variant, the completed arguments) for a call's bound arguments."""
        values = list(args)
        for p, v in zip(self.params, values):
            if v is REQUIRED:
                raise TypeError(f"kernel {self.name!r}: missing required argument {p.name!r}")
        passed_options = options
        values, options, wildcard = self.chooser.apply_layers(values, options)
        for i, (p, v) in enumerate(zip(self.params, values)):
            if v is V.MISSING and p.has_default:
                values[i] = V.decode_constant(p.default)
                if isinstance(values[i], V.Encoded) and not p.constexpr:
                    raise TypeError(f"kernel {self.name!r}: the default of parameter {p.name!r} "
                                    f"({p.default!r}) is not a value a bundle can pass; pass {p.name}")
        variant = self.chooser.choose(values, options, arch, wildcard=wildcard,
                                      recorded=_Recorded(self, args, passed_options))
        constants = dict(variant.spec.constants)
        for i, v in enumerate(values):
            if v is V.MISSING:  # a constexpr the variant decides (an autotune config chosen in part)
                values[i] = V.decode_constant(constants.get((i,)))
        self._check_values(variant, values)
        return variant, values

    def _check_values(self, variant, values):
        """The packer's own checks of the arguments (launcher.arguments.flat_values: counts, types,
        ranges: a pointer in [0, 2**64), an fp32 that fits), made when the variant is chosen, before
        the driver is asked for anything, naming the kernel by its qualified name. Tensor
        descriptors are checked but not encoded (encoding a TMA map asks the driver)."""
        checker = self._checkers.get(variant.id)
        if checker is None:
            spec = variant.spec.derive(kernel=self.name)
            encoders = {}
            for path, a in S.leaves(spec.args):
                if a.kind == "tensordesc":
                    encoders[path] = (_unencoded if a.desc.tma is not None else
                                      decomposer(spec.conventions.tensordesc_tf32_flag, a.desc.ndim))
            checker = self._checkers[variant.id] = (spec, encoders)
        flat_values(checker[0], addresses(values), checker[1])

    def choose(self, *, arch=None):
        """`k.choose(arch=90)(*args, **kwargs)`: the variant (launcher.variants.Variant) a call
        with these arguments runs on a device of that compute capability (None: this device's)."""
        def chosen(*args, **kwargs):
            bound, options, _ = self._bind(*args, **kwargs)
            return self._prepare(bound, options, self._arch(None) if arch is None else arch)[0]

        return chosen

    def dry_run(self, grid, *, arch=None):
        """`k.dry_run(grid, arch=90)(*args, **kwargs)`: everything a launch does on the host but
        loading the cubin and the driver call (the variant is chosen, arguments checked and
        packed by the C library): returns the bytes each kernel parameter would receive."""
        def run(*args, **kwargs):
            bound, options, stream = self._bind(*args, **kwargs)
            variant, values = self._prepare(bound, options, self._arch(None) if arch is None else arch)
            g = self.grid3(grid, values)
            return self._launcher(variant).dry_run(*g, 0 if stream is None else stream_handle(stream), 0,
                                                   variant.spec.packed_metadata, None, None, None, *addresses(values))

        return run

    # -- launching --
    def grid3(self, grid, values):
        if callable(grid):
            grid = grid(self._meta(values))
        return grid3(grid, self.name)

    def _meta(self, values):
        return {n: (v.data if isinstance(v, V.Encoded) else v) for n, v in zip(self.names, values)}

    def _header(self, grid, stream) -> tuple:
        """(the grid as three ints, None for a callable one; the stream handle, None for none),
        checked as the launcher checks them, before the driver is asked anything."""
        handle = None if stream is None else stream_handle(stream)
        g = None if callable(grid) else self.grid3(grid, ())
        check_header(self._variants[0].spec, *(g or (1, 1, 1)), 0 if handle is None else handle, 0)
        return g, handle

    def _choose(self, args, options) -> tuple:
        """(device, Variant, the completed arguments) of a call on the current device. The call's
        own errors (arguments no variant of any architecture takes, unknown options) come before
        the driver is asked for the device: the choice among all variants is made first, and it
        is the device's choice where every variant is for the device's architecture."""
        try:
            found = self._prepare(args, options, None)
        except V.AmbiguousVariantError:  # variants of several architectures may fit alike: the device's decides
            found = None
            self._check_every_arch(args, options)
        device = _current_device()
        arch = self._arch(device)
        if found is None or arch != self._only_arch:
            found = self._prepare(args, options, arch)
        return (device, *found)

    def _check_every_arch(self, args, options):
        """Where variants of several architectures fit a call alike: the arguments' own errors
        (the packer's, as _check_values makes them) before the device is asked, where the
        variant of every architecture would refuse them."""
        errors = []
        for arch in sorted({v.spec.arch for v in self._variants}):
            try:
                self._prepare(args, options, arch)
                return  # one architecture takes the call: the device decides
            except V.NoVariantError:
                continue
            except (TypeError, ValueError, OverflowError) as e:
                errors.append(e)
        if errors:
            raise errors[0]

    def _slow(self, grid, stream, args, options, key):
        """The first call of a key (or one with options or without a key): choose, check the
        grid and stream, load, launch; the entry is kept for the key (_KEY_AFTER: the key is made
        once the call's arguments are checked and its device known)."""
        g, handle = self._header(grid, stream)
        device, variant, values = self._choose(args, options or {})
        if key is _KEY_AFTER:  # a call made while nothing was recorded: keyed now, on the device chosen for
            try:
                key = self._keyer.find(device, *args)[1]
            except Exception:  # a key that cannot be made: the entry is not kept
                key = None
        if g is None:  # a callable grid, of the chosen variant's meta-parameters
            g = self.grid3(grid, values)
            check_header(variant.spec, *g, 0 if handle is None else handle, 0)  # before the module loads
        entry = self._entry(variant, device, args, values)
        if key is not None and options is None:
            with self._lock:
                if len(self._cache) >= _MAX_ENTRIES:
                    self._cache.clear()
                self._cache[key] = entry
        entry.run(*g, entry.stream() if handle is None else handle, entry.function,
                  entry.metadata, None, None, None, *addresses(values))

    def _arch(self, device):
        if device is None:
            device = _current_device()
        arch = self._archs.get(device)
        if arch is None:
            major, minor = driver.device_capability(device)
            arch = self._archs[device] = major * 10 + minor
        return arch

    def _launcher(self, variant):
        run = self._launchers.get(variant.id)
        if run is None:
            source = allocation.allocator_for(variant.spec.kernel)
            run = CudaLauncher.from_spec(variant.spec, global_allocator=source, profile_allocator=source)
            self._launchers[variant.id] = run
        return run

    def _entry(self, variant, device, args, values):
        function = self._functions.get((variant.id, device))
        if function is None:
            function = self._load(variant, device)
        fills = tuple((i, values[i]) for i, v in enumerate(args) if v is V.MISSING)
        arrays = tuple(i for i, v in enumerate(values) if any(_is_array(x) for x in leaves((v,))))
        torch = sys.modules.get("torch")
        uses_torch = torch is not None and any(isinstance(v, torch.Tensor) or isinstance(getattr(v, "base", None),
                                                                                          torch.Tensor)
                                               for v in leaves(values))
        if uses_torch:  # torch's raw current-stream function where there is one
            stream = functools.partial(_torch_raw[1] if _torch_raw else _torch_stream, device)
        else:
            stream = _default_stream
        return _Entry(self, variant, self._launcher(variant), function, fills, arrays, stream)

    def _load(self, variant, device):
        from launcher.modules import module_cache

        with self._lock:
            function = self._functions.get((variant.id, device))
            if function is not None:
                return function
            _fence_check(variant.entry)
            spec = variant.spec
            module, function, _regs, _spills, max_threads = module_cache().load_binary(
                spec.kernel, variant.entry.cubin, spec.shared, device, oversized_shared=spec.conventions.oversized_shared)
            threads = spec.num_warps * spec.warp_size
            if threads > max_threads:
                module_cache().unload_module(module)
                raise RuntimeError(f"kernel {self.name!r}: variant {variant.id} needs {threads} threads per block; "
                                   f"device {device} runs at most {max_threads} of this kernel (out of resources)")
            self._modules.append(module)
            self._functions[(variant.id, device)] = function
            return function

    def release(self):
        """Let go of the modules this kernel loaded (the next launch loads them again)."""
        with self._lock:
            if self._keyer is not None:
                self._keyer.forget()
            self._cache.clear()
            self._functions.clear()
            _release(self._modules)


class _Recorded:
    """The variants a capture recorded for a call with these arguments (computed when asked)."""

    def __init__(self, kernel, args, options):
        self.kernel, self.args, self.options = kernel, args, options

    def __iter__(self):
        forms = {n: V.call_form(v) for n, v in zip(self.kernel.names, self.args) if v is not V.MISSING}
        options = {k: v for k, v in self.options.items()}
        for call in self.kernel.entry.calls:
            if call.args == forms and all(S.same_value(options.get(k), v) for k, v in call.options.items()) \
                    and set(call.options) == set(options):
                yield call.variant


def leaves(values):
    """The items of nested tuples and lists, depth first."""
    for v in values:
        if isinstance(v, (tuple, list)):
            yield from leaves(v)
        else:
            yield v


def _release(modules):
    from launcher.modules import module_cache

    while modules:
        module = modules.pop()
        try:
            module_cache().unload_module(module)
        except Exception as e:  # the driver may be gone at interpreter exit
            log.debug("releasing a bundled module failed: %s", e)


# ---- devices and streams ----
_torch_raw = []  # [torch._C's current-device and current-raw-stream functions], once torch's CUDA is up


_torch_without_cuda = []  # [True] once an imported torch was found to have no CUDA (a CPU build)


def _torch_cuda() -> bool:
    """Whether an imported torch has CUDA; the first time it does, keep its raw device and stream functions."""
    if _torch_raw:
        return True
    torch = sys.modules.get("torch")
    if torch is None or _torch_without_cuda:
        return False
    if not torch.cuda.is_available():
        _torch_without_cuda.append(True)
        return False
    torch.cuda.current_device()  # initializes torch's CUDA state the first time
    raw = (getattr(torch._C, "_cuda_getDevice", None), getattr(torch._C, "_cuda_getCurrentRawStream", None))
    if None not in raw:
        _torch_raw[:] = (torch_device_getter(torch) or raw[0], raw[1])
    return True


def _current_device() -> int:
    """torch's current device when torch (with CUDA) is imported, else the driver's current device."""
    if _torch_raw:
        return _torch_raw[0]()
    if _torch_cuda():
        return sys.modules["torch"].cuda.current_device()
    return driver.current_device()


def _torch_stream(device):
    if _torch_raw:
        return _torch_raw[1](device)
    import torch

    return torch.cuda.current_stream(device).cuda_stream


def _default_stream():
    return 0


# ---- the fence check ----
_fence_lock = threading.Lock()
_fence_seen: dict = {}  # variant id -> FenceHazardError or None
_said_no_ptx = [False]


def fence_checker_id() -> str:
    """What identifies the fence checker: a hash of launcher.fence's source files. A result the
    exporter recorded under the same checker is the result a check at load would give."""
    global _checker_id
    if _checker_id is None:
        import hashlib
        import importlib.util
        import os

        spec = importlib.util.find_spec("launcher.fence")
        h = hashlib.sha256()
        for directory in spec.submodule_search_locations or ():
            for name in sorted(os.listdir(directory)):
                if name.endswith(".py"):
                    h.update(name.encode() + b"\0")
                    with open(os.path.join(directory, name), "rb") as f:
                        h.update(f.read())
        _checker_id = h.hexdigest()[:16]
    return _checker_id


_checker_id = None


def fence_record(ptx, ttgir, name):
    """What the exporter records of a variant's fence check ({"checker", "clean"}), or None."""
    if ptx is None:
        return None
    from launcher import fence

    try:
        report = fence.check_kernel(ptx=ptx, ttgir=ttgir, name=name)
    except Exception:  # unreadable IR: the loader checks again (and says so)
        return None
    return {"checker": fence_checker_id(), "clean": not report.errors}


def _fence_check(variant):
    policy = fence_policy()
    if policy == "off":
        return
    with _fence_lock:
        known = variant.id in _fence_seen
        error = _fence_seen.get(variant.id)
    recorded = variant.fence
    if not known and recorded is not None and recorded["clean"] and recorded["checker"] == fence_checker_id():
        known = True  # the same checker found nothing in the same PTX when the bundle was written
    if not known:
        from launcher import fence

        error = None
        if variant.ptx is None:
            if not _said_no_ptx[0]:
                _said_no_ptx[0] = True
                log.info("fence check skipped for %r and later bundled kernels without PTX", variant.spec.kernel)
        else:
            try:
                report = fence.check_kernel(ptx=variant.ptx, ttgir=variant.ttgir, name=variant.spec.kernel)
            except Exception as e:  # an unreadable IR must not stop the kernel loading
                log.warning("fence check of %r failed (%s: %s); the kernel is loaded unchecked",
                            variant.spec.kernel, type(e).__name__, e)
                report = None
            if report is not None and report.errors:
                error = fence.FenceHazardError(report)
                if policy == "warn":
                    log.warning("%s", report.format_text())
        with _fence_lock:
            _fence_seen[variant.id] = error
    if error is not None and policy == "error":
        raise error


# ---- bundles ----
class Bundle:
    """The kernels of a bundle file, by qualified name (`bundle["kernels.add_kernel"]`) or by
    function name when it is unique (`bundle["add_kernel"]`, `bundle.add_kernel`)."""

    def __init__(self, path, data: BF.BundleData):
        self.path = path
        self.data = data
        self.kernels = {}
        for name, entry in data.kernels.items():
            self.kernels[name] = BundleKernel(self, entry, [data.variants[v] for v in entry.variants])

    def __repr__(self):
        return f"<launcher bundle {str(self.path)!r}: {', '.join(self.kernels)}>"

    def __iter__(self):
        return iter(self.kernels)

    def __len__(self):
        return len(self.kernels)

    def __contains__(self, name):
        try:
            self._find(name)
        except KeyError:
            return False
        return True

    def _find(self, name) -> BundleKernel:
        kernel = self.kernels.get(name)
        if kernel is not None:
            return kernel
        candidates = [k for k in self.kernels.values() if k.function == name]
        if len(candidates) == 1:
            return candidates[0]
        if candidates:
            raise KeyError(f"bundle {str(self.path)!r}: {name!r} names several kernels; use a qualified name: "
                           + ", ".join(k.name for k in candidates))
        raise KeyError(f"bundle {str(self.path)!r} has no kernel {name!r}; it has: " + ", ".join(self.kernels))

    def __getitem__(self, name) -> BundleKernel:
        return self._find(name)

    def __getattr__(self, name) -> BundleKernel:
        if name.startswith("_") or "kernels" not in self.__dict__:
            raise AttributeError(name)
        try:
            return self._find(name)
        except KeyError as e:
            raise AttributeError(e.args[0]) from None

    def close(self):
        """Let go of every module the bundle's kernels loaded."""
        for k in self.kernels.values():
            k.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def load_bundle(path) -> Bundle:
    """The kernels of the bundle file `path` (BundleError if it is damaged, tampered with, of an
    unknown format version, or contradicts itself). Needs neither Triton nor a GPU; cubins are
    loaded on each kernel's first launch on a device."""
    return Bundle(path, BF.read_bundle(path))
