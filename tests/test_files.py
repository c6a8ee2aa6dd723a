"""launcher.files.read_regular_file: the one reader of files the user names (bundles, the fence command)."""
import os
import tracemalloc

import pytest

from launcher import files


def test_reading_sets_aside_the_files_size_not_the_limit(tmp_path):
    # read(limit + 1) set aside the whole limit first: 2 GiB for every bundle, whatever its size
    path = tmp_path / "small"
    path.write_bytes(b"x" * 1000)
    tracemalloc.start()
    try:
        assert files.read_regular_file(path, 2**31) == b"x" * 1000
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


class _Shrunk:
    """os.fstat's answer with a smaller st_size: a file that grew after it was measured."""

    def __init__(self, real, size):
        self.real, self.st_size = real, size

    def __getattr__(self, name):
        return getattr(self.real, name)


@pytest.mark.parametrize("measured", [0, 10, 2_999_999])
def test_a_file_that_grew_after_it_was_measured_is_read_whole_or_refused(tmp_path, monkeypatch, measured):
    path = tmp_path / "growing"
    content = bytes(range(256)) * 11_719  # 3,000,064 bytes: more than one bounded step
    path.write_bytes(content)
    real_fstat = os.fstat
    monkeypatch.setattr(files.os, "fstat", lambda fd: _Shrunk(real_fstat(fd), measured))
    assert files.read_regular_file(path, len(content)) == content
    with pytest.raises(OSError, match=f"larger than {len(content) - 1} bytes"):
        files.read_regular_file(path, len(content) - 1)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="Linux /proc")
def test_a_regular_file_that_says_it_is_empty_is_still_read():
    assert b"Name:" in files.read_regular_file("/proc/self/status", 1 << 20)


def test_what_is_not_a_regular_file_or_too_large_is_refused(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"y" * 100)
    with pytest.raises(OSError, match="larger than 99 bytes"):
        files.read_regular_file(big, 99)
    with pytest.raises(OSError, match="not a regular file|Is a directory"):  # open() may refuse it first
        files.read_regular_file(tmp_path, 1000)
