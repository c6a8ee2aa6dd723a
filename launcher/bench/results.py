"""Read the suite's pytest-benchmark JSON back, and compute every ratio and goal from it.

Each test of the suite stores its figures in its benchmark's `extra_info`:

    launcher_bench  1 (the version of this layout)
    kind            "hot" (launch paths of one kernel), "decode" (steps of eight launches, each
                    path against stock's step: declared ratios), "cold" or "startup"
    group           the kernel or case, e.g. "vector add", names.COLD_NEW
    unit            what each figure is, e.g. "µs per launch"
    ops_per_batch   operations timed together in one round (500 launches, 20 loads, ...)
    rounds, warmup_rounds, order
    paths           {path: [figure of round 0, round 1, ...]}: the r-th figures of all paths of a
                    group come from the same round
    skipped         {path: why it was not measured}
    invalid         {path: why its figures do not show what the path is named for}
    notes           {path: what else was seen (fast-dispatch hit counts, ...)}
    ratios          [[numerator path, denominator path], ...] declared beyond the automatic ones
    env             Triton, torch, driver, GPU, ... versions

pytest-benchmark's own `stats` of such a test time one whole round (every path once); they keep
`--benchmark-compare` working, but the figures above are what the report uses.

Ratios are taken round by round and then summarised (median, p25, p75, min, max), never as a
ratio of medians. Automatic ones, for every hot kernel: each path against the floor of the same
round, and each "ours.X" against "stock.X".
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from launcher.bench import names as N
from launcher.bench.stats import per_round_overhead_share, per_round_ratio, summary

LAYOUT = 1


class BenchFileError(ValueError):
    """A file that is not a JSON written by the suite."""


@dataclass
class Group:
    kind: str
    name: str
    paths: dict
    unit: str = ""
    ops_per_batch: int = 1
    rounds: int = 0
    skipped: dict = field(default_factory=dict)
    invalid: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)
    ratios: list = field(default_factory=list)
    info: dict = field(default_factory=dict)

    def path_order(self) -> list:
        known = [p for p in N.HOT_PATHS if p in self.paths]
        return known + [p for p in self.paths if p not in known]

    def series(self, path):
        return self.paths.get(path)


@dataclass
class Run:
    source: str
    datetime: str
    env: dict
    groups: list

    def group(self, name, kind=None):
        for g in self.groups:
            if g.name == name and (kind is None or g.kind == kind):
                return g
        return None

    def of_kind(self, kind) -> list:
        found = [g for g in self.groups if g.kind == kind]
        if kind == "hot":
            order = {k: i for i, k in enumerate(N.KERNELS)}
            found.sort(key=lambda g: order.get(g.name, len(order)))
        return found


def load(path) -> Run:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BenchFileError(f"{path}: cannot read it as JSON: {e}") from None
    return from_data(data, str(path))


def from_data(data, source="<data>") -> Run:
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise BenchFileError(f"{source}: not a pytest-benchmark JSON (no 'benchmarks' list)")
    groups, env = [], {}
    for b in data["benchmarks"]:
        info = b.get("extra_info") or {}
        if not isinstance(info, dict) or "launcher_bench" not in info:
            continue
        if info["launcher_bench"] != LAYOUT:
            raise BenchFileError(f"{source}: layout {info['launcher_bench']!r} of the launcher suite, "
                                 f"this reader knows {LAYOUT}")
        env = env or dict(info.get("env") or {})
        paths = {p: [float(v) for v in vs] for p, vs in (info.get("paths") or {}).items()}
        groups.append(Group(
            kind=info.get("kind", "hot"), name=info.get("group", b.get("name", "?")), paths=paths,
            unit=info.get("unit", ""), ops_per_batch=int(info.get("ops_per_batch", 1)),
            rounds=int(info.get("rounds", max((len(v) for v in paths.values()), default=0))),
            skipped=dict(info.get("skipped") or {}), invalid=dict(info.get("invalid") or {}),
            notes=dict(info.get("notes") or {}), ratios=[list(r) for r in info.get("ratios") or []],
            info={k: v for k, v in info.items() if k not in ("paths", "env")}))
    if not groups:
        raise BenchFileError(f"{source}: no results of the launcher suite in it")
    if not env:
        env = dict((data.get("machine_info") or {}).get("launcher_env") or {})
    return Run(source=source, datetime=str(data.get("datetime", "")), env=env, groups=groups)


@dataclass
class Ratio:
    kind: str  # "× floor", "ours/stock", or "declared"
    group: str
    group_kind: str
    numerator: str
    denominator: str
    values: list
    invalid: str = ""

    @property
    def label(self) -> str:
        return f"{self.numerator} / {self.denominator}"

    @property
    def key(self) -> tuple:
        return (self.group_kind, self.group, self.label)

    @property
    def summary(self) -> dict:
        return summary(self.values)


def _ratio(kind, g, num, den) -> Ratio | None:
    a, b = g.series(num), g.series(den)
    if not a or not b or len(a) != len(b):
        return None
    why = "; ".join(f"{p}: {g.invalid[p]}" for p in (num, den) if p in g.invalid)
    return Ratio(kind, g.name, g.kind, num, den, per_round_ratio(a, b), why)


def ratios(run: Run) -> list:
    """Every ratio of the run: automatic ones for hot kernels, then the declared ones."""
    out = []
    for g in run.of_kind("hot") + [g for g in run.groups if g.kind != "hot"]:
        order = g.path_order()
        if g.kind == "hot" and N.FLOOR in g.paths:
            out += [r for p in order if p != N.FLOOR for r in [_ratio("× floor", g, p, N.FLOOR)] if r]
        if g.kind == "hot":
            out += [r for p in order if N.twin(p) in g.paths for r in [_ratio("ours/stock", g, p, N.twin(p))] if r]
        for num, den in g.ratios:
            r = _ratio("declared", g, num, den)
            if r:
                out.append(r)
    return out


# ---- goals: reported, never asserted ----
@dataclass
class Goal:
    text: str
    target: float
    op: str  # "<=" or ">="
    how: str  # "ratio": num/den per round; "share": (num - floor)/(den - floor); "value": num alone
    num: str
    den: str = ""
    groups: tuple = ()  # group names; () = every hot kernel that has the paths
    kind: str = "hot"


GOALS = [
    Goal("launcher object, time above the floor, as a share of stock's (hooks None)", 0.5, "<=", "share",
         N.OURS_LAUNCHER_NONE, N.STOCK_LAUNCHER_NONE),
    Goal("launcher object, time above the floor, as a share of stock's (default hooks)", 0.5, "<=", "share",
         N.OURS_LAUNCHER, N.STOCK_LAUNCHER),
    Goal("`bind()` against the floor", 1.15, "<=", "ratio", N.BIND, N.FLOOR),
    Goal("prepared `p()` against the floor", 1.15, "<=", "ratio", N.PREPARED, N.FLOOR),
    Goal("prepared `p(*new_args)` against the floor, vector add", 1.5, "<=", "ratio", N.PREPARED_NEW, N.FLOOR,
         (N.VECTOR_ADD,)),
    Goal("prepared `p(*new_args, **same_constexprs)` against the floor, vector add", 1.5, "<=", "ratio",
         N.PREPARED_KW, N.FLOOR, (N.VECTOR_ADD,)),
    Goal("fast-dispatch hit against the floor, vector add", 2.0, "<=", "ratio", N.FAST, N.FLOOR, (N.VECTOR_ADD,)),
    Goal("fast-dispatch hit against the floor, 19 mixed arguments", 2.5, "<=", "ratio", N.FAST, N.FLOOR,
         (N.MIXED19,)),
    Goal("fast-dispatch miss against Triton's path (same launcher, no guard)", 1.05, "<=", "ratio", N.MISS,
         N.TRITON_PATH, (N.FAST_MISS,), "cold"),
    Goal("fast dispatch on a call it cannot key (host tensor descriptors) against Triton's path", 1.05, "<=",
         "ratio", N.FAST, N.OURS_JIT, (N.TENSORDESC, N.TENSORDESC_FRESH)),
    Goal("bundle `k[grid]` against Triton's `kernel[grid]`", 0.5, "<=", "ratio", N.BUNDLE, N.STOCK_JIT),
    Goal("`kernel[grid]` with launcher installed against stock (reported; Triton's dispatch dominates)",
         math.nan, "", "ratio", N.OURS_JIT, N.STOCK_JIT),
    Goal("startup to first launches of 20 kernels: Triton's path against the bundle's (speed-up)", 10.0, ">=",
         "ratio", N.STARTUP_TRITON, N.STARTUP_BUNDLE, (N.STARTUP,), "startup"),
    Goal("launcher for a new signature, construction + first launch, ours against stock", 1.0, "<=", "ratio",
         N.OURS, N.STOCK, (N.COLD_NEW,), "cold"),
    Goal("launcher for a kernel of a shape seen before under another name, µs", 10.0, "<=", "value", N.OURS, "",
         (N.COLD_SHAPE,), "cold"),
    Goal("module-cache hit against cuModuleLoadData", 0.05, "<=", "ratio", N.MODULE_HIT, N.MODULE_LOAD,
         (N.COLD_MODULE,), "cold"),
    Goal("decode step: guard against stock eager", 0.30, "<=", "ratio", N.FAST, N.STOCK_JIT, (N.DECODE,), "decode"),
    Goal("decode step: bundle against stock eager (reported)", math.nan, "", "ratio", N.BUNDLE, N.STOCK_JIT,
         (N.DECODE,), "decode"),
    Goal("decode step: CUDA graph replay against stock eager (reported)", math.nan, "", "ratio", N.GRAPH,
         N.STOCK_JIT, (N.DECODE,), "decode"),
    Goal("decode step: the step's C floor against stock eager (reported: what the goal above leaves)", math.nan,
         "", "ratio", N.FLOOR, N.STOCK_JIT, (N.DECODE,), "decode"),
    Goal("decode step: guard against the step's C floor (reported)", math.nan, "", "ratio", N.FAST, N.FLOOR,
         (N.DECODE,), "decode"),
]


@dataclass
class GoalRow:
    group: str
    summary: dict
    verdict: str  # "met", "not met", "reported"
    invalid: str = ""


def _verdict(goal: Goal, value: float) -> str:
    if not goal.op or math.isnan(goal.target):
        return "reported"
    ok = value <= goal.target if goal.op == "<=" else value >= goal.target
    return "met" if ok else "not met"


def evaluate(goal: Goal, run: Run) -> tuple:
    """(rows, why_none): one row per group where the goal's paths were measured, and when there
    is none, why (the reason a path was skipped, where the suite recorded one)."""
    groups = [run.group(n, goal.kind) for n in goal.groups] if goal.groups else run.of_kind(goal.kind)
    rows, reasons = [], []
    for g in groups:
        if g is None:
            continue
        needed = [goal.num] + ([goal.den] if goal.den else []) + ([N.FLOOR] if goal.how == "share" else [])
        absent = [p for p in needed if p not in g.paths]
        if absent:
            reasons += [f"{p}: {g.skipped[p]}" for p in absent if p in g.skipped]
            continue
        if goal.how == "value":
            values = g.paths[goal.num]
        elif goal.how == "share":
            values = per_round_overhead_share(g.paths[goal.num], g.paths[N.FLOOR], g.paths[goal.den])
        else:
            values = per_round_ratio(g.paths[goal.num], g.paths[goal.den])
        s = summary(values)
        if not s["n"]:
            continue
        why = "; ".join(f"{p}: {g.invalid[p]}" for p in needed if p in g.invalid)
        rows.append(GoalRow(g.name, s, _verdict(goal, s["median"]), why))
    if rows:
        return rows, ""
    unique = list(dict.fromkeys(reasons))
    return rows, ("; ".join(unique[:2]) if unique else "not in this run")
