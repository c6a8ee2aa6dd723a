"""Every bad call raises a clear exception naming the kernel and parameter, before any hook or
driver call (the dry-run entry reaches no driver, and the hooks record whether they ran)."""
import pytest

from triton_compile import compile_cpu
from launcher import CudaLauncher
from test_packing import BASE, FakeTensor, typical

import kernels as K


class Hooks:
    def __init__(self):
        self.calls = []

    def enter(self, md):
        self.calls.append("enter")

    def exit(self, md):
        self.calls.append("exit")


@pytest.fixture(scope="module")
def scalars():
    ck = compile_cpu(K.scalars_kernel, K.SCALARS_SIGNATURE)
    return CudaLauncher(ck.src, ck.metadata)


@pytest.fixture(scope="module")
def tuples():
    ck = compile_cpu(K.tuple_kernel, K.TUPLE_SIGNATURE, K.TUPLE_CONSTEXPRS)
    return CudaLauncher(ck.src, ck.metadata)


@pytest.fixture(autouse=True, params=["generated", "plan-driven"])
def path(request):
    """Every case runs through the generated fast path and through the plan-driven packer."""
    call.path = request.param
    return request.param


def call(launcher, *args, base=BASE):
    hooks = Hooks()
    grid_stream_fn_md = base[:6]
    dry_run = launcher.dry_run if call.path == "generated" else launcher.dry_run_planned
    try:
        return dry_run(*grid_stream_fn_md, {"md": 1}, hooks.enter, hooks.exit, *args)
    finally:
        call.hooks = hooks


def scalar_args(**over):
    args = {f"a_{t}": typical(t) for t in K.SCALAR_TYPES}
    args.update(over)
    return [0x1000] + list(args.values())


def expect(exc, match, launcher, *args, base=BASE):
    with pytest.raises(exc, match=match):
        call(launcher, *args, base=base)
    assert call.hooks.calls == [], "a bad call must not reach the enter hook"


def test_good_call_runs_both_hooks(scalars):
    call(scalars, *scalar_args())
    assert call.hooks.calls == ["enter", "exit"]


@pytest.mark.parametrize("ty,value,exc,match", [
    ("i8", 128, OverflowError, r"'a_i8' expects an int in \[-128, 127\].*got 128"),
    ("i8", -129, OverflowError, "'a_i8'"),
    ("u8", -1, OverflowError, r"'a_u8' expects an int in \[0, 255\]"),
    ("i16", 1 << 15, OverflowError, "'a_i16'"),
    ("u16", 70000, OverflowError, "'a_u16'"),          # Triton 3.6 silently wraps to 4464
    ("i32", 2**40 + 3, OverflowError, "'a_i32'"),      # Triton 3.7+ silently truncates to 3
    ("u32", 2**32, OverflowError, "'a_u32'"),
    ("i64", 2**63, OverflowError, "'a_i64'"),
    ("u64", -1, OverflowError, "'a_u64'"),
    ("u64", 2**64, OverflowError, "'a_u64'"),
    ("i1", 2, OverflowError, r"'a_i1' expects a bool or 0/1"),
    ("u1", -1, OverflowError, "'a_u1'"),
    ("i32", 1.5, TypeError, "'a_i32' expects an int.*got float"),
    ("i1", "yes", TypeError, "'a_i1'.*got str"),
    ("i64", None, TypeError, "'a_i64'.*got NoneType"),
    ("fp32", "x", TypeError, "'a_fp32' expects a real number.*got str"),
    ("fp16", 65520.0, OverflowError, r"'a_fp16'.*out of range"),
    ("fp32", 1e39, OverflowError, "'a_fp32'"),
    ("bf16", 1e39, OverflowError, "'a_bf16'"),
    ("fp64", 2**1024, OverflowError, "'a_fp64'"),
    ("fp64", [1.0], TypeError, "'a_fp64'.*got list"),
])
def test_bad_scalars(scalars, ty, value, exc, match):
    expect(exc, "kernel 'scalars_kernel': parameter " + match, scalars,
           *scalar_args(**{f"a_{ty}": value}))


@pytest.mark.parametrize("value,exc,match", [
    ("cpu", TypeError, "'out' expects a tensor.*got str"),
    (True, TypeError, r"'out' expects a tensor.*got bool \(pass int\(True\) for an address\)"),
    (-1, OverflowError, "'out'.*out of range"),
    (2**64, OverflowError, "'out'"),
    (1.0, TypeError, "'out'.*got float"),
])
def test_bad_pointers(scalars, value, exc, match):
    args = scalar_args()
    args[0] = value
    expect(exc, match, scalars, *args)


class RaisingTensor:
    def data_ptr(self):
        raise RuntimeError("storage was freed")


class WeirdTensor:
    def data_ptr(self):
        return "0x1000"


def test_data_ptr_that_raises_or_returns_garbage(scalars):
    args = scalar_args()
    args[0] = RaisingTensor()
    expect(TypeError, r"'out': .*RaisingTensor.data_ptr\(\) raised RuntimeError: storage was freed",
           scalars, *args)
    args[0] = WeirdTensor()
    expect(TypeError, r"'out': .*data_ptr\(\) returned str", scalars, *args)


def test_wrong_argument_count(scalars):
    args = scalar_args()
    expect(TypeError, r"kernel 'scalars_kernel' takes 15 arguments \(out, a_i1, .*\), got 14",
           scalars, *args[:-1])
    expect(TypeError, "takes 15 arguments.*got 16", scalars, *args, 1)


@pytest.mark.parametrize("t,exc,match", [
    ((0x1000, 16), ValueError, r"'t' expects a sequence of 3, got 2 items"),
    ((0x1000, 16, 3, 4), ValueError, "'t' expects a sequence of 3, got 4"),
    (5, TypeError, "'t' expects a sequence of 3, got int"),
    ((0x1000, 2**31, 3), OverflowError, r"'t\[1\]' expects an int"),
    (("p", 16, 3), TypeError, r"'t\[0\]' expects a tensor"),
])
def test_bad_tuples(tuples, t, exc, match):
    expect(exc, match, tuples, 0x1000, t, ((0x3000, 1), (5, 0.5)), 2, 1.0)


def test_bad_nested_tuple_member(tuples):
    expect(TypeError, r"'nested\[1\]\[1\]' expects a real number", tuples,
           0x1000, (0x2000, 16, 3), ((0x3000, 1), (5, "half")), 2, 1.0)
    expect(ValueError, r"'nested\[0\]' expects a sequence of 2, got 3", tuples,
           0x1000, (0x2000, 16, 3), ((0x3000, 1, 9), (5, 0.5)), 2, 1.0)


@pytest.mark.parametrize("base,exc,match", [
    ((2**31, 1, 1, 0, 0, (4, 1, 0)), OverflowError, "'gridX'"),
    ((1, 1.5, 1, 0, 0, (4, 1, 0)), TypeError, "'gridY'"),
    ((1, 1, 1, -1, 0, (4, 1, 0)), OverflowError, "'stream'"),
    ((1, 1, 1, 0, None, (4, 1, 0)), TypeError, "'function'"),
    ((1, 1, 1, 0, 0, (4, 1)), TypeError, r"kernel_metadata must be a \(num_warps, num_ctas, shared\)"),
    ((1, 1, 1, 0, 0, None), TypeError, "kernel_metadata must be"),
    ((1, 1, 1, 0, 0, (4, -1, 0)), OverflowError, "kernel_metadata.num_ctas"),
])
def test_bad_launch_arguments(scalars, base, exc, match):
    expect(exc, match, scalars, *scalar_args(), base=base + (None, None, None))


def test_zero_grid_packs_and_runs_hooks(scalars):
    # Triton: a grid with a zero dimension launches nothing, raises nothing, runs both hooks.
    call(scalars, *scalar_args(), base=(0, 1, 1, 0, 0, (4, 1, 0)))
    assert call.hooks.calls == ["enter", "exit"]


def test_pointer_objects_are_not_called_twice_on_success(scalars):
    class Counting(FakeTensor):
        n = 0

        def data_ptr(self):
            Counting.n += 1
            return super().data_ptr()

    args = scalar_args()
    args[0] = Counting(0x2000)
    call(scalars, *args)
    assert Counting.n == 1
