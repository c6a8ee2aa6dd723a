"""A red-team review of the host descriptor encoder in C (cdefs/call.c, DescEncoder) on the CPU:
each test here failed before its fix. A descriptor whose attributes run code does not crash it
(a property that empties the sizes read before it), and it reads a descriptor as the Python
encoder does: an exact str padding (tensordesc.nan_padding), round_f32_to_tf32 as
getattr(d, name, False), sizes and strides as iterating them gives, an interrupt raised."""
import os
import subprocess
import sys
import textwrap
import types

import pytest

# ---- host descriptors (launcher._call.DescEncoder) ----
def _encoders(monkeypatch):
    """(the C encoder, armed; a Python encoder warmed alike; the fakes recording the C encodes)."""
    from test_descriptor_c import META, R39, Fakes, armed, warmed

    from launcher import tensormap

    fakes = Fakes(monkeypatch)
    return armed(fakes), warmed(tensormap.DescriptorEncoder(META, 2, R39)), fakes


def _either(fn, d):
    try:
        return "ok", fn(d)
    except BaseException as e:  # noqa: BLE001 - compared by type and text
        return "raised", type(e), str(e)


def test_a_descriptor_whose_strides_property_empties_its_shape_does_not_crash():
    code = textwrap.dedent("""
        import sys
        sys.path.insert(0, %r)
        import pytest
        from test_prepared_redteam_desc import _encoders, _either

        class D:
            base, padding = 0x10000, "zero"

            def __init__(self):
                self.shape = [128, 256]

            @property
            def strides(self):
                self.shape.clear()  # what was read of the sizes is gone
                return [256, 1]

        mp = pytest.MonkeyPatch()
        enc, slow, fakes = _encoders(mp)
        out = _either(enc, D())
        assert out[0] == "ok" and out[1][1:] == (128, 256, 256, 1), out
        print("ok")
    """) % os.path.dirname(os.path.abspath(__file__))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), (run.returncode, run.stderr[-2000:])


class _Str(str):
    pass


class _OwnIterList(list):
    def __iter__(self):
        return iter([64, 64])


class _OwnIterTuple(tuple):
    def __iter__(self):
        return iter([64, 64])


class _Size(tuple):  # like torch.Size: a tuple subclass that iterates as a tuple
    pass


class _Tf32Raises:
    base, shape, strides, padding = 0x10000, [128, 256], [256, 1], "zero"

    @property
    def round_f32_to_tf32(self):
        raise ValueError("round_f32_to_tf32 cannot be read")


def _desc(**change):
    d = dict(base=0x10000, shape=[128, 256], strides=[256, 1], padding="zero")
    d.update(change)
    return types.SimpleNamespace(**d)


@pytest.mark.parametrize("make", [
    lambda: _desc(padding=_Str("zero")),  # tensordesc.nan_padding: an exact str
    lambda: _desc(padding=_Str("nan")),
    lambda: _desc(shape=_OwnIterList([128, 256])),  # read as iterating it gives
    lambda: _desc(shape=_OwnIterTuple((128, 256))),
    lambda: _desc(strides=_OwnIterTuple((256, 1))),
    lambda: _Tf32Raises(),  # getattr(d, name, False) raises what is not an AttributeError
], ids=["str-zero", "str-nan", "list-iter", "tuple-iter", "strides-iter", "tf32-raises"])
def test_the_c_encoder_reads_a_descriptor_as_the_python_encoder_does(monkeypatch, make):
    enc, slow, _ = _encoders(monkeypatch)
    assert _either(enc, make()) == _either(slow, make())


def test_a_sequence_subclass_that_iterates_as_its_base_stays_in_c(monkeypatch):
    enc, slow, fakes = _encoders(monkeypatch)
    before = len(fakes.c_calls)
    d = _desc(shape=_Size((128, 256)), strides=_Size((256, 1)))
    assert enc(d) == slow(d)
    assert len(fakes.c_calls) == before + 1


def test_an_interrupt_in_a_descriptors_base_is_raised_by_the_c_encoder(monkeypatch):
    enc, slow, fakes = _encoders(monkeypatch)

    class Base:
        fire = True

        def data_ptr(self):
            if Base.fire:
                Base.fire = False
                raise KeyboardInterrupt
            return 0x10000

    with pytest.raises(KeyboardInterrupt):
        enc(_desc(base=Base()))
