"""Writing bundles from Triton: `export(path, *compiled_kernels)` and `with capture(path): ...`.

`export` takes CompiledKernel objects (what `kernel.warmup(...)` or a `kernel[grid](...)` call
returns, or lists of them) and writes one bundle with a variant per kernel, grouped by the
Triton function each was compiled from.

`capture` records, while its block runs, every kernel launched or loaded in the process (any
thread), including kernels compiled before the block, and writes one bundle when the block
ends without an exception. It also records, for every launch, what the caller passed and the
variant that ran; for @triton.autotune kernels the config the autotuner chose for each key it
saw; for @triton.heuristics kernels the constexprs the heuristics computed and the argument
values they read. Kernels are launched as usual: with Triton's launcher, or launcher's when
installed.

Everything Triton-specific is read by launcher.triton_adapter; the format is
launcher.bundle_format. A bundle is refused (BundleError) at write time when it could not be
read back.
"""
from __future__ import annotations

import logging
import os
import threading

from launcher import bundle_format as BF
from launcher import triton_adapter as TA
from launcher import variants as V
from launcher.bundle_kernel import fence_record, leaves
from launcher.errors import UnsupportedKernel

log = logging.getLogger("launcher.bundle")


def _writer() -> str:
    import launcher

    return f"launcher {launcher.__version__}"


# A bundle records nothing of the exporting machine that a loader does not need: no directories
# of its file system. A kernel's source file is kept relative to its package root
# ("mypkg/kernels.py"; a script's or notebook cell's by its name), for messages and `inspect`;
# compile options that name files (extern_libs' libdevice, ir_override) keep the file's name. The
# cubin, PTX and TTGIR are kept as Triton made them: their line info names the source file as the
# compiler saw it (TRITON_DISABLE_LINE_INFO=1 at compile time leaves it out; docs/bundles.md).
def portable_file(file, module):
    """`file` (a kernel's Python source) without the exporting machine's directories."""
    if not isinstance(file, str) or not file:
        return None
    path = file.replace(os.sep, "/")
    tail = str(module or "").replace(".", "/")
    if tail and tail != "__main__":
        for candidate in (f"{tail}.py", f"{tail}/__init__.py"):
            if path == candidate or path.endswith("/" + candidate):
                return candidate
    return path.rsplit("/", 1)[-1]


def portable_options(value):
    """Compile options as JSON data, absolute paths in them reduced to the file's name."""
    if isinstance(value, str):
        return value.replace(os.sep, "/").rstrip("/").rsplit("/", 1)[-1] if os.path.isabs(value) else value
    if isinstance(value, list):
        return [portable_options(v) for v in value]
    if isinstance(value, dict):
        return {k: portable_options(v) for k, v in value.items()}
    return value


class _Kernel:
    """What is known of one Triton function while a bundle is assembled."""

    def __init__(self, name, record):
        self.name = name
        self.record = record
        self.param_names = [p.name for p in record["params"]]  # read by _by_name and autotune keys
        self.variants = []  # ids, in the order first seen
        self.layers = None  # [layer objects] once a call through them was seen
        self.layer_records = []
        self.choices = {}  # autotune layer index -> {key json: config index}
        self.heuristics = {}  # heuristics layer index -> [(inputs, values)]
        self.calls = []


def _by_name(names, args, kwargs) -> tuple:
    """A captured call's arguments by the kernel's parameter names (positional, then keywords
    naming a parameter), and its other keywords (launch options): the one split of both records."""
    passed, options = dict(zip(names, args)), {}
    for k, v in kwargs.items():
        (passed if k in names else options)[k] = v
    return passed, options


class _Builder:
    def __init__(self):
        self.lock = threading.RLock()
        self.variants = {}  # id -> VariantEntry
        self.kernels = {}  # id(JIT function) -> _Kernel
        self.names = {}  # qualified name -> id(JIT function)
        self.keep = []  # the JIT functions and kernels seen, so that ids stay theirs
        self.seen = {}  # id(CompiledKernel) -> variant id

    def kernel_of(self, fn) -> _Kernel:
        k = self.kernels.get(id(fn))
        if k is None:
            record = TA.function_record(fn)
            record = dict(record, file=portable_file(record.get("file"), record.get("module")))
            base = f"{record['module']}.{record['qualname']}"
            name, n = base, 1
            while name in self.names:  # another function of the same name and module
                n += 1
                name = f"{base}#{n}"
            k = self.kernels[id(fn)] = _Kernel(name, record)
            self.names[name] = id(fn)
            self.keep.append(fn)
        return k

    def add_compiled(self, ck) -> str:
        """The id of the variant of CompiledKernel `ck` (added on first sight)."""
        with self.lock:
            vid = self.seen.get(id(ck))
            if vid is not None:
                return vid
            fn = TA.jit_function_of(ck)
            if fn is None:
                raise UnsupportedKernel(f"kernel {TA.kernel_name(ck)!r} was compiled from an IR file, not a "
                                        "Triton function")
            kernel = self.kernel_of(fn)
            parts = TA.variant_parts(ck)
            parts = dict(parts, options=portable_options(parts["options"]))
            vid = BF.variant_id(parts["spec"], parts["cubin"])
            if vid not in self.variants:
                fence = fence_record(parts["ptx"], parts["ttgir"], parts["spec"].kernel)
                self.variants[vid] = BF.VariantEntry(id=vid, kernel=kernel.name, fence=fence, **parts)
            elif self.variants[vid].kernel != kernel.name:
                raise UnsupportedKernel(f"kernels {kernel.name!r} and {self.variants[vid].kernel!r} compiled to the "
                                        "same cubin and spec")
            if vid not in kernel.variants:
                kernel.variants.append(vid)
            self.seen[id(ck)] = vid
            self.keep.append(ck)
            return vid

    def through(self, top) -> tuple:
        """(_Kernel, layer objects) of what a user called."""
        fn, layers = TA.layers_of(top)
        kernel = self.kernel_of(fn)
        if not kernel.layers:  # first seen, or seen only without layers so far
            kernel.layers = list(layers)
            kernel.layer_records = [TA.layer_record(layer, kernel.name) for layer in layers]
        elif [id(x) for x in kernel.layers] != [id(x) for x in layers] and layers:
            raise UnsupportedKernel(f"kernel {kernel.name!r} was called through two different sets of autotune "
                                    "or heuristics layers; a bundle kernel has one")
        return kernel, kernel.layers

    def add_call(self, top, args, kwargs, ck):
        with self.lock:
            kernel, _ = self.through(top)
            vid = self.add_compiled(ck)
            passed, options = _by_name(kernel.param_names, args, kwargs)
            call = BF.Call({k: V.call_form(v) for k, v in passed.items()},
                           {k: TA._json_value(v) for k, v in options.items()}, vid)
            if call not in kernel.calls:
                kernel.calls.append(call)

    def add_choice(self, top, autotuner, args, kwargs, config):
        with self.lock:
            kernel, layers = self.through(top)
            index = next(i for i, layer in enumerate(layers) if layer is autotuner)
            passed, _ = _by_name(kernel.param_names, args, kwargs)
            key = V.autotune_key(kernel.layer_records[index].key, kernel.param_names, passed)
            choice = TA.autotune_config_index(autotuner, config)
            known = kernel.choices.setdefault(index, [])
            if not any(k == key for k, _ in known):
                known.append((key, choice))

    def add_heuristics(self, top, layer, inputs, values):
        with self.lock:
            kernel, layers = self.through(top)
            index = next(i for i, x in enumerate(layers) if x is layer)
            record = ({k: V.call_form(v) for k, v in sorted(inputs.items())},
                      {k: V.encode(v) for k, v in values.items()})
            known = kernel.heuristics.setdefault(index, [])
            if record not in known:
                known.append(record)

    def data(self) -> BF.BundleData:
        kernels = {}
        for k in self.kernels.values():
            if not k.variants:
                continue
            layers = []
            for i, rec in enumerate(k.layer_records):
                if rec.kind == "autotune":
                    layers.append(BF.Autotune(rec.key, rec.configs, tuple(k.choices.get(i, ()))))
                else:
                    layers.append(BF.Heuristics(rec.names, tuple(k.heuristics.get(i, ()))))
            r = k.record
            kernels[k.name] = BF.KernelEntry(k.name, r["function"], r["module"], r["file"], r["line"], r["params"],
                                             tuple(k.variants), tuple(layers), tuple(k.calls))
        return BF.BundleData(kernels, dict(self.variants), _writer())


def _write(path, builder) -> BF.BundleData:
    data = builder.data()
    if not data.variants:
        raise BF.BundleError(f"bundle {str(path)!r}: no kernels to write")
    raw = BF.bundle_bytes(data, data.writer)
    BF.parse_bundle(raw, f"bundle {str(path)!r} (as written)")  # never write what could not be read
    BF.write_bundle(path, data, data.writer)
    return data


def export(path, *compiled_kernels) -> BF.BundleData:
    """Write the CompiledKernel objects (or lists of them) to the bundle file `path`.

    Returns what was written. Raises BundleError or UnsupportedKernel naming the kernel that
    cannot go into a bundle (compiled from an IR file, gsan instrumentation, ...)."""
    builder = _Builder()
    for ck in leaves(compiled_kernels):
        if not TA.is_compiled_kernel(ck):
            raise TypeError(f"launcher.export expects Triton CompiledKernel objects, got {type(ck).__name__}")
        builder.add_compiled(ck)
    return _write(path, builder)


class capture:
    """`with launcher.capture(path): ...` records every kernel launched or loaded in the block
    and writes them to the bundle `path` when it ends (see the module docstring).

    `.data` is what was written (after the block)."""

    def __init__(self, path):
        self.path = path
        self.data = None
        self._builder = _Builder()
        self._problems = []

    def __enter__(self):
        try:
            TA.capture_hooks().add(self)
        except ImportError as e:
            raise ImportError(f"launcher.capture records what Triton runs, and Triton cannot be imported here ({e}); "
                              "bundles are written where Triton is installed and loaded anywhere") from None
        return self

    def __exit__(self, exc_type, exc, tb):
        TA.capture_hooks().remove(self)
        builder, self._builder = self._builder, None  # the kernels it holds are let go after writing
        if exc_type is not None:
            return False
        if self._problems:
            raise BF.BundleError(f"bundle {str(self.path)!r}: nothing written; the capture could not record:\n  "
                                 + "\n  ".join(self._problems))
        self.data = _write(self.path, builder)
        return False

    # -- what the hooks report (any thread; a failure here must not break the user's launch) --
    def _guard(self, what, method, *args):
        builder = self._builder
        if builder is None:  # a report from another thread after the block ended
            return
        try:
            getattr(builder, method)(*args)
        except Exception as e:
            text = f"{what}: {type(e).__name__}: {e}"
            log.warning("launcher.capture: %s", text)
            with builder.lock:
                if text not in self._problems:
                    self._problems.append(text)

    def kernel(self, ck):
        self._guard(f"kernel {TA.kernel_name(ck)!r}", "add_compiled", ck)

    def call(self, top, layer, args, kwargs, ck):
        self._guard(f"a launch of {TA.kernel_name(ck)!r}", "add_call", top, args, kwargs, ck)

    def autotune_choice(self, top, autotuner, args, kwargs, config):
        self._guard("an autotune choice", "add_choice", top, autotuner, args, kwargs, config)

    def heuristic(self, top, layer, inputs, values):
        self._guard("a heuristics result", "add_heuristics", top, layer, inputs, values)
