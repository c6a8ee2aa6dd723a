"""launcher._call.GuardKey: the guard's key and its common hit, in C (launcher.fast_dispatch).

The rules are Python's (fast_dispatch.classify, specialization.int_key, DIVISIBILITY_MASK); these
tests hold the C carrying them out to what the generated guard's code expects: the key's items,
the launch values, the NoKey that stands for a key, and the hit's decisions (launch, or leave the
call to the general path before anything of the call's own runs). Launches here are stand-ins
that record (the GPU tests launch through it for real: tests/test_gpu_fast_dispatch.py)."""
from __future__ import annotations

import gc
import sys
import types

import pytest

from launcher import _call, codegen
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
HEADS = ("dev", "debug", ())


def keyer(hit=None, tensor=Tensor, params=PARAMS, entries=None):
    return _call.GuardKey(params, len(HEADS), tensor, int_key, classify, NoKey, DIVISIBILITY_MASK, hit, entries)


def test_the_key_holds_two_items_per_parameter_by_the_python_rules():
    k = keyer()
    x = Tensor(0x1000)
    key, x_value, k_value = k.key(*HEADS, x, 1024, 7, 2.5, 64)
    assert key == HEADS + ("fp32", True, int_key(1024), None, int_key(7, False, True), None, float, None, int, 64)
    assert (x_value, k_value) == (0x1000, 2.5)  # a tensor's data_ptr(), else the argument itself
    key = k.key(*HEADS, Tensor(0x1004, "fp16"), None, True, x, 64)[0]
    assert key[3:] == ("fp16", False, type(None), None, bool, None, "fp32", False, int, 64)  # k: no alignment asked
    assert k.key(*HEADS, x, 1, 1, 1, 64.0)[0][-2:] == (float, 64.0)  # a constexpr by class and value


def test_an_int_new_to_the_table_is_keyed_by_int_key_and_a_huge_one_raises_nokey():
    k = keyer()
    v = 987_654_321_123
    INT_KEYS[True, True].pop(v, None)
    assert k.key(*HEADS, 5, v, 0, 0, 1)[0][5] == int_key(v) and INT_KEYS[True, True][v] == int_key(v)
    with pytest.raises(NoKey, match="beyond 64 bits"):
        k.key(*HEADS, 5, 2**70, 0, 0, 1)


def test_other_arguments_go_to_classify_and_a_never_keying_class_stands_for_the_key():
    k = keyer()
    t = (Tensor(0x2000), 3)
    key, x_value, k_value = k.key(*HEADS, t, 1, 1, 1, 1)
    assert key[3] == classify(t, True, True, Tensor) and x_value is t

    class Descriptor:
        block_shape, base = [16], None

    with pytest.raises(NoKey):
        classify(Descriptor(), True, True)  # registers the class as one that never keys
    no_key, *values = k.key(*HEADS, Descriptor(), 1, 1, 1, 1)
    assert no_key.__class__ is NoKey and values == [None, None]


def test_wrong_counts_and_errors_of_called_code_raise():
    k = keyer()
    with pytest.raises(TypeError, match="takes 8 arguments"):
        k.key(*HEADS, 1, 2)

    class Broken(Tensor):
        def data_ptr(self):
            raise RuntimeError("no storage")

    k2 = keyer(tensor=Broken)
    with pytest.raises(RuntimeError, match="no storage"):
        k2.key(*HEADS, Broken(0), 1, 1, 1, 1)
    with pytest.raises(TypeError):
        _call.GuardKey(((False, True, True, False, "not a dict"),), 1, Tensor, int_key, classify, NoKey, 15)
    with pytest.raises(TypeError):
        _call.GuardKey(PARAMS, 0, Tensor, int_key, classify, NoKey, 15)  # no device head


# -- the hit --
class Jit:
    def __init__(self):
        self.hash, self.device_caches, self.pre_run_hooks, self.used_global_vals = "h1", {"dev": "caches"}, [], {}


def hit_setup(answer=None, **entry):
    """A GuardKey with its hit, an entry recorded for the key of CALL, and what it recorded."""
    record = {"flat": [], "direct": [], "failed": [], "grid": [], "globals": 0}
    jit, rt = Jit(), types.SimpleNamespace(launch_enter_hook=None, launch_exit_hook=Chain(),
                                           add_stages_inspection_hook=None)
    entries = record["entries"] = {}

    def check_globals(j):
        record["globals"] += 1

    def grid3(g):
        return (tuple(g) + (1, 1))[:3]

    launcher = types.SimpleNamespace(_launch_failed=lambda status, packed: record["failed"].append((status, packed)))
    fields = {f: i for i, f in enumerate(codegen.GuardEntry._fields)}
    hit = {"jit": jit, "runtime": rt, "stream": lambda dev: 0x5EA, "hook_chain": Chain,
           "check_globals": check_globals, "grid3": grid3, "names": ("x", "n", "m", "k", "BLOCK"), "fields": fields}
    k = keyer(hit, entries=entries)
    kernel_cache = {"tk": "KERNEL"}

    def flat_launch(function, stream, grid, *values):
        record["flat"].append((function, stream, grid, values))
        return answer

    def direct(*args):
        record["direct"].append(args)

    e = codegen.GuardEntry(**{"hash": "h1", "caches": "caches", "kernel_get": kernel_cache.get, "triton_key": "tk",
                              "kernel": "KERNEL", "launcher": launcher, "function": 0xF0, "packed_metadata": (),
                              "direct": direct, "flat": flat_launch, **entry})
    entries[k.key(*HEADS, *CALL)[0]] = e
    return k, record, jit, rt, kernel_cache


CALL = (Tensor(0x1000), 1024, 7, 2.5, 64)


def test_a_hit_launches_through_the_flat_launch_with_the_keys_data_ptr():
    k, record, *_ = hit_setup()
    before = _call.guard_hits()
    assert k.hit((4,), *HEADS, *CALL) == "KERNEL"
    assert record["flat"] == [(0xF0, 0x5EA, (4,), (0x1000, 1024, 7, 2.5, 64))] and not record["direct"]
    assert _call.guard_hits() == before + 1


def test_a_callable_grid_is_called_with_the_arguments_by_name():
    k, record, *_ = hit_setup()
    seen = []
    assert k.hit(lambda meta: seen.append(dict(meta)) or (2, 3), *HEADS, *CALL) == "KERNEL"
    assert seen == [{"x": CALL[0], "n": 1024, "m": 7, "k": 2.5, "BLOCK": 64}] and record["flat"][0][2] == (2, 3)


def test_a_declined_flat_launch_or_none_goes_to_the_direct_launch_and_a_refusal_to_the_launcher():
    k, record, *_ = hit_setup(answer=False)
    assert k.hit([5, 2], *HEADS, *CALL) == "KERNEL"
    assert record["direct"][0][1:] == (5, 2, 1, 0x5EA, 0xF0, 0x1000, 1024, 7, 2.5, 64)
    k, record, *_ = hit_setup(answer=(700, b"packed"))
    assert k.hit((1,), *HEADS, *CALL) == "KERNEL" and record["failed"] == [(700, b"packed")]
    k, record, *_ = hit_setup(flat=None)  # a kernel with no flat launch
    assert k.hit((3,), *HEADS, *CALL) == "KERNEL" and record["direct"] and not record["flat"]


@pytest.mark.parametrize("change", ["no entry", "hash", "caches", "kernel cache", "pre-run hook", "stages hook",
                                    "enter hook", "exit hook", "unhashable", "huge int", "cannot specialize",
                                    "never keys"])
@pytest.mark.parametrize("warm", [False, True], ids=["first call", "after a hit"])
def test_the_hit_leaves_the_call_to_the_general_path_before_anything_runs(change, warm):
    """Also after a hit (warm), whose key and entry the hit remembers: a change to the call or
    to what the entry rests on is seen there too."""
    k, record, jit, rt, kernel_cache = hit_setup()
    if warm:
        assert k.hit((1,), *HEADS, *CALL) == "KERNEL"
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
    answer = k.hit(lambda m: grid_calls.append(1) or (1,), *HEADS, *call)
    if change in ("no entry", "hash", "caches", "kernel cache", "never keys", "unhashable"):
        # keyed, not launched: the general path takes key()'s answer and does not key again
        # (an unhashable key too: the general path's lookup then says so)
        want = k.key(*HEADS, *call)
        assert answer.__class__ is tuple and len(answer) == len(want) == 3
        assert answer[0].__class__ is NoKey or answer[0] == want[0]
    else:  # decided before a key was made, or a key that cannot be made: the general path keys and explains
        assert answer is NotImplemented
    assert not grid_calls and not record["flat"] and not record["direct"] and sys.exc_info() == (None, None, None)


def test_calls_of_two_keys_in_turn_each_launch_their_own_entry():
    """The hit remembers the last hit's key and entry: a call of another key is looked up, not
    taken for the last one (items equal by value, as the dict compares them, are the same key)."""
    k, record, _, _, kernel_cache = hit_setup()
    other = (Tensor(0x1004), 1024, 7, 2.5, 64)  # x not 16-byte aligned: another key
    entries = record.pop("entries")
    kernel_cache["tk2"] = "OTHER"
    entries[k.key(*HEADS, *other)[0]] = entries[k.key(*HEADS, *CALL)[0]]._replace(function=0xF1, kernel="OTHER",
                                                                                  triton_key="tk2")
    for _ in range(3):
        assert k.hit((1,), *HEADS, *CALL) == "KERNEL" and k.hit((1,), *HEADS, *other) == "OTHER"
        assert k.hit((1,), "dev", "debug", tuple(), *CALL[:4], 16 * 4) == "KERNEL"  # equal, not the same objects
    assert [f[0] for f in record["flat"]] == [0xF0, 0xF1, 0xF0] * 3
    assert k.hit((1,), *HEADS, *CALL[:4], 65) is not NotImplemented and len(record["flat"]) == 9  # BLOCK=65: a miss


def test_a_remembered_entry_that_no_longer_holds_gives_way_to_the_one_recorded_since():
    """After a hit, Triton's cache replaces the kernel for the same key and the guard records a
    new entry: the next calls launch that entry in C (they are not left to the general path for
    good because the remembered one no longer holds)."""
    k, record, _, _, kernel_cache = hit_setup()
    assert k.hit((1,), *HEADS, *CALL) == "KERNEL"
    entries = record.pop("entries")
    key = k.key(*HEADS, *CALL)[0]
    kernel_cache["tk"] = "NEW"
    assert k.hit((1,), *HEADS, *CALL).__class__ is tuple  # not recorded yet: a miss, keyed
    entries[key] = entries[key]._replace(function=0xF2, kernel="NEW")
    before = _call.guard_hits()
    for _ in range(3):
        assert k.hit((1,), *HEADS, *CALL) == "NEW"
    assert _call.guard_hits() == before + 3 and [f[0] for f in record["flat"]] == [0xF0] + [0xF2] * 3


def test_used_globals_are_checked_and_errors_after_the_decision_propagate():
    k, record, jit, *_ = hit_setup()
    jit.used_global_vals = {("G", 1): 2}
    assert k.hit((1,), *HEADS, *CALL) == "KERNEL" and record["globals"] == 1

    def bad_grid(meta):
        raise ZeroDivisionError("grid")

    with pytest.raises(ZeroDivisionError, match="grid"):
        k.hit(bad_grid, *HEADS, *CALL)


def test_the_hit_holds_no_reference_after_it_returns():
    k, record, *_ = hit_setup(flat=None)  # the direct launch: a tuple of arguments built and released
    x = CALL[0]
    args = (HEADS, CALL)
    for _ in range(100):
        k.hit((1,), *HEADS, *CALL)
        k.key(*HEADS, *CALL)
    gc.collect()
    before = sys.getrefcount(x), sys.getrefcount(args)
    for _ in range(1000):
        k.hit((1,), *HEADS, *CALL)
        k.key(*HEADS, *CALL)
    record["direct"].clear()
    gc.collect()
    assert (sys.getrefcount(x), sys.getrefcount(args)) == before


def test_more_parameters_than_the_stack_holds():
    """Past 64 parameters the launch values are allocated, not on the stack: the same answers."""
    n = 70
    params = tuple((False, True, True, True, INT_KEYS[True, True]) for _ in range(n))
    k = keyer(params=params)
    args = [Tensor(0x1000 + 16 * i) if i % 7 == 0 else i for i in range(n)]
    key, *values = k.key(*HEADS, *args)
    assert len(key) == len(HEADS) + 2 * n and len(values) == n
    assert values == [a.ptr if isinstance(a, Tensor) else a for a in args]


# -- the lookup alone (bundles) --
def test_find_answers_the_entry_for_the_key_and_remembers_it_until_forget():
    """find() is the hit's lookup without a hit: (entry or None, key, *launch values). Without a
    hit nothing says an entry stopped holding, so the remembered pair serves its key until
    forget() (a bundle's release())."""
    entries = {}
    k = keyer(entries=entries)
    assert k.find(*HEADS, *CALL) == (None, *k.key(*HEADS, *CALL))  # a miss: the key, to record an entry for
    key = k.key(*HEADS, *CALL)[0]
    entries[key] = "E"
    for _ in range(2):
        entry, found, x_value, k_value = k.find(*HEADS, *CALL)
        assert (entry, x_value, k_value) == ("E", 0x1000, 2.5) and found == key
    assert k.find(*HEADS, *CALL[:4], 65)[0] is None  # another key is looked up, not taken for the last
    assert k.find(*HEADS, *CALL)[0] == "E"
    entries.clear()
    assert k.find(*HEADS, *CALL)[0] == "E"  # remembered
    k.forget()
    assert k.find(*HEADS, *CALL)[0] is None


def test_find_raises_what_the_key_raises_and_needs_entries():
    k = keyer(entries={})
    with pytest.raises(NoKey, match="beyond 64 bits"):
        k.find(*HEADS, Tensor(0x1000), 2**70, 7, 2.5, 64)
    with pytest.raises(TypeError, match="unhashable"):
        k.find(*HEADS, *CALL[:4], [64])
    with pytest.raises(TypeError, match="no entries"):
        keyer().find(*HEADS, *CALL)
    with pytest.raises(TypeError, match="takes 8 arguments"):
        k.find(*HEADS, 1)


def test_a_parameter_keyed_by_value():
    """Mode 2 (a bundle's autotune key or heuristics input): an exact int, float, bool, str or
    None by class and value; anything else by the parameter's own callable."""
    seen = []

    def table(v):
        seen.append(v)
        return ("other", type(v).__name__)

    k = keyer(params=((2, True, True, False, table),), entries={})
    for v in (4096, 4112, 2.5, True, 1, "s", None):
        assert k.key(*HEADS, v)[0][len(HEADS):] == (v.__class__, v)
    assert k.key(*HEADS, 4096)[0] != k.key(*HEADS, 4112)[0] and not seen
    t = (1, 2)
    assert k.key(*HEADS, t)[0][len(HEADS):] == (("other", "tuple"), None) and seen == [t]


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
        k.find(*HEADS, deep)
    assert k.key(*HEADS, ((1, 2), 3))[0][len(HEADS):] == (tuple, spec.bounded(((1, 2), 3)))
    # tuples equal by == but of items Triton compiles apart key apart
    keys = {k.key(*HEADS, t)[0] for t in [(True, 4), (1, 4), (1.0, 4), ((1,), 4), ([1], 4)]}
    assert len(keys) == 5


def test_an_error_after_the_last_entry_was_taken_leaves_no_reference_to_it():
    k, record, jit, *_ = hit_setup()
    entry = next(iter(record["entries"].values()))
    assert k.find(*HEADS, *CALL)[0] is entry  # remembered

    class Broken(Jit):
        hash = property(lambda self: 1 / 0)

    jit.__class__ = Broken
    before = sys.getrefcount(entry)
    for _ in range(100):
        with pytest.raises(ZeroDivisionError):
            k.find(*HEADS, *CALL)
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
        _call.GuardKey(PARAMS, len(HEADS), Tensor, int_key, classify, NoKey, DIVISIBILITY_MASK,
                       {"jit": 1, "runtime": 1, "stream": 1, "hook_chain": None, "check_globals": 1, "grid3": 1,
                        "names": ("x", "n", "m", "k", "BLOCK"), "fields": {}})


def test_a_tuple_is_keyed_item_by_item_in_c_as_classify_keys_it():
    """An exact tuple is keyed in C by the rule of fast_dispatch._item_key (Triton specializes
    items fully): the same key classify gives; a never-keying item raises its NoKey; nesting past
    C's depth goes on through classify."""
    k = keyer(entries={})
    t = (Tensor(0x2000), Tensor(0x2004, "fp16"), 7, 16, 2**40, 2.5, True, None, (1, (Tensor(0x10), 3.0)))
    assert k.key(*HEADS, t, 1, 1, 1, 1)[0][3] == classify(t, True, True, Tensor)
    deep = 5
    for _ in range(40):
        deep = (deep,)
    assert k.key(*HEADS, deep, 1, 1, 1, 1)[0][3] == classify(deep, True, True, Tensor)

    class Descriptor:
        block_shape, base = [16], None

    with pytest.raises(NoKey):
        classify(Descriptor(), True, True)  # registers the class as one that never keys
    with pytest.raises(NoKey):
        k.key(*HEADS, (1, Descriptor()), 1, 1, 1, 1)
    with pytest.raises(NoKey, match="beyond 64 bits"):
        k.find(*HEADS, (2**70,), 1, 1, 1, 1)
