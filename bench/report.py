"""Turn a pytest-benchmark JSON of bench/test_launch_latency.py into a Markdown table and a chart.

    python bench/report.py bench.json --markdown report.md --png report.png

Per launch = median round time / launches per round. For each kernel, every path is shown in
µs, as a multiple of the C floor measured in the same run, and (for launchers) its overhead
above the floor as a share of the stock launcher's overhead on the same path.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys

PATH_ORDER = [
    "floor", "ours.bound",
    "ours.launcher (hooks-None)", "stock.launcher (hooks-None)",
    "ours.launcher (default-hooks)", "stock.launcher (default-hooks)",
    "ours.compiled (hooks-None)", "stock.compiled (hooks-None)",
    "ours.compiled (default-hooks)", "stock.compiled (default-hooks)",
    "ours.jit", "stock.jit", "inductor", "cuda.core", "cuda.bindings",
]
KERNEL_ORDER = ["1 arg", "vector add (5)", "16 mixed", "64 args", "nested tuple", "host tensordesc"]


def load(path):
    data = json.load(open(path))
    per_launch = collections.defaultdict(dict)  # kernel -> path -> µs
    extra = {}
    for b in data["benchmarks"]:
        info = b.get("extra_info", {})
        kernel, p = info.get("kernel"), info.get("path")
        if kernel is None:
            continue
        n = info.get("launches_per_round", 1)
        per_launch[kernel][p] = b["stats"]["median"] / n * 1e6
        if "ours_median_us" in info:
            extra["alternating"] = info
    return data, per_launch, extra


def stock_twin(path):
    return path.replace("ours.", "stock.", 1) if path.startswith("ours.") and path != "ours.bound" else None


def markdown(data, per_launch, extra) -> str:
    mach = data.get("machine_info", {})
    lines = [f"Measured {data.get('datetime', '?')[:10]} on {mach.get('node', '?')} "
             f"({mach.get('cpu', {}).get('brand_raw', '?')}); µs per launch (median), "
             "× = multiple of the C floor in the same run, ovh = overhead above the floor as a "
             "share of the stock launcher's on the same path.", ""]
    kernels = [k for k in KERNEL_ORDER if k in per_launch and "floor" in per_launch[k]]
    lines.append("| path | " + " | ".join(kernels) + " |")
    lines.append("|---" * (len(kernels) + 1) + "|")
    for p in PATH_ORDER:
        row = []
        for k in kernels:
            t = per_launch[k].get(p)
            if t is None:
                row.append("–")
                continue
            floor = per_launch[k]["floor"]
            cell = f"{t:.2f} ({t / floor:.2f}×)"
            twin = stock_twin(p)
            if twin and twin in per_launch[k] and per_launch[k][twin] > floor:
                cell += f" ovh {max(t - floor, 0) / (per_launch[k][twin] - floor):.2f}"
            row.append(cell)
        if any(c != "–" for c in row):
            lines.append(f"| {p} | " + " | ".join(row) + " |")
    cold = {k: v for k, v in per_launch.items() if k not in KERNEL_ORDER}
    alt = extra.get("alternating")
    if alt:
        lines += ["", f"`kernel[grid](...)`, vector add, 20 alternating batches: ours "
                  f"{alt['ours_median_us']:.2f} µs (sd {alt['ours_stdev_us']:.2f}), stock "
                  f"{alt['stock_median_us']:.2f} µs (sd {alt['stock_stdev_us']:.2f})."]
    for group in sorted(cold):
        lines += ["", f"Cold ({group}):"]
        for p, t in sorted(cold[group].items()):
            lines.append(f"- {p}: {t:.1f} µs")
    return "\n".join(lines) + "\n"


def chart(per_launch, png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kernels = [k for k in KERNEL_ORDER if k in per_launch]
    paths = [p for p in PATH_ORDER if any(p in per_launch[k] for k in kernels)]
    fig, ax = plt.subplots(figsize=(max(8, 2.2 * len(kernels)), 5))
    width = 0.8 / max(len(paths), 1)
    colors = plt.get_cmap("tab20").colors  # 20 distinct colours: one per path
    for i, p in enumerate(paths):
        xs = [j + i * width for j in range(len(kernels))]
        ax.bar(xs, [per_launch[k].get(p, 0) for k in kernels], width, label=p, color=colors[i % len(colors)])
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(kernels))], kernels)
    ax.set_ylabel("host µs per launch (median)")
    ax.set_title("Launch latency by path")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(png, dpi=120)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json")
    ap.add_argument("--markdown")
    ap.add_argument("--png")
    a = ap.parse_args(argv)
    data, per_launch, extra = load(a.json)
    if not per_launch:
        print("no launch benchmarks in", a.json, file=sys.stderr)
        return 1
    md = markdown(data, per_launch, extra)
    print(md)
    if a.markdown:
        open(a.markdown, "w").write(md)
    if a.png:
        chart(per_launch, a.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
