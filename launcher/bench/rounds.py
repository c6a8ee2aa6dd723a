"""Interleaved rounds: each round runs every path once, and the order alternates between rounds.

A path measured in a block of rounds of its own drifts against the others on a noisy host; run
round by round, every path of a round sees the same conditions, so ratios taken within a round
hold from run to run. One round, for each path in the round's order:

    path.before()   untimed: fresh arguments, switching a mode on, ...
    sync()          untimed: torch.cuda.synchronize(), so the queue is empty
    path.run()      timed: one batch (for launches, N of them)
    path.after()    untimed: switching the mode off, checking what the batch did

Even rounds run the paths in the given order, odd rounds in reverse, so that no path is always
first after the synchronisation or always right after the same neighbour. `settle`, where
given, runs before each round (the suite moves to the least busy CPU there); when it says it
moved, the round's first path runs one untimed batch first (rerun_after_move), so that no path
pays for the move. Paths whose batches cannot run twice (each takes the next of a fixed set of
new kernels) leave that off: with the order alternating, the paths share the move's cost.

Pure Python: the clock and the synchronisation are given, so the CPU tests drive it with fakes.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional


@dataclass
class Path:
    """One way of doing the thing measured; `run` does one batch of `ops` operations."""

    name: str
    run: Callable[[], object]
    ops: int = 1
    before: Optional[Callable[[], object]] = None
    after: Optional[Callable[[], object]] = None


def round_order(items, index: int) -> list:
    """The order of round `index`: as given on even rounds, reversed on odd ones."""
    items = list(items)
    return items if index % 2 == 0 else items[::-1]


class Rounds:
    """Runs rounds over `paths`; keeps, for each path, its time per op in every recorded round.

    times[name][r] is the time per op of path `name` in recorded round r, in `unit`s of the clock
    (the default clock counts nanoseconds and unit=1e3 gives µs), so the r-th entries of two
    paths come from the same round and can be divided.
    """

    def __init__(self, paths, sync: Callable[[], object] = lambda: None,
                 clock: Callable[[], int] = time.perf_counter_ns, unit: float = 1e3,
                 settle: Optional[Callable[[], bool]] = None, rerun_after_move: bool = True):
        self.paths = list(paths)
        names = [p.name for p in self.paths]
        if len(set(names)) != len(names):
            raise ValueError(f"path names must be unique: {names}")
        for p in self.paths:
            if p.ops < 1:
                raise ValueError(f"path {p.name!r}: ops must be at least 1, got {p.ops}")
        self.sync = sync
        self.settle = settle
        self.rerun_after_move = rerun_after_move
        self.clock = clock
        self.unit = unit
        self.times = {name: [] for name in names}
        self.orders = []  # the order of every recorded round
        self.count = 0  # rounds run, warm-up included

    def round(self, record: bool = True) -> None:
        order = round_order(self.paths, self.count)
        self.count += 1
        if self.settle is not None and self.settle() and order and self.rerun_after_move:
            self._batch(order[0])  # untimed: what it measures is dropped
        measured = [(p.name, self._batch(p) / p.ops / self.unit) for p in order]
        if record:
            for name, value in measured:
                self.times[name].append(value)
            self.orders.append([name for name, _ in measured])

    def _batch(self, p: Path) -> float:
        """One batch of `p`: before, sync, the timed run, after; the run's time on the clock."""
        if p.before is not None:
            p.before()
        self.sync()
        t0 = self.clock()
        p.run()
        t1 = self.clock()
        if p.after is not None:
            p.after()
        return t1 - t0

    def warmup(self, rounds: int) -> None:
        for _ in range(rounds):
            self.round(record=False)

    def run(self, rounds: int, warmup: int = 0) -> dict:
        self.warmup(warmup)
        for _ in range(rounds):
            self.round()
        return self.times
