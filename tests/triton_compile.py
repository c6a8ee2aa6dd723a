"""Triton compiles on the CPU for the tests (no GPU needed)."""
import functools


@functools.lru_cache(maxsize=None)
def compile_cpu(fn, signature: tuple, constexprs: tuple = (), arch: int = 90, attrs: tuple = (), **options):
    """triton.compile for an NVIDIA target without a GPU (cached per test session).

    attrs: argument paths to mark divisible by 16, as Triton's JIT does for aligned tensors and
    integers that are multiples of 16."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    src = ASTSource(fn=fn, signature=dict(signature), constexprs=dict(constexprs),
                    attrs={tuple(p): [["tt.divisibility", 16]] for p in attrs})
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options=dict(options) or None)
