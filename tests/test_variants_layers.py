"""Chooser.apply_layers (the autotune and heuristics layers of a bundled kernel) against the
algorithm of baf45ef, which looked each name up with tuple.index: the two must agree on every
input, results and errors alike (unknown names, names given twice, unrecorded keys). Each layer
reads the parameters once (parameters x layers per call), and a bundle holds at most
bundle_format.MAX_LAYERS layers per kernel; a name is found in one lookup, never by a search.

The kernels are real bundle-format records (launcher.bundle_format.KernelEntry, Param, Autotune,
Heuristics), as a bundle's manifest makes them, hand-made here so that names a manifest check
refuses (unknown, repeated) reach the chooser too."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpu_triton import FakeTensor
from launcher import bundle_format as BF
from launcher import variants as V
from launcher.variants import MISSING, NoVariantError


# ---- the algorithm before (launcher/variants.py at baf45ef), word for word but for `self` ----
def reference_apply_layers(self, values, options):
    values = list(values)
    options = dict(options)
    wildcard = False
    for layer in self.kernel.layers:
        passed = {n: v for n, v in zip(self.names, values) if v is not MISSING}
        if layer.kind == "autotune":
            chosen_by_caller = [n for n in self.config_names if n in passed or n in options]
            if chosen_by_caller:
                wildcard = True
                continue
            config = reference_config_for(self, layer, passed)
            for name, data in config["kwargs"].items():
                i = self.names.index(name)
                if values[i] is MISSING:
                    values[i] = V.decode_constant(data)
            for option in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
                if config.get(option) is not None:
                    options[option] = config[option]
        else:
            if all(values[self.names.index(n)] is not MISSING for n in layer.names):
                continue
            found = self._heuristics_for(layer, passed, list(layer.names))
            for name in layer.names:
                values[self.names.index(name)] = V.decode_constant(found[name])
    return values, options, wildcard


def reference_config_for(self, layer, passed):
    if len(layer.configs) == 1:
        return layer.configs[0]
    key = V.autotune_key(layer.key, self.names, passed)
    for recorded, index in layer.choices:
        if recorded == key:
            return layer.configs[index]
    known = "; ".join(V._describe_key(k) for k, _ in layer.choices) or "none"
    configs = "; ".join(V._describe_config(c) for c in layer.configs)
    raise NoVariantError(
        f"kernel {self.name!r}: the autotune key {V._describe_key(key)} (of {', '.join(layer.key)} and the "
        f"dtypes) was never tuned when the bundle was made; the bundle knows the keys {known}. Pass a "
        f"config's values to choose one (its configs: {configs})")


def chooser(names, layers):
    params = [BF.Param(n, constexpr=True, annotation="constexpr") for n in names]
    return V.Chooser(BF.KernelEntry("m.k", "k", "m", "m.py", 1, params, (), layers), [])


def outcome(fn, *args):
    try:
        values, options, wildcard = fn(*args)
    except Exception as e:
        return type(e), str(e)
    return [V.encode(v) if v is not MISSING else "MISSING" for v in values], options, wildcard


def assert_same(c, values, options):
    new = outcome(c.apply_layers, values, options)
    old = outcome(reference_apply_layers, c, values, options)
    assert new == old
    return new


# ---- random kernels: few names and values, so that keys and records match often ----
NAMES = ["a", "b", "c", "d", "e"]
TENSORS = {"fp32": FakeTensor(0x1000, "fp32"), "fp16": FakeTensor(0x2000, "fp16"),
           "odd": FakeTensor(0x3000, "not-a-triton-dtype")}  # str(dtype) in the key


value_st = st.sampled_from([MISSING] * 4 + [1, 2, *TENSORS.values()])
const_st = st.sampled_from([1, 2, 3, {"tuple": [1, 2]}, {"dtype": "fp16"}])


def names_of(params):
    """A layer's names: the kernel's, now and then one it does not have."""
    return st.sampled_from(sorted(set(params)) * 8 + ["zz"])


@st.composite
def autotune_st(draw, params, passed):
    """An autotune layer; among its choices, often the key of what the caller passed."""
    names_st = names_of(params)
    key = draw(st.lists(names_st, max_size=3))
    configs = draw(st.lists(st.fixed_dictionaries(
        {"kwargs": st.dictionaries(names_st, const_st, max_size=3)},
        optional={"num_warps": st.sampled_from([4, 8]), "num_stages": st.sampled_from([2, 3])}), min_size=1, max_size=3))
    choices = draw(st.lists(st.tuples(
        st.fixed_dictionaries({"values": st.lists(st.sampled_from([{"int": 1}, {"int": 2}]), max_size=2),
                               "dtypes": st.lists(st.sampled_from(["fp32", "fp16", "not-a-triton-dtype"]), max_size=2)}),
        st.integers(0, len(configs) - 1)), max_size=3))
    if draw(st.booleans()):
        choices.insert(draw(st.integers(0, len(choices))), (V.autotune_key(key, params, passed),
                                                             draw(st.integers(0, len(configs) - 1))))
    return BF.Autotune(key, configs, choices)


@st.composite
def heuristics_st(draw, params):
    names_st = names_of(params)
    names = draw(st.lists(names_st, min_size=1, max_size=3, unique=True))
    inputs = st.one_of(st.just({}), st.dictionaries(names_st, st.sampled_from([{"int": 1}, {"int": 2}, None]),
                                                     max_size=2))
    record = st.tuples(inputs, st.fixed_dictionaries({n: const_st for n in names}))
    return BF.Heuristics(names, draw(st.lists(record, max_size=4)))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, len(NAMES)), st.data())
def test_apply_layers_agrees_with_the_algorithm_it_replaced(n, data):
    names = NAMES[:n] + data.draw(st.lists(st.sampled_from(NAMES[:n]), max_size=2))  # a name may repeat
    names = data.draw(st.permutations(names))
    values = data.draw(st.lists(value_st, min_size=len(names), max_size=len(names)))
    passed = {n: v for n, v in zip(names, values) if v is not MISSING}
    layers = data.draw(st.lists(st.one_of(autotune_st(names, passed), heuristics_st(names)), min_size=1, max_size=6))
    c = chooser(names, layers)
    options = data.draw(st.one_of(st.just({}), st.dictionaries(st.sampled_from(["num_warps", "num_stages", "other"]),
                                                                st.sampled_from([4, 8]))))
    assert_same(c, values, options)


def test_unknown_and_repeated_names_give_what_tuple_index_gave():
    """An unknown name is tuple.index's ValueError; a name given twice is set at its first
    parameter, and `passed` (what later layers read) keeps a later one's value where passed."""
    tuned = BF.Autotune([], [{"kwargs": {"zz": 1}}])
    assert assert_same(chooser(["a", "b"], [tuned]), [MISSING, MISSING], {}) == (
        ValueError, "tuple.index(x): x not in tuple")
    heur = BF.Heuristics(["a", "zz"], [({}, {"a": 1, "zz": 2})])
    # "is every name passed?" stops at a, not passed (as all() did); setting zz then fails
    assert assert_same(chooser(["a", "b"], [heur]), [MISSING, 5], {})[0] is ValueError
    # a passed: the question itself reaches zz
    assert assert_same(chooser(["a", "b"], [heur]), [5, 5], {})[0] is ValueError
    late = BF.Heuristics(["b"], [({"a": {"int": 7}}, {"b": 3})])
    repeated = chooser(["a", "b", "a"], [BF.Heuristics(["a"], [({}, {"a": 1})]), late])
    # the second "a" was passed 7: the first is set to 1, and the next layer still reads a=7
    assert assert_same(repeated, [MISSING, MISSING, 7], {}) == ([1, 3, 7], {}, False)
    assert assert_same(repeated, [MISSING, MISSING, 6], {})[0] is NoVariantError


def test_a_key_of_dtypes_is_remade_where_a_layer_replaces_a_tensor():
    """The dtypes of an autotune key are made once per call and again only where a heuristics
    layer replaces a passed tensor with a constant: the next key has one dtype fewer."""
    t = TENSORS["fp32"]
    tune = BF.Autotune([], [{"kwargs": {}}, {"kwargs": {}, "num_stages": 3}],
                       [({"values": [], "dtypes": ["fp32", "fp32"]}, 0), ({"values": [], "dtypes": ["fp32"]}, 1)])
    heur = BF.Heuristics(["x", "B"], [({}, {"x": 4, "B": 64})])  # B not passed: it computes x too
    c = chooser(["x", "y", "B"], [tune, heur, tune])
    assert assert_same(c, [t, t, MISSING], {}) == ([4, {"repr": repr(t)}, 64], {"num_stages": 3}, False)
    c = chooser(["x", "y", "B"], [tune, tune])
    assert assert_same(c, [t, t, MISSING], {}) == ([{"repr": repr(t)}] * 2 + ["MISSING"], {}, False)


class CountingNames(tuple):
    """A kernel's parameter names that count the index() calls."""

    lookups = 0

    def index(self, *args):
        CountingNames.lookups += 1
        return super().index(*args)


def test_the_most_layers_over_the_most_parameters_find_each_name_without_a_search():
    """BF.MAX_PARAMS parameters under BF.MAX_LAYERS layers, each naming a few of them: no name is
    searched for (tuple.index), and the result is the old algorithm's. The autotune layers make
    their key until a heuristics layer replaces a tensor (c2): the key then has one dtype fewer and
    chooses the config that sets num_stages, which ends the tuning."""
    names = [f"c{i}" for i in range(BF.MAX_PARAMS)]
    tune = BF.Autotune([], [{"kwargs": {}}, {"kwargs": {}, "num_stages": 3}],
                       [({"values": [], "dtypes": ["fp16", "fp16"]}, 0), ({"values": [], "dtypes": ["fp16"]}, 1)])
    layers = []
    for i in range(BF.MAX_LAYERS // 2):
        mine = [f"c{3 + 2 * i}", f"c{4 + 2 * i}"] + (["c2"] if i == 4 else [])
        layers += [BF.Heuristics(mine, [({}, {n: i for n in mine})]), tune]
    c = chooser(names, layers)
    t = TENSORS["fp16"]
    values = [1, t, t] + [MISSING] * (len(names) - 3)
    c.names = CountingNames(c.names)
    CountingNames.lookups = 0
    new = outcome(c.apply_layers, values, {})
    last = 3 + BF.MAX_LAYERS
    assert new[0][2:4] == [4, 0] and new[0][last - 2:last + 1] == [7, 7, "MISSING"] and new[1:] == ({"num_stages": 3}, True)
    assert CountingNames.lookups == 0
    assert outcome(reference_apply_layers, c, values, {}) == new
    assert CountingNames.lookups > 0  # what it replaced
