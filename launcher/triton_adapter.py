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
import re
from dataclasses import dataclass

from launcher import spec as S

SUPPORTED = ((3, 6), (3, 9))  # inclusive range of (major, minor)


class UnsupportedKernel(RuntimeError):
    """A kernel this launcher cannot launch (the stock launcher takes it when there is one)."""


@functools.lru_cache(maxsize=None)
def triton_version() -> tuple:
    """(major, minor) of the installed Triton."""
    import triton

    m = re.match(r"(\d+)\.(\d+)", triton.__version__)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


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
    UnsupportedSignature) for kernels the stock launcher must take.

    Specs of one shape (signature and launch configuration) are made once; a kernel of a shape
    seen before costs a lookup and its names and assumptions."""
    md = metadata
    reason = unsupported_reason(md)
    if reason is not None:
        raise UnsupportedKernel(reason)
    names = arg_names(src)
    types = tuple(src.signature.values())
    metas = getattr(md, "tensordesc_meta", None) or ()
    key = (types, repr(metas) if metas else "", md.num_warps, getattr(md, "num_ctas", 1), md.shared,
           getattr(md, "warp_size", None), getattr(md, "launch_cooperative_grid", False),
           getattr(md, "launch_pdl", False), md.global_scratch_size, md.global_scratch_align,
           getattr(md, "profile_scratch_size", 0), getattr(md, "profile_scratch_align", 1))
    try:
        template = _templates.get(key)
    except TypeError:  # a signature holding lists: no template, plan it anew
        key, template = None, None
    if template is None:
        template = _new_spec(md, names, types, metas)
        if key is not None:
            if len(_templates) >= 4096:
                _templates.clear()
            _templates[key] = template
    aligned, constants = assumptions(src, names)
    arch = getattr(getattr(md, "target", None), "arch", None)
    return template.derive(kernel=md.name, arg_names=names, arch=arch if isinstance(arch, int) else None,
                           aligned=aligned, constants=constants)


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


EMPTY = object()


def jit_parameters(jit_fn) -> tuple:
    """The parameters of a JITFunction, in order."""
    out = []
    for p in jit_fn.params:
        default = p.default if p.has_default else EMPTY
        out.append(Parameter(p.name, default, bool(p.is_constexpr), bool(p.do_not_specialize),
                             bool(p.do_not_specialize_on_alignment)))
    return tuple(out)


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
    from triton.runtime.driver import driver as rt

    return rt.active.get_current_device()


def stream_getter(device: int):
    """A function returning the current stream of `device`, as kernel[grid] asks for it."""
    import functools

    from triton.runtime.driver import driver as rt

    return functools.partial(rt.active.get_current_stream, device)


def runtime_knobs():
    """Triton's runtime knobs: where launch_enter_hook and launch_exit_hook are read."""
    from triton import knobs

    return knobs.runtime


def hook_chain_type():
    from triton.knobs import HookChain

    return HookChain


def hooks_set(runtime) -> tuple:
    """(enter, exit) launch hooks that are set; the default empty HookChains count as unset."""
    chain = hook_chain_type()
    out = []
    for hook in (runtime.launch_enter_hook, runtime.launch_exit_hook):
        if hook is None or (hook.__class__ is chain and not hook.calls):
            out.append(None)
        else:
            out.append(hook)
    return tuple(out)


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


def dispatch_knobs_reader():
    """A function returning the knobs that enter Triton's JIT cache key on this release (debug,
    instrumentation mode; 3.9: fpsan casts), read as JITFunction.run reads them on every call."""
    from triton import knobs

    runtime, compilation = knobs.runtime, knobs.compilation
    if hasattr(type(compilation), "fpsan_homomorphic_casts"):
        return lambda: (runtime.debug, compilation.instrumentation_mode, compilation.fpsan_homomorphic_casts)
    return lambda: (runtime.debug, compilation.instrumentation_mode)


def device_and_stream_getters() -> tuple:
    """(get_current_device(), get_current_stream(device)) of Triton's active driver."""
    from triton.runtime.driver import driver as rt

    active = rt.active
    return active.get_current_device, active.get_current_stream


def check_used_globals(jit_fn) -> None:
    """Triton's check (JITFunction.run) that the globals a kernel used have not changed."""
    missing = object()
    for (name, _), (val, globals_dict) in jit_fn.used_global_vals.items():
        if (new := globals_dict.get(name, missing)) != val:
            raise RuntimeError(f"Global variable {name} has changed since we compiled this kernel, "
                               f"from {val} to {new}")
