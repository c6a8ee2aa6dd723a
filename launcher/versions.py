"""What differs between the Triton releases we support (3.6 to 3.9), in one place."""
from __future__ import annotations

import functools
import re

SUPPORTED = ((3, 6), (3, 9))  # inclusive range of (major, minor)


@functools.lru_cache(maxsize=None)
def triton_version() -> tuple:
    """(major, minor) of the installed Triton."""
    import triton

    m = re.match(r"(\d+)\.(\d+)", triton.__version__)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def is_supported() -> bool:
    return SUPPORTED[0] <= triton_version() <= SUPPORTED[1]


def scratch_allocator():
    """The allocator for global scratch: `triton.set_allocator`'s (a ContextVar, per thread)."""
    from triton.runtime import _allocation

    return _allocation._allocator.get()


def profile_scratch_allocator():
    """The allocator for profile scratch. 3.8+ falls back to the driver's default (torch)."""
    from triton.runtime import _allocation

    has_own = getattr(_allocation, "has_profile_allocator", None)
    if has_own is None or has_own():
        return _allocation._profile_allocator.get()
    from triton.runtime import driver as rt_driver

    return rt_driver.active.allocate_default_profile_scratch
