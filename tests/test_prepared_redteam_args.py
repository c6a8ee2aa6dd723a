"""A red-team review of the launcher object's argument checks (launcher.arguments,
launcher.cuda_launcher) on the CPU, in dry runs: each test here failed (or hung) before its fix."""
import multiprocessing
import time

import pytest

import kernels as K
from cpu_triton import FakeTensor

pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")
from test_prepared import A0, compile_for_call  # noqa: E402


def _launcher():
    from launcher import CudaLauncher

    x = FakeTensor(A0, tl.float32)
    values = (x, x, x, 1024, 256)
    ck = compile_for_call(K.add_kernel, values)
    return CudaLauncher(ck.src, ck.metadata), values


class _Endless:
    """An iterator that never ends, slowly (a hang here grows by a few kilobytes, not gigabytes)."""

    def __iter__(self):
        return self

    def __next__(self):
        time.sleep(0.001)
        return 1


def _metadata_refused(queue):
    launcher, values = _launcher()
    for run in (launcher.dry_run, launcher.dry_run_planned):  # the generated code and the plan-driven packer
        try:
            run(4, 1, 1, 0, 0xF00, _Endless(), None, None, None, *values)
            queue.put("launched")
        except TypeError as e:
            queue.put(str(e))


def test_kernel_metadata_that_never_ends_is_refused_not_iterated_forever():
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_metadata_refused, args=(queue,))
    child.start()
    child.join(30)
    hung = child.is_alive()
    if hung:
        child.kill()
        child.join()
    assert not hung, "tuple(kernel_metadata) of an endless iterator"
    for _ in range(2):
        assert "kernel_metadata must be a (num_warps, num_ctas, shared) tuple" in queue.get(timeout=10)


@pytest.mark.parametrize("metadata", [[4, 1, 0], (4, 1, 0), range(4, 7)])
def test_kernel_metadata_of_any_sequence_is_taken(metadata):
    launcher, values = _launcher()
    want = launcher.dry_run(4, 1, 1, 0, 0xF00, launcher.packed_metadata, None, None, None, *values)
    got = launcher.dry_run(4, 1, 1, 0, 0xF00, metadata, None, None, None, *values)
    assert len(got) == len(want)


class _Fickle(FakeTensor):
    """A tensor whose first data_ptr() is not an address and whose later ones are."""
    answers = []

    def data_ptr(self):
        return _Fickle.answers.pop(0) if _Fickle.answers else self.ptr


@pytest.mark.parametrize("first", ["0x1000", -16, 1 << 64])
def test_an_argument_that_reads_differently_when_diagnosed_is_a_type_error_naming_the_kernel(first):
    launcher, values = _launcher()
    t = _Fickle(A0, tl.float32)
    _Fickle.answers = [first]
    with pytest.raises(TypeError, match="kernel 'add_kernel': an argument could not be packed .* data_ptr"):
        launcher.dry_run(4, 1, 1, 0, 0xF00, launcher.packed_metadata, None, None, None, t, *values[1:])
