"""The Markdown report and the chart of one run of the suite.

    python -m launcher.bench.report bench.json [--markdown bench.md] [--png bench.png]

Headline figures are ratios taken within a round: each path against the C floor of the same
round, ours against stock, path by path, and each path of the decode step against stock eager's
step; each is the median over rounds with p25–p75 in brackets. µs are given as context only
(they drift between runs on a shared host).
"""
from __future__ import annotations

import argparse
import math
import sys

from launcher.bench import cpu
from launcher.bench import names as N
from launcher.bench import results as R
from launcher.bench.sites import WRITTEN
from launcher.bench.stats import summary


def _num(x: float, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.{digits}f}"


def cell(s: dict) -> str:
    """'1.37 [1.33–1.41]': the median with p25–p75."""
    if not s or not s.get("n"):
        return "–"
    if s["n"] == 1:
        return _num(s["median"])
    return f"{_num(s['median'])} [{_num(s['p25'])}–{_num(s['p75'])}]"


def cell_range(s: dict) -> str:
    """'1.37 [1.33–1.41], range 1.30–1.52': the median, p25–p75, and min–max."""
    if not s or s.get("n", 0) < 2:
        return cell(s)
    return f"{cell(s)}, range {_num(s['min'])}–{_num(s['max'])}"


def env_line(env: dict) -> str:
    parts = []
    for key, label in (("triton", "Triton"), ("torch", "torch"), ("gpu", None), ("driver", "driver"),
                       ("cuda_driver_api", "CUDA driver API"), ("python", "Python"), ("launcher", "launcher"),
                       ("cuda_bindings", "cuda-bindings"), ("cuda_core", "cuda-core")):
        v = env.get(key)
        if v:
            parts.append(f"{label} {v}" if label else str(v))
    return " · ".join(parts) if parts else "environment not recorded"


def _table(header, rows) -> list:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def _hot_matrix(hot, value_of, paths) -> list:
    rows = []
    for p in paths:
        cells = [value_of(g, p) for g in hot]
        if any(c != "–" for c in cells):
            rows.append([p] + cells)
    return _table(["path"] + [g.name for g in hot], rows)


def _decode_section(run: R.Run, by_key: dict) -> list:
    """The decode step: µs per step of every path, and each against stock eager's step of the
    same round (the group's declared ratios)."""
    lines = []
    for g in run.of_kind("decode"):
        base = N.DECODE_PATHS[0]
        per = g.info.get("launches_per_step", "?")
        lines += ["", "## Decode step", "",
                  f"{g.name}. Method: {g.rounds} interleaved rounds after {g.info.get('warmup_rounds', 0)} unrecorded ones; "
                  f"a round runs every path once: a synchronisation (untimed), then {g.ops_per_batch} steps of "
                  f"{per} launches (rmsnorm, axpby, softmax, silu-mul, twice), timed on the host; the order is "
                  "reversed every other round. Every path's outputs were checked identical to stock eager's "
                  "before timing. Ratios are taken within a round: median, with p25–p75 in brackets."
                  + _sites_note(g.info), ""]
        rows = []
        order = [p for p in N.DECODE_PATHS if p in g.paths] + [p for p in g.paths if p not in N.DECODE_PATHS]

        def ratio(p, to):
            if p == to:
                return "1"
            r = by_key.get((g.kind, g.name, f"{p} / {to}"))
            return "–" if r is None else cell(r.summary) + (" ⚠" if r.invalid else "")

        for p in order:
            rows.append([p, cell(summary(g.paths[p])), ratio(p, base), ratio(p, N.FLOOR), N.DECODE_TEXT.get(p, "")])
        lines += _table(["path", "µs per step", "× stock eager (same round)", "× the step's C floor (same round)",
                         "what"], rows)
    return lines


def _sites_note(info) -> str:
    """What the method says of how the paths were called (launcher.bench.sites), where the run says."""
    if info.get("call_sites") != WRITTEN:
        return ""
    return (" Every path is called as users write the call, `kernel[grid](x, y, out, n, BLOCK=1024)`: "
            "the arguments as names and the keywords spelt out, in a loop generated for the case "
            "(launcher.bench.sites), with no wrapper around the call.")


def markdown(run: R.Run) -> str:
    hot = run.of_kind("hot")
    env = run.env
    date = (env.get("date") or run.datetime or "?")[:10]
    title = f"# Launch latency: Triton {env.get('triton', '?')}, {env.get('gpu', '?')}, {date}"
    lines = [title, "", env_line(env), ""]
    pinned = cpu.describe(env.get("cpu_choice"))
    if pinned:
        lines += [pinned, ""]
    if hot:
        g0 = hot[0]
        lines += [f"Method: {g0.rounds} interleaved rounds per kernel after {g0.info.get('warmup_rounds', 0)} "
                  f"unrecorded ones. A round runs every path once: a synchronisation (untimed), then a batch of "
                  f"{g0.ops_per_batch} launches, timed on the host; the order is reversed every other round. "
                  "Each ratio is taken within a round and summarised over rounds: the median, with p25–p75 "
                  "in brackets. µs are host time per launch, for context: they drift between runs."
                  + _sites_note(g0.info), ""]
    all_ratios = R.ratios(run)
    by_key = {r.key: r for r in all_ratios}

    def ratio_cell(g, num, den):
        r = by_key.get(("hot", g.name, f"{num} / {den}"))
        if r is None:
            return "–"
        return cell(r.summary) + (" ⚠" if r.invalid else "")

    if hot:
        paths = sorted({p for g in hot for p in g.paths}, key=lambda p: (N.HOT_PATHS + [p]).index(p))
        lines += ["## Against the C floor (× floor of the same round)", ""]
        lines += _hot_matrix(hot, lambda g, p: "1" if p == N.FLOOR and p in g.paths else ratio_cell(g, p, N.FLOOR),
                             paths)
        lines += ["", "## Ours against stock, path by path (ours / stock of the same round)", ""]
        ours = [p for p in paths if N.twin(p) in paths]
        lines += _hot_matrix(hot, lambda g, p: ratio_cell(g, p, N.twin(p)), ours)
        lines += ["", "## Goals (reported, not asserted)", ""]
    rows = []
    for goal in R.GOALS:
        found, why = R.evaluate(goal, run)
        target = "–" if not goal.op else f"{goal.op.replace('<=', '≤').replace('>=', '≥')} {_num(goal.target)}"
        if not found:
            rows.append([goal.text, target, "not measured: " + why, "–"])
            continue
        named = len(goal.groups) != 1
        measured = "; ".join((f"{row.group}: " if named else "") + cell(row.summary)
                             + (f" ⚠ {row.invalid}" if row.invalid else "") for row in found)
        verdicts = {row.verdict for row in found}
        if len(verdicts) == 1:
            verdict = verdicts.pop()
        else:
            met = [row.group for row in found if row.verdict == "met"]
            verdict = f"met for {len(met)} of {len(found)}: {', '.join(met)}"
        rows.append([goal.text, target, measured, verdict])
    if not hot:
        lines += ["## Goals (reported, not asserted)", ""]
    lines += _table(["goal", "target", "measured: median [p25–p75]", "verdict"], rows)
    if hot:
        lines += ["", "## µs per launch (median [p25–p75] over rounds; context only)", ""]
        lines += _hot_matrix(hot, lambda g, p: cell(summary(g.paths[p])) if p in g.paths else "–", paths)
        declared = [r for r in all_ratios if r.kind == "declared" and r.group_kind == "hot"]
        if declared:
            lines += ["", "Other ratios within a round:", ""]
            lines += _table(["kernel", "ratio", "median [p25–p75], range"],
                            [[r.group, r.label, cell_range(r.summary)] for r in declared])
    lines += _decode_section(run, by_key)
    for kind, heading in (("cold", "Cold paths"), ("startup", "Startup")):
        groups = run.of_kind(kind)
        if not groups:
            continue
        lines += ["", f"## {heading}", ""]
        rows = []
        for g in groups:
            for p in g.path_order():
                rows.append([g.name, p, cell_range(summary(g.paths[p])), g.unit, str(len(g.paths[p]))])
            for r in all_ratios:
                if r.group == g.name and r.group_kind == kind:
                    rows.append([g.name, r.label, cell_range(r.summary), "ratio", str(r.summary.get("n", 0))])
        lines += _table(["case", "path or ratio", "median [p25–p75], range", "unit", "rounds"], rows)
    notes = []
    for g in run.groups:
        for p, why in g.skipped.items():
            notes.append(f"- {g.name}, {p}: skipped: {why}")
        for p, why in g.invalid.items():
            notes.append(f"- {g.name}, {p}: ⚠ {why}")
        for p, text in g.notes.items():
            notes.append(f"- {g.name}, {p}: {text}")
    if notes:
        lines += ["", "## Notes", ""] + notes
    if hot:
        lines += ["", "Paths:", ""] + [f"- `{p}`: {N.PATH_TEXT[p]}" for p in paths if p in N.PATH_TEXT]
    return "\n".join(lines) + "\n"


def chart(run: R.Run, png) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hot = run.of_kind("hot")
    by_key = {r.key: r for r in R.ratios(run)}
    paths = sorted({p for g in hot for p in g.paths if p != N.FLOOR},
                   key=lambda p: (N.HOT_PATHS + [p]).index(p))
    ours = [p for p in paths if N.twin(p) in paths]
    fig, axes = plt.subplots(2, 1, figsize=(max(11, 2.0 * len(hot) + 3), 9))
    colors = plt.get_cmap("tab20").colors
    for ax, chosen, denominator, title in (
            (axes[0], paths, lambda p: N.FLOOR, "× the C floor of the same round"),
            (axes[1], ours, N.twin, "ours / stock, same path, same round")):
        width = 0.85 / max(len(chosen), 1)
        for i, p in enumerate(chosen):
            med, lo, hi, xs = [], [], [], []
            for j, g in enumerate(hot):
                r = by_key.get(("hot", g.name, f"{p} / {denominator(p)}"))
                if r is None or not r.summary.get("n"):
                    continue
                s = r.summary
                xs.append(j + i * width)
                med.append(s["median"])
                lo.append(s["median"] - s["p25"])
                hi.append(s["p75"] - s["median"])
            if xs:
                ax.bar(xs, med, width, yerr=[lo, hi], label=p, color=colors[i % len(colors)], capsize=1.5)
        ax.axhline(1.0, color="black", linewidth=0.6)
        ax.set_xticks([j + 0.425 - width / 2 for j in range(len(hot))], [g.name for g in hot], fontsize=8)
        ax.set_title(title + " (median, p25–p75)", fontsize=10)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    env = run.env
    fig.suptitle(f"Launch latency, Triton {env.get('triton', '?')}, {env.get('gpu', '?')}", fontsize=11)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


def write(run: R.Run, markdown_path=None, png_path=None) -> str:
    md = markdown(run)
    if markdown_path:
        with open(markdown_path, "w", encoding="utf-8") as fh:
            fh.write(md)
    if png_path and run.of_kind("hot"):
        chart(run, png_path)
    return md


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m launcher.bench.report", description=__doc__.splitlines()[0])
    ap.add_argument("json")
    ap.add_argument("--markdown")
    ap.add_argument("--png")
    a = ap.parse_args(argv)
    try:
        run = R.load(a.json)
    except R.BenchFileError as e:
        print(e, file=sys.stderr)
        return 2
    print(write(run, a.markdown, a.png), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
