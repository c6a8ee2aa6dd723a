"""launcher.specialization against Triton's own native_specialize_impl (CPU, any release), and the
assumption check against the specialization Triton computes for the same arguments."""
import math

import pytest
from hypothesis import given, settings, strategies as st

import cpu_corpus as C
from cpu_triton import FakeTensor
from launcher import CudaLauncher
from launcher.specialization import AssumptionCheck, AssumptionError, dtype_name, triton_type

tl = pytest.importorskip("triton.language")



def native(value, specialize=True, align=True):
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend

    return native_specialize_impl(BaseBackend, value, False, specialize, align)


INTS = st.one_of(st.sampled_from([0, 1, 16, 17, -1, -16, 2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**32,
                                  2**63 - 1, 2**63, 2**64 - 1, -2**63, 48, 2**40]),
                 st.integers(-2**63, 2**64 - 1))
DTYPES = [tl.float32, tl.float16, tl.bfloat16, tl.int32, tl.int64, tl.int8, tl.uint8, tl.float64]
TENSORS = st.builds(FakeTensor, st.integers(0, 2**48).map(lambda p: p * 4), st.sampled_from(DTYPES))
LEAVES = st.one_of(st.none(), st.booleans(), INTS, st.floats(allow_nan=False), TENSORS)
VALUES = st.recursive(LEAVES, lambda inner: st.tuples(inner, inner) | st.tuples(inner), max_leaves=6)


def _same(ours, theirs):
    """Triton returns constexpr values as they are; compare those by value and type."""
    if isinstance(ours, tuple) and isinstance(theirs, tuple):
        return len(ours) == len(theirs) and all(_same(a, b) for a, b in zip(ours, theirs))
    if isinstance(ours, float) and isinstance(theirs, float):
        return ours == theirs or math.isnan(ours) and math.isnan(theirs)
    return type(ours) is type(theirs) and ours == theirs


@settings(max_examples=600, deadline=None)
@given(VALUES, st.booleans(), st.booleans())
def test_triton_type_is_tritons_specialization(value, specialize, align):
    assert _same(triton_type(value, specialize=specialize, align=align), native(value, specialize, align))


@pytest.mark.parametrize("value", [2**64, -2**63 - 1])
def test_ints_beyond_64_bits_overflow_as_in_triton(value):
    with pytest.raises(OverflowError):
        native(value)
    with pytest.raises(OverflowError):
        triton_type(value)


class Lying(int):
    """An int whose __int__ disagrees with its value (or raises): Triton reads the int's own value."""
    def __int__(self):
        if self == 3:
            raise RuntimeError("boom")
        return 16


@pytest.mark.parametrize("value", [Lying(17), Lying(1), Lying(16), Lying(3), Lying(2**40)])
def test_an_int_subclass_is_specialized_and_checked_by_its_own_value(add, value):
    assert triton_type(value) == native(value)  # Triton's constexpr 1 is the argument itself; ours an int
    args = (t(0x1000), t(0x2000), t(0x3000), value, 1024)
    if int.__index__(value) % 16 == 0 and int.__index__(value) < 2**31:
        AssumptionCheck(add)(args)
    else:
        with pytest.raises(AssumptionError, match="parameter 'n'"):
            AssumptionCheck(add)(args)


@pytest.mark.parametrize("value", ["s", [1, 2], object(), b"x"])
def test_unspecializable_values_are_type_errors_as_in_triton(value):
    with pytest.raises(TypeError):
        native(value)
    with pytest.raises(TypeError):
        triton_type(value)


class _Index:
    def __index__(self):
        return 0x1000


@pytest.mark.parametrize("address", [0x1000, 0x1008, 2**64 - 16, True, "np.int64", _Index(), 1.5, -16, 2**64 + 16])
def test_a_data_ptr_is_taken_as_tritons_jit_takes_it(address):
    """data_ptr()'s answer: an int (a subclass too) in the u64 range, as Triton's JIT takes it;
    anything else fails with Triton's kind of error (a numpy int too, though it has __index__)."""
    if address == "np.int64":
        address = pytest.importorskip("numpy").int64(0x1000)
    t = FakeTensor(address, tl.float32)
    try:
        theirs = native(t)
    except (TypeError, OverflowError) as e:
        with pytest.raises(type(e)):
            triton_type(t)
    else:
        assert _same(triton_type(t), theirs)


def test_dtype_names():
    assert dtype_name(tl.float32) == "fp32" and dtype_name("torch.bfloat16") == "bf16"
    assert dtype_name("torch.bool") == "u1" and dtype_name("float8_e4m3fn") == "fp8e4nv"
    with pytest.raises(TypeError, match="no Triton type"):
        dtype_name("complex64")


# ---- the assumption check holds a call against one compiled kernel ----
@pytest.fixture(scope="module")
def add():
    ck = C.BY_NAME["vector_add"].compile()  # x, y, out: *fp32 aligned; n: i32 aligned; BLOCK=1024
    return CudaLauncher(ck.src, ck.metadata).spec


def t(ptr, dtype=None):
    return FakeTensor(ptr, dtype or tl.float32)


@pytest.mark.parametrize("args,message", [
    ((t(0x1000), t(0x2000), t(0x3000), 98432, 1024), None),
    ((0x1000, 0x2000, 0x3000, 32, 1024), None),  # int addresses: no dtype to hold against
    ((t(0x1004), t(0x2000), t(0x3000), 16, 1024), "parameter 'x_ptr': the kernel was compiled for a pointer divisible by 16, got 0x1004"),
    ((t(0x1000), t(0x2000, tl.float16), t(0x3000), 16, 1024), "parameter 'y_ptr': the kernel was compiled for a fp32 tensor .*got a fp16 tensor"),
    ((t(0x1000), t(0x2000), None, 16, 1024), "parameter 'out_ptr'.*got None"),
    ((t(0x1000), t(0x2000), t(0x3000), 17, 1024), "parameter 'n': the kernel was compiled for an integer divisible by 16, got 17"),
    ((t(0x1000), t(0x2000), t(0x3000), 2**31, 1024), "parameter 'n': the kernel was compiled for an integer in the i32 range, got 2147483648"),
    ((t(0x1000), t(0x2000), t(0x3000), 16.0, 1024), "parameter 'n': the kernel was compiled for an integer \\(i32\\), got 16.0"),
    ((t(0x1000), t(0x2000), t(0x3000), True, 1024), "parameter 'n': the kernel was compiled for an integer"),
    ((t(0x1000), t(0x2000), t(0x3000), 16, 512), "parameter 'BLOCK': the kernel was compiled for the constexpr 1024, got 512"),
    ((t(0x1000), t(0x2000), t(0x3000), 16, 1024.0), "parameter 'BLOCK': the kernel was compiled for the constexpr 1024, got 1024.0"),
])
def test_the_check_refuses_exactly_what_breaks_an_assumption(add, args, message):
    check = AssumptionCheck(add)
    if message is None:
        check(args)
        return
    with pytest.raises(AssumptionError, match="kernel 'add_kernel': " + message):
        check(args)
    assert issubclass(AssumptionError, ValueError)


@pytest.mark.parametrize("dtype", [tl.float16, tl.float32])
@pytest.mark.parametrize("block", [[32, 32], [64, 16], [128]])
def test_host_tensor_descriptors_specialize_as_in_triton(dtype, block):
    from triton.tools.tensor_descriptor import TensorDescriptor

    shape = [256] * len(block)
    strides = [256, 1][-len(block):]
    d = TensorDescriptor(FakeTensor(0x10000, dtype), shape, strides, block)
    assert _same(triton_type(d), native(d))


def test_namedtuples_specialize_as_tuples():
    import collections

    Pair = collections.namedtuple("Pair", "a b")
    value = Pair(FakeTensor(0x1000, tl.float32), 7)
    assert _same(triton_type(value), native(value))


class _Array:
    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


@pytest.mark.parametrize("cai, message", [
    ({"typestr": "<f4", "shape": (4,), "version": 3}, "'data' must be"),
    ({"data": (), "typestr": "<f4"}, "'data' must be"),
    ({"data": ("0x10", False), "typestr": "<f4"}, "'data' must be"),
    ({"data": (4096.5, False), "typestr": "<f4"}, "'data' must be"),
    ({"data": (True, False), "typestr": "<f4"}, "'data' must be"),
    ({"data": (4096, False), "typestr": ">f4"}, "little-endian"),
    ({"data": (4096, False), "typestr": "<fx"}, "no Triton type"),
    ("not a dict", "is not a dict"),
], ids=["no data", "empty data", "str address", "float address", "bool address", "big-endian", "bad size", "not a dict"])
def test_a_malformed_cuda_array_interface_is_a_type_error(cai, message):
    """__cuda_array_interface__ objects are read through one checked function: an int address and a
    little-endian type, else a TypeError that says what is wrong (never a float or bool address)."""
    from launcher.specialization import address_and_dtype

    with pytest.raises(TypeError, match=message):
        address_and_dtype(_Array(cai))
    assert address_and_dtype(_Array({"data": (4096, False), "typestr": "<f4"})) == (4096, "fp32")


@pytest.mark.parametrize("extra, message", [
    ({}, "'shape' must be"),
    ({"shape": None}, "'shape' must be"),
    ({"shape": (4, "8")}, "'shape' must be"),
    ({"shape": (4, -1)}, "'shape' must be"),
    ({"shape": (4, 8), "strides": (32,)}, "'strides' must be"),
    ({"shape": (4, 8), "strides": (32, 4.0)}, "'strides' must be"),
    ({"shape": (4, 8), "strides": "32,4"}, "'strides' must be"),
], ids=["no shape", "None shape", "str in shape", "negative size", "strides of another rank", "float stride",
        "str strides"])
def test_a_descriptor_base_with_a_malformed_array_interface_is_a_type_error(extra, message):
    """A tensor descriptor's base given by __cuda_array_interface__ needs a shape of
    non-negative integers and strides of its rank (or None): else a TypeError naming the field,
    never a KeyError or a ValueError from int()."""
    from launcher.tensordesc import CudaArray

    with pytest.raises(TypeError, match=message):
        CudaArray(_Array({"data": (4096, False), "typestr": "<f2", **extra}))


def test_an_array_interface_is_read_once_for_a_descriptor_base():
    """An object whose __cuda_array_interface__ is a property answering differently each time
    (another address, another shape) gives a base whose address, dtype, shape and strides all
    come from one answer."""
    from launcher.tensordesc import CudaArray

    class Size:  # an integer of another class, as numpy's are
        def __init__(self, n):
            self.n = n

        def __index__(self):
            return self.n

    class Shifting:
        def __init__(self):
            self.reads = 0

        @property
        def __cuda_array_interface__(self):
            self.reads += 1
            return {"data": (4096 * self.reads, False), "typestr": "<f2", "shape": (self.reads, Size(64)),
                    "strides": (128 * self.reads, 2), "version": 3}

    obj = Shifting()
    base = CudaArray(obj)
    assert obj.reads == 1
    assert (base.address, base.dtype, base.shape, base.strides) == (4096, "fp16", (1, 64), (64, 1))


def test_one_item_key_rule_for_every_front_door():
    """specialization.item_key keys the values every front door keys alike (tensors, ints, floats,
    bools, None); the guard's _item_key, a bundle's key_of and the C key of an exact tuple's items
    (GuardKey, in test_guard_key) answer what it answers, and each keys the rest its own way."""
    from launcher import bundle_kernel, fast_dispatch
    from launcher.specialization import int_key, item_key

    t = FakeTensor(0x1000, "fp32")
    values = [t, FakeTensor(0x1004, "fp16"), 0, 1, 16, 17, -3, 2**40, 2**63, 0.5, True, None]
    for v in values:
        want = item_key(v, FakeTensor)
        assert want is not NotImplemented
        assert fast_dispatch._item_key(v, FakeTensor) == want and bundle_kernel.key_of(v, FakeTensor) == want
    assert item_key(t, FakeTensor) == ("fp32", True) and item_key(FakeTensor(0x1004, "fp16"), FakeTensor) == ("fp16", False)
    assert item_key(17) == int_key(17) and item_key(True) is bool and item_key(None) is type(None)
    assert item_key(2**70) is None and item_key("text") is NotImplemented and item_key((1,)) is NotImplemented
    assert item_key(t) is NotImplemented  # not an instance of the tensor class named
    with pytest.raises(fast_dispatch.NoKey):
        fast_dispatch._item_key(2**70, FakeTensor)
