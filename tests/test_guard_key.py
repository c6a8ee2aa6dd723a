"""launcher._call.GuardKey: the guard's key and its common hit, in C (launcher.fast_dispatch).

The rules are Python's (fast_dispatch.classify, specialization.int_key, DIVISIBILITY_MASK); these
tests hold the C carrying them out to what the generated guard's code expects: the key's items,
the launch values, the NoKey that stands for a key, and the hit's decisions (launch, or leave the
call to the general path before anything of the call's own runs). Launches here are stand-ins
that record (the GPU tests launch through it for real: tests/test_gpu_fast_dispatch.py)."""
from __future__ import annotations

import gc
import os
import sys
import types
import weakref

import pytest

from launcher import _call, codegen, fast_dispatch
from launcher.fast_dispatch import NoKey, classify, int_key
from launcher.specialization import DIVISIBILITY_MASK, INT_KEYS


class Tensor:
    def __init__(self, ptr, dtype="fp32"):
        self.ptr, self.dtype = ptr, dtype

    def data_ptr(self):
        return self.ptr


class Chain:
    """Triton's HookChain as the hit tests it: `calls`, empty when no hook is set."""

    def __init__(self, *calls):
        self.calls = list(calls)


PARAMS = (  # x (a tensor, out), n (int), m (do_not_specialize), k (no alignment), BLOCK (constexpr)
    (False, True, True, True, INT_KEYS[True, True]),
    (False, True, True, False, INT_KEYS[True, True]),
    (False, False, True, False, INT_KEYS[False, True]),
    (False, True, False, True, INT_KEYS[True, False]),
    (True, True, True, False, None),
)
FLAGS = types.SimpleNamespace(debug="debug")
SPEC = ("device", ("attr", FLAGS, "debug"), "options")  # the heads: given, read, given
GIVEN = ("dev", ())  # the given heads of a call (the device, the options' key)
HEADS = ("dev", "debug", ())  # what its key starts with


def keyer(hit=None, tensor=Tensor, params=PARAMS, entries=None, heads=SPEC):
    return _call.GuardKey(params, heads, tensor, int_key, classify, NoKey, DIVISIBILITY_MASK, hit, entries)


def test_the_key_holds_two_items_per_parameter_by_the_python_rules():
    k = keyer()
    x = Tensor(0x1000)
    key, x_value, k_value = k.key(*GIVEN, x, 1024, 7, 2.5, 64)
    assert key == HEADS + ("fp32", True, int_key(1024), None, int_key(7, False, True), None, float, None, int, 64)
    assert (x_value, k_value) == (0x1000, 2.5)  # a tensor's data_ptr(), else the argument itself
    key = k.key(*GIVEN, Tensor(0x1004, "fp16"), None, True, x, 64)[0]
    assert key[3:] == ("fp16", False, type(None), None, bool, None, "fp32", False, int, 64)  # k: no alignment asked
    assert k.key(*GIVEN, x, 1, 1, 1, 64.0)[0][-2:] == (float, 64.0)  # a constexpr by class and value


def test_an_int_new_to_the_table_is_keyed_by_int_key_and_a_huge_one_raises_nokey():
    k = keyer()
    v = 987_654_321_123
    INT_KEYS[True, True].pop(v, None)
    assert k.key(*GIVEN, 5, v, 0, 0, 1)[0][5] == int_key(v) and INT_KEYS[True, True][v] == int_key(v)
    with pytest.raises(NoKey, match="beyond 64 bits"):
        k.key(*GIVEN, 5, 2**70, 0, 0, 1)


def test_other_arguments_go_to_classify_and_a_never_keying_class_stands_for_the_key():
    k = keyer()
    t = (Tensor(0x2000), 3)
    key, x_value, k_value = k.key(*GIVEN, t, 1, 1, 1, 1)
    assert key[3] == classify(t, True, True, Tensor) and x_value is t

    class Descriptor:
        block_shape, base = [16], None

    with pytest.raises(NoKey):
        classify(Descriptor(), True, True)  # registers the class as one that never keys
    no_key, *values = k.key(*GIVEN, Descriptor(), 1, 1, 1, 1)
    assert no_key.__class__ is NoKey and values == [None, None]


def test_wrong_counts_and_errors_of_called_code_raise():
    k = keyer()
    with pytest.raises(TypeError, match="takes 7 arguments"):
        k.key(*GIVEN, 1, 2)

    class Broken(Tensor):
        def data_ptr(self):
            raise RuntimeError("no storage")

    k2 = keyer(tensor=Broken)
    with pytest.raises(RuntimeError, match="no storage"):
        k2.key(*GIVEN, Broken(0), 1, 1, 1, 1)
    with pytest.raises(TypeError):
        _call.GuardKey(((False, True, True, False, "not a dict"),), ("device",), Tensor, int_key, classify, NoKey, 15)
    for heads in [(), ("options",), ("device", "device"), ("device", ("attr", FLAGS)), ("device", ("own", FLAGS, "debug")),
                  ("device", ("call", print, [])), ("device", ("attr", FLAGS, 5)), ("device", "what")]:
        with pytest.raises(TypeError, match="head"):  # the device first and only there, each head whole
            _call.GuardKey(PARAMS, heads, Tensor, int_key, classify, NoKey, 15)


# -- the hit --
class Jit:
    def __init__(self):
        self.hash, self.device_caches, self.pre_run_hooks, self.used_global_vals = "h1", {"dev": "caches"}, [], {}


def hit_setup(answer=None, jit=None, plain=None, heads=SPEC, **entry):
    """A GuardKey with its hit, an entry recorded for the key of CALL, and what it recorded."""
    record = {"flat": [], "direct": [], "failed": [], "grid": [], "globals": 0}
    jit, rt = jit or Jit(), types.SimpleNamespace(launch_enter_hook=None, launch_exit_hook=Chain(),
                                           add_stages_inspection_hook=None)
    entries = record["entries"] = {}

    def check_globals(j):
        record["globals"] += 1

    def grid3(g):
        return (tuple(g) + (1, 1))[:3]

    launcher = types.SimpleNamespace(_launch_failed=lambda status, packed: record["failed"].append((status, packed)))
    fields = {f: i for i, f in enumerate(codegen.GuardEntry._fields)}
    hit = {"jit": jit, "runtime": rt, "device": lambda: "dev", "stream": lambda dev: 0x5EA, "hook_chain": Chain,
           "check_globals": check_globals, "grid3": grid3, "names": ("x", "n", "m", "k", "BLOCK"), "fields": fields}
    if plain is not None:
        hit["plain"] = plain
    k = keyer(hit, entries=entries, heads=heads)
    kernel_cache = {"tk": "KERNEL"}

    def flat_launch(function, stream, grid, *values):
        record["flat"].append((function, stream, grid, values))
        return answer

    def direct(*args):
        record["direct"].append(args)

    e = codegen.GuardEntry(**{"hash": "h1", "caches": "caches", "kernel_get": kernel_cache.get, "triton_key": "tk",
                              "kernel": "KERNEL", "launcher": launcher, "function": 0xF0, "packed_metadata": (),
                              "direct": direct, "flat": flat_launch, **entry})
    entries[k.key(*GIVEN, *CALL)[0]] = e
    return k, record, jit, rt, kernel_cache


CALL = (Tensor(0x1000), 1024, 7, 2.5, 64)


def test_a_hit_launches_through_the_flat_launch_with_the_keys_data_ptr():
    k, record, *_ = hit_setup()
    before = _call.guard_hits()
    assert k.hit((4,), *CALL) == "KERNEL"
    assert record["flat"] == [(0xF0, 0x5EA, (4,), (0x1000, 1024, 7, 2.5, 64))] and not record["direct"]
    assert _call.guard_hits() == before + 1


def test_a_callable_grid_is_called_with_the_arguments_by_name():
    k, record, *_ = hit_setup()
    seen = []
    assert k.hit(lambda meta: seen.append(dict(meta)) or (2, 3), *CALL) == "KERNEL"
    assert seen == [{"x": CALL[0], "n": 1024, "m": 7, "k": 2.5, "BLOCK": 64}] and record["flat"][0][2] == (2, 3)


def test_a_declined_flat_launch_or_none_goes_to_the_direct_launch_and_a_refusal_to_the_launcher():
    k, record, *_ = hit_setup(answer=False)
    assert k.hit([5, 2], *CALL) == "KERNEL"
    assert record["direct"][0][1:] == (5, 2, 1, 0x5EA, 0xF0, 0x1000, 1024, 7, 2.5, 64)
    k, record, *_ = hit_setup(answer=(700, b"packed"))
    assert k.hit((1,), *CALL) == "KERNEL" and record["failed"] == [(700, b"packed")]
    k, record, *_ = hit_setup(flat=None)  # a kernel with no flat launch
    assert k.hit((3,), *CALL) == "KERNEL" and record["direct"] and not record["flat"]


@pytest.mark.parametrize("change", ["no entry", "hash", "caches", "kernel cache", "pre-run hook", "stages hook",
                                    "enter hook", "exit hook", "unhashable", "huge int", "cannot specialize",
                                    "never keys"])
@pytest.mark.parametrize("warm", [False, True], ids=["first call", "after a hit"])
def test_the_hit_leaves_the_call_to_the_general_path_before_anything_runs(change, warm):
    """Also after a hit (warm), whose key and entry the hit remembers: a change to the call or
    to what the entry rests on is seen there too."""
    k, record, jit, rt, kernel_cache = hit_setup()
    if warm:
        assert k.hit((1,), *CALL) == "KERNEL"
        record["flat"].clear()
    call = list(CALL)
    if change == "no entry":
        call[1] = 1023
    elif change == "hash":
        jit.hash = "h2"
    elif change == "caches":
        jit.device_caches = {"dev": "other"}
    elif change == "kernel cache":
        kernel_cache.clear()
    elif change == "pre-run hook":
        jit.pre_run_hooks.append(print)
    elif change == "stages hook":
        rt.add_stages_inspection_hook = print
    elif change == "enter hook":
        rt.launch_enter_hook = print
    elif change == "exit hook":
        rt.launch_exit_hook = Chain(print)
    elif change == "unhashable":
        call[4] = [64]  # a constexpr keyed by value: the key cannot be hashed
    elif change == "cannot specialize":
        call[3] = [1]  # classify refuses a list (NoKey raised)
    elif change == "huge int":
        call[1] = 2**70
    elif change == "never keys":
        class Descriptor:
            block_shape, base = [16], None
        with pytest.raises(NoKey):
            classify(Descriptor(), True, True)  # the first one raises, and registers the class
        call[0] = Descriptor()
    grid_calls = []
    answer = k.hit(lambda m: grid_calls.append(1) or (1,), *call)
    if change in ("no entry", "hash", "caches", "kernel cache", "never keys", "unhashable"):
        # keyed, not launched: the general path takes key()'s answer and does not key again
        # (an unhashable key too: the general path's lookup then says so)
        want = k.key(*GIVEN, *call)
        assert answer.__class__ is tuple and len(answer) == len(want) == 3
        assert answer[0].__class__ is NoKey or answer[0] == want[0]
    else:  # decided before a key was made, or a key that cannot be made: the general path keys and explains
        assert answer is NotImplemented
    assert not grid_calls and not record["flat"] and not record["direct"] and sys.exc_info() == (None, None, None)


def test_the_kernel_cache_is_read_as_its_get_answers():
    """An exact dict's get is read directly; any other kernel_get (a dict subclass's own get, a
    function) is called: its answer decides, as in Triton's own test of the entry."""
    class Cache(dict):
        def get(self, key, default=None):
            self.asked = key
            return "KERNEL" if self.hold else None

    cache = Cache()
    k, record, *_ = hit_setup(kernel_get=cache.get)
    cache.hold = True
    assert k.hit((1,), *CALL) == "KERNEL" and cache.asked == "tk"
    cache.hold = False
    assert k.hit((1,), *CALL).__class__ is tuple  # no longer holds: a miss
    k, record, *_ = hit_setup(kernel_get=lambda key: {"tk": "KERNEL"}.get(key))
    assert k.hit((1,), *CALL) == "KERNEL"


def test_calls_of_two_keys_in_turn_each_launch_their_own_entry():
    """The hit remembers the last hit's key and entry: a call of another key is looked up, not
    taken for the last one (items equal by value, as the dict compares them, are the same key)."""
    k, record, _, _, kernel_cache = hit_setup()
    other = (Tensor(0x1004), 1024, 7, 2.5, 64)  # x not 16-byte aligned: another key
    entries = record.pop("entries")
    kernel_cache["tk2"] = "OTHER"
    entries[k.key(*GIVEN, *other)[0]] = entries[k.key(*GIVEN, *CALL)[0]]._replace(function=0xF1, kernel="OTHER",
                                                                                  triton_key="tk2")
    for _ in range(3):
        assert k.hit((1,), *CALL) == "KERNEL" and k.hit((1,), *other) == "OTHER"
        assert k.hit((1,), *CALL[:4], int("64")) == "KERNEL"  # equal, not the same objects
    assert [f[0] for f in record["flat"]] == [0xF0, 0xF1, 0xF0] * 3
    assert k.hit((1,), *CALL[:4], 65) is not NotImplemented and len(record["flat"]) == 9  # BLOCK=65: a miss


def test_a_remembered_entry_that_no_longer_holds_gives_way_to_the_one_recorded_since():
    """After a hit, Triton's cache replaces the kernel for the same key and the guard records a
    new entry: the next calls launch that entry in C (they are not left to the general path for
    good because the remembered one no longer holds)."""
    k, record, _, _, kernel_cache = hit_setup()
    assert k.hit((1,), *CALL) == "KERNEL"
    entries = record.pop("entries")
    key = k.key(*GIVEN, *CALL)[0]
    kernel_cache["tk"] = "NEW"
    assert k.hit((1,), *CALL).__class__ is tuple  # not recorded yet: a miss, keyed
    entries[key] = entries[key]._replace(function=0xF2, kernel="NEW")
    before = _call.guard_hits()
    for _ in range(3):
        assert k.hit((1,), *CALL) == "NEW"
    assert _call.guard_hits() == before + 3 and [f[0] for f in record["flat"]] == [0xF0] + [0xF2] * 3


def test_used_globals_are_checked_and_errors_after_the_decision_propagate():
    k, record, jit, *_ = hit_setup()
    jit.used_global_vals = {("G", 1): 2}
    assert k.hit((1,), *CALL) == "KERNEL" and record["globals"] == 1

    def bad_grid(meta):
        raise ZeroDivisionError("grid")

    with pytest.raises(ZeroDivisionError, match="grid"):
        k.hit(bad_grid, *CALL)


def test_the_hit_holds_no_reference_after_it_returns():
    k, record, *_ = hit_setup(flat=None)  # the direct launch: a tuple of arguments built and released
    x = CALL[0]
    args = (HEADS, CALL)
    for _ in range(100):
        k.hit((1,), *CALL)
        k.key(*GIVEN, *CALL)
    gc.collect()
    before = sys.getrefcount(x), sys.getrefcount(args)
    for _ in range(1000):
        k.hit((1,), *CALL)
        k.key(*GIVEN, *CALL)
    record["direct"].clear()
    gc.collect()
    assert (sys.getrefcount(x), sys.getrefcount(args)) == before


def test_more_parameters_than_the_stack_holds():
    """Past 64 parameters the launch values are allocated, not on the stack: the same answers."""
    n = 70
    params = tuple((False, True, True, True, INT_KEYS[True, True]) for _ in range(n))
    k = keyer(params=params)
    args = [Tensor(0x1000 + 16 * i) if i % 7 == 0 else i for i in range(n)]
    key, *values = k.key(*GIVEN, *args)
    assert len(key) == len(HEADS) + 2 * n and len(values) == n
    assert values == [a.ptr if isinstance(a, Tensor) else a for a in args]


# -- the call: kernel[grid](*args, **kwargs) bound in C --
KEYWORDS = {name: i for i, name in enumerate(("x", "n", "m", "k", "BLOCK"))}


def call_setup(**entry):
    """hit_setup's keyer with its call set: the general path records what it is handed."""
    k, record, jit, rt, kernel_cache = hit_setup(**entry)
    general = record["general"] = []

    def general_path(grid, keyed, options, *values):
        general.append((grid, keyed, options, values))
        return "GENERAL"

    k.set_call(general_path, KEYWORDS, ((), (), (), (2.5,), (64,)), None, "kern")
    k.live = True
    return k, record, jit, rt, kernel_cache


def test_the_call_binds_as_python_binds_the_kernels_parameters():
    """By position, by name, the left-out ones their defaults: each a hit, with the same values."""
    k, record, *_ = call_setup()
    x = CALL[0]
    for args, kwargs in [(CALL, {}), ((x,), dict(n=1024, m=7, k=2.5, BLOCK=64)), ((x, 1024, 7), {}),
                         ((), dict(BLOCK=64, m=7, n=1024, x=x)), ((x, 1024), {"m": 7})]:
        assert k.call((4,), *args, **kwargs) == "KERNEL"
    assert [f[3] for f in record["flat"]] == [(0x1000, 1024, 7, 2.5, 64)] * 5 and not record["general"]


@pytest.mark.parametrize("args, kwargs, message", [
    ((CALL[0],), {}, "missing the required argument for parameter 'n'"),
    (CALL + (1,), {}, "takes 5 positional arguments .* but 6 were given"),
    (CALL[:2], {"n": 1}, "got multiple values for parameter 'n'"),
    (CALL[:3], {"x": 1}, "got multiple values for parameter 'x'"),
])
def test_a_call_python_would_refuse_raises_typeerror_naming_the_parameter(args, kwargs, message):
    k, record, *_ = call_setup()
    with pytest.raises(TypeError, match=f"kern\\[grid\\]\\(\\): {message}"):
        k.call((1,), *args, **kwargs)
    assert not record["flat"] and not record["general"]


def test_what_the_hit_leaves_goes_to_the_general_path_with_every_value_bound():
    """Launch options (keywords that name no parameter), a miss (with its key), a guard not in
    front of its kernel, an argument of the `never` class: the general path, handed the grid, the
    key (or None), the options and every parameter's value."""
    k, record, jit, *_ = call_setup()
    general = record["general"]
    assert k.call((1,), *CALL[:3], num_warps=4) == "GENERAL"
    assert general[-1] == ((1,), None, {"num_warps": 4}, CALL)
    assert k.call((1,), CALL[0], 1023, 7) == "GENERAL"  # n=1023: another key, a miss, keyed once
    assert general[-1][1][0] == k.key(*GIVEN, CALL[0], 1023, 7, 2.5, 64)[0]
    k.live = False
    assert k.call((1,), *CALL) == "GENERAL" and general[-1][1] is None and not record["flat"]
    k.live = True

    class Odd:
        pass

    k.set_call(lambda *a: general.append(a), KEYWORDS, ((),) * 5, (1, Odd), "kern")
    k.call((1,), *CALL)  # not of the never class: a hit
    assert len(record["flat"]) == 1
    odd = Odd()
    assert k.call((1,), CALL[0], odd, 7, 2.5, 64) is None
    assert general[-1] == ((1,), None, {}, CALL[0], odd, 7, 2.5, 64) and len(record["flat"]) == 1
    class Name(str):
        pass

    k.call((1,), *CALL[:4], **{Name("BLOCK"): 64})  # not an exact str: bound as Python binds it (a hit)
    k.call((1,), *CALL, **{Name("num_warps"): 4})  # an option
    assert general[-1] == ((1,), None, {"num_warps": 4}, *CALL) and len(record["flat"]) == 2
    jit.pre_run_hooks.append(print)  # the hit declines: the general path, with no key
    k.call((1,), *CALL)
    assert general[-1] == ((1,), None, {}, *CALL)


def test_kernel_grid_objects_call_by_vectorcall_and_by_tp_call_alike():
    """GuardItem makes the bound call (GuardCall); Python calls it by vectorcall, and callers of
    the type's slot (type(b).__call__) reach the same binding."""
    k, record, jit, *_ = call_setup()
    item = _call.GuardItem(lambda kernel, grid: ("triton's", grid), "_launcher_call")
    jit.run = "RUN"
    jit._launcher_call = ("RUN", k)
    bound = item(jit, (3,))
    assert type(bound).__name__ == "GuardCall" and bound.keyer is k and bound.grid == (3,)
    assert bound(*CALL) == "KERNEL" and type(bound).__call__(bound, CALL[0], 1024, 7, BLOCK=64) == "KERNEL"
    assert [f[2] for f in record["flat"]] == [(3,), (3,)]
    assert item(jit, None) == ("triton's", None)
    jit.run, jit._launcher_call = "RUN", ("RUN", "not a keyer")
    assert item(jit, (3,)) == ("triton's", (3,))


def test_kernel_grid_calls_the_kernels_run_where_it_is_no_longer_the_guards():
    """A run set on the kernel since (before kernel[grid] was taken or after) is in charge, as in
    Triton, whose kernel[grid] reads run when it is called: run(*args, grid=, warmup=False, **kw)."""
    k, record, jit, *_ = call_setup()
    runs = []

    def guard_run(*args, grid, warmup, **kwargs):
        raise AssertionError("the guard's run is not called by kernel[grid]")

    def users_run(*args, grid, warmup, **kwargs):
        runs.append((args, grid, warmup, kwargs))
        return "USER"

    k.set_call(record["general"].append, KEYWORDS, ((), (), (), (2.5,), (64,)), None, "kern", guard_run)
    item = _call.GuardItem(lambda kernel, grid: ("triton's", grid), "_launcher_call")
    jit.run, jit._launcher_call = guard_run, (guard_run, k)
    taken = item(jit, (3,))
    assert taken(*CALL) == "KERNEL"  # the guard's run is the kernel's: the guard's call
    jit.run = users_run
    assert taken(*CALL[:2], 7, BLOCK=64) == "USER" and item(jit, (4,))(CALL[0]) == "USER"
    assert runs == [((CALL[0], 1024, 7), (3,), False, {"BLOCK": 64}), ((CALL[0],), (4,), False, {})]
    with pytest.raises(TypeError, match="multiple values for keyword argument 'grid'"):
        taken(CALL[0], grid=(1,))
    del jit.run  # no run of its own: as Triton's, an AttributeError
    with pytest.raises(AttributeError):
        taken(*CALL)


def test_kernel_grid_of_the_same_tuple_of_ints_is_the_same_call_and_other_grids_are_not_kept():
    """A GuardCall holds nothing a call changes: the last one made for a grid that is a tuple of
    ints is handed out again for that grid object (a loop's kernel[grid] makes none); a list, a
    callable or a tuple holding anything else gets a new one each time, and is not kept alive."""
    k, record, jit, *_ = call_setup()
    item = _call.GuardItem(lambda kernel, grid: ("triton's", grid), "_launcher_call")
    jit.run, jit._launcher_call = "RUN", ("RUN", k)
    grid = (3, 2)
    first = item(jit, grid)
    assert item(jit, grid) is first and k.bind(grid) is first and item(jit, tuple([3, 2])) is not first
    assert first(*CALL) == "KERNEL" and record["flat"][-1][2] == (3, 2)

    class Big:
        pass

    for other in ([3], lambda meta: (1,), (3, Big())):
        assert item(jit, other) is not item(jit, other)
    big = Big()
    ref = weakref.ref(big)
    grid_fn = lambda meta, big=big: (1,)  # noqa: E731 - a callable grid holding something alive
    item(jit, grid_fn)(*CALL)
    del big, grid_fn
    gc.collect()
    assert ref() is None


def test_a_plain_kernel_is_read_from_its_dict_and_sees_every_change():
    """With "plain", the hit reads the kernel's attributes from its __dict__ (one read of it per
    hit), and what the __dict__ lacks as an attribute (a class attribute); a change between calls
    is seen as with attribute reads."""
    class ClassDebug(Jit):
        debug = False

    jit = ClassDebug()
    k, record, *_ = hit_setup(jit=jit, plain=True, heads=("device", ("attr", jit, "debug"), "options"))
    assert k.hit((1,), *CALL) == "KERNEL"
    jit.debug = True  # the kernel's own setting, in its __dict__: another key, a miss
    assert k.hit((1,), *CALL).__class__ is tuple
    del jit.debug
    jit.pre_run_hooks.append(print)  # read from the __dict__: declines
    assert k.hit((1,), *CALL) is NotImplemented
    jit.pre_run_hooks.clear()
    jit.hash = "h2"  # the entry no longer holds: a miss, keyed
    assert k.hit((1,), *CALL).__class__ is tuple
    jit.hash = "h1"
    jit.used_global_vals = {"g": 1}
    assert k.hit((1,), *CALL) == "KERNEL" and record["globals"] == 1
    del jit.device_caches  # gone from the __dict__ and the class: keyed, the general path looks again and explains
    assert k.hit((1,), *CALL).__class__ is tuple


def test_plain_needs_no_data_descriptor_of_the_names_read():
    class Hashed(Jit):
        hash = property(lambda self: "h1", lambda self, v: None)

    class Odd(Jit):
        def __getattr__(self, name):
            return None

    assert fast_dispatch._plain(Jit, fast_dispatch._HIT_READS)
    assert not fast_dispatch._plain(Hashed, fast_dispatch._HIT_READS) and fast_dispatch._plain(Hashed)
    assert not fast_dispatch._plain(Odd, fast_dispatch._HIT_READS)

    class OwnDict(Jit):  # obj.__dict__ is not the instance dict
        __dict__ = property(lambda self: {})

    class Slotted:
        __slots__ = ("x",)

    assert not fast_dispatch._plain(OwnDict, ()) and not fast_dispatch._plain(Slotted, ())
    assert not fast_dispatch._plain(types.SimpleNamespace, ())  # a C type's __dict__: read as an attribute
    assert fast_dispatch._plain(Jit, ())


@pytest.mark.parametrize("plain", [False, True])
def test_an_own_head_reads_the_holders_own_setting_with_or_without_the_attribute_lookup(plain):
    """("own", obj, name, default, plain): obj.__dict__.get(name, default), the __dict__ read as
    the instance dict where plain says obj's class is plain for it (fast_dispatch._plain(cls, ())),
    else as an attribute; either way a setting made, replaced or removed between calls is seen,
    a __dict__ replaced whole too."""
    class Holder:
        pass

    knob = Holder()
    assert fast_dispatch._plain(Holder, ())
    k = keyer(heads=("device", ("own", knob, "mode", "unset", plain), "options"))
    head = lambda: k.key(*GIVEN, *CALL)[0][1]  # noqa: E731
    assert head() == "unset"
    knob.mode = "set"
    assert head() == "set"
    knob.__dict__ = {"mode": "replaced"}
    assert head() == "replaced"
    del knob.mode
    assert head() == "unset"
    with pytest.raises(TypeError, match="head 1"):
        keyer(heads=("device", ("own", knob, "mode", "unset", plain, "extra"), "options"))

    class Shown(Holder):  # obj.__dict__ is not the instance dict: read as Python reads it once obj is of it
        __dict__ = property(lambda self: {"mode": "shown"})

    knob.mode = "set"
    knob.__class__ = Shown
    assert head() == "shown" and knob.__dict__["mode"] == "shown"
    knob.__class__ = Holder
    assert head() == "set"

    class Answering(dict):  # a dict subclass as the instance dict: obj.__dict__.get is its own get
        def get(self, name, default=None):
            return "answered"

    knob.__dict__ = Answering(mode="set")
    assert knob.__dict__.get("mode", "unset") == "answered" and head() == "answered"


def test_a_plain_kernel_whose_class_changes_is_read_as_python_reads_it():
    """plain holds for the kernel's class when the hit was set: a kernel given another class
    afterwards (one with a data descriptor of a name the hit reads) is read by attribute lookup."""
    jit = Jit()
    k, record, *_ = hit_setup(jit=jit, plain=True)
    assert k.hit((1,), *CALL) == "KERNEL"

    class Hooked(Jit):
        pre_run_hooks = property(lambda self: [print])

    jit.__class__ = Hooked
    assert k.hit((1,), *CALL) is NotImplemented  # the property's hook: declines, as Triton's run would run it
    jit.__class__ = Jit
    assert k.hit((1,), *CALL) == "KERNEL"


def test_a_plain_class_given_getattribute_or_getattr_later_is_read_as_python_reads_it():
    """plain is judged once, for a class with no __getattribute__ or __getattr__ of its own: a
    class given either afterwards (which Python then calls for every read or every miss) is read
    by attribute lookup, for the kernel and for a knob holder's own setting alike, and by the
    instance dict again once it is taken away."""
    class Patched(Jit):
        pass

    jit = Patched()
    k, record, *_ = hit_setup(jit=jit, plain=True)
    assert k.hit((1,), *CALL) == "KERNEL"

    def hooked(self, name):
        return [print] if name == "pre_run_hooks" else object.__getattribute__(self, name)

    Patched.__getattribute__ = hooked
    assert k.hit((1,), *CALL) is NotImplemented  # the hook __getattribute__ shows: declines, as Triton's run would
    del Patched.__getattribute__
    assert k.hit((1,), *CALL) == "KERNEL"
    del jit.pre_run_hooks  # a miss in the instance dict: the class's __getattr__ answers it
    Patched.__getattr__ = lambda self, name: [print] if name == "pre_run_hooks" else None
    assert k.hit((1,), *CALL) is NotImplemented
    del Patched.__getattr__
    jit.pre_run_hooks = []
    assert k.hit((1,), *CALL) == "KERNEL"

    class Holder:
        pass

    knob = Holder()
    knob.mode = "set"
    own = keyer(heads=("device", ("own", knob, "mode", "unset", True), "options"))
    head = lambda: own.key(*GIVEN, *CALL)[0][1]  # noqa: E731
    assert head() == "set"
    Holder.__getattribute__ = lambda self, name: ({"mode": "patched"} if name == "__dict__"
                                                  else object.__getattribute__(self, name))
    assert head() == "patched"
    del Holder.__getattribute__
    assert head() == "set"


def test_the_call_keeps_its_own_parts():
    """set_call keeps a copy of the keywords it checked (a caller that changes its dict afterwards
    changes nothing); the call holds what it binds with while Python code runs (a device getter
    that sets the call again meanwhile); GuardCall is made only by GuardItem and bind()."""
    k, record, *_ = call_setup()
    keywords = dict(KEYWORDS)
    k.set_call(lambda *a: record["general"].append(a), keywords, ((), (), (), (2.5,), (64,)), None, "kern")
    keywords["x"] = 10**9
    assert k.call((1,), x=CALL[0], n=1024, m=7) == "KERNEL"

    class Sentinel:
        pass

    later = []

    def device():  # runs while the call's arguments are bound: replaces what they were bound with
        k.set_call(lambda *a: later.append(a), KEYWORDS, ((),) * 5, None, "other")
        return "dev"

    k.set_call(print, KEYWORDS, ((),) * 3 + ((Sentinel(),), (64,)), None, "kern")
    k.settle(device, Tensor)
    k.call((1,), *CALL[:3])  # k's default, a Sentinel only the replaced defaults held, reaches the general path intact
    assert isinstance(later[-1][6], Sentinel)
    with pytest.raises(TypeError):
        type(k.bind((1,)))()


def test_a_call_without_its_parts_set_raises():
    k, *_ = hit_setup()
    with pytest.raises(TypeError, match="no call was set"):
        k.call((1,), *CALL)
    for keywords, defaults in [(KEYWORDS, ((),)), ({"x": 5}, ((),) * 5), ({"x": 0, "n": 0}, ((),) * 5),
                               (KEYWORDS, ((),) * 4 + ((1, 2),))]:
        with pytest.raises(ValueError, match="do not fit the parameters"):
            k.set_call(print, keywords, defaults, None, "kern")
    with pytest.raises(ValueError, match="out of range"):
        k.set_call(print, KEYWORDS, ((),) * 5, (5, int), "kern")
    with pytest.raises(TypeError):
        keyer().set_call(print, KEYWORDS, ((),) * 5, None, "kern")  # no hit


def test_heads_are_read_on_every_call_as_their_spec_says():
    """("attr", obj, name), ("own", obj, name, default): obj.__dict__.get: read for every key, so a
    knob changed between calls makes another key; ("env", fn, (name, ...)): fn(name, ...) again
    where the environment changed (test_an_env_head_is_read_again_when_the_environment_changes);
    settle() replaces the device getter a hit calls."""
    knob = types.SimpleNamespace()
    reads = []
    spec = ("device", ("attr", FLAGS, "debug"), ("own", knob, "mode", "unset"),
            ("env", lambda *a: reads.append(a) or len(reads), ("LAUNCHER_TEST_UNSET_VAR", 0)), "options")
    k = keyer(heads=spec)
    assert k.key(*GIVEN, *CALL)[0][:5] == ("dev", "debug", "unset", 1, ())
    knob.mode = "set"
    assert k.key(*GIVEN, *CALL)[0][:5] == ("dev", "debug", "set", 1, ()) and reads == [("LAUNCHER_TEST_UNSET_VAR", 0)]
    k, record, *_ = call_setup()
    assert k.hit((1,), *CALL) == "KERNEL"
    assert k.device() == "dev"
    k.settle(lambda: "other device", Tensor)
    assert k.hit((1,), *CALL).__class__ is tuple  # another device: another key, a miss
    with pytest.raises(TypeError):
        k.settle("not callable", Tensor)


@pytest.mark.parametrize("present", [False, True])
def test_an_env_head_is_read_again_when_the_environment_changes(monkeypatch, present):
    """An "env" head's fn is a function of its variable: called again only where the environment
    may have changed since (any write through os.environ: the variable set, replaced, removed;
    another variable added or removed before it), and its answer is the key's head."""
    name, other = "LAUNCHER_TEST_ENV_HEAD", "LAUNCHER_TEST_ENV_OTHER"
    monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(other, raising=False)
    if present:
        monkeypatch.setenv(name, "first")
    reads = []

    def read(var, default):
        reads.append(var)
        return os.environ.get(var, default)

    k = keyer(heads=("device", ("env", read, (name, "unset")), "options"))
    head = lambda: k.key(*GIVEN, *CALL)[0][1]  # noqa: E731
    expect = "first" if present else "unset"
    assert [head() for _ in range(5)] == [expect] * 5 and len(reads) == 1  # read once while nothing changes
    steps = [(lambda: monkeypatch.setenv(name, "a"), "a"),
             (lambda: monkeypatch.setenv(name, "b"), "b"),  # replaced
             (lambda: monkeypatch.setenv(other, "x"), "b"),  # another variable added: read again, same answer
             (lambda: monkeypatch.setenv(name, "b2"), "b2"),
             (lambda: monkeypatch.delenv(other), "b2"),
             (lambda: monkeypatch.delenv(name), "unset"),  # removed
             (lambda: monkeypatch.setenv(other, "y"), "unset"),
             (lambda: monkeypatch.setenv(name, "c"), "c")]  # added again
    for i, (change, want) in enumerate(steps):
        before = len(reads)
        change()
        assert head() == want, i
        assert len(reads) == before + 1, i  # every write here may change the variable: read again
        assert head() == want and len(reads) == before + 1, i  # and not again until the next
    for bad in [("env", read, ()), ("env", read, (5,)), ("env", "not callable", (name,)), ("env", read, [name]),
                ("env", read, ("A\0B",))]:
        with pytest.raises((TypeError, ValueError)):
            keyer(heads=("device", bad, "options"))


def test_an_env_head_sees_a_putenv_string_that_changes_under_the_same_address():
    """putenv's string is its caller's: rewritten in place (or freed and its address reused), the
    environment changes under the same pointers. The watch compares the entries' text too: the
    variable's own entry, and the last entry (which a rewrite can turn into the variable)."""
    import ctypes

    libc = ctypes.CDLL(None)
    libc.putenv.argtypes = [ctypes.c_char_p]
    libc.unsetenv.argtypes = [ctypes.c_char_p]
    name = "LAUNCHER_TEST_PUTENV"
    reads = []

    def getenv(var):  # C's view (os.environ does not see putenv's writes)
        libc.getenv.restype, libc.getenv.argtypes = ctypes.c_char_p, [ctypes.c_char_p]
        v = libc.getenv(var.encode())
        return "unset" if v is None else v.decode()

    k = keyer(heads=("device", ("env", lambda var, d: reads.append(var) or getenv(var), (name, "unset")), "options"))
    head = lambda: k.key(*GIVEN, *CALL)[0][1]  # noqa: E731
    own = ctypes.create_string_buffer(f"{name}=a".encode())
    last = ctypes.create_string_buffer(b"LAUNCHER_TEST_PUTENV_X=1" + b"\0" * 8)
    try:
        assert libc.putenv(own) == 0
        assert head() == "a" and head() == "a" and len(reads) == 1
        ctypes.memmove(own, f"{name}=b".encode(), len(name) + 2)  # the same string, another value
        assert head() == "b" and len(reads) == 2
        assert libc.unsetenv(name.encode()) == 0 and head() == "unset"
        assert libc.putenv(last) == 0 and head() == "unset"  # the last entry now
        n = len(reads)
        ctypes.memmove(last, f"{name}=c\0".encode(), len(name) + 3)  # the last entry becomes the variable
        assert head() == "c" and len(reads) == n + 1
    finally:
        libc.unsetenv(name.encode())
        libc.unsetenv(b"LAUNCHER_TEST_PUTENV_X")


def test_an_env_head_read_again_inside_its_own_read_keeps_one_answer():
    """fn may run code that reads the head again (or let another thread): the answer kept is one
    whole pair (what the environment was, fn's answer then), and no answer is left behind."""
    import weakref

    class Answer:
        pass

    made = []
    k = None

    def read(var):
        a = Answer()
        made.append(weakref.ref(a))
        if len(made) == 1:
            k.key(*GIVEN, *CALL)  # re-entered
        return a

    k = keyer(heads=("device", ("env", read, ("LAUNCHER_TEST_UNSET_VAR",)), "options"))
    first = k.key(*GIVEN, *CALL)[0][1]
    assert k.key(*GIVEN, *CALL)[0][1] is first and len(made) == 2
    del k, first
    gc.collect()
    assert [r() for r in made] == [None, None]


def test_the_call_holds_no_reference_after_it_returns():
    k, record, *_ = call_setup(flat=None)
    x = CALL[0]
    item = _call.GuardItem(lambda kernel, grid: None, "_launcher_call")
    jit = record["jit"] = types.SimpleNamespace(run="RUN", _launcher_call=("RUN", k))
    grid = (1,)

    def calls(times):  # a hit, the general path with options, a refused binding; then what they kept let go
        for _ in range(times):
            item(jit, grid)(x, 1024, m=7)
            k.call(grid, *CALL[:3], num_warps=4)
            with pytest.raises(TypeError):
                k.call(grid, x)
        record["direct"].clear()
        record["general"].clear()
        gc.collect()

    calls(100)
    before = sys.getrefcount(x), sys.getrefcount(grid), sys.getrefcount(k)
    calls(1000)
    assert (sys.getrefcount(x), sys.getrefcount(grid), sys.getrefcount(k)) == before


# -- the lookup alone (bundles) --
def test_find_answers_the_entry_for_the_key_and_remembers_it_until_forget():
    """find() is the hit's lookup without a hit: (entry or None, key, *launch values). Without a
    hit nothing says an entry stopped holding, so the remembered pair serves its key until
    forget() (a bundle's release())."""
    entries = {}
    k = keyer(entries=entries)
    assert k.find(*GIVEN, *CALL) == (None, *k.key(*GIVEN, *CALL))  # a miss: the key, to record an entry for
    key = k.key(*GIVEN, *CALL)[0]
    entries[key] = "E"
    for _ in range(2):
        entry, found, x_value, k_value = k.find(*GIVEN, *CALL)
        assert (entry, x_value, k_value) == ("E", 0x1000, 2.5) and found == key
    assert k.find(*GIVEN, *CALL[:4], 65)[0] is None  # another key is looked up, not taken for the last
    assert k.find(*GIVEN, *CALL)[0] == "E"
    entries.clear()
    assert k.find(*GIVEN, *CALL)[0] == "E"  # remembered
    k.forget()
    assert k.find(*GIVEN, *CALL)[0] is None


def test_find_raises_what_the_key_raises_and_needs_entries():
    k = keyer(entries={})
    with pytest.raises(NoKey, match="beyond 64 bits"):
        k.find(*GIVEN, Tensor(0x1000), 2**70, 7, 2.5, 64)
    with pytest.raises(TypeError, match="unhashable"):
        k.find(*GIVEN, *CALL[:4], [64])
    with pytest.raises(TypeError, match="no entries"):
        keyer().find(*GIVEN, *CALL)
    with pytest.raises(TypeError, match="takes 7 arguments"):
        k.find(*GIVEN, 1)


def test_a_parameter_keyed_by_value():
    """Mode 2 (a bundle's autotune key or heuristics input): an exact int, float, bool, str or
    None by class and value; anything else by the parameter's own callable."""
    seen = []

    def table(v):
        seen.append(v)
        return ("other", type(v).__name__)

    k = keyer(params=((2, True, True, False, table),), entries={})
    for v in (4096, 4112, 2.5, True, 1, "s", None):
        assert k.key(*GIVEN, v)[0][len(HEADS):] == (v.__class__, v)
    assert k.key(*GIVEN, 4096)[0] != k.key(*GIVEN, 4112)[0] and not seen
    t = (1, 2)
    assert k.key(*GIVEN, t)[0][len(HEADS):] == (("other", "tuple"), None) and seen == [t]


def test_a_tuple_constexpr_is_bounded_before_anything_hashes_it():
    """A constexpr tuple nested deeper than spec.MAX_CONSTANT_DEPTH is refused by the parameter's
    table (spec.bounded, what the guard and bundles give) with a TypeError: hashing one a million
    deep would exhaust C's stack. A shallow one keys by value."""
    from launcher import spec

    deep = ()
    for _ in range(1_000_000):
        deep = (deep,)
    params = codegen.guard_key_params((("BLOCK", True, True, True),))
    assert params[0][4] is spec.bounded
    k = keyer(params=params, entries={})
    with pytest.raises(TypeError, match="nested more than 32 deep"):
        k.find(*GIVEN, deep)
    assert k.key(*GIVEN, ((1, 2), 3))[0][len(HEADS):] == (tuple, spec.bounded(((1, 2), 3)))
    # tuples equal by == but of items Triton compiles apart key apart
    keys = {k.key(*GIVEN, t)[0] for t in [(True, 4), (1, 4), (1.0, 4), ((1,), 4), ([1], 4)]}
    assert len(keys) == 5


def test_an_error_after_the_last_entry_was_taken_leaves_no_reference_to_it():
    k, record, jit, *_ = hit_setup()
    entry = next(iter(record["entries"].values()))
    assert k.find(*GIVEN, *CALL)[0] is entry  # remembered

    class Broken(Jit):
        hash = property(lambda self: 1 / 0)

    jit.__class__ = Broken
    before = sys.getrefcount(entry)
    for _ in range(100):
        with pytest.raises(ZeroDivisionError):
            k.find(*GIVEN, *CALL)
    assert sys.getrefcount(entry) == before


@pytest.mark.parametrize("params", [((3, True, True, False, None),), ((2, True, True, False, None),),
                                    ((0, True, True, False, None),), ((1, True, True, True, None),),
                                    ((1, True, True, False, "not callable"),), (("0", True, True, False, {}),)])
def test_a_parameter_spec_that_does_not_fit_its_mode_is_refused(params):
    with pytest.raises(TypeError, match="mode"):
        keyer(params=params)


def test_entries_must_be_a_dict_and_a_hit_needs_them():
    with pytest.raises(TypeError, match="entries must be a dict"):
        keyer(entries=[])
    k, *_ = hit_setup()
    with pytest.raises(TypeError, match="a hit needs entries"):
        _call.GuardKey(PARAMS, SPEC, Tensor, int_key, classify, NoKey, DIVISIBILITY_MASK,
                       {"jit": 1, "runtime": 1, "device": len, "stream": 1, "hook_chain": None, "check_globals": 1, "grid3": 1,
                        "names": ("x", "n", "m", "k", "BLOCK"), "fields": {}})


def test_a_tuple_is_keyed_item_by_item_in_c_as_classify_keys_it():
    """An exact tuple is keyed in C by the rule of specialization.item_key (Triton specializes
    items fully): the same key classify gives; a never-keying item raises its NoKey; nesting past
    C's depth goes on through classify."""
    k = keyer(entries={})
    t = (Tensor(0x2000), Tensor(0x2004, "fp16"), 7, 16, 2**40, 2.5, True, None, (1, (Tensor(0x10), 3.0)))
    assert k.key(*GIVEN, t, 1, 1, 1, 1)[0][3] == classify(t, True, True, Tensor)
    deep = 5
    for _ in range(40):
        deep = (deep,)
    assert k.key(*GIVEN, deep, 1, 1, 1, 1)[0][3] == classify(deep, True, True, Tensor)

    class Descriptor:
        block_shape, base = [16], None

    with pytest.raises(NoKey):
        classify(Descriptor(), True, True)  # registers the class as one that never keys
    with pytest.raises(NoKey):
        k.key(*GIVEN, (1, Descriptor()), 1, 1, 1, 1)
    with pytest.raises(NoKey, match="beyond 64 bits"):
        k.find(*GIVEN, (2**70,), 1, 1, 1, 1)


def test_each_table_answers_its_own_codes_however_often_an_int_is_asked():
    """An int's code is its table's (int_key's memo), remembered in C by the table and the value:
    two tables with other codes for the same values each answer theirs, in any order, whether the
    int is small, another object of an equal value, negative or in the u64 range (not remembered)."""
    mine = {5: "five", 2**40: "big", -3: "minus three", 2**63 + 16: "u64"}
    theirs = {v: (v, "theirs") for v in mine}
    k_mine = keyer(params=((False, True, True, False, mine),))
    k_theirs = keyer(params=((False, True, True, False, theirs),))
    for _ in range(3):
        for v in mine:
            same_value = int(str(v))  # another object, for ints Python does not cache
            assert k_mine.key(*GIVEN, same_value)[0][3] == mine[v]
            assert k_theirs.key(*GIVEN, v)[0][3] == theirs[v]
            assert k_mine.key(*GIVEN, v)[0][3] == mine[v]
    shared = keyer(params=((False, True, True, False, INT_KEYS[True, True]),))
    for v in (5, 2**40, -3, 2**63 + 16, 987_654_321):
        assert shared.key(*GIVEN, v)[0][3] == int_key(v)
        assert shared.key(*GIVEN, v)[0][3] == int_key(v)


def test_the_last_key_is_taken_for_equal_items_that_are_other_objects():
    """The remembered key is compared by identity first, then by hash and ==, as a dict compares
    keys: a constexpr passed again as another equal object takes the same entry; an unequal one,
    or an "equal" one of another hash, does not; an unhashable one raises, as the dict does."""
    entries = {}
    k = keyer(entries=entries)
    x = Tensor(0x1000)
    key = k.key(*GIVEN, x, 3, 7, 9, 2**40)[0]
    entries[key] = "entry"
    assert k.find(*GIVEN, x, 3, 7, 9, int(str(2**40)))[0] == "entry"
    assert k.find(*GIVEN, x, 3, 7, 9, int(str(2**40)))[0] == "entry"
    assert k.find(*GIVEN, x, 3, 7, 9, 2**40 + 1)[0] is None
    assert k.find(*GIVEN, x, 3, 7, 9, 2**40)[0] == "entry"

    class Sloppy:  # equal to everything, hashed by identity: a dict tells two apart by hash first
        __eq__ = lambda self, other: True  # noqa: E731
        __hash__ = object.__hash__

    a, b = Sloppy(), Sloppy()
    entries[k.key(*GIVEN, x, 3, 7, 9, a)[0]] = "a's"
    assert k.find(*GIVEN, x, 3, 7, 9, a)[0] == "a's"  # remembered as the last key
    assert k.find(*GIVEN, x, 3, 7, 9, b)[0] is None  # as the dict answers: another key

    class Unhashable:
        __eq__ = lambda self, other: True  # noqa: E731
        __hash__ = None

    with pytest.raises(TypeError, match="unhashable"):
        k.find(*GIVEN, x, 3, 7, 9, Unhashable())


def _torch():
    return pytest.importorskip("torch")


def test_torch_tensors_are_read_as_their_class_defines_dtype_and_data_ptr():
    """A torch.Tensor's dtype and data_ptr() are read through TensorBase's own C functions while
    torch.Tensor finds TensorBase's descriptors; an attribute set on torch.Tensor since is read as
    Python reads it, and the direct reads come back once it is gone. A subclass is read as Python
    reads it (its own data_ptr), here as a tuple item (classify keys it)."""
    torch = _torch()
    k = keyer(tensor=torch.Tensor, params=((False, True, True, True, INT_KEYS[True, True]),))
    x, y = torch.zeros(4), torch.zeros(4, dtype=torch.float16)
    key, value = k.key(*GIVEN, x)
    assert key[3:] == (torch.float32, x.data_ptr() & DIVISIBILITY_MASK == 0) and value == x.data_ptr()
    assert k.key(*GIVEN, (x, y))[0][3] == ((torch.float32, x.data_ptr() & 15 == 0), (torch.float16, y.data_ptr() & 15 == 0))
    assert "data_ptr" not in vars(torch.Tensor) and "dtype" not in vars(torch.Tensor)
    try:
        torch.Tensor.data_ptr = lambda self: 0x1008
        torch.Tensor.dtype = property(lambda self: "patched")
        key, value = k.key(*GIVEN, x)
        assert key[3:] == ("patched", False) and value == 0x1008
        assert k.key(*GIVEN, (x,))[0][3] == (("patched", False),)
    finally:
        del torch.Tensor.data_ptr, torch.Tensor.dtype
    key, value = k.key(*GIVEN, x)
    assert key[3] is torch.float32 and value == x.data_ptr()

    class Passthrough:  # hands the class TensorBase's own descriptor, an instance something else
        def __init__(self, descriptor):
            self.descriptor = descriptor

        def __get__(self, obj, owner=None):
            return self.descriptor if obj is None else (lambda: 0x4008)

    try:
        torch.Tensor.data_ptr = Passthrough(vars(torch._C.TensorBase)["data_ptr"])
        assert torch.Tensor.data_ptr is vars(torch._C.TensorBase)["data_ptr"] and x.data_ptr() == 0x4008
        assert k.key(*GIVEN, x)[1] == 0x4008
    finally:
        del torch.Tensor.data_ptr
    assert k.key(*GIVEN, x)[1] == x.data_ptr()

    class Sub(torch.Tensor):
        def data_ptr(self):
            return 0x2008

    s = torch.zeros(4).as_subclass(Sub)
    item = classify(s, True, True, torch.Tensor)
    assert k.key(*GIVEN, (s,))[0][3] == (item,) and item[-1] == ""  # not on 16 bytes: 0x2008, its own data_ptr
