"""Which CPU the suite runs on: `python -m launcher bench --cpu auto|all|N`.

On a shared machine (the H200 here is a 16-vCPU slice of a larger host) some CPUs are busier
than others at any moment, and a process on a busy one runs Python code up to twice as slowly
while the driver's own work (the C floor) slows far less: every ratio against the floor then
grows. Measured on the H200 on 2026-12-03, vector add, the same code pinned to different
CPUs of one machine: a guard hit took 1.66-1.80x the floor on the quiet CPUs and 2.08-2.29x on
the busy ones, a pure-Python loop 0.75-0.86 us against 1.29-1.54 us.

`auto` (the default) times a short pure-Python loop on every CPU this process may use and runs
the suite's process pinned to the fastest one; before every round the suite times them all
again and moves to the fastest when its own has become slower (Settler): every path of a
round, the floor and Triton's included, runs on the same CPU. `all` leaves the affinity as it
is; a number pins to that CPU. The report's header says how the suite was pinned, and each
test's notes where its rounds ran.
"""
from __future__ import annotations

import json
import os
import statistics
import time

ENV = "LAUNCHER_BENCH_CPU"  # what the suite records: JSON of choose()'s result
SLACK = 0.10  # the Settler moves when its CPU is this much slower than the fastest


def _loop() -> None:
    d = {}
    for i in range(2000):
        d[i & 63] = i


def calibrate(cpu: int, reps: int = 5) -> float:
    """µs per pure-Python loop with this thread pinned to `cpu` (the median of `reps`)."""
    os.sched_setaffinity(0, {cpu})
    _loop()  # the first run after a move pays for cold caches
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        _loop()
        samples.append((time.perf_counter_ns() - t0) / 1e3)
    return statistics.median(samples)


def choose(how: str = "auto") -> dict:
    """The CPU to run the suite on, as `how` says ("auto", "all" or a CPU number), for pinner()
    and the report: {"how", "cpu" (None: not pinned), "calibration" ({cpu: µs}, for auto)}. This
    process's own affinity is as it was afterwards. ValueError for a CPU it may not use."""
    if not hasattr(os, "sched_setaffinity"):
        return {"how": "all", "cpu": None}
    allowed = sorted(os.sched_getaffinity(0))
    if how == "all":
        return {"how": "all", "cpu": None}
    if how != "auto":
        try:
            cpu = int(how)
        except ValueError:
            raise ValueError(f"--cpu takes auto, all or a CPU number, got {how!r}") from None
        if cpu not in allowed:
            raise ValueError(f"--cpu {cpu}: this process may run on CPUs {allowed} only")
        return {"how": "given", "cpu": cpu}
    timings = {}
    try:
        for _ in range(2):  # two passes: a CPU busy for a moment is not chosen on one sample
            for cpu in allowed:
                t = calibrate(cpu)
                timings[cpu] = min(t, timings.get(cpu, t))
    finally:
        os.sched_setaffinity(0, allowed)
    best = min(timings, key=timings.get)
    return {"how": "auto", "cpu": best, "calibration": {str(c): round(t, 1) for c, t in timings.items()}}


class Settler:
    """Before each round (launcher.bench.rounds' settle): time every CPU the bench command could
    use and move this thread to the fastest when the one it is on is more than `slack` slower.
    Returns whether it moved; `moves` and `used` say how often and where, for the report."""

    def __init__(self, record: dict | None, slack: float = SLACK):
        cal = (record or {}).get("calibration") if (record or {}).get("how") == "auto" else None
        self.cpus = sorted(int(c) for c in cal) if cal and hasattr(os, "sched_setaffinity") else []
        self.slack = slack
        self.moves = 0
        self.used = set()

    def __call__(self) -> bool:
        if len(self.cpus) < 2:
            return False
        here = min(os.sched_getaffinity(0))
        timings = {cpu: calibrate(cpu, reps=3) for cpu in self.cpus}
        best = min(timings, key=timings.get)
        moved = here not in timings or (best != here and timings[here] > timings[best] * (1 + self.slack))
        target = best if moved else here
        os.sched_setaffinity(0, {target})
        self.used.add(target)
        self.moves += moved
        return moved

    def note(self) -> str | None:
        if not self.used:
            return None
        return (f"rounds ran on CPU{'s' if len(self.used) > 1 else ''} {', '.join(map(str, sorted(self.used)))}; "
                f"moved to a less busy one before {self.moves} round{'s' if self.moves != 1 else ''}")


def pinner(record: dict):
    """subprocess's preexec_fn that pins the child to the chosen CPU (None: not pinned)."""
    cpu = record.get("cpu")
    if cpu is None:
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


def describe(record: dict | None) -> str:
    """One sentence for the report's header from a recorded choose() result."""
    if not record:
        return ""
    cpu = record.get("cpu")
    if cpu is None:
        return "Not pinned: the process ran on any of its CPUs."
    if record.get("how") != "auto":
        return f"Pinned to CPU {cpu}, as asked."
    cal = {int(c): t for c, t in record.get("calibration", {}).items()}
    if not cal:
        return f"Pinned to CPU {cpu}."
    return (f"Pinned to one CPU at a time: at the start CPU {cpu}, the fastest of {len(cal)} at a "
            f"pure-Python calibration loop ({cal[cpu]:.0f} µs; median of all {statistics.median(cal.values()):.0f} "
            f"µs, slowest {max(cal.values()):.0f} µs). Before every round the loop runs on each CPU again and the "
            f"suite moves to the fastest where its own has become more than {SLACK:.0%} slower (in the hot tests an "
            "untimed batch follows a move): every path of a round runs on the same CPU.")


def recorded() -> dict | None:
    """The choice the bench command made for this suite (from the environment), or None."""
    raw = os.environ.get(ENV)
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None
