"""The guarded fast path on the GPU (the H200): the corpus bit for bit against stock Triton with the
guard hitting, threads, CUDA graphs, an autotuned kernel with reset_to_zero, invalidation."""
import threading

import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch", reason="GPU tests need torch and an NVIDIA GPU (run on the H200)")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import gpu_corpus  # noqa: E402
import kernels as K  # noqa: E402
import launcher  # noqa: E402


@pytest.fixture
def guard():
    launcher.uninstall()
    gpu_corpus.clear_jit_caches()
    launcher.install(fast_dispatch=True)
    try:
        yield launcher.fast_dispatch_stats
    finally:
        launcher.uninstall()
        gpu_corpus.clear_jit_caches()


def run_case(name):
    fn = gpu_corpus.CASES[name]
    if name == "scalars":
        return gpu_corpus.case_scalars(stock_compatible=True)
    results = fn()
    torch.cuda.synchronize()
    return results


@pytest.mark.parametrize("name", sorted(gpu_corpus.CASES))
def test_corpus_with_the_guard_matches_stock_bit_for_bit(name):
    launcher.uninstall()
    gpu_corpus.clear_jit_caches()
    stock = run_case(name)
    launcher.install(fast_dispatch=True)
    try:
        gpu_corpus.clear_jit_caches()
        first = run_case(name)  # misses: Triton's path, recorded
        before = launcher.fast_dispatch_stats()["hits"]
        again = run_case(name)  # the same calls again: hits
        hits = launcher.fast_dispatch_stats()["hits"] - before
    finally:
        launcher.uninstall()
        gpu_corpus.clear_jit_caches()
    for part in stock:
        for got in (first, again):
            assert torch.equal(stock[part][0], got[part][0]), f"{name}.{part} differs from stock"
    if name not in ("scalars", "host_tma"):  # not JIT calls / tensor descriptors: Triton's path
        assert hits >= 1, f"{name}: the repeated calls did not hit the guard"


def test_a_hit_launches_what_triton_would_and_a_misaligned_tensor_misses(guard):
    n = 4096
    x, y = torch.rand(n + 16, device="cuda"), torch.rand(n + 16, device="cuda")
    out = torch.empty(n + 16, device="cuda")
    K.add_kernel[(n // 1024,)](x, y, out, n, BLOCK=1024)
    s0 = guard()
    K.add_kernel[(n // 1024,)](x, y, out, n, BLOCK=1024)
    s1 = guard()
    assert s1["hits"] == s0["hits"] + 1
    K.add_kernel[(n // 1024,)](x[1:], y[1:], out[1:], n, BLOCK=1024)  # not divisible by 16: another kernel
    s2 = guard()
    assert s2["misses"] == s1["misses"] + 1
    torch.cuda.synchronize()
    assert torch.equal(out[1:n + 1], x[1:n + 1] + y[1:n + 1])


def test_threads_and_streams(guard):
    n = 4096
    y = torch.rand(n, device="cuda")
    work = [(torch.full((n,), float(i), device="cuda"), torch.empty(n, device="cuda"), torch.cuda.Stream())
            for i in range(8)]
    K.add_kernel[(n // 1024,)](work[0][0], y, work[0][1], n, BLOCK=1024)
    torch.cuda.synchronize()
    errors = []

    def run(i):
        try:
            a, o, s = work[i]
            with torch.cuda.stream(s):
                for _ in range(2000):
                    K.add_kernel[(n // 1024,)](a, y, o, n, BLOCK=1024)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    torch.cuda.synchronize()
    assert not errors, errors
    for a, o, _ in work:
        assert torch.equal(o, a + y)


def test_cuda_graph_capture_on_a_side_stream(guard):
    n = 4096
    a, b, c = torch.rand(n, device="cuda"), torch.rand(n, device="cuda"), torch.empty(n, device="cuda")
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    K.add_kernel[grid](a, b, c, n, BLOCK=1024)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        K.add_kernel[grid](a, b, c, n, BLOCK=1024)
    a.copy_(torch.rand(n, device="cuda"))
    c.zero_()
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(c, a + b)


@triton.autotune(configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 1024})], key=["n"],
                 reset_to_zero=["out"])
@triton.jit
def _accumulate(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.atomic_add(out + offs, tl.load(x + offs, mask=mask), mask=mask)


def test_autotune_with_reset_to_zero_behaves_as_stock():
    n = 8192
    x = torch.rand(n, device="cuda")
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    runs = {}
    for guarded in (False, True):
        launcher.uninstall()
        _accumulate.cache.clear()
        _accumulate.fn.device_caches.clear()
        launcher.install(fast_dispatch=guarded)
        try:
            out = torch.zeros(n, device="cuda")
            for _ in range(3):
                _accumulate[grid](x, out, n)
            torch.cuda.synchronize()
            runs[guarded] = out.clone()
        finally:
            launcher.uninstall()
    assert torch.equal(runs[True], runs[False]) and torch.allclose(runs[True], 3 * x)


def test_clearing_the_cache_and_a_new_source_miss(guard):
    n = 1024
    x = torch.rand(n, device="cuda")
    out = torch.empty(n, device="cuda")
    K.add_kernel[(1,)](x, x, out, n, BLOCK=1024)
    misses = guard()["misses"]
    K.add_kernel.device_caches.clear()
    K.add_kernel[(1,)](x, x, out, n, BLOCK=1024)
    assert guard()["misses"] == misses + 1
    K.add_kernel.hash = None  # as _unsafe_update_src leaves it
    K.add_kernel[(1,)](x, x, out, n, BLOCK=1024)
    assert guard()["misses"] == misses + 2
    torch.cuda.synchronize()
    assert torch.equal(out, x + x)
