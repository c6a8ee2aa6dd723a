"""Proxy-fence checker: finds generic-proxy shared-memory accesses that reach an async-proxy access
(TMA, wgmma, tcgen05) with no ``fence.proxy.async`` in between, from a kernel's PTX (what runs) and
TTGIR (for attribution). Pure text analysis: imports neither triton nor torch.
"""
from .checker import check_kernel, check_metadata_group, check_ptx, check_ttgir
from .cli import main
from .errors import FenceHazardError, ParseError
from .report import CLEAN, ERROR, INFO, UNKNOWN, Finding, Location, Report

__all__ = ["check_kernel", "check_metadata_group", "check_ptx", "check_ttgir", "main", "CLEAN", "ERROR", "INFO",
           "UNKNOWN", "FenceHazardError", "Finding", "Location", "ParseError", "Report"]
