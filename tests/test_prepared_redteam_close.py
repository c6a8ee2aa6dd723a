"""A red-team review of the prepared launch's general path (launcher.prepared) on the CPU, in
dry runs: each test here failed before its fix. close() from code the general path runs
launches nothing on a module given back; a kernel parameter named `self` binds by keyword on
every path; prepare()'s own `kernel` and `grid` are positional only."""
import types

import pytest

from cpu_triton import FakeTensor

pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")
from test_prepared import A0  # noqa: E402
from test_prepared_c import _renamed  # noqa: E402
from test_prepared_redteam import _add, _error  # noqa: E402


# ---- close() from code the general path runs ----
def test_a_launch_closed_by_its_own_grid_callable_launches_nothing_on_either_path():
    events = []
    holder = {}

    def grid(meta):
        if holder:
            holder.pop("p").close()
        return (4,)

    x = FakeTensor(A0, tl.float32)
    for call in (lambda p: p(x, x, x, 64), lambda p: p.launch(x, x, x, 64)):
        p = _add(grid=grid, release=lambda: events.append("released"))
        launched = []
        p._launcher = types.SimpleNamespace(dry_run=lambda *a: launched.append(a))
        holder["p"] = p
        with pytest.raises(ValueError, match="closed"):
            call(p)
        assert not launched and events.pop() == "released"


def test_a_launch_closed_by_its_enter_hook_finishes_before_the_module_is_given_back():
    from triton.knobs import HookChain

    events = []
    holder = {}

    class Runtime:
        launch_enter_hook = HookChain()
        launch_exit_hook = HookChain()

    Runtime.launch_enter_hook.add(lambda md: holder["p"].close() or events.append("enter"))
    Runtime.launch_exit_hook.add(lambda md: events.append("exit"))
    x = FakeTensor(A0, tl.float32)
    p = holder["p"] = _add(runtime=Runtime(), release=lambda: events.append("released"))
    assert p(x, x, x, 64)  # launched, its hooks set: the general path
    assert events == ["enter", "exit", "released"]
    with pytest.raises(ValueError, match="closed"):
        p(x, x, x, 64)


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
