"""For a CI job where Triton is not installed at all (issue 13): bundles written by
tests/bundle_ci_export.py in a Triton environment are loaded here, every kernel and captured
call dry-run, and the bytes compared with what the drop-in packed and Triton launched there.
Skipped where Triton is importable (tests/test_bundle_no_triton.py blocks it in a subprocess
instead) or when no job is given ($LAUNCHER_BUNDLE_JOB).
"""
import importlib.util
import json
import os
import sys

import pytest

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("triton") is not None, reason="Triton is installed here"),
    pytest.mark.skipif(not os.environ.get("LAUNCHER_BUNDLE_JOB"),
                       reason="no job: run tests/bundle_ci_export.py with Triton, set LAUNCHER_BUNDLE_JOB"),
]


def test_bundles_replay_without_triton_installed():
    import bundle_cases as BC
    import no_triton_child

    with open(os.environ["LAUNCHER_BUNDLE_JOB"]) as f:
        job = json.load(f)
    out = no_triton_child.run_job(job["calls"])
    assert BC.compare(job["expected"], out["results"]) == []
    assert out["scratch"]
    assert not [m for m in sys.modules if m == "triton" or m.startswith("triton.")]
