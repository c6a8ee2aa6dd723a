"""A reader of the repository alone can follow every reference in it: no tracked file points at
another machine's paths (`/work/...`, `/opt/...`, home directories), at a folder beside the
repository (`../shared/...`), or at a document it does not hold (a "design card"), and every
relative Markdown link names a file that is here."""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THIS = os.path.relpath(os.path.abspath(__file__), ROOT)

OUTSIDE = [
    (re.compile(r"\.\./shared\b"), "a folder beside the repository"),
    (re.compile(r"(?<![\w.~-])/(work|opt|mnt|srv|Users|home/\w+|root)/"), "an absolute path of another machine"),
    (re.compile(r"design card", re.I), "a document that is not in the repository"),
]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _tracked_files():
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: no list of tracked files")
    return [name for name in out.decode().split("\0") if name and os.path.isfile(os.path.join(ROOT, name))]


def _text(name):
    try:
        with open(os.path.join(ROOT, name), encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError:  # a binary file (a PNG)
        return None


def outside_references(names):
    """[(file, line number, what, line)] for every reference that leaves the repository."""
    hits = []
    for name in names:
        if name == THIS:  # the patterns themselves
            continue
        text = _text(name)
        for number, line in enumerate((text or "").splitlines(), 1):
            for pattern, what in OUTSIDE:
                if pattern.search(line):
                    hits.append((name, number, what, line.strip()))
    return hits


def broken_links(names):
    """[(file, target)] for relative Markdown links to files that are not tracked."""
    tracked = set(names)
    broken = []
    for name in names:
        if not name.endswith(".md"):
            continue
        prose = re.sub(r"`[^`\n]*`", "", re.sub(r"^```.*?^```", "", _text(name) or "", flags=re.M | re.S))
        for target in LINK.findall(prose):
            if re.match(r"^[a-z]+:|^#", target):  # a URL or an anchor in the same page
                continue
            path = os.path.normpath(os.path.join(os.path.dirname(name), target.split("#")[0]))
            if path not in tracked and not any(t.startswith(path + "/") for t in tracked):
                broken.append((name, target))
    return broken


def test_the_patterns_catch_what_they_should():
    lines = ["see ../shared/device.md", "cd /work/main", "/opt/t36/bin/python", "the design card says",
             "/home/alice/x", "/root/.cache"]
    assert all(any(p.search(line) for p, _ in OUTSIDE) for line in lines)
    fine = ["/tmp/site", "/bin/false", "~/.triton/cache", "docs/fence.md", "/usr/bin/gcc", "$OUT/tests.log",
            "launcher/work/x", "a.work/b"]
    assert not [line for line in fine if any(p.search(line) for p, _ in OUTSIDE)]


def test_no_tracked_file_points_outside_the_repository():
    hits = outside_references(_tracked_files())
    assert not hits, "references that leave the repository:\n" + "\n".join(
        f"  {name}:{number}: {what}: {line}" for name, number, what, line in hits)


def test_every_relative_markdown_link_is_in_the_repository():
    broken = broken_links(_tracked_files())
    assert not broken, "\n".join(f"  {name}: ({target})" for name, target in broken)
