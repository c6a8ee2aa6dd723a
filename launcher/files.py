"""Reading a file the user names, trusting nothing about it (the one rule for bundles and the
fence command): opened without blocking (a FIFO would wait for a writer), a regular file only
(not a device such as /dev/zero, not a directory), and refused before anything is read where it
is larger than the reader's bound."""
from __future__ import annotations

import os
import stat


def read_regular_file(path, limit: int) -> bytes:
    """The bytes of the regular file `path`; OSError for anything else, or for a file over `limit`
    bytes (also one that grew past it while it was read)."""
    with open(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise OSError("not a regular file")
        if st.st_size > limit:
            raise OSError(f"larger than {limit} bytes")
        # read(n) sets aside n bytes first: ask for the measured size (and one more, to see growth)
        data = f.read(st.st_size + 1)
        if len(data) <= st.st_size:
            return data
        parts, total = [data], len(data)  # it grew since it was measured: read on, in bounded steps
        while total <= limit:
            more = f.read(min(1 << 20, limit + 1 - total))
            if not more:
                break
            parts.append(more)
            total += len(more)
        if total > limit:
            raise OSError(f"larger than {limit} bytes")
        return b"".join(parts)
