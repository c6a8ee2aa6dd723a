"""cffi builder for launcher's native library (API mode).

setuptools runs this through `cffi_modules` at `pip install` time; nothing is compiled at run time.
The declarations (cdefs/launcher.h) are kept apart from the implementation (cdefs/launcher.c).
"""
import pathlib

from cffi import FFI

HERE = pathlib.Path(__file__).resolve().parent

ffi = FFI()
ffi.cdef((HERE / "launcher.h").read_text())
ffi.set_source(
    "launcher._native",
    (HERE / "launcher.c").read_text(),
    libraries=["dl", "pthread"],
    extra_compile_args=["-O2", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wno-unused-function"],
)

if __name__ == "__main__":
    ffi.compile(verbose=True)
