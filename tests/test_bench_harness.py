"""The benchmark harness on the CPU: interleaved rounds and the ratio and spread maths.

Pure-Python callables and a fake clock stand in for launches: these test the harness, never a
launch cost (the suite measures those on a GPU)."""
import math
import statistics

import pytest

from launcher.bench import names as N
from launcher.bench.rounds import Path, Rounds, round_order
from launcher.bench.stats import median, per_round_overhead_share, per_round_ratio, quantile, summary


class FakeClock:
    """Nanoseconds that move only when a fake operation says so."""

    def __init__(self):
        self.t = 0
        self.log = []

    def __call__(self):
        return self.t

    def spend(self, ns, what):
        self.t += ns
        self.log.append(what)


def test_round_order_alternates_forward_and_reversed():
    assert round_order("abc", 0) == ["a", "b", "c"]
    assert round_order("abc", 1) == ["c", "b", "a"]
    assert round_order("abc", 2) == ["a", "b", "c"]
    assert round_order([], 5) == []


def _paths(clock, costs, ops=10):
    def make(name, cost):
        return Path(name, lambda: clock.spend(cost * ops, f"run {name}"), ops,
                    before=lambda: clock.spend(10**9, f"before {name}"),
                    after=lambda: clock.spend(10**9, f"after {name}"))
    return [make(n, c) for n, c in costs.items()]


def test_each_round_runs_every_path_once_in_alternating_order_with_a_sync_before_each():
    clock = FakeClock()
    paths = _paths(clock, {"a": 1000, "b": 2000, "c": 3000})
    r = Rounds(paths, sync=lambda: clock.spend(10**9, "sync"), clock=clock)
    r.run(rounds=3, warmup=1)
    runs = [w for w in clock.log if w.startswith("run")]
    assert runs == ["run a", "run b", "run c", "run c", "run b", "run a"] * 2
    # before, sync, run, after: for every path of every round
    assert clock.log[:4] == ["before a", "sync", "run a", "after a"]
    assert r.orders == [["c", "b", "a"], ["a", "b", "c"], ["c", "b", "a"]]  # after one warm-up round
    assert r.count == 4


def test_a_round_after_a_move_of_cpu_runs_its_first_path_once_untimed():
    """settle (the suite's move to the least busy CPU) runs before each round; after a move the
    round's first path runs one untimed batch, so no path pays for the cold caches."""
    clock = FakeClock()
    paths = _paths(clock, {"a": 1000, "b": 2000})
    moves = iter([True, False, True])
    r = Rounds(paths, sync=lambda: clock.spend(0, "sync"), clock=clock,
               settle=lambda: clock.spend(0, "settle") or next(moves))
    r.run(rounds=3)
    runs = [w for w in clock.log if w.startswith("run") or w == "settle"]
    assert runs == ["settle", "run a", "run a", "run b", "settle", "run b", "run a", "settle", "run a", "run a",
                    "run b"]
    assert r.times == {"a": [1.0, 1.0, 1.0], "b": [2.0, 2.0, 2.0]}  # the untimed batches are not recorded


def test_paths_that_cannot_run_twice_get_no_untimed_batch_after_a_move():
    """The cold tests' batches each take the next of a fixed set of new kernels: rerun_after_move
    off, a move only settles, and every batch run is a recorded one."""
    clock = FakeClock()
    paths = _paths(clock, {"a": 1000, "b": 2000})
    r = Rounds(paths, sync=lambda: None, clock=clock, settle=lambda: True, rerun_after_move=False)
    r.run(rounds=2)
    assert [w for w in clock.log if w.startswith("run")] == ["run a", "run b", "run b", "run a"]


def test_only_the_batch_is_timed_and_figures_are_per_op_in_microseconds():
    clock = FakeClock()
    r = Rounds(_paths(clock, {"a": 1500, "b": 4000}, ops=500),
               sync=lambda: clock.spend(10**9, "sync"), clock=clock)
    r.run(rounds=4, warmup=2)
    # before/after/sync each spend a full second: none of it shows in the figures
    assert r.times == {"a": [1.5] * 4, "b": [4.0] * 4}


def test_warmup_rounds_are_not_recorded():
    clock = FakeClock()
    r = Rounds(_paths(clock, {"a": 1000}), clock=clock)
    r.warmup(3)
    assert r.times == {"a": []} and r.orders == []
    r.round()
    assert len(r.times["a"]) == 1


def test_per_round_figures_line_up_so_ratios_use_the_same_round():
    """A drift that moves every path of a round together cancels in the per-round ratio."""
    clock = FakeClock()
    drift = {"r": 0}

    def path(name, base):
        return Path(name, lambda: clock.spend(int(base * (1 + drift["r"])), name), 1)

    def bump():
        drift["r"] += 1

    paths = [path("floor", 1000), path("x", 1500), Path("tick", bump, 1)]
    r = Rounds(paths, clock=clock)
    r.run(rounds=5)
    # "tick" raises the drift once a round, before or after both of the others, never between them
    assert r.times["floor"][-1] > 2 * r.times["floor"][0]  # the absolute figures drift...
    assert per_round_ratio(r.times["x"], r.times["floor"]) == pytest.approx([1.5] * 5)  # ...the ratio does not


def test_rounds_refuse_duplicate_names_and_empty_batches():
    with pytest.raises(ValueError, match="unique"):
        Rounds([Path("a", lambda: None), Path("a", lambda: None)])
    with pytest.raises(ValueError, match="ops"):
        Rounds([Path("a", lambda: None, ops=0)])


def test_real_clock_records_positive_times():
    r = Rounds([Path("sum", lambda: sum(range(1000)), 10)])
    r.run(rounds=2)
    assert len(r.times["sum"]) == 2 and all(t > 0 for t in r.times["sum"])


def test_quantiles_interpolate_like_numpy_linear():
    xs = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert quantile(xs, 0) == 1.0 and quantile(xs, 1) == 5.0
    assert quantile(xs, 0.5) == 3.0 == median(xs)
    assert quantile(xs, 0.25) == 2.0 and quantile(xs, 0.75) == 4.0
    assert quantile([1.0, 2.0], 0.5) == 1.5
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.25) == pytest.approx(1.75)
    data = [0.3, 9.1, 4.4, 2.2, 7.7, 1.0, 5.5]
    assert [quantile(data, q) for q in (0.25, 0.5, 0.75)] == pytest.approx(
        statistics.quantiles(data, n=4, method="inclusive"))
    with pytest.raises(ValueError):
        quantile([], 0.5)
    with pytest.raises(ValueError):
        quantile([1.0], 1.5)


def test_summary_gives_median_spread_and_drops_nan():
    s = summary([1.0, 2.0, 3.0, 4.0, math.nan])
    assert s == {"median": 2.5, "p25": 1.75, "p75": 3.25, "min": 1.0, "max": 4.0, "n": 4}
    assert summary([]) == {"n": 0} and summary([math.nan]) == {"n": 0}


def test_per_round_ratio_is_taken_round_by_round_not_of_medians():
    num = [2.0, 4.0, 9.0]
    den = [1.0, 4.0, 3.0]
    assert per_round_ratio(num, den) == [2.0, 1.0, 3.0]
    assert median(per_round_ratio(num, den)) == 2.0
    assert median(num) / median(den) != 2.0  # 4/3: not what the report gives
    with pytest.raises(ValueError, match="same rounds"):
        per_round_ratio([1.0], [1.0, 2.0])
    assert math.isnan(per_round_ratio([1.0], [0.0])[0])


def test_overhead_share_is_above_the_floor_over_reference_above_the_floor():
    share = per_round_overhead_share(path=[5.0, 6.0], floor=[3.0, 4.0], reference=[7.0, 4.0])
    assert share[0] == 0.5 and math.isnan(share[1])  # reference not above the floor: no share


def test_twin_names_pair_ours_with_stock():
    assert N.twin(N.OURS_LAUNCHER) == N.STOCK_LAUNCHER
    assert N.twin(N.OURS_COMPILED_NONE) == N.STOCK_COMPILED_NONE
    assert N.twin(N.OURS_JIT) == N.STOCK_JIT
    assert N.twin(N.FLOOR) is None and N.twin(N.INDUCTOR) is None
    assert set(N.PATH_TEXT) == set(N.HOT_PATHS)


@pytest.mark.parametrize("case", ["add", "mixed19", "args64"])
def test_the_instruction_harness_workload_makes_only_guard_hits(case, tmp_path):
    """bench/hit_instructions.py's workload (what callgrind counts; valgrind itself is not needed
    here) runs on the CPU and stops with an error unless every counted call was a guard hit: the
    counts docs/performance.md quotes are of hits, for each of its cases."""
    import os
    import pathlib
    import subprocess
    import sys

    pytest.importorskip("torch")
    script = pathlib.Path(__file__).resolve().parent.parent / "bench" / "hit_instructions.py"
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, str(script), "--run", case, "20"], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
