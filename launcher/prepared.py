"""Prepared launches: Triton's `kernel[grid](...)` without its dispatch, and without giving up
its safety.

    p = launcher.prepare(kernel, grid, x, y, out, n, BLOCK=1024)
    p()                      # the prepared arguments again: packed once, one C call
    p(x2, y2, out2, n2)      # new arguments, checked against what the kernel was compiled for
    p.launch(x2, y2, out2, n2, grid=(8,), stream=s)

`prepare` resolves the kernel as Triton would (@triton.heuristics computed, @triton.autotune's
choice for this call's key; tuning runs the kernel only when the key was never tuned), compiles
it with Triton's warmup (no launch), loads it through launcher's module cache on the current
device and keeps the CompiledKernel alive (Triton 3.8+ unloads a module when its kernel is
collected).

A call with new arguments refuses, with an AssumptionError (a ValueError) naming the
parameter, what the kernel assumed and what it got, every argument the compiled kernel was not
compiled for (launcher.specialization.AssumptionCheck); arguments that merely allow a more
specialised kernel are accepted. Constexprs and compile options must stay as prepared;
@triton.heuristics are evaluated again and must choose the same constexprs; an
@triton.autotune key that maps to another config (or was never tuned) is refused; a config's
pre_hook runs before every launch, as Triton runs it. reset_to_zero and restore_value act only
while the autotuner benchmarks, in Triton as here. The stream is the current one at call time
(as kernel[grid] asks for it, so CUDA-graph capture on a side stream works), Triton's launch
hooks run when they are set (the default empty hook chains count as unset), and a prepared
launch may be called from several threads.

The common calls, p(), p(*args) and p(*args, **kwargs) with arguments of the prepared kinds
(parameters by position or by name, constexprs passed again as prepared), are a C type's tp_call
(cdefs/call.c, launcher._call): bound, checked, packed and launched with no Python code between
the call and the driver. Which tests it runs is decided here, once (PreparedLaunch._fast_setup,
launcher.checks.c_checks); whatever does not pass them, and every other call (launch options,
grid=, stream=), goes through `launch`, which binds, checks and explains.
"""
from __future__ import annotations

import functools
import struct
import threading

from launcher import driver, triton_adapter as A
from launcher import spec as S
from launcher._call import FastCall
from launcher.arguments import check_header, grid3, stream_handle
from launcher.checks import Assumptions, c_checks
from launcher.cuda_launcher import CudaLauncher
from launcher.specialization import AssumptionCheck, AssumptionError

__all__ = ["prepare", "PreparedLaunch", "AssumptionError"]

_MISSING = object()
_LAUNCH_KEYWORDS = frozenset(("grid", "stream"))  # `launch`'s own keywords: never a parameter's, by name
_LAUNCHING = threading.RLock()  # guards the counts of general-path launches in progress (an RLock: a
# finalizer that closes another prepared launch may run while it is held)


def prepare(kernel, grid, /, *args, **kwargs) -> "PreparedLaunch":
    """A PreparedLaunch of `kernel[grid](*args, **kwargs)`: kernel is a @triton.jit function
    (possibly under @triton.autotune / @triton.heuristics) or a bundled kernel
    (launcher.load_bundle), which chooses its variant as its own call would."""
    own = getattr(kernel, "_prepare_launch", None)
    if own is not None:  # a bundle kernel prepares itself
        return own(grid, args, kwargs)
    layers, jit_fn = A.decorator_chain(kernel)
    unusual = A.unusual_parameters(jit_fn)
    if unusual is not None:
        raise TypeError(f"launcher.prepare: kernel {jit_fn.__name__!r} has {unusual}; prepared launches take "
                        "kernels whose parameters are all positional-or-keyword (kernel[grid] still runs it)")
    call_kwargs = dict(kwargs)
    resolved = []  # (kind, layer, what it chose)
    for kind, layer in layers:
        if kind == "heuristics":
            values = A.heuristic_values(layer, args, call_kwargs)
            call_kwargs.update(values)
            resolved.append((kind, layer, values))
        else:
            key = A.autotune_key(layer, args, call_kwargs)
            config = A.autotune_choice(layer, key)
            if config is None:  # never tuned for this key: tuning runs (and launches) the kernel
                layer.run(*args, grid=grid, warmup=False, **call_kwargs)
                config = A.autotune_choice(layer, key)
            call_kwargs.update(A.config_kwargs(config))
            resolved.append((kind, layer, (key, config)))
    device = A.current_device()
    compiled = A.compile_for(jit_fn, grid, args, call_kwargs)
    params = A.jit_parameters(jit_fn)
    values, options = bind(jit_fn.__name__, params, args, call_kwargs, {})
    spec = A.spec_from_triton(compiled.src, compiled.metadata)
    function, release = load(spec, *A.compiled_binary(compiled), device)
    return PreparedLaunch(spec, params, values, options, grid, function=function, stream=A.stream_getter(device),
                          device=device, runtime=A.runtime_knobs(), layers=tuple(resolved), compiled=compiled,
                          release=release)


def load(spec, name: str, cubin: bytes, device: int) -> tuple:
    """(function, release) of a cubin loaded through launcher's module cache on `device`, with
    Triton's resource check; release() gives the module back."""
    from launcher.modules import module_cache

    cache = module_cache()
    module, function, _, _, max_threads = cache.load_binary(
        name, cubin, spec.shared, device, oversized_shared=spec.conventions.oversized_shared)
    threads = spec.num_warps * spec.warp_size
    if threads > max_threads:
        cache.unload_module(module)
        raise ValueError(f"kernel {spec.kernel!r} needs {threads} threads per block; the device "
                         f"allows it {max_threads}")
    return function, lambda: cache.unload_module(module)


def bind(kernel_name, params, args, kwargs, prepared_constexprs) -> tuple:
    """(values of every parameter in order, compile options) of a call, bound as Python binds
    the JIT function's parameters; a constexpr the call leaves out takes its prepared value
    (what a layer or the prepare call chose, before the signature's default), any other
    parameter its default."""
    if len(args) > len(params):
        raise TypeError(f"kernel {kernel_name!r} takes {len(params)} arguments "
                        f"({', '.join(p.name for p in params)}), got {len(args)}")
    values = list(args) + [_MISSING] * (len(params) - len(args))
    index = {p.name: i for i, p in enumerate(params)}
    options = {}
    for name, value in kwargs.items():
        i = index.get(name)
        if i is None:
            options[name] = value
        elif values[i] is not _MISSING:
            raise TypeError(f"kernel {kernel_name!r}: parameter {name!r} given twice")
        else:
            values[i] = value
    for i, p in enumerate(params):
        if values[i] is _MISSING:
            if i in prepared_constexprs:
                values[i] = prepared_constexprs[i]
            elif p.default is not A.EMPTY:
                values[i] = p.default
            else:
                raise TypeError(f"kernel {kernel_name!r}: parameter {p.name!r} is missing")
    return tuple(values), options


class PreparedLaunch(FastCall):
    """One compiled kernel, loaded, with a grid and the arguments it was prepared with.

    spec: the kernel's LaunchSpec; params: its parameters (launcher.triton_adapter.Parameter);
    values, options: the prepared call, bound; function: the loaded CUfunction; stream: a
    function returning the stream to launch on; runtime: Triton's runtime knobs (the launch
    hooks), None where there is no Triton; layers: the autotune/heuristics choices made;
    compiled: the CompiledKernel (kept alive, and the launch hooks' metadata comes from it);
    release: gives the module back (close(), or when the prepared launch is collected)."""

    _launching = 0  # launches in progress on the general path: close() gives the module back after them
    _deferred = None  # the release close() left to the last of them

    def __init__(self, spec, params, values, options, grid, *, function, stream, device=None, runtime=None,
                 layers=(), compiled=None, release=None, convert=None, dry_run=False):
        self.spec = spec
        self.compiled = compiled
        self.params = params
        self.values = values
        self.options = options
        self.device = device
        self.layers = layers
        self.function = function
        self._stream = stream
        self._runtime = runtime
        self._dry_run = dry_run
        self._release = release
        self._convert = convert  # what the launcher takes for an argument (bundles: arrays as addresses)
        self._check = AssumptionCheck(spec, [p.annotation for p in params])
        self._check(values)  # the prepared arguments themselves must fit (they chose the kernel)
        self._launcher = CudaLauncher.from_spec(spec, global_allocator=A.global_scratch_allocator,
                                                profile_allocator=A.profile_scratch_allocator)
        self.grid_fn = grid if callable(grid) else None
        self.grid = self._grid(values, grid)
        self._constexprs = {i: values[i] for i, a in enumerate(spec.args) if a.kind == "constexpr"}
        self._bound = None
        if not dry_run and self._same_arguments_pack_once():
            plan, buf, keep = self._launcher.pack(*self.grid, 0, function, spec.packed_metadata,
                                                  *self._for_launcher(values))
            self._bound = (driver.bind(plan, buf), buf, keep, plan)
        self._fast_setup()

    def close(self) -> None:
        """Give the module back now (otherwise when the prepared launch is collected); calling
        it afterwards is a ValueError (its function handle may belong to an unloaded module).
        Closed from code a launch runs (a grid callable, data_ptr(), a hook), that launch is
        refused, or, when its launcher is already under way, finishes first: the module is given
        back when the general-path launches in progress end, never under one."""
        release, self._release = self._release, None
        self._fast_clear()
        if self.__class__ is not _ClosedLaunch:
            self.__class__ = _ClosedLaunch
        if release is not None:
            with _LAUNCHING:
                if self._launching:
                    self._deferred, release = release, None
            if release is not None:
                release()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter teardown
            pass

    # -- the C path (cdefs/call.c): p() and p(*args) of the prepared kinds --
    def _fast_setup(self) -> None:
        self._fast_set(self._fast_config())

    def _fast_config(self) -> dict:
        """What the C call (launcher._call.FastCall._fast_set) needs; every call it declines (and
        every keyword that is not a parameter's name, and every launch with hooks set) goes to
        `launch`.

        p() launches the buffer bound at prepare time; p(*args) with len(args) the number of
        parameters (or that less the trailing constexprs, which keep their prepared values), and
        any other call bound in C as `bind` binds it (parameters by name from `keywords`, those
        left out from `defaults`: the prepared constexprs, the signature's defaults), checks each
        argument (launcher.checks.c_checks, with the prepared call's assumptions),
        packs it into a copy of `template` (the header's function handle, zeros elsewhere) at its
        offset, writes the current stream and the grid into the header (cdefs/launcher.h's
        launcher_header) and launches with the shape's plan; in a dry run it returns `split` of
        the bytes the driver would receive."""
        spec, shape = self.spec, self._launcher._shape
        stream = self._stream  # Triton's getter bound to the device: called as it is, one call less
        if stream.__class__ is functools.partial and len(stream.args) == 1 and not stream.keywords:
            stream_fn, stream_args = stream.func, stream.args
        else:
            stream_fn, stream_args = stream, ()
        grid = None
        if self.grid_fn is None:  # the grid's rules (grid3, check_header's ranges); else the general path explains
            try:
                grid = check_header(spec, *grid3(self.grid, spec.kernel), 0, 0)[2:]
            except Exception:  # noqa: BLE001 - a user __index__ may raise anything: the general path says what
                grid = None
        checks = None
        if not self._needs_general_path() and (grid is not None or self.grid_fn is not None):
            checks = c_checks(spec.layout, Assumptions(self.values, frozenset(spec.aligned), self._check.typed,
                                                       shape.encoders))
        n_min = len(self.params)
        while n_min and spec.args[n_min - 1].kind == "constexpr":  # trailing constexprs may be left out
            n_min -= 1
        template = bytearray(spec.layout.size)
        struct.pack_into("<Q", template, S.HEADER_FUNCTION_AT, self.function)
        bound = self._bound
        return {
            "stream_fn": stream_fn, "stream_args": tuple(stream_args),
            "runtime": self._runtime, "hook_chain": A.hook_chain_type() if self._runtime is not None else None,
            "bound": driver.address(bound[0][0]) if bound is not None else None,
            "bound_launch": driver.entry_address("launcher_bound_launch"),
            "bound_keep": bound, "bound_buf": bound[1] if bound is not None else None,
            "plan": driver.address(shape.plan), "plan_keep": shape.plan,
            "launch": driver.entry_address("launcher_launch"), "dry_run": driver.entry_address("launcher_dry_run"),
            "template": bytes(template), "out_size": shape.out_size,
            "grid": grid, "grid_fn": self.grid_fn, "names": tuple(p.name for p in self.params),
            "checks": checks, "n_min": n_min, "trailing": tuple(self.values[n_min:]),
            "keywords": {p.name: i for i, p in enumerate(self.params) if p.name not in _LAUNCH_KEYWORDS},
            "defaults": tuple(self._left_out(i, p) for i, p in enumerate(self.params)),
            "split": shape.split_bytes if self._dry_run else None,
        }

    def _left_out(self, i, param) -> tuple:
        """(the value parameter i takes when a call leaves it out,) as `bind` fills it, or ()."""
        if i in self._constexprs:
            return (self._constexprs[i],)
        return () if param.default is A.EMPTY else (param.default,)

    # -- the general path: bind, check, explain --
    def _same_arguments_pack_once(self) -> bool:
        """Whether p() may launch one buffer packed at prepare time: not when each launch must
        allocate scratch (as Triton does) or run a config's pre_hook."""
        spec = self.spec
        if spec.global_scratch[0] or spec.profile_scratch[0]:
            return False
        return not any(kind == "autotune" and choice[1].pre_hook is not None for kind, _, choice in self.layers)

    def _needs_general_path(self) -> bool:
        """Whether every call must go through `launch` (no fast path for this kernel)."""
        spec = self.spec
        if spec.global_scratch[0] or spec.profile_scratch[0]:
            return True  # scratch is allocated per launch, as Triton does
        if any(kind == "heuristics" for kind, _, _ in self.layers):
            return True
        if any(kind == "autotune" and (choice[0] is not None or choice[1].pre_hook is not None)
               for kind, _, choice in self.layers):
            return True
        return False  # per argument: launcher.checks.c_checks

    def _grid(self, values, grid):
        if grid is None:
            return self.grid
        if callable(grid):
            grid = grid({p.name: v for p, v in zip(self.params, values)})
        return grid3(grid, self.spec.kernel)

    def _values_for(self, args, kwargs) -> tuple:
        if not args and not kwargs:
            return self.values
        values, options = bind(self.spec.kernel, self.params, args, kwargs, self._constexprs)
        for name, value in options.items():
            if name not in self.options or not S.same_value(value, self.options[name]):
                raise AssumptionError(f"kernel {self.spec.kernel!r}: option {name!r} was prepared as "
                                      f"{self.options.get(name, '(not given)')!r}, got {value!r}")
        named = {p.name: v for p, v in zip(self.params, values)}
        passed = dict(kwargs)  # what the call passed, with what each layer adds, as Autotuner.run sees it
        for kind, layer, choice in self.layers:
            if kind == "heuristics":
                now = A.heuristic_values(layer, (), {**self.options, **named, **passed})  # as Heuristics.run
                passed.update(now)
                for name, value in now.items():
                    if not S.same_value(value, choice[name]):
                        raise AssumptionError(
                            f"kernel {self.spec.kernel!r}: @triton.heuristics choose {name}={value!r} for "
                            f"these arguments; the prepared kernel has {name}={choice[name]!r}")
            else:
                key, config = choice
                new_key = A.autotune_key(layer, args, passed)
                passed.update(A.config_kwargs(config))
                if new_key != key:
                    other = A.autotune_choice(layer, new_key)
                    if other is None or A.config_kwargs(other) != A.config_kwargs(config):
                        raise AssumptionError(
                            f"kernel {self.spec.kernel!r}: @triton.autotune key {new_key!r} "
                            f"{'was never tuned' if other is None else 'chooses ' + str(other)}; "
                            f"the prepared kernel is tuned for key {key!r} ({config})")
        self._check(values)
        return values

    def launch(self, /, *args, grid=None, stream=None, **kwargs):
        """Launch with new arguments (or the prepared ones), on `grid` and `stream` when given
        (else the prepared grid, evaluated again when it is a callable, and the current stream)."""
        with _LAUNCHING:
            self._launching += 1
        try:
            return self._launch(args, kwargs, grid, stream)
        finally:
            with _LAUNCHING:
                self._launching -= 1
                release = self._deferred if not self._launching else None
                if release is not None:
                    self._deferred = None
            if release is not None:  # closed during this launch: the module goes back now
                release()

    def _launch(self, args, kwargs, grid, stream):
        values = self._values_for(args, kwargs)
        if grid is None and self.grid_fn is not None and values is not self.values:
            grid = self.grid_fn
        gx, gy, gz = self._grid(values, grid)
        s = self._stream() if stream is None else stream_handle(stream, f"kernel {self.spec.kernel!r}: ")
        for kind, _, choice in self.layers:  # a config's pre_hook runs before the launch, as in Triton
            if kind == "autotune" and choice[1].pre_hook is not None:
                choice[1].pre_hook({**{p.name: v for p, v in zip(self.params, values)}, **A.config_kwargs(choice[1])})
        enter = leave = md = None
        if self._runtime is not None:
            enter, leave = A.hooks_set(self._runtime)
            if (enter is not None or leave is not None) and self.compiled is not None and \
                    self._runtime.launch_enter_hook is not None:  # as CompiledKernel.launch_metadata
                md = A.launch_metadata(self.compiled, self.function, (gx, gy, gz), s, values)
        if self.__class__ is _ClosedLaunch:  # closed by code this call ran: nothing is launched
            self._closed()
        run = self._launcher.dry_run if self._dry_run else self._launcher
        return run(gx, gy, gz, s, self.function, self.spec.packed_metadata, md, enter, leave,
                   *self._for_launcher(values))

    def _for_launcher(self, values):
        return values if self._convert is None else tuple(self._convert(v) for v in values)

    def _failed(self, status, buf):
        self._launcher._launch_failed(status, buf)


class _ClosedLaunch(PreparedLaunch):
    """A prepared launch after close(): nothing launches."""

    def _closed(self, /, *args, **kwargs):
        raise ValueError(f"kernel {self.spec.kernel!r}: this prepared launch was closed (its module given back); "
                         "prepare the kernel again")

    __call__ = launch = _closed
