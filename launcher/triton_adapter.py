"""The one module that knows Triton: everything else in launcher works from a `LaunchSpec`.

Here, and nowhere else:
- Triton's `src` and `metadata` are read (`spec_from_triton`);
- Triton versions are compared: what differs between the releases we support (3.6 to 3.9)
  becomes data, the `Release` facts and the spec's `Conventions`;
- Triton's runtime hooks are found: its scratch allocators and its own tensor-map type.

Importing this module does not import Triton; each function imports it when called.
"""
from __future__ import annotations

import functools
import operator
import re
from dataclasses import dataclass

from launcher import spec as S

SUPPORTED = ((3, 6), (3, 9))  # inclusive range of (major, minor)


class UnsupportedKernel(RuntimeError):
    """A kernel this launcher cannot launch (the stock launcher takes it when there is one)."""


def import_triton():
    """Triton's package (ModuleNotFoundError where it is not installed)."""
    import triton

    return triton


@functools.lru_cache(maxsize=None)
def triton_version() -> tuple:
    """(major, minor) of the installed Triton."""
    import triton

    m = re.match(r"(\d+)\.(\d+)", triton.__version__)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


@functools.lru_cache(maxsize=None)
def triton_release() -> tuple:
    """(major, minor, patch) of the installed Triton: where a fix landed in a patch release
    (3.7.1 fences what 3.7.0 leaves unfenced)."""
    import triton

    m = re.match(r"(\d+)\.(\d+)\.(\d+)", triton.__version__)
    return tuple(int(g) for g in m.groups()) if m else triton_version() + (0,)


def is_supported() -> bool:
    return SUPPORTED[0] <= triton_version() <= SUPPORTED[1]


@dataclass(frozen=True)
class Release:
    """What the installed Triton release does differently, as named facts."""

    version: tuple
    conventions: S.Conventions  # how its kernels take their arguments (into every spec)
    fill_tma_name: str  # the CudaUtils function Triton calls to encode a tensor map
    oversized_shared_limit: bool  # sm_107's oversized maximum counts as the shared limit (3.8+)


@functools.lru_cache(maxsize=None)
def release() -> Release:
    v = triton_version()
    newer = v >= (3, 7)
    return Release(
        version=v,
        conventions=S.Conventions(tensordesc_tf32_flag=newer, tma_original_shape=newer, tma_tf32=newer,
                                  tma_clear_bit21=newer, oversized_shared=v >= (3, 8)),
        fill_tma_name="fill_tma_descriptor_tiled" if newer else "fill_tma_descriptor",
        oversized_shared_limit=v >= (3, 8),
    )


def unsupported_reason(metadata) -> str | None:
    """Why a kernel must go to the stock launcher, or None."""
    mode = getattr(metadata, "instrumentation_mode", "") or ""
    if "gsan" in str(mode):
        return "gsan instrumentation"
    return None


def arg_names(src) -> tuple:
    """Display names of a kernel's arguments: names for ASTSource, positions for IRSource."""
    keys = list(src.signature.keys())
    fn = getattr(src, "fn", None)
    names = getattr(fn, "arg_names", None)
    if names is not None and len(names) == len(keys):
        return tuple(names)
    return tuple(k if isinstance(k, str) else f"#{k}" for k in keys)


def _path(key, names) -> tuple | None:
    """An ASTSource constants/attrs key (a path tuple, or an argument name) as a path."""
    if isinstance(key, str):
        return (names.index(key),) if key in names else None
    if isinstance(key, tuple) and all(isinstance(i, int) for i in key):
        return key
    return None


def _split_top_level(text: str) -> list:
    """Split an MLIR argument list at the commas outside (), {}, [] and <>."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "({[<":
            depth += 1
        elif ch in ")}]>":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _ir_divisibility(src) -> tuple | None:
    """For an IRSource of TTIR/TTGIR: the arguments its entry marks tt.divisibility = 16."""
    text = getattr(src, "src", None)
    if not isinstance(text, str) or getattr(src, "ext", None) not in ("ttir", "ttgir"):
        return None
    m = re.search(r"tt\.func\s+public\s+@[\w$.]+\s*\(", text)
    if not m:
        return None
    depth, end = 1, m.end()
    while end < len(text) and depth:
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        end += 1
    aligned = []
    for i, arg in enumerate(_split_top_level(text[m.end():end - 1])):
        d = re.search(r"tt\.divisibility\s*=\s*(\d+)", arg)
        if d and int(d.group(1)) % 16 == 0:
            aligned.append((i,))
    return tuple(aligned)


def assumptions(src, names) -> tuple:
    """(aligned paths, constexpr values) the compiler assumed, or (None, None) when unknown."""
    constants = getattr(src, "constants", None)
    attrs = getattr(src, "attrs", None)
    if constants is None or attrs is None:  # an IRSource: no constexprs, alignment from its IR
        aligned = _ir_divisibility(src)
        return aligned, (None if aligned is None else ())
    aligned = []
    for key, entries in attrs.items():
        for entry in entries or ():
            if entry[0] == "tt.divisibility" and entry[1] % 16 == 0:
                path = key if key.__class__ is tuple else _path(key, names)
                if path is not None:
                    aligned.append(path)
    encode = S.encode_constant
    consts = [(key if key.__class__ is tuple else _path(key, names), encode(value)) for key, value in constants.items()]
    aligned.sort()
    consts.sort(key=_first)
    return tuple(aligned), tuple(c for c in consts if c[0] is not None)


def _first(item):
    return item[0]


_templates: dict = {}  # what metadata says of a spec's shape -> a spec of that shape


def spec_from_triton(src, metadata) -> S.LaunchSpec:
    """The LaunchSpec of a kernel Triton compiled: `src` is the ASTSource or IRSource Triton
    hands a launcher, `metadata` its KernelMetadata. Raises UnsupportedKernel (or
    UnsupportedSignature) for kernels the stock launcher must take."""
    return kernel_spec(shape_spec(src, metadata), src, metadata)


def shape_spec(src, metadata) -> S.LaunchSpec:
    """The spec of the shape (signature and launch configuration) of a kernel Triton compiled:
    made once per shape, from the first kernel of that shape, and the template every kernel of
    the shape derives its own spec from (kernel_spec). A kernel of a shape seen before costs a
    lookup. Raises as spec_from_triton does."""
    md = metadata
    reason = unsupported_reason(md)
    if reason is not None:
        raise UnsupportedKernel(reason)
    types = tuple(src.signature.values())
    metas = getattr(md, "tensordesc_meta", None) or ()
    try:
        key = (types, repr(metas) if metas else "", _shape_fields(md))
        template = _templates.get(key)
    except TypeError:  # a signature holding lists: no template, plan it anew
        key, template = None, None
    if template is None:
        template = _new_spec(md, arg_names(src), types, metas)
        template.shape_key  # computed once: every spec derived from the template shares it
        if key is not None:
            if len(_templates) >= 4096:
                _templates.clear()
            _templates[key] = template
    return template


def kernel_spec(template, src, metadata) -> S.LaunchSpec:
    """The spec of one kernel of `template`'s shape (shape_spec): its name, argument names,
    target and what the compiler assumed of its arguments."""
    names = arg_names(src)
    aligned, constants = assumptions(src, names)
    arch = getattr(getattr(metadata, "target", None), "arch", None)
    return template.derive(kernel=metadata.name, arg_names=names, arch=arch if isinstance(arch, int) else None,
                           aligned=aligned, constants=constants)


# What a spec's shape takes from the metadata, besides the signature and the descriptors.
_SHAPE_FIELDS = ("num_warps", "num_ctas", "shared", "warp_size", "launch_cooperative_grid", "launch_pdl",
                 "global_scratch_size", "global_scratch_align", "profile_scratch_size", "profile_scratch_align")
_field_getters: dict = {}  # a KernelMetadata class's fields -> (getter of the _SHAPE_FIELDS it has)


def _shape_fields(md) -> tuple:
    """The _SHAPE_FIELDS of `md`. Triton makes a namedtuple class per kernel, so its fields
    find a C attrgetter made once per field set; other metadata objects are read field by field."""
    fields = getattr(md.__class__, "_fields", None)
    if fields is None:
        return tuple(getattr(md, f, None) for f in _SHAPE_FIELDS)
    getter = _field_getters.get(fields)
    if getter is None:
        present = [f for f in _SHAPE_FIELDS if f in fields]
        getter = (fields, operator.attrgetter(*present))
        _field_getters[fields] = getter
    return getter[0], getter[1](md)


def _new_spec(md, names, types, metas) -> S.LaunchSpec:
    rel = release()
    layout = S.layout_for(types, metas, tf32_flag=rel.conventions.tensordesc_tf32_flag)
    if layout.size - S.HEADER_SIZE > S.MAX_PARAM_BYTES:
        raise ValueError(f"kernel {md.name!r} takes {layout.size - S.HEADER_SIZE} bytes of "
                         f"parameters; CUDA allows at most {S.MAX_PARAM_BYTES}")
    num_ctas = int(getattr(md, "num_ctas", 1) or 1)
    return S.LaunchSpec(
        kernel=md.name,
        arg_names=names,
        layout=layout,
        num_warps=int(md.num_warps),
        num_ctas=num_ctas,
        cluster_dims=(num_ctas, 1, 1),  # Triton 3.6-3.9 cluster CTAs along x only
        shared=int(md.shared or 0),
        warp_size=int(getattr(md, "warp_size", None) or 32),
        launch_cooperative_grid=bool(getattr(md, "launch_cooperative_grid", False)),
        launch_pdl=bool(getattr(md, "launch_pdl", False)),
        global_scratch=(int(md.global_scratch_size or 0), int(md.global_scratch_align or 1)),
        profile_scratch=(int(getattr(md, "profile_scratch_size", 0) or 0),
                         int(getattr(md, "profile_scratch_align", 1) or 1)),
        conventions=rel.conventions,
    )


# ---- Triton's runtime: allocators and its tensor-map type ----
def global_scratch_allocator():
    """The allocator for global scratch: `triton.set_allocator`'s (a ContextVar, per thread)."""
    from triton.runtime import _allocation

    return _allocation._allocator.get()


def profile_scratch_allocator():
    """The allocator for profile scratch. 3.8+ falls back to the driver's default (torch)."""
    from triton.runtime import _allocation

    has_own = getattr(_allocation, "has_profile_allocator", None)
    if has_own is None or has_own():
        return _allocation._profile_allocator.get()
    from triton.runtime import driver as rt_driver

    return rt_driver.active.allocate_default_profile_scratch


def stock_tensormap_type():
    """Triton's own PyCUtensorMap class where its driver module made one, else None."""
    import sys

    nv = sys.modules.get("triton.backends.nvidia.driver")
    return getattr(nv, "PyCUtensorMap", None) if nv is not None else None


# ---- for prepared launches and the fast dispatch: Triton's JIT objects ----
@dataclass(frozen=True)
class Parameter:
    """One parameter of a @triton.jit function, as its JIT sees it."""

    name: str
    default: object  # EMPTY when there is none
    is_constexpr: bool
    do_not_specialize: bool
    do_not_specialize_on_alignment: bool
    annotation: str = ""  # as Triton normalizes it ("i64", "*fp16", "constexpr"; "" for none)


EMPTY = object()


def jit_parameters(jit_fn) -> tuple:
    """The parameters of a JITFunction, in order."""
    out = []
    for p in jit_fn.params:
        default = p.default if p.has_default else EMPTY
        out.append(Parameter(p.name, default, bool(p.is_constexpr), bool(p.do_not_specialize),
                             bool(p.do_not_specialize_on_alignment), str(p.annotation or "")))
    return tuple(out)


def unusual_parameters(jit_fn) -> str | None:
    """What makes a JITFunction's parameters other than plain positional-or-keyword ones (Triton
    3.9 takes keyword-only and *args parameters), or None: launcher's generated code binds every
    parameter by position and name."""
    import inspect

    fn = getattr(jit_fn, "fn", None)
    try:
        params = inspect.signature(fn).parameters.values() if fn is not None else ()
    except (TypeError, ValueError):
        return None
    kinds = {p.kind for p in params} - {inspect.Parameter.POSITIONAL_OR_KEYWORD}
    if not kinds:
        return None
    return "keyword-only, positional-only or variadic parameters"


def decorator_chain(kernel) -> tuple:
    """(layers, jit function) of a @triton.jit function under any @triton.autotune and
    @triton.heuristics decorators; layers run outermost first, each ("autotune", Autotuner) or
    ("heuristics", Heuristics)."""
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    layers = []
    while not isinstance(kernel, JITFunction):
        if isinstance(kernel, Autotuner):
            layers.append(("autotune", kernel))
        elif isinstance(kernel, Heuristics):
            layers.append(("heuristics", kernel))
        else:
            raise TypeError(f"expected a @triton.jit function (possibly under @triton.autotune or "
                            f"@triton.heuristics), got {type(kernel).__name__}")
        kernel = kernel.fn
    return tuple(layers), kernel


def heuristic_values(heuristics, args: tuple, kwargs: dict) -> dict:
    """The constexprs a @triton.heuristics layer computes for a call (as its run() does)."""
    nargs = {**dict(zip(heuristics.arg_names, args)), **kwargs}
    return {name: fn(nargs) for name, fn in heuristics.values.items()}


def autotune_key(tuner, args: tuple, kwargs: dict):
    """The key a @triton.autotune layer caches its choice under for a call (3.6-3.9 alike), or
    None when it has a single config (no key)."""
    if len(tuner.configs) <= 1:
        return None
    all_args = {**dict(zip(tuner.arg_names, args)), **kwargs}
    named = {k: v for k, v in all_args.items() if k in tuner.arg_names}
    key = [named[k] for k in tuner.keys if k in named]
    key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
    return tuple(key)


def autotune_choice(tuner, key):
    """The config a tuner chose for `key` (None when it has not tuned that key yet)."""
    if key is None:
        return tuner.configs[0]
    return tuner.cache.get(key)


def config_kwargs(config) -> dict:
    """What a triton.Config adds to a call: its constexprs and compile options."""
    return dict(config.all_kwargs())


def compile_for(jit_fn, grid, args: tuple, kwargs: dict):
    """Compile (or find in the JIT's caches) the kernel Triton would launch for this call,
    without launching it: the CompiledKernel."""
    return jit_fn.warmup(*args, grid=grid, **kwargs)


def current_device() -> int:
    """The current device, as kernel[grid] asks for it (device_and_stream_getters)."""
    return device_and_stream_getters()[0]()


def stream_getter(device: int):
    """A function returning the current stream of `device`, as kernel[grid] asks for it."""
    import functools

    return functools.partial(device_and_stream_getters()[1], device)


def runtime_knobs():
    """Triton's runtime knobs: where launch_enter_hook and launch_exit_hook are read."""
    from triton import knobs

    return knobs.runtime


def hook_chain_type():
    from triton.knobs import HookChain

    return HookChain


def nvidia_driver_module():
    """triton.backends.nvidia.driver, whose CudaLauncher and CudaUtils install() replaces."""
    from triton.backends.nvidia import driver as nv

    return nv


def existing_cuda_drivers(nv) -> list:
    """Triton's driver objects that already exist (created before install), if NVIDIA ones."""
    from triton.runtime.driver import driver as config

    found = []
    for attr in ("_default", "_active"):
        d = getattr(config, attr, None)
        if isinstance(d, nv.CudaDriver) and d not in found:
            found.append(d)
    return found


def add_kernel_load_hook(hook) -> None:
    """Run `hook` before every kernel load (Triton's knobs.runtime.kernel_load_start_hook): added
    to Triton's HookChain, else set, else in front of the user's plain callable (hook.chained)."""
    from triton import knobs

    current = knobs.runtime.kernel_load_start_hook
    if hasattr(current, "add"):
        current.add(hook)
    elif current is None:
        knobs.runtime.kernel_load_start_hook = hook
    else:  # a plain callable set by the user: run ours first, then theirs
        hook.chained = current
        knobs.runtime.kernel_load_start_hook = hook


def remove_kernel_load_hook(hook) -> None:
    """Undo add_kernel_load_hook."""
    from triton import knobs

    current = knobs.runtime.kernel_load_start_hook
    if hasattr(current, "remove"):
        current.remove(hook)
    elif current is hook:
        knobs.runtime.kernel_load_start_hook = hook.chained


_HOOK_CHAIN: list = []  # Triton's HookChain class, read on the first hooks_set


def hooks_set(runtime) -> tuple:
    """(enter, exit): the launch hooks of Triton's `runtime` knobs that are set, None for each
    that is not; the default empty HookChains count as unset (the one rule: the guard's hits,
    prepared launches; cdefs/call.c's hook_set is its C form). Called on every guarded launch."""
    enter, leave = runtime.launch_enter_hook, runtime.launch_exit_hook
    if not _HOOK_CHAIN:
        _HOOK_CHAIN.append(hook_chain_type())
    chain = _HOOK_CHAIN[0]
    if enter is not None and enter.__class__ is chain and not enter.calls:
        enter = None
    if leave is not None and leave.__class__ is chain and not leave.calls:
        leave = None
    return enter, leave


def launch_metadata(compiled, function: int, grid, stream: int, values: tuple):
    """What Triton hands the launch hooks for one launch (CompiledKernel.launch_metadata),
    without loading the kernel through Triton's driver."""
    from triton.compiler.compiler import ASTSource, LazyDict

    ret = LazyDict({"name": compiled.name, "function": function, "stream": stream})
    src = compiled.src
    if isinstance(src, ASTSource) and src.fn.launch_metadata is not None:
        ret.add(src.fn.launch_metadata, (grid, compiled.metadata, dict(zip(src.fn.arg_names, values))))
    return ret


def compiled_binary(compiled) -> tuple:
    """(kernel name, cubin bytes) of a CompiledKernel."""
    return compiled.name, compiled.kernel


def jit_function_class():
    from triton.runtime.jit import JITFunction

    return JITFunction


def is_tritons_run(run) -> bool:
    """Whether `run` is Triton's own JITFunction.run (not code that replaced it with its own)."""
    code = getattr(run, "__code__", None)  # not only its names: functools.wraps copies those onto a wrapper
    return getattr(run, "__module__", None) == "triton.runtime.jit" and \
        getattr(run, "__qualname__", None) == "JITFunction.run" and getattr(run, "__wrapped__", None) is None and \
        code is not None and code.co_name == "run" and code.co_filename.replace("\\", "/").endswith("triton/runtime/jit.py")


@functools.lru_cache(maxsize=None)
def jit_callable_class():
    """Triton's JITCallable (a JIT function passed as an argument is keyed by its cache_key), or
    JITFunction on a release without it."""
    from triton.runtime import jit

    return getattr(jit, "JITCallable", jit.JITFunction)


def active_driver() -> tuple:
    """(Triton's driver config, its active driver): the guard's hit holds while `_active` is
    still that driver (triton.runtime.driver.set_active replaces it)."""
    from triton.runtime.driver import driver as rt

    return rt, rt.active


def dispatch_knobs() -> list:
    """The knobs that enter Triton's JIT cache key on this release, as JITFunction.run reads them
    on every call: (knobs object, attribute) pairs (debug, instrumentation mode; 3.9: fpsan casts)."""
    from triton import knobs

    runtime, compilation = knobs.runtime, knobs.compilation
    out = [(runtime, "debug"), (compilation, "instrumentation_mode")]  # debug first (cached_kernel_finder)
    # 3.9's: a descriptor on the class (hasattr on the class would call it, and it fails there)
    if any("fpsan_homomorphic_casts" in vars(c) for c in type(compilation).__mro__):
        out.append((compilation, "fpsan_homomorphic_casts"))
    return out


def knob_source(holder, attr):
    """(read, args) where knob `attr` of `holder` is a Triton env_bool / env_str descriptor: its
    value is then the holder's own setting (`holder.__dict__[attr]`) where there is one, else
    `read(*args)`, the function its `get` calls on the environment variable (3.9's
    fpsan_homomorphic_casts: libtriton's getenv_bool, read on every call as run reads it), a
    function of the variable args[0] alone (libtriton's getenv and getenv_bool read C's environment
    and nothing else). So the pair (the setting or nothing, read(*args)) decides the value, at a
    fraction of the descriptor's cost. None for anything else (a plain attribute, another
    descriptor)."""
    from triton import knobs

    desc = next((vars(c)[attr] for c in type(holder).__mro__ if attr in vars(c)), None)
    base = getattr(knobs, "env_base", None)
    kinds = {getattr(knobs, "env_bool", None): "getenv_bool", getattr(knobs, "env_str", None): "getenv"}
    read = kinds.get(type(desc))
    if base is None or read is None or type(desc).__get__ is not base.__get__ or getattr(desc, "name", None) != attr:
        return None
    get = type(desc).get  # `return read(self.key, self.default)`, on 3.6 to 3.9
    if get.__code__.co_names != (read, "key", "default"):
        return None
    fn = get.__globals__.get(read)
    return (fn, (desc.key, desc.default)) if callable(fn) else None


def cached_kernel_finder():
    """find(jit_fn, caches, values, options): (the CompiledKernel that JITFunction.run would
    launch for the call `values` (every parameter's argument, in order) with keywords `options`
    on the device whose Triton caches are `caches` (jit_fn.device_caches.get(device), read by the
    caller), Triton's kernel cache, the kernel's key in it), where Triton's cache holds it.
    It is found as run finds it on 3.6 to 3.9: the dispatch knobs into the keywords, the
    device's binder, compute_cache_key, the device's kernel cache. None where Triton has not compiled it, where it is still compiling, or where the call
    is one that run refuses (run then compiles, or raises its own error). Nothing is launched,
    compiled or hooked: the caller has seen that the kernel has no pre-run hooks and that no
    stages-inspection hook is set."""
    from triton.compiler import CompiledKernel
    from triton.runtime.jit import compute_cache_key

    knobs = dispatch_knobs()
    debug_knob = knobs[0][0]
    sources = [(holder, attr, knob_source(holder, attr)) for holder, attr in knobs[1:]]  # run's order

    def find(jit_fn, caches, values: tuple, options: dict):
        if caches is None:
            return None
        kernel_cache, key_cache, _target, _backend, binder = caches
        kwargs = dict(options)  # run's own first lines
        kwargs["debug"] = kwargs.get("debug", jit_fn.debug) or debug_knob.debug
        for holder, attr, source in sources:  # an env descriptor's: its own setting, else what its get() reads
            kwargs[attr] = getattr(holder, attr) if source is None or attr in holder.__dict__ else \
                source[0](*source[1])
        try:
            _bound, specialization, opts = binder(*values, **kwargs)
            key = compute_cache_key(key_cache, specialization, opts)
            kernel = kernel_cache.get(key)
        except Exception:  # run raises it, with its own message
            return None
        if kernel is None or (kernel.__class__ is not CompiledKernel and hasattr(kernel, "result")):
            return None  # a future of an asynchronous compile
        return kernel, kernel_cache, key

    return find


def loaded_launch(kernel):
    """(launcher, function handle) of a CompiledKernel that Triton has loaded; None where it has
    not (its first launch loads it: that, with Triton's load hooks and errors, is left to
    Triton's path), or where loading it failed."""
    run = getattr(kernel, "_run", None)
    function = getattr(kernel, "function", None)
    return (run, function) if run is not None and function else None


def device_and_stream_getters() -> tuple:
    """(get_current_device(), get_current_stream(device)) of Triton's active driver: where every
    front door that follows Triton (the guard, prepared launches) finds them."""
    from triton.runtime.driver import driver as rt

    active = rt.active
    return active.get_current_device, active.get_current_stream


def _torch_of(getter):
    """torch, where `getter` is torch.cuda.current_device; else None."""
    import sys

    torch = sys.modules.get("torch")
    return torch if torch is not None and getter is getattr(torch.cuda, "current_device", None) else None


def fast_device_getter(getter):
    """The same answer as `getter` at less cost (launcher.devices), where `getter` is
    torch.cuda.current_device and torch's CUDA is initialised; otherwise `getter` itself."""
    from launcher.devices import torch_device_getter

    torch = _torch_of(getter)
    if torch is None or not torch.cuda.is_initialized():
        return getter
    return torch_device_getter(torch) or getter


def device_getter_is_final(getter) -> bool:
    """Whether fast_device_getter(getter) can get no cheaper later: not torch's getter, or
    torch's CUDA initialised."""
    torch = _torch_of(getter)
    return torch is None or torch.cuda.is_initialized()


def check_used_globals(jit_fn) -> None:
    """Triton's check (JITFunction.run) that the globals a kernel used have not changed."""
    missing = object()
    for (name, _), (val, globals_dict) in jit_fn.used_global_vals.items():
        if (new := globals_dict.get(name, missing)) != val:
            raise RuntimeError(f"Global variable {name} has changed since we compiled this kernel, "
                               f"from {val} to {new}")


# ---- for bundles ----
# What launcher.bundle_export needs of Triton's objects, read here and nowhere else: a
# CompiledKernel's parts and versions, a JIT function's parameters, the autotune and heuristics
# layers around it, and the hooks a capture uses to see every call. Each function returns
# launcher data (launcher.bundle_format records, plain values) or Triton objects opaque to the
# caller.

# The compile options a call selects a variant by when it does not pass them (Triton compiles
# with its defaults then); the other options are compared only when a call passes them.
SELECTABLE_OPTIONS = ("num_warps", "num_ctas", "num_stages", "maxnreg", "launch_cooperative_grid", "launch_pdl",
                      "enable_fp_fusion")


def _json_value(value):
    """A compile option as JSON data (tuples as lists; anything else by its repr)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
    if isinstance(value, (tuple, list)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    return repr(value)


def _ptx_fact(ptx, pattern):
    m = re.search(pattern, ptx or "", re.M)
    return m.group(1) if m else ""


@functools.lru_cache(maxsize=None)
def _ptxas_version(arch: int) -> str:
    """The version of the ptxas Triton uses for `arch` now ("12.8.93"; "" if it cannot say)."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas_version

        return _ptx_fact(get_ptxas_version(arch), r"V(\d+\.\d+(?:\.\d+)?)")
    except Exception:  # no ptxas in this installation: the version is unknown, not an error
        return ""


def _option_fields():
    import dataclasses

    from triton.backends.nvidia.compiler import CUDAOptions

    return [f.name for f in dataclasses.fields(CUDAOptions)]


@functools.lru_cache(maxsize=None)
def _default_options(arch: int, warp_size: int) -> tuple:
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    options = make_backend(GPUTarget("cuda", arch, warp_size)).parse_options({})
    return tuple((k, _json_value(getattr(options, k))) for k in SELECTABLE_OPTIONS if hasattr(options, k))


def is_compiled_kernel(obj) -> bool:
    """Whether `obj` is a Triton CompiledKernel (checked without importing Triton)."""
    return hasattr(obj, "metadata") and hasattr(obj, "asm") and hasattr(obj, "src")


def kernel_name(kernel) -> str:
    """A CompiledKernel's name, for messages."""
    return str(getattr(kernel, "name", "?"))


def jit_function_of(kernel):
    """The JIT function a CompiledKernel was compiled from (None for IR sources)."""
    return getattr(getattr(kernel, "src", None), "fn", None)


def variant_parts(kernel) -> dict:
    """What a bundle keeps of a CompiledKernel: its spec, cubin, PTX and TTGIR, target, the
    Triton, PTX ISA and ptxas versions, its compile options and its release's defaults."""
    import triton

    md = kernel.metadata
    if jit_function_of(kernel) is None:
        raise UnsupportedKernel(f"kernel {md.name!r} was compiled from an IR file, not a Triton function: "
                                "a bundle needs the function's parameters")
    spec = spec_from_triton(kernel.src, md)
    asm = kernel.asm
    ptx, ttgir = dict.get(asm, "ptx"), dict.get(asm, "ttgir")
    arch = spec.arch
    fields = _option_fields()
    return dict(
        spec=spec, cubin=bytes(kernel.kernel), ptx=ptx, ttgir=ttgir,
        target=_ptx_fact(ptx, r"^\s*\.target\s+(\w+)") or (f"sm_{arch}" if arch else ""),
        triton_version=str(getattr(md, "triton_version", None) or triton.__version__),
        ptx_isa=_ptx_fact(ptx, r"^\s*\.version\s+(\d+\.\d+)"),
        ptxas_version=_ptxas_version(arch) if arch else "",
        options={k: _json_value(getattr(md, k)) for k in fields if hasattr(md, k)},
        default_options=dict(_default_options(arch, spec.warp_size)) if arch else {},
    )


def function_record(fn) -> dict:
    """A JIT function's identity and Python parameters, as the bundle keeps them."""
    import inspect

    from launcher import bundle_format as BF

    keyword_only_kept = triton_version() >= (3, 9)  # 3.6-3.8 bind every parameter positionally too
    params = []
    for kp, (name, p) in zip(fn.params, fn.signature.parameters.items()):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise UnsupportedKernel(f"kernel {fn.__name__!r}: parameter {name!r} is *{name} or **{name}, "
                                    "which a bundle cannot call")
        has_default = p.default is not inspect.Parameter.empty
        params.append(BF.Param(
            name=name, constexpr=bool(kp.is_constexpr), keyword_only=keyword_only_kept and p.kind == p.KEYWORD_ONLY,
            has_default=has_default, default=S.encode_constant(p.default) if has_default else None,
            annotation=str(kp.annotation or ""), do_not_specialize=bool(kp.do_not_specialize),
            do_not_specialize_on_alignment=bool(kp.do_not_specialize_on_alignment)))
    try:
        file = inspect.getsourcefile(fn.fn)
    except TypeError:
        file = None
    line = getattr(fn, "starting_line_number", None)
    return dict(function=fn.__name__, module=str(fn.__module__), qualname=fn.__qualname__, file=file,
                line=line if isinstance(line, int) else None, params=tuple(params))


def layers_of(obj) -> tuple:
    """(JIT function, [layer objects, outermost first]) of what a user calls: a JITFunction, or
    an Autotuner / Heuristics around one."""
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    layers = []
    while not isinstance(obj, JITFunction):
        if not isinstance(obj, (Autotuner, Heuristics)):
            raise UnsupportedKernel(f"{type(obj).__name__} is neither a Triton function nor an autotune or "
                                    "heuristics layer around one")
        layers.append(obj)
        obj = obj.fn
    return obj, layers


def _config_record(config, name) -> dict:
    if getattr(config, "pre_hook", None) is not None:
        raise UnsupportedKernel(f"kernel {name!r}: autotune config {config} has a pre_hook, Python code that "
                                "a bundle cannot hold")
    if getattr(config, "ir_override", None) is not None:
        raise UnsupportedKernel(f"kernel {name!r}: autotune config {config} overrides the IR from a file")
    return {"kwargs": {k: S.encode_constant(v) for k, v in config.kwargs.items()},
            "num_warps": config.num_warps, "num_stages": config.num_stages, "num_ctas": config.num_ctas,
            "maxnreg": config.maxnreg}


def layer_record(layer, name):
    """The bundle record of an Autotuner or Heuristics layer (without choices or records)."""
    from triton.runtime.autotuner import Autotuner

    from launcher import bundle_format as BF

    if isinstance(layer, Autotuner):
        return BF.Autotune(key=tuple(layer.keys), configs=tuple(_config_record(c, name) for c in layer.configs))
    return BF.Heuristics(names=tuple(layer.values))


def autotune_config_index(layer, config) -> int:
    """The index of `config` (what the autotuner chose) among the layer's configs."""
    for i, c in enumerate(layer.configs):
        if c is config or c == config:
            return i
    raise UnsupportedKernel(f"the autotuner chose a config ({config}) that is not one of its configs")


class _TrackingDict(dict):
    """The argument dict a heuristic reads, remembering which names it read."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.read = set()
        self.read_all = False

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)

    def _all(self):
        self.read_all = True

    def keys(self):
        self._all()
        return super().keys()

    def values(self):
        self._all()
        return super().values()

    def items(self):
        self._all()
        return super().items()

    def __iter__(self):
        self._all()
        return super().__iter__()

    def copy(self):
        self._all()
        return dict(self)


class _CaptureHooks:
    """Class-level wrappers of JITFunction.run, Autotuner.run, Heuristics.run and
    CompiledKernel._init_handles that tell every active sink what ran, while any is active."""

    def __init__(self):
        import threading

        self.lock = threading.Lock()
        self.local = threading.local()
        self.sinks = []
        self.saved = None

    # -- sinks --
    def add(self, sink):
        with self.lock:
            if self.saved is None:
                self._patch()
            self.sinks.append(sink)

    def remove(self, sink):
        with self.lock:
            self.sinks.remove(sink)
            if not self.sinks and self.saved is not None:
                self._unpatch()

    def _emit(self, method, *args):
        with self.lock:
            sinks = list(self.sinks)
        for sink in sinks:
            getattr(sink, method)(*args)

    def _stack(self):
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
        return stack

    # -- the wrappers --
    def _patch(self):
        from triton.compiler.compiler import CompiledKernel
        from triton.runtime.autotuner import Autotuner, Heuristics
        from triton.runtime.jit import JITFunction

        hooks = self
        jit_run, tune_run, heur_run = JITFunction.run, Autotuner.run, Heuristics.run
        init_handles = CompiledKernel._init_handles
        self.saved = [(JITFunction, "run", jit_run), (Autotuner, "run", tune_run), (Heuristics, "run", heur_run),
                      (CompiledKernel, "_init_handles", init_handles)]

        def run_jit(self, *args, grid, warmup, **kwargs):
            user_kwargs = dict(kwargs)
            kernel = jit_run(self, *args, grid=grid, warmup=warmup, **kwargs)
            if isinstance(kernel, CompiledKernel):
                hooks._emit("kernel", kernel)
                stack = hooks._stack()
                if stack:
                    stack[-1]["runs"].append((kernel, warmup))
                elif not warmup:
                    hooks._emit("call", self, self, args, user_kwargs, kernel)
            return kernel

        def run_layer(self, args, kwargs, body):
            stack = hooks._stack()
            # what the user passed: not the run's own grid= and warmup= (kernel[grid] adds them)
            frame = {"obj": self, "args": args, "runs": [],
                     "kwargs": {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}}
            stack.append(frame)
            try:
                result = body()
            finally:
                stack.pop()
            top = stack[0]["obj"] if stack else self
            if isinstance(self, Autotuner):
                config = getattr(self, "best_config", None)
                if config is not None:
                    hooks._emit("autotune_choice", top, self, args, frame["kwargs"], config)
            finals = [k for k, w in frame["runs"] if not w]
            if stack:
                stack[-1]["runs"].extend(frame["runs"][-1:])  # what this layer ran in the end
            elif finals:
                hooks._emit("call", top, self, args, frame["kwargs"], finals[-1])
            return result

        def run_autotuner(self, *args, **kwargs):
            return run_layer(self, args, kwargs, lambda: tune_run(self, *args, **kwargs))

        def run_heuristics(self, *args, **kwargs):
            def body():  # Heuristics.run (3.6-3.9), with the arguments each heuristic read recorded
                inputs, values = {}, {}
                for v, heur in self.values.items():
                    seen = _TrackingDict({**dict(zip(self.arg_names, args)), **kwargs})
                    kwargs[v] = values[v] = heur(seen)
                    names = set(dict.keys(seen)) if seen.read_all else seen.read & set(dict.keys(seen))
                    inputs.update((n, dict.__getitem__(seen, n)) for n in names if n not in self.values)
                hooks._emit("heuristic", hooks._stack()[0]["obj"], self, inputs, values)
                return self.fn.run(*args, **kwargs)

            return run_layer(self, args, kwargs, body)

        def init(self):
            hooks._emit("kernel", self)
            return init_handles(self)

        JITFunction.run, Autotuner.run, Heuristics.run = run_jit, run_autotuner, run_heuristics
        CompiledKernel._init_handles = init

    def _unpatch(self):
        for cls, name, original in self.saved:
            setattr(cls, name, original)
        self.saved = None


_capture_hooks = None


def capture_hooks():
    """The process-wide capture hooks (made on first use): `.add(sink)` / `.remove(sink)`.

    A sink gets, from any thread, while it is added:
      kernel(compiled_kernel)                       every CompiledKernel run or loaded;
      call(top, layer, args, kwargs, kernel)        every launch a user made: `top` is what the
                                                    user called, args/kwargs what it passed;
      autotune_choice(top, autotuner, args, kwargs, config)   what an autotuner chose;
      heuristic(top, layer, inputs, values)         what a heuristics layer computed ({name: value})
                                                    from what it read ({name: value}).
    """
    global _capture_hooks
    if _capture_hooks is None:
        _capture_hooks = _CaptureHooks()
    return _capture_hooks
