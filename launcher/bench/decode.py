"""The decode step of the suite (torch-free, checked on the CPU): eight launches as one step of
a decoder does them — rmsnorm, axpby, softmax, silu-mul, then the same four again — on
ROWS x COLS fp32 tensors, and a pure-Python reference of what the step computes.

`launches(buffers)` is the step: [(kernel name, grid, args, kwargs), ...] in launch order, each
launched as `kernel[grid](*args, **kwargs)` (the kernels are in launcher.bench.kernels, under
these names). The buffers are a mapping of BUFFERS to tensors (or, for `reference`, to flat
lists of floats); the input buffers (INPUTS) are only read, so every step computes the same.
`reference(inputs())` runs the same launches with a Python version of each kernel, program by
program over the grid, in float64, and returns every buffer after one step.
"""
from __future__ import annotations

import math
import random
import struct

ROWS, COLS = 8, 1024
BLOCK = 1024
N = ROWS * COLS
EPS, A, B = 1e-5, 0.75, 0.5  # no 1 and no int: nothing Triton would specialise away
KERNELS = ("rmsnorm", "axpby", "softmax", "silu_mul")
INPUTS = ("x", "w")
OUTPUTS = ("h0", "h1", "h2", "h3", "y")
BUFFERS = INPUTS + OUTPUTS
SHAPES = {name: ((COLS,) if name == "w" else (ROWS, COLS)) for name in BUFFERS}
LAUNCHES_PER_STEP = 8


def _four(buf, src, out) -> list:
    w, h0, h1, h2 = buf["w"], buf["h0"], buf["h1"], buf["h2"]
    kw = {"BLOCK": BLOCK}
    return [("rmsnorm", (ROWS,), (src, w, h0, COLS, COLS, EPS), kw),
            ("axpby", (N // BLOCK,), (h0, src, h1, A, B, N), kw),
            ("softmax", (ROWS,), (h1, h2, COLS, COLS), kw),
            ("silu_mul", (N // BLOCK,), (h1, h2, out, N), kw)]


def launches(buf) -> list:
    """The eight launches of one step over the buffers `buf` (a mapping of BUFFERS)."""
    return _four(buf, buf["x"], buf["h3"]) + _four(buf, buf["h3"], buf["y"])


def _f32(v: float) -> float:
    return struct.unpack("<f", struct.pack("<f", v))[0]


def inputs(seed: int = 2026) -> dict:
    """The step's inputs as flat lists of floats that fp32 holds exactly: x in [-2, 2), w in [0.5, 1.5)."""
    rng = random.Random(seed)
    return {"x": [_f32(rng.uniform(-2.0, 2.0)) for _ in range(N)],
            "w": [_f32(rng.uniform(0.5, 1.5)) for _ in range(COLS)]}


# ---- the kernels in Python: one call per program of the grid, as the Triton kernels run ----
def _rmsnorm(pid, block, x, w, out, stride, n_cols, eps):
    base = pid * stride
    cols = range(min(block, n_cols))
    ms = sum(x[base + c] * x[base + c] for c in cols) / n_cols
    r = 1.0 / math.sqrt(ms + eps)
    for c in cols:
        out[base + c] = x[base + c] * r * w[c]


def _axpby(pid, block, x, y, out, a, b, n):
    for i in range(pid * block, min((pid + 1) * block, n)):
        out[i] = a * x[i] + b * y[i]


def _softmax(pid, block, x, out, stride, n_cols):
    base = pid * stride
    cols = range(min(block, n_cols))
    m = max(x[base + c] for c in cols)
    e = [math.exp(x[base + c] - m) for c in cols]
    s = sum(e)
    for c in cols:
        out[base + c] = e[c] / s


def _silu_mul(pid, block, x, g, out, n):
    for i in range(pid * block, min((pid + 1) * block, n)):
        v = x[i]
        out[i] = v / (1.0 + math.exp(-v)) * g[i]


PYTHON = {"rmsnorm": _rmsnorm, "axpby": _axpby, "softmax": _softmax, "silu_mul": _silu_mul}


def run_python(buf) -> None:
    """One step over `buf` (flat lists) with the Python kernels, program by program."""
    for name, grid, args, kw in launches(buf):
        for pid in range(grid[0]):
            PYTHON[name](pid, kw["BLOCK"], *args)


def reference(data=None) -> dict:
    """Every buffer (flat lists, float64) after one step on `data` (inputs() by default); the
    outputs start as NaN, so an element no launch writes stays NaN."""
    data = inputs() if data is None else data
    buf = {name: list(data[name]) for name in INPUTS}
    buf.update({name: [math.nan] * N for name in OUTPUTS})
    run_python(buf)
    return buf
