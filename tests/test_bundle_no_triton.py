"""Bundles in a process where `import triton` fails (issue 13): loaded, their variants chosen and
their launches dry-run, byte for byte what our drop-in launcher packs for the same kernel and
arguments in a process with Triton (every kernel of tests/cpu_corpus.py), and what Triton's
own JIT launched for the calls a capture recorded.

The bundles are exported by the Triton release of this environment (CI runs this file against
3.6 and 3.9); the child process (tests/no_triton_child.py) never imports Triton.
"""
import json
import os
import subprocess
import sys

import pytest

import bundle_cases as BC
from bundle_cases import Desc, Ptr
from launcher import CudaLauncher
from launcher import variants as V

HERE = os.path.dirname(__file__)


def run_child(tmp_path, calls):
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"calls": calls}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), HERE]))
    proc = subprocess.run([sys.executable, os.path.join(HERE, "no_triton_child.py"), str(job)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["triton_modules"] == [] and out["triton_importable"] is False
    return out


@pytest.fixture
def fake_scratch():
    """Triton's allocator for the drop-in's scratch: the fake address the child's allocator gives."""
    import triton
    from triton.runtime import _allocation

    class Scratch:
        def data_ptr(self):
            return 0x7E0000000000

    old = _allocation._allocator.get()
    triton.set_allocator(lambda size, align, stream: Scratch())
    yield
    _allocation._allocator.set(old)


def _bundle_args(spec, args):
    """The corpus's launcher arguments as a Triton call passes them: pointers with the dtype of
    their parameter, host descriptors, constexprs with the values the kernel was compiled for."""
    constants = dict(spec.constants)

    def conv(arg, path, v):
        if arg.kind == "tuple":
            return tuple(conv(c, path + (i,), x) for i, (c, x) in enumerate(zip(arg.children, v)))
        if arg.kind == "constexpr":
            return V.decode_constant(constants[path]) if path in constants else v
        if arg.kind == "pointer":
            return Ptr(v if isinstance(v, int) else v.data_ptr(), arg.type.lstrip("*"))
        if arg.kind == "tensordesc":
            return Desc(Ptr(v.base.data_ptr(), arg.desc.dtype), tuple(v.shape), tuple(v.strides), tuple(v.block_shape))
        return v

    return tuple(conv(a, (i,), v) for i, (a, v) in enumerate(zip(spec.args, args)))


def _descriptor_args():
    """Host descriptors for the tensor-descriptor kernel (its corpus entry has no CPU arguments)."""
    import triton.language as tl
    from triton.tools.tensor_descriptor import TensorDescriptor

    from cpu_triton import FakeTensor

    return (TensorDescriptor(FakeTensor(BC.P[4], tl.float16), [256, 256], [256, 1], [64, 64]),
            TensorDescriptor(FakeTensor(BC.P[5], tl.float16), [256, 256], [256, 1], [64, 64]), 64, 64)


def test_every_corpus_kernel_dry_runs_as_the_drop_in_does(tmp_path, fake_scratch):
    path = tmp_path / "corpus.bundle"
    data, kernels = BC.export_corpus(path)
    calls, expected = [], []
    for label, entry, ck in kernels:
        if entry is None:
            continue
        args = entry.args
        if args is None:
            if ck.metadata.tensordesc_meta:  # TMA-lowered: encoding a tensor map needs the driver
                continue
            args = _descriptor_args()
        drop_in = CudaLauncher(ck.src, ck.metadata)
        spec = drop_in.spec
        grid = (3, 2, 1)
        want = drop_in.dry_run(*grid, 0, 0, spec.packed_metadata, None, None, None, *args)
        kwargs = dict(entry.options)  # compiled with num_ctas=2, launch_pdl, ...: called with them, as in Triton
        calls.append({"bundle": str(path), "kernel": data.variants[_id(data, spec, ck)].kernel, "arch": spec.arch,
                      "grid": list(grid), "args": [BC.to_json(a) for a in _bundle_args(spec, args)],
                      "kwargs": {k: BC.to_json(v) for k, v in kwargs.items()}})
        expected.append((label, _id(data, spec, ck), [p.hex() for p in want]))
    labels = [e[0] for e in expected]
    assert {"vector_add@90", "tuples@90", "scalars@90", "many_args@90", "device_tma_with_scratch@90",
            "large_shared_memory@90", "grid_3d@90", "num_ctas_2@90", "pdl@90", "cooperative@90",
            "vector_add@100", "tuples@100", "host_tma@80"} <= set(labels)
    out = run_child(tmp_path, calls)
    for (label, vid, want), got in zip(expected, out["results"]):
        assert "error" not in got, (label, got)
        assert got["variant"] == vid, label
        assert got["params"] == want, label
    # the scratch kernel asked the allocator set with launcher.set_allocator, as Triton's would be asked
    assert out["scratch"], "the device-descriptor kernel allocated no scratch"


def _id(data, spec, ck):
    from launcher import bundle_format as BF

    vid = BF.variant_id(spec, bytes(ck.kernel))
    assert vid in data.variants
    return vid


@pytest.mark.parametrize("arch", [90, 100, 80])
def test_captured_calls_replay_as_triton_launched_them(tmp_path, arch):
    path = tmp_path / f"captured{arch}.bundle"
    launches = BC.capture_workload(path, arch)
    from launcher import bundle_format as BF

    data = BF.read_bundle(path)
    calls = [{"bundle": str(path), "kernel": call.kernel, "arch": arch,
              "grid": call.grid if isinstance(call.grid, str) else list(call.grid),
              "args": [BC.to_json(a) for a in call.args], "kwargs": {k: BC.to_json(v) for k, v in call.kwargs.items()}}
             for call, _ in launches]
    out = run_child(tmp_path, calls)
    for (call, launch), got in zip(launches, out["results"]):
        assert "error" not in got, (call, got)
        assert data.variants[got["variant"]].spec == launch.spec, call
        assert got["params"] == [p.hex() for p in launch.params], call
    assert any(call.kernel.endswith("tma_copy_kernel") for call, _ in launches) == (arch < 90)


def test_import_launcher_and_the_bundle_api_without_triton(tmp_path):
    code = ("import sys; sys.modules['triton'] = None\n"
            "import launcher\n"
            "names = ['export', 'capture', 'load_bundle', 'BundleError', 'set_allocator', 'TensorDescriptor']\n"
            "assert all(hasattr(launcher, n) for n in names)\n"
            "try:\n    launcher.load_bundle(sys.argv[1])\nexcept launcher.BundleError as e:\n    print('BundleError', e)\n"
            "print(sorted(m for m in sys.modules if m.startswith('triton.')))\n")
    missing = tmp_path / "missing.bundle"
    proc = subprocess.run([sys.executable, "-c", code, str(missing)], capture_output=True, text=True,
                          cwd=os.path.dirname(HERE), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "BundleError" in proc.stdout and "cannot be read" in proc.stdout
    assert proc.stdout.strip().endswith("[]")


def test_fallback_scratch_allocator_is_refused_with_advice_without_triton_or_torch(tmp_path):
    path = tmp_path / "scratch.bundle"
    import cpu_corpus as C
    import launcher

    launcher.export(path, C.BY_NAME["device_tma_with_scratch"].compile())
    code = ("import sys; sys.modules['triton'] = None; sys.modules['torch'] = None\n"
            "import launcher\n"
            "k = launcher.load_bundle(sys.argv[1]).device_desc_kernel\n"
            "try:\n    k.dry_run((4, 4), arch=90)(0x7F0000001000, 0x7F0000101000, 128, 256, BM=32, BN=64)\n"
            "except RuntimeError as e:\n    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                          cwd=os.path.dirname(HERE), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "kernel 'device_desc_kernel' needs" in proc.stdout and "launcher.set_allocator" in proc.stdout
