"""A red-team review of the prepared launch's C call (cdefs/call.c, FastCall) on the CPU, in dry
runs; each test here failed before its fix (test_prepared_redteam_desc.py: the descriptor
encoder; test_prepared_redteam_close.py: close() and names on the general path).

- Python code a C check runs (a tensor's dtype or data_ptr(), a grid item's __index__) that
  raises KeyboardInterrupt or SystemExit: raised, not cleared into a fallback that runs the same
  code again and may launch.
- A stream getter's value the C path cannot take: the general path's error, naming the stream.
"""
import pytest

import kernels as K
from cpu_triton import FakeTensor

pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")
from test_prepared import A0, compile_for_call, prepared  # noqa: E402
from test_prepared_c import spy  # noqa: E402


def _add(grid=(4,), stream=lambda: 0x5EA, values=None, runtime=None, release=None, dry_run=True):
    from launcher import triton_adapter as A
    from launcher.prepared import PreparedLaunch

    x = FakeTensor(A0, tl.float32)
    values = values or (x, x, x, 1024, 256)
    ck = compile_for_call(K.add_kernel, values)
    return PreparedLaunch(A.spec_from_triton(ck.src, ck.metadata), A.jit_parameters(K.add_kernel), values, {}, grid,
                          function=0xF00, stream=stream, runtime=runtime, compiled=ck, dry_run=dry_run,
                          release=release)


def _error(call):
    try:
        call()
    except BaseException as e:  # noqa: BLE001 - compared by type and text
        return type(e), str(e)
    return None


# ---- interrupts in code a C check runs ----
class Once(FakeTensor):
    """A tensor whose dtype or data_ptr() raises `interrupt` once (a Ctrl-C that lands there)."""
    interrupt = None
    where = None

    def _fire(self, where):
        if Once.where == where and Once.interrupt is not None:
            interrupt, Once.interrupt = Once.interrupt, None
            raise interrupt

    @property
    def dtype(self):
        self._fire("dtype")
        return self._dtype

    @dtype.setter
    def dtype(self, value):
        self._dtype = value

    def data_ptr(self):
        self._fire("data_ptr")
        return self.ptr


@pytest.mark.parametrize("where", ["dtype", "data_ptr"])
@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_in_a_tensors_dtype_or_data_ptr_is_raised_by_the_c_path_not_lost(where, interrupt):
    t = Once(A0, tl.float32)
    p = prepared(K.add_kernel, (t, t, t, 1024, 256))[0]
    seen = spy(p)
    try:
        Once.where, Once.interrupt = where, interrupt()
        with pytest.raises(interrupt):
            p(t, t, t, 64)
        assert not seen  # no fallback that runs data_ptr() again and launches
        with pytest.raises(interrupt):  # by name too
            Once.interrupt = interrupt()
            p(t, t, out_ptr=t, n=64)
        assert not seen
    finally:
        Once.interrupt = None
    assert p(t, t, t, 64) == p.launch(t, t, t, 64)


def test_an_interrupt_in_a_grid_items_index_is_raised_by_the_c_path_not_lost():
    class Item:
        fire = False

        def __index__(self):
            if Item.fire:
                Item.fire = False
                raise KeyboardInterrupt
            return 4

    x = FakeTensor(A0, tl.float32)
    p = _add(grid=lambda meta: (Item(), 1))
    seen = spy(p)
    Item.fire = True
    with pytest.raises(KeyboardInterrupt):
        p(x, x, x, 64)
    assert not seen
    assert p(x, x, x, 64) == p.launch(x, x, x, 64)


# ---- the stream getter's value ----
@pytest.mark.parametrize("stream", [-1, 1 << 64, 1.5, None, "0"])
def test_a_stream_the_c_path_cannot_take_gets_the_general_paths_error_naming_the_stream(stream):
    x = FakeTensor(A0, tl.float32)
    p = _add(stream=lambda: stream)
    want = _error(lambda: p.launch(x, x, x, 64))
    assert want is not None and "parameter 'stream'" in want[1]
    assert _error(lambda: p(x, x, x, 64)) == want
    assert _error(lambda: p(x, x, out_ptr=x, n=64)) == want
    bound = _add(stream=lambda: stream, dry_run=False)  # p(): the launch bound at prepare (no driver needed to bind)
    assert bound._fast_ready() == (True, True)
    assert _error(bound) == _error(bound.launch) == want


def test_a_stream_whose_index_raises_an_interrupt_raises_it():
    class Handle:
        def __index__(self):
            raise KeyboardInterrupt

    x = FakeTensor(A0, tl.float32)
    p = _add(stream=lambda: Handle())
    seen = spy(p)
    with pytest.raises(KeyboardInterrupt):
        p(x, x, x, 64)
    assert not seen
