"""What a TMA-lowered tensor-descriptor parameter says about input it cannot use: a spec planned
by hand (spec.layout_for, LaunchSpec) whose tensordesc_meta Triton would never write, a
descriptor without a base, bytes that are not a CUtensorMap. Each is a TypeError or ValueError
(SpecError for the spec) naming the kernel and the parameter, raised before any driver call (no
GPU here: a driver call would be CudaDriverNotFound), never a bare KeyError or AttributeError.

The kernel is a real one, compiled by Triton on the CPU for sm_90 (where host descriptors are
lowered to TMA); the specs are its own, with one tensordesc_meta entry edited."""
import dataclasses
import json
import re

import pytest

import kernels as K
from cpu_corpus import TMA_SIG
from cpu_triton import FakeTensor
from launcher import CudaLauncher, LaunchSpec, SpecError, TensorMap
from launcher import spec as S
from launcher import triton_adapter as A
from launcher.tensormap import DescriptorEncoder, decomposer
from triton_compile import compile_cpu

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")

ADDRESS = 0x7F0000001000


@pytest.fixture(scope="module")
def spec():
    ck = compile_cpu(K.tma_copy_kernel, TMA_SIG, (("BM", 64), ("BN", 64)), 90)
    spec = A.spec_from_triton(ck.src, ck.metadata)
    assert [a.desc.tma is not None for _, a in S.leaves(spec.args) if a.kind == "tensordesc"] == [True, True]
    return spec


def with_meta(spec, edit, which=0):
    """The spec with the tensordesc_meta entry of descriptor `which` edited, planned again by the
    public layout_for (which, unlike LaunchSpec.from_json, takes the entries as they are)."""
    metas = [a.desc.meta for _, a in S.leaves(spec.args) if a.kind == "tensordesc"]
    edit(metas[which])
    layout = S.layout_for([a.type for a in spec.args], metas, tf32_flag=spec.conventions.tensordesc_tf32_flag)
    return dataclasses.replace(spec, layout=layout)


def desc(base=ADDRESS):  # Triton's own
    from triton.tools.tensor_descriptor import TensorDescriptor

    return TensorDescriptor(FakeTensor(base, tl.float16), [256, 128], [128, 1], [64, 64])


def dry_run(spec, *args):
    launcher = CudaLauncher.from_spec(spec)
    return launcher.dry_run(1, 1, 1, 0, 0xF00, launcher.packed_metadata, None, None, None, *args)


def drop(key):
    return lambda m: m.pop(key)


def put(**fields):
    return lambda m: m.update(fields)


BROKEN = [
    (drop("swizzle"), "tensordesc_meta[0]: missing field 'swizzle'"),
    (drop("elem_size"), "tensordesc_meta[0]: missing field 'elem_size'"),
    (drop("elem_type"), "tensordesc_meta[0]: missing field 'elem_type'"),
    (drop("block_size"), "tensordesc_meta[0]: missing field 'block_size'"),
    (put(elem_type=16), "tensordesc_meta[0].elem_type: 16 is out of range [0, 15]"),  # past the element-type table
    (put(elem_type="fp16"), "tensordesc_meta[0].elem_type: expected an integer, got 'fp16'"),
    (put(swizzle=7), "tensordesc_meta[0].swizzle: 7 is out of range [0, 6]"),
    (put(swizzle=None), "tensordesc_meta[0].swizzle: expected an integer, got None"),
    (put(elem_size=3), "tensordesc_meta[0].elem_size: 3 bytes is not 1, 2, 4 or 8"),
    (put(block_size=64), "tensordesc_meta[0].block_size: 64 is not 2 sizes in [1, 256]"),
    (put(block_size=[64, "64"]), "tensordesc_meta[0].block_size: [64, '64'] is not 2 sizes"),
    (put(block_size=[64, 512]), "tensordesc_meta[0].block_size: [64, 512] is not 2 sizes"),
    (put(block_size=[64]), "tensordesc_meta[0].block_size: [64] is not 2 sizes"),  # a rank from_json cannot check
    (put(fp4_padded="yes"), "tensordesc_meta[0].fp4_padded: expected true or false, got 'yes'"),
    (put(is_im2col=True), "tensordesc_meta[0].is_im2col: im2col tensor descriptors are not supported"),
    (put(im2col_offsets=[0]), "tensordesc_meta[0]: unknown fields ['im2col_offsets']"),  # a field Triton may add
]
IDS = ["no swizzle", "no elem_size", "no elem_type", "no block_size", "elem_type past the table", "elem_type a name",
       "swizzle 7", "swizzle None", "elem_size 3", "block an int", "block of a str", "block too large",
       "block of another rank", "fp4_padded a str", "im2col", "an unknown field"]


@pytest.mark.parametrize("edit, message", BROKEN, ids=IDS)
def test_a_spec_with_tensordesc_meta_triton_never_writes_is_refused_when_planned(spec, edit, message):
    """spec.check_tensordesc_meta, the one rule: layout_for refuses the entry (UnsupportedSignature: the
    stock launcher takes a Triton kernel whose entry it does not know), before any launcher is made;
    LaunchSpec.from_json refuses a file's spec with it (SpecError naming the field)."""
    for _ in range(2):  # the same again: nothing was remembered by the first refusal
        with pytest.raises(S.UnsupportedSignature) as e:
            with_meta(spec, edit)
        assert message in str(e.value)
    good = with_meta(spec, lambda m: None).to_json()
    edit(good["tensordesc_meta"][0])
    with pytest.raises(SpecError, match="spec.*" + re.escape(message.split(":")[0])):
        LaunchSpec.from_json(json.loads(json.dumps(good)))


def test_a_tensordesc_meta_entry_that_is_not_an_object_is_refused(spec):
    with pytest.raises(S.UnsupportedSignature, match=r"tensordesc_meta\[1\]: expected an object, got str"):
        S.layout_for([a.type for a in spec.args], [spec.args[0].desc.meta, "swizzle"],
                     tf32_flag=spec.conventions.tensordesc_tf32_flag)


def test_a_tma_descriptor_without_a_base_is_a_type_error_naming_the_parameter(spec):
    """A decomposed descriptor takes None as a null base; a TMA map cannot be encoded for one:
    refused before the driver, not an AttributeError from None.data_ptr(). (Triton's own
    TensorDescriptor refuses None when made; a user's descriptor object, or one whose base is
    set later, reaches the launcher with it.)"""
    none = desc()
    none.base = None
    with pytest.raises(TypeError, match=r"parameter 'in_desc': a TMA tensor descriptor's base must be a tensor"):
        dry_run(spec, none, desc(), 64, 64)


def test_a_data_ptr_that_raises_attribute_error_is_not_taken_for_a_missing_base(spec):
    class Raises(FakeTensor):
        def data_ptr(self):
            raise AttributeError("inside data_ptr")

    enc = DescriptorEncoder(dict(spec.args[0].desc.meta), 2, spec.conventions)
    d = desc()
    d.base = Raises(ADDRESS, tl.float16)
    with pytest.raises(AttributeError, match="inside data_ptr"):
        enc(d)


@pytest.mark.parametrize("data, error, message", [
    (5, TypeError, "got int"), ("x" * 128, TypeError, "got str"), (None, TypeError, "got NoneType"),
    (3.0, TypeError, "got float"), ([300] * 128, ValueError, "range"), (bytes(12), ValueError, "got 12"),
    (memoryview(bytes(512)).cast("I"), ValueError, "got 512"),  # 128 items, 512 bytes
])
def test_a_tensor_map_of_anything_but_128_bytes_says_so(data, error, message):
    with pytest.raises(error, match=f"a CUtensorMap is 128 bytes.*{message}"):
        TensorMap(data)
    assert TensorMap(list(range(128))).data == bytes(range(128))
    assert TensorMap(bytearray(128)).data == bytes(128)


class OwnDescriptor:
    """A descriptor object of the user's own (Triton's TensorDescriptor checks its padding when made)."""

    def __init__(self, padding, base=ADDRESS):
        self.base, self.shape, self.strides, self.block_shape = FakeTensor(base, tl.float16), [256, 128], [128, 1], [64, 64]
        self.padding = padding


@pytest.mark.parametrize("arch", [90, 80], ids=["TMA map (sm_90)", "decomposed (sm_80)"])
@pytest.mark.parametrize("padding", ["NaN", "zeros", None, 1])
def test_a_padding_other_than_zero_or_nan_is_refused_not_zero_filled(padding, arch):
    """tensordesc.nan_padding, the one rule the encoder and the decomposer read padding by: Triton's
    launcher zero-fills any padding but 'nan'; here it is a ValueError naming the parameter."""
    ck = compile_cpu(K.tma_copy_kernel, TMA_SIG, (("BM", 64), ("BN", 64)), arch)
    spec = A.spec_from_triton(ck.src, ck.metadata)
    if arch == 80:  # (a TMA map is encoded by the driver: none here)
        assert dry_run(spec, OwnDescriptor("nan"), OwnDescriptor("zero", ADDRESS + 0x10000), 64, 64) is not None
    with pytest.raises(ValueError, match=r"parameter 'in_desc'.*padding must be 'zero' or 'nan', got"):
        dry_run(spec, OwnDescriptor(padding), OwnDescriptor("zero", ADDRESS + 0x10000), 64, 64)


@pytest.mark.parametrize("arch", [90, 80], ids=["TMA map (sm_90)", "decomposed (sm_80)"])
@pytest.mark.parametrize("which", ["shape", "strides"])
def test_an_endless_shape_or_strides_is_refused_not_read_forever(which, arch):
    """tensordesc.sizes_of, how every descriptor path reads shape and strides: never past ndim + 1 items."""
    import itertools

    ck = compile_cpu(K.tma_copy_kernel, TMA_SIG, (("BM", 64), ("BN", 64)), arch)
    spec = A.spec_from_triton(ck.src, ck.metadata)
    endless = OwnDescriptor("zero")
    setattr(endless, which, itertools.count(1))
    with pytest.raises(ValueError, match=r"parameter 'in_desc' expects a 2-d tensor descriptor"):
        dry_run(spec, endless, OwnDescriptor("zero", ADDRESS + 0x10000), 64, 64)
    desc0 = spec.args[0].desc
    encoder = (DescriptorEncoder(desc0.meta, 2, spec.conventions) if desc0.tma is not None
               else decomposer(spec.conventions.tensordesc_tf32_flag, 2))
    with pytest.raises(ValueError, match="expects a 2-d tensor descriptor"):  # the encoder alone, as C's fallback
        encoder(endless)
