"""Exceptions of the fence checker."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .report import Report


class ParseError(ValueError):
    """The input is not PTX/TTGIR the checker can read; names the file and line."""

    def __init__(self, filename: str, line: int, reason: str):
        super().__init__(f"{filename}:{line}: {reason}")
        self.filename = filename
        self.line = line
        self.reason = reason


class FenceHazardError(RuntimeError):
    """Raised by a load policy when a kernel has an ``error`` finding; carries the report."""

    def __init__(self, report: "Report"):
        super().__init__(report.format_text())
        self.report = report
