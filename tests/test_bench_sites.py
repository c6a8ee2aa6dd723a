"""The suite's call sites (launcher.bench.sites): each path is called as users write the call,
with exactly the arguments and keywords of the case, as many times as the batch says."""
import dis

import pytest

from launcher.bench import sites


class Kernel:
    """kernel[grid](*args, **kwargs), recorded."""

    def __init__(self):
        self.calls = []

    def __getitem__(self, grid):
        return lambda *a, **kw: self.calls.append((grid, a, kw))


def test_batch_calls_kernel_grid_with_the_arguments_and_keywords_count_times():
    k = Kernel()
    run = sites.batch("k[grid]", {"k": k, "grid": (4,)}, ("x", "y", "out", 1000), {"BLOCK": 1024}, 7)
    run()
    assert k.calls == [((4,), ("x", "y", "out", 1000), {"BLOCK": 1024})] * 7
    run()
    assert len(k.calls) == 14


def test_the_call_is_written_out_no_star_arguments_and_the_subscript_in_the_loop():
    k = Kernel()
    run = sites.batch("k[grid]", {"k": k, "grid": (1,)}, (1, 2), {"BLOCK": 8}, 1)
    ops = {i.opname for i in dis.get_instructions(run)}
    assert "CALL_FUNCTION_EX" not in ops and "DICT_MERGE" not in ops  # no f(*a, **kw)
    assert "BINARY_SUBSCR" in ops  # kernel[grid] taken on every call, as users write it


def test_each_calls_once_per_tuple_of_a_list_read_when_it_runs():
    calls, todo = [], []
    run = sites.each("p", {"p": lambda *a, **kw: calls.append((a, kw))}, todo, {"B": 2}, 3)
    todo[:] = [(1, 2, 3), (4, 5, 6)]
    run()
    assert calls == [((1, 2, 3), {"B": 2}), ((4, 5, 6), {"B": 2})]


def test_a_head_with_leading_arguments_and_no_arguments_at_all():
    calls = []
    ns = dict(run=lambda *a: calls.append(a), gx=1, gy=2, gz=3)
    sites.batch("run(gx, gy, gz,", ns, ("a", "b"), {}, 1)()
    sites.batch("run(gx, gy, gz,", ns, (), {}, 1)()
    sites.batch("run", ns, (), {}, 2)()
    sites.each("run(gx,", ns, [("a",), ("b",)], {}, 1)()
    sites.each("run", ns, [(), ()], {}, 0)()
    assert calls == [(1, 2, 3, "a", "b"), (1, 2, 3), (), (), (1, "a"), (1, "b"), (), ()]


def test_sequence_makes_the_calls_in_order_once():
    a, b = Kernel(), Kernel()
    one = sites.sequence([("k0[g0]", {"k0": a, "g0": (8,)}, ("x", 1.5), {"BLOCK": 1024}),
                          ("k1[g1]", {"k1": b, "g1": (2,)}, ("y",), {}),
                          ("k2[g2]", {"k2": a, "g2": (1,)}, (), {"BLOCK": 64})])
    one()
    assert a.calls == [((8,), ("x", 1.5), {"BLOCK": 1024}), ((1,), (), {"BLOCK": 64})]
    assert b.calls == [((2,), ("y",), {})]
    assert "CALL_FUNCTION_EX" not in {i.opname for i in dis.get_instructions(one)}
    sites.sequence([])()  # no calls: nothing to do


def test_names_shared_between_calls_and_keywords_that_cannot_be_written_are_refused():
    with pytest.raises(ValueError, match="another call's"):
        sites.sequence([("k[g]", {"k": Kernel(), "g": 1}, (), {}), ("k[g]", {"k": Kernel(), "g": 2}, (), {})])
    with pytest.raises(ValueError, match="generated code's own"):
        sites.batch("_site_p", {"_site_p": print}, (), {}, 1)
    for bad in ("not a name", "class", "1x"):
        with pytest.raises(ValueError, match="cannot be written"):
            sites.batch("p", {"p": print}, (), {bad: 1}, 1)
