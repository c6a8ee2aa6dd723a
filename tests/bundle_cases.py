"""The bundles the bundle tests build, and the calls they replay.

- `export_corpus(path)`: every kernel of tests/cpu_corpus.py compiled on the CPU for sm_90,
  some for sm_100 too, the host tensor-descriptor kernel for sm_80 (descriptors passed
  decomposed, which a CPU dry run can pack) and tests/bundle_kernels.py's add_kernel (the
  same function name in another module), exported with launcher.export.
- `capture_workload(path, arch)`: the WORKLOAD calls made through Triton's JIT on the CPU
  (tests/cpu_triton.py) inside launcher.capture: plain, tuple and tensor-descriptor kernels,
  several specializations of one kernel, an autotuned and a heuristics kernel, and a kernel
  compiled before the block. Returns, for each call, what Triton launched (the variant's spec
  and the bytes of every parameter from the dry run).

Calls are described as data (`Call`), so that a process without Triton can replay them: a
pointer is `Ptr(address, dtype)`, a host descriptor `Desc(...)`, grids are tuples or the name
of a grid function in GRIDS.
"""
from __future__ import annotations

import gc
from dataclasses import dataclass, field

# Fake 16-byte aligned device addresses (tests/cpu_corpus.py's P). This module imports nothing
# of Triton at the top: tests/no_triton_child.py uses its data classes without Triton.
P = [0x7F0000001000 + 0x100000 * i for i in range(8)]
GRIDS = {"cdiv_n_block": lambda meta: ((meta["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)}


@dataclass(frozen=True)
class Ptr:
    address: int
    dtype: str  # Triton name: fp32, fp16, ...


@dataclass(frozen=True)
class Desc:
    base: Ptr
    shape: tuple
    strides: tuple
    block_shape: tuple


@dataclass
class Call:
    kernel: str  # qualified name in the bundle
    grid: object  # a tuple, or a GRIDS name
    args: tuple
    kwargs: dict = field(default_factory=dict)
    bench_fast: dict | None = None  # for tuned_add: n -> the BLOCK the scripted benchmark prefers


def to_json(value):
    if isinstance(value, Ptr):
        return {"ptr": value.address, "dtype": value.dtype}
    if isinstance(value, Desc):
        return {"desc": [to_json(value.base), list(value.shape), list(value.strides), list(value.block_shape)]}
    if isinstance(value, tuple):
        return {"tuple": [to_json(v) for v in value]}
    if isinstance(value, float):
        return {"float": value}
    return value


def from_json(data, make_ptr, make_desc):
    if isinstance(data, dict):
        if "ptr" in data:
            return make_ptr(data["ptr"], data["dtype"])
        if "desc" in data:
            base, shape, strides, block = data["desc"]
            return make_desc(from_json(base, make_ptr, make_desc), shape, strides, block)
        if "tuple" in data:
            return tuple(from_json(v, make_ptr, make_desc) for v in data["tuple"])
        if "float" in data:
            return float(data["float"])
    return data


X, Y, OUT = Ptr(P[0], "fp32"), Ptr(P[1], "fp32"), Ptr(P[2], "fp32")
X_ODD = Ptr(P[3] + 4, "fp32")  # not 16-byte aligned

WORKLOAD = [
    Call("kernels.add_kernel", (4,), (X, Y, OUT, 4096), {"BLOCK": 1024}),
    Call("bundle_kernels.add_kernel", (4,), (X, Y, OUT, 4096), {"BLOCK": 1024}),
    Call("kernels.tuple_kernel", (1,), (OUT, (X, 16, 3), ((Y, 4), (1, 0.5)), 2, 1.5)),
    Call("bundle_kernels.scale_kernel", (16,), (X, OUT, 4096, 1, 2.0)),
    Call("bundle_kernels.scale_kernel", (17,), (X_ODD, OUT, 4097, 3, 2.0)),
    Call("bundle_kernels.scale_kernel", (16,), (X, OUT, 2**33, 16, 0.5)),
    Call("bundle_kernels.scale_kernel", (1,), (X, OUT, 1, 1, 0.5), {"BLOCK": 128}),
    Call("bundle_kernels.tuned_add", "cdiv_n_block", (X, Y, OUT, 4096), bench_fast={4096: 512}),
    Call("bundle_kernels.tuned_add", "cdiv_n_block", (X, Y, OUT, 100), bench_fast={100: 128}),
    Call("bundle_kernels.tuned_add", "cdiv_n_block", (X, Y, OUT, 4096)),  # the choice seen before
    Call("bundle_kernels.heuristic_add", (1,), (X, Y, OUT, 1000)),
    Call("bundle_kernels.heuristic_add", (1,), (X, Y, OUT, 512)),
]
# Host tensor descriptors: launched only where the kernel takes them decomposed (sm_80: the CPU
# cannot encode a TMA tensor map); for sm_90+ the kernel is compiled (warmup) inside the capture.
DESC_CALL = Call("kernels.tma_copy_kernel", (4, 4),
                 (Desc(Ptr(P[4], "fp16"), (256, 256), (256, 1), (64, 64)),
                  Desc(Ptr(P[5], "fp16"), (256, 256), (256, 1), (64, 64))), {"BM": 64, "BN": 64})


def _jit_objects():
    import bundle_kernels as B
    import kernels as K

    return {"kernels.add_kernel": K.add_kernel, "bundle_kernels.add_kernel": B.add_kernel,
            "kernels.tuple_kernel": K.tuple_kernel, "bundle_kernels.scale_kernel": B.scale_kernel,
            "bundle_kernels.tuned_add": B.tuned_add, "bundle_kernels.heuristic_add": B.heuristic_add,
            "kernels.tma_copy_kernel": K.tma_copy_kernel}


def triton_value(value):
    """A call's argument as Triton's JIT takes it on the CPU (tests/cpu_triton.FakeTensor)."""
    import triton.language as tl
    from triton.tools.tensor_descriptor import TensorDescriptor

    from cpu_triton import FakeTensor

    dtypes = {"fp32": tl.float32, "fp16": tl.float16, "i32": tl.int32, "i64": tl.int64}
    return from_json(to_json(value), lambda a, d: FakeTensor(a, dtypes[d]),
                     lambda base, shape, strides, block: TensorDescriptor(base, list(shape), list(strides), list(block)))


def capture_workload(path, arch: int) -> list:
    """Run WORKLOAD (and the descriptor kernel) through Triton's JIT on the CPU inside
    launcher.capture(path). Returns [(Call, Launch)] for the calls that launched."""
    import launcher
    import bundle_kernels as B
    from cpu_triton import cpu_triton

    jit = _jit_objects()
    out = []
    with cpu_triton(arch, *jit.values()) as d:
        # compiled before the block, launched inside it: captured too
        first = WORKLOAD[0]
        jit[first.kernel].warmup(*map(triton_value, first.args), grid=(1,), **first.kwargs)
        with launcher.capture(path):
            for call in WORKLOAD:
                if call.bench_fast:
                    B.BENCH.fast.update(call.bench_fast)
                if call.kernel.endswith("tuned_add"):
                    B.BENCH.n = call.args[3]
                grid = GRIDS.get(call.grid, call.grid) if isinstance(call.grid, str) else call.grid
                jit[call.kernel][grid](*map(triton_value, call.args), **call.kwargs)
                out.append((call, d.launches[-1]))
            desc = jit[DESC_CALL.kernel]
            if arch >= 90:
                desc.warmup(*map(triton_value, DESC_CALL.args), grid=(1,), **DESC_CALL.kwargs)
            else:
                desc[DESC_CALL.grid](*map(triton_value, DESC_CALL.args), **DESC_CALL.kwargs)
                out.append((DESC_CALL, d.launches[-1]))
    gc.collect()
    return out


def corpus_kernels():
    """[(label, cpu_corpus Entry or None, CompiledKernel)] of what export_corpus writes."""
    import bundle_kernels as B
    import cpu_corpus as C
    from triton_compile import compile_cpu

    out = [(f"{e.name}@90", e, e.compile(90)) for e in C.ENTRIES]
    out += [(f"{e.name}@100", e, e.compile(100)) for e in C.ENTRIES if e.name in ("vector_add", "tuples", "host_tma")]
    out.append(("host_tma@80", C.BY_NAME["host_tma"], C.BY_NAME["host_tma"].compile(80)))
    out.append(("other_add@90", None, compile_cpu(B.add_kernel, C.ADD_SIG, (("BLOCK", 1024),), 90,
                                                  ((0,), (1,), (2,), (3,)))))
    return out


def export_corpus(path):
    import launcher

    kernels = corpus_kernels()
    data = launcher.export(path, *[ck for _, _, ck in kernels])
    return data, kernels


# ---- editing bundles behind the writer's back (the refusal tests) ----
def members_of(raw: bytes) -> dict:
    from launcher import bundle_format as BF

    return BF._unzip(raw, "test")


def zip_members(members: dict) -> bytes:
    """The members as a bundle archive, in the writer's order (manifest first)."""
    from launcher import bundle_format as BF

    head = [(BF.MANIFEST, members[BF.MANIFEST])] if BF.MANIFEST in members else []
    return BF._zip(head + sorted((n, b) for n, b in members.items() if n != BF.MANIFEST))


def rezip(raw: bytes, edit, rehash: bool = True) -> bytes:
    """The bundle with `edit(members)` applied; with `rehash`, the manifest's hashes and sizes are
    recomputed for what the archive then holds (so only the check under test sees the edit)."""
    import hashlib
    import json

    from launcher import bundle_format as BF

    members = members_of(raw)
    edit(members)
    if rehash and BF.MANIFEST in members:
        manifest = json.loads(members[BF.MANIFEST])
        if isinstance(manifest, dict):  # (an edit may have made it something else entirely)
            manifest["entries"] = {n: {"sha256": hashlib.sha256(b).hexdigest(), "size": len(b)}
                                   for n, b in sorted(members.items()) if n != BF.MANIFEST}
            members[BF.MANIFEST] = BF._dumps(manifest)
    return zip_members(members)


# ---- dry-run jobs: calls for a process without Triton, and what they must pack ----
def _bundle_args(spec, args):
    """The corpus's launcher arguments as a Triton call passes them: pointers with the dtype of
    their parameter, host descriptors, constexprs with the values the kernel was compiled for."""
    from launcher import variants as V

    constants = dict(spec.constants)

    def conv(arg, path, v):
        if arg.kind == "tuple":
            return tuple(conv(c, path + (i,), x) for i, (c, x) in enumerate(zip(arg.children, v)))
        if arg.kind == "constexpr":
            return V.decode_constant(constants[path]) if path in constants else v
        if arg.kind == "pointer":
            return Ptr(v if isinstance(v, int) else v.data_ptr(), arg.type.lstrip("*"))
        if arg.kind == "tensordesc":
            return Desc(Ptr(v.base.data_ptr(), arg.desc.dtype), tuple(v.shape), tuple(v.strides), tuple(v.block_shape))
        return v

    return tuple(conv(a, (i,), v) for i, (a, v) in enumerate(zip(spec.args, args)))


def _descriptor_args():
    """Host descriptors for the tensor-descriptor kernel (its corpus entry has no CPU arguments)."""
    import triton.language as tl
    from triton.tools.tensor_descriptor import TensorDescriptor

    from cpu_triton import FakeTensor

    return (TensorDescriptor(FakeTensor(P[4], tl.float16), [256, 256], [256, 1], [64, 64]),
            TensorDescriptor(FakeTensor(P[5], tl.float16), [256, 256], [256, 1], [64, 64]), 64, 64)


SCRATCH = 0x7E0000000000  # the address every fake scratch allocator returns


def corpus_job(path):
    """Export the corpus to `path`; (calls, expected): for every kernel the CPU can dry-run, the
    bundle call and what our drop-in's dry run packs for the same kernel and arguments
    (expected: {"label", "variant", "params": [hex]})."""
    import triton
    from triton.runtime import _allocation

    from launcher import CudaLauncher
    from launcher import bundle_format as BF

    class Scratch:
        def data_ptr(self):
            return SCRATCH

    data, kernels = export_corpus(path)
    old = _allocation._allocator.get()
    triton.set_allocator(lambda size, align, stream: Scratch())
    calls, expected = [], []
    try:
        for label, entry, ck in kernels:
            if entry is None:
                continue
            args = entry.args
            if args is None:
                if ck.metadata.tensordesc_meta:  # TMA-lowered: encoding a tensor map needs the driver
                    continue
                args = _descriptor_args()
            drop_in = CudaLauncher(ck.src, ck.metadata)
            spec = drop_in.spec
            grid = (3, 2, 1)
            want = drop_in.dry_run(*grid, 0, 0, spec.packed_metadata, None, None, None, *args)
            vid = BF.variant_id(spec, bytes(ck.kernel))
            kwargs = dict(entry.options)  # compiled with num_ctas=2, launch_pdl...: called with them, as in Triton
            calls.append({"bundle": str(path), "kernel": data.variants[vid].kernel, "arch": spec.arch,
                          "grid": list(grid), "args": [to_json(a) for a in _bundle_args(spec, args)],
                          "kwargs": {k: to_json(v) for k, v in kwargs.items()}})
            expected.append({"label": label, "variant": vid, "params": [p.hex() for p in want]})
    finally:
        _allocation._allocator.set(old)
    return calls, expected


def capture_job(path, arch):
    """Capture WORKLOAD for `arch` into `path`; (calls, expected) where expected is what Triton's
    JIT launched for each call (the variant and the bytes of its parameters)."""
    from launcher import bundle_format as BF

    launches = capture_workload(path, arch)
    data = BF.read_bundle(path)
    calls, expected = [], []
    for call, launch in launches:
        (vid,) = [v for v in data.kernels[call.kernel].variants if data.variants[v].spec == launch.spec]
        calls.append({"bundle": str(path), "kernel": call.kernel, "arch": arch,
                      "grid": call.grid if isinstance(call.grid, str) else list(call.grid),
                      "args": [to_json(a) for a in call.args], "kwargs": {k: to_json(v) for k, v in call.kwargs.items()}})
        expected.append({"label": f"{call.kernel}@{arch}", "variant": vid,
                         "params": [p.hex() for p in launch.params]})
    return calls, expected


def compare(expected, results):
    """[(label, what differs)] of a job's results against what was expected."""
    bad = []
    for want, got in zip(expected, results):
        if "error" in got:
            bad.append((want["label"], got))
        elif got["variant"] != want["variant"]:
            bad.append((want["label"], f"variant {got['variant']}, expected {want['variant']}"))
        elif got["params"] != want["params"]:
            bad.append((want["label"], f"parameters {got['params']}, expected {want['params']}"))
    if len(results) != len(expected):
        bad.append(("count", f"{len(results)} results for {len(expected)} calls"))
    return bad
