"""The GPU corpus: real Triton kernels launched through `kernel[grid](...)`.

Each case returns {name: (got, want)}: `got` is what the kernel wrote, `want` a torch reference
(None where the check is that stock and ours agree bit for bit). Used by tests/test_gpu.py
(stock vs launcher, bit-identical) and by the no-compiler proof, which runs this file as a
script in a process with no C compiler on PATH and an empty Triton cache:

    python tests/gpu_corpus.py   # prints one line per case, exits 1 on any mismatch
"""
import os
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(__file__))

import kernels as K  # noqa: E402
from reference_packer import reference_bytes  # noqa: E402

DEV = "cuda"


def jit_launch(kernel, grid, *args, **kwargs):
    """How every case launches its JIT kernel: kernel[grid](...), unless a test swaps in another
    way (tests/test_gpu_prepared.py launches the same cases through prepared launches)."""
    return kernel[grid](*args, **kwargs)


LAUNCH = jit_launch


def _seed():
    torch.manual_seed(0)


def case_vector_add(**opts):
    _seed()
    n = 98432
    x, y = torch.rand(n, device=DEV), torch.rand(n, device=DEV)
    out = torch.empty_like(x)
    LAUNCH(K.add_kernel, (triton.cdiv(n, 1024),), x, y, out, n, BLOCK=1024, **opts)
    return {"out": (out, x + y)}


SCALAR_EDGES = [
    dict(i1=True, i8=-128, i16=-32768, i32=-2**31, i64=-2**63, u1=False, u8=0, u16=0, u32=0, u64=0,
         fp16=-65504.0, bf16=1.01171875, fp32=-3.4028234663852886e38, fp64=5e-324),
    dict(i1=False, i8=127, i16=32767, i32=2**31 - 1, i64=2**63 - 1, u1=True, u8=255, u16=65535,
         u32=2**32 - 1, u64=2**64 - 1, fp16=1.00048828125, bf16=-3.0e38, fp32=16777217.0,
         fp64=1.7976931348623157e308),
]


def _bits(ty, value):
    b = reference_bytes(ty, value)
    v = int.from_bytes(b, "little", signed=False)
    return v - (1 << 64) if v >= 1 << 63 else v


def case_scalars(stock_compatible=False):
    """Every scalar type at its range edges: the kernel stores the bits it received.

    stock_compatible: i8 = 0 instead of -128 (stock Triton 3.6 refuses negative i8)."""
    results = {}
    for i, edges in enumerate(SCALAR_EDGES):
        if stock_compatible and edges["i8"] < 0:
            edges = dict(edges, i8=0)
        out = torch.zeros(14, dtype=torch.int64, device=DEV)
        ck = triton.compile(triton.compiler.ASTSource(
            fn=K.scalars_kernel, signature=dict(K.SCALARS_SIGNATURE)))
        ck[(1, 1, 1)](out, *[edges[t] for t in K.SCALAR_TYPES])
        want = torch.tensor([_bits(t, edges[t]) if t not in ("i1", "u1") else int(edges[t])
                             for t in K.SCALAR_TYPES], dtype=torch.int64, device=DEV)
        # Integers are sign- or zero-extended by the kernel; compare their low bits only.
        for j, t in enumerate(K.SCALAR_TYPES):
            if t in ("i8", "i16", "i32", "i64"):
                want[j] = edges[t]
        got = out.clone()
        got[0] = got[0].abs()  # i1 True may come back sign-extended (-1) or not (1)
        got[5] = got[5].abs()
        results[f"edges{i}"] = (got, want)
    return results


def case_tuples():
    _seed()
    out = torch.empty(16, device=DEV)
    x, y = torch.rand(16, device=DEV), torch.rand(16, device=DEV)
    # t[2] == 3 (an i32), nested[1][0] == 1 (specialised to a constexpr inside a tuple), k: constexpr
    LAUNCH(K.tuple_kernel, (1,), out, (x, 16, 3), ((y, 4), (1, 0.5)), 2, 1.5)
    want = (x + y) * 1.5 + 4 + 0.5 + 3 + 2  # the kernel may fuse multiply-adds: compare closely
    return {"out": (out, None), "close": (torch.tensor([int(torch.allclose(out, want))], device=DEV),
                                          torch.tensor([1], device=DEV))}


def case_many_args():
    out = torch.zeros(1, device=DEV)
    args = [float(i) if i % 2 else i for i in range(18)]
    LAUNCH(K.many_args_kernel, (1,), out, *args)
    return {"sum": (out, torch.tensor([float(sum(range(18)))], device=DEV))}


def case_host_tma():
    from triton.tools.tensor_descriptor import TensorDescriptor

    _seed()
    x = torch.randn(256, 256, device=DEV, dtype=torch.float16)
    out = torch.empty_like(x)
    LAUNCH(K.tma_copy_kernel, (4, 4), TensorDescriptor.from_tensor(x, [64, 64]),
                              TensorDescriptor.from_tensor(out, [64, 64]), BM=64, BN=64)
    return {"out": (out, x + 1)}


def case_device_tma_with_scratch():
    calls = []

    def alloc(size, align, stream):
        calls.append((size, align))
        return torch.empty(size, dtype=torch.int8, device=DEV)

    triton.set_allocator(alloc)
    _seed()
    x = torch.randn(128, 256, device=DEV)
    out = torch.empty_like(x)
    LAUNCH(K.device_desc_kernel, (4, 4), x, out, 128, 256, BM=32, BN=64)
    md = K.device_desc_kernel.warmup(x, out, 128, 256, BM=32, BN=64, grid=(4, 4)).metadata
    want = [(md.global_scratch_size * 16, md.global_scratch_align)]
    return {"out": (out, x * 2),
            "scratch": (torch.tensor(calls[-1:], device=DEV), torch.tensor(want, device=DEV))}


def case_num_ctas_2():
    return case_vector_add(num_ctas=2)


def case_pdl():
    return case_vector_add(launch_pdl=True)


def case_cooperative():
    return case_vector_add(launch_cooperative_grid=True)


def case_large_shared_memory():
    _seed()
    M = N = Kd = 512
    a = torch.randn(M, Kd, device=DEV, dtype=torch.float16)
    b = torch.randn(Kd, N, device=DEV, dtype=torch.float16)
    c = torch.empty(M, N, device=DEV, dtype=torch.float32)
    LAUNCH(K.matmul_kernel, (M // 128, N // 128), a, b, c, M, N, Kd, BM=128, BN=128, BK=64, num_stages=4)
    ck = K.matmul_kernel.warmup(a, b, c, M, N, Kd, BM=128, BN=128, BK=64, num_stages=4, grid=(1,))
    shared = torch.tensor([int(ck.metadata.shared > 49152)], device=DEV)
    return {"c": (c, None), "close": (torch.tensor([int(torch.allclose(c, a.float() @ b.float(), atol=1e-1, rtol=1e-2))],
                                                   device=DEV), torch.tensor([1], device=DEV)),
            "shared_over_48k": (shared, torch.tensor([1], device=DEV))}


def case_grid_3d():
    out = torch.full((2, 3, 4), -1, dtype=torch.int32, device=DEV)
    LAUNCH(K.grid3d_kernel, (4, 3, 2), out, 4, 3)
    z, y, x = torch.meshgrid(torch.arange(2), torch.arange(3), torch.arange(4), indexing="ij")
    return {"out": (out, (x + 10 * y + 100 * z).to(torch.int32).to(DEV))}


CASES = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}


def check(results):
    """[(name, ok)] for one case's results: got == want exactly (where a want is given)."""
    return [(k, want is None or bool(torch.equal(got, want))) for k, (got, want) in results.items()]


def clear_jit_caches():
    """Forget compiled kernels in this process so the next call builds new launchers."""
    for obj in list(globals().values()) + [getattr(K, n) for n in dir(K)]:
        caches = getattr(obj, "device_caches", None)
        if caches is not None:
            caches.clear()


def main():
    import launcher

    rank = os.environ.get("LOCAL_RANK")
    if rank is not None:  # started by torchrun: one GPU per process
        torch.cuda.set_device(int(rank))
    launcher.install()
    failed = 0
    for name, case in CASES.items():
        results = case()
        torch.cuda.synchronize()
        for part, ok in check(results):
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name}.{part}")
    from triton.runtime.driver import driver

    print("launcher_cls:", driver.active.launcher_cls.__module__, "utils:", type(driver.active.utils).__module__)
    print(f"{'rank ' + rank + ' on cuda:' + str(torch.cuda.current_device()) + ': ' if rank else ''}"
          f"{len(CASES)} cases, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
