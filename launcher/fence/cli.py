"""``python -m launcher check [--format text|json] PATH...`` (also ``python -m launcher.fence``).

PATH is a ``.ptx`` or ``.ttgir`` file, or a Triton cache directory (every ``<hash>/<name>.ptx`` with its
``<name>.ttgir``). Exit status: 0 no ``error`` finding, 1 at least one, 2 an input that cannot be read
or parsed (reported with its file and line), or a directory that holds no kernel.

``--format json`` prints one object (schema in docs/fence.md)::

    {"kernels": [{"kernel", "ptx", "ttgir", "verdict": "clean"|"error"|"unknown", "findings": [...]}],
     "unreadable": [{"file", "line", "reason"}]}
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from launcher.files import read_regular_file

from .checker import check_kernel, metadata_shared
from .errors import ParseError
from .report import Report

EXIT_CLEAN, EXIT_FINDINGS, EXIT_BAD_INPUT = 0, 1, 2


def _kernels_in(path: str) -> list[tuple[str | None, str | None]]:
    """(ptx path, ttgir path) for a file or for every kernel under a directory."""
    if not os.path.isdir(path):
        return [(None, path)] if path.endswith(".ttgir") else [(path, None)]
    kernels = []
    for directory, _, files in sorted(os.walk(path)):
        stems = {os.path.splitext(f)[0] for f in files if f.endswith((".ptx", ".ttgir"))}
        for stem in sorted(stems):
            ptx = os.path.join(directory, stem + ".ptx")
            ttgir = os.path.join(directory, stem + ".ttgir")
            kernels.append((ptx if os.path.exists(ptx) else None, ttgir if os.path.exists(ttgir) else None))
    return kernels


MAX_IR_BYTES = 1 << 30  # no PTX or TTGIR Triton writes comes near it


def _read_text(path: str) -> str:
    """A regular file's text (UTF-8, newlines as text mode reads them); OSError for anything else
    (launcher.files.read_regular_file: a FIFO, a device such as /dev/zero, a file over MAX_IR_BYTES)."""
    text = read_regular_file(path, MAX_IR_BYTES).decode("utf-8")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _check(ptx_path: str | None, ttgir_path: str | None) -> Report:
    texts = {}
    for key, path in (("ptx", ptx_path), ("ttgir", ttgir_path)):
        if path is not None:
            texts[key] = _read_text(path)
    stem = os.path.splitext(ptx_path or ttgir_path or "")[0]
    return check_kernel(ptx=texts.get("ptx"), ttgir=texts.get("ttgir"), ptx_filename=ptx_path or "",
                        ttgir_filename=ttgir_path or "", shared=metadata_shared(stem + ".json"))


def _summary(report: Report) -> str:
    if not report.findings:
        return "no proxy-fence hazards"
    counts = {}
    for finding in report.findings:
        counts[finding.severity] = counts.get(finding.severity, 0) + 1
    return ", ".join(f"{n} {severity}" for severity, n in sorted(counts.items()))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["check"]:
        argv = argv[1:]
    parser = argparse.ArgumentParser(prog="python -m launcher check",
                                     description="Report missing fence.proxy.async in compiled Triton kernels.")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("paths", nargs="+", metavar="PATH", help=".ptx/.ttgir file or Triton cache directory")
    args = parser.parse_args(argv)
    checked: list[tuple[str | None, str | None, Report]] = []
    unreadable: list[dict] = []

    def refuse(file: str, line: int, reason: str) -> None:
        unreadable.append({"file": file, "line": line, "reason": reason})
        print(f"{file}:{line}: {reason}", file=sys.stderr)

    for path in args.paths:
        if not os.path.exists(path):
            refuse(path, 0, "no such file or directory")
            continue
        kernels = _kernels_in(path)
        if not kernels:
            refuse(path, 0, "no .ptx or .ttgir file in this directory (is it a Triton cache directory?)")
        for ptx_path, ttgir_path in kernels:
            try:
                checked.append((ptx_path, ttgir_path, _check(ptx_path, ttgir_path)))
            except ParseError as error:
                refuse(error.filename, error.line, error.reason)
            except (OSError, UnicodeDecodeError) as error:
                refuse(ptx_path or ttgir_path, 0, f"cannot read: {error}")
    if args.format == "json":
        print(json.dumps({
            "kernels": [{"kernel": report.kernel, "ptx": ptx, "ttgir": ttgir, "verdict": report.verdict,
                         "findings": [f.to_dict() for f in report.findings]} for ptx, ttgir, report in checked],
            "unreadable": unreadable}, indent=2))
    else:
        for ptx, ttgir, report in checked:
            print(f"{ptx or ttgir}: {report.kernel}: {report.verdict} ({_summary(report)})")
            for finding in report.findings:
                print("  " + finding.format_text().replace("\n", "\n  "))
    if unreadable:
        return EXIT_BAD_INPUT
    return EXIT_FINDINGS if any(report.errors for _, _, report in checked) else EXIT_CLEAN
