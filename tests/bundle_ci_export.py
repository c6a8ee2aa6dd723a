"""Write the bundles and the dry-run job for a CI job in which Triton is not installed at all.

    python tests/bundle_ci_export.py OUT_DIR      # with Triton: writes OUT_DIR/*.bundle, OUT_DIR/job.json

then, in an environment without Triton (`pip install --no-deps -e .` plus cffi, cuda-bindings
and pytest):

    LAUNCHER_BUNDLE_JOB=OUT_DIR/job.json python -m pytest tests/test_without_triton_installed.py

The job holds every tests/cpu_corpus.py kernel with our drop-in's dry-run bytes for it, and
every call of tests/bundle_cases.WORKLOAD with what Triton's JIT launched (sm_80, sm_90, sm_100),
from the Triton release that runs this script.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import bundle_cases as BC  # noqa: E402


def main(out_dir):
    import triton

    os.makedirs(out_dir, exist_ok=True)
    calls, expected = BC.corpus_job(os.path.join(out_dir, "corpus.bundle"))
    for arch in (80, 90, 100):
        c, e = BC.capture_job(os.path.join(out_dir, f"captured{arch}.bundle"), arch)
        calls += c
        expected += e
    with open(os.path.join(out_dir, "job.json"), "w") as f:
        json.dump({"triton_version": triton.__version__, "calls": calls, "expected": expected}, f)
    print(f"wrote {len(calls)} calls to {os.path.join(out_dir, 'job.json')} (Triton {triton.__version__})")


if __name__ == "__main__":
    main(sys.argv[1])
