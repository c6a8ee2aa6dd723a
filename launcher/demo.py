"""`python -m launcher demo`: what the package does, on this machine.

1. Compiles a handful of Triton kernels (for this GPU, or for sm_90 on the CPU when there is
   none), one of them a Gluon kernel that stores to shared memory and TMA-stores it without
   `fence_async_shared()`, and checks each kernel's PTX and TTGIR for missing proxy fences.
2. Where a GPU is present, launches vector add through stock Triton and through launcher,
   checks the results agree, and prints a quick host-time comparison.
"""
from __future__ import annotations

import statistics
import time


def _target():
    from triton.backends.compiler import GPUTarget

    try:
        import torch

        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            return GPUTarget("cuda", major * 10 + minor, 32), True
    except ImportError:
        pass
    return GPUTarget("cuda", 90, 32), False


def _kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def vector_add(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)

    @triton.jit
    def softmax(out, inp, stride, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        x = tl.load(inp + row * stride + cols, mask=cols < n, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < n)

    @triton.jit
    def tuple_args(out, t, scale):
        tl.store(out, tl.load(t[0]) * scale + t[1])

    yield "vector_add", vector_add, {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32",
                                     "BLOCK": "constexpr"}, {"BLOCK": 1024}
    yield "softmax", softmax, {"out": "*fp32", "inp": "*fp32", "stride": "i32", "n": "i32",
                               "BLOCK": "constexpr"}, {"BLOCK": 1024}
    yield "tuple_args", tuple_args, {"out": "*fp32", "t": ("*fp32", "i32"), "scale": "fp32"}, {}
    gluon = _gluon_kernels()
    if gluon:
        yield from gluon


def _gluon_kernels():
    """A Gluon kernel that TMA-stores shared memory it just wrote, with and without the fence."""
    try:
        from triton.experimental import gluon
        from triton.experimental.gluon import language as gl
        from triton.experimental.gluon._runtime import GluonASTSource  # noqa: F401
        from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, tma
    except ImportError:
        return []
    tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global

    @gluon.jit
    def gluon_tma_store(desc, FENCE: gl.constexpr):
        layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
        smem = gl.allocate_shared_memory(gl.float16, [64, 64], desc.layout)
        smem.store(gl.full([64, 64], 1.0, gl.float16, layout))
        if FENCE:
            fence_async_shared()
        tma_store(desc, [0, 0], smem)
        tma.store_wait(0)

    desc = "tensordesc<fp16[64, 64],NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)>"
    return [(f"gluon_tma_store (FENCE={f})", gluon_tma_store, {"desc": desc, "FENCE": "constexpr"},
             {"FENCE": f}) for f in (False, True)]


def _compile(fn, signature, constexprs, target):
    import triton
    from triton.compiler import ASTSource

    if type(fn).__name__ == "GluonJITFunction":
        from triton.experimental.gluon._runtime import GluonASTSource as ASTSource  # noqa: N814
    return triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs), target=target)


def check_fences(out=print):
    from launcher import fence

    target, _ = _target()
    out(f"Fence check of kernels compiled for sm_{target.arch}:")
    errors = 0
    for label, fn, signature, constexprs in _kernels():
        t0 = time.perf_counter()
        try:
            ck = _compile(fn, signature, constexprs, target)
        except Exception as e:  # a kernel this Triton/arch cannot compile
            out(f"  {label:32s} not compiled here ({type(e).__name__}: {str(e).splitlines()[0][:80]})")
            continue
        compile_ms = (time.perf_counter() - t0) * 1e3
        t0 = time.perf_counter()
        report = fence.check_kernel(ptx=ck.asm.get("ptx"), ttgir=ck.asm.get("ttgir"), name=ck.metadata.name)
        check_ms = (time.perf_counter() - t0) * 1e3
        errors += len(report.errors)
        verdict = f"{len(report.errors)} missing fence(s)" if report.errors else "no missing fence"
        out(f"  {label:32s} {verdict:22s} (check {check_ms:.1f} ms; compile {compile_ms:.0f} ms)")
        for finding in report.errors:
            for line in finding.format_text().splitlines() if hasattr(finding, "format_text") else [str(finding)]:
                out(f"      {line}")
    return errors


def compare_launchers(out=print, batches=30, per_batch=200):
    import torch
    import triton
    import triton.language as tl

    import launcher

    @triton.jit
    def demo_add(x, y, o, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(o + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

    n = 4096
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    results, timings = {}, {}
    for who in ("stock", "launcher"):
        demo_add.device_caches.clear()
        if who == "launcher":
            launcher.install()
        try:
            o = torch.empty_like(x)
            demo_add[(4,)](x, y, o, n, BLOCK=1024)
            torch.cuda.synchronize()
            results[who] = o
            samples = []
            for _ in range(batches):
                torch.cuda.synchronize()
                t0 = time.perf_counter_ns()
                for _ in range(per_batch):
                    demo_add[(4,)](x, y, o, n, BLOCK=1024)
                samples.append((time.perf_counter_ns() - t0) / per_batch / 1e3)
            torch.cuda.synchronize()
            timings[who] = statistics.median(samples)
        finally:
            launcher.uninstall()
    same = torch.equal(results["stock"], results["launcher"]) and torch.equal(results["stock"], x + y)
    out(f"vector add through stock Triton and launcher: results {'identical' if same else 'DIFFER'}")
    out(f"  kernel[grid](...) host time: stock {timings['stock']:.2f} µs, launcher "
        f"{timings['launcher']:.2f} µs per launch (quick look; `python -m launcher bench` measures properly)")
    return same


def main(argv=None) -> int:
    import triton

    import launcher

    target, gpu = _target()
    print(f"launcher {launcher.__version__}, Triton {triton.__version__}, "
          f"{'GPU sm_' + str(target.arch) if gpu else 'no GPU: compiling for sm_90 on the CPU'}")
    check_fences()
    if gpu:
        ok = compare_launchers()
        return 0 if ok else 1
    print("No GPU here: launches skipped (they need an NVIDIA GPU and torch).")
    return 0
