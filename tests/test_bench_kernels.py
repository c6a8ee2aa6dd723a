"""The benchmark suite's kernels and arguments, checked on the CPU (compiled for sm_90, dry run).

What the suite hands each launch path is checked here without a GPU: every kernel compiles with
this Triton, what a launcher object gets (`Case.runtime`) packs without error, and the flat
parameter lists the raw peers (cuda.core, cuda.bindings) send are the bytes our launcher sends,
in the kernel's parameter order. No timing is measured or asserted."""
import importlib.util
import os
import struct

import pytest

import launcher
from launcher.bench import kernels as K
from launcher.bench import names as N
from launcher.bench.cases import plain_cases

BASE = (1, 1, 1, 0, 0, (4, 1, 0), None, None, None)  # grid, stream, function, metadata, hooks
BENCH_DIR = os.path.dirname(os.path.abspath(K.__file__))


class FakeTensor:
    """Anything with data_ptr() is a pointer argument; distinct, 16-byte aligned addresses."""

    count = 0

    def __init__(self, n):
        FakeTensor.count += 1
        self.address = 0x7F0000000000 + 0x10000 * FakeTensor.count

    def data_ptr(self):
        return self.address


def _compile(fn, signature, constexprs=None):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs or {})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32))


def _signature(case):
    """The signature Triton's JIT gives this case's arguments (no tuples but the nested case)."""
    if case.name == N.NESTED:
        return {"out": "*fp32", "t": ("*fp32", "i32"), "nested": (("*fp32", "i32"), ("i32", "fp32")),
                "scale": "fp32"}, {}
    names = [p for p in case.signature.parameters if p not in case.kwargs]
    assert len(names) == len(case.flat)
    sig = {name: ty for name, (_, ty) in zip(names, case.flat)}
    sig.update({k: "constexpr" for k in case.kwargs})
    return sig, dict(case.kwargs)


_PACK = {"i32": "<i", "i64": "<q", "fp32": "<f"}


def _flat_bytes(flat):
    return [struct.pack("<Q" if ty.startswith("*") else _PACK[ty], fn()) for fn, ty in flat]


@pytest.fixture(scope="module")
def cases():
    return plain_cases(FakeTensor)


@pytest.mark.parametrize("name", [N.ONE_ARG, N.VECTOR_ADD, N.MIXED16, N.MIXED19, N.ARGS64, N.NESTED])
def test_case_arguments_pack_and_peers_send_the_same_bytes(cases, name):
    case = next(c for c in cases if c.name == name)
    sig, constexprs = _signature(case)
    ck = _compile(K.__dict__[case.fn.__name__], sig, constexprs)
    run = launcher.CudaLauncher(ck.src, ck.metadata)
    params = run.dry_run(*BASE, *case.runtime(case.args))
    assert params[-2:] == [bytes(8), bytes(8)]  # the scratch pointers the peers pass as 0, 0
    assert params[:-2] == _flat_bytes(case.flat)


def test_runtime_arguments_put_constexprs_in_parameter_order(cases):
    add = next(c for c in cases if c.name == N.VECTOR_ADD)
    x, y, out, n, block = add.runtime(add.args)
    assert (n, block) == (1000, 1024) and out is add.args[2]


def test_cold_kernels_have_distinct_shapes_and_twins_of_the_same_shape(tmp_path):
    shapes = K.cold_shapes(25)
    assert len(set(shapes)) == 25 and all(sorted(s) == sorted("pifl" * 4) for s in shapes)
    kernels = K.load_cold_kernels(3, str(tmp_path), twins=3)
    assert len({tuple(sig.values()) for _, sig, _ in kernels}) == 3  # a signature of its own each
    for a, sig_a, twins in kernels:
        assert len(sig_a) == 16 and len(twins) == 3
        names = {a.fn.__name__} | {b.fn.__name__ for b, _ in twins}
        assert len(names) == 4  # other kernel names...
        for b, sig_b in twins:
            assert list(sig_b.values()) == list(sig_a.values())  # ...for the same shape...
            assert set(sig_b).isdisjoint(sig_a)  # ...and other parameter names


def test_cold_kernels_compile_and_their_arguments_pack(tmp_path):
    a, sig_a, twins = K.load_cold_kernels(2, str(tmp_path), twins=2)[1]
    for fn, sig in [(a, sig_a)] + twins:
        ck = _compile(fn, sig)
        args = K.cold_arguments(sig_a, lambda: FakeTensor(1))
        params = launcher.CudaLauncher(ck.src, ck.metadata).dry_run(*BASE, *args)
        assert len(params) == 16 + 2


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_startup_kernels_compile_and_the_child_names_them_alike():
    kernels = _load(os.path.join(BENCH_DIR, "startup_kernels.py"), "bench_startup_kernels_test")
    child = _load(os.path.join(BENCH_DIR, "startup_child.py"), "bench_startup_child_test")
    assert kernels.NAMES == child.NAMES and len(kernels.NAMES) == 20
    sources = set()
    for name in kernels.NAMES:
        fn = getattr(kernels, name)
        sources.add(fn.src if hasattr(fn, "src") else name)
    assert len(sources) == 20  # each kernel a cache entry and a cubin of its own
    for name in (kernels.NAMES[0], kernels.NAMES[-1]):
        ck = _compile(getattr(kernels, name), {"x": "*fp32", "out": "*fp32"})
        assert ck.name == name


def test_mixed19_has_19_runtime_arguments(cases):
    case = next(c for c in cases if c.name == N.MIXED19)
    assert len(case.args) == 19 == len(case.flat) and not case.kwargs
