"""Tensor maps on the GPU (the H200): launcher's encoder (launcher_encode_tensor, Triton's
conventions) gives the bytes Triton's own driver.c gives (read from Triton's PyCUtensorMap as a launch reads
one), for tensors small enough for the bit-21 workaround and larger ones, every swizzle, NaN
padding, ranks 1 to 5 and several element types."""
import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch", reason="GPU tests need torch and an NVIDIA GPU (run on the H200)")

import launcher  # noqa: E402
from launcher import triton_adapter  # noqa: E402
from launcher.tensormap import encode_tiled, tensormap_bytes  # noqa: E402

CASES = [  # (shape, block, element size, host element type, swizzle, padding)
    ((64, 64), (64, 64), 2, 6, 3, 0),  # fp16, 8 KB: the bit-21 workaround's size
    ((256, 256), (64, 64), 2, 6, 3, 0),  # 128 KiB exactly: just beyond it
    ((1024, 1024), (64, 64), 2, 6, 3, 0),  # fp16, 2 MB
    ((256, 128), (32, 16), 4, 7, 2, 1),  # fp32, 64-byte swizzle, NaN padding
    ((4096,), (256,), 4, 7, 0, 0),  # rank 1, no swizzle
    ((8, 64, 64), (1, 64, 32), 1, 0, 1, 0),  # uint8, rank 3, 32-byte swizzle
    ((2, 2, 4, 32, 64), (1, 1, 2, 16, 64), 2, 6, 3, 0),  # rank 5
]


@pytest.fixture(scope="module")
def stock_fill():
    launcher.uninstall()
    from triton.backends.nvidia import driver as nv

    utils = nv.CudaUtils()  # Triton's own (compiles driver.c, as stock Triton does)
    fill = getattr(utils, triton_adapter.release().fill_tma_name)
    return lambda *a: tensormap_bytes(fill(*a))  # also how a launch reads Triton's own maps


@pytest.mark.parametrize("shape, block, elem_size, elem_type, swizzle, padding", CASES)
def test_our_tensor_map_is_tritons(stock_fill, shape, block, elem_size, elem_type, swizzle, padding):
    n = 1
    for s in shape:
        n *= s
    t = torch.zeros(n * elem_size, device="cuda", dtype=torch.uint8)
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    args = (t.data_ptr(), swizzle, elem_size, elem_type, list(block), list(shape), strides, padding)
    ours = encode_tiled(*args, clear_bit21=triton_adapter.release().conventions.tma_clear_bit21).data
    assert ours == stock_fill(*args)


@pytest.mark.parametrize("shape, block, elem_size, elem_type, swizzle, padding", CASES)
def test_a_descriptor_encoded_in_c_is_tritons_map(stock_fill, shape, block, elem_size, elem_type, swizzle, padding):
    """The encoder a launch uses for a host TensorDescriptor (launcher._call.DescEncoder once its
    first encode armed it, cdefs/call.c) gives Triton's map for new memory, and what the Python
    encoder gives."""
    import types

    from launcher.tensormap import TMA_DTYPE_DEVICE_TO_HOST, DescriptorEncoder, descriptor_encoder

    conventions = triton_adapter.release().conventions
    device_type = next(d for d, h in TMA_DTYPE_DEVICE_TO_HOST.items() if h == elem_type)
    meta = {"swizzle": swizzle, "elem_size": elem_size, "elem_type": device_type, "block_size": list(block)}
    n = 1
    for s in shape:
        n *= s
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    pad = "nan" if padding else "zero"
    fast = descriptor_encoder(meta, len(shape), conventions)
    for k in range(3):  # the first arms the C path, the others are encoded there
        t = torch.zeros(n * elem_size + 16 * k, device="cuda", dtype=torch.uint8)[16 * k:]
        d = types.SimpleNamespace(base=t, shape=list(shape), strides=list(strides), padding=pad)
        got = fast(d)
        assert fast._armed()[padding], "the C path is armed after the first encode"
        assert got[1:] == (*shape, *strides)
        assert got[0] == stock_fill(t.data_ptr(), swizzle, elem_size, elem_type, list(block), list(shape), strides,
                                    padding)
        assert got == DescriptorEncoder(meta, len(shape), conventions)(d)
