"""The parameter list of a kernel's PTX `.entry`: the ground truth a plan must match."""
import re

_WIDTH = {"8": 1, "16": 2, "32": 4, "64": 8}


def ptx_param_sizes(ptx: str, name: str) -> list:
    """Byte size of each parameter of `.entry name(...)`, in order."""
    m = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\((.*?)\)", ptx, re.S)
    assert m, f"no .entry {name} in PTX"
    sizes = []
    for decl in m.group(1).split(","):
        decl = decl.strip()
        if not decl:
            continue
        arr = re.search(r"\[(\d+)\]$", decl)
        if arr:
            sizes.append(int(arr.group(1)))
        else:
            ty = re.search(r"\.param\s+\.[a-z]+?(\d+)", decl)
            assert ty, decl
            sizes.append(_WIDTH[ty.group(1)])
    return sizes
