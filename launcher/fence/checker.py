"""Entry points: check PTX, TTGIR, or both for one kernel."""
from __future__ import annotations

import json
import logging
import os
from dataclasses import replace

from .dataflow import Hazard, WorkBudget, WorkBudgetExceeded, find_hazards
from .ptx import kernel_blocks, parse_ptx
from .report import BUDGET, ERROR, INFO, UNKNOWN, Finding, Report, budget_finding, finding_from_hazard
from .ttgir import async_operand_extents, entry_functions, parse_ttgir, shared_allocation
from .ttgir import function_blocks as ttgir_function_blocks

log = logging.getLogger("launcher.fence")


def representative_hazards(hazards: list[Hazard]) -> list[Hazard]:
    """One hazard per (async access, kind): a certain one if any, else the earliest generic access.

    A single fence before the async access fixes all of them, so more would be noise.
    """
    chosen: dict[tuple, Hazard] = {}
    for hazard in sorted(hazards, key=lambda h: (h.async_access.instruction.line, h.generic.instruction.line)):
        key = (hazard.async_access.instruction, hazard.kind)
        if key not in chosen or (hazard.certain and not chosen[key].certain):
            chosen[key] = hazard
    return sorted(chosen.values(), key=lambda h: (h.async_access.instruction.line, h.kind))


def _log_budget(kernel: str, exceeded: WorkBudgetExceeded, ir: str) -> None:
    """Said where a load hears it: the hook acts on errors only, and an ``unknown`` kernel loads."""
    log.warning("fence check of %r stopped at its work budget (%s steps) in the %s: not decided, the kernel is "
                "not checked", kernel, f"{exceeded.limit:,}", ir)


def _file(filename: str | None) -> str | None:
    """The file name findings cite: None for the placeholders ("<ptx>") of text given directly."""
    return filename if filename and not filename.startswith("<") else None


def check_ptx(text: str, *, name: str | None = None, filename: str = "<ptx>",
              shared: int | None = None) -> list[Finding]:
    """Hazards in final PTX: ``error`` where the overlap is certain, ``unknown`` where it is only possible.
    ``shared``: the bytes of dynamic shared memory the kernel is launched with (Triton's metadata ``shared``)."""
    return _check_ptx_module(parse_ptx(text, filename), name, shared=shared)


def _check_ptx_module(module, name: str | None, extents: dict | None = None,
                      shared: int | None = None) -> list[Finding]:
    """Findings of every kernel of a parsed PTX module. The kernels share one ``WorkBudget``: a kernel the check
    cannot finish within it gets one ``unknown`` finding of kind ``BUDGET`` (never clean, never a hang)."""
    findings = []
    budget = WorkBudget()
    for function in module.kernels:
        kernel = name or function.name
        try:
            hazards = find_hazards(kernel_blocks(module, function, extents, shared, budget), budget=budget,
                                   representative=True)
        except WorkBudgetExceeded as exceeded:
            _log_budget(kernel, exceeded, "PTX")
            findings.append(budget_finding(kernel, exceeded, ir="ptx", line=function.line,
                                           file=_file(module.filename)))
            continue
        for hazard in representative_hazards(hazards):
            if hazard.certain:
                severity, reason = ERROR, None
            else:
                severity = UNKNOWN
                reason = hazard.generic.unresolved or hazard.async_access.unresolved or \
                    "the async operand's extent is not known"
            buffer = str(hazard.async_access.region)
            findings.append(finding_from_hazard(kernel, hazard, severity, buffer, ir="ptx", reason=reason,
                                                file=_file(module.filename)))
    return findings


def check_ttgir(text: str, *, name: str | None = None, filename: str = "<ttgir>") -> list[Finding]:
    """Hazards in TTGIR: ``info`` where the buffers are the same, ``unknown`` where they may be.

    TTGIR is not what runs (Triton's late fence pass and LLVM come after it), so a TTGIR hazard is
    never an ``error`` by itself; ``check_kernel`` relates it to the PTX.
    """
    return _check_ttgir_module(parse_ttgir(text, filename), name, filename)


def _check_ttgir_module(module, name: str | None, filename: str | None = None) -> list[Finding]:
    findings = []
    budget = WorkBudget()  # as for the PTX (_check_ptx_module), its own
    for function in entry_functions(module):
        kernel = name or function.name
        try:
            hazards = find_hazards(ttgir_function_blocks(module, function), budget=budget, representative=True)
        except WorkBudgetExceeded as exceeded:
            _log_budget(kernel, exceeded, "TTGIR")
            findings.append(budget_finding(kernel, exceeded, ir="ttgir", line=function.line, file=_file(filename)))
            continue
        for hazard in representative_hazards(hazards):
            severity = INFO if hazard.certain else UNKNOWN
            reason = None if hazard.certain else "the descriptors may refer to the same buffer"
            findings.append(finding_from_hazard(kernel, hazard, severity, str(hazard.async_access.region),
                                                ir="ttgir", reason=reason, file=_file(filename)))
    return findings


def check_kernel(*, ptx: str | None = None, ttgir: str | None = None, name: str | None = None,
                 ptx_filename: str = "<ptx>", ttgir_filename: str = "<ttgir>", info: bool = True,
                 shared: int | None = None) -> Report:
    """Check one kernel. PTX hazards are the findings (``error``/``unknown``); TTGIR hazards that the
    PTX does not show (Triton's late pass or LLVM put the fence in) become ``info``; TTGIR findings
    lend their Python source line to PTX findings on the same async operation when the PTX has none.

    The TTGIR also bounds the operands of the PTX's async instructions. ``shared``: the bytes of dynamic shared
    memory the kernel is launched with (Triton's metadata ``shared``; else the TTGIR's ``ttg.shared`` when it has
    one): no access reaches past them. ``info=False`` (the load hook)
    leaves out the TTGIR's own analysis unless a PTX finding needs its source line: no ``info`` findings,
    and a TTGIR that cannot be parsed is not noticed.
    """
    if ptx is None and ttgir is None:
        raise TypeError("check_kernel needs the kernel's ptx=, ttgir= or both")
    if ptx is None or info:
        ttgir_module = parse_ttgir(ttgir, ttgir_filename) if ttgir is not None else None
        ttgir_findings = _check_ttgir_module(ttgir_module, name, ttgir_filename) if ttgir_module is not None else []
    else:
        ttgir_findings = None
    if ptx is None:
        return Report(name or (ttgir_findings[0].kernel if ttgir_findings else "<kernel>"), ttgir_findings)
    module = parse_ptx(ptx, ptx_filename)
    extents = async_operand_extents(ttgir) if ttgir is not None else None
    if shared is None and ttgir is not None:
        shared = shared_allocation(ttgir)
    ptx_findings = _check_ptx_module(module, name, extents, shared)
    if ttgir_findings is None:
        ttgir_findings = []
        if ttgir is not None and any(not f.source_line and f.kind != BUDGET for f in ptx_findings):
            ttgir_findings = _check_ttgir_module(parse_ttgir(ttgir, ttgir_filename), name, ttgir_filename)
        findings = [_attach_source(f, ttgir_findings) for f in ptx_findings]
        return Report(name or (module.functions[0].name if module.functions else "<kernel>"), findings)
    findings = [_attach_source(f, ttgir_findings) for f in ptx_findings]
    shown = {(f.kind, f.source_line) for f in findings if f.source_line}
    for finding in ttgir_findings:
        if finding.kind == BUDGET:  # the PTX decides the verdict: a TTGIR the check could not finish is only info
            findings.append(replace(finding, severity=INFO))
            continue
        if (finding.kind, finding.source_line) in shown:
            continue
        findings.append(replace(finding, severity=INFO,
                                message=finding.message + "; the final PTX orders it (the compiler added the fence)"))
    kernel = name or (module.functions[0].name if module.functions else "<kernel>")
    return Report(kernel, findings)


def _attach_source(finding: Finding, ttgir_findings: list[Finding]) -> Finding:
    if finding.source_line:
        return finding
    candidates = {f.source_line for f in ttgir_findings if f.kind == finding.kind and f.source_line}
    if len(candidates) == 1:
        return replace(finding, source_line=candidates.pop())
    return finding


def check_metadata_group(metadata_group: dict[str, str], name: str, *, info: bool = True) -> Report | None:
    """Check the kernel whose files Triton's ``metadata_group`` names (file name -> absolute path).

    Returns None when there is no PTX to check (``TRITON_STORE_BINARY_ONLY=1``); the reason is logged.
    ``info``: as for ``check_kernel``.
    """
    paths = {os.path.splitext(filename)[1]: path for filename, path in metadata_group.items()}
    ptx_path, ttgir_path = paths.get(".ptx"), paths.get(".ttgir")
    if ptx_path is None:
        log.info("fence check skipped for %s: no PTX in the cache (TRITON_STORE_BINARY_ONLY?)", name)
        return None
    ptx = _read(ptx_path)
    ttgir = _read(ttgir_path) if ttgir_path else None
    return check_kernel(ptx=ptx, ttgir=ttgir, name=name, ptx_filename=ptx_path, ttgir_filename=ttgir_path or "",
                        info=info, shared=metadata_shared(paths.get(".json")))


def metadata_shared(path: str | None) -> int | None:
    """The ``shared`` bytes (dynamic shared memory at launch) of the kernel metadata JSON Triton's cache keeps
    next to the PTX; None when there is no such file or it does not say."""
    if path is None:
        return None
    try:
        shared = json.loads(_read(path)).get("shared")
    except (OSError, ValueError, AttributeError):
        return None
    return shared if isinstance(shared, int) and not isinstance(shared, bool) and shared >= 0 else None


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()
