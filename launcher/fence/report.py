"""Findings and reports of the fence checker."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .dataflow import Hazard, Instruction, Scope, WorkBudgetExceeded

ERROR = "error"  # a hazard in the final PTX
INFO = "info"  # a TTGIR hazard that the installed Triton fixes later
UNKNOWN = "unknown"  # the analysis cannot decide; the message says why
CLEAN = "clean"  # the verdict of a report with neither errors nor unknowns (info findings allowed)
BUDGET = "BUDGET"  # the kind of a finding that says the check stopped at its work budget (see budget_finding)


@dataclass(frozen=True)
class Location:
    """An instruction (PTX) or operation (TTGIR) and its 1-based line in the analysed file."""
    text: str
    line: int

    def __str__(self) -> str:
        return f"line {self.line}: {self.text}"


@dataclass(frozen=True)
class Finding:
    kernel: str
    severity: str
    kind: str  # RAW, WAR or WAW
    writer: Location  # the generic-proxy access
    reader: Location  # the async-proxy access
    source_line: str | None  # Python file:line of the async access (or of the writer), when known
    buffer: str
    scope: str  # fence scope needed: "cta" or "cluster"
    hint: str
    message: str
    ir: str = "ptx"  # which IR the instruction lines refer to: "ptx" or "ttgir"
    file: str | None = None  # the file of that IR, when it was read from one

    def to_dict(self) -> dict:
        return asdict(self)

    def _where(self, location: Location) -> str:
        place = f"{self.file}:{location.line}" if self.file else f"{self.ir} line {location.line}"
        return f"{place}: {location.text}"

    def format_text(self) -> str:
        if self.kind == BUDGET:
            return (f"{self.kernel}: {self.severity}: {self.message}\n"
                    f"    kernel:  {self._where(self.writer)}\n"
                    f"    fix:     {self.hint}")
        where = f" ({self.source_line})" if self.source_line else ""
        return (f"{self.kernel}: {self.severity}: {self.kind} {self.message}{where}\n"
                f"    generic: {self._where(self.writer)}\n"
                f"    async:   {self._where(self.reader)}\n"
                f"    buffer:  {self.buffer}; fence scope: {self.scope}\n"
                f"    fix:     {self.hint}")


@dataclass
class Report:
    kernel: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def verdict(self) -> str:
        """"error" if any finding is an error, else "unknown" if any is unknown, else "clean"."""
        severities = {f.severity for f in self.findings}
        return ERROR if ERROR in severities else UNKNOWN if UNKNOWN in severities else CLEAN

    def format_text(self) -> str:
        if not self.findings:
            return f"{self.kernel}: no proxy-fence hazards"
        return "\n".join(f.format_text() for f in self.findings)


_KIND_WORDS = {"RAW": ("generic write", "async-proxy read"), "WAR": ("generic read", "async-proxy write"),
               "WAW": ("generic write", "async-proxy write")}


def finding_from_hazard(kernel: str, hazard: Hazard, severity: str, buffer: str, *, ir: str,
                        reason: str | None = None, file: str | None = None) -> Finding:
    generic, async_access = hazard.generic.instruction, hazard.async_access.instruction
    first, second = _KIND_WORDS[hazard.kind]
    scope = hazard.async_access.scope
    message = f"{first} reaches {second} without fence.proxy.async"
    if hazard.cta_fence_seen:
        message = f"{first} is ordered only by a CTA-scope fence; the {second} needs a cluster-scope fence"
    if reason:
        message += f" (possible overlap: {reason})"
    fence_call = "fence_async_shared(cluster=True)" if scope is Scope.CLUSTER else "fence_async_shared()"
    after = generic.source or f"{ir} line {generic.line}"
    before = async_access.source or f"{ir} line {async_access.line}"
    hint = f"call {fence_call} after the {first} ({after}) and before the {second} ({before})"
    return Finding(kernel=kernel, severity=severity, kind=hazard.kind,
                   writer=_location(generic), reader=_location(async_access),
                   source_line=async_access.source or generic.source, buffer=buffer, scope=scope.value,
                   hint=hint, message=message, ir=ir, file=file)


def _location(instruction: Instruction) -> Location:
    return Location(instruction.text, instruction.line)


def budget_finding(kernel: str, exceeded: WorkBudgetExceeded, *, ir: str, line: int,
                   file: str | None = None) -> Finding:
    """The finding of a check that stopped at its work budget (``dataflow.WorkBudget``): ``unknown``, never
    clean, kind ``BUDGET``; writer and reader are the kernel's header (``line``), as no access is in question."""
    header = Location(kernel, line)
    return Finding(kernel=kernel, severity=UNKNOWN, kind=BUDGET, writer=header, reader=header, source_line=None,
                   buffer="", scope=Scope.CTA.value, ir=ir, file=file,
                   message=f"not decided: the fence check stopped at its work budget ({exceeded.limit:,} steps) "
                           f"before it had followed every path of the kernel",
                   hint="the kernel has more paths or pending shared-memory accesses than the check follows before "
                        "a load; check its fences by hand, or run the check with a larger "
                        "launcher.fence.dataflow.WORK_BUDGET")
