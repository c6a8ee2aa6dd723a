"""``python -m launcher check [--format text|json] PATH...`` (also ``python -m launcher.fence``).

PATH is a ``.ptx`` or ``.ttgir`` file, or a Triton cache directory (every ``<hash>/<name>.ptx`` with its
``<name>.ttgir``). Exit status: 0 no ``error`` finding, 1 at least one, 2 an input that cannot be read
or parsed (reported with its file and line).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from .checker import check_kernel
from .errors import ParseError
from .report import Report

EXIT_CLEAN, EXIT_FINDINGS, EXIT_BAD_INPUT = 0, 1, 2


def _kernels_in(path: str) -> list[tuple[str | None, str | None, str]]:
    """(ptx path, ttgir path, display name) for a file or every kernel under a directory."""
    if not os.path.isdir(path):
        if path.endswith(".ttgir"):
            return [(None, path, path)]
        return [(path, None, path)]
    kernels = []
    for directory, _, files in sorted(os.walk(path)):
        stems = {os.path.splitext(f)[0] for f in files if f.endswith((".ptx", ".ttgir"))}
        for stem in sorted(stems):
            ptx = os.path.join(directory, stem + ".ptx")
            ttgir = os.path.join(directory, stem + ".ttgir")
            kernels.append((ptx if os.path.exists(ptx) else None, ttgir if os.path.exists(ttgir) else None,
                            os.path.join(directory, stem)))
    return kernels


def _check(ptx_path: str | None, ttgir_path: str | None) -> Report:
    texts = {}
    for key, path in (("ptx", ptx_path), ("ttgir", ttgir_path)):
        if path is not None:
            with open(path, encoding="utf-8") as handle:
                texts[key] = handle.read()
    return check_kernel(ptx=texts.get("ptx"), ttgir=texts.get("ttgir"), ptx_filename=ptx_path or "",
                        ttgir_filename=ttgir_path or "")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["check"]:
        argv = argv[1:]
    parser = argparse.ArgumentParser(prog="python -m launcher check",
                                     description="Report missing fence.proxy.async in compiled Triton kernels.")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("paths", nargs="+", metavar="PATH", help=".ptx/.ttgir file or Triton cache directory")
    args = parser.parse_args(argv)
    status = EXIT_CLEAN
    reports: list[tuple[str, Report]] = []
    for path in args.paths:
        if not os.path.exists(path):
            print(f"{path}:0: no such file or directory", file=sys.stderr)
            status = EXIT_BAD_INPUT
            continue
        for ptx_path, ttgir_path, display in _kernels_in(path):
            try:
                reports.append((ptx_path or ttgir_path, _check(ptx_path, ttgir_path)))
            except ParseError as error:
                print(str(error), file=sys.stderr)
                status = EXIT_BAD_INPUT
            except (OSError, UnicodeDecodeError) as error:
                print(f"{display}:0: cannot read: {error}", file=sys.stderr)
                status = EXIT_BAD_INPUT
    if args.format == "json":
        print(json.dumps([{**f.to_dict(), "file": file} for file, r in reports for f in r.findings], indent=2))
    else:
        for file, report in reports:
            print(f"{file}: {report.format_text()}")
    if status == EXIT_CLEAN and any(report.errors for _, report in reports):
        status = EXIT_FINDINGS
    return status
