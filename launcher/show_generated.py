"""`python -m launcher show-generated`: the code launcher generates for a kernel, as it runs.

The guarded fast path (`install(fast_dispatch=True)`) and bundles call kernels through Python
code generated for each kernel's signature (launcher.codegen). Tracebacks and debuggers show its
lines; this command prints it whole, made as it is made at run time, without launching anything
(no GPU needed):

    python -m launcher show-generated MODULE:KERNEL        the guard of a @triton.jit kernel
    python -m launcher show-generated BUNDLE KERNEL        a bundled kernel's call

MODULE is an importable module's name or the path of a .py file; KERNEL is the name of a
@triton.jit function in it (under @triton.autotune / @triton.heuristics too: the guard sits
beneath them). Exit status: 0 printed, 2 a kernel or file that cannot be read or has no
generated code.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import sys
import textwrap
from pathlib import Path


class _Refused(Exception):
    """What the user named cannot be shown; the message says why."""


def _module(name: str):
    if name.endswith(".py") or "/" in name or Path(name).is_file():
        path = Path(name)
        if not path.is_file():
            raise _Refused(f"{name}: no such file")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules.setdefault(path.stem, module)  # Triton's JIT reads its function's module
        sys.path.insert(0, str(path.resolve().parent))  # its sibling imports
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(name)


def guard_code(target: str) -> str:
    """The guard's generated code for MODULE:KERNEL."""
    from launcher import fast_dispatch, triton_adapter as A

    module_name, sep, kernel_name = target.rpartition(":")
    if not sep or not module_name or not kernel_name:
        raise _Refused(f"{target!r}: expected MODULE:KERNEL (a module or a .py file, and a @triton.jit function in it)")
    try:
        obj = _module(module_name)
    except ImportError as e:
        raise _Refused(f"{module_name}: cannot import it ({e})") from e
    for part in kernel_name.split("."):
        if not hasattr(obj, part):
            raise _Refused(f"{module_name} has no {kernel_name!r}")
        obj = getattr(obj, part)
    try:
        _, jit = A.decorator_chain(obj)
    except TypeError as e:
        raise _Refused(f"{target}: {e}") from e
    try:
        return fast_dispatch.guard_source(jit)
    except ValueError as e:
        raise _Refused(str(e)) from e


def bundle_code(path: str, kernel: str) -> str:
    """A bundled kernel's generated call (BundleKernel's `kernel[grid]`)."""
    import launcher

    try:
        bundle = launcher.load_bundle(path)
    except (OSError, launcher.BundleError) as e:
        raise _Refused(f"{path}: {e}") from e
    try:
        k = bundle[kernel]
    except (KeyError, AttributeError) as e:
        raise _Refused(f"{path} has no kernel {kernel!r}") from e
    return textwrap.dedent(inspect.getsource(k._call or k._generate()))


def main(argv=None, prog="python -m launcher show-generated") -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[1].replace("\n", " "),
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.split("\n\n")[2:3]))
    ap.add_argument("target", help="MODULE:KERNEL, or a bundle file")
    ap.add_argument("kernel", nargs="?", help="with a bundle: the kernel's name (qualified or short)")
    args = ap.parse_args(argv)
    try:
        if args.kernel is not None:
            code = bundle_code(args.target, args.kernel)
        else:
            code = guard_code(args.target)
    except _Refused as e:
        print(f"show-generated: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(code if code.endswith("\n") else code + "\n")
    return 0
