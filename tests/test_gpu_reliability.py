"""Reliability on the GPU: threads, CUDA graphs, faults, leaks, bound launches."""
import gc
import os
import subprocess
import sys
import threading
import tracemalloc

import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch", reason="GPU tests need torch and an NVIDIA GPU (run on the H200)")

import launcher  # noqa: E402
from launcher import cuda_launcher  # noqa: E402

import kernels as K  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
N = 4096


@pytest.fixture
def add_kernel():
    """A CompiledKernel of vector add loaded through launcher."""
    K.add_kernel.device_caches.clear()
    with launcher.installed():
        x = torch.zeros(N, device="cuda")
        ck = K.add_kernel[(N // 1024,)](x, x, x, N, BLOCK=1024)
        assert isinstance(ck._run, launcher.CudaLauncher)
        yield ck
    K.add_kernel.device_caches.clear()


def test_threads_each_on_their_own_stream(add_kernel):
    """8 threads x 10,000 launches; half the threads never touched CUDA before launching."""
    ck = add_kernel
    launches = 10_000
    x = torch.arange(N, device="cuda", dtype=torch.float32)
    streams = [torch.cuda.Stream() for _ in range(8)]
    outs = [torch.zeros(N, device="cuda") for _ in range(8)]
    ys = [torch.full((N,), float(i), device="cuda") for i in range(8)]
    torch.cuda.synchronize()
    errors = []

    def work(i):
        try:
            if i % 2 == 0:  # this thread uses torch, which makes a context current
                torch.cuda.set_device(0)
            s = streams[i].cuda_stream
            for _ in range(launches):
                ck.run(N // 1024, 1, 1, s, ck.function, ck.packed_metadata, None, None, None,
                       x, ys[i], outs[i], N, 1024)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    torch.cuda.synchronize()
    assert not errors, errors[:3]
    assert not any(t.is_alive() for t in threads), "a thread is stuck"
    for i in range(8):
        assert torch.equal(outs[i], x + i)


def test_cuda_graph_capture_and_replay(add_kernel):
    x = torch.rand(N, device="cuda")
    y = torch.rand(N, device="cuda")
    out = torch.zeros(N, device="cuda")
    with launcher.installed():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm up outside the capture
            K.add_kernel[(N // 1024,)](x, y, out, N, BLOCK=1024)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            K.add_kernel[(N // 1024,)](x, y, out, N, BLOCK=1024)  # the JIT path, captured
            ck = add_kernel  # the launcher called directly, captured too
            ck.run(N // 1024, 1, 1, torch.cuda.current_stream().cuda_stream, ck.function,
                   ck.packed_metadata, None, None, None, out, y, out, N, 1024)
        for value in (1.0, 5.0):
            x.fill_(value)
            out.zero_()
            graph.replay()
            torch.cuda.synchronize()
            assert torch.equal(out, x + y + y)


def test_impossible_configuration_is_a_clear_error(add_kernel):
    ck = add_kernel
    x = torch.zeros(N, device="cuda")
    with pytest.raises(launcher.CudaError, match="CUDA_ERROR_INVALID_VALUE") as info:
        ck.run(1, 1, 1, 0, ck.function, (64, 1, 0), None, None, None, x, x, x, N, 1024)  # 2048 threads
    assert info.value.name == "CUDA_ERROR_INVALID_VALUE" and "add_kernel" in str(info.value)
    with pytest.raises(launcher.CudaError):
        ck.run(1, 1, 1, 0, ck.function, (4, 1, 300_000), None, None, None, x, x, x, N, 1024)  # smem
    torch.cuda.synchronize()  # the context is still usable after refused launches


FAULT_SCRIPT = r"""
import sys, torch, triton, triton.language as tl, launcher
sys.path.insert(0, sys.argv[1])
import kernels as K
launcher.install()
sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
ck = triton.compile(triton.compiler.ASTSource(fn=K.add_kernel, signature=sig, constexprs={"BLOCK": 1024}))
x = torch.zeros(1024, device="cuda")
n = 1 << 30  # far past the end of x: the kernel reads and writes unmapped memory
ck[(n // 1024, 1, 1)](x, x, x, n, 1024)
try:
    torch.cuda.synchronize()
except Exception as e:
    print("FAULT SURFACED:", type(e).__name__, str(e).splitlines()[0])
    sys.exit(0)
print("no fault")
sys.exit(1)
"""


def test_a_faulting_kernel_surfaces_at_the_next_synchronisation():
    """A kernel that indexes past its buffers faults on the device; the error appears at the
    next synchronisation. The context is unusable after that (a driver rule), so this runs in
    its own process."""
    proc = subprocess.run([sys.executable, "-c", FAULT_SCRIPT, HERE], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert "FAULT SURFACED" in proc.stdout and "illegal" in proc.stdout.lower()


def test_int_pointers_are_checked_too(add_kernel):
    """Triton passes int pointers unchecked; we ask the driver, so a stray int is an error, not a fault."""
    ck = add_kernel
    x = torch.zeros(N, device="cuda")
    with pytest.raises(ValueError, match="parameter 'out_ptr': the pointer 0x1000 .*cannot be accessed"):
        ck.run(1, 1, 1, 0, ck.function, ck.packed_metadata, None, None, None, x, x, 4096, N, 1024)
    torch.cuda.synchronize()


def _rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def test_a_million_launches_leave_memory_flat(add_kernel):
    ck = add_kernel
    x = torch.zeros(N, device="cuda")
    run, fn, md = ck.run, ck.function, ck.packed_metadata

    def burst(n):
        for _ in range(n):
            run(N // 1024, 1, 1, 0, fn, md, None, None, None, x, x, x, N, 1024)
        torch.cuda.synchronize()

    burst(20_000)  # warm up every cache
    gc.collect()
    rss0 = _rss_kib()
    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    burst(1_000_000)
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in snap1.compare_to(snap0, "filename"))
    rss1 = _rss_kib()
    print(f"1,000,000 launches: Python heap {grown:+d} bytes, RSS {rss1 - rss0:+d} KiB")
    assert grown < 64 * 1024
    assert rss1 - rss0 < 16 * 1024


def test_building_and_dropping_launchers_and_modules_frees_them(add_kernel):
    ck = add_kernel
    cache = launcher.module_cache()
    dev = torch.cuda.current_device()
    gc.collect()
    before_modules = cache.snapshot().modules
    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    for _ in range(10_000):
        cuda_launcher.clear_launcher_cache()
        launcher.CudaLauncher(ck.src, ck.metadata)
        module = cache.load_binary(ck.name, ck.kernel, ck.metadata.shared, dev)[0]
        cache.unload_module(module)
    cuda_launcher.clear_launcher_cache()
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in snap1.compare_to(snap0, "filename"))
    print(f"10,000 launchers and module loads: Python heap {grown:+d} bytes")
    assert grown < 256 * 1024
    assert cache.snapshot().modules == before_modules


def test_bound_launch_repeats_the_same_launch(add_kernel):
    ck = add_kernel
    x = torch.arange(N, device="cuda", dtype=torch.float32)
    out = torch.zeros(N, device="cuda")
    bound = ck._run.bind(N // 1024, 1, 1, torch.cuda.current_stream().cuda_stream, ck.function,
                         ck.packed_metadata, x, x, out, N, 1024)
    bound()
    bound.repeat(10)
    torch.cuda.synchronize()
    assert torch.equal(out, 2 * x)


def test_a_sequence_of_bound_launches_runs_in_order(add_kernel):
    """cuda_launcher.repeat_sequence (the decode step's C floor): each step's launches in order,
    on one stream, `count` steps."""
    ck = add_kernel
    s = torch.cuda.current_stream().cuda_stream
    x = torch.arange(N, device="cuda", dtype=torch.float32)
    a, b, c = (torch.zeros(N, device="cuda") for _ in range(3))

    def bind(*args):
        return ck._run.bind(N // 1024, 1, 1, s, ck.function, ck.packed_metadata, *args, N, 1024)

    first, second, third = bind(x, x, a), bind(a, x, b), bind(c, x, c)  # a = 2x; b = a + x; c += x
    cuda_launcher.repeat_sequence([first, second, third], 1)
    torch.cuda.synchronize()
    assert torch.equal(a, 2 * x) and torch.equal(b, 3 * x) and torch.equal(c, x)  # in order (else b == x)
    cuda_launcher.repeat_sequence([third], 4)
    cuda_launcher.repeat_sequence([first, second, third], 0)  # no step: nothing launched
    torch.cuda.synchronize()
    assert torch.equal(c, 5 * x)  # count steps
    other = ck._run.bind(N // 1024, 1, 1, torch.cuda.Stream().cuda_stream, ck.function, ck.packed_metadata,
                         x, x, a, N, 1024)
    with pytest.raises(ValueError, match="streams"):
        cuda_launcher.repeat_sequence([first, other], 1)
