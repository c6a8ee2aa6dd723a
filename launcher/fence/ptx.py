"""PTX front end: parse functions, build their control-flow graphs, resolve shared-memory addresses,
and classify instructions into proxy events for ``dataflow.find_hazards``.

PTX is one thread's program. Data instructions under a predicate are taken to execute (may); a fence
under a predicate is taken not to (it might not run in the writing threads), so only unpredicated
fences clear pending accesses.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from .dataflow import Access, AccessKind, Block, Fence, Instruction, Overlap, Scope
from .errors import ParseError

# ----------------------------------------------------------------------------------------------
# Parsing


@dataclass
class PtxInstruction:
    line: int
    statement: str  # as written, without the ';'
    predicate: str | None  # "%p1" or "!%p1"
    opcode: str
    operand_text: str
    source: str | None  # Python file:line from the preceding .loc
    scope: int  # inline-asm brace scope the instruction sits in (0 = function body)
    parts: list[str] = field(init=False)  # opcode split at '.'

    def __post_init__(self):
        self.parts = self.opcode.split(".")

    @cached_property
    def text(self) -> str:
        return " ".join(self.statement.split())

    @cached_property
    def operands(self) -> list[str]:
        return split_operands(self.operand_text)

    @property
    def first_operand(self) -> str:
        text = self.operand_text
        if text.startswith(("{", "[", "(")):
            return self.operands[0] if self.operands else ""
        return text.split(",", 1)[0].strip()

    def ref(self) -> Instruction:
        return Instruction(self.text, self.line, self.source)


@dataclass
class PtxFunction:
    name: str
    line: int
    instructions: list[PtxInstruction] = field(default_factory=list)
    # (scope, label) -> index of the instruction that follows the label
    labels: dict[tuple[int, str], int] = field(default_factory=dict)
    scope_parents: dict[int, int] = field(default_factory=dict)


@dataclass
class PtxModule:
    functions: list[PtxFunction]
    shared_symbols: set[str]


_HEADER = re.compile(r"^\s*(?:\.(?:visible|weak|extern)\s+)*\.(entry|func)\b(?:\s*\([^)]*\))?\s*([\w$.]+)")
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)")
_SHARED_DECL = re.compile(r"\.shared\b[^;]*?([\w$]+)\s*(?:\[[^\]]*\])?\s*;")
_LABEL = re.compile(r"^([\w$]+):")
_PRED = re.compile(r"^@(!?%?[\w$]+)\s+")


def _strip_comment(line: str) -> str:
    index = line.find("//")
    return line if index < 0 else line[:index]


def split_operands(text: str) -> list[str]:
    """Split an operand list at top-level commas (not inside [], {} or ())."""
    if "[" not in text and "{" not in text and "(" not in text:
        return [part.strip() for part in text.split(",") if part.strip()]
    operands, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            operands.append(text[start:i].strip())
            start = i + 1
    last = text[start:].strip()
    if last:
        operands.append(last)
    return operands


def parse_ptx(text: str, filename: str = "<ptx>") -> PtxModule:
    lines = text.splitlines()
    files = {m.group(1): m.group(2) for m in map(_FILE.match, lines) if m}
    shared_symbols: set[str] = set()
    functions: list[PtxFunction] = []
    current: PtxFunction | None = None
    pending_header: PtxFunction | None = None
    depth = 0  # brace depth inside the current function body
    scopes: list[int] = []
    next_scope = 0
    source: str | None = None
    for number, raw in enumerate(lines, start=1):
        line = _strip_comment(raw).strip()
        if not line:
            continue
        if current is None:
            if pending_header is None:
                header = _HEADER.match(line)
                if header:
                    pending_header = PtxFunction(header.group(2), number)
                    line = line[header.end():]
                elif line.startswith((".extern", ".shared")) and ".shared" in line:
                    decl = _SHARED_DECL.search(line)
                    if decl:
                        shared_symbols.add(decl.group(1))
                    continue
                else:
                    continue
            if pending_header is not None:
                if ";" in line and "{" not in line and line.rstrip().endswith(";") and ")" in line:
                    pending_header = None  # a declaration without a body
                    continue
                if "{" not in line:
                    continue
                current, pending_header = pending_header, None
                depth, scopes, next_scope, source = 1, [0], 1, None
                line = line[line.index("{") + 1:].strip()
                if not line:
                    continue
        # inside a function body
        while line:
            if line.startswith("{"):
                depth += 1
                current.scope_parents[next_scope] = scopes[-1]
                scopes.append(next_scope)
                next_scope += 1
                line = line[1:].strip()
                continue
            if line.startswith("}"):
                depth -= 1
                scopes.pop()
                line = line[1:].strip()
                if depth == 0:
                    functions.append(current)
                    current = None
                    break
                continue
            label = _LABEL.match(line)
            if label:
                current.labels[(scopes[-1], label.group(1))] = len(current.instructions)
                line = line[label.end():].strip()
                continue
            end = line.find(";")
            if end < 0 and line.startswith("."):
                end = len(line)  # .loc and other directives without ';'
            if end < 0:
                raise ParseError(filename, number, f"statement without ';': {line!r}")
            statement, line = line[:end].strip(), line[end + 1:].strip()
            if statement.startswith("."):
                loc = _LOC.match(statement)
                if loc:
                    path = files.get(loc.group(1))
                    source = f"{path}:{loc.group(2)}" if path else None
                elif statement.startswith(".shared"):
                    decl = _SHARED_DECL.search(statement + ";")
                    if decl:
                        shared_symbols.add(decl.group(1))
                continue
            current.instructions.append(_parse_statement(statement, number, source, scopes[-1]))
    if current is not None or pending_header is not None:
        raise ParseError(filename, len(lines), "unterminated function body")
    if not functions and not any(line.lstrip().startswith(".version") for line in lines):
        raise ParseError(filename, 1, "not PTX: no .version directive and no function")
    return PtxModule(functions, shared_symbols)


def _parse_statement(statement: str, line: int, source: str | None, scope: int) -> PtxInstruction:
    predicate = None
    body = statement
    if statement.startswith("@"):
        pred = _PRED.match(statement)
        predicate = pred.group(1)
        body = statement[pred.end():]
    opcode, _, rest = body.partition(" ")
    if "\t" in opcode:
        opcode, _, tail = opcode.partition("\t")
        rest = tail + " " + rest
    return PtxInstruction(line, statement, predicate, opcode.strip(), rest.strip(), source, scope)


# ----------------------------------------------------------------------------------------------
# Control-flow graph

_TERMINATORS = ("ret", "exit", "trap")


def _resolve_label(function: PtxFunction, scope: int, name: str) -> int | None:
    while True:
        index = function.labels.get((scope, name))
        if index is not None:
            return index
        if scope == 0:
            return None
        scope = function.scope_parents[scope]


def build_cfg(function: PtxFunction) -> tuple[list[list[int]], list[list[int]]]:
    """Return (blocks as lists of instruction indices, successor block numbers per block)."""
    instructions = function.instructions
    count = len(instructions)
    targets: dict[int, list[int]] = {}
    leaders = {0} | set(function.labels.values())
    for i, instr in enumerate(instructions):
        base = instr.parts[0]
        if base == "bra":
            target = _resolve_label(function, instr.scope, instr.operands[0]) if instr.operands else None
            targets[i] = [target] if target is not None else []
            leaders.add(i + 1)
        elif base == "brx":
            targets[i] = sorted(set(function.labels.values()))
            leaders.add(i + 1)
        elif base in _TERMINATORS:
            targets[i] = []
            leaders.add(i + 1)
    starts = sorted(x for x in leaders if x < count) or [0]
    block_of = {}
    blocks = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else count
        blocks.append(list(range(start, end)))
        block_of[start] = n
    block_of[count] = None  # falling off the end
    successors = []
    for n, members in enumerate(blocks):
        succ: list[int] = []
        last = members[-1] if members else None
        falls_through = True
        if last is not None and last in targets:
            succ.extend(block_of[t] for t in targets[last] if block_of.get(t) is not None)
            falls_through = instructions[last].predicate is not None
        if falls_through and n + 1 < len(blocks):
            succ.append(n + 1)
        successors.append(sorted(set(succ)))
    return blocks, successors


# ----------------------------------------------------------------------------------------------
# Shared-memory address values (flow-insensitive interval analysis over registers)


@dataclass(frozen=True)
class IntRange:
    lo: int
    hi: int


@dataclass(frozen=True)
class SharedAddress:
    symbol: str
    lo: int
    hi: int | None  # None: unbounded above (widened)

    @property
    def exact(self) -> bool:
        return self.hi is not None


@dataclass(frozen=True)
class MatrixDescriptor:
    """A wgmma/tcgen05 shared-memory matrix descriptor; bits 0-13 hold (address >> 4)."""
    address: SharedAddress


UNKNOWN = "unknown"
_MAX_INT = 1 << 32
_SPECIAL_REGISTERS = {"%tid": IntRange(0, 1023), "%laneid": IntRange(0, 31), "%ntid": IntRange(1, 1024),
                      "%warpid": IntRange(0, 1023)}
_NO_DEST = {"st", "stmatrix", "red", "bra", "brx", "bar", "barrier", "fence", "membar", "cp", "call", "ret", "exit",
            "prefetch", "prefetchu", "trap", "wgmma", "tcgen05"}


def _join(a, b):
    if a is None:
        return b
    if b is None or a == b:
        return a
    if isinstance(a, IntRange) and isinstance(b, IntRange):
        return IntRange(min(a.lo, b.lo), max(a.hi, b.hi))
    if isinstance(a, SharedAddress) and isinstance(b, SharedAddress) and a.symbol == b.symbol:
        hi = None if a.hi is None or b.hi is None else max(a.hi, b.hi)
        return SharedAddress(a.symbol, min(a.lo, b.lo), hi)
    if isinstance(a, MatrixDescriptor) and isinstance(b, MatrixDescriptor):
        joined = _join(a.address, b.address)
        return MatrixDescriptor(joined) if isinstance(joined, SharedAddress) else UNKNOWN
    return UNKNOWN


def _widen(value):
    if isinstance(value, SharedAddress):
        return SharedAddress(value.symbol, 0, None)
    if isinstance(value, MatrixDescriptor):
        return MatrixDescriptor(SharedAddress(value.address.symbol, 0, None))
    return UNKNOWN


def _bounded(lo: int, hi: int):
    return IntRange(lo, hi) if 0 <= lo <= hi < _MAX_INT or (-_MAX_INT < lo <= hi < 0) else UNKNOWN


def _shift_address(addr: SharedAddress, lo: int, hi: int):
    if addr.lo + lo < 0:
        return UNKNOWN
    return SharedAddress(addr.symbol, addr.lo + lo, None if addr.hi is None else addr.hi + hi)


def _add(a, b):
    if isinstance(a, IntRange) and isinstance(b, SharedAddress):
        a, b = b, a
    if isinstance(a, SharedAddress) and isinstance(b, IntRange):
        return _shift_address(a, b.lo, b.hi)
    if isinstance(a, IntRange) and isinstance(b, MatrixDescriptor):
        a, b = b, a
    if isinstance(a, MatrixDescriptor) and isinstance(b, IntRange) and b.lo == b.hi:
        shifted = _shift_address(a.address, (b.lo & 0x3FFF) << 4, (b.lo & 0x3FFF) << 4)
        return MatrixDescriptor(shifted) if isinstance(shifted, SharedAddress) else UNKNOWN
    if isinstance(a, IntRange) and isinstance(b, IntRange):
        return _bounded(a.lo + b.lo, a.hi + b.hi)
    return UNKNOWN


def _bits_cover(value: IntRange) -> int:
    return (1 << max(value.hi, 0).bit_length()) - 1


def _evaluate(instr: PtxInstruction, operand_value) -> object:
    parts = instr.parts
    base = parts[0]
    ops = [operand_value(o) for o in instr.operands[1:]]
    if None in ops:
        return None  # an operand not computed yet (bottom)
    if base in ("mov", "shfl", "mapa", "cvta") or (base == "cvt" and not any(
            p.startswith(("f", "bf", "rn", "rz", "rm", "rp", "e4", "e5", "sat")) for p in parts[1:])):
        return ops[0] if ops else UNKNOWN
    if len(ops) < 2:
        return UNKNOWN
    a, b = ops[0], ops[1]
    if base == "add":
        return _add(a, b)
    if base == "sub":
        if isinstance(b, IntRange):
            return _add(a, IntRange(-b.hi, -b.lo))
        return UNKNOWN
    if base in ("or", "xor"):
        if isinstance(a, IntRange) and isinstance(b, IntRange) and a.lo >= 0 and b.lo >= 0:
            return IntRange(0, max(_bits_cover(a), _bits_cover(b)))
        if isinstance(b, SharedAddress) or isinstance(b, MatrixDescriptor):
            a, b = b, a
        if isinstance(a, MatrixDescriptor) and base == "or" and isinstance(b, IntRange):
            return a  # or-ing layout/stride fields above bit 13
        if isinstance(a, SharedAddress) and isinstance(b, IntRange) and b.lo >= 0:
            low = 0 if base == "or" else -b.hi  # a|b is in [a, a+b]; a^b in [a-b, a+b]
            return _shift_address(a, low, b.hi) if a.lo + low >= 0 else SharedAddress(a.symbol, 0, a.hi and a.hi + b.hi)
        return UNKNOWN
    if base == "and":
        for x, m in ((a, b), (b, a)):
            if isinstance(m, IntRange) and m.lo == m.hi and m.lo >= 0:
                high = min(m.lo, x.hi) if isinstance(x, IntRange) and x.lo >= 0 else m.lo
                return IntRange(0, high)
        return UNKNOWN
    if base in ("shl", "shr") and isinstance(a, IntRange) and isinstance(b, IntRange) and b.lo == b.hi and a.lo >= 0:
        return _bounded(a.lo << b.lo, a.hi << b.lo) if base == "shl" else IntRange(a.lo >> b.lo, a.hi >> b.lo)
    if base == "mul" and isinstance(a, IntRange) and isinstance(b, IntRange) and a.lo >= 0 and b.lo >= 0:
        return _bounded(a.lo * b.lo, a.hi * b.hi)
    if base == "mad" and len(ops) >= 3 and "lo" in parts:
        if isinstance(a, IntRange) and isinstance(b, IntRange) and a.lo >= 0 and b.lo >= 0:
            product = _bounded(a.lo * b.lo, a.hi * b.hi)
            return _add(product, ops[2]) if isinstance(product, IntRange) else UNKNOWN
        return UNKNOWN
    if base == "bfe" and len(ops) >= 3 and isinstance(b, IntRange) and isinstance(ops[2], IntRange):
        if isinstance(a, SharedAddress) and b.lo == 4:
            return MatrixDescriptor(a)
        return IntRange(0, (1 << ops[2].hi) - 1) if ops[2].hi < 32 else UNKNOWN
    if base in ("selp", "min", "max"):
        return _join(a, b)
    return UNKNOWN


def _destinations(instr: PtxInstruction) -> list[str]:
    if not instr.operand_text or instr.parts[0] in _NO_DEST:
        return []
    first = instr.first_operand
    if first.startswith("{"):
        return [r.strip() for r in first.strip("{}").split(",") if r.strip().startswith("%")]
    if first.startswith("%"):
        return [r for r in first.split("|") if r.startswith("%")]
    return []


_REGISTER = re.compile(r"%[A-Za-z_$][\w$]*")
# Instructions whose operands may hold shared-memory addresses or matrix descriptors.
_ADDRESS_USERS = {"st", "ld", "atom", "red", "stmatrix", "ldmatrix", "cp", "wgmma", "tcgen05", "clusterlaunchcontrol"}


def _address_operands(instr: PtxInstruction) -> list[str]:
    """The operands the classifier resolves: memory operands, bulk sizes and matrix descriptors."""
    parts = instr.parts
    base = parts[0]
    if base not in _ADDRESS_USERS:
        return []
    if base in ("st", "ld", "atom", "red") and not any(p.startswith("shared") for p in parts[1:]):
        return []
    if base == "wgmma" or (base == "tcgen05" and len(parts) > 1 and parts[1] in ("mma", "cp")):
        return [o for o in instr.operands[1:3] if not o.startswith(("{", "["))]
    if base == "tcgen05":
        return []
    memory = [o for o in instr.operands if o.startswith("[") and "{" not in o]
    if base == "cp" and "bulk" in parts and "tensor" not in parts:
        memory += instr.operands[2:3]
    return memory


class AddressAnalysis:
    """Values of the registers that shared-memory operands depend on.

    Flow-insensitive: a register's value is the join over all its definitions (NVPTX code is nearly
    SSA; loop-carried registers are redefined by copies), computed to a fixed point with widening. Only
    the backward slice of the address operands is evaluated.
    """

    _WIDEN_AFTER = 4

    def __init__(self, function: PtxFunction, shared_symbols: set[str]):
        self.shared_symbols = shared_symbols
        self.values: dict[str, object] = {}
        definitions: dict[str, list[PtxInstruction]] = {}
        for instr in function.instructions:
            for dest in _destinations(instr):
                definitions.setdefault(dest, []).append(instr)
        # backward slice from the address operands
        needed: set[str] = set()
        stack = [r for instr in function.instructions for o in _address_operands(instr) for r in _REGISTER.findall(o)]
        users: dict[str, list[PtxInstruction]] = {}
        sliced: dict[int, tuple[PtxInstruction, list[str]]] = {}
        while stack:
            register = stack.pop()
            if register in needed:
                continue
            needed.add(register)
            for instr in definitions.get(register, ()):
                if id(instr) in sliced:
                    continue
                dests = _destinations(instr)
                sources = [r for o in instr.operands[1:] for r in _REGISTER.findall(o)]
                sliced[id(instr)] = (instr, dests)
                for source in sources:
                    users.setdefault(source, []).append(instr)
                    stack.append(source)
        changes: dict[str, int] = {}
        for register in needed - definitions.keys():
            self.values[register] = UNKNOWN
        self._fixed = False
        worklist = list(reversed(sliced.values()))  # pop() visits definitions in program order
        while worklist:
            instr, dests = worklist.pop()
            value = _evaluate(instr, self.value) if len(dests) == 1 else UNKNOWN
            for dest in dests:
                old = self.values.get(dest)
                new = _join(old, value)
                if new == old:
                    continue
                changes[dest] = changes.get(dest, 0) + 1
                if changes[dest] > self._WIDEN_AFTER:
                    new = _widen(new)
                if new != old:
                    self.values[dest] = new
                    worklist.extend(sliced[id(user)] for user in users.get(dest, ()))
        self._fixed = True

    def value(self, operand: str):
        known = self.values.get(operand)
        if known is not None:
            return known
        operand = operand.strip()
        if operand.startswith("%"):
            special = _SPECIAL_REGISTERS.get(operand.split(".")[0])
            if special is not None:
                return special
            value = self.values.get(operand)
            return UNKNOWN if value is None and self._fixed else value
        if operand in self.shared_symbols:
            return SharedAddress(operand, 0, 0)
        try:
            number = int(operand, 0)
        except ValueError:
            return UNKNOWN
        return IntRange(number, number)

    def address(self, operand: str):
        """The value of a ``[base+offset]`` memory operand."""
        inner = operand.strip()[1:-1].replace(" ", "")
        match = re.fullmatch(r"([^+\-]+)(?:([+\-])(-?\w+))?", inner)
        if not match:
            return UNKNOWN
        base = self.value(match.group(1))
        if match.group(3) is None:
            return base
        try:
            offset = int(match.group(3), 0) * (-1 if match.group(2) == "-" else 1)
        except ValueError:
            return UNKNOWN
        return _add(base, IntRange(offset, offset))


# ----------------------------------------------------------------------------------------------
# Regions and instruction classes

_OPEN_END_MIN_BYTES = 16  # a TMA box / MMA operand covers at least its first 16 bytes


@dataclass(frozen=True)
class PtxRegion:
    """Bytes [lo, hi) of a shared symbol; ``symbol None`` = unresolved, ``hi None`` = size unknown."""
    symbol: str | None
    lo: int = 0
    hi: int | None = None
    exact: bool = True

    def _certain(self) -> tuple[int, int]:
        return (self.lo, self.hi) if self.hi is not None else (self.lo, self.lo + _OPEN_END_MIN_BYTES)

    def overlap(self, other: "PtxRegion") -> Overlap:
        if self.symbol is None or other.symbol is None:
            return Overlap.UNKNOWN
        if self.symbol != other.symbol:
            return Overlap.NO
        if (self.hi is not None and self.hi <= other.lo) or (other.hi is not None and other.hi <= self.lo):
            return Overlap.NO
        if not (self.exact and other.exact):
            return Overlap.UNKNOWN
        a_lo, a_hi = self._certain()
        b_lo, b_hi = other._certain()
        return Overlap.YES if a_lo < b_hi and b_lo < a_hi else Overlap.UNKNOWN

    def __str__(self) -> str:
        if self.symbol is None:
            return "unresolved shared address"
        end = "?" if self.hi is None else str(self.hi)
        return f"{self.symbol}[{self.lo}, {end})"


_TYPE_BYTES = {"8": 1, "16": 2, "32": 4, "64": 8, "128": 16}


def _access_bytes(parts: list[str]) -> int | None:
    vector = 1
    element = None
    for part in parts:
        if part in ("v2", "v4", "v8"):
            vector = int(part[1:])
        elif part[:1] in "bsuf" and part[1:] in _TYPE_BYTES:
            element = _TYPE_BYTES[part[1:]]
        elif part in ("f16x2", "bf16x2"):
            element = 4
    return None if element is None else element * vector


_STATE_SPACES = ("global", "shared", "shared::cta", "shared::cluster")


class Classifier:
    def __init__(self, analysis: AddressAnalysis):
        self.analysis = analysis

    def region(self, value, size: int | None) -> tuple[PtxRegion, str | None]:
        if isinstance(value, MatrixDescriptor):
            value = value.address
            size = None
        if isinstance(value, SharedAddress):
            if value.hi is None:
                return PtxRegion(value.symbol, value.lo, None, exact=False), "address varies in a loop"
            hi = None if size is None else value.hi + size
            return PtxRegion(value.symbol, value.lo, hi), None
        return PtxRegion(None), "address not derived from a shared-memory symbol"

    def _access(self, kind, instr, value, size=None, scope=Scope.CTA) -> Access:
        region, why = self.region(value, size)
        return Access(kind, region, instr.ref(), scope, why)

    def events(self, instr: PtxInstruction) -> list:
        parts = instr.parts
        base = parts[0]
        if base in ("fence", "membar"):
            return self._fence(instr)
        if base in ("st", "ld", "atom", "red") and any(p.startswith("shared") for p in parts[1:]) or \
                base == "st" and "async" in parts:
            return self._generic(instr, base)
        if base in ("stmatrix", "ldmatrix"):
            kind = AccessKind.GENERIC_WRITE if base == "stmatrix" else AccessKind.GENERIC_READ
            return [self._access(kind, instr, self.analysis.address(instr.operands[0 if base == "stmatrix" else 1]),
                                 16)]
        if base == "cp" and len(parts) > 1 and parts[1] == "async" and len(parts) > 2 and parts[2] in ("ca", "cg"):
            size = self.analysis.value(instr.operands[2]) if len(instr.operands) > 2 else UNKNOWN
            nbytes = size.hi if isinstance(size, IntRange) else 16
            return [self._access(AccessKind.GENERIC_WRITE, instr, self.analysis.address(instr.operands[0]), nbytes)]
        if base == "cp" and "bulk" in parts and "async" in parts and "prefetch" not in parts:
            return self._bulk(instr)
        if base == "wgmma" and len(parts) > 1 and parts[1] == "mma_async":
            return self._mma(instr, first_operand=1)
        if base == "tcgen05" and len(parts) > 1 and parts[1] == "mma":
            return self._mma(instr, first_operand=1)
        if base == "tcgen05" and len(parts) > 1 and parts[1] == "cp" and len(instr.operands) > 1:
            scope = Scope.CLUSTER if "cta_group::2" in parts else Scope.CTA
            return [self._access(AccessKind.ASYNC_READ, instr, self.analysis.value(instr.operands[1]), None, scope)]
        if base == "clusterlaunchcontrol" and "try_cancel" in parts:
            scope = Scope.CLUSTER if any(p.startswith("multicast") for p in parts) else Scope.CTA
            return [self._access(AccessKind.ASYNC_WRITE, instr, self.analysis.address(instr.operands[0]), 16, scope)]
        return []

    def _fence(self, instr: PtxInstruction) -> list:
        op = instr.opcode
        is_proxy_async = op.startswith(("fence.proxy.async", "membar.proxy.async"))
        if not is_proxy_async or op.endswith(".global") or "acquire" in op or instr.predicate:
            return []
        scope = Scope.CTA if op.endswith("shared::cta") else Scope.CLUSTER
        return [Fence(scope, instr.ref())]

    def _generic(self, instr: PtxInstruction, base: str) -> list:
        parts = instr.parts
        size = _access_bytes(parts)
        if base == "ld":
            return [self._access(AccessKind.GENERIC_READ, instr, self.analysis.address(instr.operands[1]), size)]
        if base == "atom":
            address = self.analysis.address(instr.operands[1])
            return [self._access(AccessKind.GENERIC_READ, instr, address, size),
                    self._access(AccessKind.GENERIC_WRITE, instr, address, size)]
        return [self._access(AccessKind.GENERIC_WRITE, instr, self.analysis.address(instr.operands[0]), size)]

    def _bulk(self, instr: PtxInstruction) -> list:
        parts = instr.parts
        spaces = [p for p in parts if p in _STATE_SPACES]
        if len(spaces) < 2 or len(instr.operands) < 2:
            return []
        dst, src = spaces[0], spaces[1]
        size = None
        if "tensor" not in parts and len(instr.operands) > 2:
            value = self.analysis.value(instr.operands[2])
            size = value.hi if isinstance(value, IntRange) else None
        events = []
        if src.startswith("shared"):
            events.append(self._access(AccessKind.ASYNC_READ, instr, self.analysis.address(instr.operands[1]), size))
        if dst.startswith("shared"):
            remote = src.startswith("shared")
            multicast = any(p.startswith("multicast") for p in parts)
            scope = Scope.CLUSTER if multicast or remote else Scope.CTA
            events.append(self._access(AccessKind.ASYNC_WRITE, instr, self.analysis.address(instr.operands[0]), size,
                                       scope))
        return events

    def _mma(self, instr: PtxInstruction, first_operand: int) -> list:
        scope = Scope.CLUSTER if "cta_group::2" in instr.parts else Scope.CTA
        events = []
        for operand in instr.operands[first_operand:first_operand + 2]:
            if operand.startswith(("{", "[")):
                continue  # A in registers (wgmma) or tensor memory (tcgen05)
            events.append(self._access(AccessKind.ASYNC_READ, instr, self.analysis.value(operand), None, scope))
        return events


def function_blocks(function: PtxFunction, shared_symbols: set[str]) -> list[Block]:
    """The function's control-flow graph with proxy events, ready for ``find_hazards``."""
    classifier = Classifier(AddressAnalysis(function, shared_symbols))
    allocation_slots = _tcgen05_alloc_slots(function, classifier)
    instruction_blocks, successors = build_cfg(function)
    blocks = []
    for members, succ in zip(instruction_blocks, successors):
        events = []
        for index in members:
            for event in classifier.events(function.instructions[index]):
                if isinstance(event, Access) and event.kind is AccessKind.GENERIC_READ and \
                        event.region in allocation_slots:
                    continue  # reading the TMEM address tcgen05.alloc wrote is not data traffic
                events.append(event)
        blocks.append(Block(events, succ))
    return blocks


def _tcgen05_alloc_slots(function: PtxFunction, classifier: Classifier) -> set[PtxRegion]:
    slots = set()
    for instr in function.instructions:
        if instr.opcode.startswith("tcgen05.alloc") and instr.operands:
            region, _ = classifier.region(classifier.analysis.address(instr.operands[0]), 4)
            if region.symbol is not None:
                slots.add(region)
    return slots
