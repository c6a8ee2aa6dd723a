"""Reading a file the user names, trusting nothing about it (the one rule for bundles and the
fence command): opened without blocking (a FIFO would wait for a writer), a regular file only
(not a device such as /dev/zero, not a directory), and refused before anything is read where it
is larger than the reader's bound."""
from __future__ import annotations

import os
import stat


def read_regular_file(path, limit: int) -> bytes:
    """The bytes of the regular file `path` (at most limit + 1 of them: a file that grew since it
    was measured shows as too long); OSError for anything else, or for a file over `limit` bytes."""
    with open(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise OSError("not a regular file")
        if st.st_size > limit:
            raise OSError(f"larger than {limit} bytes")
        return f.read(limit + 1)
