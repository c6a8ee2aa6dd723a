"""`python -m launcher demo`: what the package does, on this machine.

1. Compiles a handful of Triton kernels (for this GPU, or for sm_90 on the CPU when there is
   none), one of them a Gluon kernel that stores to shared memory and TMA-stores it without
   `fence_async_shared()`, and checks each kernel's PTX and TTGIR for missing proxy fences.
   - Where the final PTX misses a fence (Triton 3.6 compiles the Gluon kernel so), the demo
     prints the checker's error with the Python line.
   - Where the compiler put the fence in (Triton 3.7+), the checker's finding is `info`: the demo
     says which PTX instruction is the compiler's fence, then checks the same PTX without it (the
     code Triton 3.6 emits) and prints the error the checker gives for that.
   Every finding of every kernel is shown, whatever kernels and findings there are.
2. Where a GPU is present, launches vector add through stock Triton, through launcher and
   through launcher's fast dispatch, checks the results agree, and prints a quick host-time
   comparison, interleaved round by round.

The kernels go to Triton's cache like any other (the demo says which directory that is).
"""
from __future__ import annotations

import os
import re
import statistics
import time
import warnings
from dataclasses import dataclass, field

FENCE_RE = re.compile(r"^\s*(@!?%\w+\s+)?fence\.proxy\.async\b")


def _target():
    from triton.backends.compiler import GPUTarget

    try:
        import torch

        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            return GPUTarget("cuda", major * 10 + minor, 32), True
    except ImportError:
        pass
    return GPUTarget("cuda", 90, 32), False


def _kernels():
    """(label, jit function, signature, constexprs) of every kernel the demo compiles and checks."""
    import triton
    import triton.language as tl

    @triton.jit
    def vector_add(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)

    @triton.jit
    def softmax(out, inp, stride, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        x = tl.load(inp + row * stride + cols, mask=cols < n, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < n)

    @triton.jit
    def tuple_args(out, t, scale):
        tl.store(out, tl.load(t[0]) * scale + t[1])

    yield "vector_add", vector_add, {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32",
                                     "BLOCK": "constexpr"}, {"BLOCK": 1024}
    yield "softmax", softmax, {"out": "*fp32", "inp": "*fp32", "stride": "i32", "n": "i32",
                               "BLOCK": "constexpr"}, {"BLOCK": 1024}
    yield "tuple_args", tuple_args, {"out": "*fp32", "t": ("*fp32", "i32"), "scale": "fp32"}, {}
    yield from _gluon_kernels()


def _gluon_kernels():
    """A Gluon kernel that TMA-stores shared memory it just wrote, with and without the fence."""
    try:
        from triton.experimental import gluon
        from triton.experimental.gluon import language as gl
        from triton.experimental.gluon._runtime import GluonASTSource  # noqa: F401
        from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, tma
    except ImportError:
        return []
    tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global

    @gluon.jit
    def gluon_tma_store(desc, FENCE: gl.constexpr):
        layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
        smem = gl.allocate_shared_memory(gl.float16, [64, 64], desc.layout)
        smem.store(gl.full([64, 64], 1.0, gl.float16, layout))
        if FENCE:
            fence_async_shared()
        tma_store(desc, [0, 0], smem)
        tma.store_wait(0)

    desc = "tensordesc<fp16[64, 64],NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)>"
    return [(f"gluon_tma_store (FENCE={f})", gluon_tma_store, {"desc": desc, "FENCE": "constexpr"},
             {"FENCE": f}) for f in (False, True)]


def _compile(fn, signature, constexprs, target):
    import triton
    from triton.compiler import ASTSource

    if type(fn).__name__ == "GluonJITFunction":
        from triton.experimental.gluon._runtime import GluonASTSource as ASTSource  # noqa: N814
    with warnings.catch_warnings():  # Triton 3.9 warns about a default that does not matter here
        warnings.filterwarnings("ignore", message=".*TRITON_DEFAULT_FP_FUSION")
        return triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs), target=target)


@dataclass
class CompilerFence:
    """An `info` finding (a hazard in the TTGIR that the final PTX does not have) and the PTX fences
    whose removal brings it back as an error: the fences the compiler inserted for it."""
    finding: object  # launcher.fence.Finding, severity info
    ptx_lines: list  # [(1-based PTX line, instruction text)]
    without: object  # launcher.fence.Report of the PTX with those fences blanked out


@dataclass
class KernelResult:
    label: str
    report: object = None  # launcher.fence.Report; None when the kernel did not compile here
    not_compiled: str | None = None
    compile_ms: float = 0.0
    check_ms: float = 0.0
    compiler_fences: list = field(default_factory=list)  # [CompilerFence], one per info finding explained

    def findings(self, severity):
        return [f for f in self.report.findings if f.severity == severity] if self.report else []

    @property
    def verdict(self) -> str:
        from launcher import fence

        if self.report is None:
            return "not compiled here"
        errors, unknown = self.findings(fence.ERROR), self.findings(fence.UNKNOWN)
        if errors:
            return f"{len(errors)} missing fence(s)"
        if unknown:
            return f"{len(unknown)} possible hazard(s)"
        if self.compiler_fences:
            return "fenced by the compiler"
        if self.findings(fence.INFO):
            return "ordered in the final PTX"
        return "clean"


def _blank_lines(ptx: str, lines) -> str:
    """The PTX with the given 1-based lines emptied (so that every other line keeps its number)."""
    drop = set(lines)
    return "\n".join("" if i in drop else text for i, text in enumerate(ptx.split("\n"), 1))


def _same_hazard(a, b) -> bool:
    return a.kind == b.kind and a.source_line == b.source_line


def explain_compiler_fences(ptx: str, ttgir: str | None, report, name: str | None = None) -> list[CompilerFence]:
    """For each `info` finding of `report`: the fence.proxy.async lines of `ptx` whose removal turns it
    into an error (one at a time first; all of them when no single one does), with that check."""
    from launcher import fence

    fences = [i for i, text in enumerate(ptx.split("\n"), 1) if FENCE_RE.match(text)]
    texts = ptx.split("\n")
    explained = []
    for info in (f for f in report.findings if f.severity == fence.INFO):
        candidates = [[i] for i in fences] + ([fences] if len(fences) > 1 else [])
        for lines in candidates:
            without = fence.check_kernel(ptx=_blank_lines(ptx, lines), ttgir=ttgir, name=name or report.kernel)
            if any(_same_hazard(e, info) for e in without.errors):
                explained.append(CompilerFence(info, [(i, texts[i - 1].strip()) for i in lines], without))
                break
    return explained


def check_kernels(kernels=None, target=None) -> list[KernelResult]:
    """Compile and fence-check each kernel (default: the demo's); no output."""
    from launcher import fence

    target = target or _target()[0]
    results = []
    for label, fn, signature, constexprs in (kernels if kernels is not None else _kernels()):
        result = KernelResult(label)
        t0 = time.perf_counter()
        try:
            ck = _compile(fn, signature, constexprs, target)
        except Exception as e:  # a kernel this Triton/arch cannot compile
            result.not_compiled = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:80]}"
            results.append(result)
            continue
        result.compile_ms = (time.perf_counter() - t0) * 1e3
        ptx, ttgir = ck.asm.get("ptx"), ck.asm.get("ttgir")
        t0 = time.perf_counter()
        result.report = fence.check_kernel(ptx=ptx, ttgir=ttgir, name=ck.metadata.name)
        result.check_ms = (time.perf_counter() - t0) * 1e3
        if ptx is not None:
            result.compiler_fences = explain_compiler_fences(ptx, ttgir, result.report, ck.metadata.name)
        results.append(result)
    return results


def _indent(text: str, prefix: str = "      ") -> list[str]:
    return [prefix + line for line in text.splitlines()]


def describe(result: KernelResult, triton_version: str) -> list[str]:
    """The lines the demo prints for one kernel."""
    from launcher import fence

    if result.report is None:
        return [f"  {result.label:32s} not compiled here ({result.not_compiled})"]
    lines = [f"  {result.label:32s} {result.verdict:24s} (check {result.check_ms:.1f} ms; "
             f"compile {result.compile_ms:.0f} ms)"]
    for finding in result.findings(fence.ERROR) + result.findings(fence.UNKNOWN):
        lines += _indent(finding.format_text())
    explained = {id(c.finding) for c in result.compiler_fences}
    for cf in result.compiler_fences:
        where = ", ".join(f"PTX line {i}: {text}" for i, text in cf.ptx_lines)
        lines.append(f"      The Python code has no fence_async_shared() here; Triton {triton_version}'s compiler "
                     f"inserted one ({where}).")
        lines.append("      The checker's finding on the TTGIR (info: the final PTX is ordered):")
        lines += _indent(cf.finding.format_text(), "        ")
        lines.append("      The same PTX with that fence taken out (the kind of code Triton 3.6 emits) "
                     "is what the check stops:")
        for error in cf.without.errors:
            lines += _indent(error.format_text(), "        ")
    for finding in result.findings(fence.INFO):
        if id(finding) not in explained:
            lines += _indent(finding.format_text())
    return lines


def _cache_note() -> str:
    try:
        from triton import knobs

        directory = knobs.cache.dir
    except Exception:  # pragma: no cover - every supported Triton has knobs.cache
        directory = os.environ.get("TRITON_CACHE_DIR") or os.path.expanduser("~/.triton/cache")
    if os.environ.get("TRITON_CACHE_DIR"):
        return f"Triton cache: {directory} (from TRITON_CACHE_DIR)"
    return (f"Triton cache: {directory}, Triton's default: the demo's kernels are added to your cache "
            "(set TRITON_CACHE_DIR to use another directory)")


def check_fences(out=print) -> list[KernelResult]:
    import triton

    target, _ = _target()
    out(f"Fence check of kernels compiled for sm_{target.arch}:")
    results = check_kernels(target=target)
    for result in results:
        for line in describe(result, triton.__version__):
            out(line)
    errors = sum(len(r.report.errors) for r in results if r.report)
    shown = sum(len(cf.without.errors) for r in results for cf in r.compiler_fences)
    if errors or shown:
        out("With launcher installed, this check runs before each kernel is loaded: "
            "LAUNCHER_FENCE_CHECK=warn (the default) logs such an error, =error refuses to load the kernel.")
    return results


def compare_launchers(out=print, rounds=30, per_batch=200):
    """Vector add three ways, interleaved round by round (launcher.bench.rounds): a kernel compiled
    under stock Triton, one compiled with launcher installed, and that one with the fast dispatch
    on. Checks every result and prints each path's host time and its ratio to stock's."""
    import torch
    import triton

    import launcher
    from launcher.bench.rounds import Path, Rounds

    add_fn = next(jit.fn for label, jit, _, _ in _kernels() if label == "vector_add")
    n = 4096
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    stock_add, our_add = triton.jit(add_fn), triton.jit(add_fn)  # two JIT functions: two caches
    kernels = {"stock Triton": (stock_add, False), "launcher": (our_add, False),
               "launcher, fast dispatch": (our_add, True)}
    results = {}
    launcher.uninstall()
    try:
        stock_add[(4,)](x, y, torch.empty_like(x), n, BLOCK=1024)  # compiled with Triton's launcher
        launcher.install()
        paths = []
        for name, (kernel, fast) in kernels.items():
            o = results[name] = torch.full_like(x, -1.0)

            def before(fast=fast, kernel=kernel, o=o):
                launcher.install(fast_dispatch=fast)
                kernel[(4,)](x, y, o, n, BLOCK=1024)  # untimed (compiles, or records the guard's key)

            def run(kernel=kernel, o=o):
                for _ in range(per_batch):
                    kernel[(4,)](x, y, o, n, BLOCK=1024)

            paths.append(Path(name, run, per_batch, before))
        r = Rounds(paths, sync=torch.cuda.synchronize)
        r.run(rounds, warmup=2)
        torch.cuda.synchronize()
    finally:
        launcher.uninstall()
    want = x + y
    same = all(torch.equal(o, want) for o in results.values())
    out(f"vector add through stock Triton, launcher, and launcher with its fast dispatch: results "
        f"{'identical' if same else 'DIFFER'}")
    stock = r.times["stock Triton"]
    out(f"  kernel[grid](...) host time, interleaved over {rounds} rounds of {per_batch} launches "
        f"(quick look; `python -m launcher bench` measures properly):")
    for name in kernels:
        ratios = [t / s for t, s in zip(r.times[name], stock)]
        out(f"    {name:24s} {statistics.median(r.times[name]):6.2f} µs per launch, "
            f"{statistics.median(ratios):.2f} of stock's")
    return same


def main(argv=None) -> int:
    """The demo; its exit status (2: Triton is not installed, said in one line on stderr)."""
    import sys

    try:
        import triton
    except ModuleNotFoundError as e:
        if e.name != "triton":  # Triton is there, and something it imports is not: Triton's error
            raise
        from launcher.install import TRITON_MISSING

        print("launcher demo compiles Triton kernels, and " + TRITON_MISSING.format(python=sys.executable),
              file=sys.stderr)
        return 2

    import launcher

    target, gpu = _target()
    print(f"launcher {launcher.__version__}, Triton {triton.__version__}, "
          f"{'GPU sm_' + str(target.arch) if gpu else 'no GPU: compiling for sm_90 on the CPU'}")
    print(_cache_note())
    check_fences()
    if gpu:
        ok = compare_launchers()
        return 0 if ok else 1
    print("No GPU here: launches skipped (they need an NVIDIA GPU and torch).")
    return 0
