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


def test_every_corpus_kernel_dry_runs_as_the_drop_in_does(tmp_path):
    calls, expected = BC.corpus_job(tmp_path / "corpus.bundle")
    labels = {e["label"] for e in expected}
    assert {"vector_add@90", "tuples@90", "scalars@90", "many_args@90", "device_tma_with_scratch@90",
            "large_shared_memory@90", "grid_3d@90", "num_ctas_2@90", "pdl@90", "cooperative@90",
            "vector_add@100", "tuples@100", "host_tma@80"} <= labels
    out = run_child(tmp_path, calls)
    assert BC.compare(expected, out["results"]) == []
    # the scratch kernel asked the allocator set with launcher.set_allocator, as Triton's would be asked
    assert out["scratch"], "the device-descriptor kernel allocated no scratch"


@pytest.mark.parametrize("arch", [90, 100, 80])
def test_captured_calls_replay_as_triton_launched_them(tmp_path, arch):
    calls, expected = BC.capture_job(tmp_path / f"captured{arch}.bundle", arch)
    out = run_child(tmp_path, calls)
    assert BC.compare(expected, out["results"]) == []
    assert any(c["kernel"].endswith("tma_copy_kernel") for c in calls) == (arch < 90)


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
