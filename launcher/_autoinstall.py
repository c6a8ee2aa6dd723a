"""`LAUNCHER_INSTALL=1`: install launcher into Triton as soon as Triton is imported.

Imported by launcher-autoinstall.pth (installed into site-packages) only when the variable is
set (and not to 0); it imports nothing heavy itself, and patches Triton right after `import
triton` finishes. The variable takes the values of every launcher switch (launcher.install's
env_flag, as LAUNCHER_FAST_DISPATCH does): 1, true, on, or 0, false, off, empty. Another value
is a one-line warning on stderr, and nothing is installed: a .pth hook must not stop Python.
"""
import importlib.abc
import importlib.util
import sys
import warnings


def _install():
    try:
        import launcher

        launcher.install()
    except Exception as e:  # never break `import triton`
        warnings.warn(f"LAUNCHER_INSTALL is set but launcher.install() failed: {e}", RuntimeWarning)


class _InstallAfterTritonImport(importlib.abc.MetaPathFinder):
    """Wraps the loader of `triton` so that install() runs once its import has finished.

    It stays armed through mere look-ups (importlib.util.find_spec("triton") to probe for
    Triton) and disarms when Triton's module actually executes."""

    def __init__(self):
        self._finding = False

    def find_spec(self, name, path=None, target=None):
        if name != "triton" or self._finding:
            return None
        self._finding = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._finding = False
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module
        finder = self

        def exec_then_install(module):
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)
            exec_module(module)
            _install()

        spec.loader.exec_module = exec_then_install
        return spec


def _wanted() -> bool:
    try:
        from launcher.install import env_flag

        return env_flag("LAUNCHER_INSTALL")
    except ValueError as e:
        sys.stderr.write(f"launcher: {e}; launcher is not installed into Triton\n")
        return False


if not _wanted():
    pass
elif "triton" in sys.modules:
    _install()
else:
    sys.meta_path.insert(0, _InstallAfterTritonImport())
