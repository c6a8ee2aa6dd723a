"""Run in a process where `import triton` fails: load bundles and dry-run calls from a job file.

    python tests/no_triton_child.py JOB.json      # prints a JSON result on stdout

The job: {"calls": [{"bundle": path, "kernel": name, "arch": 90, "grid": [..] or a GRIDS name,
"args": [...], "kwargs": {...}}]} with arguments as tests/bundle_cases.to_json writes them.
For each call the result is {"variant": id, "params": [hex, ...]} or {"error": type, "message": text}.
"""
import json
import os
import sys

if __name__ == "__main__":
    sys.modules["triton"] = None  # `import triton` (and any triton.*) raises ImportError from here on
sys.path.insert(0, os.path.dirname(__file__))

import launcher  # noqa: E402
from bundle_cases import GRIDS, SCRATCH, from_json  # noqa: E402


class Tensor:
    """A device tensor as a bundle sees one: data_ptr() and a dtype."""

    def __init__(self, address, dtype):
        self.address, self.dtype = address, dtype

    def data_ptr(self):
        return self.address


class Scratch:
    def __init__(self, address):
        self.address = address

    def data_ptr(self):
        return self.address


def run_job(calls) -> dict:
    """Dry-run the calls; {"results": [...], "scratch": [(size, align) asked of the allocator]}."""
    scratch = []
    launcher.set_allocator(lambda size, align, stream: scratch.append((size, align)) or Scratch(SCRATCH))
    bundles, results = {}, []
    try:
        for call in calls:
            if call["bundle"] not in bundles:
                bundles[call["bundle"]] = launcher.load_bundle(call["bundle"])
            k = bundles[call["bundle"]][call["kernel"]]
            make = lambda base, shape, strides, block: launcher.TensorDescriptor(base, shape, strides, block)  # noqa: E731
            args = [from_json(a, Tensor, make) for a in call["args"]]
            kwargs = {n: from_json(v, Tensor, make) for n, v in call["kwargs"].items()}
            grid = GRIDS[call["grid"]] if isinstance(call["grid"], str) else tuple(call["grid"])
            try:
                variant = k.choose(arch=call["arch"])(*args, **kwargs)
                params = k.dry_run(grid, arch=call["arch"])(*args, **kwargs)
                results.append({"variant": variant.id, "params": [p.hex() for p in params]})
            except Exception as e:
                results.append({"error": type(e).__name__, "message": str(e)})
    finally:
        launcher.set_allocator(None)
    return {"results": results, "scratch": scratch}


def main(job_path):
    with open(job_path) as f:
        job = json.load(f)
    out = run_job(job["calls"])
    out["triton_modules"] = sorted(m for m, mod in sys.modules.items()
                                   if mod is not None and (m == "triton" or m.startswith("triton.")))
    out["triton_importable"] = _importable()
    print(json.dumps(out))


def _importable():
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main(sys.argv[1])
