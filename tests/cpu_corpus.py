"""The kernels of tests/gpu_corpus.py, compiled on the CPU for sm_90, with the arguments Triton's
JIT hands their launcher (constexprs included; pointers as addresses, since CI has no GPU).

Each entry compiles the kernel the GPU case launches, with the specialization the JIT would
choose for the GPU case's arguments (aligned tensors and multiples of 16 marked divisible by
16, integers equal to 1 made constexprs). Tests use them for what the CPU can check: the
spec, its JSON, the packed bytes of a dry run.
"""
from dataclasses import dataclass, field

import kernels as K
from triton_compile import compile_cpu

P = [0x7F0000001000 + 0x100000 * i for i in range(8)]  # 16-byte aligned fake device addresses


class FakeTensor:
    """Anything with data_ptr() is a pointer argument (torch is not installed on CI)."""

    def __init__(self, ptr):
        self.ptr = ptr

    def data_ptr(self):
        return self.ptr


@dataclass
class Entry:
    name: str
    fn: object
    signature: tuple
    constexprs: tuple = ()
    attrs: tuple = ()
    options: dict = field(default_factory=dict)
    args: tuple = ()  # what the launcher receives (None: arguments the CPU cannot pack)

    def compile(self, arch: int = 90):
        return compile_cpu(self.fn, self.signature, self.constexprs, arch, self.attrs, **self.options)


ADD_SIG = (("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("out_ptr", "*fp32"), ("n", "i32"), ("BLOCK", "constexpr"))
ADD = dict(fn=K.add_kernel, signature=ADD_SIG, constexprs=(("BLOCK", 1024),), attrs=((0,), (1,), (2,), (3,)),
           args=(FakeTensor(P[0]), FakeTensor(P[1]), FakeTensor(P[2]), 98432, 1024))
MANY_SIG = (("out", "*fp32"),) + tuple((f"a{i}", "fp32" if i % 2 else "i32") for i in range(18))
EDGES = dict(i1=True, i8=-128, i16=-32768, i32=-2**31, i64=-2**63, u1=False, u8=255, u16=65535,
             u32=2**32 - 1, u64=2**64 - 1, fp16=-65504.0, bf16=1.01171875, fp32=-3.4028234663852886e38,
             fp64=5e-324)
TMA_SIG = (("in_desc", "tensordesc<fp16[64, 64]>"), ("out_desc", "tensordesc<fp16[64, 64]>"),
           ("BM", "constexpr"), ("BN", "constexpr"))
MATMUL_SIG = (("a", "*fp16"), ("b", "*fp16"), ("c", "*fp32"), ("M", "i32"), ("N", "i32"), ("Kd", "i32"),
              ("BM", "constexpr"), ("BN", "constexpr"), ("BK", "constexpr"))

ENTRIES = [
    Entry("vector_add", **ADD),
    Entry("num_ctas_2", **ADD, options={"num_ctas": 2}),
    Entry("pdl", **ADD, options={"launch_pdl": True}),
    Entry("cooperative", **ADD, options={"launch_cooperative_grid": True}),
    Entry("scalars", K.scalars_kernel, K.SCALARS_SIGNATURE, attrs=((0,),),
          args=(FakeTensor(P[3]), *[EDGES[t] for t in K.SCALAR_TYPES])),
    Entry("tuples", K.tuple_kernel, K.TUPLE_SIGNATURE, K.TUPLE_CONSTEXPRS, attrs=((0,), (1, 0), (1, 1), (2, 0, 0)),
          args=(FakeTensor(P[0]), (FakeTensor(P[1]), 16, 3), ((FakeTensor(P[2]), 4), (1, 0.5)), 2, 1.5)),
    Entry("many_args", K.many_args_kernel, MANY_SIG, attrs=((0,), (1,)),
          args=(FakeTensor(P[4]), *[float(i) if i % 2 else i for i in range(18)])),
    Entry("host_tma", K.tma_copy_kernel, TMA_SIG, (("BM", 64), ("BN", 64)), args=None),
    Entry("device_tma_with_scratch", K.device_desc_kernel,
          (("x_ptr", "*fp32"), ("out_ptr", "*fp32"), ("M", "i32"), ("N", "i32"), ("BM", "constexpr"), ("BN", "constexpr")),
          (("BM", 32), ("BN", 64)), attrs=((0,), (1,), (2,), (3,)),
          args=(FakeTensor(P[5]), FakeTensor(P[6]), 128, 256, 32, 64)),
    Entry("large_shared_memory", K.matmul_kernel, MATMUL_SIG, (("BM", 128), ("BN", 128), ("BK", 64)),
          attrs=((0,), (1,), (2,), (3,), (4,), (5,)), options={"num_stages": 4},
          args=(FakeTensor(P[0]), FakeTensor(P[1]), FakeTensor(P[2]), 512, 512, 512, 128, 128, 64)),
    Entry("grid_3d", K.grid3d_kernel, (("out", "*i32"), ("NX", "i32"), ("NY", "i32")), attrs=((0,),),
          args=(FakeTensor(P[7]), 4, 3)),
]
BY_NAME = {e.name: e for e in ENTRIES}
