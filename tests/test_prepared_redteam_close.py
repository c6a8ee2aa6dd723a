"""A red-team review of the prepared launch's general path (launcher.prepared) on the CPU, in
dry runs: each test here failed before its fix. close() from code the general path runs
launches nothing on a module given back; a kernel parameter named `self` binds by keyword on
every path; prepare()'s own `kernel` and `grid` are positional only."""
import pytest

from cpu_triton import FakeTensor

pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")
from test_prepared import A0  # noqa: E402
from test_prepared_c import _renamed  # noqa: E402
from test_prepared_redteam import _error  # noqa: E402


# ---- names ----
def test_a_parameter_named_self_is_bound_by_keyword_on_every_path():
    x = FakeTensor(A0, tl.float32)
    p = _renamed(n={"name": "self"})
    want = p.launch(x, x, x, 64)
    assert p(x, x, x, self=64) == p.launch(x, x, x, self=64) == want
    message = _error(lambda: p.launch(x, x, x, 65))
    assert message[0].__name__ == "AssumptionError"
    assert _error(lambda: p(x, x, x, self=65)) == _error(lambda: p.launch(x, x, x, self=65)) == message
    p.close()
    with pytest.raises(ValueError, match="closed"):
        p(x, x, x, self=64)


def test_prepare_passes_keywords_named_kernel_and_grid_to_the_kernel():
    import launcher

    class Own:
        def _prepare_launch(self, grid, args, kwargs):
            return grid, args, kwargs

    assert launcher.prepare(Own(), (4,), 1, kernel=2, grid=3) == ((4,), (1,), {"kernel": 2, "grid": 3})
