"""Signature planning against real Triton-compiled kernels (compiled on the CPU for sm_90)."""
import pytest

from triton_compile import compile_cpu
from launcher import CudaLauncher
from launcher.signature import POINTER, TENSORMAP, UnsupportedSignature, plan_signature
from launcher.versions import triton_version
from ptx_params import ptx_param_sizes

import kernels as K


def plan_of(ck):
    return CudaLauncher(ck.src, ck.metadata).plan


def assert_matches_ptx(ck):
    """The plan's parameters are exactly the PTX entry's: same count, same sizes."""
    plan = plan_of(ck)
    assert [p.size for p in plan.params] == ptx_param_sizes(ck.asm["ptx"], ck.metadata.name)
    return plan


def test_vector_add_drops_constexpr_and_appends_scratch():
    ck = compile_cpu(K.add_kernel, (("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("out_ptr", "*fp32"),
                                    ("n", "i32"), ("BLOCK", "constexpr")), (("BLOCK", 1024),))
    plan = assert_matches_ptx(ck)
    assert [p.name for p in plan.params] == ["x_ptr", "y_ptr", "out_ptr", "n",
                                             "<global scratch>", "<profile scratch>"]
    assert [p.kind for p in plan.params[:3]] == [POINTER] * 3
    assert plan.arity == 5


def test_every_scalar_type_matches_ptx_sizes():
    ck = compile_cpu(K.scalars_kernel, K.SCALARS_SIGNATURE)
    plan = assert_matches_ptx(ck)
    assert [p.type for p in plan.params[1:15]] == list(K.SCALAR_TYPES)
    bf16 = next(p for p in plan.params if p.type == "bf16")
    assert bf16.read_at == bf16.offset + 2  # the upper half of an fp32


def test_nested_tuples_with_constexprs_inside():
    ck = compile_cpu(K.tuple_kernel, K.TUPLE_SIGNATURE, K.TUPLE_CONSTEXPRS)
    plan = assert_matches_ptx(ck)
    assert [p.name for p in plan.params[:-2]] == [
        "out", "t[0]", "t[1]", "nested[0][0]", "nested[0][1]", "nested[1][1]", "scale"]


def test_many_arguments():
    sig = (("out", "*fp32"),) + tuple((f"a{i}", "fp32" if i % 2 else "i32") for i in range(18))
    ck = compile_cpu(K.many_args_kernel, sig)
    plan = assert_matches_ptx(ck)
    assert len(plan.params) == 21


@pytest.mark.parametrize("arch", [90, 80])
def test_host_tensor_descriptors_with_and_without_tma(arch):
    sig = (("in_desc", "tensordesc<fp16[64, 64]>"), ("out_desc", "tensordesc<fp16[64, 64]>"),
           ("BM", "constexpr"), ("BN", "constexpr"))
    ck = compile_cpu(K.tma_copy_kernel, sig, (("BM", 64), ("BN", 64)), arch=arch)
    plan = assert_matches_ptx(ck)
    metas = ck.metadata.tensordesc_meta
    if arch == 90:
        assert metas, "sm_90 lowers host descriptors to TMA"
        assert [p.kind for p in plan.params].count(TENSORMAP) == 2
        assert [p.name for p in plan.params[:5]] == [
            "in_desc", "in_desc.shape[0]", "in_desc.shape[1]", "in_desc.strides[0]", "in_desc.strides[1]"]
    else:
        assert not metas, "sm_80 has no TMA: descriptors are decomposed"
        flags = ["padding"] + (["round_f32_to_tf32"] if triton_version() >= (3, 7) else [])
        expected = ["base", "shape[0]", "shape[1]", "strides[0]", "strides[1]", *flags,
                    "shape[0]", "shape[1]", "strides[0]", "strides[1]"]
        assert [p.name for p in plan.params[:len(expected)]] == ["in_desc." + e for e in expected]


def test_irsource_parameters_are_named_by_position(tmp_path):
    import triton
    from triton.backends.compiler import GPUTarget

    ck = compile_cpu(K.add_kernel, (("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("out_ptr", "*fp32"),
                                    ("n", "i32"), ("BLOCK", "constexpr")), (("BLOCK", 256),))
    path = tmp_path / "add.ttgir"
    path.write_text(ck.asm["ttgir"])
    ir_ck = triton.compile(str(path), target=GPUTarget("cuda", 90, 32))
    plan = assert_matches_ptx(ir_ck)
    assert [p.name for p in plan.params[:4]] == ["#0", "#1", "#2", "#3"]


def test_unknown_type_and_im2col_are_unsupported():
    with pytest.raises(UnsupportedSignature, match="fp8e5"):
        plan_signature("k", ["x"], ["fp8e5"])
    with pytest.raises(UnsupportedSignature, match="im2col"):
        plan_signature("k", ["d"], ["tensordesc_im2col<fp16[64, 64],input_rank=4>"], [{}])


def test_parameter_space_is_limited_to_what_cuda_allows():
    plan_signature("k", [f"a{i}" for i in range(4093)], ["i64"] * 4093)  # 32744 + 16 scratch bytes
    with pytest.raises(ValueError, match=r"kernel 'k' takes 32768 bytes of parameters; CUDA allows at most 32764"):
        plan_signature("k", [f"a{i}" for i in range(4094)], ["i64"] * 4094)


def test_descriptor_count_must_match_metadata():
    with pytest.raises(UnsupportedSignature, match="2 tensordesc_meta entries for 1"):
        plan_signature("k", ["d"], ["tensordesc<fp16[16, 16]>"], [{}, {}])
