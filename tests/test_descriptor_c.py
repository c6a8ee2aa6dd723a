"""The C encoder of host tensor descriptors (launcher._call.DescEncoder, cdefs/call.c) on the CPU.

The native encode (launcher_encode_tensor_map, which needs the driver) is swapped for a cffi
callback with its signature that records what it is asked and writes bytes that depend on all
of it; the Python encoder's driver encoder for a function that gives the same bytes. The C
path must then give what the Python encoder gives, for every descriptor, and never raise about
one: whatever it does not take (odd types, wrong ranks, tf32 rounding, an encoder failure) is
the Python encoder's, which explains."""
import gc
import struct
import sys
import types
import weakref

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launcher import driver
from launcher import spec as S
from launcher import tensormap

META = {"swizzle": 3, "elem_size": 2, "elem_type": 8, "block_size": [32, 64], "fp4_padded": False}
R39 = S.Conventions()  # tma_tf32: a descriptor asking for tf32 rounding stays in Python
SIG = "int(char *, const void *, uint64_t, const int64_t *)"


def _bytes(nan, address, dims):
    """What both encoders write: the padding, the address and every size and stride."""
    raw = struct.pack("<BQ", nan, address) + struct.pack(f"<{len(dims)}q", *dims)
    return raw + bytes(128 - len(raw))


class Fakes:
    """The driver's encoders swapped: Python's gives _bytes(); the native one (a cffi callback,
    reached through driver.entry_address) gives the same from its C arguments, and counts."""

    def __init__(self, monkeypatch, rc=0):
        ffi = driver.native()[0]
        self.ffi, self.rc, self.c_calls, self.py_calls, self.formats = ffi, rc, [], [], {}

        def tensor_map_encoder(elem_type, box, elem_size, interleave, swizzle, l2, oob, bit21):
            fmt = ffi.new("launcher_tensor_map_format *", {"elem_type": elem_type, "rank": len(box), "box": list(box),
                                                            "oob_fill": oob})
            self.formats[driver.address(fmt)] = oob

            def encode(address, shape, strides):
                self.py_calls.append(address)
                if address >= 1 << 63:
                    raise ValueError("tensor map: an address the test's encoder refuses")
                return _bytes(oob, address, (*shape, *strides))

            encode.format = fmt
            return encode

        @ffi.callback(SIG)
        def native(out, fmt, address, dims):
            fmt_addr = int(ffi.cast("uintptr_t", fmt))
            rank = ffi.cast("launcher_tensor_map_format *", fmt).rank
            values = [dims[i] for i in range(2 * rank)]
            self.c_calls.append((self.formats[fmt_addr], address, values))
            if self.rc or address >= 1 << 63:
                return self.rc or 1
            ffi.memmove(out, _bytes(self.formats[fmt_addr], address, values), 128)
            return 0

        self.native = native
        real_entry = driver.entry_address
        monkeypatch.setattr(driver, "tensor_map_encoder", tensor_map_encoder)
        monkeypatch.setattr(driver, "driver_version", lambda: 13020)  # no bit-21 workaround to ask about
        monkeypatch.setattr(driver, "entry_address", lambda name: int(ffi.cast("uintptr_t", native))
                            if name == "launcher_encode_tensor_map" else real_entry(name))


def desc(base=0x10000, shape=(128, 256), strides=(256, 1), padding="zero", **extra):
    return types.SimpleNamespace(base=base, shape=list(shape), strides=list(strides), padding=padding, **extra)


def warmed(enc):
    """enc after the first encode of each padding (which makes its format, in Python, and arms the
    C path); a Python encoder warmed so remembers the same maps as the C one's fallback."""
    enc(desc())
    enc(desc(padding="nan"))
    return enc


def armed(fakes, conventions=R39):
    enc = warmed(tensormap.descriptor_encoder(META, 2, conventions))
    assert enc._armed() == (True, True) and len(fakes.c_calls) == 0
    return enc


def test_after_the_first_encode_a_common_descriptor_is_encoded_in_c_without_the_python_cache(monkeypatch):
    fakes = Fakes(monkeypatch)
    enc = armed(fakes)
    slow = gc.get_referents(enc)  # the Python encoder it falls back on
    py_before = len(fakes.py_calls)
    out = enc(desc(0x20000, shape=(64, 128), strides=(128, 1)))
    assert out == (_bytes(0, 0x20000, (64, 128, 128, 1)), 64, 128, 128, 1)
    assert fakes.c_calls == [(0, 0x20000, [64, 128, 128, 1])] and len(fakes.py_calls) == py_before
    assert enc(desc(0x30000, padding="nan"))[0] == _bytes(1, 0x30000, (128, 256, 256, 1))  # the NaN format
    assert fakes.c_calls[-1][0] == 1
    tensor = types.SimpleNamespace(data_ptr=lambda: 0x40000)
    assert enc(desc(tensor, shape=(8, 16), strides=(16, 1)))[0] == _bytes(0, 0x40000, (8, 16, 16, 1))
    assert slow  # referenced (the fallback)


ODD = [  # each makes a new descriptor: the C path and the Python encoder are given one each
    lambda: desc(shape=(4, 4, 4), strides=(16, 4, 1)),  # another rank: the Python encoder says so
    lambda: desc(strides=(1, 128)),  # the last stride not 1
    lambda: desc(shape=(128.0, 256)),  # not ints
    lambda: desc(shape=(True, 256)),  # a bool is not an int here
    lambda: desc(shape=(1 << 70, 256)),  # beyond 64 bits
    lambda: desc(padding="NaN"),  # neither "zero" nor "nan"
    lambda: desc(padding=None),
    lambda: desc(round_f32_to_tf32=True),  # tf32-rounded maps are Python's
    lambda: desc(round_f32_to_tf32=1),
    lambda: desc(base=-16),
    lambda: desc(base=None),
    lambda: desc(base=types.SimpleNamespace(data_ptr=lambda: "0x1000")),
    lambda: desc(base=types.SimpleNamespace(data_ptr=lambda: 1 / 0)),
    lambda: desc(base=1 << 63),  # the encoder fails: the C path declines, Python raises its error
    lambda: types.SimpleNamespace(base=0x1000, shape=[8, 8], strides=[8, 1]),  # no padding
    lambda: types.SimpleNamespace(base=0x1000, shape=iter([8, 8]), strides=[8, 1], padding="zero"),
    lambda: 42,
]


def _either(fn, d):
    try:
        return ("ok", fn(d))
    except Exception as e:  # noqa: BLE001 - compared by type
        return ("raised", type(e))


@pytest.mark.parametrize("d", ODD, ids=range(len(ODD)))
def test_what_the_c_path_does_not_take_goes_to_the_python_encoder_with_the_same_outcome(monkeypatch, d):
    fakes = Fakes(monkeypatch)
    enc = armed(fakes)
    slow = warmed(tensormap.DescriptorEncoder(META, 2, R39))
    assert _either(enc, d()) == _either(slow, d())


def test_a_native_encoder_failure_is_declined_and_explained_by_python(monkeypatch):
    fakes = Fakes(monkeypatch, rc=7)
    enc = armed(fakes)
    before = len(fakes.py_calls)
    assert enc(desc(0x50000))[0] == _bytes(0, 0x50000, (128, 256, 256, 1))  # Python's encode, after C's failed
    assert len(fakes.c_calls) == 1 and len(fakes.py_calls) == before + 1


ints = st.one_of(st.integers(-4, 1 << 20), st.sampled_from([0, 1, 16, (1 << 31) - 1, 1 << 31, (1 << 63) - 1]))


@settings(max_examples=300, deadline=None)
@given(base=st.one_of(st.integers(0, (1 << 64) - 1), st.none()), shape=st.lists(ints, min_size=1, max_size=3),
       strides=st.lists(ints, min_size=1, max_size=3), as_tuple=st.booleans(),
       padding=st.sampled_from(["zero", "nan", "other"]), tf32=st.sampled_from([None, False, True]))
def test_the_c_path_and_the_python_encoder_agree_on_generated_descriptors(base, shape, strides, as_tuple, padding,
                                                                          tf32):
    mp = pytest.MonkeyPatch()
    try:
        fakes = Fakes(mp)
        enc = armed(fakes)
        slow = warmed(tensormap.DescriptorEncoder(META, 2, R39))
        extra = {} if tf32 is None else {"round_f32_to_tf32": tf32}
        d = desc(base, shape, strides, padding, **extra)
        if as_tuple:
            d.shape, d.strides = tuple(shape), tuple(strides)
        assert _either(enc, d) == _either(slow, d)
    finally:
        mp.undo()


def test_the_c_encoder_holds_no_references_it_should_not(monkeypatch):
    fakes = Fakes(monkeypatch)
    enc = armed(fakes)
    size, stride = 1000003, 1000033  # not small ints: their counts are their own
    d = desc(0x60000, shape=(size, 64), strides=(stride, 1))
    s0, t0, d0 = sys.getrefcount(d.shape[0]), sys.getrefcount(d.strides[0]), sys.getrefcount(d)
    for _ in range(100):
        out = enc(d)
    del out
    assert (sys.getrefcount(d.shape[0]), sys.getrefcount(d.strides[0]), sys.getrefcount(d)) == (s0, t0, d0)
    slow = [r for r in gc.get_referents(enc) if isinstance(r, tensormap.DescriptorEncoder)]
    assert slow, "the fallback is visible to the collector"
    gone = weakref.ref(slow[0])
    del enc, slow
    gc.collect()
    assert gone() is None  # the cycle C encoder <-> Python encoder is collected


def test_fp4_padded_descriptors_stay_in_python(monkeypatch):
    Fakes(monkeypatch)
    enc = tensormap.descriptor_encoder(dict(META, fp4_padded=True), 2, R39)
    assert isinstance(enc, tensormap.DescriptorEncoder)
