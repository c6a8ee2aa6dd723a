"""PTX front end: parse a module, build each kernel's control-flow graph, resolve shared-memory addresses,
and classify instructions into proxy events for ``dataflow.find_hazards``.

PTX is one thread's program. Data instructions under a predicate are taken to execute (may); a fence
under a predicate is taken not to (it might not run in the writing threads), so only unpredicated
fences clear pending accesses; so are the commits, waits and arrives that complete ``cp.async`` copies.

Anything the parser does not understand (a statement form, a directive, a branch it cannot resolve, a
shared-memory instruction it cannot classify) raises ``ParseError`` with the line: the kernel is then
unreadable, never silently clean.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from .dataflow import (Access, AccessKind, BarrierWait, Block, CopyArrive, CopyCommit, CopyWait, Fence, Instruction,
                       Overlap, Scope, WorkBudget)
from .errors import ParseError

# ----------------------------------------------------------------------------------------------
# Parsing


class PtxInstruction:
    """One instruction: ``[@predicate] opcode operands``, its 1-based line and the Python line of its ``.loc``."""

    __slots__ = ("line", "raw", "predicate", "opcode", "operand_text", "source", "scope", "base", "column",
                 "_parts", "_operands", "_statement")

    def __init__(self, line: int, raw: str, predicate: str | None, opcode: str, operand_text: str,
                 source: str | None, scope: int, column: str | None = None):
        self.line = line
        self.raw = raw  # as written, without the ';'
        self.predicate = predicate  # "%p1" or "!%p1"
        self.opcode = opcode
        self.operand_text = operand_text
        self.source = source  # Python file:line from the preceding .loc
        self.scope = scope  # inline-asm brace scope the instruction sits in (0 = function body)
        self.base = opcode.partition(".")[0]
        self.column = column  # the column of the .loc, as text
        self._parts = None
        self._operands = None
        self._statement = None

    @property
    def parts(self) -> list[str]:
        """The opcode split at '.'."""
        if self._parts is None:
            self._parts = self.opcode.split(".")
        return self._parts

    @property
    def statement(self) -> str:
        """The instruction with its whitespace collapsed."""
        if self._statement is None:
            self._statement = " ".join(self.raw.split())
        return self._statement

    @property
    def text(self) -> str:
        return self.statement

    @property
    def operands(self) -> list[str]:
        if self._operands is None:
            self._operands = split_operands(self.operand_text)
        return self._operands

    def operand(self, index: int) -> str:
        """The operand at ``index``; a missing one is a parse error of this line."""
        operands = self.operands
        if index >= len(operands):
            raise _OperandError(f"{self.opcode} needs operand {index + 1}: {self.statement!r}")
        return operands[index]

    def ref(self) -> Instruction:
        return Instruction(self.statement, self.line, self.source)


class _OperandError(Exception):
    """An instruction whose operands do not have the form its opcode needs (turned into ParseError)."""


@dataclass
class PtxFunction:
    name: str
    line: int
    is_entry: bool
    instructions: list[PtxInstruction] = field(default_factory=list)
    # (scope, label) -> index of the instruction that follows the label
    labels: dict[tuple[int, str], int] = field(default_factory=dict)
    # (scope, label) -> the labels of a `.branchtargets` jump table
    tables: dict[tuple[int, str], list[str]] = field(default_factory=dict)
    scope_parents: dict[int, int] = field(default_factory=dict)


@dataclass
class PtxModule:
    functions: list[PtxFunction]  # functions with a body, in file order
    shared_symbols: set[str]
    declared: set[str] = field(default_factory=set)  # functions declared without a body (.extern)
    filename: str = "<ptx>"
    # symbol -> bytes its declaration gives; None for an array without a size (`global_smem[]`: the dynamic
    # shared memory, whose size is the launch's, which Triton records as the kernel's `shared`)
    shared_sizes: dict[str, int | None] = field(default_factory=dict)

    def allocation(self, shared: int | None = None) -> dict[str, int]:
        """Symbol -> bytes allocated, for the symbols whose size is known: declared, or ``shared`` bytes of
        dynamic shared memory for the unsized ones."""
        sizes = {name: shared if size is None else size for name, size in self.shared_sizes.items()}
        return {name: size for name, size in sizes.items() if size is not None}

    @property
    def kernels(self) -> list[PtxFunction]:
        """The roots of the analysis: every .entry, or every function when there is none."""
        entries = [f for f in self.functions if f.is_entry]
        return entries or list(self.functions)


_FILE = re.compile(r'^\.file\s+(\d+)\s+"([^"]*)"')
_LOC = re.compile(r"^\.loc\s+(\d+)\s+(\d+)(?:\s+(\d+))?")
_LABEL = re.compile(r"([A-Za-z_$][\w$.]*):(?!:)")
_PRED = re.compile(r"@!?%?[\w$]+\s+")
# one whole instruction: [@pred] opcode [operands]; with nothing after the ';'
# The patterns run on every line of a kernel's PTX, which a bundle may have tampered with: each
# is linear (no two ways to match the same text). An opcode's parts are words joined by "." or
# "::"; operands start with what is not a space (their trailing spaces are stripped after).
_SIMPLE = re.compile(r"(?:@(!?%?[\w$]+)\s+)?([a-z][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z0-9_]+)*)(?:\s+([^\s;\"][^;\"]*)?)?;$")
_MEMORY_OPERAND = re.compile(r"([^+\-]+)(?:([+\-])(-?\w+))?")
_NAME = re.compile(r"[A-Za-z_$][\w$.]*")
_OPCODE = re.compile(r"[a-z][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z0-9_]+)*$")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_$")


def _shared_symbol(statement: str):
    """The symbol a .shared declaration declares: the name before its array dimensions and
    initializer (`.shared .align 16 .b8 global_smem[];` -> "global_smem"), or None."""
    head = statement.split("=", 1)[0].rstrip().rstrip(";").rstrip()
    while head.endswith("]"):
        start = head.rfind("[")
        if start < 0:
            return None
        head = head[:start].rstrip()
    end = len(head)
    while end and head[end - 1] in _NAME_CHARS:
        end -= 1
    name = head[end:]
    if not name or name[0].isdigit() or (end and head[end - 1] == "."):
        return None
    return name


_DECLARED_TYPE = re.compile(r"\.[bsuf](8|16|32|64)\b")


def _shared_bytes(statement: str) -> int | None:
    """The bytes a .shared declaration allocates (`.shared .align 8 .b64 bar[2];` -> 16), None when an array
    dimension is left empty or the element type is not read."""
    head = statement.split("=", 1)[0].rstrip().rstrip(";").rstrip()
    element = _DECLARED_TYPE.search(head)
    if element is None:
        return None
    count = 1
    while head.endswith("]"):
        start = head.rfind("[")
        dimension = _constant(head[start + 1:-1]) if start >= 0 else None
        if dimension is None:
            return None
        count *= dimension
        head = head[:start].rstrip()
    return count * int(element.group(1)) // 8


_HEADER = re.compile(r"\.(entry|func)\b\s*(?:\([^)]*\)\s*)?([A-Za-z_$][\w$.]*)")
_NEWLINE_DIRECTIVES = (".version", ".target", ".address_size", ".file", ".loc")
# directives that may appear inside a function body (they end with ';')
_BODY_DIRECTIVES = {".reg", ".local", ".shared", ".param", ".pragma", ".const", ".global", ".branchtargets",
                    ".calltargets", ".callprototype", ".align"}
_CONTINUED_DIRECTIVES = (".branchtargets", ".calltargets", ".callprototype")


def _strip_comment(line: str, in_block: bool) -> tuple[str, bool]:
    """Remove // and /* */ comments; returns (text, still inside a block comment)."""
    if in_block:
        end = line.find("*/")
        if end < 0:
            return "", True
        line = line[end + 2:]
    if "/" not in line:
        return line, False
    out = []
    i = 0
    while True:
        found = _COMMENT_OR_QUOTE.search(line, i)  # one scan to the next of them (not one per kind: quadratic)
        if found is None:
            out.append(line[i:])
            return "".join(out), False
        first = found.start()
        out.append(line[i:first])
        if found.group() == '"':
            close = line.find('"', first + 1)
            close = len(line) - 1 if close < 0 else close
            out.append(line[first:close + 1])
            i = close + 1
        elif found.group() == "//":
            return "".join(out), False
        else:
            end = line.find("*/", first + 2)
            if end < 0:
                return "".join(out), True
            out.append(" ")
            i = end + 2


_COMMENT_OR_QUOTE = re.compile(r'//|/\*|"')


def split_operands(text: str) -> list[str]:
    """Split an operand list at top-level commas (not inside [], {} or ())."""
    if "[" not in text and "{" not in text and "(" not in text:
        return [part.strip() for part in text.split(",") if part.strip()]
    operands, start, at = [], 0, 0
    while True:
        found = _DELIMITER.search(text, at)
        if found is None:
            break
        if found.group() == ",":
            operands.append(text[start:found.start()].strip())
            start = at = found.end()
            continue
        close = text.find(_CLOSER[found.group()], found.end())  # PTX does not nest a bracket in itself
        if close < 0:
            break
        at = close + 1
    last = text[start:].strip()
    if last:
        operands.append(last)
    return [o for o in operands if o]


_DELIMITER = re.compile(r"[\[{(,]")
_CLOSER = {"[": "]", "{": "}", "(": ")"}


def _depth(text: str) -> int:
    return text.count("(") + text.count("[") + text.count("{") - text.count(")") - text.count("]") - text.count("}")


class _Parser:
    def __init__(self, text: str, filename: str):
        self.filename = filename
        self.lines = text.splitlines()
        self.files: dict[str, str] = {}
        self.shared_symbols: set[str] = set()
        self.shared_sizes: dict[str, int | None] = {}
        self.declared: set[str] = set()
        self.functions: list[PtxFunction] = []
        self.saw_version = False
        self.sources: dict[tuple[str, str], str | None] = {}  # (.file number, line) -> "file:line"

    def error(self, line: int, reason: str) -> ParseError:
        return ParseError(self.filename, line, reason)

    # -- module level -------------------------------------------------------------------------

    def parse(self) -> PtxModule:
        for raw in self.lines:  # .file directives usually follow the code that uses them
            match = _FILE.match(raw.strip())
            if match:
                self.files[match.group(1)] = match.group(2)
        self.position = 0
        self.in_comment = False
        while True:
            item = self._next_line()
            if item is None:
                break
            number, line = item
            if line.startswith(".section"):
                self._skip_section(number, line)
            elif line.startswith(_NEWLINE_DIRECTIVES):
                self.saw_version |= line.startswith(".version")
            elif line.startswith("."):
                self._module_statement(number, line)
            else:
                raise self.error(number, f"unexpected text outside a function: {line[:80]!r}")
        if not self.functions:  # a header alone is not a kernel checked clean
            raise self.error(len(self.lines) or 1, "no function: not PTX, or cut off before its first .entry"
                             if self.saw_version else "not PTX: no .version directive and no function")
        for function in self.functions:
            self._check_branches(function)
        return PtxModule(self.functions, self.shared_symbols, self.declared, self.filename, self.shared_sizes)

    def _next_line(self) -> tuple[int, str] | None:
        while self.position < len(self.lines):
            raw = self.lines[self.position]
            self.position += 1
            line, self.in_comment = _strip_comment(raw, self.in_comment)
            line = line.strip()
            if line:
                return self.position, line
        return None

    def _skip_section(self, number: int, line: str) -> None:
        """`.section .debug_xxx { ... }`: DWARF data, not code."""
        rest = line[len(".section"):]
        depth = rest.count("{") - rest.count("}")
        if "{" not in rest:
            item = self._next_line()
            if item is None:
                return
            if not item[1].startswith("{"):
                self.position -= 1  # a section without a body
                return
            depth = item[1].count("{") - item[1].count("}")
        lines = self.lines
        while depth > 0:  # DWARF lines: `.b8 17 // DW_TAG_compile_unit`; braces only open and close it
            if self.position >= len(lines):
                raise self.error(number, "unterminated .section")
            raw = lines[self.position]
            self.position += 1
            if "{" in raw or "}" in raw:
                code = raw.split("//", 1)[0]
                depth += code.count("{") - code.count("}")

    def _module_statement(self, number: int, line: str) -> None:
        """A declaration (ends with ';') or a function header (ends with '{' or, declared only, ';')."""
        header = re.search(r"\.(entry|func)\b", line)
        text = line
        if header:
            while True:  # the header ends at '{' or ';' outside the parameter list
                end = self._header_end(text) if "{" in text or ";" in text else None
                if end is not None:
                    break
                item = self._next_line()
                if item is None:
                    raise self.error(number, "unterminated function header")
                text += " " + item[1]
            match = _HEADER.search(text[:end])
            if not match:
                raise self.error(number, f"cannot read function header: {text[:80]!r}")
            name = match.group(2)
            if text[end] == ";":
                self.declared.add(name)
                if text[end + 1:].strip():
                    raise self.error(number, f"unexpected text after a declaration: {text[end + 1:80]!r}")
                return
            function = PtxFunction(name, number, match.group(1) == "entry")
            self._body(function, number, text[end + 1:])
            self.functions.append(function)
            return
        while True:  # a data declaration: up to ';' outside an initializer
            end = self._statement_end(text)
            if end is not None:
                break
            item = self._next_line()
            if item is None:
                raise self.error(number, f"declaration without ';': {line[:80]!r}")
            text += " " + item[1]
        statement = text[:end].strip()
        if ".shared" in statement.split("=")[0]:
            name = _shared_symbol(statement)
            if name:
                self.shared_symbols.add(name)
                self.shared_sizes[name] = _shared_bytes(statement)
        if text[end + 1:].strip():
            raise self.error(number, f"unexpected text after a declaration: {text[end + 1:80]!r}")

    @staticmethod
    def _header_end(text: str) -> int | None:
        depth = 0
        for i, ch in enumerate(text):
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            elif depth == 0 and ch in "{;":
                return i
        return None

    @staticmethod
    def _statement_end(text: str) -> int | None:
        depth, in_string = 0, False
        for i, ch in enumerate(text):
            if ch == '"':
                in_string = not in_string
            elif in_string:
                continue
            elif ch in "{([":
                depth += 1
            elif ch in "})]":
                depth -= 1
            elif ch == ";" and depth <= 0:
                return i
        return None

    # -- function bodies -----------------------------------------------------------------------

    def _body(self, function: PtxFunction, header_line: int, rest: str) -> None:
        scopes = [0]
        next_scope = 1
        source: str | None = None
        column: str | None = None
        pending_labels: list[tuple[int, str]] = []  # (scope, label) waiting for their instruction
        instructions = function.instructions
        lines = self.lines
        number = header_line
        line = rest.strip()
        while True:
            if not line:
                if self.in_comment or self.position >= len(lines):
                    item = self._next_line()
                    if item is None:
                        raise self.error(header_line, f"unterminated function body of {function.name}")
                    number, line = item
                else:  # the common case, inlined: one line, comments stripped
                    raw = lines[self.position]
                    self.position += 1
                    number = self.position
                    if "/" in raw:
                        if '"' in raw or "/*" in raw:
                            raw, self.in_comment = _strip_comment(raw, False)
                        else:
                            raw = raw.split("//", 1)[0]
                    line = raw.strip()
                    if not line:
                        continue
                # fast paths: a .loc, or a whole instruction on its line
                first = line[0]
                if first == "." and line.startswith(".loc"):
                    source, column = self._loc(line, source, column)
                    line = ""
                    continue
                simple = _SIMPLE.match(line) if first == "@" or "a" <= first <= "z" else None
                if simple:
                    for key in pending_labels:
                        function.labels[key] = len(instructions)
                    pending_labels = []
                    predicate, opcode, operands = simple.groups()
                    instructions.append(PtxInstruction(number, line[:-1], predicate, opcode,
                                                       operands.rstrip() if operands else "", source,
                                                       scopes[-1], column))
                    line = ""
                    continue
            ch = line[0]
            if ch == "{":
                function.scope_parents[next_scope] = scopes[-1]
                scopes.append(next_scope)
                next_scope += 1
                line = line[1:].lstrip()
                continue
            if ch == "}":
                scopes.pop()
                line = line[1:].lstrip()
                if not scopes:
                    for key in pending_labels:
                        function.labels[key] = len(instructions)
                    if line:
                        raise self.error(number, f"unexpected text after a function body: {line[:80]!r}")
                    return
                continue
            label = _LABEL.match(line)
            if label:
                pending_labels.append((scopes[-1], label.group(1)))
                line = line[label.end():].lstrip()
                continue
            if line.startswith(".loc"):
                source, column = self._loc(line, source, column)
                line = ""
                continue
            # a statement: up to ';', continued over lines only where PTX allows it
            start = number
            text = line
            end = text.find(";")
            if end < 0:  # each line is read once: a jump table of thousands of lines stays linear
                parts, depth, continued = [text], _depth(text), text.startswith(_CONTINUED_DIRECTIVES)
                while True:
                    if not (depth > 0 or parts[-1].endswith((",", "(")) or continued):
                        raise self.error(start, f"statement without ';': {' '.join(parts)[:80]!r}")
                    item = self._next_line()
                    if item is None:
                        raise self.error(start, f"statement without ';': {' '.join(parts)[:80]!r}")
                    number, last = item
                    parts.append(last)
                    end = last.find(";")
                    if end >= 0:
                        break
                    depth += _depth(last)
                text = " ".join(parts)
                end += len(text) - len(last)
            statement, line = " ".join(text[:end].split()), text[end + 1:].lstrip()
            if not statement:
                continue  # an empty statement
            scope = scopes[-1]
            if statement.startswith("."):
                directive = statement.split(None, 1)[0]
                if directive not in _BODY_DIRECTIVES:
                    raise self.error(start, f"directive not understood in a function body: {statement[:80]!r}")
                if directive == ".branchtargets":
                    targets = [t.strip() for t in statement[len(directive):].split(",")]
                    if not pending_labels or not all(re.fullmatch(r"[A-Za-z_$][\w$.]*", t) for t in targets):
                        raise self.error(start, f"cannot read jump table: {statement[:80]!r}")
                    function.tables[pending_labels.pop()] = targets  # the label on the directive names it
                elif directive in (".calltargets", ".callprototype"):
                    pending_labels = []  # named by indirect calls, which are refused where they occur
                elif directive == ".shared":
                    name = _shared_symbol(statement)
                    if name:
                        self.shared_symbols.add(name)
                        self.shared_sizes[name] = _shared_bytes(statement)
                continue
            instruction = self._instruction(statement, start, source, scope, column)
            for key in pending_labels:
                function.labels[key] = len(instructions)
            pending_labels = []
            instructions.append(instruction)

    def _loc(self, line: str, source: str | None, column: str | None) -> tuple[str | None, str | None]:
        """(Python file:line, column) after a ``.loc file line column`` directive."""
        loc = _LOC.match(line)
        if not loc:
            return source, column
        key = (loc.group(1), loc.group(2))
        source = self.sources.get(key, "")
        if source == "":
            path = self.files.get(key[0])
            source = self.sources[key] = f"{path}:{key[1]}" if path and key[1] != "0" else None
        return source, loc.group(3)

    def _instruction(self, statement: str, line: int, source: str | None, scope: int,
                     column: str | None = None) -> PtxInstruction:
        predicate = None
        body = statement
        if statement.startswith("@"):
            pred = _PRED.match(statement)
            if not pred:
                raise self.error(line, f"cannot read predicate: {statement[:80]!r}")
            predicate = statement[1:pred.end()].strip()
            body = statement[pred.end():]
        split = body.split(None, 1)
        opcode = split[0] if split else ""
        if not _OPCODE.match(opcode):
            raise self.error(line, f"statement not understood: {statement[:80]!r}")
        return PtxInstruction(line, statement, predicate, opcode, split[1].strip() if len(split) > 1 else "",
                              source, scope, column)

    def _check_branches(self, function: PtxFunction) -> None:
        """Every branch must name a label (or jump table) of the function, every call a known function."""
        defined = {f.name for f in self.functions} | self.declared
        for instr in function.instructions:
            base = instr.base
            try:
                if base == "bra":
                    if _resolve(function.labels, function, instr.scope, instr.operand(0)) is None:
                        raise self.error(instr.line, f"branch to an unknown label: {instr.statement!r}")
                elif base == "brx":
                    table = _resolve(function.tables, function, instr.scope, instr.operand(1))
                    if table is None:
                        raise self.error(instr.line, f"brx.idx without a .branchtargets table: {instr.statement!r}")
                    for target in table:
                        if _resolve(function.labels, function, instr.scope, target) is None:
                            raise self.error(instr.line, f"jump table names an unknown label {target!r}")
                elif base == "call":
                    callee = _call_target(instr)
                    if callee is None or callee not in defined:
                        raise self.error(instr.line, f"call the checker cannot follow: {instr.statement!r}")
            except _OperandError as error:
                raise self.error(instr.line, str(error)) from None


def parse_ptx(text: str, filename: str = "<ptx>") -> PtxModule:
    return _Parser(text, filename).parse()


def _resolve(table: dict, function: PtxFunction, scope: int, name: str):
    """Look a label up in the inline-asm scope and then in its enclosing scopes."""
    while True:
        found = table.get((scope, name))
        if found is not None:
            return found
        if scope == 0:
            return None
        scope = function.scope_parents[scope]


def _call_target(instr: PtxInstruction) -> str | None:
    """The callee of ``call[.uni] (ret), name, (args)``; None for an indirect call."""
    for operand in instr.operands:
        if operand.startswith("("):
            continue
        return operand if _NAME.fullmatch(operand) else None
    return None


# ----------------------------------------------------------------------------------------------
# Control-flow graph

_TERMINATORS = ("ret", "exit", "trap")


def build_cfg(function: PtxFunction) -> tuple[list[list[int]], list[list[int]]]:
    """Return (blocks as lists of instruction indices, successor block numbers per block).

    A ``call`` ends its block (its successor is the next block): ``kernel_blocks`` splices the callee in.
    """
    instructions = function.instructions
    count = len(instructions)
    targets: dict[int, list[int]] = {}
    leaders = {0} | set(function.labels.values())
    for i, instr in enumerate(instructions):
        base = instr.base
        if base == "bra":
            targets[i] = [_resolve(function.labels, function, instr.scope, instr.operands[0])]
            leaders.add(i + 1)
        elif base == "brx":
            table = _resolve(function.tables, function, instr.scope, instr.operands[1])
            targets[i] = [_resolve(function.labels, function, instr.scope, t) for t in table]
            leaders.add(i + 1)
        elif base in _TERMINATORS:
            targets[i] = []
            leaders.add(i + 1)
        elif base == "call":
            leaders.add(i + 1)
    starts = sorted(x for x in leaders if x < count) or [0]
    block_of = {}
    blocks = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else count
        blocks.append(list(range(start, end)))
        block_of[start] = n
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
# Abstract values of registers


@dataclass(frozen=True)
class IntRange:
    """An integer in [lo, hi], a multiple of 2**tz (``tz``: its known trailing zero bits).

    ``exact``: [lo, hi] is what the values cover over threads and loop iterations (the thread index, a stage
    counter and their sums and multiples: every value in between is taken, or a multiple of the step); False
    where it is only a bound that bitwise operations, remainders or bit-field extracts give (``xor`` of two
    thread-dependent values is below the next power of two, nothing says every value below it occurs), so
    only what *every* value in the range implies may be counted as certain (``Classifier.region``)."""
    lo: int
    hi: int
    tz: int = 0
    exact: bool = True


@dataclass(frozen=True)
class SharedAddress:
    """A pointer into ``symbol``: its byte offset lies in [lo, hi] (over threads and loop iterations);
    ``exact`` as for ``IntRange``."""
    symbol: str
    lo: int
    hi: int | None  # None: unbounded above (widened)
    exact: bool = True


@dataclass(frozen=True)
class MatrixDescriptor:
    """A value whose low 14 bits hold ``address >> 4``: a wgmma/tcgen05 shared-memory matrix descriptor
    (or the start of one), however it was computed (``bfe``, ``shr`` + ``and``, ``or`` of layout bits).

    ``address`` is the operand's base, the address the descriptor was made from; ``step`` the bytes added to the
    descriptor since (a k-step, a warp's rows): the instruction starts inside its operand, at base + step."""
    address: SharedAddress
    step: IntRange = IntRange(0, 0)


@dataclass(frozen=True)
class Unknown:
    """A value the analysis does not follow; ``origin`` says where it comes from."""
    origin: str


_LIMIT = 1 << 64
_SPECIAL_REGISTERS = {"%tid": IntRange(0, 1023, 0, False), "%laneid": IntRange(0, 31),
                      "%ntid": IntRange(1, 1024, 0, False), "%warpid": IntRange(0, 1023, 0, False),
                      "%nwarpid": IntRange(1, 1024, 0, False)}
_RUNTIME_REGISTERS = {"%ctaid", "%nctaid", "%clusterid", "%nclusterid", "%cluster_ctaid", "%cluster_nctaid",
                      "%cluster_ctarank", "%cluster_nctarank", "%smid", "%nsmid", "%gridid", "%clock", "%clock64",
                      "%globaltimer", "%dynamic_smem_size", "%total_smem_size", "%aggr_smem_size", "%lanemask_eq",
                      "%lanemask_lt", "%lanemask_le", "%lanemask_gt", "%lanemask_ge", "%is_explicit_cluster"}
# instructions whose first operand, when it is a register, is read, not written
_NO_DEST = {"st", "stmatrix", "red", "bra", "brx", "bar", "barrier", "fence", "membar", "cp", "call", "ret", "exit",
            "prefetch", "prefetchu", "trap", "tensormap", "griddepcontrol", "pmevent", "nanosleep", "setmaxnreg"}
_FLOAT_PARTS = ("f", "bf", "e2", "e3", "e4", "e5", "ue8", "tf32", "rn", "rz", "rm", "rp", "sat", "relu")


def _unknown(instr: PtxInstruction) -> Unknown:
    return Unknown(instr.statement if len(instr.statement) <= 100 else instr.statement[:97] + "...")


def _join(a, b):
    if a is None:
        return b
    if b is None or a == b:
        return a
    if isinstance(a, IntRange) and isinstance(b, IntRange):
        return IntRange(min(a.lo, b.lo), max(a.hi, b.hi), min(_tz(a), _tz(b)), a.exact and b.exact)
    if isinstance(a, SharedAddress) and isinstance(b, SharedAddress) and a.symbol == b.symbol:
        hi = None if a.hi is None or b.hi is None else max(a.hi, b.hi)
        return SharedAddress(a.symbol, min(a.lo, b.lo), hi, a.exact and b.exact)
    if isinstance(a, MatrixDescriptor) and isinstance(b, MatrixDescriptor):
        joined = _join(a.address, b.address)
        return MatrixDescriptor(joined, _join(a.step, b.step)) if isinstance(joined, SharedAddress) else joined
    if isinstance(a, Unknown):
        return a
    if isinstance(b, Unknown):
        return b
    return Unknown(f"values of different kinds meet ({_describe(a)} and {_describe(b)})")


def _describe(value) -> str:
    if isinstance(value, IntRange):
        return "an integer"
    if isinstance(value, SharedAddress):
        return f"an address in {value.symbol}"
    if isinstance(value, MatrixDescriptor):
        return "a matrix descriptor"
    return "an unknown value"


def _widen(old, new):
    """Widening: a bound that keeps moving goes to its limit."""
    if isinstance(new, IntRange) and isinstance(old, IntRange):
        return IntRange(-_LIMIT if new.lo < old.lo else new.lo, _LIMIT if new.hi > old.hi else new.hi, 0, new.exact)
    if isinstance(new, SharedAddress):
        return SharedAddress(new.symbol, min(new.lo, 0), None, new.exact)
    if isinstance(new, MatrixDescriptor):
        return MatrixDescriptor(SharedAddress(new.address.symbol, min(new.address.lo, 0), None))  # step: anywhere
    return new


def _range(lo: int, hi: int, tz: int = 0, exact: bool = True):
    """[lo, hi] of multiples of 2**tz (the bounds moved in to such multiples)."""
    tz = min(tz, 64)
    if tz:
        unit = 1 << tz
        lo, hi = -(-lo // unit) * unit, hi // unit * unit
        if lo > hi:
            return Unknown("an integer out of range")
    return IntRange(lo, hi, tz, exact) if -_LIMIT <= lo <= hi <= _LIMIT else Unknown("an integer out of range")


def _tz(value: IntRange) -> int:
    """The known trailing zero bits of an integer range (a constant knows all of its own)."""
    if value.lo == value.hi:
        return 64 if value.lo == 0 else min((value.lo & -value.lo).bit_length() - 1, 64)
    return value.tz


def _shift_address(addr: SharedAddress, lo: int, hi: int, exact: bool = True) -> SharedAddress:
    return SharedAddress(addr.symbol, addr.lo + lo, None if addr.hi is None else addr.hi + hi, addr.exact and exact)


def _add(a, b):
    if isinstance(a, IntRange) and not isinstance(b, IntRange):
        a, b = b, a
    if isinstance(a, Unknown):
        return a
    if not isinstance(b, IntRange):
        return b if isinstance(b, Unknown) else Unknown("a sum of two addresses")
    if isinstance(a, IntRange):
        return _range(a.lo + b.lo, a.hi + b.hi, min(_tz(a), _tz(b)), a.exact and b.exact)
    if isinstance(a, SharedAddress):
        return _shift_address(a, b.lo, b.hi, b.exact)
    # a matrix descriptor: the low 14 bits step through the operand in units of 16 bytes
    if b.lo == b.hi:
        units = b.lo & 0x3FFF
        return MatrixDescriptor(a.address, IntRange(a.step.lo + (units << 4), a.step.hi + (units << 4)))
    if 0 <= b.lo and b.hi < 0x4000:
        return MatrixDescriptor(a.address, IntRange(a.step.lo + (b.lo << 4), a.step.hi + (b.hi << 4), 0,
                                                    a.step.exact and b.exact))
    return Unknown("a matrix descriptor plus a wide range")


def _bits_cover(value: IntRange) -> int:
    return (1 << max(value.hi, 0).bit_length()) - 1


def _bitwise(a: IntRange, b: IntRange):
    """``a | b`` or ``a ^ b`` of two non-negative ranges: below the next power of two of the larger, and a
    multiple of what both are multiples of. Only a bound: not every value below it occurs."""
    return _range(0, max(_bits_cover(a), _bits_cover(b)), min(_tz(a), _tz(b)), False)


_COMPARISONS = {"lt", "le", "gt", "ge", "eq", "ne", "lo", "ls", "hi", "hs"}
_SWAPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne", "lo": "hi", "ls": "hs",
            "hi": "lo", "hs": "ls"}
_NEGATED = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq", "lo": "hs", "ls": "hi",
            "hi": "ls", "hs": "lo"}


def _refine(value, comparison: str, bound: int):
    """``value`` restricted to the values v with ``v <comparison> bound``."""
    if not isinstance(value, IntRange):
        return value
    lo, hi = value.lo, value.hi
    if comparison in ("lt", "lo"):
        hi = min(hi, bound - 1)
    elif comparison in ("le", "ls"):
        hi = min(hi, bound)
    elif comparison in ("gt", "hi"):
        lo = max(lo, bound + 1)
    elif comparison in ("ge", "hs"):
        lo = max(lo, bound)
    elif comparison == "eq":
        lo, hi = max(lo, bound), min(hi, bound)
    elif comparison == "ne":
        if bound == hi:
            hi -= 1
        if bound == lo:
            lo += 1
    if lo > hi:
        return None  # this side of the select never happens
    narrowed = _range(lo, hi, value.tz, value.exact)
    return narrowed if isinstance(narrowed, IntRange) else None


def _evaluate(instr: PtxInstruction, ops: list, refined) -> object:
    """The value an instruction computes from its source values (``ops``, operands 1..n)."""
    parts = instr.parts
    base = instr.base
    if base in ("mov", "cvta", "shfl", "mapa") or (base == "cvt" and not any(p.startswith(_FLOAT_PARTS)
                                                                             for p in parts[1:])):
        return ops[0] if ops else _unknown(instr)  # shfl: the value of another lane, same range
    if base == "selp" and len(ops) >= 2:
        first, second = refined or (ops[0], ops[1])
        if first is None:
            return second
        if second is None:
            return first
        return _join(first, second)
    if len(ops) < 2:
        return _unknown(instr)
    a, b = ops[0], ops[1]
    if base == "add":
        return _add(a, b)
    if base == "sub":
        if isinstance(b, IntRange):
            return _add(a, IntRange(-b.hi, -b.lo, _tz(b), b.exact))
        if isinstance(a, SharedAddress) and isinstance(b, SharedAddress) and a.symbol == b.symbol and \
                a.hi is not None and b.hi is not None:
            return IntRange(a.lo - b.hi, a.hi - b.lo, 0, a.exact and b.exact)
        return _first_unknown(a, b) or _unknown(instr)
    if base in ("or", "xor"):
        if isinstance(a, IntRange) and isinstance(b, IntRange):
            if a.lo == a.hi and b.lo == b.hi:
                return IntRange(a.lo | b.lo, a.lo | b.lo) if base == "or" else IntRange(a.lo ^ b.lo, a.lo ^ b.lo)
            if a.lo >= 0 and b.lo >= 0:
                return _bitwise(a, b)
            return _unknown(instr)
        if isinstance(b, (SharedAddress, MatrixDescriptor)):
            a, b = b, a
        if isinstance(a, MatrixDescriptor) and base == "or" and isinstance(b, IntRange):
            if b.lo == b.hi and b.lo & 0x3FFF == 0:
                return a  # layout, stride and swizzle fields above bit 13
            return _unknown(instr)
        if isinstance(a, SharedAddress) and isinstance(b, IntRange) and b.lo >= 0:
            low = 0 if base == "or" else -b.hi  # a|b is in [a, a+b]; a^b in [a-b, a+b]
            return _shift_address(a, low, b.hi, False)
        return _first_unknown(a, b) or _unknown(instr)
    if base == "and":
        return _and(a, b, instr)
    if base == "shl" and isinstance(b, IntRange) and b.lo == b.hi and 0 <= b.lo < 64:
        if isinstance(a, IntRange):
            return _range(a.lo * (1 << b.lo), a.hi * (1 << b.lo), _tz(a) + b.lo, a.exact)
        return _first_unknown(a) or _unknown(instr)
    if base == "shr" and isinstance(b, IntRange) and b.lo == b.hi and 0 <= b.lo < 64:
        if isinstance(a, SharedAddress) and b.lo == 4:
            return MatrixDescriptor(a)  # (address >> 4): the start-address field of a matrix descriptor
        if isinstance(a, IntRange) and (a.lo >= 0 or "s32" in parts or "s64" in parts):
            return IntRange(a.lo >> b.lo, a.hi >> b.lo, max(_tz(a) - b.lo, 0), a.exact)
        return _first_unknown(a) or _unknown(instr)
    if base == "mul" and "hi" not in parts and isinstance(a, IntRange) and isinstance(b, IntRange):
        return _product(a, b)
    if base == "mad" and len(ops) >= 3 and "hi" not in parts:
        if isinstance(a, IntRange) and isinstance(b, IntRange):
            product = _product(a, b)
            return _add(ops[2], product) if isinstance(product, IntRange) else product
        return _first_unknown(a, b) or _unknown(instr)
    if base in ("rem", "div") and isinstance(a, IntRange) and isinstance(b, IntRange) and b.lo == b.hi and b.lo > 0:
        if base == "rem":
            if 0 <= a.lo and a.hi < b.lo:
                return a
            return IntRange(0, min(b.lo - 1, a.hi), 0, False) if a.lo >= 0 else IntRange(-(b.lo - 1), b.lo - 1, 0,
                                                                                          False)
        return IntRange(a.lo // b.lo, a.hi // b.lo, 0, a.exact) if a.lo >= 0 else _unknown(instr)
    if base == "bfe" and len(ops) >= 3 and isinstance(b, IntRange) and isinstance(ops[2], IntRange):
        if isinstance(a, SharedAddress) and b.lo == b.hi == 4:
            return MatrixDescriptor(a)
        if "u32" in parts or "u64" in parts:
            return IntRange(0, (1 << ops[2].hi) - 1, 0, False) if 0 <= ops[2].hi < 64 else _unknown(instr)
        return _unknown(instr)
    if base in ("min", "max") and isinstance(a, IntRange) and isinstance(b, IntRange):
        pick = min if base == "min" else max
        return IntRange(pick(a.lo, b.lo), pick(a.hi, b.hi), min(_tz(a), _tz(b)), a.exact and b.exact)
    return _first_unknown(a, b) or _unknown(instr)


def _product(a: IntRange, b: IntRange):
    """``a * b``: a multiple of a constant keeps exactness (the stages of a ring); a product of two ranges is a
    bound."""
    products = (a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)
    exact = a.exact and b.exact and (a.lo == a.hi or b.lo == b.hi)
    return _range(min(products), max(products), _tz(a) + _tz(b), exact)


def _and(a, b, instr: PtxInstruction):
    """``a & mask``: a mask of the address field keeps a descriptor, an alignment mask (all bits but the
    low k) keeps an address (moved down by less than 2^k), a small mask gives a bounded integer."""
    x, m = (a, b) if isinstance(b, IntRange) and b.lo == b.hi else (b, a)
    if not (isinstance(m, IntRange) and m.lo == m.hi):
        return _first_unknown(a, b) or _unknown(instr)
    mask = m.lo
    width = 64 if "b64" in instr.parts else 32
    low = ~mask & ((1 << width) - 1)  # the bits the mask clears
    alignment = low if low < (1 << 16) and low & (low + 1) == 0 else None  # mask = ...11110000
    if isinstance(x, MatrixDescriptor):
        return x if mask & 0x3FFF == 0x3FFF else _unknown(instr)
    if isinstance(x, SharedAddress):
        return _shift_address(x, -alignment, 0, False) if alignment is not None else _unknown(instr)
    mask_tz = _tz(IntRange(mask, mask))
    if isinstance(x, IntRange):
        if x.lo == x.hi:
            return IntRange(x.lo & mask, x.lo & mask)
        tz = max(_tz(x), mask_tz)  # x & mask is a multiple of what either is a multiple of
        if x.lo >= 0 and alignment is not None:
            if _tz(x) >= alignment.bit_length():
                return x  # already aligned: the mask changes nothing
            return _range(max(x.lo - alignment, 0), x.hi, tz, False)
        if 0 <= mask < (1 << width):
            if x.lo >= 0 and x.hi <= mask and mask & (mask + 1) == 0:
                return x  # a mask of low bits above every value changes nothing
            return _range(0, min(mask, x.hi) if x.lo >= 0 else mask, tz, False)
        return _unknown(instr)
    if 0 <= mask < (1 << 32):
        return IntRange(0, mask, mask_tz, False)  # whatever x is, the result is a small integer
    return x


def _packed(ops: list):
    """``mov.b64 %rd, {%lo, %hi}``: a descriptor whose low word holds the address field."""
    low = ops[0] if ops else None
    return low if isinstance(low, MatrixDescriptor) else Unknown("a packed value")


def _first_unknown(*values):
    for value in values:
        if isinstance(value, Unknown):
            return value
    return None


def _destinations(instr: PtxInstruction) -> list[str]:
    text = instr.operand_text
    if not text or instr.base in _NO_DEST:
        return []
    first = text[0]
    if first == "%":
        if instr.base == "tcgen05" and instr.parts[1] != "ld":
            return []
        dest = text.partition(",")[0].rstrip()
        return [r for r in dest.split("|") if r.startswith("%")] if "|" in dest else [dest]
    if first == "{" and not (instr.base == "tcgen05" and instr.parts[1] != "ld"):
        close = text.find("}")
        return [r.strip() for r in text[1:close].split(",") if r.strip().startswith("%")]
    return []


_REGISTER = re.compile(r"%[A-Za-z_$][\w$]*")


def _completes_copies(instr: PtxInstruction) -> bool:
    """An mbarrier wait that completes the copies the mbarrier tracks (``dataflow``'s rules): an unpredicated
    ``try_wait``, which Triton retries until it succeeds (a ``test_wait``'s answer may be no)."""
    return instr.base == "mbarrier" and instr.parts[1:2] == ["try_wait"] and not instr.predicate


def _address_operands(instr: PtxInstruction) -> list[str]:
    """The operands the classifier resolves: shared-memory operands, bulk sizes, matrix descriptors and
    the barriers of TMA loads, ``expect_tx`` and waits (global addresses are left alone)."""
    parts = instr.parts
    base = instr.base
    if base in ("st", "ld", "atom", "red"):
        if not any(p.startswith("shared") for p in parts[1:]) and not (base == "st" and "async" in parts):
            return []
        return [o for o in instr.operands if o.startswith("[")]
    if base == "wgmma" or (base == "tcgen05" and len(parts) > 1 and parts[1] in ("mma", "cp")):
        return [o for o in instr.operands[1:3] if not o.startswith(("{", "["))]
    if base in ("stmatrix", "ldmatrix"):
        return [o for o in instr.operands if o.startswith("[")]
    if base == "cp":
        if "bulk" not in parts:
            return instr.operands[:1]  # cp.async.ca/cg [shared], [global], size
        spaces = [p for p in parts if p in _STATE_SPACES]
        if len(spaces) < 2:
            return []
        operands = instr.operands
        chosen = [operands[i] for i, space in ((0, spaces[0]), (1, spaces[1]))
                  if i < len(operands) and space.startswith("shared") and "{" not in operands[i]]
        if "tensor" not in parts:
            chosen += operands[2:3]
        return chosen + [o for o in operands[2:] if o.startswith("[")]
    if base == "mbarrier":  # the barrier of expect_tx (TMA load bounds) and of waits (cp.async completion)
        wanted = "expect_tx" in parts or _completes_copies(instr)
        return [o for o in instr.operands if o.startswith("[")][:1] if wanted else []
    if base == "tensormap":
        return instr.operands[1:2] if "cp_fenceproxy" in parts else []
    if base == "tcgen05":
        return instr.operands[:1] if parts[1:2] == ["alloc"] else []
    if base == "clusterlaunchcontrol":
        return instr.operands[:1]
    return []


class AddressAnalysis:
    """Values of the registers that shared-memory operands depend on.

    NVPTX code is nearly SSA: a register with several definitions is a loop-carried value lowered to
    copies. A use that follows a definition of its register in the same basic block sees that definition;
    any other use sees the join of all the register's definitions. Values are computed to a fixed point
    (with widening) over the backward slice of the address operands only. ``selp`` whose predicate compares
    one of its inputs with a constant (``setp.gt %p, %x, 2; selp %y, 0, %x, %p``: a stage counter that wraps)
    restricts that input to the side of the comparison it is chosen on.
    """

    _WIDEN_AFTER = 6
    _VALUE_STEPS = 32  # budget steps per value computed: about what 32 pending accesses cost the dataflow analysis

    def __init__(self, function: PtxFunction, shared_symbols: set[str], blocks: list[list[int]] | None = None,
                 roots: list[tuple[int, str]] | None = None, budget: WorkBudget | None = None):
        """``roots``: the (instruction index, operand) pairs to resolve; by default every address operand.
        ``budget``: the check's work budget (``_VALUE_STEPS`` per value computed); past it, ``WorkBudgetExceeded``."""
        self.budget = WorkBudget() if budget is None else budget
        self.function = function
        self.shared_symbols = shared_symbols
        instructions = function.instructions
        if blocks is None:
            blocks, _ = build_cfg(function)
        self.block_of: list[int] = []  # blocks are consecutive runs of instructions
        for n, members in enumerate(blocks):
            self.block_of.extend([n] * len(members))
        self.defs: dict[str, list[int]] = {}  # register -> indices of its definitions, ascending
        self.dests: dict[int, list[str]] = {}
        defs, dest_of = self.defs, self.dests
        for index, instr in enumerate(instructions):
            text = instr.operand_text
            if not text or instr.base in _NO_DEST:
                continue
            if text[0] == "%" and instr.base != "tcgen05" and "|" not in text:  # the common case, inlined
                dest = text.partition(",")[0].rstrip()
                dest_of[index] = [dest]
                found = defs.get(dest)
                if found is None:
                    defs[dest] = [index]
                else:
                    found.append(index)
                continue
            dests = _destinations(instr)
            if dests:
                dest_of[index] = dests
                for dest in dests:
                    defs.setdefault(dest, []).append(index)
        self.values: dict[tuple, object] = {}  # (index, register) or ("all", register) -> value
        self._forms: dict[int, tuple | None] = {}  # instruction index -> its linear form (see _linear)
        self._source_cache: dict[tuple, tuple] = {}
        self._witnesses: dict[int, object] = {}
        if roots is None:
            roots = [(index, operand) for index, instr in enumerate(instructions)
                     for operand in _address_operands(instr)]
        self._solve(roots)

    # -- sources of a use ------------------------------------------------------------------------

    def _sources(self, index: int, register: str) -> tuple:
        """The definitions a use of ``register`` at instruction ``index`` may see."""
        cached = self._source_cache.get((index, register))
        if cached is not None:
            return cached
        defs = self.defs.get(register)
        keys = []
        if defs:
            position = bisect.bisect_left(defs, index) - 1
            block = self.block_of[index]
            while position >= 0 and self.block_of[defs[position]] == block:
                definition = defs[position]
                keys.append((definition, register))
                if self.function.instructions[definition].predicate is None:
                    break
                position -= 1  # a predicated definition may not happen: the one before it may reach
            else:
                keys.append(("all", register))
        result = tuple(keys)
        self._source_cache[(index, register)] = result
        return result

    def _input(self, index: int, operand: str):
        """How instruction ``index`` reads ``operand``: ("keys", definitions) or ("value", constant value)."""
        operand = operand.strip()
        if operand.startswith("%"):
            special = _SPECIAL_REGISTERS.get(operand.split(".")[0])
            if special is not None:
                return "value", special
            keys = self._sources(index, operand)
            if keys:
                return "keys", keys
            if "." in operand or operand.split(".")[0] in _RUNTIME_REGISTERS:
                return "value", Unknown(f"the special register {operand}, a run-time value")
            return "value", Unknown(f"{operand}, which is never defined")
        if operand.startswith("{"):  # mov.b64 %rd, {%lo, %hi}: the low word decides
            inner = split_operands(operand[1:-1])
            kind, payload = self._input(index, inner[0]) if inner else ("value", Unknown("an empty vector"))
            return ("packed", payload) if kind == "keys" else ("value", _packed([payload]))
        if operand in self.shared_symbols:
            return "value", SharedAddress(operand, 0, 0)
        number = _constant(operand)
        if number is not None:
            return "value", IntRange(number, number)
        return "value", Unknown(f"the operand {operand[:40]}")

    def _read(self, read):
        kind, payload = read
        if kind == "value":
            return payload
        value = None
        for key in payload:
            found = self.values.get(key)
            if found is None:
                return None
            value = _join(value, found)
        return _packed([value]) if kind == "packed" else value

    def _solve(self, roots: list[tuple[int, str]]) -> None:
        instructions = self.function.instructions
        dependents: dict[tuple, list] = {}
        inputs: dict[int, list] = {}  # instruction index -> how it reads operands 1..n
        stack = [key for index, operand in roots for register in _REGISTER.findall(operand)
                 if register.split(".")[0] not in _SPECIAL_REGISTERS for key in self._sources(index, register)]
        nodes: set[tuple] = set()
        while stack:
            key = stack.pop()
            if key in nodes:
                continue
            nodes.add(key)
            if key[0] == "all":
                for definition in self.defs[key[1]]:
                    source = (definition, key[1])
                    dependents.setdefault(source, []).append(key)
                    stack.append(source)
                continue
            index = key[0]
            if index not in inputs:
                reads = [self._input(index, o) for o in instructions[index].operands[1:]]
                inputs[index] = reads
            sources = [source for kind, payload in inputs[index] if kind != "value" for source in payload]
            form = self._linear(index)
            if form is not None:
                sources += [source for keys in form[0] if isinstance(keys, tuple) for source in keys]
            for source in sources:
                dependents.setdefault(source, []).append(key)
                stack.append(source)
        changes: dict[tuple, int] = {}
        worklist = sorted(nodes, key=lambda k: -1 if k[0] == "all" else k[0], reverse=True)
        queued = set(worklist)
        # an ("all", register) node joins its definitions' values; values only grow, so after its first
        # evaluation it joins only the definitions that changed since (not all of them again: a register
        # defined N times would cost N joins per change, N * N in all)
        changed: dict[tuple, dict | None] = {key: None for key in nodes if key[0] == "all"}
        steps, weight = len(nodes), self._VALUE_STEPS
        while worklist:
            key = worklist.pop()
            queued.discard(key)
            steps += weight
            if steps >= 65536:
                self.budget.spend(steps)
                steps = 0
            if key[0] == "all":
                sources = changed[key]
                changed[key] = {}
                new = self.values.get(key)
                for definition in (self.defs[key[1]] if sources is None else sources):
                    new = _join(new, self.values.get((definition, key[1])))
            else:
                new = self._evaluate_definition(key, inputs[key[0]])
            old = self.values.get(key)
            if new is None or new == old:
                continue
            joined = _join(old, new) if old is not None else new
            changes[key] = changes.get(key, 0) + 1
            if changes[key] > self._WIDEN_AFTER:
                joined = _widen(old, joined)
            if joined == old:
                continue
            self.values[key] = joined
            for dependent in dependents.get(key, ()):
                if dependent[0] == "all" and changed[dependent] is not None:
                    changed[dependent][key[0]] = None
                if dependent not in queued:
                    queued.add(dependent)
                    worklist.append(dependent)
        self.budget.spend(steps)

    def _evaluate_definition(self, key: tuple, reads: list):
        index = key[0]
        instr = self.function.instructions[index]
        if len(self.dests[index]) != 1:
            return _unknown(instr)
        if instr.base == "ld":
            return Unknown(f"a value loaded from memory ({instr.statement[:60]})")
        ops = []
        for read in reads:
            value = self._read(read)
            if value is None:
                return None  # an input not computed yet (bottom)
            ops.append(value)
        refined = None
        if instr.base == "selp" and len(ops) >= 3:
            refined = self._refine_select(index, instr.operands[1:], ops)
        value = _evaluate(instr, ops, refined)
        form = self._linear(index)
        if form is None or not form[2]:
            return value
        relational = self._form_value(form)
        return value if relational is None or isinstance(relational, Unknown) else _meet(value, relational)

    # -- relations: sums of the same registers cancel ----------------------------------------------

    _FORM_DEPTH = 12
    _FORM_TERMS = 8

    def _linear(self, index: int, depth: int = 0):
        """The value instruction ``index`` defines as ``(terms, constant, expanded)``: constant + the sum of
        coefficient x atom, where an atom is how one register is read (its ``_sources`` keys), or None when
        the instruction is not integer add/sub/mul/shl/mad/mov. Definitions earlier in the same block are
        expanded, so that ``x*c + y - x*c`` is ``y``: each expansion stays in one basic block, where the same
        keys mean the same run-time value. ``expanded`` says whether some definition was expanded."""
        cache = self._forms
        if index in cache:
            return cache[index]
        cache[index] = None  # a cycle (impossible within a block, but cheap to guard) is not linear
        instr = self.function.instructions[index]
        base, parts = instr.base, instr.parts
        form = None
        if len(self.dests.get(index, ())) == 1 and base in _LINEAR_BASES and "hi" not in parts and not any(
                p.startswith(_FLOAT_PARTS) for p in parts[1:]) and instr.predicate is None:
            operands = instr.operands[1:]
            terms = [self._operand_form(index, o, depth) for o in operands]
            if base in ("mov", "cvt") and len(terms) == 1:
                form = terms[0]
            elif base == "add" and len(terms) == 2:
                form = _form_sum(terms[0], terms[1], 1)
            elif base == "sub" and len(terms) == 2:
                form = _form_sum(terms[0], terms[1], -1)
            elif base in ("mul", "shl", "mad") and len(terms) >= 2:
                factor = _constant(operands[1])
                if base == "shl":
                    scaled = terms[0] if factor is not None and 0 <= factor < 32 else None
                    factor = 1 << factor if scaled is not None else None
                elif factor is not None:
                    scaled = terms[0]
                else:
                    factor, scaled = _constant(operands[0]), terms[1]
                if factor is not None and scaled is not None:
                    form = _form_sum(None, scaled, factor)
                    if base == "mad":
                        form = _form_sum(form, terms[2], 1) if len(terms) == 3 else None
        if form is not None and len(form[0]) > self._FORM_TERMS:
            form = None
        cache[index] = form
        return form

    def _operand_form(self, index: int, operand: str, depth: int):
        operand = operand.strip()
        number = _constant(operand)
        if number is not None:
            return {}, number, False
        if operand in self.shared_symbols:
            return {operand: 1}, 0, False
        if not operand.startswith("%"):
            return None
        special = _SPECIAL_REGISTERS.get(operand.split(".")[0])
        if special is not None:
            return {operand: 1}, 0, False
        keys = self._sources(index, operand)
        if not keys:
            return None
        if len(keys) == 1 and keys[0][0] != "all" and depth < self._FORM_DEPTH:
            inner = self._linear(keys[0][0], depth + 1)
            if inner is not None:
                return inner[0], inner[1], True
        return {keys: 1}, 0, False

    def _form_value(self, form):
        """The value of a linear form from the values of its atoms (None: an atom not computed yet)."""
        terms, constant, _ = form
        total = IntRange(constant, constant)
        for atom, coefficient in terms.items():
            if isinstance(atom, str):  # a special register or a shared symbol
                value = _SPECIAL_REGISTERS[atom.split(".")[0]] if atom[0] == "%" else SharedAddress(atom, 0, 0)
            else:
                value = self._read(("keys", atom))
            if value is None:
                return None
            if coefficient != 1:
                if not isinstance(value, IntRange):
                    return Unknown("a multiple of an address")
                value = _product(value, IntRange(coefficient, coefficient))
            total = _add(total, value)
            if isinstance(total, Unknown):
                return total
        return total

    def _refine_select(self, index: int, operands: list[str], ops: list) -> tuple:
        """(value if the predicate holds, value if not), each narrowed by the predicate's comparison."""
        first, second = ops[0], ops[1]
        condition = self._condition(index, operands[2])
        if condition is None:
            return first, second
        x_keys, comparison, constant = condition
        if operands[0].startswith("%") and self._sources(index, operands[0]) == x_keys:
            first = _refine(first, comparison, constant)
        if operands[1].startswith("%") and self._sources(index, operands[1]) == x_keys:
            second = _refine(second, _NEGATED[comparison], constant)
        return first, second

    def _condition(self, index: int, predicate: str) -> tuple | None:
        """What predicate ``[!]%p`` at instruction ``index`` says, when it is ``setp.<cmp> %p, %x, <constant>``:
        (the definitions of %x it compares, the comparison that holds, the constant)."""
        negated = predicate.startswith("!")
        sources = self._sources(index, predicate.lstrip("!"))
        if len(sources) != 1 or sources[0][0] == "all":
            return None
        setp_index = sources[0][0]
        setp = self.function.instructions[setp_index]
        parts = setp.parts
        if setp.base != "setp" or len(parts) < 2 or parts[1] not in _COMPARISONS or "|" in setp.operand_text:
            return None
        operands = setp.operands
        if len(operands) != 3:
            return None
        comparison, x, constant = parts[1], operands[1], _constant(operands[2])
        if constant is None:
            comparison, x, constant = _SWAPPED[comparison], operands[2], _constant(operands[1])
        if constant is None or not x.startswith("%") or x.split(".")[0] in _SPECIAL_REGISTERS:
            return None
        if negated:
            comparison = _NEGATED[comparison]
        return self._sources(setp_index, x), comparison, constant

    def _guarded(self, index: int, operand: str, condition: tuple, depth: int = 0):
        """The value of ``operand`` at ``index`` in the threads where ``condition`` holds: the compared
        register is narrowed, and the definitions built on it are evaluated again (a few levels deep)."""
        x_keys, comparison, constant = condition
        operand = operand.strip()
        if not operand.startswith("%") or operand.split(".")[0] in _SPECIAL_REGISTERS:
            return self.final_value(index, operand)
        keys = self._sources(index, operand)
        if keys == x_keys:
            value = _refine(self.final_value(index, operand), comparison, constant)
            return value if value is not None else self.final_value(index, operand)
        if depth >= 8 or len(keys) != 1 or keys[0][0] == "all":
            return self.final_value(index, operand)
        definition = keys[0][0]
        instr = self.function.instructions[definition]
        if len(self.dests.get(definition, ())) != 1 or instr.base in ("ld", "selp"):
            return self.final_value(index, operand)
        ops = [self._guarded(definition, o, condition, depth + 1) for o in instr.operands[1:]]
        value = _evaluate(instr, ops, None)
        return value if value is not None else self.final_value(index, operand)

    # -- values ------------------------------------------------------------------------------

    # -- a witness: the value in thread 0 ------------------------------------------------------------

    _WITNESS_DEPTH = 24
    _WITNESS_THREAD = {"%tid": 0, "%laneid": 0}

    def witness(self, index: int, operand: str, depth: int = 0):
        """The value ``operand`` has at instruction ``index`` in thread 0 (``%tid`` and ``%laneid`` 0), as a
        constant ``IntRange`` or a ``SharedAddress`` of one offset, or None where it depends on anything else (a
        loop-carried register, a load, a run-time value, a predicated definition). It is a value that occurs:
        an address range that is only a bound still holds this one."""
        operand = operand.strip()
        if operand.startswith("%"):
            name = operand.split(".")[0]
            if name in self._WITNESS_THREAD:
                return IntRange(0, 0)
            keys = self._sources(index, operand)
            if len(keys) != 1 or depth >= self._WITNESS_DEPTH:
                return None
            definition, register = keys[0]
            if definition == "all":
                found = self.defs.get(register, [])
                if len(found) != 1:
                    return None  # loop-carried: which iteration's value is not known
                definition = found[0]
            cache = self._witnesses
            if definition not in cache:
                cache[definition] = None  # a cycle gives no witness
                cache[definition] = self._witness_definition(definition, depth)
            return cache[definition]
        value = self._read(self._input(index, operand)) if not operand.startswith("{") else None
        return value if isinstance(value, (IntRange, SharedAddress, MatrixDescriptor)) and _single(value) else None

    def _witness_definition(self, definition: int, depth: int):
        instr = self.function.instructions[definition]
        if instr.predicate or len(self.dests.get(definition, ())) != 1 or instr.base in ("ld", "selp", "shfl"):
            return None
        ops = []
        for operand in instr.operands[1:]:
            value = self.witness(definition, operand, depth + 1)
            if value is None:
                return None
            ops.append(value)
        value = _evaluate(instr, ops, None) if instr.base != "mov" or not instr.operands[1].startswith("{") \
            else _packed(ops)
        return value if isinstance(value, (IntRange, SharedAddress, MatrixDescriptor)) and _single(value) else None

    def witness_address(self, index: int, operand: str):
        """The ``[base+offset]`` operand's address in thread 0 (``witness``), or None."""
        if self.function.instructions[index].predicate:
            return None  # thread 0 may not run it
        inner = operand.strip()
        match = _MEMORY_OPERAND.fullmatch(inner[1:-1].replace(" ", "")) if inner.startswith("[") else None
        if match is None:
            return None
        base = self.witness(index, match.group(1))
        offset = _constant(match.group(3)) if match.group(3) is not None else 0
        if base is None or offset is None:
            return None
        offset *= -1 if match.group(2) == "-" else 1
        value = _add(base, IntRange(offset, offset))
        return value if isinstance(value, SharedAddress) and _single(value) else None

    def operand_value(self, index: int, operand: str):
        """The value of operand text (register, symbol, immediate) as seen by instruction ``index``."""
        return self._read(self._input(index, operand))

    def final_value(self, index: int, operand: str):
        value = self.operand_value(index, operand)
        return Unknown("an input the analysis did not reach") if value is None else value

    def address(self, index: int, operand: str):
        """The value of a ``[base+offset]`` memory operand of instruction ``index``."""
        inner = operand.strip()
        if not (inner.startswith("[") and inner.endswith("]")):
            return Unknown(f"the operand {inner[:40]}")
        inner = inner[1:-1].replace(" ", "")
        match = _MEMORY_OPERAND.fullmatch(inner)
        if not match:
            return Unknown(f"the memory operand [{inner[:40]}]")
        predicate = self.function.instructions[index].predicate
        condition = self._condition(index, predicate) if predicate else None
        if condition is not None:
            base = self._guarded(index, match.group(1), condition)
        else:
            base = self.final_value(index, match.group(1))
        if match.group(3) is None:
            return base
        offset = _constant(match.group(3))
        if offset is None:
            return Unknown(f"the memory operand [{inner[:40]}]")
        offset *= -1 if match.group(2) == "-" else 1
        return _add(base, IntRange(offset, offset))


_LINEAR_BASES = {"add", "sub", "mul", "shl", "mad", "mov", "cvt"}


def _single(value) -> bool:
    if isinstance(value, MatrixDescriptor):
        return _single(value.address) and _single(value.step)
    return value.lo == value.hi


def _form_sum(a, b, factor: int):
    """The linear form a + factor * b (a None: 0); terms whose coefficients cancel are dropped."""
    if b is None:
        return None
    terms = dict(a[0]) if a is not None else {}
    for atom, coefficient in b[0].items():
        total = terms.get(atom, 0) + factor * coefficient
        if total:
            terms[atom] = total
        else:
            terms.pop(atom, None)
    return terms, (a[1] if a is not None else 0) + factor * b[1], (a is not None and a[2]) or b[2]


def _meet(a, b):
    """Two sound values of the same register: what both allow (the first when they do not compare)."""
    if isinstance(a, Unknown):
        return b
    if isinstance(a, IntRange) and isinstance(b, IntRange):
        lo, hi = max(a.lo, b.lo), min(a.hi, b.hi)
        if lo > hi:
            return a
        # exact only where one of them is exact and the other does not cut it
        exact = (a.exact and (lo, hi) == (a.lo, a.hi)) or (b.exact and (lo, hi) == (b.lo, b.hi))
        met = _range(lo, hi, max(_tz(a), _tz(b)), exact)
        return met if isinstance(met, IntRange) else a
    if isinstance(a, SharedAddress) and isinstance(b, SharedAddress) and a.symbol == b.symbol:
        hi = b.hi if a.hi is None else a.hi if b.hi is None else min(a.hi, b.hi)
        lo = max(a.lo, b.lo)
        exact = (a.exact and (lo, hi) == (a.lo, a.hi)) or (b.exact and (lo, hi) == (b.lo, b.hi))
        return SharedAddress(a.symbol, lo, hi, exact) if hi is None or lo <= hi else a
    return a


_PTX_INTEGER = re.compile(r"(-?)(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)[Uu]?")


def _constant(text: str) -> int | None:
    """A PTX integer literal (hexadecimal, binary, octal with a leading 0, decimal; a U suffix), else None."""
    match = _PTX_INTEGER.fullmatch(text.strip())
    if match is None:
        return None
    sign, digits = match.groups()
    base = 16 if digits[:2] in ("0x", "0X") else 2 if digits[:2] in ("0b", "0B") else 8 if digits[0] == "0" else 10
    value = int(digits[2:] if base in (2, 16) else digits, base)
    return -value if sign else value


# ----------------------------------------------------------------------------------------------
# Regions and instruction classes

_MIN_OPERAND_BYTES = 16  # a TMA box / MMA operand covers at least its first 16 bytes


@dataclass(frozen=True)
class PtxRegion:
    """Bytes of a shared symbol an access touches.

    ``[lo, hi)`` holds every byte it may touch (``hi`` None: no bound known); ``[certain_lo, certain_hi)`` (from
    ``lo`` when ``certain_lo`` is None) the bytes it surely touches, taken over all threads and loop iterations
    (a loop that steps a pipeline stage touches every stage; see ``Classifier.region``). ``symbol`` None: the
    address is not resolved.
    """
    symbol: str | None
    lo: int = 0
    hi: int | None = None
    certain_hi: int = 0
    certain_lo: int | None = None

    def overlap(self, other: "PtxRegion") -> Overlap:
        if self.symbol is None or other.symbol is None:
            return Overlap.UNKNOWN
        if self.symbol != other.symbol:
            return Overlap.NO
        if (self.hi is not None and self.hi <= other.lo) or (other.hi is not None and other.hi <= self.lo):
            return Overlap.NO
        mine = self.lo if self.certain_lo is None else self.certain_lo
        theirs = other.lo if other.certain_lo is None else other.certain_lo
        if max(mine, theirs) < min(self.certain_hi, other.certain_hi):
            return Overlap.YES
        return Overlap.UNKNOWN

    def span(self) -> tuple[str, int, int | None] | None:
        """(symbol, lo, hi): ``overlap`` with another region that has a span is NO exactly where their symbols
        differ or their ``[lo, hi)`` do not meet (lets ``dataflow`` sort regions instead of testing each pair);
        None where the address is not resolved."""
        return None if self.symbol is None else (self.symbol, self.lo, self.hi)

    def __str__(self) -> str:
        if self.symbol is None:
            return "unresolved shared address"
        end = "?" if self.hi is None else str(self.hi)
        return f"{self.symbol}[{self.lo}, {end})"


_UNRESOLVED = PtxRegion(None)
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
# Instructions on shared memory that are not data traffic for proxy ordering (barriers, tensor-map
# updates staged in shared memory, the TMEM allocator's result slot is excluded separately).
_NOT_DATA = ("mbarrier", "tensormap", "fence", "membar", "bar", "barrier", "elect", "mapa", "cvta", "getctarank",
             "prefetch", "prefetchu", "isspacep", "discard", "applypriority", "createpolicy")
# the opcodes Classifier.events looks at; every other one is not a shared-memory data access
_EVENT_BASES = {"fence", "membar", "st", "ld", "atom", "red", "stmatrix", "ldmatrix", "cp", "wgmma", "tcgen05",
                "clusterlaunchcontrol", "mbarrier"}


class Classifier:
    """Proxy events of each instruction, from its opcode and resolved operands."""

    def __init__(self, analysis: AddressAnalysis, extents: dict | None = None, generic: bool = True,
                 generic_reads: bool = True, sizes: dict[str, int] | None = None):
        self.analysis = analysis
        self.sizes = sizes or {}  # shared symbol -> bytes allocated: no access reaches past them
        self.extents = extents or {}  # (Python source line, class) -> most bytes an async operand covers
        self.generic = generic  # False: no async access anywhere, so no generic access can matter
        self.generic_reads = generic_reads  # False: no async write anywhere, so generic reads cannot matter
        self.barrier_bytes = self._expected_bytes()

    # -- extents -----------------------------------------------------------------------------------

    def _expected_bytes(self) -> list[tuple[object, int | None]]:
        """(barrier address, bytes) of every ``expect_tx``: a TMA load completing on a barrier writes at
        most the bytes its phase expects."""
        found = []
        for index, instr in enumerate(self.analysis.function.instructions):
            if instr.base == "mbarrier" and "expect_tx" in instr.parts:
                memory = [(i, o) for i, o in enumerate(instr.operands) if o.startswith("[")]
                if not memory:
                    continue
                position, operand = memory[0]
                size = _constant(instr.operands[position + 1]) if position + 1 < len(instr.operands) else None
                found.append((self.analysis.address(index, operand), size))
        return found

    def _load_bound(self, index: int, instr: PtxInstruction) -> int | None:
        barriers = [o for o in instr.operands[2:] if o.startswith("[")]
        if not barriers or not self.barrier_bytes:
            return None
        barrier = self.analysis.address(index, barriers[0])
        if not isinstance(barrier, SharedAddress):
            return None
        bound = None
        for address, size in self.barrier_bytes:
            if not isinstance(address, SharedAddress):
                return None  # an expect_tx on a barrier the analysis cannot place may be this one's
            if address.symbol == barrier.symbol and _ranges_meet(address, barrier):
                if size is None:
                    return None
                bound = max(bound or 0, size)
        return bound

    def _hint(self, instr: PtxInstruction, kind: str) -> int | None:
        """The TTGIR's bound for this instruction's operand: by Python line and column, else by line."""
        if not instr.source:
            return None
        found = self.extents.get((f"{instr.source}:{instr.column}", kind)) if instr.column else None
        return found if found is not None else self.extents.get((instr.source, kind))

    # -- regions -------------------------------------------------------------------------------------

    def region(self, value, size: int | None, bound: int | None = None, descriptor: bool = False,
               end: int | None = None, extent: int | None = None,
               witness=None) -> tuple[PtxRegion, str | None]:
        """The bytes touched from address ``value``: ``size`` exactly, or at most ``bound`` (at least 16) and
        not past the offset ``end``; never past the end of the symbol's allocation (``self.sizes``). ``extent``:
        the bytes the access surely covers from its start when ``size`` is not known (the TTGIR's exact TMA box);
        else its first 16.

        Certain bytes: where the address range is exact (``IntRange.exact``: every value occurs over the threads
        and iterations), the bytes from its lowest start to its highest start plus what one access surely covers;
        where it is only a bound, the bytes that every start in it covers, ``[hi, lo + covered)``, if any, or
        those of the ``witness`` start (thread 0's: ``AddressAnalysis.witness``), whichever are more.

        A matrix descriptor (``descriptor``) is sized from its own operand: ``bound`` counts from the base the
        descriptor was made from, not from the k-step or warp offset added to it since (which lies inside)."""
        step = 0
        starts = None  # the lowest and highest start of the access
        if descriptor:
            if not isinstance(value, MatrixDescriptor):
                origin = value.origin if isinstance(value, Unknown) else f"{_describe(value)}, not a descriptor"
                return _UNRESOLVED, ("the matrix descriptor is not derived from a shared-memory symbol: "
                                     f"it depends on {origin}")
            exact = value.address.exact and value.step.exact
            starts = (value.address.lo + value.step.lo,
                      None if value.address.hi is None else value.address.hi + value.step.hi)
            step = value.step.lo
            if bound is not None:
                bound = max(bound, value.step.hi + _MIN_OPERAND_BYTES)
            else:
                value = _shift_address(value.address, value.step.lo, value.step.hi)
                step = 0
            value = value.address if isinstance(value, MatrixDescriptor) else value
        if not isinstance(value, SharedAddress):
            origin = value.origin if isinstance(value, Unknown) else "a value the analysis does not follow"
            return _UNRESOLVED, f"the address is not derived from a shared-memory symbol: it depends on {origin}"
        if starts is None:
            exact, starts = value.exact, (value.lo, value.hi)
        limit = self.sizes.get(value.symbol)
        lo = max(value.lo, 0) if limit is None else min(max(value.lo, 0), limit)
        if value.hi is None:
            return PtxRegion(value.symbol, lo, limit, 0), "the address varies in a loop without a bound"
        if size is not None:
            hi = value.hi + size
        else:
            limits = [value.hi + max(bound, _MIN_OPERAND_BYTES)] if bound is not None else []
            limits += [max(end, value.hi + step + _MIN_OPERAND_BYTES)] if end is not None else []
            hi = min(limits) if limits else None
        covered = size if size is not None else max(extent or 0, _MIN_OPERAND_BYTES)
        certain_lo = None
        if exact:
            certain = value.hi + (size if size is not None else step + covered)
        else:  # only the bytes every possible start covers
            certain_lo, certain = starts[1], starts[0] + covered
            if starts[1] is None or certain_lo >= certain:
                certain_lo, certain = None, 0
            if isinstance(witness, MatrixDescriptor):
                witness = _shift_address(witness.address, witness.step.lo, witness.step.hi)
            if isinstance(witness, SharedAddress) and witness.symbol == value.symbol and \
                    covered > certain - (lo if certain_lo is None else certain_lo):
                certain_lo, certain = witness.lo, witness.lo + covered
        if limit is not None:
            hi, certain = limit if hi is None else min(hi, limit), min(certain, limit)
        return PtxRegion(value.symbol, lo, hi, certain, certain_lo), None

    def _access(self, kind, instr, value, size=None, scope=Scope.CTA, bound=None, no_bound_reason=None,
                descriptor=False, end=None, in_flight=False, extent=None, witness=None) -> Access:
        region, why = self.region(value, size, bound, descriptor, end, extent, witness)
        if why is None and region.hi is None:
            why = no_bound_reason
        return Access(kind, region, instr.ref(), scope, why, in_flight)

    # -- events --------------------------------------------------------------------------------------

    def events(self, index: int, instr: PtxInstruction) -> list:
        try:
            return self._events(index, instr)
        except IndexError:
            raise _OperandError(f"cannot read the operands of {instr.statement[:80]!r}") from None

    def _events(self, index: int, instr: PtxInstruction) -> list:
        base = instr.base
        if base not in _EVENT_BASES:
            if ".shared" in instr.opcode and base not in _NOT_DATA:
                raise _OperandError(f"shared-memory instruction not understood: {instr.statement[:80]!r}")
            return []
        parts = instr.parts
        analysis = self.analysis
        if base in ("fence", "membar"):
            return self._fence(instr)
        if base in ("st", "ld", "atom", "red", "stmatrix", "ldmatrix") and (
                not self.generic or base in ("ld", "ldmatrix") and not self.generic_reads):
            return []
        if base in ("st", "ld", "atom", "red"):
            if any(p.startswith("shared") for p in parts[1:]):
                if "async" in parts:  # st.async / red.async to another CTA's shared memory: generic proxy
                    return [self._access(AccessKind.GENERIC_WRITE, instr, analysis.address(index, instr.operand(0)),
                                         _access_bytes(parts), witness=analysis.witness_address(index,
                                                                                                instr.operand(0)))]
                return self._generic(index, instr, base)
            if base == "st" and "bulk" in parts:
                raise _OperandError(f"st.bulk is not modelled: {instr.statement[:80]!r}")
            return []
        if base in ("stmatrix", "ldmatrix"):
            kind = AccessKind.GENERIC_WRITE if base == "stmatrix" else AccessKind.GENERIC_READ
            operand = instr.operand(0 if base == "stmatrix" else 1)
            return [self._access(kind, instr, analysis.address(index, operand), 16,
                                 witness=analysis.witness_address(index, operand))]
        if base == "mbarrier":  # not data; some waits complete copies
            if not _completes_copies(instr):
                return []
            return [BarrierWait(self._barrier(index, instr.operand(1)), instr.ref())]
        if base == "cp":
            copy = parts[2] if len(parts) > 2 and parts[1] == "async" else ""
            if copy in ("commit_group", "wait_group", "wait_all", "mbarrier"):
                return [] if instr.predicate else self._copy(index, instr, copy)  # taken not to run, as fences
            if "commit_group" in parts or "wait_group" in parts or "wait_all" in parts:
                return []  # the bulk groups: TMA stores, which read through the async proxy
            if copy in ("ca", "cg"):
                size = analysis.final_value(index, instr.operand(2))
                nbytes = size.hi if isinstance(size, IntRange) and 0 < size.hi <= 16 else 16
                return [self._access(AccessKind.GENERIC_WRITE, instr, analysis.address(index, instr.operand(0)),
                                     nbytes, in_flight=True, witness=analysis.witness_address(index, instr.operand(0)))]
            if "bulk" in parts and "async" in parts and "prefetch" not in parts:
                return self._bulk(index, instr)
            if "prefetch" in parts:
                return []
            raise _OperandError(f"copy instruction not understood: {instr.statement[:80]!r}")
        if base == "wgmma":
            if len(parts) > 1 and parts[1] == "mma_async":
                return self._mma(index, instr, "mma")
            return []
        if base == "tcgen05":
            kind = parts[1] if len(parts) > 1 else ""
            if kind == "mma":
                return self._mma(index, instr, "mma")
            if kind == "cp":
                scope = Scope.CLUSTER if "cta_group::2" in parts else Scope.CTA
                return [self._access(AccessKind.ASYNC_READ, instr, analysis.final_value(index, instr.operand(1)),
                                     None, scope, bound=self._hint(instr, "tmem_copy"),
                                     no_bound_reason=_NO_EXTENT, descriptor=True)]
            return []  # alloc, dealloc, ld, st, commit, wait, fence, shift: not shared-memory data
        if base == "clusterlaunchcontrol":
            if "try_cancel" in parts:
                scope = Scope.CLUSTER if any(p.startswith("multicast") for p in parts) else Scope.CTA
                return [self._access(AccessKind.ASYNC_WRITE, instr, analysis.address(index, instr.operand(0)), 16,
                                     scope)]
            return []
        if base in _NOT_DATA or base in ("bra", "brx", "call", "ret", "exit", "trap"):
            return []
        if ".shared" in instr.opcode:
            raise _OperandError(f"shared-memory instruction not understood: {instr.statement[:80]!r}")
        return []

    def _copy(self, index: int, instr: PtxInstruction, copy: str) -> list:
        """The completion events of non-bulk ``cp.async`` (``dataflow``'s rules)."""
        if copy == "commit_group":
            return [CopyCommit(instr.ref())]
        if copy == "wait_all":  # the PTX ISA: cp.async.commit_group; cp.async.wait_group 0
            return [CopyCommit(instr.ref()), CopyWait(0, instr.ref())]
        if copy == "mbarrier":
            if "arrive" not in instr.parts:
                raise _OperandError(f"copy instruction not understood: {instr.statement[:80]!r}")
            return [CopyArrive(self._barrier(index, instr.operand(0)), instr.ref())]
        pending = _constant(instr.operand(0))
        if pending is None or pending < 0:
            raise _OperandError(f"cp.async.wait_group needs a constant count: {instr.statement[:80]!r}")
        return [CopyWait(pending, instr.ref())]

    def _barrier(self, index: int, operand: str) -> PtxRegion:
        """The 8 bytes of the mbarrier at ``operand`` (unresolved: it may be any)."""
        return self.region(self.analysis.address(index, operand), 8)[0]

    def _fence(self, instr: PtxInstruction) -> list:
        op = instr.opcode
        is_proxy_async = op.startswith(("fence.proxy.async", "membar.proxy.async"))
        if not is_proxy_async or op.endswith(".global") or "acquire" in op or instr.predicate:
            return []
        scope = Scope.CTA if op.endswith("shared::cta") else Scope.CLUSTER
        return [Fence(scope, instr.ref())]

    def _generic(self, index: int, instr: PtxInstruction, base: str) -> list:
        size = _access_bytes(instr.parts)
        analysis = self.analysis
        operand = instr.operand(1 if base in ("ld", "atom") else 0)
        address, witness = analysis.address(index, operand), analysis.witness_address(index, operand)
        if base == "ld":
            return [self._access(AccessKind.GENERIC_READ, instr, address, size, witness=witness)]
        if base == "atom":
            return [self._access(AccessKind.GENERIC_READ, instr, address, size, witness=witness),
                    self._access(AccessKind.GENERIC_WRITE, instr, address, size, witness=witness)]
        return [self._access(AccessKind.GENERIC_WRITE, instr, address, size, witness=witness)]

    def _bulk(self, index: int, instr: PtxInstruction) -> list:
        parts = instr.parts
        spaces = [p for p in parts if p in _STATE_SPACES]
        if len(spaces) < 2:
            raise _OperandError(f"bulk copy without source and destination spaces: {instr.statement[:80]!r}")
        dst, src = spaces[0], spaces[1]
        analysis = self.analysis
        size = None
        if "tensor" not in parts:
            value = analysis.final_value(index, instr.operand(2))
            size = value.hi if isinstance(value, IntRange) and value.hi > 0 else None
        events = []
        if src.startswith("shared"):
            bound = None if size is not None else self._hint(instr, "tma_store")
            extent = None if size is not None else self._hint(instr, "tma_store=")
            events.append(self._access(AccessKind.ASYNC_READ, instr, analysis.address(index, instr.operand(1)), size,
                                       bound=bound, no_bound_reason=_NO_BOX, extent=extent))
        if dst.startswith("shared"):
            remote = src.startswith("shared")
            multicast = any(p.startswith("multicast") for p in parts)
            scope = Scope.CLUSTER if multicast or remote else Scope.CTA
            bound = end = None
            destination = analysis.address(index, instr.operand(0))
            if size is None:
                bounds = [b for b in (self._load_bound(index, instr), self._hint(instr, "tma_load")) if b]
                bound = min(bounds) if bounds else None
                end = self._own_barrier_end(index, instr, destination)
            extent = None if size is not None else self._hint(instr, "tma_load=")
            if extent is not None and bound is not None:
                extent = min(extent, bound)
            events.append(self._access(AccessKind.ASYNC_WRITE, instr, destination, size, scope, bound=bound,
                                       no_bound_reason=_NO_BOX, end=end, extent=extent))
        return events

    def _own_barrier_end(self, index: int, instr: PtxInstruction, destination) -> int | None:
        """A TMA load never writes over the mbarrier it completes on (the barrier would be corrupted): when
        that barrier lies above every possible destination, the load ends below it."""
        barriers = [o for o in instr.operands[2:] if o.startswith("[")]
        if not barriers or not isinstance(destination, SharedAddress) or destination.hi is None:
            return None
        barrier = self.analysis.address(index, barriers[0])
        if isinstance(barrier, SharedAddress) and barrier.symbol == destination.symbol and barrier.hi is not None \
                and barrier.lo > destination.hi:
            return barrier.hi
        return None

    def _mma(self, index: int, instr: PtxInstruction, kind: str) -> list:
        """The shared-memory operands (descriptors) of wgmma / tcgen05.mma, each bounded by its own TTGIR
        operand (``mma:0`` for the first descriptor, ``mma:1`` for the second)."""
        scope = Scope.CLUSTER if "cta_group::2" in instr.parts else Scope.CTA
        events = []
        for operand in instr.operands[1:3]:
            if operand.startswith(("{", "[")):
                continue  # A in registers (wgmma) or tensor memory (tcgen05)
            bound = self._hint(instr, f"{kind}:{len(events)}")
            witness = None if instr.predicate else self.analysis.witness(index, operand)
            events.append(self._access(AccessKind.ASYNC_READ, instr, self.analysis.final_value(index, operand), None,
                                       scope, bound=bound, no_bound_reason=_NO_EXTENT, descriptor=True,
                                       witness=witness))
        return events


_NO_BOX = "the TMA box size is in the tensor map, a run-time value, and nothing bounds it here"
_NO_EXTENT = "the operand's extent is not in the PTX (give the TTGIR to bound it)"


def _ranges_meet(a: SharedAddress, b: SharedAddress) -> bool:
    a_hi = float("inf") if a.hi is None else a.hi
    b_hi = float("inf") if b.hi is None else b.hi
    return a.lo <= b_hi and b.lo <= a_hi


def _async_classes(functions: list[PtxFunction]) -> tuple[bool, bool]:
    """(any async-proxy access, any async-proxy write) among the functions' instructions, by opcode."""
    any_async = any_write = False
    for function in functions:
        for instr in function.instructions:
            base, parts = instr.base, instr.parts
            if base == "cp" and "bulk" in parts and "async" in parts and "prefetch" not in parts and \
                    "commit_group" not in parts and "wait_group" not in parts:
                any_async = True
                spaces = [p for p in parts if p in _STATE_SPACES]
                any_write |= bool(spaces) and spaces[0].startswith("shared")
            elif base == "clusterlaunchcontrol" and "try_cancel" in parts:
                any_async = any_write = True
            elif (base == "wgmma" and parts[1:2] == ["mma_async"]) or (base == "tcgen05" and parts[1:2] in (["mma"],
                                                                                                        ["cp"])):
                any_async = True
    return any_async, any_write


# budget steps (dataflow.WorkBudget; a step is about what the dataflow analysis does with one pending access) per
# instruction of the kernel, for reading it and building its CFG, and per instruction classified (its operands'
# addresses resolved, its witness found): measured on the corpus and on synthetic kernels (docs/fence.md)
_READ_STEPS = 8
_CLASSIFY_STEPS = 100


def _function_events(function: PtxFunction, shared_symbols: set[str], extents: dict | None, filename: str,
                     classes: tuple[bool, bool] = (True, True), sizes: dict[str, int] | None = None,
                     budget: WorkBudget | None = None) -> tuple[list[list[int]], list[list[int]], list[list]]:
    """Blocks, successors and events of one function. ``classes`` (from ``_async_classes`` of everything the
    kernel can run) says which generic accesses can matter: none without async accesses, no reads without
    async writes. Their addresses are then not even computed. ``sizes``: the bytes allocated per shared symbol
    (``PtxModule.allocation``), which bound every region."""
    instructions = function.instructions
    instruction_blocks, successors = build_cfg(function)
    any_async, any_write = classes
    candidates = []  # instructions that may give events, or bound others (tcgen05.alloc, tensormap, expect_tx)
    roots = []
    for index, instr in enumerate(instructions):
        base = instr.base
        if base in _EVENT_BASES or base == "mbarrier" or base == "tensormap":
            candidates.append(index)
            if any_async and (any_write or (base != "ld" and base != "ldmatrix")):
                roots.extend((index, operand) for operand in _address_operands(instr))
        elif ".shared" in instr.opcode and base not in _NOT_DATA:
            raise ParseError(filename, instr.line, f"shared-memory instruction not understood: {instr.text[:80]!r}")
    if not any_async:  # nothing to order
        return instruction_blocks, successors, [[] for _ in instruction_blocks]
    if budget is not None:  # charged before the work: a huge kernel stops here
        budget.spend(_CLASSIFY_STEPS * len(candidates))
    analysis = AddressAnalysis(function, shared_symbols, instruction_blocks, roots, budget)
    classifier = Classifier(analysis, extents, generic=any_async, generic_reads=any_write, sizes=sizes)
    slots, staging = set(), []
    for index in candidates:
        instr = instructions[index]
        if instr.base == "tcgen05" and instr.opcode.startswith("tcgen05.alloc") and instr.operands:
            region, _ = classifier.region(analysis.address(index, instr.operands[0]), 4)
            if region.symbol is not None:
                slots.add(region)  # reading back the TMEM address tcgen05.alloc wrote is not data traffic
        elif instr.base == "tensormap" and "cp_fenceproxy" in instr.parts and len(instr.operands) >= 3:
            region, _ = classifier.region(analysis.address(index, instr.operands[1]), _constant(instr.operands[2]))
            if region.symbol is not None and region.hi is not None:
                staging.append(region)  # a tensor map built in shared memory, copied out with its own fence
    events_per_block = [[] for _ in instruction_blocks]
    block_of = analysis.block_of
    for index in candidates:
        instr = instructions[index]
        try:
            found = classifier.events(index, instr)
        except _OperandError as error:
            raise ParseError(filename, instr.line, str(error)) from None
        for event in found:
            if isinstance(event, Access) and event.kind is AccessKind.GENERIC_READ and event.region in slots:
                continue
            if isinstance(event, Access) and not event.kind.is_async and _inside(event.region, staging):
                continue
            events_per_block[block_of[index]].append(event)
    return instruction_blocks, successors, events_per_block


def kernel_blocks(module: PtxModule, kernel: PtxFunction, extents: dict | None = None,
                  shared: int | None = None, budget: WorkBudget | None = None) -> list[Block]:
    """The kernel's control-flow graph with proxy events, ready for ``find_hazards`` (entry: block 0).
    ``shared``: the bytes of dynamic shared memory the kernel is launched with (Triton's ``shared``), the size
    of its unsized ``.extern .shared`` array.

    A ``call`` to a function of the module leads into the callee's blocks, and the callee's returns lead
    back to every call site (context-insensitive: sound for a may-analysis). Calls to functions declared
    without a body (``__assertfail``, ``vprintf``) touch no shared memory. ``budget``: the check's work budget,
    which reading the functions, classifying their instructions and the address analysis spend from
    (``WorkBudgetExceeded`` past it).
    """
    by_name = {f.name: f for f in module.functions}
    reachable = [kernel]
    for function in reachable:  # the kernel and every function it can call
        for instr in function.instructions:
            if instr.base == "call":
                callee = by_name.get(_call_target(instr) or "")
                if callee is not None and callee not in reachable:
                    reachable.append(callee)
    if budget is not None:
        budget.spend(_READ_STEPS * sum(len(function.instructions) for function in reachable))
    classes = _async_classes(reachable)
    offsets: dict[str, int] = {}
    built: dict[str, tuple] = {}
    total = 0
    for function in reachable:
        parts = _function_events(function, module.shared_symbols, extents, module.filename, classes,
                                 module.allocation(shared), budget)
        offsets[function.name] = total
        built[function.name] = parts
        total += len(parts[0]) + 1  # one extra block: the function's exit
    blocks = [Block() for _ in range(total)]
    returns: dict[str, list[int]] = {}
    for name, (instruction_blocks, successors, events) in built.items():
        base = offsets[name]
        exit_block = base + len(instruction_blocks)
        function = by_name.get(name, kernel)
        for n, members in enumerate(instruction_blocks):
            block = blocks[base + n]
            block.events = events[n]
            last = function.instructions[members[-1]] if members else None
            callee = by_name.get(_call_target(last) or "") if last is not None and last.base == "call" else None
            if callee is not None:
                block.successors = [offsets[callee.name]]
                returns.setdefault(callee.name, []).extend(base + s for s in successors[n])
                if last.predicate is not None:  # the call may not happen
                    block.successors += [base + s for s in successors[n]]
                continue
            block.successors = [base + s for s in successors[n]]
            if last is None or last.base == "ret" or (not successors[n] and last.base not in ("exit", "trap")):
                block.successors.append(exit_block)
    for name, sites in returns.items():
        blocks[offsets[name] + len(built[name][0])].successors = sorted(set(sites))
    return blocks


def function_blocks(function: PtxFunction, shared_symbols: set[str], extents: dict | None = None,
                    sizes: dict[str, int] | None = None) -> list[Block]:
    """One function's control-flow graph with proxy events (calls are not followed)."""
    _, successors, events = _function_events(function, shared_symbols, extents, "<ptx>", sizes=sizes)
    return [Block(e, s) for e, s in zip(events, successors)]


def _inside(region: PtxRegion, containers: list[PtxRegion]) -> bool:
    return region.symbol is not None and region.hi is not None and any(
        c.symbol == region.symbol and c.lo <= region.lo and region.hi <= c.hi for c in containers)
