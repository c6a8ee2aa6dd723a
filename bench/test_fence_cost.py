"""Cost of the fence check against Triton's full compile of the same kernel (TTIR -> cubin, ptxas
included), on the CPU, same machine, same run.

Measure (the goal: the check under 5 % of the compile, for every kernel):

    PYTHONPATH=.:tests python -m pytest bench/test_fence_cost.py --benchmark-only -s

Each kernel's compile is timed (median of three, empty cache each time) and its check benchmarked; the
ratio goes to the benchmark's extra_info and to one printed line. It is a measurement, not a test:
nothing asserts a timing. docs/fence.md has the measured table.

Both sides are CPU time (the check: this process; the compile: this process and its ptxas), and each is
the fastest of its runs (three compiles, the benchmark's rounds of the check), so that other work on a
shared machine skews the ratio as little as it can; the median check and the wall time of the compile
are in extra_info too.

Without --benchmark-only (a plain ``pytest``, or ``--benchmark-disable``) the benchmark is skipped: it
compiles every kernel three more times, and the corpus tests already check the same kernels.
"""
import os
import resource
import sys
import time

import pytest
import triton

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import fence_corpus as fc  # noqa: E402
from fence_kernels import GPUTarget  # noqa: E402

from launcher.fence import check_kernel  # noqa: E402

BUDGET = 0.05
COMPILE_ROUNDS = 3
KERNELS = [(name, arch) for name in ("vector_add", "softmax", "layer_norm", "matmul", "matmul_pipelined",
                                     "matmul_tma", "persistent_matmul_tma", "fused_attention")
           for arch in fc.ARCHS] + [("attention_backward", 100)]


def _cpu_seconds() -> float:
    """CPU time of this process and of the children it waited for (ptxas)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def compile_seconds(kernel, arch, tmp_path, monkeypatch) -> tuple[float, float]:
    """Fastest (CPU, wall) time of compiling the kernel's TTIR to a cubin, with an empty cache each time."""
    ttir = tmp_path / f"{kernel.name}.ttir"
    ttir.write_text(kernel.asm["ttir"])
    cpu, wall = [], []
    for round_ in range(COMPILE_ROUNDS):
        monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / f"cache{round_}"))
        start_cpu, start_wall = _cpu_seconds(), time.perf_counter()
        compiled = triton.compile(str(ttir), target=GPUTarget("cuda", arch, 32),
                                  options={"num_warps": kernel.metadata.num_warps,
                                           "num_stages": kernel.metadata.num_stages})
        cpu.append(_cpu_seconds() - start_cpu)
        wall.append(time.perf_counter() - start_wall)
        assert compiled.asm["cubin"]
    return min(cpu), min(wall)


@pytest.mark.benchmark(timer=time.process_time, max_time=2.0, min_rounds=10)
@pytest.mark.parametrize("name, arch", KERNELS, ids=[f"{n}-sm{a}" for n, a in KERNELS])
def test_fence_check_cost_relative_to_compile(name, arch, benchmark, request, tmp_path, monkeypatch):
    """Measures and reports the check's share of the compile time; asserts only the kernel's findings."""
    if not request.config.getoption("benchmark_only", False) or benchmark.disabled:
        pytest.skip("the fence-cost benchmark runs with --benchmark-only (it compiles each kernel 3 more times)")
    release = fc.installed_release()
    case = fc.CORPUS.get(name) or fc.BIG[name]
    kernel = fc.compiled_corpus(name, arch)
    ptx, ttgir = kernel.asm["ptx"], kernel.asm["ttgir"]
    compile_time, compile_wall = compile_seconds(kernel, arch, tmp_path, monkeypatch)
    report = benchmark(check_kernel, ptx=ptx, ttgir=ttgir)
    check_time = benchmark.stats.stats.min
    ratio = check_time / compile_time
    lines = ptx.count("\n")
    benchmark.extra_info.update(compile_cpu_s=compile_time, compile_wall_s=compile_wall, check_cpu_s=check_time,
                                check_median_cpu_s=benchmark.stats.stats.median, ratio=ratio,
                                within_goal=ratio < BUDGET, ptx_lines=lines, triton=triton.__version__)
    print(f"\n{triton.__version__} {name} sm_{arch}: compile {compile_time * 1e3:.0f} ms CPU "
          f"({compile_wall * 1e3:.0f} ms wall), check {check_time * 1e3:.1f} ms CPU, {ratio:.1%} "
          f"({lines} PTX lines){'' if ratio < BUDGET else ' OVER THE 5% GOAL'}")
    if release is not None:
        assert len(report.errors) == case.errors_for(release, arch), report.format_text()
    assert [f for f in report.findings if f.severity == "unknown"] == [], report.format_text()
