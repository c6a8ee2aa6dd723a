"""The suite's decode step on the CPU: its eight launches, its four kernels compiled for sm_90 with
the step's arguments (packed by our launcher, dry run), the pure-Python reference against an
independent numpy one, a bundle of the four kernels, and the report's decode section and goals
from synthetic figures. The step is timed on a GPU only (launcher/bench/suite.py,
test_decode_step)."""
import math
import struct

import pytest

import launcher
import test_bench_synthetic as S
from launcher.bench import compare, report, results
from launcher.bench import decode as D
from launcher.bench import kernels as K
from launcher.bench import names as N
from launcher.bench.features import bundle_kernel
from triton_compile import compile_cpu

BASE = (1, 1, 1, 0, 0, (4, 1, 0), None, None, None)  # grid, stream, function, metadata, hooks


class FakeTensor:
    """A pointer argument: distinct, 16-byte aligned addresses."""

    count = 0

    def __init__(self, name):
        FakeTensor.count += 1
        self.name = name
        self.address = 0x7F0000000000 + 0x100000 * FakeTensor.count

    def data_ptr(self):
        return self.address


def fake_plan():
    return D.launches({n: FakeTensor(n) for n in D.BUFFERS})


def _type(v):
    if hasattr(v, "data_ptr"):
        return "*fp32"
    return "fp32" if isinstance(v, float) else "i32"


def _bytes(v):
    if hasattr(v, "data_ptr"):
        return struct.pack("<Q", v.data_ptr())
    return struct.pack("<f", v) if isinstance(v, float) else struct.pack("<i", v)


def _compiled(name, args, kw):
    fn = getattr(K, name)
    params = list(fn.arg_names) if hasattr(fn, "arg_names") else list(fn.fn.__code__.co_varnames)
    runtime = [p for p in params if p not in kw]
    assert len(runtime) == len(args)
    sig = tuple((p, _type(a)) for p, a in zip(runtime, args)) + tuple((k, "constexpr") for k in kw)
    return compile_cpu(fn, sig, tuple(kw.items()))


def test_a_step_is_the_four_kernels_twice_on_8x1024_fp32():
    plan = fake_plan()
    assert len(plan) == D.LAUNCHES_PER_STEP == 8
    assert [name for name, *_ in plan] == list(D.KERNELS) * 2 == ["rmsnorm", "axpby", "softmax", "silu_mul"] * 2
    assert (D.ROWS, D.COLS) == (8, 1024) and D.SHAPES["x"] == (8, 1024) and D.SHAPES["w"] == (1024,)
    for name, grid, args, kw in plan:
        # one program per row, or BLOCK elements per program: either way the grid covers 8x1024
        assert grid == (8,) and kw == {"BLOCK": 1024}
        assert not any(a == 1 for a in args if not hasattr(a, "data_ptr"))  # nothing Triton specialises away
    written = [args[2] for name, _, args, _ in plan if name != "softmax"] + \
              [args[1] for name, _, args, _ in plan if name == "softmax"]
    assert not any(t.name in D.INPUTS for t in written)  # inputs are only read: every step computes the same
    assert plan[-1][2][2].name == "y" and plan[4][2][0].name == "h3"  # the second four start where the first end


@pytest.mark.parametrize("index", range(4), ids=list(D.KERNELS))
def test_the_kernels_compile_for_sm90_and_the_step_arguments_pack(index):
    name, grid, args, kw = fake_plan()[index]
    ck = _compiled(name, args, kw)
    assert ck.name == name
    run = launcher.CudaLauncher(ck.src, ck.metadata)
    params = run.dry_run(*BASE, *args, *kw.values())  # every parameter, constexprs too, in order
    assert params[:-2] == [_bytes(a) for a in args]
    assert params[-2:] == [bytes(8), bytes(8)]


def test_a_bundle_of_the_four_kernels_names_each(tmp_path):
    plan = fake_plan()[:4]
    cks = [_compiled(name, args, kw) for name, _, args, kw in plan]
    launcher.export(tmp_path / "decode.bundle", *cks)
    with launcher.load_bundle(tmp_path / "decode.bundle") as bundle:
        for name in D.KERNELS:
            assert bundle_kernel(bundle, name).name == f"{K.__name__}.{name}"


def _numpy_step(np, x, w):
    """The step as numpy computes it in float64, written independently of decode.PYTHON."""
    x, w = np.asarray(x, dtype=np.float64).reshape(D.ROWS, D.COLS), np.asarray(w, dtype=np.float64)

    def four(src):
        h0 = src / np.sqrt((src * src).mean(axis=1, keepdims=True) + D.EPS) * w
        h1 = D.A * h0 + D.B * src
        e = np.exp(h1 - h1.max(axis=1, keepdims=True))
        h2 = e / e.sum(axis=1, keepdims=True)
        return h0, h1, h2, h1 / (1 + np.exp(-h1)) * h2

    _, _, _, h3 = four(x)
    h0, h1, h2, y = four(h3)
    return {"h0": h0, "h1": h1, "h2": h2, "h3": h3, "y": y}


def test_the_reference_step_agrees_with_numpy_and_writes_every_element():
    np = pytest.importorskip("numpy")
    data = D.inputs()
    assert all(struct.unpack("<f", struct.pack("<f", v))[0] == v for v in data["x"][:64] + data["w"][:64])
    ref = D.reference(data)
    assert ref["x"] == data["x"] and ref["w"] == data["w"]  # the inputs are only read
    want = _numpy_step(np, data["x"], data["w"])
    for n in D.OUTPUTS:
        got = np.asarray(ref[n]).reshape(D.ROWS, D.COLS)
        assert not np.isnan(got).any(), f"{n}: some element was never written"
        np.testing.assert_allclose(got, want[n], rtol=1e-12, atol=1e-15 * np.abs(want[n]).max())
    h2 = np.asarray(ref["h2"]).reshape(D.ROWS, D.COLS)
    np.testing.assert_allclose(h2.sum(axis=1), 1.0, rtol=1e-12)  # softmax rows
    assert D.reference(data)["y"] == ref["y"]  # deterministic: a second step computes the same


def test_the_python_kernels_follow_the_grid():
    """A program writes its own row (or its own BLOCK): a grid of one leaves the rest unwritten."""
    n = D.N
    out = [math.nan] * n
    D.PYTHON["axpby"](0, D.BLOCK, [1.0] * n, [2.0] * n, out, D.A, D.B, n)
    assert out[:D.BLOCK] == [D.A + 2 * D.B] * D.BLOCK and all(math.isnan(v) for v in out[D.BLOCK:])
    out = [math.nan] * n
    D.PYTHON["softmax"](3, D.BLOCK, [0.0] * n, out, D.COLS, D.COLS)
    assert out[3 * D.COLS: 4 * D.COLS] == [1.0 / D.COLS] * D.COLS and math.isnan(out[0]) and math.isnan(out[-1])
    out = [math.nan] * D.COLS
    D.PYTHON["rmsnorm"](0, D.BLOCK, [2.0] * D.COLS, [1.5] * D.COLS, out, D.COLS, D.COLS, 0.0)
    assert out == [1.5] * D.COLS  # x / rms(x) * w with rms = 2
    out = [math.nan] * 2
    D.PYTHON["silu_mul"](0, D.BLOCK, [0.0, 30.0], [5.0, 2.0], out, 2)
    assert out[0] == 0.0 and out[1] == pytest.approx(60.0)


# ---- the report: the decode section and its goals, from synthetic figures ----
def _run(**kw):
    data = S.make()
    data["benchmarks"].append(S.decode_bench(**kw))
    return results.from_data(data)


def _goal(text):
    return next(g for g in results.GOALS if g.text == text)


GUARD = "decode step: guard against stock eager"
BUNDLE = "decode step: bundle against stock eager (reported)"
GRAPH = "decode step: CUDA graph replay against stock eager (reported)"
FLOOR = "decode step: the step's C floor against stock eager (reported: what the goal above leaves)"
ABOVE = "decode step: guard against the step's C floor (reported)"


def test_the_decode_goals_are_ratios_within_a_round_with_a_verdict():
    run = _run()
    rows, _ = results.evaluate(_goal(GUARD), run)
    assert [r.group for r in rows] == [N.DECODE]
    assert rows[0].summary["median"] == pytest.approx(0.25, rel=0.03) and rows[0].verdict == "met"
    g = run.group(N.DECODE, "decode")
    expected = sorted(a / b for a, b in zip(g.paths[N.FAST], g.paths[N.STOCK_JIT]))
    assert rows[0].summary["median"] == pytest.approx((expected[19] + expected[20]) / 2)
    rows, _ = results.evaluate(_goal(GUARD), _run(ratios={N.FAST: 0.4}))
    assert rows[0].verdict == "not met"
    for text, value in ((BUNDLE, 0.22), (GRAPH, 0.08), (FLOOR, 0.2), (ABOVE, 1.25)):
        rows, _ = results.evaluate(_goal(text), run)
        assert rows[0].verdict == "reported" and rows[0].summary["median"] == pytest.approx(value, rel=0.03)


def test_the_report_renders_the_decode_goal_rows_and_section():
    md = report.markdown(_run())
    goal = next(line for line in md.splitlines() if line.startswith(f"| {GUARD} |"))
    cells = [c.strip() for c in goal.strip("|").split("|")]
    assert cells[1] == "≤ 0.30" and cells[2].startswith("0.2") and "[" in cells[2] and cells[3] == "met"
    for text in (BUNDLE, GRAPH, FLOOR, ABOVE):
        row = next(line for line in md.splitlines() if line.startswith(f"| {text} |"))
        assert row.rstrip().endswith("| reported |")
    assert f"## Decode step\n\n{N.DECODE}. Method: 40 interleaved rounds" in md and "100 steps of 8 launches" in md
    section = md.split("## Decode step")[1].split("\n## ")[0]
    table = [line for line in section.splitlines() if line.startswith("| ")]
    assert table[0] == "| path | µs per step | × stock eager (same round) | × the step's C floor (same round) | what |"
    assert [line.split("|")[1].strip() for line in table[1:]] == N.DECODE_PATHS
    assert table[1].split("|")[3].strip() == "1"
    rows = {line.split("|")[1].strip(): line.split("|") for line in table[1:]}
    assert rows[N.FAST][4].strip().startswith("1.2") and rows[N.FLOOR][4].strip() == "1"
    graph = rows[N.GRAPH]
    assert graph[3].strip().startswith("0.08") and "[" in graph[3] and graph[4].strip() == "–" and "CUDAGraph" in graph[5]


def test_a_path_the_decode_step_skipped_is_reported_with_the_reason():
    run = _run(skipped={N.FAST: "launcher.install(fast_dispatch=...) does not exist yet"})
    rows, why = results.evaluate(_goal(GUARD), run)
    assert rows == [] and "does not exist yet" in why
    md = report.markdown(run)
    assert "not measured: " + N.FAST in md
    section = md.split("## Decode step")[1].split("\n## ")[0]
    assert N.FAST not in section


def test_the_decode_goal_reads_not_measured_without_the_test():
    rows, why = results.evaluate(_goal(GUARD), results.from_data(S.make()))
    assert rows == [] and why == "not in this run"


def test_compare_counts_the_decode_ratios_but_not_with_hot_only():
    a, b = _run(seed=1), _run(seed=2, ratios={N.FAST: 0.35})
    text, bad, n = compare.compare_runs(a, b)
    differs = [line for line in text.splitlines() if "DIFFERS" in line]
    assert [line.split("|")[2].strip() for line in differs] == [f"{N.FAST} / {N.STOCK_JIT}", f"{N.FAST} / {N.FLOOR}"]
    assert all(line.startswith(f"| {N.DECODE} |") for line in differs) and bad == 2
    text, bad, _ = compare.compare_runs(a, b, hot_only=True)
    assert N.DECODE not in text and bad == 0
