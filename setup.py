# The cffi extension is declared here because `cffi_modules` is a setup() keyword, and the
# `LAUNCHER_INSTALL=1` hook is a .pth file that must land at the top of site-packages (a data
# file of the wheel; editable installs do not install data files, so they go without it).
# Everything else is in pyproject.toml.
import os
import sys
import sysconfig

from setuptools import setup

site_packages = os.path.relpath(sysconfig.get_path("purelib"), sys.prefix)

setup(
    cffi_modules=["cdefs/build.py:ffi"],
    data_files=[(site_packages, ["launcher-autoinstall.pth"])],
)
