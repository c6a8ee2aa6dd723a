"""PTX text for the fence-checker tests: a module header shaped like Triton's output, and a kernel
around a body of instructions."""

HEADER = """
.version 8.7
.target sm_90a
.address_size 64
.extern .shared .align 16 .b8 global_smem[];
"""


def kernel(body: str, name: str = "k", file: str | None = None) -> str:
    """A module of one kernel `name` (one .u32 parameter, 128 threads) running `body`; `file`: the
    source file its .loc lines cite (a .file directive), or none."""
    text = HEADER + f".visible .entry {name}(\n\t.param .u32 {name}_param_0\n)\n.reqntid 128\n{{\n{body}\n}}\n"
    return text + (f'\t.file\t1 "{file}"\n' if file else "")
