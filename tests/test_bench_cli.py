"""`python -m launcher bench` on the CPU: it refuses to pretend, and `import launcher` stays light.

Where nothing can be measured (no GPU, no torch, no pytest-benchmark) the command must exit
non-zero with its reason, so that a script cannot take it for a run. The GPU is hidden with
CUDA_VISIBLE_DEVICES="" so that these tests say the same on the H200."""
import os
import subprocess
import sys
import types

import pytest

import test_bench_synthetic as S
from launcher.bench import cli
from launcher.bench import names as N

NO_GPU = dict(os.environ, CUDA_VISIBLE_DEVICES="")


def _run(args, cwd, env=NO_GPU):
    return subprocess.run([sys.executable, "-m", "launcher", "bench", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_without_a_gpu_the_command_measures_nothing_and_exits_non_zero(tmp_path):
    proc = _run(["--out", str(tmp_path / "out")], tmp_path)
    assert proc.returncode == cli.EXIT_NOTHING_MEASURED, proc.stdout + proc.stderr
    assert "nothing measured" in proc.stderr
    assert not (tmp_path / "out" / "bench.json").exists()


def test_preflight_names_what_is_missing(monkeypatch):
    real = cli.importlib.util.find_spec
    monkeypatch.setattr(cli.importlib.util, "find_spec",
                        lambda name: None if name == "pytest_benchmark" else real(name) or object())
    why = cli.preflight()
    assert why and "pytest-benchmark" in why and "nothing measured" in why


def test_preflight_refuses_torch_without_a_gpu(monkeypatch):
    monkeypatch.setattr(cli.importlib.util, "find_spec", lambda name: object())
    fake = types.ModuleType("torch")
    fake.cuda = types.SimpleNamespace(is_available=lambda: False)
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert "torch.cuda.is_available() is False" in cli.preflight()


def test_a_preflight_failure_is_a_non_zero_exit(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(cli, "preflight", lambda: "python -m launcher bench: nothing measured: test")
    args = types.SimpleNamespace(out=str(tmp_path), compare=None, report=None)
    assert cli.main(args) == cli.EXIT_NOTHING_MEASURED
    assert "nothing measured: test" in capsys.readouterr().err


def test_import_launcher_loads_neither_torch_nor_the_benchmarks():
    code = ("import sys, launcher, launcher.__main__; "
            "bad = [m for m in ('torch', 'launcher.bench', 'pytest_benchmark', 'triton.testing', 'matplotlib')"
            " if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_compare_and_report_need_no_gpu_and_no_torch(tmp_path):
    a = S.write(tmp_path / "a.json", S.make(seed=1))
    b = S.write(tmp_path / "b.json", S.make(seed=2, scale=1.25))
    c = S.write(tmp_path / "c.json", S.make(seed=2, slower={(N.VECTOR_ADD, N.BIND): 1.3}))
    proc = _run(["--compare", a, b, "--out", str(tmp_path / "cmp")], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all agree" in proc.stdout and (tmp_path / "cmp" / "compare.md").exists()
    proc = _run(["--compare", a, c], tmp_path)
    assert proc.returncode == 1 and "DIFFERS" in proc.stdout
    proc = _run(["--compare", a, str(tmp_path / "none.json")], tmp_path)
    assert proc.returncode == 2 and "cannot read" in proc.stderr
    proc = _run(["--report", a, "--out", str(tmp_path / "rep")], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "rep" / "bench.md").read_text(encoding="utf-8").startswith("# Launch latency")


def test_the_suite_module_skips_itself_without_a_gpu(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pytest", str(cli.SUITE), "-q", "-rs", "-p", "no:cacheprovider",
                           "-c", os.devnull, "--rootdir", str(cli.SUITE.parent)],
                          cwd=tmp_path, env=NO_GPU, capture_output=True, text=True, timeout=300)
    assert "need an NVIDIA GPU and torch" in proc.stdout, proc.stdout + proc.stderr
    assert "1 skipped" in proc.stdout and proc.returncode in (0, 5)


def test_the_suite_ships_inside_the_package():
    for name in ("suite.py", "startup_child.py", "startup_kernels.py", "kernels.py", "cases.py"):
        assert (cli.SUITE.parent / name).is_file()
    tomllib = pytest.importorskip("tomllib")
    root = cli.SUITE.parents[2]
    if not (root / "pyproject.toml").exists():
        pytest.skip("not a checkout")
    packages = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]
    if not isinstance(packages, list):
        pytest.skip("packages are found by setuptools, not listed")
    assert "launcher.bench" in packages


def _args(out, **kw):
    fields = dict(out=str(out), compare=None, report=None, rounds=None, batch=None, select=None, pytest_args=[])
    return types.SimpleNamespace(**dict(fields, **kw))


def test_the_pytest_command_line_is_valid_and_a_gpu_less_run_reports_nothing(monkeypatch, tmp_path, capsys):
    """Past the preflight: pytest accepts every option the command passes, and a suite that
    skips itself leaves no results, which is still 'nothing measured', not success."""
    monkeypatch.setattr(cli, "preflight", lambda: None)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert cli.run_suite(_args(tmp_path / "out")) == cli.EXIT_NOTHING_MEASURED
    assert "nothing measured" in capsys.readouterr().err


FAKE_SUITE = '''
import json
def test_fake(benchmark):
    data = json.load(open({path!r}))
    benchmark.extra_info.update(data["benchmarks"][0]["extra_info"])
    benchmark.pedantic(lambda: None, rounds=2)
'''


def test_a_run_writes_json_markdown_and_chart(monkeypatch, tmp_path):
    """The command end to end on a stand-in suite that stores synthetic figures the way the
    real one does (the real one needs a GPU)."""
    pytest.importorskip("matplotlib")
    data = S.write(tmp_path / "synthetic.json", S.make(rounds=5))
    fake = tmp_path / "fake_suite.py"
    fake.write_text(FAKE_SUITE.format(path=data), encoding="utf-8")
    monkeypatch.setattr(cli, "preflight", lambda: None)
    monkeypatch.setattr(cli, "SUITE", fake)
    out = tmp_path / "out"
    (out).mkdir()
    (out / "bench.json").write_text("stale", encoding="utf-8")
    assert cli.run_suite(_args(out, rounds=7)) == cli.EXIT_OK
    for name in ("bench.json", "bench.md", "bench.png"):
        assert (out / name).stat().st_size > 0
    assert "Against the C floor" in (out / "bench.md").read_text(encoding="utf-8")


def test_a_failing_suite_is_a_non_zero_exit_even_with_results(monkeypatch, tmp_path):
    data = S.write(tmp_path / "synthetic.json", S.make(rounds=3))
    fake = tmp_path / "fake_suite.py"
    fake.write_text(FAKE_SUITE.format(path=data) + "\ndef test_broken():\n    assert False\n", encoding="utf-8")
    monkeypatch.setattr(cli, "preflight", lambda: None)
    monkeypatch.setattr(cli, "SUITE", fake)
    assert cli.run_suite(_args(tmp_path / "out")) == cli.EXIT_FAILED
    assert (tmp_path / "out" / "bench.md").exists()


def test_cpu_choice_auto_calibrates_every_allowed_cpu_and_leaves_this_process_as_it_was():
    """--cpu auto: the suite's child is pinned to the fastest CPU at a Python loop; the command's
    own process keeps its affinity (the calibration moves it from CPU to CPU)."""
    from launcher.bench import cpu

    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no sched_setaffinity on this platform")
    before = os.sched_getaffinity(0)
    choice = cpu.choose("auto")
    assert os.sched_getaffinity(0) == before
    assert {int(c) for c in choice["calibration"]} == before and choice["cpu"] in before
    assert choice["calibration"][str(choice["cpu"])] == min(choice["calibration"].values())
    out = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                         capture_output=True, text=True, preexec_fn=cpu.pinner(choice), check=True)
    assert out.stdout.strip() == f"[{choice['cpu']}]"
    assert f"at the start CPU {choice['cpu']}, the fastest of {len(before)}" in cpu.describe(choice)


def test_cpu_choice_all_and_a_number_and_a_cpu_not_allowed():
    from launcher.bench import cpu

    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no sched_setaffinity on this platform")
    assert cpu.choose("all") == {"how": "all", "cpu": None} and cpu.pinner({"cpu": None}) is None
    assert "Not pinned" in cpu.describe(cpu.choose("all"))
    first = min(os.sched_getaffinity(0))
    assert cpu.choose(str(first)) == {"how": "given", "cpu": first}
    with pytest.raises(ValueError, match="may run on CPUs"):
        cpu.choose(str(max(os.sched_getaffinity(0)) + 1000))
    with pytest.raises(ValueError, match="auto, all or a CPU number"):
        cpu.choose("fastest")


def test_a_bad_cpu_is_a_bad_input_exit_before_anything_runs(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cli, "preflight", lambda: None)
    assert cli.run_suite(_args(tmp_path / "out", cpu="nope")) == cli.EXIT_BAD_INPUT
    assert "--cpu takes auto, all or a CPU number" in capsys.readouterr().err


def test_the_settler_moves_to_the_fastest_cpu_only_when_its_own_is_slower(monkeypatch):
    """Before each round the suite times every CPU the command could use and moves where its own
    became more than 10% slower than the fastest; a run pinned by hand or not at all never moves."""
    from launcher.bench import cpu

    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no sched_setaffinity on this platform")
    allowed = sorted(os.sched_getaffinity(0))
    pinned = []
    monkeypatch.setattr(cpu.os, "sched_setaffinity", lambda pid, cpus: pinned.append(set(cpus)))
    monkeypatch.setattr(cpu.os, "sched_getaffinity", lambda pid: pinned[-1] if pinned else {0})
    speeds = {0: 100.0, 1: 95.0, 2: 50.0}
    monkeypatch.setattr(cpu, "calibrate", lambda c, reps=5: speeds[c])
    s = cpu.Settler({"how": "auto", "cpu": 0, "calibration": {"0": 1, "1": 1, "2": 1}})
    assert s() is True and pinned[-1] == {2}  # 0 is twice as slow as 2
    speeds[0], speeds[2] = 45.0, 48.0
    assert s() is False and pinned[-1] == {2}  # within 10% of the fastest: stays
    speeds[2] = 80.0
    assert s() is True and pinned[-1] == {0}
    assert s.note() == "rounds ran on CPUs 0, 2; moved to a less busy one before 2 rounds"
    for record in ({"how": "given", "cpu": 1}, {"how": "all", "cpu": None}, None):
        assert cpu.Settler(record)() is False and cpu.Settler(record).note() is None
    assert allowed  # the real affinity was never touched (patched above)
