"""The benchmark report and compare mode on synthetic suite JSON (CPU; no launch is measured).

The figures are made up (tests/test_bench_synthetic.py): these test the reading, the per-round ratio
maths, the report and the ±10 % check, never a launch cost."""
import json
import math

import pytest

import test_bench_synthetic as S
from launcher.bench import compare, report, results
from launcher.bench import names as N


def test_results_read_every_group_and_the_environment():
    run = results.from_data(S.make())
    assert [g.name for g in run.of_kind("hot")] == S.KERNELS
    assert {g.name for g in run.of_kind("cold")} == {N.COLD_NEW, N.COLD_SHAPE}
    assert run.env["triton"] == "3.6.0" and run.env["gpu"] == "NVIDIA H200"
    g = run.group(N.VECTOR_ADD, "hot")
    assert len(g.paths[N.FLOOR]) == 40 and g.ops_per_batch == 500


def test_ratios_are_per_round_against_the_floor_and_ours_against_stock():
    data = S.make()
    run = results.from_data(data)
    by_key = {r.key: r for r in results.ratios(run)}
    r = by_key[("hot", N.VECTOR_ADD, f"{N.BIND} / {N.FLOOR}")]
    info = next(b["extra_info"] for b in data["benchmarks"] if b["extra_info"]["group"] == N.VECTOR_ADD)
    expected = [a / b for a, b in zip(info["paths"][N.BIND], info["paths"][N.FLOOR])]
    assert r.values == pytest.approx(expected)
    assert r.summary["median"] == pytest.approx(3.6 / 3.2, rel=0.03)
    twin = by_key[("hot", N.VECTOR_ADD, f"{N.OURS_JIT} / {N.STOCK_JIT}")]
    assert twin.kind == "ours/stock" and twin.summary["median"] == pytest.approx(11.1 / 11.6, rel=0.03)
    assert ("hot", N.VECTOR_ADD, f"{N.FLOOR} / {N.FLOOR}") not in by_key
    assert not any(k[2].startswith(N.BIND + " / stock") for k in by_key)  # bind() has no stock twin
    assert by_key[("cold", N.COLD_NEW, f"{N.OURS} / {N.STOCK}")].summary["median"] == pytest.approx(354 / 74.5, rel=0.05)
    # a declared ratio whose paths were not measured is left out
    assert not any(N.BUNDLE in k[2] for k in by_key)


def test_a_drifting_host_leaves_the_ratios_where_they_were():
    slow = results.from_data(S.make(seed=3, scale=1.3))
    fast = results.from_data(S.make(seed=3, scale=1.0))
    a = {r.key: r.summary["median"] for r in results.ratios(slow)}
    b = {r.key: r.summary["median"] for r in results.ratios(fast)}
    assert a.keys() == b.keys() and all(a[k] == pytest.approx(b[k]) for k in a)
    assert slow.group(N.VECTOR_ADD).paths[N.FLOOR][0] == pytest.approx(1.3 * fast.group(N.VECTOR_ADD).paths[N.FLOOR][0])


def test_goals_are_reported_with_verdicts_and_reasons():
    run = results.from_data(S.make())
    goals = {g.text: results.evaluate(g, run) for g in results.GOALS}
    bind_rows, _ = goals["`bind()` against the floor"]
    assert {row.group for row in bind_rows} == set(S.KERNELS) and {row.verdict for row in bind_rows} == {"met"}
    share_rows, _ = goals["launcher object, time above the floor, as a share of stock's (hooks None)"]
    # (4.3 - 3.2) / (4.8 - 3.2) = 0.69 > 0.5
    assert share_rows[0].summary["median"] == pytest.approx(1.1 / 1.6, rel=0.1)
    assert share_rows[0].verdict == "not met"
    rows, why = goals["startup to first launches of 20 kernels: Triton's path against the bundle's (speed-up)"]
    assert rows == [] and "launcher.export does not exist yet" in why
    rows, why = goals["launcher for a kernel of a shape seen before under another name, µs"]
    assert rows[0].verdict == "met" and rows[0].summary["median"] == pytest.approx(8.0, rel=0.05)
    rows, _ = goals["`kernel[grid]` with launcher installed against stock (reported; Triton's dispatch dominates)"]
    assert rows and {row.verdict for row in rows} == {"reported"}


def test_markdown_report_shows_ratios_with_spread_goals_and_skips():
    data = S.make()
    data["benchmarks"][0]["extra_info"]["invalid"] = {N.OURS_JIT: "made up for the test"}
    md = report.markdown(results.from_data(data))
    for heading in ("## Against the C floor", "## Ours against stock", "## Goals", "## µs per launch",
                    "## Cold paths", "## Startup", "## Notes"):
        assert heading in md
    assert "Triton 3.6.0 · torch 2.11.0+cu130 · NVIDIA H200 · driver 580.159" in md
    assert "40 interleaved rounds" in md
    row = next(line for line in md.splitlines() if line.startswith(f"| {N.BIND} |"))
    assert row.count("[") == len(S.KERNELS)  # median [p25–p75] in every kernel's cell
    assert "no host tensor descriptors" in md and "launcher.export does not exist yet" in md
    assert "⚠ made up for the test" in md
    assert "ovh" not in md  # the overhead-over-overhead figure is only a goal, not a headline


def test_the_header_says_which_cpu_ran_the_suite():
    data = S.make()
    for b in data["benchmarks"]:
        b["extra_info"]["env"]["cpu_choice"] = {"how": "auto", "cpu": 4, "calibration": {"0": 180.0, "4": 95.0,
                                                                                           "8": 170.0}}
    md = report.markdown(results.from_data(data))
    assert "at the start CPU 4, the fastest of 3 at a pure-Python calibration loop (95 µs; median of all 170 µs, " \
           "slowest 180 µs)" in md and "every path of a round runs on the same CPU" in md


def test_chart_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "bench.png"
    report.chart(results.from_data(S.make()), png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_main_writes_markdown(tmp_path, capsys):
    path = S.write(tmp_path / "bench.json", S.make())
    assert report.main([path, "--markdown", str(tmp_path / "bench.md")]) == 0
    assert (tmp_path / "bench.md").read_text(encoding="utf-8").startswith("# Launch latency")


def test_compare_two_runs_that_agree_exits_0_even_when_the_host_drifted(tmp_path, capsys):
    a = S.write(tmp_path / "a.json", S.make(seed=1))
    b = S.write(tmp_path / "b.json", S.make(seed=2, scale=1.3))
    assert compare.main(a, b) == compare.EXIT_AGREE
    out = capsys.readouterr().out
    assert "all agree" in out and "| A median [p25–p75] | B median [p25–p75] |" in out
    assert "C floor, µs per launch, A → B" in out


def test_compare_flags_one_ratio_that_moved_more_than_ten_percent(tmp_path, capsys):
    a = S.write(tmp_path / "a.json", S.make(seed=1))
    b = S.write(tmp_path / "b.json", S.make(seed=2, slower={(N.MIXED16, N.OURS_LAUNCHER_NONE): 1.2}))
    assert compare.main(a, b) == compare.EXIT_DIFFER
    out = capsys.readouterr().out
    differs = [line for line in out.splitlines() if "DIFFERS" in line]
    assert differs and all(line.startswith(f"| {N.MIXED16} | {N.OURS_LAUNCHER_NONE} /") for line in differs)
    assert "Largest changes: 16 mixed, ours.launcher (hooks None)" in out
    # with a looser tolerance the same two runs agree
    assert compare.main(a, b, tolerance=0.5) == compare.EXIT_AGREE


def test_compare_counts_a_ratio_measured_in_one_run_only(tmp_path, capsys):
    a = S.write(tmp_path / "a.json", S.make(seed=1))
    b = S.write(tmp_path / "b.json", S.make(seed=1, drop={(N.VECTOR_ADD, N.CUDA_CORE)}))
    assert compare.main(a, b) == compare.EXIT_DIFFER
    assert "only in A" in capsys.readouterr().out


def test_compare_hot_only_leaves_out_cold_and_startup(tmp_path):
    ra = results.from_data(S.make(seed=1))
    rb = results.from_data(S.make(seed=2))
    text, _, n = compare.compare_runs(ra, rb, hot_only=True)
    assert N.COLD_NEW not in text and n == sum(1 for r in results.ratios(ra) if r.group_kind == "hot")


def test_compare_bad_input_exits_2(tmp_path, capsys):
    good = S.write(tmp_path / "a.json", S.make())
    (tmp_path / "junk.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "other.json").write_text(json.dumps({"benchmarks": [{"name": "x", "extra_info": {}}]}))
    assert compare.main(good, str(tmp_path / "junk.json")) == compare.EXIT_BAD_INPUT
    assert compare.main(str(tmp_path / "other.json"), good) == compare.EXIT_BAD_INPUT
    assert compare.main(good, str(tmp_path / "missing.json")) == compare.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "cannot read it as JSON" in err and "no results of the launcher suite" in err


def test_a_newer_layout_is_refused():
    data = S.make()
    for b in data["benchmarks"]:
        b["extra_info"]["launcher_bench"] = 99
    with pytest.raises(results.BenchFileError, match="layout 99"):
        results.from_data(data)


def test_single_round_runs_are_reported_without_spread():
    """pytest --benchmark-disable runs each test once: one round, no spread to show."""
    run = results.from_data(S.make(rounds=1))
    r = next(r for r in results.ratios(run) if r.numerator == N.BIND)
    assert r.summary["n"] == 1 and report.cell(r.summary).count("[") == 0
    assert not math.isnan(r.summary["median"])
