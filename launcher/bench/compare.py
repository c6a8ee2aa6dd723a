"""Two runs of the suite side by side, and whether every ratio agrees within a tolerance.

    python -m launcher bench --compare A.json B.json [--tolerance 0.10] [--hot-only]

Compared: every ratio the report is built from (each hot path against the floor of its round,
ours against stock path by path, the declared ones, and the cold and startup ratios), by its
median over rounds. A ratio agrees when B's median is within ±tolerance of A's
(|B/A - 1| <= tolerance). Exit status: 0 when all agree, 1 when any differs or is in one run
only, 2 when a file cannot be read. Absolute µs are shown for the floor only, as context.
"""
from __future__ import annotations

import sys

from launcher.bench import names as N
from launcher.bench import results as R
from launcher.bench.report import _num, _table, cell, env_line
from launcher.bench.stats import summary

EXIT_AGREE, EXIT_DIFFER, EXIT_BAD_INPUT = 0, 1, 2


def compare_runs(a: R.Run, b: R.Run, tolerance: float = 0.10, hot_only: bool = False) -> tuple:
    """(markdown text, number of ratios that differ or are missing, number compared)."""
    ra = {r.key: r for r in R.ratios(a)}
    rb = {r.key: r for r in R.ratios(b)}
    keys = list(ra) + [k for k in rb if k not in ra]
    if hot_only:
        keys = [k for k in keys if k[0] == "hot"]
    rows, bad = [], []
    for key in keys:
        x, y = ra.get(key), rb.get(key)
        sx, sy = (x.summary if x else {}), (y.summary if y else {})
        if not sx.get("n") or not sy.get("n"):
            verdict = "only in " + ("B" if not sx.get("n") else "A")
            change = "–"
            bad.append(key)
        else:
            rel = sy["median"] / sx["median"] - 1.0 if sx["median"] else float("inf")
            change = f"{rel * 100:+.1f} %"
            verdict = "ok" if abs(rel) <= tolerance + 1e-12 else f"DIFFERS (>{tolerance * 100:.0f} %)"
            if verdict != "ok":
                bad.append(key)
        kind, group, label = key
        rows.append([group, label, cell(sx), cell(sy), change, verdict])
    lines = [f"A: {a.source}: {env_line(a.env)}", "", f"B: {b.source}: {env_line(b.env)}", ""]
    for field in ("triton", "gpu", "torch"):
        if a.env.get(field) != b.env.get(field):
            lines += [f"Note: the runs differ in {field} ({a.env.get(field)} vs {b.env.get(field)}).", ""]
    floors = []
    for ga in a.of_kind("hot"):
        gb = b.group(ga.name, "hot")
        if gb and N.FLOOR in ga.paths and N.FLOOR in gb.paths:
            fa, fb = summary(ga.paths[N.FLOOR])["median"], summary(gb.paths[N.FLOOR])["median"]
            floors.append(f"{ga.name} {_num(fa)} → {_num(fb)}")
    if floors:
        lines += ["C floor, µs per launch, A → B (context, not compared): " + "; ".join(floors) + ".", ""]
    lines += _table(["group", "ratio", "A median [p25–p75]", "B median [p25–p75]", "B/A − 1", "verdict"], rows)
    lines += ["", f"{len(keys)} ratios compared, tolerance ±{tolerance * 100:.0f} %: "
              + ("all agree." if not bad else f"{len(bad)} differ or are missing.")]
    changes = sorted(((abs(rb[k].summary["median"] / ra[k].summary["median"] - 1), k) for k in keys
                      if k in ra and k in rb and ra[k].summary.get("n") and rb[k].summary.get("n")
                      and ra[k].summary["median"]), reverse=True)
    if changes:
        lines.append("Largest changes: " + "; ".join(f"{k[1]}, {k[2]}: {c * 100:.1f} %" for c, k in changes[:5]) + ".")
    return "\n".join(lines) + "\n", len(bad), len(keys)


def main(a_path, b_path, tolerance=0.10, hot_only=False, out=None) -> int:
    try:
        a, b = R.load(a_path), R.load(b_path)
    except R.BenchFileError as e:
        print(e, file=sys.stderr)
        return EXIT_BAD_INPUT
    text, n_bad, n = compare_runs(a, b, tolerance, hot_only)
    print(text, end="")
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text)
    if n == 0:
        print("no ratio to compare", file=sys.stderr)
        return EXIT_DIFFER
    return EXIT_AGREE if n_bad == 0 else EXIT_DIFFER
