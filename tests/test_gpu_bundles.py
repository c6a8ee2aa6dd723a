"""Bundles on the GPU (issue 13, H200): kernels launched through Triton inside launcher.capture,
then launched from the bundle in a process where `import triton` fails; the outputs are
bit-identical. Bundles from another Triton release, compiled on the CPU and brought along
(LAUNCHER_GPU_BUNDLES: a directory of *.bundle files written by
`python tests/gpu_bundle_cases.py export-cpu FILE`), are launched the same way and compared
with this Triton's outputs for the cases whose arithmetic is exact (the same bits from any
compiler). The cases are tests/gpu_bundle_cases.py. Skipped without a GPU.
"""
import glob
import json
import os
import subprocess
import sys

import pytest

import gpu_bundle_cases as G

pytestmark = pytest.mark.gpu
HERE = os.path.dirname(__file__)


@pytest.fixture(scope="module")
def triton_run(tmp_path_factory):
    """Every case through Triton's JIT (stock launcher) inside launcher.capture: (bundle, outputs)."""
    import torch
    import triton
    from triton.tools.tensor_descriptor import TensorDescriptor

    import launcher

    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    path = tmp_path_factory.mktemp("gpu") / "triton.bundle"
    jit = G.jit_kernels()
    outputs = {}
    with launcher.capture(path):
        for case in G.CASES:
            args, tensors = G.build_args(case, TensorDescriptor)
            jit[case.kernel][G.grid_of(case)](*args, **case.kwargs)
            torch.cuda.synchronize()
            outputs[case.name] = G.output_bytes(case, tensors)
    return path, outputs


def launch_from_bundle(bundle, out_dir):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), HERE, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, os.path.join(HERE, "gpu_bundle_cases.py"), "run", str(bundle), str(out_dir)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    with open(os.path.join(out_dir, "bundle_outputs.json")) as f:
        out = json.load(f)
    assert out["triton_modules"] == []
    return out["results"]


def test_bundles_from_this_triton_launch_bit_identically_without_triton(triton_run, tmp_path):
    bundle, want = triton_run
    got = launch_from_bundle(bundle, tmp_path)
    bad = []
    for case in G.CASES:
        cached = got[case.name].pop("cached", False)  # the second launch took the cached choice
        ok = cached and got[case.name] == want[case.name]
        print(f"{'ok  ' if ok else 'FAIL'} {case.name}" + ("" if ok else f": {str(got[case.name])[:300]}"))
        if not ok:
            bad.append(case.name)
    assert not bad


BROUGHT = sorted(glob.glob(os.path.join(os.environ.get("LAUNCHER_GPU_BUNDLES", "/nonexistent"), "*.bundle")))


@pytest.mark.skipif(not BROUGHT, reason="no bundles brought along (set LAUNCHER_GPU_BUNDLES to a directory of "
                                        "bundles from `python tests/gpu_bundle_cases.py export-cpu FILE`)")
@pytest.mark.parametrize("bundle", BROUGHT, ids=os.path.basename)
def test_bundles_from_another_triton_release_launch_without_triton(triton_run, tmp_path, bundle):
    _, want = triton_run
    got = launch_from_bundle(bundle, tmp_path)
    from launcher import bundle_format as BF

    versions = {v.triton_version for v in BF.read_bundle(bundle).variants.values()}
    bad = []
    for case in G.CASES:
        got[case.name].pop("cached", None)
        ok = case.portable and got[case.name] == want[case.name] or not case.portable and "error" not in got[case.name]
        print(f"{'ok  ' if ok else 'FAIL'} {case.name} (Triton {', '.join(sorted(versions))}"
              f"{'' if case.portable else ', launched; not compared: compilers may fuse differently'})"
              + ("" if ok else f": {str(got[case.name])[:300]}"))
        if not ok:
            bad.append(case.name)
    assert not bad


def _doc_blocks():
    import re

    with open(os.path.join(os.path.dirname(HERE), "docs", "bundles.md")) as f:
        text = f.read()
    return {m.group(1): m.group(0)[len("```python\n"):-len("```")]
            for m in re.finditer(r"```python\n# (\w+\.py)\n.*?```", text, re.S)}


def test_the_documented_example_runs_as_written(tmp_path):
    blocks = _doc_blocks()
    # build_on_cpu.py (a bundle made on a machine with no GPU) is run by the CPU test of it
    # (tests/test_bundle_export.py); this one runs the example's build and serve
    assert set(blocks) == {"build.py", "serve.py", "build_on_cpu.py"}
    for name in ("build.py", "serve.py"):
        code = blocks[name]
        (tmp_path / name).write_text(code)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), os.environ.get("PYTHONPATH", "")]))
    build = subprocess.run([sys.executable, "build.py"], cwd=tmp_path, capture_output=True, text=True, env=env,
                           timeout=300)
    assert build.returncode == 0, build.stderr
    assert build.stdout.strip().endswith("wrote add.bundle")
    serve = subprocess.run([sys.executable, "-c", "import sys; sys.modules['triton'] = None; "
                            "exec(compile(open('serve.py').read(), 'serve.py', 'exec'))"],
                           cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert serve.returncode == 0, serve.stderr
    assert serve.stdout.strip() == "ok"
