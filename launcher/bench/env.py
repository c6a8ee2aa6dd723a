"""What the suite ran on: versions, driver and GPU, recorded in every result of the JSON."""
from __future__ import annotations

import datetime
import importlib
import importlib.metadata
import os
import platform
import shutil
import subprocess

from launcher.bench import cpu


def _version(module: str, dist: str):
    try:
        m = importlib.import_module(module)
    except Exception:  # noqa: BLE001 - not installed, or broken: recorded as absent
        return None
    v = getattr(m, "__version__", None)
    if v is None:
        try:
            v = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            v = "?"
    return str(v)


def _nvidia_smi_driver():
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.strip().splitlines()
    return lines[0].strip() if out.returncode == 0 and lines else None


def collect() -> dict:
    """The environment of this process (imports torch and Triton: call it from the suite only)."""
    env = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "launcher": _version("launcher", "launcher"),
        "triton": _version("triton", "triton"),
        "torch": _version("torch", "torch"),
        "cuda_bindings": _version("cuda.bindings", "cuda-bindings"),
        "cuda_core": _version("cuda.core", "cuda-core"),
        "driver": _nvidia_smi_driver(),
        "TRITON_BACKENDS_IN_TREE": os.environ.get("TRITON_BACKENDS_IN_TREE"),
        "cpu_choice": cpu.recorded(),
        "affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
    }
    try:
        import triton

        env["triton_path"] = os.path.dirname(triton.__file__)
    except ImportError:
        pass
    try:
        import torch

        if torch.cuda.is_available():
            env["gpu"] = torch.cuda.get_device_name()
            env["capability"] = "sm_%d%d" % torch.cuda.get_device_capability()
    except ImportError:
        pass
    try:
        from cuda.bindings import driver as cu

        err, version = cu.cuDriverGetVersion()
        if int(err) == 0:
            env["cuda_driver_api"] = f"{version // 1000}.{version % 1000 // 10}"
    except Exception:  # noqa: BLE001 - no driver: left out
        pass
    return {k: v for k, v in env.items() if v is not None}
