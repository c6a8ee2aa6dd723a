"""The generated fast path: one readable template per mode, filled in once per spec shape.

A plain loop over the argument plan (launcher.arguments) is what a launcher runs first; once it
is hot, launcher.cuda_launcher swaps in a function generated for exactly its signature. That
function unpacks the signature's tuples, calls `data_ptr()` where a pointer is expected, and
hands everything to one precompiled `struct.Struct`, which also range-checks every scalar. When
anything fails, it calls `self._bad_call`, which walks the arguments with the plan-driven
packer to name the culprit, so checking costs nothing here.

The templates below are the whole story: `{convert}` becomes a few lines per argument (see
`_convert`), `{values}` the packed values in parameter order. Every generated function is
registered with linecache, so tracebacks, `inspect.getsource` and debuggers show its lines.
The code depends only on the spec's shape (never on names), so kernels of one shape share it.
"""
from __future__ import annotations

import builtins
import hashlib
import linecache
import types
from typing import NamedTuple

from launcher import spec as S
from launcher.specialization import INT_KEYS

_code: dict = {}  # generated source -> its code object


def compile_once(source: str, label: str):
    """The code object of generated `source`: compiled once per source (bounded), registered
    with linecache as `<launcher generated LABEL DIGEST>` so that tracebacks, inspect.getsource
    and debuggers show its lines. Every generated function of the package is made from it."""
    code = _code.get(source)
    if code is None:
        digest = hashlib.sha1(source.encode()).hexdigest()[:12]
        filename = f"<launcher generated {label} {digest}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        code = compile(source, filename, "exec")
        if len(_code) >= 1024:
            _code.clear()
        _code[source] = code
    return code


# The globals of every generated function: builtins only, unless define() is given values that
# every function of that code object shares (shared=). What a function reads of its own (its
# plan, its kernel, its caches) comes from closure cells (define), so that functions of one code
# object with different values never share globals: each reads its own without the
# interpreter's global caches missing when calls alternate between them (kernels of one
# signature called in turn, as a model's forward pass calls them).
_GLOBALS = {"__builtins__": builtins}
_SHARED: dict = {}  # the identities of shared values -> the one globals dict holding them


def _shared_globals(shared: dict) -> dict:
    """One globals dict per set of shared values (by identity): every function given the same
    values reads the same dict, so that its global caches stay valid across them, and a
    function of another kernel touches no object of its own for them."""
    key = tuple(sorted((k, id(v)) for k, v in shared.items()))
    found = _SHARED.get(key)
    if found is None:  # it holds the values, so their ids stay theirs while it is here
        if len(_SHARED) >= 64:
            _SHARED.clear()
        found = _SHARED[key] = {"__builtins__": builtins, **shared}
    return found


def define(source: str, label: str, namespace: dict, *names: str, shared=None) -> tuple:
    """The functions `names` that generated `source` defines at its top level, reading the names
    of `namespace` as closure variables. The source is wrapped in a function taking every name
    of namespace (compiled once per source: compile_once), which is called with namespace's values;
    the functions of one call share one cell per name (cells() reaches them to change a value).
    shared: names the functions read as globals instead, from one dict for every call given the
    same values (_shared_globals): values that never change and are the same for every kernel."""
    params = sorted(k for k in namespace if not k.startswith("__"))
    body = "".join("    " + line if line.strip() else line for line in source.splitlines(True))
    wrapped = (f"def _launcher_define({', '.join(params)}):\n{body}\n"
               f"    return ({''.join(n + ', ' for n in names)})\n")
    scope: dict = {"__builtins__": builtins}
    exec(compile_once(wrapped, label), scope)
    factory = types.FunctionType(scope["_launcher_define"].__code__, _shared_globals(shared) if shared else _GLOBALS,
                                 "_launcher_define")
    return factory(**{k: namespace[k] for k in params})


def cells(*fns) -> dict:
    """name -> cell of the closure variables of functions made by define (cell.cell_contents =
    value changes what all of them read)."""
    out = {}
    for fn in fns:
        out.update(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    return out


# -- the templates --
_HEAD = '''\
def {name}(self, gridX, gridY, gridZ, stream, function, kernel_metadata, launch_metadata,
        launch_enter_hook, launch_exit_hook, *args):
    """{doc}"""
    try:
{unpack}{convert}        buf = {packer}(function, stream, gridX, gridY, gridZ, 0, {values})
{scratch}        plan = PLAN if kernel_metadata == PACKED_METADATA else self._plan_for(kernel_metadata)
    except Exception as exc:
        self._bad_call(exc, gridX, gridY, gridZ, stream, function, kernel_metadata, args)
'''

# A launch between the launch hooks: the one home of that sequence. The generated launch and dry
# run are made from it, and so is hooked_call, which the plan-driven ones call.
_HOOKED = '''\
if launch_enter_hook is not None:
    launch_enter_hook(launch_metadata)
status = {call}
if status:
    self._launch_failed(status, buf)
if launch_exit_hook is not None:
    launch_exit_hook(launch_metadata)
'''


def _indented(text: str, spaces: int) -> str:
    return "".join(" " * spaces + line if line.strip() else line for line in text.splitlines(True))


def _unset(hook: str, chain: str) -> str:
    """The inline form of triton_adapter.hooks_set's rule for one hook (generated code tests it
    without a call): None, or Triton's HookChain (`chain`) with nothing in it."""
    return f"({hook} is None or ({hook}.__class__ is {chain} and not {hook}.calls))"


# A hot launcher's launch without launch hooks set (None, or Triton's empty HookChain: _unset)
# and with the shape's own metadata is one C call that checks, packs and launches (the shape's
# FlatLaunch, FLAT; None where the shape has none: descriptors, tensor maps, fp16 scalars,
# scratch). What it declines (another type, a value out of range, an odd grid) takes the
# generated Python below, which converts and explains.
_FLAT = f'''\
    if (FLAT is not None and (kernel_metadata is PACKED_METADATA or kernel_metadata == PACKED_METADATA)
            and {_unset("launch_enter_hook", "HOOK_CHAIN")}
            and {_unset("launch_exit_hook", "HOOK_CHAIN")}):
        status = FLAT(function, stream, (gridX, gridY, gridZ), *args)
        if status is None:
            return
        if status:  # (status, packed bytes): the driver refused
            self._launch_failed(*status)
            return
'''

TEMPLATES = {
    "launch": _HEAD.replace("    try:\n", _FLAT + "    try:\n", 1)
    + _indented(_HOOKED.format(call="c_launch(plan, buf, SIZE)"), 4),
    "dry_run": _HEAD + "    out = new_out()\n"
    + _indented(_HOOKED.format(call="c_dry_run(plan, buf, SIZE, out, OUT_SIZE)"), 4) + "    return split(out)\n",
    "pack": _HEAD + '''\
    return plan, buf, ({keep})
''',
    # For callers that launch a kernel of their own choosing again and again, with its own
    # packed metadata and no hooks to run (the fast dispatch's hits, bundles): no launch
    # metadata, hooks or kernel metadata to pass and test.
    "direct": '''\
def {name}(self, gridX, gridY, gridZ, stream, function, *args):
    """{doc}"""
    try:
{unpack}{convert}        buf = {packer}(function, stream, gridX, gridY, gridZ, 0, {values})
{scratch}    except Exception as exc:
        self._bad_call(exc, gridX, gridY, gridZ, stream, function, PACKED_METADATA, args)
    status = c_launch(PLAN, buf, SIZE)
    if status:
        self._launch_failed(status, buf)
''',
}

DOCS = {
    "launch": "Check, pack and launch (generated for this signature's shape).",
    "dry_run": "Everything a launch does but the driver call: the bytes each parameter would receive.",
    "pack": "Check and pack once: (plan, packed buffer, scratch allocations).",
    "direct": "Check, pack and launch with the spec's own metadata and no hooks (generated for this shape).",
}

# Scratch memory: everything is checked and packed first, so a bad argument allocates nothing.
_SCRATCH = '''\
        n_programs = gridX * gridY * gridZ * NUM_CTAS
        g_obj = {global_alloc}
        p_obj = {profile_alloc}
        buf += pack_scratch(g_obj.data_ptr() if g_obj is not None else 0,
                            p_obj.data_ptr() if p_obj is not None else 0)
'''


class _Writer:
    """Collects the lines of `{convert}` and the names of the packed values."""

    def __init__(self):
        self.lines, self.values, self.constants = [], [], {}

    def emit(self, line: str, depth: int):
        self.lines.append("    " * depth + line + "\n")

    def value(self) -> str:
        name = f"v{len(self.values)}"
        self.values.append(name)
        return name

    def constant(self, prefix: str, value) -> str:
        """Name a value the generated code uses (a helper function), for its namespace."""
        name = f"{prefix}{len(self.constants)}"
        self.constants[name] = value
        return name


def _convert(w: _Writer, args, names, depth, encoder_of, prefix=()):
    """The lines that turn arguments `names` (the spec's Args at `prefix`) into packed values."""
    for i, (arg, var) in enumerate(zip(args, names)):
        if arg.kind == "constexpr":
            continue
        if arg.kind == "tuple":
            inner = [f"{var}_{i}" for i in range(len(arg.children))]
            # Any sequence, as Triton takes; not a dict, set or iterator.
            w.emit(f"if {var}.__class__ is not tuple and not is_sequence({var}): raise TypeError", depth)
            w.emit(f"{', '.join(inner)}, = {var}" if inner else f"if len({var}): raise ValueError", depth)
            _convert(w, arg.children, inner, depth, encoder_of, prefix + (i,))
        elif arg.kind == "pointer":
            w.emit(f"{w.value()} = {var} if {var}.__class__ is int else "
                   f"{var}.data_ptr() if {var} is not None else 0", depth)
        elif arg.kind == "tensormap":
            v = w.value()
            w.emit(f"{v} = {var}.data if {var}.__class__ is TensorMap else tensormap_bytes({var})", depth)
        elif arg.kind == "tensordesc":
            fn = w.constant("desc", encoder_of[prefix + (i,)])
            vs = [w.value() for _ in arg.params]
            w.emit(f"{', '.join(vs)}, = {fn}({var})", depth)
        elif arg.type in S.BOOLS:  # bools and 0/1; the int itself, not what == says
            v = w.value()
            w.emit(f"{v} = index({var})", depth)
            w.emit(f"if {v} != 0 and {v} != 1: raise ValueError", depth)
        else:  # other scalars: the struct checks type and range
            w.values.append(var)


def generate(mode: str, layout, scratch: tuple, namespace: dict, encoder_of: dict):
    """Compile the `mode` function ("launch", "dry_run", "pack" or "direct") for a layout.

    scratch: (global scratch bytes per program, profile scratch bytes per program);
    namespace: the names the templates use (pack_all, PLAN, c_launch, ...); encoder_of: the
    encoder of each tensor-descriptor argument, by argument path. Returns the function."""
    w = _Writer()
    names = [f"a{i}" for i in range(layout.arity)]
    unpack = (f"        {', '.join(names)}, = args\n" if names else "        if args: raise ValueError\n")
    _convert(w, layout.args, names, 2, encoder_of)
    g_size, p_size = scratch
    if g_size or p_size:
        values = ", ".join(w.values)
        scratch_code = _SCRATCH.format(
            global_alloc=f"self.global_allocator()(n_programs * {g_size}, GLOBAL_ALIGN, stream)" if g_size else "None",
            profile_alloc=f"self.profile_allocator()(n_programs * {p_size}, PROFILE_ALIGN, stream)" if p_size else "None")
        packer, keep = "pack_head", "g_obj, p_obj, "
    else:
        values = ", ".join(w.values + ["0", "0"])
        scratch_code, packer, keep = "", "pack_all", ""
    source = TEMPLATES[mode].format(name=mode, doc=DOCS[mode], unpack=unpack, convert="".join(w.lines),
                                    packer=packer, values=values, scratch=scratch_code, keep=keep)
    fn, = define(source, mode, dict(namespace, **w.constants), mode)
    fn.__qualname__ = f"CudaLauncher.{mode} (generated)"
    return fn


# -- the guarded fast path in front of kernel[grid] (launcher.fast_dispatch) --
# One body, emitted once per kernel: `call(grid, ...)` is what kernel[grid] returns (launcher's
# JITFunction.__getitem__ binds the grid to it); `run(..., grid=, warmup=)` is JITFunction.run
# (Triton's autotuner and heuristics call it; warmup() calls take Triton's path), which calls
# `call`. Every argument is keyed by one C call (launcher._call.GuardKey.key, carrying out
# fast_dispatch.classify's and specialization.int_key's rules), and a call without launch options
# first tries the whole hit in one C call (GuardKey.hit: the same steps as the code below, for an
# entry that holds with no hook set); what it leaves runs the code below, with the key it made
# (a miss) or without (NotImplemented: the code below keys and explains).
# Pointers go to the launcher as the integers the key already read from data_ptr();
# everything Triton's path sees (grid callables, launch metadata, a miss) gets the arguments as
# given. Where the compiled kernel has a C flat launch (CudaLauncher.flat_launch: no
# descriptors, tensor maps or scratch), a hit without hooks packs and launches in that one C
# call; what it declines (a value of another type, an odd grid) goes to the direct launch, which
# converts and explains. The grid is read by launcher.arguments.grid3, and whether hooks are set
# is _unset's test (triton_adapter.hooks_set's rule), as at every front door. Every name the generated code
# gives itself starts with RESERVED (a kernel parameter may not: the guard leaves such a
# kernel to Triton, a bundle refuses it).
RESERVED = "_launcher_"


class GuardEntry(NamedTuple):
    """What a guard records for a key (launcher.fast_dispatch.Guard._record) and its generated
    code unpacks on a hit, each field as `_launcher_<field>`: the one statement of the fields and
    their order. _record stores them as a plain tuple in this order (a miss makes one: no
    Python-level __new__ to call, and the generated code's unpack is an exact tuple's)."""

    hash: object  # the JITFunction's hash when recorded (its source changed since: a miss)
    caches: object  # its device_caches entry for the device (cleared or replaced since: a miss)
    kernel_get: object  # .get of Triton's kernel cache, which must still hold...
    triton_key: object  # ...the kernel under this key
    kernel: object  # the CompiledKernel (what kernel[grid] returns)
    launcher: object  # its launcher (CompiledKernel.run)
    function: int  # its CUfunction
    packed_metadata: tuple
    direct: object  # the shape's direct launch (no hooks): launcher.fast_dispatch._direct
    flat: object  # the C flat launch (CudaLauncher.flat_launch), or None


_UNPACK_ENTRY = ", ".join(RESERVED + f for f in GuardEntry._fields) + " = _launcher_e"

GUARD_TEMPLATE = '''\
def _launcher_general(grid, _launcher_keyed, _launcher_options, {names_args}):
    """kernel[grid](...) through launcher's guard (generated for {name}), where the C call
    (GuardKey.call) did not launch it: a call with launch options, a miss (keyed: what
    GuardKey.hit answered), a call the hit declined (None), or the guard not in front."""
    if not _launcher_KEYER.live or _launcher_elsewhere(_launcher_KEYER.in_charge()):
        return _launcher_triton(grid, False, _launcher_options, ({names}))
{never}    if _launcher_JIT.pre_run_hooks or _launcher_RT.add_stages_inspection_hook is not None:
        return _launcher_fallback("pre-run hooks or a stages hook", grid, False, _launcher_options, ({names}))
    try:  # Triton's path is taken after it, never in it (its errors are not the key's)
        if _launcher_options:  # by class too: num_warps=4.0 is not 4 (Triton keys them by str())
            _launcher_okey = _launcher_frozenset([(_launcher_k, _launcher_v.__class__, _launcher_v)
                                                  for _launcher_k, _launcher_v in _launcher_options.items()])
        else:
            _launcher_okey = ()
        _launcher_dev = _launcher_KEYER.device()
        if _launcher_keyed is None:
            _launcher_keyed = _launcher_KEY(_launcher_dev, _launcher_okey, {names})
        {keyed} = _launcher_keyed
        _launcher_e = _launcher_ENTRIES.get(_launcher_key)
    except _launcher_NoKey as _launcher_reason:
        return _launcher_fallback(_launcher_str(_launcher_reason), grid, False, _launcher_options, ({names}))
    except _launcher_TypeError:
        return _launcher_fallback("an argument that cannot be a key (unhashable)", grid, False, _launcher_options, ({names}))
    if _launcher_e is not None:
        {unpack}
        if (_launcher_hash is _launcher_JIT.hash and _launcher_caches is _launcher_JIT.device_caches.get(_launcher_dev)
                and _launcher_kernel_get(_launcher_triton_key) is _launcher_kernel):
            _launcher_HITS[0] += 1
        else:  # the kernel's source changed, or its caches were cleared or no longer hold it
            _launcher_e = None
    if _launcher_e is None:  # a miss: the kernel Triton's cache holds for this call, else Triton's path
        if _launcher_key.__class__ is _launcher_NoKey:  # an argument of a class that never keys (counted as such)
            return _launcher_fallback(_launcher_key, grid, False, _launcher_options, ({names}))
        _launcher_e = _launcher_recall(_launcher_key, _launcher_dev, _launcher_options, ({names}))
        if _launcher_e is None:
            return _launcher_miss(_launcher_key, _launcher_dev, grid, _launcher_options, ({names}))
        {unpack}
    if _launcher_JIT.used_global_vals:
        _launcher_check_globals(_launcher_JIT)
    if grid.__class__ is _launcher_tuple:
        _launcher_g = grid
    elif _launcher_callable(grid):
        _launcher_b = {{{bound}}}
        _launcher_g = grid(_launcher_b)
        if _launcher_grid_wrote(_launcher_b, _launcher_NAMES, ({names})):  # Triton launches what the grid left there
            return _launcher_left(_launcher_e, _launcher_dev, _launcher_g, _launcher_b)
    else:
        _launcher_g = grid
    _launcher_stream = _launcher_STREAM(_launcher_dev)
    _launcher_enter, _launcher_leave = _launcher_RT.launch_enter_hook, _launcher_RT.launch_exit_hook
    if {unset_enter} and {unset_leave}:  # no hooks set
        if _launcher_flat is not None:  # one C call packs and launches; None: launched, False: declined
            _launcher_st = _launcher_flat(_launcher_function, _launcher_stream, _launcher_g, {passed})
            if _launcher_st is None:
                return _launcher_kernel
            if _launcher_st:  # (status, packed bytes): the driver refused
                _launcher_launcher._launch_failed(*_launcher_st)
                return _launcher_kernel
        _launcher_gx, _launcher_gy, _launcher_gz = _launcher_grid3(_launcher_g)
        _launcher_direct(_launcher_launcher, _launcher_gx, _launcher_gy, _launcher_gz, _launcher_stream,
                         _launcher_function, {passed})
        return _launcher_kernel
    _launcher_enter, _launcher_leave = _launcher_hooks_set(_launcher_RT)
    _launcher_md = _launcher_kernel.launch_metadata(_launcher_g, _launcher_stream, {names})
    _launcher_gx, _launcher_gy, _launcher_gz = _launcher_grid3(_launcher_g)
    _launcher_launcher(_launcher_gx, _launcher_gy, _launcher_gz, _launcher_stream, _launcher_function,
                       _launcher_packed_metadata, _launcher_md, _launcher_enter, _launcher_leave, {passed})
    return _launcher_kernel


def _launcher_run({params}*, grid, warmup, **_launcher_options):
    """kernel.run(...) through launcher's guard (generated for {name}): kernel[grid]'s call."""
    if warmup:
        return _launcher_fallback("warmup", grid, True, _launcher_options, ({names}))
    return _launcher_KEYER.call(grid, {positional}**_launcher_options)
'''

# A parameter whose argument in the first call was of a class that never keys (a tensor
# descriptor): such an argument sends the call to Triton's path before anything is classified.
_NEVER_KEYS = """\
    if {a}.__class__ is _launcher_NEVER_CLASS:
        _launcher_FALLBACKS[_launcher_NEVER] += 1
        return _launcher_triton(grid, False, _launcher_options, ({args}))
"""


def reserved_builtins(prefix: str, *builtins) -> dict:
    """The builtins generated code uses, under names no kernel parameter can take (`prefix` +
    the builtin's name): a parameter named `len` or `int` would hide the builtin inside a
    generated function whose parameters are the kernel's."""
    return {f"{prefix}{b.__name__}": b for b in builtins}


# The builtins a guard reads (globals, shared by every guard).
_GUARD_BUILTINS = reserved_builtins(RESERVED, tuple, callable, str, frozenset, TypeError)


def guard_heads(jit, knobs) -> tuple:
    """A guard's heads (launcher._call.GuardKey's): what its key starts with, before its arguments'
    items, each as GuardKey reads it: the device (first: the hit reads it), the kernel's debug
    flag, the knobs in Triton's key (`knobs`: their heads, fast_dispatch._knobs), the launch
    options' key."""
    return ("device", ("attr", jit, "debug"), *knobs, "options")


def guard_key_params(params, hints=None) -> tuple:
    """launcher._call.GuardKey's params for a kernel: (constexpr, specialize, align, out, table)
    per parameter, where `table` is an argument's table of specialization.int_key codes (a
    constexpr's: spec.bounded, the key of a constexpr tuple) and `out` marks a parameter whose
    argument in a first call was not a scalar (or that has no
    hint): the key call also answers its launch value (a tensor's data_ptr(), read once). The
    generated code names those values `_launcher_p<i>` (guard_source)."""
    hints = hints or {}
    scalars = (int, float, bool, type(None))
    return tuple((is_constexpr, specialize, align, not is_constexpr and hints.get(pname) not in scalars,
                  S.bounded if is_constexpr else INT_KEYS[specialize, align])
                 for pname, is_constexpr, specialize, align in params)


def guard_source(name: str, params, namespace, hints=None, never=None) -> str:
    """The source of a guard's generated code (GUARD_TEMPLATE filled in for one kernel; what
    generate_guard compiles and `python -m launcher show-generated` prints). The arguments are
    generate_guard's. Every argument is keyed by one C call (_launcher_KEY, launcher._call.GuardKey
    made with guard_key_params and guard_heads), which also answers the launch values of the
    parameters it marks out."""
    sig, passed, outs = [], [], []
    all_names = [p[0] for p in params]
    names_tuple = ", ".join(all_names) + ("," if len(all_names) == 1 else "")
    for i, (pname, (_, _, _, out, _)) in enumerate(zip(all_names, guard_key_params(params, hints))):
        sig.append(f"{pname}=_launcher_DEFAULT_{i}" if f"_launcher_DEFAULT_{i}" in namespace else pname)
        if out:
            outs.append(f"_launcher_p{i}")
        passed.append(outs[-1] if out else pname)
    bound = ", ".join(f"{n!r}: {n}" for n in all_names)
    never_check = _NEVER_KEYS.format(a=never, args="".join(n + ", " for n in all_names)) if never else ""
    return GUARD_TEMPLATE.format(params=", ".join(sig) + ", " if sig else "", name=name, names=names_tuple,
                                 names_args=", ".join(all_names), positional="".join(n + ", " for n in all_names),
                                 unpack=_UNPACK_ENTRY,
                                 unset_enter=_unset("_launcher_enter", "_launcher_HOOK_CHAIN"),
                                 unset_leave=_unset("_launcher_leave", "_launcher_HOOK_CHAIN"),
                                 never=never_check, keyed=", ".join(["_launcher_key", *outs]) + ",",
                                 bound=bound, passed=", ".join(passed))


def generate_guard(name: str, params, namespace: dict, hints=None, never=None, shared=frozenset()):
    """The (run, general) of one @triton.jit function behind the guard (see GUARD_TEMPLATE):
    kernel.run, and the general path of kernel[grid]'s C call (launcher._call.GuardKey.call, the
    guard's keyer: _launcher_KEYER in namespace).
    params: (name, is_constexpr, specialize, align) per parameter, in order, with defaults in
    namespace as _launcher_DEFAULT_<i>; hints: the class of each parameter's argument in a first
    call, by name (its kind is then tested first). Both read namespace's names from one set of
    cells (define; codegen.cells reaches them).

    The key is one flat tuple (no tuple per argument to build and hash). A parameter whose
    argument was a tensor (or that has no hint) has two entries, its kind and, for tensors,
    their alignment; its launcher argument is the data_ptr() the key read. A parameter whose
    argument was a scalar has one entry (a tensor there keys as a tagged tuple). never: the name
    of a parameter whose argument in a first call was of a class that never keys, with that class
    as _launcher_NEVER_CLASS and its NoKey as _launcher_NEVER in namespace (and the guard's path to Triton as
    _launcher_triton, the fallback counter as _launcher_FALLBACKS), or None. shared: the names of namespace whose values
    are the same for every kernel, never change and are read once per call (Triton's knobs,
    the counters): the guard reads them as globals, from one dict for all kernels (define)."""
    source = guard_source(name, params, namespace, hints, never)
    own = {k: v for k, v in namespace.items() if k not in shared}
    common = {k: namespace[k] for k in shared}
    run, general = define(source, "guard", own, "_launcher_run", "_launcher_general",
                          shared={**common, **_GUARD_BUILTINS})
    run.__qualname__ = f"{name}.run (launcher guard, generated)"
    general.__qualname__ = f"{name}[grid] (launcher guard, generated general path)"
    return run, general


# -- a bundled kernel's call (launcher.bundle_kernel.BundleKernel: `bundle.kernel[grid](...)`) --
# One function per kernel, with the kernel's own signature, binds the arguments, keys them and
# looks the entry up in one C call (launcher._call.GuardKey.find, the guard's key with the
# bundle's rules: BundleKernel._keyer), and launches it (in one C call where the variant has a
# flat launch); a new key, options or anything odd go to the kernel's slow path, which chooses,
# checks and explains.
BUNDLE_CALL = '''\
def launch(_launcher_grid, /, {signature}):
    if _launcher_extra:
        _launcher_too_many({count}, _launcher_extra)
    if _launcher_options:
        return _launcher_slow(_launcher_grid, {stream}, ({names}), _launcher_options, None)
    if not _launcher_CACHE:  # nothing recorded to find: the device is asked after the arguments are checked
        return _launcher_slow(_launcher_grid, {stream}, ({names}), None, _launcher_KEY_AFTER)
    try:  # the entry recorded for the key (None: a new key), the key, the tensors' data_ptr()
        _launcher_entry, _launcher_key, {outs}= _launcher_FIND(_launcher_device(), {names})
    except _launcher_Exception:  # a key that cannot be made: the slow path explains
        return _launcher_slow(_launcher_grid, {stream}, ({names}), None, None)
    if _launcher_entry is None:
        return _launcher_slow(_launcher_grid, {stream}, ({names}), None, _launcher_key)
    _launcher_n = _launcher_len(_launcher_grid) if _launcher_grid.__class__ is _launcher_tuple else 0
    if _launcher_n == 3:
        _launcher_g0, _launcher_g1, _launcher_g2 = _launcher_grid
    elif _launcher_n == 1:
        _launcher_g0, _launcher_g1, _launcher_g2 = _launcher_grid[0], 1, 1
    else:
        _launcher_g0, _launcher_g1, _launcher_g2 = _launcher_entry.grid3(_launcher_grid, ({names}))
    _launcher_s = _launcher_entry.stream() if {stream} is None else _launcher_stream_of({stream})
    _launcher_parts = _launcher_entry.parts
    if _launcher_parts is None:  # the arguments need adjusting
        _launcher_entry.run(_launcher_g0, _launcher_g1, _launcher_g2, _launcher_s, _launcher_entry.function,
                            _launcher_entry.metadata, None, None, None, *_launcher_entry.complete(({names})))
    else:  # None: launched in C
        _launcher_st = _launcher_parts[0](_launcher_parts[1], _launcher_s,
                                          (_launcher_g0, _launcher_g1, _launcher_g2), {passed})
        if _launcher_st is not None:
            _launcher_entry.not_flat(_launcher_st, _launcher_g0, _launcher_g1, _launcher_g2, _launcher_s, {passed})
'''

BUNDLE_BIND = '''\
def bind({signature}):
    return ({names}), _launcher_options, {stream}
'''


def bundle_defaults(params, layer_names, missing, required) -> tuple:
    """What a bundled kernel's call binds to each parameter the caller leaves out, as a tuple of
    at most one item (the C call's defaults, launcher._call.GuardKey.set_bundle_call, and the
    generated signature's, bundle_signature): `missing` for one with a default or that a layer
    may supply (the real value is filled in later, so that the call path knows what the caller
    passed), `required` for a positional one without after such a one (the slow path says it is
    missing), none for the others."""
    out, defaulted = [], False
    for p in params:
        if p.has_default or p.name in layer_names:
            out.append((missing,))
            defaulted = True
        elif defaulted and not p.keyword_only:
            out.append((required,))
        else:
            out.append(())
    return tuple(out)


def bundle_signature(params, layer_names, with_extra: bool, missing, required):
    """The parameter list of a generated function with the kernel's own parameters: those a
    layer may supply or with a default get a MISSING default (the real one is filled in later,
    so that the call path knows what the caller passed), `stream=` unless the kernel has a
    parameter of that name, surplus positional arguments in `_launcher_extra` (to say how many
    the kernel takes) and compile options in `**_launcher_options`. missing, required: the
    bundle's sentinels for a left-out argument and a required one after a default."""
    positional, keyword = [], []
    for p, fill in zip(params, bundle_defaults(params, layer_names, missing, required)):
        text = p.name if not fill else f"{p.name}=_launcher_MISSING" if fill[0] is missing else f"{p.name}=_launcher_REQUIRED"
        (keyword if p.keyword_only else positional).append(text)
    names = [p.name for p in params]
    stream = "stream" if "stream" not in names else "None"
    star = ["*_launcher_extra"] if with_extra else ["*"]
    tail = ["stream=None"] if stream == "stream" else []
    parts = positional + star + keyword + tail + ["**_launcher_options"]
    if parts[len(positional)] == "*" and len(parts) == len(positional) + 2:  # '*' then only **options
        parts.remove("*")
    namespace = {"_launcher_MISSING": missing, "_launcher_REQUIRED": required}
    return ", ".join(parts), stream, namespace


# The builtins the generated code uses, under names no kernel parameter can take.
BUNDLE_BUILTINS = reserved_builtins(RESERVED, tuple, len, Exception)




def _make_hooked_call():
    source = ("def hooked_call(self, c_call, plan, buf, size, launch_metadata, launch_enter_hook, launch_exit_hook,"
              " *out):\n"
              '    """c_call(plan, buf, size, *out) between the launch hooks (_HOOKED), for the plan-driven launch\n'
              '    and dry run (CudaLauncher._launch_planned, dry_run_planned)."""\n'
              + _indented(_HOOKED.format(call="c_call(plan, buf, size, *out)"), 4))
    fn, = define(source, "hooked call", {}, "hooked_call")
    return fn


hooked_call = _make_hooked_call()
