"""Proxy-fence checker: finds generic-proxy shared-memory accesses that reach an async-proxy access
(TMA, wgmma, tcgen05) with no ``fence.proxy.async`` in between. Pure text analysis of PTX and TTGIR;
imports neither triton nor torch.
"""
from .checker import check_ptx
from .errors import FenceHazardError, ParseError
from .report import Finding, Location, Report

__all__ = ["check_ptx", "FenceHazardError", "Finding", "Location", "ParseError", "Report"]
