"""Triton kernels for the bundle tests (tests/kernels.py holds the others they use).

`add_kernel` has the name of tests/kernels.py's vector add on purpose: two modules, one
function name, two qualified names in one bundle.
"""
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # the same name as kernels.add_kernel, in another module (it adds twice y)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + y + y, mask=mask)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, stride, scale, BLOCK: tl.constexpr = 256):
    # Several specializations: n and stride may be 1, multiples of 16, i64; x and out aligned or not.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs * stride, tl.load(x_ptr + offs * stride, mask=mask) * scale, mask=mask)


class ScriptedBench:
    """An autotuner benchmark for the CPU: runs the config (a dry run) and says it took
    1.0 when its BLOCK is `fast[key n]`, else 2.0, so that tests know what it chooses.
    On a GPU it is Triton's own do_bench."""

    def __init__(self):
        self.fast = {}  # n -> BLOCK that wins
        self.n = None
        self.calls = 0

    def __call__(self, kernel_call, quantiles=None, **kwargs):
        from triton.runtime.driver import driver

        launches = getattr(driver.active, "launches", None)
        if launches is None:  # a real GPU: benchmark for real
            from triton.testing import do_bench

            return do_bench(kernel_call, quantiles=quantiles)
        kernel_call()
        self.calls += 1
        spec = launches[-1].spec
        block = dict(spec.constants)[(4,)]
        t = 1.0 if block == self.fast.get(self.n) else 2.0
        return [t, t, t]


BENCH = ScriptedBench()


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4), triton.Config({"BLOCK": 512}, num_warps=8),
                          triton.Config({"BLOCK": 1024}, num_warps=4, num_stages=2)],
                 key=["n"], do_bench=BENCH)
@triton.jit
def tuned_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.heuristics({"BLOCK": lambda args: min(triton.next_power_of_2(args["n"]), 1024),
                    "EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def heuristic_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))
    else:
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
