"""cffi builder for launcher's native library (API mode).

setuptools runs this through `cffi_modules` at `pip install` time; nothing is compiled at run time.
The C file and ffi.cdef() read the same header, cdefs/launcher.h: cffi gets it with its
preprocessor lines removed (cdef takes plain declarations), so no declaration is written twice.
"""
import pathlib

from cffi import FFI

HERE = pathlib.Path(__file__).resolve().parent


def cdef_text(header: str) -> str:
    """The header as ffi.cdef() takes it: without #include, #ifndef/#define guards and #endif."""
    return "\n".join(line for line in header.splitlines() if not line.lstrip().startswith("#"))


ffi = FFI()
ffi.cdef(cdef_text((HERE / "launcher.h").read_text()))
ffi.set_source(
    "launcher._native",
    (HERE / "launcher.c").read_text(),
    include_dirs=[str(HERE)],
    libraries=["dl", "pthread"],
    extra_compile_args=["-O2", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wno-unused-function"],
)

if __name__ == "__main__":
    ffi.compile(verbose=True)
