"""Vector add through launcher: the README's "Use" section as a script that runs as it stands.

    python examples/vector_add.py

- With an NVIDIA GPU and torch: launches the kernel through launcher (installed for the block,
  with the fence check set to refuse a kernel that misses a fence) and checks the result.
- Without them: compiles the same kernel for sm_90 on the CPU, fence-checks its PTX and TTGIR,
  and builds the launcher Triton would use for it (everything short of the launch; no C compiler
  is run).

Exit status 0 when all of that worked.
"""
import sys

import triton
import triton.language as tl

import launcher
from launcher import fence


@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


def have_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def on_gpu() -> int:
    import torch

    n, BLOCK = 98_432, 1024
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, BLOCK),)
    with launcher.installed(fence_check="error"):
        print(f"launcher installed: {launcher.is_installed()}")
        add_kernel[grid](x, y, out, n, BLOCK=BLOCK)
    torch.cuda.synchronize()
    ok = torch.equal(out, x + y)
    print(f"add_kernel on {torch.cuda.get_device_name()}: {n} elements, result {'correct' if ok else 'WRONG'}")
    return 0 if ok else 1


def on_cpu() -> int:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    print("No GPU (or no torch) here: compiling add_kernel for sm_90 on the CPU instead of launching it.")
    signature = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    src = ASTSource(fn=add_kernel, signature=signature, constexprs={"BLOCK": 1024})
    ck = triton.compile(src, target=GPUTarget("cuda", 90, 32))

    report = fence.check_kernel(ptx=ck.asm["ptx"], ttgir=ck.asm["ttgir"], name=ck.metadata.name)
    print(f"fence check: {report.format_text()}")

    with launcher.installed():
        from triton.backends.nvidia import driver as nv

        print(f"launcher installed: {launcher.is_installed()}")
        run = nv.CudaLauncher(ck.src, ck.metadata)  # what Triton builds before the first launch
    print(f"Triton's launcher for this kernel is launcher's: {isinstance(run, launcher.CudaLauncher)} "
          f"({len(run.spec.params)} parameters; built without a C compiler; a GPU would launch it)")
    return 1 if report.errors else 0


if __name__ == "__main__":
    sys.exit(on_gpu() if have_gpu() else on_cpu())
