"""The hot kernels of the suite and how each is called (torch-free: tensors come from a factory).

Every Case knows its user arguments (`kernel[grid](*args, **kwargs)`), what a launcher object
receives (`runtime(args)`: every parameter, constexprs included, in order) and, for the raw
peers (cuda.core, cuda.bindings), its flat runtime parameters as (value function, type) in
kernel parameter order. The suite adds the two host-tensor-descriptor cases, which need torch.
"""
from __future__ import annotations

import inspect

from launcher.bench import kernels as K
from launcher.bench import names as N


class Case:
    """One kernel and how it is called; `ck[who]`/`jit[who]` hold its stock and our compiled kernels."""

    def __init__(self, name, jit, grid, args, kwargs=None, flat=None, fresh=None):
        self.name = name
        self.fn = jit.fn  # the Python function: every path gets a JITFunction of its own
        self.grid = grid
        self.grid3 = (*grid, 1, 1)[:3]
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})
        self.flat = flat  # [(value function, type)]: the runtime parameters, for the raw peers
        self.fresh = fresh  # n -> n argument tuples on memory never used before, or None
        self.signature = inspect.signature(self.fn)
        self.jit, self.ck = {}, {}

    def runtime(self, args) -> tuple:
        """What the launcher and CompiledKernel[grid] get: every parameter (constexprs too), in order."""
        return tuple(self.signature.bind(*args, **self.kwargs).arguments.values())


def _ptr(t):
    return lambda: t.data_ptr()


def _val(v):
    return lambda: v


def plain_cases(zeros) -> list:
    """The cases without tensor descriptors; zeros(n) makes a float32 device tensor of n elements."""
    x, y, out = zeros(1024), zeros(1024), zeros(1024)
    cases = [Case(N.ONE_ARG, K.one_arg, (1,), (out,), flat=[(_ptr(out), "*fp32")])]
    cases.append(Case(N.VECTOR_ADD, K.add, (1,), (x, y, out, 1000), {"BLOCK": 1024},
                      flat=[(_ptr(x), "*fp32"), (_ptr(y), "*fp32"), (_ptr(out), "*fp32"), (_val(1000), "i32")]))
    ps = [zeros(1) for _ in range(4)]
    ints, floats, longs = [3, 5, 7, 9], [0.5, 1.5, 2.5, 3.5], [2**40 + 1, 2**40 + 3, 2**40 + 5, 2**40 + 7]
    cases.append(Case(N.MIXED16, K.mixed16, (1,), (*ps, *ints, *floats, *longs),
                      flat=[(_ptr(p), "*fp32") for p in ps] + [(_val(v), "i32") for v in ints]
                      + [(_val(v), "fp32") for v in floats] + [(_val(v), "i64") for v in longs]))
    ps5 = [zeros(1) for _ in range(5)]
    ints5, longs4, floats5 = [3, 5, 7, 9, 11], [2**40 + 1, 2**40 + 3, 2**40 + 5, 2**40 + 7], [0.5, 1.5, 2.5, 3.5, 4.5]
    cases.append(Case(N.MIXED19, K.mixed19, (1,), (*ps5, *ints5, *longs4, *floats5),
                      flat=[(_ptr(p), "*fp32") for p in ps5] + [(_val(v), "i32") for v in ints5]
                      + [(_val(v), "i64") for v in longs4] + [(_val(v), "fp32") for v in floats5]))
    vals = list(range(2, 65))  # no 1: Triton would specialise it away
    cases.append(Case(N.ARGS64, K.args64, (1,), (out, *vals),
                      flat=[(_ptr(out), "*fp32")] + [(_val(v), "i32") for v in vals]))
    a, b = zeros(1), zeros(1)
    cases.append(Case(N.NESTED, K.nested_tuple, (1,), (out, (a, 3), ((b, 4), (2, 0.5)), 1.5),
                      flat=[(_ptr(out), "*fp32"), (_ptr(a), "*fp32"), (_val(3), "i32"), (_ptr(b), "*fp32"),
                            (_val(4), "i32"), (_val(2), "i32"), (_val(0.5), "fp32"), (_val(1.5), "fp32")]))
    return cases
