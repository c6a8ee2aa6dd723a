"""A guarded fast path in front of every @triton.jit kernel's `kernel[grid](...)`, with no
change to user code: `launcher.install(fast_dispatch=True)` or `LAUNCHER_FAST_DISPATCH=1`.

Triton's dispatch (JITFunction.run) binds the arguments, specializes each one, builds a cache
key, looks the compiled kernel up, checks its globals, evaluates the grid, builds the launch
metadata and calls the launcher. The guard computes, with code generated for each kernel's
signature (launcher.codegen.generate_guard), a key of only what decides which compiled kernel
Triton would choose:
- constexprs and launch options by value (and type);
- integers by class: equal to 1, the i32 / i64 / u64 range, divisible by 16 (only the range
  for do_not_specialize parameters; no divisibility for do_not_specialize_on_alignment);
- floats, bools and None by type; tensors by dtype and by whether data_ptr() is divisible by 16;
- tuples element by element; the current device; the knobs that enter Triton's key.
Anything else (tensor descriptors, unknown types) gives no key and the call takes Triton's path.
A parameter whose argument in the kernel's first call was a tensor descriptor is tested first:
a descriptor there sends the call to Triton's path before anything is classified. A knob that
Triton reads from the environment on every call (3.9's fpsan_homomorphic_casts) is keyed by
what decides its value (triton_adapter.knob_source), not through its descriptor: the holder's
own setting, read on every call, and the environment's, read again where the process environment
has changed since (an "env" head of launcher._call.GuardKey).

While the guard is on, JITFunction.__getitem__ (launcher._call.GuardItem, in C) hands out
kernel[grid] as a C call bound to the grid (launcher._call.GuardCall, where Triton builds a
lambda that calls run with keywords), and JITFunction.run is the guard's `run` (what autotuners,
heuristics and warmup() call), which makes the same C call.

The C call (launcher._call.GuardKey, made once for each guarded kernel) binds the arguments to
the kernel's parameters as Python would, makes the key by the rules stated here and in
launcher.specialization, and carries out the common hit (no launch options, no hook set) whole;
the generated code (the general path) takes launch options, misses and whatever the hit
declines, and is the home of the sequence the hit carries out.

On a hit the guard launches the compiled kernel recorded for that key, through its launcher
(or, where that kernel's launcher has one, in one C call that packs and launches:
CudaLauncher.flat_launch): the grid is evaluated as Triton evaluates it, the
stream is the current one, the globals the kernel used are checked, and the launch hooks run
with Triton's launch metadata when they are set. On a miss the guard looks in Triton's own
cache as Triton's run does: a kernel Triton has compiled and loaded for the call is recorded for
the key and launched as a hit would launch it; otherwise the call takes Triton's full path, and
the kernel Triton chose is recorded. A change to the kernel's source (its hash), clearing its
caches, pre-run hooks or a stages-inspection hook send calls to Triton's path. Under
@triton.autotune and @triton.heuristics the guard sits beneath their own choice: they run as in
Triton (reset_to_zero, restore_value and pre-hooks included) and call the guarded kernel.

Code that replaced a run stays in charge, as without the guard (Guard._triton is the one home of
where a call the guard does not launch goes): a kernel's own run set since kernel[grid] was taken
is called by it; a JITFunction.run put on the class since the guard was switched on sees every
call (the hit steps aside while the class's run is not the guard's, and a call it passes on to
the run it replaced dispatches as Triton's own run); one there before the guard was switched on
keeps every call (its kernels are left unguarded); disable() leaves a replacement made since in
place. A JIT function passed as an argument is keyed by its cache_key, as Triton keys it; another
active driver (set_active) takes the guard away, and the next call makes one with that driver's
getters; what a grid callable writes into the arguments it is given is what is launched, as in
Triton's run.
"""
from __future__ import annotations

import collections
import sys
import threading
import weakref

from launcher import _call, codegen, triton_adapter as A
from launcher.arguments import grid3
from launcher.cuda_launcher import CudaLauncher
from launcher.specialization import DIVISIBILITY_MASK as _MASK, triton_type
from launcher.specialization import int_key as _int_key, item_key as _full_key

_lock = threading.Lock()
_dispatching = threading.local()  # Guard._triton: the kernels (ids) whose call this thread sends through other code's run
_state: dict = {}  # while enabled: the original JITFunction.run
_TRITONS: list = []  # Triton's own JITFunction.run as enable() last found it on the class (else the first run it went over)
_attached: "weakref.WeakSet" = weakref.WeakSet()  # the guards in front of their kernels now
_fallbacks: collections.Counter = collections.Counter()  # reason (a str, or a class's NoKey) -> count
_misses = [0]
_hits = [0]  # every guard's hits (the generated code counts here): the counters only grow
_ABSENT = (None,)  # what _stock.get answers for a key it has not seen
_UNSET = ("a knob the user has not set",)  # in a key: the knob's value comes from the environment
_GUARD = "_launcher_guard"  # where a JITFunction keeps its guard while the guard is off
_CALL = "_launcher_call"  # where an attached guard keeps the `call` that kernel[grid] returns


_FINDER: list = []  # A.cached_kernel_finder(), one for every guard (made with the first)


def _finder():
    """Triton's cache lookup as its run makes it (A.cached_kernel_finder): the same function for
    every guard, so that a miss on a kernel never called before touches no finder of its own."""
    if not _FINDER:  # no lock: two threads at once would make two alike, and the first serves
        _FINDER.append(A.cached_kernel_finder())
    return _FINDER[0]


class NoKey(Exception):
    """The call has an argument the guard does not key (it takes Triton's path)."""


def enabled() -> bool:
    return bool(_state)


def enable() -> None:
    """Put the guard in front of every JITFunction's run (existing ones too)."""
    with _lock:
        if _state:
            return
        jit_cls = A.jit_function_class()
        _state["cls"], _state["run"] = jit_cls, jit_cls.run
        # a run other code put there first stays in charge of every call: the guard cannot be in front of it
        _state["foreign"] = not A.is_tritons_run(jit_cls.run)
        if not _state["foreign"] or not _TRITONS:
            _TRITONS[:] = [jit_cls.run]
        jit_cls.run = _first_run
        # kernel[grid] binds the grid to the guard's call, unless something other than Triton
        # (whose __getitem__ JITFunction inherits from KernelInterface) has taken __getitem__
        # (the rule of kernel[grid] while the guard is on: launcher._call.GuardItem, in C)
        if "__getitem__" not in jit_cls.__dict__:
            _state["getitem"] = jit_cls.__getitem__ = _call.GuardItem(
                jit_cls.__getitem__, _CALL, jit_cls if _plain(jit_cls) else None)


# Whether a grid callable wrote into `bound`, the arguments by name it was given (names, values): Triton's run
# launches what the callable left there (Guard._launch_left). One test for the hit and the generated code.
_grid_wrote = _call.grid_wrote


# The kernel's attributes a guard's hit reads besides its key's heads (launcher._call.GuardKey):
# from its __dict__ where the kernel's class is _plain for them and for the heads' ("attr", kernel, name)
_HIT_READS = ("pre_run_hooks", "hash", "device_caches", "used_global_vals")


def _plain(cls, names=("run", _CALL)) -> bool:
    """Whether an instance's attributes `names` (by default `run` and `_launcher_call`, _CALL:
    what GuardItem reads) are what its __dict__ holds where it holds them, for instances of
    exactly `cls`: no __getattr__ or __getattribute__ of its own, `__dict__` the instance dict
    Python makes for a class statement's instances (what PyObject_GenericGetDict answers), no
    data descriptor of those names (GuardItem and GuardKey then read them from the __dict__).
    With names=(): whether obj.__dict__ is that dict."""
    def found(name):
        return next((vars(c)[name] for c in cls.__mro__ if name in vars(c)), None)

    def data_descriptor(name):
        v = found(name)
        return v is not None and (hasattr(type(v), "__set__") or hasattr(type(v), "__delete__"))
    d = found("__dict__")
    standard_dict = (type(d) is type(_PLAIN_DICT) and d.__doc__ == _PLAIN_DICT.__doc__
                     and d.__objclass__.__flags__ & _HEAPTYPE)
    return (cls.__getattribute__ is object.__getattribute__ and not hasattr(cls, "__getattr__")
            and bool(standard_dict) and not any(data_descriptor(n) for n in names))


class _Plain:
    pass


_PLAIN_DICT, _HEAPTYPE = vars(_Plain)["__dict__"], 1 << 9  # a class statement's __dict__; Py_TPFLAGS_HEAPTYPE


def disable() -> None:
    """Take the guard away: every JITFunction runs Triton's own dispatch again. Each guard stays
    with its kernel, dormant, and the next enable() puts it back with what it recorded (what
    Triton compiled meanwhile is then a miss, recorded as usual)."""
    with _lock:
        if not _state:
            return
        jit_cls = _state["cls"]
        if jit_cls.__dict__.get("run") is _first_run:  # not if other code put its own run there since
            jit_cls.run = _state["run"]
        if _state.get("getitem") is not None and jit_cls.__dict__.get("__getitem__") is _state["getitem"]:
            del jit_cls.__getitem__  # not if replaced since
        for guard in list(_attached):
            guard.detach()
        _attached.clear()
        _state.clear()


def stats() -> dict:
    """Hits, misses and fallbacks (with their reasons) since the guard was first enabled; the
    counts only grow."""
    return {"enabled": enabled(), "guarded kernels": len(_attached), "hits": _hits[0] + _call.guard_hits(),
            "misses": _misses[0],
            "fallbacks": fallback_counts()}


def fallback_counts() -> dict:
    """Fallbacks by reason, as text (the generated code counts a class's NoKey itself: no str() per call)."""
    out: dict = {}
    for reason, count in list(_fallbacks.items()):
        out[str(reason)] = out.get(str(reason), 0) + count
    return out


def _first_run(self, *args, grid, warmup, **kwargs):
    """JITFunction.run while the guard is on: put this kernel's guard in front of it (its
    dormant one, unless what it was made with has changed), then run it. Reached from other
    code's run that a call of the guard's went through (Guard._triton: code that replaced
    JITFunction.run since, and calls the run it replaced), or with the guard switched off, it
    dispatches as Triton's own run (_TRITONS)."""
    if id(self) not in _busy() and type(self).run is _first_run:  # else other code's run on the class called it
        run = self.__dict__.get("run")
        if run is None:
            run = _guard_run(self, (args, kwargs))
        elif run is not _guards_run(self):  # the kernel's own run, set by other code that calls the class's
            run = None
        if run is not None:
            return run(*args, grid=grid, warmup=warmup, **kwargs)
    return _tritons_run()(self, *args, grid=grid, warmup=warmup, **kwargs)


def _guards_run(jit):
    """The run of the guard `jit` holds, or None."""
    guard = jit.__dict__.get(_GUARD)
    return guard.run if guard is not None else None


def _tritons_run():
    """Triton's own JITFunction.run, as enable() last found it on the class (else the run it
    first went over; the class's own where the guard was never switched on)."""
    return _TRITONS[0] if _TRITONS else A.jit_function_class().run


def _busy() -> set:
    """The kernels (ids) whose call this thread is sending through other code's run (Guard._triton)."""
    busy = getattr(_dispatching, "kernels", None)
    if busy is None:
        busy = _dispatching.kernels = set()
    return busy


def _guard_run(jit, example):
    """The run of the guard now in front of `jit`: its dormant guard put back, else a new one;
    None where the guard was switched off meanwhile. A new guard is made without the lock held:
    making it reads the example call's arguments (data_ptr(), dtype: code of the caller's, which
    may launch a kernel, or switch the guard, itself); it is put in front under the lock, unless
    a guard was put in front of the kernel meanwhile (by that code, or another thread)."""
    with _lock:  # not while disable() takes the guards away
        original = _state.get("run")
        if original is None:
            return None
        foreign = _state["foreign"]
        guard = jit.__dict__.get(_GUARD)
        if guard is not None and guard.attach(original):
            return guard.run
    made = Guard(jit, original, example=example, put_in_front=False, foreign=foreign)
    with _lock:
        if _state.get("run") is not original:
            return None
        run = jit.__dict__.get("run")
        if run is not None:  # a guard put in front meanwhile, else the kernel's own run: not ours to replace
            return run if run is _guards_run(jit) else None
        made._put_in_front()
        return made.run


_NO_KEY_CLASSES: dict = {}  # classes whose instances never key (tensor descriptors) -> their NoKey


def classify(value, specialize: bool, align: bool, tensor=None):
    """The key of an argument the generated code does not handle inline (tuples, tensors of
    other classes, constexpr objects). For an argument of a class that never keys (a tensor
    descriptor) it returns that class's NoKey, so that the generated code falls back without
    an exception; other arguments that cannot be keyed raise NoKey. tensor: torch.Tensor (or
    the guard's stand-in), whose instances inside tuples are keyed as the generated code keys
    them."""
    cls = value.__class__
    if cls is tuple:
        return tuple([_item_key(v, tensor) for v in value])  # Triton specializes items fully
    no_key = _NO_KEY_CLASSES.get(cls)
    if no_key is not None:
        return no_key
    if isinstance(value, tuple):
        return tuple([_item_key(v, tensor) for v in value])
    if hasattr(value, "block_shape") and hasattr(value, "base"):
        if len(_NO_KEY_CLASSES) < 64:
            _NO_KEY_CLASSES[cls] = NoKey("a tensor descriptor")
        raise NoKey("a tensor descriptor")
    try:
        ty, attr = triton_type(value, specialize=specialize, align=align)
    except (TypeError, OverflowError) as e:
        raise NoKey(f"an argument Triton cannot specialize here ({type(value).__name__})") from e
    if ty == "constexpr":  # by value; a JIT function by its cache_key (_call.jit_key: the one rule)
        return ("constexpr", value.__class__, _call.jit_key(value) if isinstance(value, A.jit_callable_class()) else value)
    dtype = getattr(value, "dtype", None)
    return (ty, dtype if dtype is not None else None, attr)


def int_key(v: int, specialize: bool = True, align: bool = True) -> int:
    """The key of an int argument: launcher.specialization.int_key (the one rule), NoKey beyond
    64 bits (Triton refuses it). The generated code looks the int up in that rule's table for
    the parameter's flags (specialization.INT_KEYS) before it calls this."""
    key = _int_key(v, specialize, align)
    if key is None:
        raise NoKey("an integer beyond 64 bits")
    return key


def _item_key(v, tensor):
    """The key of an item of a tuple argument (specialized fully, as Triton does):
    specialization.item_key's, NoKey for an int beyond 64 bits; anything else through classify."""
    key = _full_key(v, tensor)
    if key is None:
        raise NoKey("an integer beyond 64 bits")
    if key is not NotImplemented:
        return key
    key = classify(v, True, True, tensor)
    if key.__class__ is NoKey:
        raise key
    return key


class Guard:
    """One JITFunction's guard: its generated run, its recorded kernels and its counters."""

    def __init__(self, jit, original, *, device=None, stream=None, example=None, put_in_front=True, foreign=False):
        """original: Triton's JITFunction.run (fixed for the guard: its generated code holds it
        too); device, stream: the current-device and
        current-stream getters (Triton's active driver's by default); example: (args, kwargs)
        of a first call, whose argument classes the generated code tests first; put_in_front:
        whether the guard goes in front of its kernel now (else _put_in_front() does it);
        foreign: `original` is other code's run, not Triton's (it stays in charge of every call:
        the guard sends them all there)."""
        self.jit = jit
        self.original = original
        self._getters = (device, stream)
        self.entries: dict = {}
        self._stock: dict = {}  # keys whose kernel Triton's stock launcher launches -> the kernel's hash
        self._find = _finder()
        self._settled, self.keyer, self.general, self._live = False, None, None, False
        self._class_run = type(jit).run  # _first_run, for a guard enable() makes: other code's run there since is in charge
        self._made_with = self._environment()
        params = A.jit_parameters(jit)
        self._unusual = _why_unguarded(jit, params) if not foreign else \
            "JITFunction.run is other code's (it was replaced before the guard was switched on)"
        if self._unusual is not None:
            self.run = self._unguarded
        else:
            name = getattr(jit, "__name__", "kernel")
            ns, shared = self._namespace(params, example)
            never = _never_keys(params, example)
            if never is not None:
                ns["_launcher_NEVER_CLASS"], ns["_launcher_NEVER"] = never[1:]
            self.run, self.general = codegen.generate_guard(name, _guard_params(params), ns, _hints(params, example),
                                                            never[0] if never is not None else None, shared)
            self.keyer = ns["_launcher_KEYER"]
            at = [p.name for p in params].index(never[0]) if never is not None else None
            self.keyer.set_call(self.general, {p.name: i for i, p in enumerate(params)},
                                tuple(() if p.default is A.EMPTY else (p.default,) for p in params),
                                (at, never[1]) if never is not None else None, str(name), self.run)
        if put_in_front:
            self._put_in_front()

    def _environment(self) -> tuple:
        """What the generated run was made with, besides the kernel: Triton's run, the device
        and stream getters and torch's Tensor class (torch may be imported later)."""
        device, stream = self._getters if self._getters[0] is not None else A.device_and_stream_getters()
        torch = sys.modules.get("torch")
        return self.original, device, stream, torch.Tensor if torch is not None else _NoTensor

    def attach(self, original) -> bool:
        """Put this dormant guard back in front of its kernel, or False when it is out of date."""
        if (original, *self._environment()[1:]) != self._made_with:
            return False
        if self.keyer is not None and self.keyer.in_charge() == 2:  # another active driver (with the same getters)
            return False
        self._put_in_front()
        return True

    def _put_in_front(self):
        jit = self.jit.__dict__
        jit[_GUARD] = self
        jit["run"] = self.run
        self._live = True
        if self.keyer is not None:  # kernel[grid] is a call of the keyer (GuardItem binds the grid)
            jit[_CALL] = (self.run, self.keyer)
            self.keyer.live = True
        else:  # an unguarded kernel: kernel[grid] is Triton's (read without an exception)
            jit[_CALL] = (None, None)
        _attached.add(self)

    def detach(self):
        """Leave the kernel to Triton's own dispatch (the guard stays with it, dormant). A
        `kernel[grid]` taken while the guard was on then dispatches as the kernel does now."""
        jit = self.jit.__dict__
        self._live = False
        if jit.get("run") is self.run:  # not a run the kernel's user has set since
            del jit["run"]
        jit.pop(_CALL, None)
        if self.keyer is not None:
            self.keyer.live = False

    def _namespace(self, params, example) -> tuple:
        """(the names the generated code uses, the names among them that are the same for every
        guard and never change: read as globals). Its keyer, _launcher_KEYER, is the guard's C
        call (launcher._call.GuardKey: the rules of classify, int_key and DIVISIBILITY_MASK
        carried out for this kernel's parameters, the heads of its key, the binding of
        kernel[grid]'s arguments and the common hit, whole)."""
        _, device, stream, tensor = self._made_with
        ns = {
            "_launcher_JIT": self.jit, "_launcher_RT": A.runtime_knobs(), "_launcher_STREAM": stream,
            "_launcher_ENTRIES": self.entries, "_launcher_NoKey": NoKey,
            "_launcher_fallback": self._fallback, "_launcher_miss": self._miss, "_launcher_recall": self._recall,
            "_launcher_FALLBACKS": _fallbacks,
            "_launcher_triton": self._triton, "_launcher_elsewhere": self._elsewhere,
            "_launcher_grid_wrote": _grid_wrote, "_launcher_left": self._launch_left,
            "_launcher_check_globals": A.check_used_globals, "_launcher_hooks_set": A.hooks_set,
            "_launcher_HOOK_CHAIN": A.hook_chain_type(),
            "_launcher_grid3": grid3,
            "_launcher_HITS": _hits, "_launcher_NAMES": tuple(p.name for p in params),
        }
        heads = codegen.guard_heads(self.jit, _knobs())
        reads = _HIT_READS + tuple(h[2] for h in heads if isinstance(h, tuple) and h[0] == "attr" and h[1] is self.jit)
        driver = None
        if self._getters[0] is None:  # getters given to a guard made by hand stand for the driver: no check
            config, active = A.active_driver()
            driver = (config, active, type(config) if _plain(type(config), ("_active",)) else None)
        hit = {"jit": self.jit, "runtime": ns["_launcher_RT"], "device": A.fast_device_getter(device), "stream": stream,
               "hook_chain": ns["_launcher_HOOK_CHAIN"], "check_globals": A.check_used_globals, "grid3": grid3,
               "names": tuple(p.name for p in params), "fields": {f: i for i, f in enumerate(codegen.GuardEntry._fields)},
               "plain": _plain(type(self.jit), reads + ("run",)),
               # in charge while the kernel's class's run is still _first_run and Triton's active driver the one
               # the getters came from
               "class_run": self._class_run, "driver": driver,
               "jit_callable": A.jit_callable_class(), "left": self._launch_left}
        keyer = _call.GuardKey(codegen.guard_key_params(_guard_params(params), _hints(params, example)),
                               heads, tensor, int_key, classify, NoKey, _MASK, hit, self.entries)
        ns["_launcher_KEYER"], ns["_launcher_KEY"] = keyer, keyer.key
        # read once per call: globals shared by every guard
        shared = {"_launcher_RT", "_launcher_FALLBACKS", "_launcher_check_globals", "_launcher_hooks_set", "_launcher_grid3",
                  "_launcher_HOOK_CHAIN", "_launcher_HITS"}
        _defaults(params, ns)
        return ns, frozenset(shared & ns.keys())

    def _settle(self):
        """After Triton's path ran: torch's CUDA is initialised, so the raw device getter may
        do; torch may have been imported since the guard was made, so its tensors key inline."""
        if self.keyer is None:
            self._settled = True
            return
        torch = sys.modules.get("torch")
        if self._made_with[3] is _NoTensor and torch is not None:
            self._made_with = self._made_with[:3] + (torch.Tensor,)
        self.keyer.settle(A.fast_device_getter(self._made_with[1]), self._made_with[3])
        self._settled = A.device_getter_is_final(self._made_with[1]) and self._made_with[3] is not _NoTensor

    def _unguarded(self, *args, grid, warmup, **kwargs):
        _fallbacks[self._unusual] += 1
        return self._triton(grid, warmup, kwargs, args)

    def _fallback(self, reason, grid, warmup, options, values):
        if not warmup:
            _fallbacks[reason] += 1
        return self._triton(grid, warmup, options, values)

    def _triton(self, grid, warmup, options, values):
        """The one home of where a call the guard does not launch itself goes, as stock Triton
        would dispatch it: while the guard is in charge, the run it was made with (Triton's);
        where other code put its own run on the kernel's class since (a wrapper of
        JITFunction.run: it sees every call, as without the guard), or the guard is no longer in
        front of its kernel (taken away before the call, or during it by code the call ran:
        data_ptr(), __index__), the class's run now. A run of ours reached from that code while
        it runs (it calls the run it replaced: _first_run) dispatches as Triton's own
        (_first_run), so nothing loops."""
        jit = self.jit
        busy = _busy()
        if id(jit) in busy:
            return _tritons_run()(jit, *values, grid=grid, warmup=warmup, **options)
        run = type(jit).run
        if run is self._class_run and self._live:
            run = self.original
        if A.is_tritons_run(run):
            return run(jit, *values, grid=grid, warmup=warmup, **options)
        busy.add(id(jit))
        try:
            return run(jit, *values, grid=grid, warmup=warmup, **options)
        finally:
            busy.discard(id(jit))

    def _elsewhere(self, charge) -> bool:
        """Whether a call goes elsewhere, by GuardKey.in_charge()'s answer `charge`: 0, the guard
        is in charge: no; 2, Triton's active driver changed since the guard was made: it is taken
        away (the kernel's next call makes one with the new driver's getters); 1, the kernel's
        class's run is other code's: unless this thread's call of it is the one running (_triton)."""
        if not charge:
            return False
        if charge == 2:
            with _lock:
                self.detach()
                _attached.discard(self)
            return True
        return id(self.jit) not in _busy()

    def _launch_left(self, entry, device, grid, bound):
        """The launch of a hit whose grid callable wrote into the arguments it was given (bound):
        Triton's run launches what the callable left there (its bound_args.values(), after
        grid(bound_args)), through the kernel's launcher as Triton's run calls it (launch metadata
        and hooks as they are set). The kernel, as a hit answers."""
        e = codegen.GuardEntry(*entry)
        stream = self._made_with[2](device)
        values = list(bound.values())
        enter, leave = A.hooks_set(A.runtime_knobs())
        metadata = e.kernel.launch_metadata(grid, stream, *values) if enter is not None else None
        gx, gy, gz = grid3(grid)
        e.launcher(gx, gy, gz, stream, e.function, e.packed_metadata, metadata, enter, leave, *values)
        return e.kernel

    def _recall(self, key, device, options, values):
        """A miss: the entry of the kernel Triton's cache holds for this call, found as Triton's
        run finds it and recorded for the key (the generated code then launches it as a hit:
        Triton's path would launch the same kernel with the same arguments). None where Triton
        has not compiled it, has not loaded it yet, or launches it with its stock launcher:
        Triton's path then."""
        if self._stock and self._stock.get(key, _ABSENT) is self.jit.hash:
            return None
        caches = self.jit.device_caches.get(device)  # read first: a clear meanwhile invalidates the entry
        found = self._find(self.jit, caches, values, options)
        if found is None:
            return None
        if not self._settled:
            self._settle()
        entry = self._record(key, device, found, caches)
        if entry is not None:
            _misses[0] += 1
        return entry

    def _miss(self, key, device, grid, options, values):
        """A miss Triton's cache cannot answer: Triton's full path (it compiles, or loads a kernel
        warmup() compiled), then the kernel it chose is recorded for the key."""
        kernel = self.original(self.jit, *values, grid=grid, warmup=False, **options)
        if not self._settled:
            self._settle()
        caches = self.jit.device_caches.get(device)  # read before the finder: a clear meanwhile invalidates the entry
        found = self._find(self.jit, caches, values, options)  # where Triton's cache holds what it launched
        if found is not None and found[0] is not kernel:
            found = None
        if (found is None or self._record(key, device, found, caches) is None) and \
                self._stock.get(key, _ABSENT) is self.jit.hash:
            _fallbacks["a kernel Triton's stock launcher launches"] += 1
        else:
            _misses[0] += 1
        return kernel

    def _record(self, key, device, found, caches):
        """Record the kernel `found` (the finder's (CompiledKernel, Triton's kernel cache, its key
        there)) for `key` and return the entry the generated code unpacks; None where it cannot
        be recorded. A kernel that Triton's stock launcher launches is remembered as such
        (Triton's path takes its calls). caches: the kernel's device_caches entry, read before the
        kernel was found; the entry holds while that is the kernel's entry and Triton's cache
        holds the kernel under its key (a clear or a replaced entry makes the next call a miss)."""
        jit = self.jit
        kernel, kernel_cache, triton_key = found
        launch = A.loaded_launch(kernel)
        if launch is None or caches is None or jit.hash is None:  # loaded_launch: None unless the handle is set
            return None
        run, function = launch
        if not getattr(run, "checks_pointers", False):
            # A hit hands the launcher the data_ptr() its key read: only a launcher that checks
            # every pointer itself may take it (Triton's stock one checks tensors, not ints).
            if len(self._stock) >= 1024:
                self._stock.clear()
            self._stock[key] = jit.hash
            return None
        metadata = kernel.packed_metadata
        # codegen.GuardEntry's fields, in its order, as a plain tuple: made without a Python call
        # (the NamedTuple's __new__) on every miss, and unpacked by the generated code at the
        # speed of an exact tuple
        entry = (jit.hash, caches, kernel_cache.get, triton_key, kernel, run, function, metadata,
                 *_launch_parts(run, metadata))
        entries = self.entries  # bounded; a clear and a store are each atomic: a race only loses entries
        if len(entries) >= 1024:
            entries.clear()
        entries[key] = entry
        return entry


def _why_unguarded(jit, params) -> str | None:
    """Why no guard code is generated for the kernel (its calls take Triton's path), or None."""
    unusual = A.unusual_parameters(jit)
    if unusual is None and any(p.name.startswith(codegen.RESERVED) or p.name in ("grid", "warmup") for p in params):
        unusual = "a parameter name the guard cannot use"
    return unusual


def _guard_params(params) -> list:
    """codegen.generate_guard's params: (name, is_constexpr, specialize, align) per JIT parameter."""
    return [(p.name, p.is_constexpr, not p.do_not_specialize, not p.do_not_specialize_on_alignment) for p in params]


def _knobs() -> list:
    """The knobs in Triton's cache key (A.dispatch_knobs), as heads of the guard's key
    (launcher._call.GuardKey reads them on every call): an env descriptor's knob by what decides
    its value (A.knob_source: the holder's own setting, read from its __dict__ without the
    attribute lookup where its class is _plain, else the environment's, whose read is called
    again only where the environment changed), any other by its attribute."""
    heads = []
    for holder, attr in A.dispatch_knobs():
        source = A.knob_source(holder, attr)
        if source is None:
            heads.append(("attr", holder, attr))
        else:
            read, args = source
            heads += [("own", holder, attr, _UNSET, _plain(type(holder), ())), ("env", read, tuple(args))]
    return heads


def _defaults(params, ns) -> None:
    """Put each parameter's default in ns, as the generated signature reads it."""
    for i, p in enumerate(params):
        if p.default is not A.EMPTY:
            ns[f"_launcher_DEFAULT_{i}"] = p.default


def guard_source(jit, example=None) -> str:
    """The source of the code the guard generates for the @triton.jit function `jit` (what
    `python -m launcher show-generated` prints), made as a guard makes it, without putting a
    guard in front of the kernel. example: (args, kwargs) of a first call, as the guard takes it."""
    params = A.jit_parameters(jit)
    unusual = _why_unguarded(jit, params)
    if unusual is not None:
        raise ValueError(f"no guard is generated for {getattr(jit, '__name__', jit)!r}: its calls take Triton's path "
                         f"({unusual})")
    ns: dict = {}
    _defaults(params, ns)
    never = _never_keys(params, example)
    return codegen.guard_source(getattr(jit, "__name__", "kernel"), _guard_params(params), ns,
                                _hints(params, example), never[0] if never is not None else None)


_PARTS: dict = {}  # (shape, packed metadata) -> _launch_parts of launcher's own launchers


def _launch_parts(run, packed_metadata) -> tuple:
    """(direct, flat): what a hit launches a kernel recorded with launcher `run` and
    `packed_metadata` through (_direct, and CudaLauncher.flat_launch where `run` has one, else
    None). Made once per shape and metadata for launcher's own launchers: a miss records without
    making them again."""
    if not isinstance(run, CudaLauncher):
        return _direct(run, packed_metadata), _flat(run, packed_metadata)
    key = (run._shape, packed_metadata)
    parts = _PARTS.get(key)
    if parts is None:
        parts = (_direct(run, packed_metadata), _flat(run, packed_metadata))
        if len(_PARTS) >= 1024:
            _PARTS.clear()
        _PARTS[key] = parts
    return parts


def _flat(run, packed_metadata):
    """The C launch with which a hit packs and launches itself, every parameter's value in order
    (CudaLauncher.flat_launch), where `run` offers one for `packed_metadata`; else None (the hit
    calls the direct launch)."""
    get = getattr(run, "flat_launch", None)
    return get(packed_metadata) if get is not None else None


def _direct(run, packed_metadata):
    """What a hit without launch hooks calls, `(run, gx, gy, gz, stream, function, *args)`, to
    launch through `run` (a compiled kernel's launcher, called with `packed_metadata`): for
    launcher's own, its shape's generated direct launch (shared by the kernels of that shape, so
    a miss makes nothing for it)."""
    if isinstance(run, CudaLauncher) and packed_metadata == run.packed_metadata:
        return run._shape.generated("direct")

    # another launcher that checks its pointers (a stand-in in the CPU tests), or other metadata
    def direct(run, gx, gy, gz, stream, function, *args):
        run(gx, gy, gz, stream, function, packed_metadata, None, None, None, *args)

    return direct


def _hints(params, example) -> dict:
    """The class of each parameter's argument in the call `example` (args, kwargs), by name."""
    if example is None:
        return {}
    args, kwargs = example
    hints = {p.name: a.__class__ for p, a in zip(params, args)}
    hints.update((name, a.__class__) for name, a in kwargs.items())
    return hints


def _never_keys(params, example):
    """(name, argument class, its NoKey) of the first parameter whose argument in the call
    `example` (args, kwargs) is of a class that never keys (a tensor descriptor), or None."""
    if example is None:
        return None
    args, kwargs = example
    values = dict(zip((p.name for p in params), args))
    values.update(kwargs)
    for p in params:
        if p.is_constexpr or p.name not in values:
            continue
        value = values[p.name]
        try:
            classify(value, True, True)  # registers a tensor descriptor's class
        except Exception:  # noqa: BLE001 - another argument the guard cannot key: no early test
            pass
        no_key = _NO_KEY_CLASSES.get(value.__class__)
        if no_key is not None:
            return p.name, value.__class__, no_key
    return None


class _NoTensor:
    """Stands for torch.Tensor where torch is not imported: no argument is of this class."""
