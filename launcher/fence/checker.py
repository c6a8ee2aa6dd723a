"""Entry points: check PTX, TTGIR, or both for one kernel."""
from __future__ import annotations

from .dataflow import Hazard, find_hazards
from .ptx import function_blocks, parse_ptx
from .report import ERROR, UNKNOWN, Finding, finding_from_hazard


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


def check_ptx(text: str, *, name: str | None = None, filename: str = "<ptx>") -> list[Finding]:
    """Hazards in final PTX: ``error`` where the overlap is certain, ``unknown`` where it is only possible."""
    module = parse_ptx(text, filename)
    findings = []
    for function in module.functions:
        kernel = name or function.name
        for hazard in representative_hazards(find_hazards(function_blocks(function, module.shared_symbols))):
            if hazard.certain:
                severity, reason = ERROR, None
            else:
                severity = UNKNOWN
                reason = hazard.generic.unresolved or hazard.async_access.unresolved or \
                    "the async operand's extent is not known"
            buffer = str(hazard.async_access.region)
            findings.append(finding_from_hazard(kernel, hazard, severity, buffer, ir="ptx", reason=reason))
    return findings
