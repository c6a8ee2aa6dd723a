"""Prepared launches on the GPU (the H200): the corpus bit for bit against kernel[grid], refusals,
threads, CUDA graphs, an autotuned kernel with reset_to_zero."""
import threading

import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch", reason="GPU tests need torch and an NVIDIA GPU (run on the H200)")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import gpu_corpus  # noqa: E402
import kernels as K  # noqa: E402
import launcher  # noqa: E402

# Cases whose launch is not a JIT call (they compile and launch a CompiledKernel themselves).
NOT_JIT = {"scalars"}


def _clone(value):
    if isinstance(value, torch.Tensor):
        return torch.empty_like(value)
    if isinstance(value, tuple):
        return tuple(_clone(v) for v in value)
    return value


def prepared_same_args(kernel, grid, *args, **kwargs):
    p = launcher.prepare(kernel, grid, *args, **kwargs)
    p()
    return p


def prepared_new_args(kernel, grid, *args, **kwargs):
    """Prepared with other tensors of the same kinds, then called with the case's own."""
    p = launcher.prepare(kernel, grid, *[_clone(a) for a in args], **kwargs)
    p(*args)
    return p


def run_case(name, launch):
    gpu_corpus.clear_jit_caches()
    gpu_corpus.LAUNCH = launch
    try:
        fn = gpu_corpus.CASES[name]
        if name == "scalars":
            fn = lambda: gpu_corpus.case_scalars(stock_compatible=True)  # noqa: E731
        results = fn()
        torch.cuda.synchronize()
        return results
    finally:
        gpu_corpus.LAUNCH = gpu_corpus.jit_launch


@pytest.mark.parametrize("how", ["same arguments", "new arguments"])
@pytest.mark.parametrize("name", sorted(set(gpu_corpus.CASES) - NOT_JIT))
def test_corpus_through_prepared_launches_matches_kernel_grid_bit_for_bit(name, how):
    with launcher.installed():
        want = run_case(name, gpu_corpus.jit_launch)
        got = run_case(name, prepared_same_args if how == "same arguments" else prepared_new_args)
    assert want.keys() == got.keys()
    for part in want:
        assert torch.equal(want[part][0], got[part][0]), f"{name}.{part} ({how}) differs from kernel[grid]"
        if want[part][1] is not None:
            assert torch.equal(got[part][0], want[part][1]), f"{name}.{part}: wrong result"


def _add(n=4096):
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    return x, y, torch.empty_like(x), n


def test_a_misaligned_tensor_is_refused_and_nothing_is_launched():
    x, y, out, n = _add()
    p = launcher.prepare(K.add_kernel, (n // 1024,), x, y, out, n, BLOCK=1024)
    out.fill_(-1)
    torch.cuda.synchronize()
    with pytest.raises(launcher.AssumptionError, match="parameter 'x_ptr': the kernel was compiled for a pointer divisible by 16"):
        p(x[1:], y[1:], out[1:], n - 16)
    with pytest.raises(launcher.AssumptionError, match="parameter 'y_ptr': .*fp32 tensor.*got a fp16 tensor"):
        p(x, y.half(), out, n)
    torch.cuda.synchronize()
    assert bool((out == -1).all()), "a refused call launched"


def test_threads_each_on_their_own_stream():
    x, y, out, n = _add()
    p = launcher.prepare(K.add_kernel, (n // 1024,), x, y, out, n, BLOCK=1024)
    work = [(torch.full((n,), float(i), device="cuda"), torch.empty(n, device="cuda"), torch.cuda.Stream())
            for i in range(8)]
    torch.cuda.synchronize()
    errors = []

    def run(i):
        try:
            a, o, s = work[i]
            with torch.cuda.stream(s):
                for _ in range(2000):
                    p(a, y, o, n)
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


def test_cuda_graph_capture_and_replay_with_new_arguments():
    x, y, out, n = _add()
    p = launcher.prepare(K.add_kernel, (n // 1024,), x, y, out, n, BLOCK=1024)
    a, b, c = torch.rand(n, device="cuda"), torch.rand(n, device="cuda"), torch.empty(n, device="cuda")
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):  # captures on a side stream: the prepared launch must use it
        p(a, b, c, n)
        p()
    a.copy_(torch.rand(n, device="cuda"))
    c.zero_()
    out.zero_()
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(c, a + b) and torch.equal(out, x + y)


@triton.autotune(configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 1024})], key=["n"],
                 reset_to_zero=["out"])
@triton.jit
def _accumulate(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.atomic_add(out + offs, tl.load(x + offs, mask=mask), mask=mask)


def test_an_autotuned_kernel_with_reset_to_zero_behaves_as_kernel_grid():
    n = 8192
    x = torch.rand(n, device="cuda")
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    runs = {}
    for how in ("kernel[grid]", "prepared"):
        _accumulate.cache.clear()
        out = torch.zeros(n, device="cuda")
        if how == "kernel[grid]":
            for _ in range(3):
                _accumulate[grid](x, out, n)
        else:
            p = launcher.prepare(_accumulate, grid, x, out, n)  # tunes (and launches) once
            p()
            p(x, out, n)
        torch.cuda.synchronize()
        runs[how] = out.clone()
    # Triton resets `out` while benchmarking, then launches; later calls accumulate.
    assert torch.equal(runs["prepared"], runs["kernel[grid]"])
    assert torch.allclose(runs["prepared"], 3 * x)


def test_the_prepared_kernel_stays_loaded_after_triton_lets_go():
    import gc

    x, y, out, n = _add()
    K.add_kernel.device_caches.clear()
    p = launcher.prepare(K.add_kernel, (n // 1024,), x, y, out, n, BLOCK=1024)
    K.add_kernel.device_caches.clear()  # Triton 3.8+ unloads a module when its kernel is collected
    gc.collect()
    p(x, y, out, n)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)


def test_a_bundled_kernel_prepares_like_its_triton_function(tmp_path):
    n = 4096
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out, want = torch.empty(n, device="cuda"), torch.empty(n, device="cuda")
    with launcher.installed():
        ck = K.add_kernel[(n // 1024,)](x, y, want, n, BLOCK=1024)
    path = tmp_path / "add.bundle"
    launcher.export(path, ck)
    bundle = launcher.load_bundle(path)
    p = launcher.prepare(bundle.add_kernel, (n // 1024,), x, y, out, n, BLOCK=1024)
    p()
    torch.cuda.synchronize()
    assert torch.equal(out, want)
    a = torch.rand(n, device="cuda")
    p(a, y, out, n)
    torch.cuda.synchronize()
    assert torch.equal(out, a + y)
    with pytest.raises(launcher.AssumptionError, match="parameter 'x_ptr'"):
        p(a[1:], y[1:], out[1:], n - 16)


def test_p_and_p_with_new_arguments_take_the_c_path_on_the_gpu():
    """Vector add: p() is the launch bound at prepare time and p(*new) (keywords included) is
    checked and packed in C (launcher._call); none reaches p.launch, and each computes the right
    thing. grid= (launch's own keyword) goes to p.launch."""
    x, y, out, n = _add()
    p = launcher.prepare(K.add_kernel, (triton.cdiv(n, 1024),), x, y, out, n, BLOCK=1024)
    assert p._fast_ready() == (True, True)
    general, fell_back = p.launch, []
    p.launch = lambda *a, **k: fell_back.append(a) or general(*a, **k)
    p()
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)
    x2, y2, out2, _ = _add()
    p(x2, y2, out2, n)
    torch.cuda.synchronize()
    assert torch.equal(out2, x2 + y2) and not fell_back
    x3, y3, out3, _ = _add()
    p(x3, y3, out3, n=n, BLOCK=1024)  # keywords: parameters by name, the constexpr again (C, ee5593e)
    torch.cuda.synchronize()
    assert torch.equal(out3, x3 + y3) and not fell_back
    out2.zero_()
    p(x2, y2, out2, n, grid=(triton.cdiv(n, 1024),))  # grid= is launch's own keyword: the general path
    torch.cuda.synchronize()
    assert len(fell_back) == 1 and torch.equal(out2, x2 + y2)
