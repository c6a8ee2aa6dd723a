"""The fence checker on Triton's own tutorial kernels, compiled on the CPU (no GPU) for sm_90 and sm_100.

Triton's tutorials are another project's code and stay out of this repository: give this script the
directory that holds them (``python/tutorials`` of a triton-lang/triton checkout, e.g. at the release's
tag). It runs the tutorial files' top-level statements one at a time, keeps what defines without torch or a
GPU (the ``@triton.jit`` functions and what they reference) and drops the rest, with every autotune/heuristics
decorator taken off. Each kernel is then compiled with ``triton.compile(ASTSource(...),
target=GPUTarget("cuda", arch, 32))`` for the configurations below (what the tutorial launches on that
GPU), and checked with ``check_kernel(ptx=..., ttgir=...)``::

    python tests/fence_tutorials.py TUTORIALS_DIR [--out DIR] [--only SUBSTRING] [--json FILE]

``--out DIR`` keeps each compiled kernel's ``.ptx`` and ``.ttgir`` (and reuses them on the next run, so that
a changed checker can be re-run without compiling again). The output is one line per kernel x target with
its verdict and the counts of error / unknown / info findings, then the findings that are not info.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
import time
import types
from dataclasses import dataclass

from fence_corpus import CompileJob

HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class Config:
    """One compile of one tutorial kernel: ``name`` labels it in the table, ``file`` is the tutorial that
    defines it, and ``job`` is compiled as the corpus's cases are, but that its ``kernel`` is the kernel's name
    in ``file`` and a signature's type or a constexpr's value may be a function, called when compiling."""
    name: str
    file: str
    job: CompileJob


def _desc(dtype, *shape):
    return f"tensordesc<{dtype}[{', '.join(str(s) for s in shape)}]>"


_MATMUL_PTRS = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
_STRIDES = {"stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "i32", "stride_bn": "constexpr",
            "stride_cm": "i32", "stride_cn": "constexpr"}
_UNIT_STRIDES = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1}
_ALIGNED_MATMUL = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")
_TILE = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}
_TMA_DESCS = {"a_desc": _desc("fp16", 128, 64), "b_desc": _desc("fp16", 256, 64), "c_desc": _desc("fp16", 128, 256),
              "M": "i32", "N": "i32", "K": "i32"}
_ATTN_FWD = {"sm_scale": "fp32", "M": "*fp32", "Z": "i32", "H": "i32", "desc_q": _desc("fp16", 128, 128),
             "desc_k": _desc("fp16", 64, 128), "desc_v": _desc("fp16", 64, 128), "desc_o": _desc("fp16", 128, 128),
             "N_CTX": "i32"}


def _block_scaled(fmt: str, data: str, scale: str, elem_per_byte: int, vec_size: int, block_k: int) -> Config:
    """Tutorial 10's kernel for one block-scaled format, as the tutorial launches it on sm_100 (128x256 tiles,
    4 stages): ``data`` and ``scale`` are the element types of the operands' and the scales' descriptors, and
    ``elem_per_byte`` values share a byte of an operand."""
    block_m, block_n, rep_m, rep_n = 128, 256, 1, 2
    rep_k = block_k // vec_size // 4  # as the tutorial computes it
    k_bytes = block_k // elem_per_byte
    return Config(f"10 block_scaled_matmul_kernel {fmt}", "10-block-scaled-matmul.py", CompileJob(
        "block_scaled_matmul_kernel",
        {"a_desc": _desc(data, block_m, k_bytes), "a_scale_desc": _desc(scale, 1, rep_m, rep_k, 2, 256),
         "b_desc": _desc(data, block_n, k_bytes), "b_scale_desc": _desc(scale, 1, rep_n, rep_k, 2, 256),
         "c_desc": _desc("fp16", block_m, block_n)},
        {"M": 8192, "N": 8192, "K": 8192, "output_type": 1, "ELEM_PER_BYTE_A": elem_per_byte,
         "ELEM_PER_BYTE_B": elem_per_byte, "VEC_SIZE": vec_size, "BLOCK_M": block_m, "BLOCK_N": block_n,
         "BLOCK_K": block_k, "rep_m": rep_m, "rep_n": rep_n, "rep_k": rep_k, "NUM_STAGES": 4},
        archs=(100,)))


def _configs() -> list[Config]:
    configs = [
        Config("01 add_kernel", "01-vector-add.py", CompileJob(
            "add_kernel", {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
            {"BLOCK_SIZE": 1024}, ("x_ptr", "y_ptr", "output_ptr"))),
        Config("02 softmax_kernel", "02-fused-softmax.py", CompileJob(
            "softmax_kernel",
            {"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32", "output_row_stride": "i32",
             "n_rows": "i32", "n_cols": "i32"}, {"BLOCK_SIZE": 1024, "num_stages": 4},
            ("output_ptr", "input_ptr"), {"num_warps": 8})),
        Config("03 matmul_kernel", "03-matrix-multiplication.py", CompileJob(
            "matmul_kernel",
            {**_MATMUL_PTRS, **_STRIDES}, {**_UNIT_STRIDES, **_TILE, "ACTIVATION": ""}, _ALIGNED_MATMUL,
            {"num_stages": 3, "num_warps": 8})),
        Config("05 _layer_norm_fwd_fused", "05-layer-norm.py", CompileJob(
            "_layer_norm_fwd_fused",
            {"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "Mean": "*fp32", "Rstd": "*fp32",
             "stride": "i32", "N": "i32", "eps": "fp32"}, {"BLOCK_SIZE": 1024}, ("X", "Y", "W", "B", "stride"),
            {"num_warps": 8})),
        Config("06 _attn_bwd", "06-fused-attention.py", CompileJob(
            "_attn_bwd", {**{n: "*fp16" for n in ("Q", "K", "V")}, "sm_scale": "fp32", "DO": "*fp16",
             **{n: "*fp16" for n in ("DQ", "DK", "DV")}, "M": "*fp32", "D": "*fp32", "stride_z": "i32",
             "stride_h": "i32", "stride_tok": "i32", "stride_d": "constexpr", "H": "i32", "N_CTX": "i32"},
            {"stride_d": 1, "BLOCK_M1": 32, "BLOCK_N1": 128, "BLOCK_M2": 128, "BLOCK_N2": 32,
             "BLK_SLICE_FACTOR": 2, "HEAD_DIM": 64, "CAUSAL": True},
            ("Q", "K", "V", "DO", "DQ", "DK", "DV", "M", "D", "stride_z", "stride_h", "stride_tok", "N_CTX"),
            {"num_warps": 4, "num_stages": 5})),
        Config("08 grouped_matmul_kernel", "08-grouped-gemm.py", CompileJob(
            "grouped_matmul_kernel",
            {"group_a_ptrs": "*u64", "group_b_ptrs": "*u64", "group_c_ptrs": "*u64", "group_gemm_sizes": "*i32",
             "g_lds": "*i32", "group_size": "i32"},
            {"NUM_SM": 132, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64},
            ("group_a_ptrs", "group_b_ptrs", "group_c_ptrs", "group_gemm_sizes", "g_lds"))),
        Config("08 grouped_matmul_tma_kernel", "08-grouped-gemm.py", CompileJob(
            "grouped_matmul_tma_kernel",
            {"group_a_ptrs": "*u64", "group_b_ptrs": "*u64", "group_c_ptrs": "*u64", "group_gemm_sizes": "*i32",
             "g_lds": "*i32", "group_size": "i32"},
            {"NUM_SM": 132, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "FP8": False},
            ("group_a_ptrs", "group_b_ptrs", "group_c_ptrs", "group_gemm_sizes", "g_lds"),
            {"num_stages": 3, "num_warps": 4})),
        Config("09 matmul_kernel", "09-persistent-matmul.py", CompileJob(
            "matmul_kernel", {**_MATMUL_PTRS, **_STRIDES}, {**_UNIT_STRIDES, **_TILE}, _ALIGNED_MATMUL,
            {"num_stages": 3, "num_warps": 8})),
        Config("09 matmul_kernel_persistent", "09-persistent-matmul.py", CompileJob(
            "matmul_kernel_persistent",
            {**_MATMUL_PTRS, **_STRIDES}, {**_UNIT_STRIDES, **_TILE, "NUM_SMS": 132}, _ALIGNED_MATMUL,
            {"num_stages": 3, "num_warps": 8})),
        _block_scaled("mxfp8", "fp8e4nv", "u8", elem_per_byte=1, vec_size=32, block_k=128),
        _block_scaled("nvfp4", "u8", "fp8e4nv", elem_per_byte=2, vec_size=16, block_k=256),
        Config("11 add_kernel (PDL)", "11-programmatic-dependent-launch.py", CompileJob(
            "add_kernel", {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
            {"BLOCK_SIZE": 1024, "USE_GDC": True}, ("x_ptr", "y_ptr", "output_ptr"), {"launch_pdl": True})),
    ]
    for causal, stage in (("causal", 3), ("full", 1)):
        for head_dim, fp8 in ((128, False), (64, False), (128, True)):
            for arch, ws in ((90, False), (100, False), (100, True)):
                dtype = "fp8e5" if fp8 else "fp16"
                descs = {"desc_q": _desc(dtype, 128, head_dim), "desc_k": _desc(dtype, 64, head_dim),
                         "desc_v": _desc(dtype, head_dim, 64) if fp8 else _desc(dtype, 64, head_dim),
                         "desc_o": _desc(dtype, 128, head_dim)}
                options = {"num_stages": 2, "num_warps": 4,
                           **({"maxnreg": 168 if head_dim == 128 and not fp8 else 80} if ws else {})}
                configs.append(Config(
                    f"06 _attn_fwd d{head_dim}{' fp8' if fp8 else ''} {causal}{' ws' if ws else ''}",
                    "06-fused-attention.py", CompileJob(
                        "_attn_fwd", {**_ATTN_FWD, **descs},
                        {"HEAD_DIM": head_dim, "BLOCK_M": 128, "BLOCK_N": 64, "FP8_OUTPUT": fp8, "STAGE": stage,
                         "warp_specialize": ws, "IS_HOPPER": arch == 90}, ("M", "N_CTX"), options, archs=(arch,))))
    for ws in (False, True):
        label = " ws" if ws else ""
        configs.append(Config(
            f"09 matmul_kernel_tma{label}", "09-persistent-matmul.py", CompileJob(
                "matmul_kernel_tma", dict(_TMA_DESCS), {**_TILE, "FP8_OUTPUT": False, "WARP_SPECIALIZE": ws},
                ("M", "N", "K"), {"num_stages": 3, "num_warps": 8})))
        for subtile in (False, True):
            sub = " subtile" if subtile else ""
            descs = {**_TMA_DESCS, "c_desc": _desc("fp16", 128, 128 if subtile else 256)}
            configs.append(Config(
                f"09 matmul_kernel_tma_persistent{label}{sub}", "09-persistent-matmul.py",
                CompileJob("matmul_kernel_tma_persistent", descs,
                           {**_TILE, "FP8_OUTPUT": False, "EPILOGUE_SUBTILE": subtile, "NUM_SMS": 132,
                            "WARP_SPECIALIZE": ws},
                           ("M", "N", "K"), {"num_stages": 3, "num_warps": 8})))
            for arch in (90, 100):
                flatten = not (ws and arch == 90)  # the tutorial: Hopper warp specialization without flatten
                if subtile and not flatten:
                    continue  # pruned by the tutorial's prune_invalid_configs
                configs.append(Config(
                    f"09 matmul_kernel_descriptor_persistent{label}{sub}", "09-persistent-matmul.py",
                    CompileJob("matmul_kernel_descriptor_persistent", dict(_MATMUL_PTRS),
                               {**_TILE, "EPILOGUE_SUBTILE": subtile, "NUM_SMS": 132, "WARP_SPECIALIZE": ws,
                                "FLATTEN": flatten},
                               tuple(_MATMUL_PTRS), {"num_stages": 3, "num_warps": 8}, archs=(arch,))))
    # A smaller tile of the same persistent kernels (128x128x64, 4 warps, 4 stages: another autotune point).
    small = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}
    for ws in (False, True):
        label = " ws" if ws else ""
        configs.append(Config(
            f"09 matmul_kernel_tma_persistent 128x128{label}", "09-persistent-matmul.py",
            CompileJob("matmul_kernel_tma_persistent",
                       {**_TMA_DESCS, "b_desc": _desc("fp16", 128, 64), "c_desc": _desc("fp16", 128, 128)},
                       {**small, "FP8_OUTPUT": False, "EPILOGUE_SUBTILE": False, "NUM_SMS": 132,
                        "WARP_SPECIALIZE": ws},
                       ("M", "N", "K"), {"num_stages": 4, "num_warps": 4})))
        for arch in (90, 100):
            configs.append(Config(
                f"09 matmul_kernel_descriptor_persistent 128x128{label}", "09-persistent-matmul.py",
                CompileJob("matmul_kernel_descriptor_persistent", dict(_MATMUL_PTRS),
                           {**small, "EPILOGUE_SUBTILE": False, "NUM_SMS": 132, "WARP_SPECIALIZE": ws,
                            "FLATTEN": not (ws and arch == 90)}, tuple(_MATMUL_PTRS),
                           {"num_stages": 4, "num_warps": 4}, archs=(arch,))))
    return configs


def _gluon_desc(dtype: str, shape: list, swizzle: int | None = None):
    """A Gluon tensor descriptor's type: the layout is the default for the block (as the tutorials make it), or
    ``swizzle`` bytes of swizzle; computed when compiling (it needs Triton)."""
    def kind():
        from triton.experimental.gluon import language as gl

        if swizzle is None:
            layout = gl.NVMMASharedLayout.get_default_for(shape, getattr(gl, {"fp8e4nv": "float8e4nv", "u8": "uint8",
                                                                             "fp16": "float16"}[dtype]))
        else:
            layout = gl.NVMMASharedLayout(swizzle_byte_width=swizzle, element_bitwidth=8, rank=len(shape))
        return f"tensordesc<{dtype}[{', '.join(str(d) for d in shape)}],{layout!r}>"
    return kind


def _gluon_configs() -> list[Config]:
    scaled = "gluon/11-tcgen05-mma-scaled.py"
    fp8 = {"a_desc": _gluon_desc("fp8e4nv", [128, 128]), "b_desc": _gluon_desc("fp8e4nv", [128, 128]),
           "c_desc": _gluon_desc("fp16", [128, 128])}
    packed_scales = {"a_scale_desc": _gluon_desc("u8", [1, 1, 1, 2, 256]),
                     "b_scale_desc": _gluon_desc("u8", [1, 1, 1, 2, 256])}
    unswizzled_scales = {"a_scale_desc": _gluon_desc("u8", [1, 1, 1, 2, 256], swizzle=0),
                         "b_scale_desc": _gluon_desc("u8", [1, 1, 1, 2, 256], swizzle=0)}
    persistent = {"a_desc": _gluon_desc("fp8e4nv", [128, 128]), "b_desc": _gluon_desc("fp8e4nv", [256, 128]),
                  "c_desc": _gluon_desc("fp16", [128, 256]),
                  "a_scale_desc": _gluon_desc("u8", [1, 1, 1, 2, 256], swizzle=0),
                  "b_scale_desc": _gluon_desc("u8", [1, 2, 1, 2, 256], swizzle=0)}
    scheduler = {"num_buffers": 3, "SchedulerImpl": lambda ns: ns["t7"].GroupedPersistentTileScheduler(8)}
    return [
        Config("g11 simple_mma_scaled_kernel", scaled, CompileJob(
            "simple_mma_scaled_kernel",
            {**fp8, "a_scale_ptr": "*u8", "a_scale_stride_m": "i32", "a_scale_stride_k": "i32", "b_scale_ptr": "*u8",
             "b_scale_stride_n": "i32", "b_scale_stride_k": "i32"}, {"VEC_SIZE": 32}, archs=(100,))),
        Config("g11 mma_scaled_contig_kernel", scaled, CompileJob(
            "mma_scaled_contig_kernel",
            {**fp8, "a_scale_ptr": "*u8", "b_scale_ptr": "*u8"}, {"VEC_SIZE": 32}, archs=(100,))),
        Config("g11 mma_scaled_packed_block_kernel", scaled, CompileJob(
            "mma_scaled_packed_block_kernel", {**fp8, **packed_scales}, {"VEC_SIZE": 32}, archs=(100,))),
        Config("g11 mma_scaled_tcgen05_copy_kernel", scaled, CompileJob(
            "mma_scaled_tcgen05_copy_kernel", {**fp8, **unswizzled_scales}, {"VEC_SIZE": 32}, archs=(100,))),
        Config("g11 mma_scaled_pipelined_kernel", scaled, CompileJob(
            "mma_scaled_pipelined_kernel", persistent, scheduler, archs=(100,))),
        Config("g11 mma_scaled_warp_specialized_kernel", scaled, CompileJob(
            "mma_scaled_warp_specialized_kernel", persistent, scheduler, archs=(100,))),
    ]


CONFIGS = _configs() + _gluon_configs()


def load_tutorial(path: str) -> dict:
    """The namespace of tutorial file ``path`` with what defines on a machine without torch or a GPU.

    Each top-level statement runs on its own, compiled with the file's own name and line numbers (Triton reads a
    kernel's source through ``inspect``); statements that fail (``import torch``, a query of the GPU) are dropped.
    Decorators other than the ``jit`` ones are taken off, so that autotune configurations are not needed.
    """
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem in sys.modules and getattr(sys.modules[stem], "__file__", None) == path:
        return sys.modules[stem].__dict__
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    for sibling in re.findall(r'importlib\.import_module\("([\w.-]+)"\)', source):  # tutorials import each other
        load_tutorial(os.path.join(os.path.dirname(path), sibling + ".py"))
    tree = ast.parse(source, path)
    module = types.ModuleType(stem)
    module.__file__ = path
    sys.modules[stem] = module
    namespace = module.__dict__
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
            statement.decorator_list = [d for d in statement.decorator_list if "jit" in ast.unparse(d)
                                        or "aggregate" in ast.unparse(d)]
        code = compile(ast.Module([statement], type_ignores=[]), path, "exec")
        try:
            exec(code, namespace)
        except Exception:  # noqa: BLE001 - a statement that needs torch or a GPU
            continue
    return namespace


def compile_config(config: Config, arch: int, directory: str):
    from fence_kernels import compile_kernel

    job = config.job
    namespace = load_tutorial(os.path.join(directory, config.file))
    kernel = namespace[job.kernel]
    signature = {name: kind() if callable(kind) else kind for name, kind in job.signature.items()}
    constexprs = {name: value(namespace) if callable(value) else value for name, value in job.constexprs.items()}
    options = dict(job.options)
    num_warps = options.pop("num_warps", 4)
    return compile_kernel(kernel, signature, constexprs, arch=arch, num_warps=num_warps,
                          attrs=job.divisibility_attrs(kernel.arg_names), **options)


def artefacts(config: Config, arch: int, directory: str, out: str | None) -> tuple[str, str, int]:
    """(ptx, ttgir, shared bytes) of one compile, read from ``out`` when an earlier run kept them there (as
    Triton's cache does: ``.ptx``, ``.ttgir`` and the metadata ``.json``)."""
    stem = None
    if out:
        stem = os.path.join(out, f"{config.name.replace(' ', '_').replace('(', '').replace(')', '')}-sm{arch}")
        if all(os.path.exists(stem + suffix) for suffix in (".ptx", ".ttgir", ".json")):
            with open(stem + ".ptx") as ptx, open(stem + ".ttgir") as ttgir, open(stem + ".json") as meta:
                return ptx.read(), ttgir.read(), json.load(meta)["shared"]
    compiled = compile_config(config, arch, directory)
    ptx, ttgir, shared = compiled.asm["ptx"], compiled.asm["ttgir"], compiled.metadata.shared
    if stem:
        os.makedirs(out, exist_ok=True)
        for suffix, text in ((".ptx", ptx), (".ttgir", ttgir), (".json", json.dumps({"shared": shared}))):
            with open(stem + suffix, "w") as handle:
                handle.write(text)
    return ptx, ttgir, shared


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tutorials", help="the directory of Triton's python/tutorials")
    parser.add_argument("--out", help="keep (and reuse) the compiled .ptx/.ttgir here")
    parser.add_argument("--only", help="only the configurations whose name holds this")
    parser.add_argument("--json", help="write the verdicts and findings here")
    args = parser.parse_args(argv)
    sys.path.insert(0, HERE)
    import triton

    from launcher.fence import check_kernel

    rows = []
    for config in CONFIGS:
        if args.only and args.only not in config.name:
            continue
        for arch in config.job.archs:
            start = time.time()
            try:
                ptx, ttgir, shared = artefacts(config, arch, args.tutorials, args.out)
            except Exception as error:  # noqa: BLE001 - reported as a row
                rows.append({"kernel": config.name, "arch": arch, "verdict": "no compile",
                             "reason": f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"})
                print(f"{config.name:48} sm_{arch}: does not compile: {rows[-1]['reason']}", flush=True)
                continue
            report = check_kernel(ptx=ptx, ttgir=ttgir, shared=shared)
            counts = {s: sum(f.severity == s for f in report.findings) for s in ("error", "unknown", "info")}
            verdict = report.verdict if report.verdict != "clean" or not counts["info"] else "info"
            rows.append({"kernel": config.name, "arch": arch, "verdict": verdict, **counts,
                         "fences": ptx.count("fence.proxy.async.shared"),
                         "findings": [f.to_dict() for f in report.findings]})
            print(f"{config.name:48} sm_{arch}: {verdict:8} error {counts['error']} unknown {counts['unknown']} "
                  f"info {counts['info']} ({time.time() - start:.1f} s)", flush=True)
            for finding in report.findings:
                if finding.severity != "info":
                    print("    " + finding.format_text().replace("\n", "\n    "))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"triton": triton.__version__, "rows": rows}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
