"""`LAUNCHER_INSTALL=1`: install launcher into Triton as soon as Triton is imported.

Imported by launcher-autoinstall.pth (installed into site-packages) only when the variable is
set; it imports nothing heavy itself, and patches Triton right after `import triton` finishes.
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
    def find_spec(self, name, path=None, target=None):
        if name != "triton":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_install(module):
            exec_module(module)
            _install()

        spec.loader.exec_module = exec_then_install
        return spec


if "triton" in sys.modules:
    _install()
else:
    sys.meta_path.insert(0, _InstallAfterTritonImport())
