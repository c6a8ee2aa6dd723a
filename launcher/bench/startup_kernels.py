"""Twenty small kernels for the startup benchmark, loaded by file path in fresh processes.

Not imported as part of the package: `startup_child.py` loads this file directly, so that the
Triton path of the benchmark does not import `launcher` and the bundle path does not import
Triton. The kernels differ in their constants only, so each has a Triton cache entry and a cubin
of its own. They are written out in full because Triton reads a kernel's source from its file.
"""
import triton
import triton.language as tl


@triton.jit
def k00(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 1.0 + 0.5)


@triton.jit
def k01(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 2.0 + 1.5)


@triton.jit
def k02(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 3.0 + 2.5)


@triton.jit
def k03(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 4.0 + 3.5)


@triton.jit
def k04(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 5.0 + 4.5)


@triton.jit
def k05(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 6.0 + 5.5)


@triton.jit
def k06(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 7.0 + 6.5)


@triton.jit
def k07(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 8.0 + 7.5)


@triton.jit
def k08(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 9.0 + 8.5)


@triton.jit
def k09(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 10.0 + 9.5)


@triton.jit
def k10(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 11.0 + 10.5)


@triton.jit
def k11(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 12.0 + 11.5)


@triton.jit
def k12(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 13.0 + 12.5)


@triton.jit
def k13(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 14.0 + 13.5)


@triton.jit
def k14(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 15.0 + 14.5)


@triton.jit
def k15(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 16.0 + 15.5)


@triton.jit
def k16(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 17.0 + 16.5)


@triton.jit
def k17(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 18.0 + 17.5)


@triton.jit
def k18(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 19.0 + 18.5)


@triton.jit
def k19(x, out):
    offs = tl.arange(0, 128)
    tl.store(out + offs, tl.load(x + offs) * 20.0 + 19.5)


NAMES = [f"k{i:02d}" for i in range(20)]  # startup_child.py names them the same way
