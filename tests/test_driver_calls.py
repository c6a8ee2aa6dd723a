"""The driver calls of a kernel's first load go through the native library (no cuda.bindings
import on that path): their attribute numbers agree with cuda.bindings, and without a driver (or
with a bad image) each raises launcher's CUDA exception rather than crashing."""
import subprocess
import sys

import pytest

from launcher import driver


def test_the_attribute_numbers_are_cuda_bindings_own():
    cu = pytest.importorskip("cuda.bindings.driver")
    for name, number in driver.FUNCTION_ATTRIBUTES.items():
        assert int(getattr(cu.CUfunction_attribute, "CU_FUNC_ATTRIBUTE_" + name)) == number, name
    for name, number in driver.DEVICE_ATTRIBUTES.items():
        assert int(getattr(cu.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + name)) == number, name
    assert int(cu.CUfunc_cache.CU_FUNC_CACHE_PREFER_SHARED) == driver.CU_FUNC_CACHE_PREFER_SHARED
    R = cu.CUresult
    assert driver._TEARDOWN == {int(R.CUDA_ERROR_DEINITIALIZED), int(R.CUDA_ERROR_INVALID_CONTEXT),
                                int(R.CUDA_ERROR_CONTEXT_IS_DESTROYED)}


@pytest.mark.parametrize("call", [
    lambda: driver.load_module(b"not a cubin", "k"),
    lambda: driver.module_function(0, "k"),
    lambda: driver.function_attribute(0, "NUM_REGS"),
    lambda: driver.set_function_attribute(0, "NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1),
    lambda: driver.prefer_shared_memory(0),
    lambda: driver.device_attribute(1 << 20, "WARP_SIZE"),
], ids=["load", "function", "get attribute", "set attribute", "cache config", "device attribute"])
def test_a_failing_call_raises_a_cuda_error(call):
    with pytest.raises(driver.CudaError):
        call()


def test_an_optional_attribute_the_driver_refuses_is_false():
    assert driver.set_function_attribute(0, 17, 1, required=False) is False


def test_a_first_load_never_imports_cuda_bindings():
    """In a fresh process, the load path's calls (here failing: no GPU, or a bad image) leave
    cuda.bindings unimported."""
    code = ("import sys\nfrom launcher import driver\n"
            "for call in (lambda: driver.load_module(b'x', 'k'), lambda: driver.module_function(0, 'k'),\n"
            "             lambda: driver.function_attribute(0, 'NUM_REGS'),\n"
            "             lambda: driver.device_attribute(0, 'MAX_SHARED_MEMORY_PER_BLOCK_OPTIN')):\n"
            "    try:\n        call()\n    except driver.CudaError:\n        pass\n"
            "print('cuda.bindings.driver' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("shape, strides, block", [
    ((), (), ()),  # rank 0
    ((2,) * 6, (1,) * 6, (1,) * 6),  # rank 6
    ((64, -1), (64, 1), (64, 64)),  # a negative size
    ((64, 64), (-64, 1), (64, 64)),  # a negative stride
    ((64, 2**64), (64, 1), (64, 64)),  # beyond 64 bits
    ((64, 64), (2**62, 1), (64, 64)),  # a byte stride beyond 64 bits
    ((64, 64), (64, 1), (0, 64)),  # an empty box
    ((64, 64), (64, 1), (-1, 64)),
    ((64, 64), (64, 1), (64,)),  # ranks that disagree
], ids=["rank 0", "rank 6", "negative size", "negative stride", "size beyond 64 bits",
        "byte stride beyond 64 bits", "empty box", "negative box", "rank mismatch"])
def test_a_tensor_map_geometry_out_of_range_is_a_value_error_before_any_driver_call(shape, strides, block):
    from launcher.tensormap import encode_tiled

    with pytest.raises(ValueError, match="tensor map"):
        encode_tiled(0x1000, 0, 4, 7, block, shape, strides, 0, clear_bit21=False)


def test_a_descriptor_encoder_encodes_each_new_tensor_once_with_tritons_conventions(monkeypatch):
    """DescriptorEncoder (host TensorDescriptor -> the parameters of a TMA-lowered kernel) asks
    the encoder once per (address, shape, strides, padding), with the box innermost first, the
    host's element type, NaN padding as the OOB fill, and fp4-padded shapes doubled; what it
    returns is the map's bytes and the shape and strides the kernel takes. The C encoder is
    swapped for one that records what it is asked (no GPU here)."""
    import types

    from launcher import spec as S
    from launcher.tensormap import TMA_DTYPE_DEVICE_TO_HOST, DescriptorEncoder

    asked = []

    def encoder(elem_type, box, elem_size, interleave, swizzle, l2, oob, bit21):
        def encode(address, shape, strides):
            asked.append((elem_type, address, tuple(shape), tuple(strides), tuple(box), elem_size, swizzle, oob, bit21))
            return bytes([len(asked)]) * 128
        return encode

    monkeypatch.setattr(driver, "tensor_map_encoder", encoder)
    meta = {"swizzle": 3, "elem_size": 2, "elem_type": 8, "block_size": [32, 64], "fp4_padded": False}
    r36 = S.Conventions(tensordesc_tf32_flag=False, tma_original_shape=False, tma_tf32=False, tma_clear_bit21=False,
                        oversized_shared=False)  # Triton 3.6's
    enc = DescriptorEncoder(meta, 2, r36)

    def desc(address, shape=(128, 256), strides=(256, 1), padding="zero"):
        return types.SimpleNamespace(base=address, shape=list(shape), strides=list(strides), padding=padding)

    first = enc(desc(0x10000))
    assert first == (bytes([1]) * 128, 128, 256, 256, 1)
    assert asked == [(TMA_DTYPE_DEVICE_TO_HOST[8], 0x10000, (128, 256), (256, 1), (64, 32), 2, 3, 0, 0)]
    assert enc(desc(0x10000)) == first and len(asked) == 1  # the same tensor again: no encode
    assert enc(desc(0x10000, padding="nan"))[0] == bytes([2]) * 128 and asked[-1][7] == 1  # NaN fill
    assert enc(desc(0x20000))[0] == bytes([3]) * 128 and asked[-1][1] == 0x20000
    with pytest.raises(ValueError, match="last stride"):
        enc(desc(0x30000, strides=(1, 128)))
    with pytest.raises(ValueError, match="2-d tensor descriptor"):
        enc(desc(0x30000, shape=(4, 4, 4), strides=(16, 4, 1)))
    fp4 = DescriptorEncoder(dict(meta, fp4_padded=True), 2, r36)
    assert fp4(desc(0x40000))[1:] == (128, 512, 256, 1) and asked[-1][2] == (128, 512)
    r39 = S.Conventions()  # 3.7+: the original shape follows, and the bit-21 workaround on drivers <= 13.1
    for version, below in ((13000, 128 * 1024), (13020, 0)):
        monkeypatch.setattr(driver, "driver_version", lambda: version)
        kept = DescriptorEncoder(dict(meta, fp4_padded=True), 2, r39)
        assert kept(desc(0x50000))[1:] == (128, 256, 256, 1) and asked[-1][2] == (128, 512)
        assert asked[-1][8] == below


def test_a_decomposed_descriptor_without_the_tf32_flag_is_not_rounded():
    """Triton 3.7+ kernels take round_f32_to_tf32 with a decomposed descriptor; one that lacks the
    attribute (Triton 3.6's TensorDescriptor, a user's own) is taken as not rounded, as the TMA
    encoder takes it, rather than failing with an AttributeError."""
    import types

    from launcher.tensormap import decomposer

    d = types.SimpleNamespace(base=0x1000, shape=[8, 16], strides=[16, 1], padding="zero")
    assert decomposer(True, 2)(d) == (0x1000, 8, 16, 16, 1, False, False, 8, 16, 16, 1)
    assert decomposer(True, 2)(types.SimpleNamespace(**vars(d), round_f32_to_tf32=True))[6] is True
    assert decomposer(False, 2)(d) == (0x1000, 8, 16, 16, 1, False, 8, 16, 16, 1)
