"""The GPU bundle cases: the same calls made through Triton, and from a bundle without Triton.

Each case names a kernel (by qualified name), a grid, its arguments as data (tensors by seed,
shape and dtype; host descriptors; ints and floats) and the tensors it writes. Three users:
- tests/test_gpu_bundles.py, with Triton and torch on the GPU: runs the cases through Triton's
  JIT inside launcher.capture, keeps the outputs, and writes the bundle;
- this file as a script in a process where `import triton` fails (`run BUNDLE OUT_DIR`):
  launches the same cases from the bundle and writes the outputs next to Triton's;
- this file as a script on a machine without a GPU (`export-cpu BUNDLE`): captures the cases
  through Triton's JIT on the CPU (tests/cpu_triton.py) for sm_90, so that a bundle from
  another Triton release (3.9) can be brought to the H200 as a file.

    python tests/gpu_bundle_cases.py run BUNDLE OUT_DIR      # GPU, Triton blocked
    python tests/gpu_bundle_cases.py export-cpu BUNDLE       # CPU, Triton installed

Nothing here imports Triton at the top.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(__file__))


@dataclass(frozen=True)
class T:
    """A device tensor: `numel` elements of `dtype` from seed `seed` (None: zeros), viewed from
    element `offset` (1: a pointer that is not 16-byte aligned for fp32)."""

    numel: int
    dtype: str = "float32"
    seed: int | None = 0
    offset: int = 0
    shape: tuple | None = None


@dataclass(frozen=True)
class D:
    """A host tensor descriptor of a 2-d tensor with this block shape."""

    tensor: T
    block: tuple


@dataclass
class Case:
    name: str
    kernel: str
    grid: object  # a tuple, or "cdiv_n_block"
    args: tuple
    kwargs: dict = field(default_factory=dict)
    writes: tuple = ()  # indices of the arguments it writes
    portable: bool = True  # exact IEEE arithmetic: the same bits from any compiler
    stream: bool = False  # launch on a side stream (the current torch stream)
    ints: bool = False  # pass pointers as int addresses (from the bundle only)


N = 98432
CASES = [
    Case("vector_add", "kernels.add_kernel", (N // 1024,), (T(N, seed=1), T(N, seed=2), T(N, seed=None), N),
         {"BLOCK": 1024}, writes=(2,)),
    Case("vector_add_ints", "kernels.add_kernel", (N // 1024,), (T(N, seed=1), T(N, seed=2), T(N, seed=None), N),
         {"BLOCK": 1024}, writes=(2,), ints=True),
    Case("vector_add_side_stream", "kernels.add_kernel", (N // 1024,),
         (T(N, seed=3), T(N, seed=4), T(N, seed=None), N), {"BLOCK": 1024}, writes=(2,), stream=True),
    Case("same_name_other_module", "bundle_kernels.add_kernel", (N // 1024,),
         (T(N, seed=1), T(N, seed=2), T(N, seed=None), N), {"BLOCK": 1024}, writes=(2,)),
    Case("tuples", "kernels.tuple_kernel", (1,), (T(16, seed=None), (T(16, seed=5), 16, 3), ((T(16, seed=6), 4), (1, 0.5)),
                                                   2, 1.5), writes=(0,), portable=False),
    Case("scale_aligned", "bundle_kernels.scale_kernel", (16,), (T(4096, seed=7), T(4096, seed=None), 4096, 1, 2.0),
         writes=(1,)),
    Case("scale_misaligned", "bundle_kernels.scale_kernel", (17,),
         (T(3 * 4097 + 1, seed=8, offset=1), T(3 * 4097, seed=None), 4097, 3, 0.5), writes=(1,)),
    Case("scale_n_is_1", "bundle_kernels.scale_kernel", (1,), (T(16, seed=9), T(16, seed=None), 1, 1, 3.0),
         {"BLOCK": 128}, writes=(1,)),
    Case("autotuned", "bundle_kernels.tuned_add", "cdiv_n_block", (T(4096, seed=1), T(4096, seed=2), T(4096, seed=None), 4096),
         writes=(2,)),
    Case("autotuned_other_key", "bundle_kernels.tuned_add", "cdiv_n_block",
         (T(100, seed=1), T(100, seed=2), T(100, seed=None), 100), writes=(2,)),
    Case("heuristics_masked", "bundle_kernels.heuristic_add", (1,), (T(1000, seed=3), T(1000, seed=4), T(1000, seed=None), 1000),
         writes=(2,)),
    Case("heuristics_even", "bundle_kernels.heuristic_add", (1,), (T(512, seed=3), T(512, seed=4), T(512, seed=None), 512),
         writes=(2,)),
    Case("host_tensor_descriptors", "kernels.tma_copy_kernel", (4, 4),
         (D(T(256 * 256, "float16", seed=10, shape=(256, 256)), (64, 64)),
          D(T(256 * 256, "float16", seed=None, shape=(256, 256)), (64, 64))), {"BM": 64, "BN": 64}, writes=(1,)),
    Case("device_descriptors_with_scratch", "kernels.device_desc_kernel", (4, 4),
         (T(128 * 256, seed=11), T(128 * 256, seed=None), 128, 256), {"BM": 32, "BN": 64}, writes=(1,)),
    Case("grid_3d", "kernels.grid3d_kernel", (4, 3, 2), (T(24, "int32", seed=None), 4, 3), writes=(0,)),
]
GRIDS = {"cdiv_n_block": lambda meta: ((meta["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)}


# ---- the arguments, for torch on a GPU ----
def torch_tensor(t: T):
    import torch

    dtype = getattr(torch, t.dtype)
    g = torch.Generator(device="cuda")
    if t.seed is None:
        full = torch.zeros(t.numel, dtype=dtype, device="cuda")
    else:
        g.manual_seed(t.seed)
        if dtype.is_floating_point:
            full = torch.rand(t.numel, dtype=torch.float32, device="cuda", generator=g).to(dtype)
        else:
            full = torch.randint(0, 100, (t.numel,), dtype=dtype, device="cuda", generator=g)
    view = full[t.offset:]
    return view.view(t.shape) if t.shape else view


def build_args(case: Case, descriptor, ints=False):
    """(args, the tensors each argument index holds) for a case: torch tensors on the current
    device; host descriptors made with `descriptor.from_tensor`."""
    tensors = {}

    def make(i, value):
        if isinstance(value, T):
            tensor = torch_tensor(value)
            tensors[i] = tensor
            return tensor.data_ptr() if ints else tensor
        if isinstance(value, D):
            tensor = torch_tensor(value.tensor)
            tensors[i] = tensor
            return descriptor.from_tensor(tensor, list(value.block))
        if isinstance(value, tuple):
            return tuple(make((i, j), v) for j, v in enumerate(value))
        return value

    return tuple(make(i, v) for i, v in enumerate(case.args)), tensors


def grid_of(case):
    return GRIDS[case.grid] if isinstance(case.grid, str) else case.grid


def output_bytes(case, tensors) -> dict:
    return {str(i): tensors[i].contiguous().view(-1).cpu().view(__import__("torch").uint8).numpy().tobytes().hex()
            for i in case.writes}


# ---- from a bundle, without Triton ----
def run_from_bundle(bundle_path, out_dir):
    sys.modules["triton"] = None  # any `import triton` from here on fails
    import torch

    import launcher

    bundle = launcher.load_bundle(bundle_path)
    results = {}
    for case in CASES:
        try:
            args, tensors = build_args(case, launcher.TensorDescriptor, ints=case.ints)
            k = bundle[case.kernel]

            def launch():
                if case.stream:
                    side = torch.cuda.Stream()
                    side.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(side):
                        k[grid_of(case)](*args, **case.kwargs)
                    torch.cuda.current_stream().wait_stream(side)
                else:
                    k[grid_of(case)](*args, **case.kwargs)
                torch.cuda.synchronize()

            launch()  # the first launch: the variant is chosen, its cubin loaded
            for i in case.writes:
                tensors[i].zero_()
            cached = len(k._cache)
            launch()  # again, the way every later launch goes: the cached choice
            results[case.name] = output_bytes(case, tensors)
            results[case.name]["cached"] = cached > 0 and len(k._cache) == cached
        except Exception as e:  # reported per case, compared by the test
            results[case.name] = {"error": f"{type(e).__name__}: {e}"}
    triton_loaded = sorted(m for m, mod in sys.modules.items() if mod is not None and m.split(".")[0] == "triton")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "bundle_outputs.json"), "w") as f:
        json.dump({"results": results, "triton_modules": triton_loaded}, f)


# ---- through Triton's JIT ----
def jit_kernels():
    import bundle_kernels as B
    import kernels as K

    return {"kernels.add_kernel": K.add_kernel, "bundle_kernels.add_kernel": B.add_kernel,
            "kernels.tuple_kernel": K.tuple_kernel, "bundle_kernels.scale_kernel": B.scale_kernel,
            "bundle_kernels.tuned_add": B.tuned_add, "bundle_kernels.heuristic_add": B.heuristic_add,
            "kernels.tma_copy_kernel": K.tma_copy_kernel, "kernels.device_desc_kernel": K.device_desc_kernel,
            "kernels.grid3d_kernel": K.grid3d_kernel}


def export_cpu(bundle_path, arch=90):
    """Capture CASES through Triton's JIT on the CPU for `arch` (no GPU): fake tensors with the
    alignment torch's would have, so that the JIT specializes as it would on the GPU."""
    import triton
    import triton.language as tl
    from triton.tools.tensor_descriptor import TensorDescriptor

    import bundle_kernels as B
    import launcher
    from cpu_triton import FakeTensor, cpu_triton

    dtypes = {"float32": tl.float32, "float16": tl.float16, "int32": tl.int32}
    next_address = [0x7F0000000000]
    item = {"float32": 4, "float16": 2, "int32": 4}

    def fake(t: T):
        address = next_address[0] + t.offset * item[t.dtype]
        next_address[0] += 1 << 24
        return FakeTensor(address, dtypes[t.dtype])

    def make(value):
        if isinstance(value, T):
            return fake(value)
        if isinstance(value, D):
            return TensorDescriptor(fake(value.tensor), list(value.tensor.shape), [value.tensor.shape[1], 1],
                                    list(value.block))
        if isinstance(value, tuple):
            return tuple(make(v) for v in value)
        return value

    jit = jit_kernels()
    with cpu_triton(arch, *jit.values()):
        B.BENCH.fast.update({4096: 512, 100: 128})
        with launcher.capture(bundle_path):
            for case in CASES:
                if case.ints or case.stream:
                    continue  # the same kernels as vector_add
                args = tuple(make(v) for v in case.args)
                if case.kernel.endswith("tuned_add"):
                    B.BENCH.n = args[3]
                if case.kernel.endswith("tma_copy_kernel"):  # a TMA tensor map cannot be encoded on the CPU
                    jit[case.kernel].warmup(*args, grid=(1,), **case.kwargs)
                else:
                    jit[case.kernel][grid_of(case)](*args, **case.kwargs)
    del triton
    print(f"wrote {bundle_path}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "run":
        run_from_bundle(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "export-cpu":
        export_cpu(sys.argv[2])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
