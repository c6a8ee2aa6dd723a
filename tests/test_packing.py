"""Byte-exact packing, through the C library's dry-run entry (the launch path minus the driver)."""
import math

import pytest
from hypothesis import given, settings, strategies as st

from triton_compile import compile_cpu
from launcher import CudaLauncher
from launcher.spec import INT_RANGES
from reference_packer import reference_bytes

import kernels as K

BASE = (1, 1, 1, 0, 0, (4, 1, 0), None, None, None)  # grid, stream, function, metadata, hooks


@pytest.fixture(scope="module")
def scalars():
    ck = compile_cpu(K.scalars_kernel, K.SCALARS_SIGNATURE)
    return CudaLauncher(ck.src, ck.metadata)


def typical(ty):
    return {"i1": True, "u1": 1, "fp16": 1.5, "bf16": -2.25, "fp32": 3.25, "fp64": math.pi}.get(ty, 7)


def pack_one(launcher, ty, value):
    """The bytes the kernel receives for the argument of type `ty` set to `value`."""
    args = [typical(t) for t in K.SCALAR_TYPES]
    args[K.SCALAR_TYPES.index(ty)] = value
    out = launcher.dry_run(*BASE, 0x7F0000001000, *args)
    assert out[0] == (0x7F0000001000).to_bytes(8, "little")
    assert out[-2:] == [bytes(8), bytes(8)]  # no scratch for this kernel
    return out[1 + K.SCALAR_TYPES.index(ty)]


EDGES = {ty: [lo, hi, 0, 1, lo + 1, hi - 1] for ty, (lo, hi) in INT_RANGES.items() if lo != 0 or hi > 1}
EDGES.update({"i1": [0, 1, True, False], "u1": [0, 1, True, False]})
EDGES.update({
    "fp16": [0.0, -0.0, 1.0, 65504.0, -65504.0, 6.1e-5, 5.96e-8, 1.0009765625, 1.00048828125,
             1.00146484375, 2049.0, float("inf"), float("-inf"), 65519.99],
    "bf16": [0.0, -0.0, 1.0, 1.01171875, 1.0078125, 3.0e38, -1e-40, float("inf"), 2**-133],
    "fp32": [0.0, -0.0, 1.0, 0.1, 3.4028234663852886e38, 1.4e-45, 1e-46, float("inf"), 16777217.0, 3],
    "fp64": [0.0, -0.0, 0.1, 1.7976931348623157e308, 5e-324, float("-inf"), 2**53 + 1],
})


@pytest.mark.parametrize("ty,value", [(ty, v) for ty, vs in EDGES.items() for v in vs])
def test_scalar_edges_pack_like_triton(scalars, ty, value):
    assert pack_one(scalars, ty, value) == reference_bytes(ty, value)


@pytest.mark.parametrize("ty", ["fp16", "bf16", "fp32", "fp64"])
def test_nan_packs_as_a_nan(scalars, ty):
    assert pack_one(scalars, ty, float("nan")) == reference_bytes(ty, float("nan"))


def test_bf16_truncates_like_triton(scalars):
    # 1.01171875 is 0x3F81_8000 in fp32: Triton keeps the top half, 0x3F81 (1.0078125), not 0x3F82.
    assert pack_one(scalars, "bf16", 1.01171875) == (0x3F81).to_bytes(2, "little")


def test_negative_i8_is_accepted(scalars):
    # Triton 3.6 refuses negative i8 ("unsigned byte integer is less than minimum"); we do not.
    assert pack_one(scalars, "i8", -128) == b"\x80"


def test_ints_are_accepted_for_float_parameters(scalars):
    assert pack_one(scalars, "fp32", 3) == reference_bytes("fp32", 3.0)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_random_scalars_pack_like_the_reference(scalars, data):
    values = []
    for ty in K.SCALAR_TYPES:
        if ty in INT_RANGES:
            lo, hi = INT_RANGES[ty]
            values.append(data.draw(st.integers(lo, hi), label=ty))
        else:
            bound = {"fp16": 65504.0, "bf16": 3.0e38, "fp32": 3.0e38, "fp64": 1e308}[ty]
            values.append(data.draw(st.floats(-bound, bound), label=ty))
    out = scalars.dry_run(*BASE, 0, *values)
    assert out[1:15] == [reference_bytes(t, v) for t, v in zip(K.SCALAR_TYPES, values)]


def test_tuples_flatten_depth_first_and_lists_work():
    ck = compile_cpu(K.tuple_kernel, K.TUPLE_SIGNATURE, K.TUPLE_CONSTEXPRS)
    launcher = CudaLauncher(ck.src, ck.metadata)
    args = (0x1000, (0x2000, 16, 3), [[0x3000, -7], [5, 0.5]], 2, 1.25)
    out = launcher.dry_run(*BASE, *args)
    assert out[:-2] == [reference_bytes("*fp32", 0x1000), reference_bytes("*fp32", 0x2000),
                        reference_bytes("i32", 16), reference_bytes("*fp32", 0x3000),
                        reference_bytes("i32", -7), reference_bytes("fp32", 0.5),
                        reference_bytes("fp32", 1.25)]


class FakeTensor:
    """Anything with data_ptr() is a pointer argument (torch is not installed on CI)."""

    def __init__(self, ptr):
        self.ptr = ptr

    def data_ptr(self):
        return self.ptr


def test_pointers_from_none_int_and_data_ptr():
    ck = compile_cpu(K.add_kernel, (("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("out_ptr", "*fp32"),
                                    ("n", "i32"), ("BLOCK", "constexpr")), (("BLOCK", 1024),))
    launcher = CudaLauncher(ck.src, ck.metadata)
    out = launcher.dry_run(*BASE, None, 0xABC000, FakeTensor(0xDEF000), 10, 1024)
    assert out[:3] == [bytes(8), (0xABC000).to_bytes(8, "little"), (0xDEF000).to_bytes(8, "little")]
