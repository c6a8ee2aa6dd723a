"""The cost of the fence check on hostile or huge PTX (red-team review of 2026-12-08).

The check runs before every kernel load, so no input may make it run for long: the algorithms are counted, not
timed: the work must grow in proportion to the input where it did not.
"""
from launcher.fence import check_ptx
from launcher.fence import ptx as P

HEADER = """
.version 8.7
.target sm_90a
.address_size 64
.extern .shared .align 16 .b8 global_smem[];
"""


def kernel(body: str, name: str = "k") -> str:
    return HEADER + f".visible .entry {name}(\n\t.param .u32 {name}_param_0\n)\n.reqntid 128\n{{\n{body}\n}}\n"


def jump_table(n: int) -> str:
    """brx.idx over a .branchtargets table of n labels (one per line), each target storing, then a TMA store."""
    targets = ",\n\t\t".join(f"$L_t{i}" for i in range(n))
    body = ["\tmov.b32 \t%r2, global_smem;\n\tmov.u32 \t%r1, %tid.x;\n",
            f"$L_table: .branchtargets\n\t\t{targets};\n\tbrx.idx \t%r1, $L_table;\n"]
    body += [f"$L_t{i}:\n\tst.shared.b32 \t[%r2+{4 * i}], %r1;\n\tbra \t$L_end;\n" for i in range(n)]
    body.append("$L_end:\n\tcp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd1, {%r1, %r1}], [%r2];\n\tret;")
    return kernel("".join(body))



# -- the algorithms ---------------------------------------------------------------------------------------


def test_a_long_jump_table_is_read_in_linear_time(monkeypatch):
    """A statement continued over many lines (a .branchtargets table) was searched again from its start at every
    line (5000 targets: 0.4 s in the parser alone, 20000: seconds)."""
    scanned = []
    real = P._depth
    monkeypatch.setattr(P, "_depth", lambda text: scanned.append(len(text)) or real(text))
    text = jump_table(3000)
    findings = check_ptx(text)
    assert [(f.severity, f.kind) for f in findings] == [("error", "RAW")]
    assert sum(scanned) < 2 * len(text), (sum(scanned), len(text))
