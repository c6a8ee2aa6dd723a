"""Kernels for the launch-latency suite (tiny bodies: the host cost is what is measured), the
four kernels of the decode step (launcher.bench.decode), and generated kernels of distinct
signatures for the cold paths."""
import importlib.util
import os
import random

import triton
import triton.language as tl


@triton.jit
def one_arg(out):
    tl.store(out, 1.0)


@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@triton.jit
def mixed16(p0, p1, p2, p3, i0, i1, i2, i3, f0, f1, f2, f3, l0, l1, l2, l3):
    s = (i0 + i1 + i2 + i3).to(tl.float32) + f0 + f1 + f2 + f3 + (l0 + l1 + l2 + l3).to(tl.float32)
    tl.store(p0, s + tl.load(p1) + tl.load(p2) + tl.load(p3))


@triton.jit
def mixed19(p0, p1, p2, p3, p4, i0, i1, i2, i3, i4, l0, l1, l2, l3, f0, f1, f2, f3, f4):
    s = (i0 + i1 + i2 + i3 + i4).to(tl.float32) + (l0 + l1 + l2 + l3).to(tl.float32) + f0 + f1 + f2 + f3 + f4
    tl.store(p0, s + tl.load(p1) + tl.load(p2) + tl.load(p3) + tl.load(p4))


@triton.jit
def args64(out, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, a42, a43, a44, a45, a46, a47, a48, a49, a50, a51, a52, a53, a54, a55, a56, a57, a58, a59, a60, a61, a62):
    tl.store(out, a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15 + a16 + a17 + a18 + a19 + a20 + a21 + a22 + a23 + a24 + a25 + a26 + a27 + a28 + a29 + a30 + a31 + a32 + a33 + a34 + a35 + a36 + a37 + a38 + a39 + a40 + a41 + a42 + a43 + a44 + a45 + a46 + a47 + a48 + a49 + a50 + a51 + a52 + a53 + a54 + a55 + a56 + a57 + a58 + a59 + a60 + a61 + a62)


@triton.jit
def nested_tuple(out, t, nested, scale):
    x = tl.load(t[0]) + tl.load(nested[0][0]) + nested[0][1] + nested[1][1]
    tl.store(out, x * scale + t[1])


@triton.jit
def tensordesc_copy(in_desc, out_desc, BM: tl.constexpr, BN: tl.constexpr):
    tile = in_desc.load([0, 0])
    out_desc.store([0, 0], tile)


# ---- the decode step (launcher.bench.decode): four small row kernels, fp32 ----
@triton.jit
def rmsnorm(x, w, out, stride, n_cols, eps, BLOCK: tl.constexpr):
    """out[row] = x[row] / sqrt(mean(x[row]^2) + eps) * w: one program per row."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x + row * stride + cols, mask=mask, other=0.0)
    r = 1.0 / tl.sqrt(tl.sum(v * v, axis=0) / n_cols + eps)
    tl.store(out + row * stride + cols, v * r * tl.load(w + cols, mask=mask, other=0.0), mask=mask)


@triton.jit
def axpby(x, y, out, a, b, n, BLOCK: tl.constexpr):
    """out = a * x + b * y over n elements: BLOCK per program."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, a * tl.load(x + offs, mask=mask) + b * tl.load(y + offs, mask=mask), mask=mask)


@triton.jit
def softmax(x, out, stride, n_cols, BLOCK: tl.constexpr):
    """out[row] = softmax(x[row]): one program per row."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x + row * stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(out + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def silu_mul(x, g, out, n, BLOCK: tl.constexpr):
    """out = silu(x) * g = x * sigmoid(x) * g over n elements: BLOCK per program."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x + offs, mask=mask)
    tl.store(out + offs, v * tl.sigmoid(v) * tl.load(g + offs, mask=mask), mask=mask)


# ---- generated kernels for the cold paths ----
# 16 parameters: four each of pointer, i32, fp32 and i64, in an order that differs per kernel, so
# that every kernel has a signature of its own. Each "cold" kernel has twins: the same signature
# (the same shape) under other kernel names and other parameter names.
COLD_TYPES = {"p": "*fp32", "i": "i32", "f": "fp32", "l": "i64"}


def cold_shapes(count: int, seed: int = 2026) -> list:
    """`count` distinct orders of the 16 parameter kinds (strings such as "pifl" * 4, shuffled)."""
    rng = random.Random(seed)
    shapes, seen = [], set()
    while len(shapes) < count:
        kinds = list("pifl" * 4)
        rng.shuffle(kinds)
        shape = "".join(kinds)
        if shape not in seen:
            seen.add(shape)
            shapes.append(shape)
    return shapes


def _params(shape: str, prefix: str) -> list:
    counts = {k: 0 for k in COLD_TYPES}
    out = []
    for k in shape:
        out.append((f"{prefix}{k}{counts[k]}", COLD_TYPES[k]))
        counts[k] += 1
    return out


def _kernel_source(name: str, params: list, prefix: str) -> str:
    p = lambda k, i: f"{prefix}{k}{i}"  # noqa: E731
    ints = " + ".join(p("i", i) for i in range(4))
    longs = " + ".join(p("l", i) for i in range(4))
    floats = " + ".join(p("f", i) for i in range(4))
    loads = " + ".join(f"tl.load({p('p', i)})" for i in range(1, 4))
    return (f"@triton.jit\ndef {name}({', '.join(n for n, _ in params)}):\n"
            f"    s = ({ints}).to(tl.float32) + ({longs}).to(tl.float32) + {floats}\n"
            f"    tl.store({p('p', 0)}, s + {loads})\n")


COLD_VALUES = {"i32": 3, "i64": 2**40 + 3, "fp32": 0.5}  # no 1s and no multiples of 16


def cold_arguments(signature: dict, pointer) -> tuple:
    """Arguments for a cold kernel of `signature`: pointer() for each pointer, fixed scalars else."""
    return tuple(pointer() if ty.startswith("*") else COLD_VALUES[ty] for ty in signature.values())


def cold_module_source(shapes: list, twins: int = 1) -> str:
    parts = ["import triton\nimport triton.language as tl\n"]
    for k, shape in enumerate(shapes):
        parts.append(_kernel_source(f"cold16_{k}", _params(shape, ""), ""))
        for j in range(twins):
            parts.append(_kernel_source(f"twin16_{k}_{j}", _params(shape, f"b{j}_"), f"b{j}_"))
    return "\n\n".join(parts)


def load_cold_kernels(count: int, directory: str, twins: int = 1) -> list:
    """[(cold JITFunction, its signature, [(twin JITFunction, its signature), ...]), ...] for
    `count` shapes, with `twins` twins each.

    The source is written to a file in `directory` (Triton reads a kernel's source from its file),
    which must outlive the kernels' compilation."""
    shapes = cold_shapes(count)
    name = f"launcher_bench_cold_{os.getpid()}_{count}_{twins}"
    path = os.path.join(directory, name + ".py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(cold_module_source(shapes, twins))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = []
    for k, shape in enumerate(shapes):
        out.append((getattr(module, f"cold16_{k}"), dict(_params(shape, "")),
                    [(getattr(module, f"twin16_{k}_{j}"), dict(_params(shape, f"b{j}_"))) for j in range(twins)]))
    return out
