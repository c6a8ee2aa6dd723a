# Only what pyproject.toml cannot say lives here:
# - the cffi extension (`cffi_modules` is a setup() keyword) and the small CPython extension of the
#   prepared launch's call (cdefs/call.c: a C type's tp_call, which cffi cannot make), both built
#   for the limited API so that one `cp310-abi3` wheel serves every supported Python;
# - a build_ext that checks for a working C compiler and the Python headers first, and stops with
#   a message that says what is missing instead of a raw compiler command line;
# - launcher-autoinstall.pth (the `LAUNCHER_INSTALL=1` hook) at the top of site-packages, in wheels
#   and in editable installs alike (not a data file: those would be tied to one Python's path, and
#   setuptools' editable installs leave data files out).
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import setuptools

MIN_SETUPTOOLS = (77, 0)  # project.license as an SPDX string, project.license-files (PEP 639)
HOOK = "launcher-autoinstall.pth"

NEEDS = """\
launcher compiles a small C library once, when it is installed (cffi); after that nothing is
compiled. That needs:
  - a C compiler: gcc or clang (Debian/Ubuntu: apt-get install gcc; Fedora/RHEL: dnf install gcc),
    or the one named by $CC;
  - the headers of this Python (Python.h; Debian/Ubuntu: apt-get install python3-dev;
    Fedora/RHEL: dnf install python3-devel).
"""


def _version(text):
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit()) or "0"
        parts.append(int(digits))
    return tuple(parts)


if _version(setuptools.__version__) < MIN_SETUPTOOLS:
    sys.exit(
        f"error: building triton-launcher needs setuptools>={'.'.join(map(str, MIN_SETUPTOOLS))}; this build "
        f"imports setuptools {setuptools.__version__} from {os.path.dirname(setuptools.__file__)}.\n"
        "pip's default (isolated) build fetches a recent one by itself. With --no-build-isolation, "
        "install a newer setuptools first, or put one earlier on PYTHONPATH.")

from setuptools import Extension, setup  # noqa: E402
from setuptools.command.build_ext import build_ext  # noqa: E402
from setuptools.command.build_py import build_py  # noqa: E402
from setuptools.errors import PlatformError  # noqa: E402

try:  # setuptools >= 64
    from setuptools.command.editable_wheel import editable_wheel
except ImportError:  # pragma: no cover - older than MIN_SETUPTOOLS
    editable_wheel = None


def toolchain_problem(compiler_argv, include_dirs):
    """What stops a C extension for this Python from building, as a message; None when a one-line
    C file that includes Python.h compiles with `compiler_argv` (the command distutils would use)."""
    if not compiler_argv:
        return "no C compiler is configured for this Python.\n" + NEEDS
    exe = compiler_argv[0]
    if shutil.which(exe) is None:
        origin = "from $CC" if os.environ.get("CC") else "this Python's configured compiler; set CC to use another"
        return f"no C compiler found: {exe!r} ({origin}) is not on PATH.\n" + NEEDS
    if not any(os.path.isfile(os.path.join(d, "Python.h")) for d in include_dirs):
        return (f"the Python headers are missing: no Python.h in {', '.join(include_dirs) or '(no include directory)'}.\n"
                + NEEDS)
    with tempfile.TemporaryDirectory(prefix="launcher-cc-probe-") as tmp:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as f:
            f.write("#include <Python.h>\nint launcher_probe(void) { return 0; }\n")
        cmd = list(compiler_argv) + [f"-I{d}" for d in include_dirs] + ["-c", src, "-o", os.path.join(tmp, "probe.o")]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except OSError as e:
            return f"the C compiler {exe!r} cannot be run: {e}.\n" + NEEDS
        if proc.returncode != 0:
            output = (proc.stdout + proc.stderr).strip().splitlines()
            tail = "\n".join("    " + line for line in output[-8:]) or "    (it printed nothing)"
            return (f"the C compiler {exe!r} does not work: compiling a 2-line C file that includes Python.h "
                    f"failed (exit status {proc.returncode}):\n{tail}\n" + NEEDS)
    return None


class CheckedBuildExt(build_ext):
    """build_ext that first makes sure a compiler and Python.h are there, and says so when not."""

    def build_extensions(self):
        argv = getattr(self.compiler, "compiler_so", None)
        include_dirs = list(dict.fromkeys([sysconfig.get_paths()["include"], sysconfig.get_paths()["platinclude"]]
                                          + list(self.include_dirs or [])))
        problem = toolchain_problem(argv, include_dirs)
        if problem:
            raise PlatformError("cannot build launcher's native libraries (launcher._native, launcher._call): " + problem)
        super().build_extensions()


def _copy_hook(cmd, target_dir):
    os.makedirs(target_dir, exist_ok=True)
    target = os.path.join(target_dir, HOOK)
    cmd.copy_file(HOOK, target)
    return target


class BuildPyWithHook(build_py):
    """Puts the .pth hook at the root of build_lib, which is the root of site-packages."""

    def run(self):
        super().run()
        if not getattr(self, "editable_mode", False):
            _copy_hook(self, self.build_lib)

    def get_outputs(self, include_bytecode=True):
        outputs = super().get_outputs(include_bytecode)
        if not getattr(self, "editable_mode", False):
            outputs.append(os.path.join(self.build_lib, HOOK))
        return outputs


cmdclass = {"build_ext": CheckedBuildExt, "build_py": BuildPyWithHook}

if editable_wheel is not None and hasattr(editable_wheel, "_run_build_commands"):
    class EditableWheelWithHook(editable_wheel):
        """An editable install's wheel gets the hook too (next to setuptools' own __editable__ .pth,
        which sorts before it, so `launcher` is importable when the hook runs)."""

        def _run_build_commands(self, dist_name, unpacked_wheel, build_lib, tmp_dir):
            result = super()._run_build_commands(dist_name, unpacked_wheel, build_lib, tmp_dir)
            _copy_hook(self, str(unpacked_wheel))
            return result

    cmdclass["editable_wheel"] = EditableWheelWithHook


if __name__ == "__main__":  # setuptools' build backend runs this file as __main__; tests import it
    setup(
        cffi_modules=["cdefs/build.py:ffi"],
        ext_modules=[Extension("launcher._call", ["cdefs/call.c"], py_limited_api=True,
                               define_macros=[("Py_LIMITED_API", "0x030A0000")],
                               extra_compile_args=["-O2", "-std=c11", "-Wall"])],
        cmdclass=cmdclass,
        options={"bdist_wheel": {"py_limited_api": "cp310"}},
    )
