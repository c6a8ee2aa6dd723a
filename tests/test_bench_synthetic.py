"""Synthetic suite JSON for the CPU tests of the report and the compare mode.

A helper that the other test_bench_* files import, with one test of its own. Made-up figures in
the suite's layout: they test the reading, the maths and the formatting, never a launch cost."""
import copy
import json
import random

from launcher.bench import names as N
from launcher.bench.results import LAYOUT

ENV = {"date": "2026-12-02T10:00:00+00:00", "triton": "3.6.0", "torch": "2.11.0+cu130", "gpu": "NVIDIA H200",
       "driver": "580.159", "cuda_driver_api": "13.0", "python": "3.12.3", "launcher": "0.1.0"}

# µs per launch of each path (vector add-like); every kernel scales them a little.
BASE = {N.FLOOR: 3.2, N.BIND: 3.6, N.OURS_LAUNCHER_NONE: 4.3, N.STOCK_LAUNCHER_NONE: 4.8,
        N.OURS_LAUNCHER: 4.5, N.STOCK_LAUNCHER: 5.1, N.OURS_COMPILED_NONE: 6.0, N.STOCK_COMPILED_NONE: 6.6,
        N.OURS_COMPILED: 6.9, N.STOCK_COMPILED: 7.6, N.OURS_JIT: 11.1, N.STOCK_JIT: 11.6,
        N.INDUCTOR: 5.5, N.CUDA_CORE: 5.9, N.CUDA_BINDINGS: 7.4}
KERNELS = [N.VECTOR_ADD, N.MIXED16, N.TENSORDESC]


def make(seed=0, rounds=40, scale=1.0, noise=0.02, slower=None, drop=None):
    """A suite JSON as a dict. scale: every figure times this (a host that drifts between runs);
    slower: {(kernel, path): factor} for one path only; drop: {(kernel, path)} left unmeasured."""
    rng = random.Random(seed)
    slower, drop = dict(slower or {}), set(drop or ())
    benchmarks = []
    for k, kernel in enumerate(KERNELS):
        paths = {p: [] for p in BASE if (kernel, p) not in drop}
        for r in range(rounds):
            round_factor = scale * (1 + 0.15 * rng.random())  # shared by every path of the round
            for p in paths:
                v = BASE[p] * (1 + 0.1 * k) * round_factor * (1 + rng.gauss(0, noise))
                paths[p].append(v * slower.get((kernel, p), 1.0))
        skipped = {p: "Inductor's static launcher: no host tensor descriptors in this torch"
                   for p in [N.INDUCTOR] if kernel == N.TENSORDESC}
        for p in skipped:
            paths.pop(p, None)
        skipped.update({p: "not measured (test)" for (kk, p) in drop if kk == kernel})
        benchmarks.append(_bench(f"test_hot[{kernel}]", {
            "kind": "hot", "group": kernel, "unit": "µs per launch", "ops_per_batch": 500, "rounds": rounds,
            "warmup_rounds": 3, "paths": paths, "skipped": skipped,
            "ratios": [[N.BUNDLE, N.STOCK_JIT]]}))
    cold = {}
    for r in range(20):
        f = scale * (1 + 0.2 * rng.random())
        cold.setdefault(N.OURS, []).append(354.0 * f * (1 + rng.gauss(0, noise)))
        cold.setdefault(N.STOCK, []).append(74.5 * f * (1 + rng.gauss(0, noise)))
    benchmarks.append(_bench("test_cold_new_signature", {
        "kind": "cold", "group": N.COLD_NEW, "unit": "µs", "ops_per_batch": 1, "rounds": 20, "warmup_rounds": 1,
        "paths": cold, "ratios": [[N.OURS, N.STOCK]]}))
    shape = {N.OURS: [8.0 * scale * (1 + rng.gauss(0, noise)) for _ in range(20)],
             N.STOCK: [70.0 * scale * (1 + rng.gauss(0, noise)) for _ in range(20)]}
    benchmarks.append(_bench("test_cold_same_shape", {
        "kind": "cold", "group": N.COLD_SHAPE, "unit": "µs", "ops_per_batch": 1, "rounds": 20, "warmup_rounds": 1,
        "paths": shape, "ratios": [[N.OURS, N.STOCK]]}))
    startup = {N.STARTUP_TRITON: [800.0 * scale * (1 + rng.gauss(0, noise)) for _ in range(5)]}
    benchmarks.append(_bench("test_startup", {
        "kind": "startup", "group": N.STARTUP, "unit": "ms", "ops_per_batch": 1, "rounds": 5, "warmup_rounds": 0,
        "paths": startup, "skipped": {N.STARTUP_BUNDLE: "launcher.export does not exist yet"},
        "ratios": [[N.STARTUP_TRITON, N.STARTUP_BUNDLE]]}))
    return {"machine_info": {"node": "vm"}, "commit_info": {}, "benchmarks": benchmarks,
            "datetime": "2026-12-02T10:00:00", "version": "5.3.1"}


def decode_bench(seed=0, rounds=40, stock=110.0, ratios=None, noise=0.02, skipped=None):
    """The benchmark entry of a synthetic test_decode_step: µs per step of stock eager, and each
    other path as a ratio to it (made up; the round factor is shared by every path of a round)."""
    rng = random.Random(seed)
    ratios = {N.OURS_JIT: 0.95, N.FAST: 0.25, N.BUNDLE: 0.22, N.FLOOR: 0.2, N.GRAPH: 0.08, **(ratios or {})}
    skipped = dict(skipped or {})
    paths = {p: [] for p in [N.STOCK_JIT] + [p for p in ratios if p not in skipped]}
    for _ in range(rounds):
        f = 1 + 0.15 * rng.random()
        for p in paths:
            paths[p].append(stock * ratios.get(p, 1.0) * f * (1 + rng.gauss(0, noise)))
    return _bench("test_decode_step", {
        "kind": "decode", "group": N.DECODE, "unit": "µs per step", "ops_per_batch": 100, "rounds": rounds,
        "warmup_rounds": 3, "paths": paths, "skipped": skipped, "launches_per_step": 8,
        "ratios": [[p, N.STOCK_JIT] for p in N.DECODE_PATHS if p != N.STOCK_JIT]
        + [[p, N.FLOOR] for p in N.DECODE_PATHS if p not in (N.FLOOR, N.GRAPH)]})


def _bench(name, info):
    info = dict(info, launcher_bench=LAYOUT, env=copy.deepcopy(ENV), order="alternating")
    info.setdefault("skipped", {})
    return {"group": info["group"], "name": name, "fullname": name, "params": None, "param": None,
            "extra_info": info, "options": {}, "stats": {"median": 0.1, "mean": 0.1, "rounds": info["rounds"]}}


def write(path, data):
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    return str(path)


def test_synthetic_runs_read_back_in_the_suite_layout(tmp_path):
    from launcher.bench import results

    run = results.load(write(tmp_path / "bench.json", make(rounds=3)))
    assert [g.name for g in run.of_kind("hot")] == KERNELS
    assert all(len(v) == 3 for g in run.of_kind("hot") for v in g.paths.values())
