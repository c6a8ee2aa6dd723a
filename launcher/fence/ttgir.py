"""TTGIR front end: parse Triton's MLIR text, trace shared-memory descriptors to their allocations, and
lower each kernel to a control-flow graph of proxy events for ``dataflow.find_hazards``.

``CompiledKernel.asm["ttgir"]`` is captured before Triton allocates shared memory and before its late
``ProxyFenceInsertion`` pass, so buffers are told apart by allocation (SSA root), not by byte offsets;
when ops carry ``allocation.offset`` (lit-test inputs) the byte intervals are used as well.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .dataflow import (Access, AccessKind, BarrierWait, Block, CopyArrive, CopyCommit, CopyWait, Fence, Instruction,
                       Overlap, Scope)
from .errors import ParseError

# ----------------------------------------------------------------------------------------------
# Parsing into an op tree

_VALUE = re.compile(r"%[\w$.\-]+(?:#\d+)?")
_LOC_FILE = re.compile(r'^loc\("([^"]+)":(\d+):(\d+)\)$')
_LOC_REF = re.compile(r"#loc\d*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
# a symbol reference: @name, or MLIR's quoted form @"any text" (with \" \\ \n \t and \XX escapes)
_SYMBOL = re.compile(r'@(?:([\w$.\-]+)|"((?:[^"\\]|\\.)*)")')
_ESCAPE = re.compile(r'\\(?:([0-9a-fA-F]{2})|(.))', re.DOTALL)
# a block label, with the "// pred: ^bb0" / "// 2 preds: ^bb0, ^bb1" comment MLIR prints after it
_BLOCK_LABEL = re.compile(r"\^([\w$.\-]+)\s*(\((.*)\))?\s*:(?:\s*//.*)?$")
_INDEX_LIST = re.compile(r"\[[^\]]*\]")
_PARTITION = re.compile(r"partition\d+\s*\(.*\{$")
_INTEGER = re.compile(r"\s*(-?\d+)\s*$")
_OP_NAME = re.compile(r"[A-Za-z_][\w$.\-]*$")
_MAX_NESTING = 200


@dataclass
class Op:
    name: str
    results: list[str]
    operands: list[str]  # SSA operands in order, index lists ([...]) left out
    attributes: str  # the text of the operand part, for attribute lookups
    types: str  # the text after the top-level ':'
    line: int
    text: str
    loc: str | None
    regions: list["Region"] = field(default_factory=list)
    region_headers: list[str] = field(default_factory=list)


@dataclass
class IrBlock:
    label: str | None
    arguments: list[str]
    ops: list[Op] = field(default_factory=list)


@dataclass
class Region:
    blocks: list[IrBlock]


@dataclass
class Function:
    name: str
    public: bool
    arguments: list[tuple[str, str]]  # (name, type)
    body: Region
    line: int


@dataclass
class TtgirModule:
    functions: dict[str, Function]
    locations: dict[str, str]  # "#locN" -> "file:line:column"
    tensor_memory_aliases: set[str]
    attributes: str
    aliases: dict[str, str] = field(default_factory=dict)  # "#shared" -> "#ttg.nvmma_shared<{...}>"
    filename: str = "<ttgir>"


def _depth_change(text: str) -> int:
    """How many (, [ and < the text leaves open (string literals left out)."""
    if '"' in text:
        text = _STRING.sub('""', text)
    return (text.count("(") + text.count("[") + text.count("<") - text.count(")") - text.count("]")
            - text.count(">") + text.count("->"))


def _statements(text: str):
    """Yield (first line number, statement text) with continuation lines joined."""
    pending, start, depth = "", 0, 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("//"):
            continue
        if pending and (depth > 0 or pending.endswith(",") or line.startswith((":", "->", "!", ")", "attributes"))):
            pending += " " + line
            depth += _depth_change(line)
            continue
        if pending:
            yield start, pending
        pending, start, depth = line, number, _depth_change(line)
    if pending:
        yield start, pending


def _split_top(text: str, sep: str) -> tuple[str, str | None]:
    """Split at the first top-level ``sep`` (outside (), [], {}, <> and strings)."""
    masked = _STRING.sub(lambda m: '"' + "_" * (len(m.group(0)) - 2) + '"', text) if '"' in text else text
    at = masked.find(sep)
    while at >= 0:  # test each occurrence by counting the brackets before it
        head = masked[:at]
        if (head.count("(") + head.count("[") + head.count("{") + head.count("<") - head.count(")")
                - head.count("]") - head.count("}") - head.count(">") + head.count("->")) == 0:
            return text[:at], text[at + len(sep):]
        at = masked.find(sep, at + 1)
    return text, None


_FUNC_HEADER = re.compile(r"tt\.func\s+(?:(public|private|nested)\s+)?(?=@)")


def _symbol_name(match: re.Match) -> str:
    """The name a ``_SYMBOL`` match refers to, MLIR's string escapes undone for a quoted one."""
    if match.group(1) is not None:
        return match.group(1)
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else
                       {"n": "\n", "t": "\t"}.get(m.group(2), m.group(2)), match.group(2))


def _strip_loc(text: str) -> tuple[str, str | None]:
    index = text.rfind(" loc(")
    if index < 0 or not text.endswith(")"):
        return text, None
    return text[:index].rstrip(), text[index + 1:]


class _Parser:
    def __init__(self, text: str, filename: str):
        self.filename = filename
        self.statements = list(_statements(text))
        self.position = 0
        self.functions: dict[str, Function] = {}
        self.raw_locations: dict[str, str] = {}
        self.tensor_memory_aliases: set[str] = set()
        self.aliases: dict[str, str] = {}
        self.module_attributes = ""
        self.nesting = 0

    def error(self, line: int, reason: str) -> ParseError:
        return ParseError(self.filename, line, reason)

    def parse(self) -> TtgirModule:
        while self.position < len(self.statements):
            line, text = self.statements[self.position]
            self.position += 1
            if text.startswith("#"):
                name, _, value = text.partition("=")
                name, value = name.strip(), value.strip()
                if name.startswith("#loc"):
                    self.raw_locations[name] = value
                else:
                    self.aliases[name] = value
                    if "tensor_memory" in value:
                        self.tensor_memory_aliases.add(name)
            elif text.startswith("module"):
                self.module_attributes += text
            elif text.startswith("}"):
                continue
            elif text.startswith("tt.func"):
                self._function(line, text)
            else:
                raise self.error(line, f"unexpected top-level text: {text[:80]!r}")
        if not self.functions:  # a module header alone is not a kernel checked clean
            raise self.error(self.statements[-1][0] if self.statements else 1,
                             "no tt.func: not TTGIR, or cut off before its first function"
                             if self.module_attributes else "not TTGIR: no module and no tt.func")
        locations = _resolve_locations(self.raw_locations)
        return TtgirModule(self.functions, {k: v for k, v in locations.items() if v},
                           self.tensor_memory_aliases, self.module_attributes, self.aliases, self.filename)

    def _function(self, line: int, text: str) -> None:
        match = _FUNC_HEADER.match(text)
        symbol = _SYMBOL.match(text, match.end()) if match else None
        opening = re.compile(r"\s*\(").match(text, symbol.end()) if symbol else None
        if not opening:
            raise self.error(line, f"cannot read function header: {text[:80]!r}")
        function_name = _symbol_name(symbol)
        arguments_text = text[opening.end():]
        depth, end = 1, 0
        for end, ch in enumerate(arguments_text):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                break
        arguments = []
        for argument in _split_commas(arguments_text[:end]):
            name, _, type_text = argument.partition(":")
            arguments.append((name.strip(), _strip_loc(type_text.strip())[0]))
        if not text.rstrip().endswith("{"):
            return  # a declaration
        body = self._region(line)
        self.functions[function_name] = Function(function_name, match.group(1) != "private", arguments, body, line)

    def _region(self, open_line: int) -> Region:
        """Parse statements up to the closing '}' (left for the caller to read)."""
        self.nesting += 1
        if self.nesting > _MAX_NESTING:
            raise self.error(open_line, "regions nested too deep")
        try:
            return self._region_body(open_line)
        finally:
            self.nesting -= 1

    def _region_body(self, open_line: int) -> Region:
        blocks = [IrBlock(None, [])]
        while True:
            if self.position >= len(self.statements):
                raise self.error(open_line, "region is not closed")
            line, text = self.statements[self.position]
            if text.startswith("}"):
                return Region(blocks)
            self.position += 1
            label = _BLOCK_LABEL.match(text)
            if label:
                arguments = [a.split(":")[0].strip() for a in _split_commas(label.group(3) or "")]
                blocks.append(IrBlock(label.group(1), arguments))
                continue
            blocks[-1].ops.append(self._op(line, text))

    def _op(self, line: int, text: str) -> Op:
        body, loc = _strip_loc(text)
        opens_region = body.endswith("{") and not body.endswith("{}")
        if opens_region:
            body = body[:-1].rstrip()
        results: list[str] = []
        if body.startswith("%"):
            lhs, _, body = body.partition(" = ")
            for result in lhs.split(","):
                name, _, count = result.strip().partition(":")
                if count and not count.isdigit():
                    raise self.error(line, f"cannot read the results of: {text[:80]!r}")
                results.extend([f"{name}#{i}" for i in range(int(count))] if count else [name])
        body = body.strip()
        if body.startswith('"'):
            close = body.find('"', 1)
            if close < 0:
                raise self.error(line, f"unterminated op name: {text[:80]!r}")
            name, rest = body[1:close], body[close + 1:]
        else:
            name, _, rest = body.partition(" ")
            if "(" in name and not name.startswith("("):  # ttg.warp_specialize(%a, %b)
                name, paren, tail = name.partition("(")
                rest = paren + tail + " " + rest
        if not _OP_NAME.match(name):
            raise self.error(line, f"op not understood: {text[:80]!r}")
        operand_text, types = _split_top(" " + rest, " : ")
        unquoted = _STRING.sub('""', operand_text) if '"' in operand_text else operand_text  # @"sym%x[1]"
        operands = _VALUE.findall(_INDEX_LIST.sub("", unquoted))
        op = Op(name, results, operands, operand_text, types or "", line, " ".join(text.split()), loc)
        # regions: `op ... {`, then `} else {`, `} do {`, or a separate `default {` / `partitionN(...) {`
        if opens_region:
            op.region_headers.append("")
            op.regions.append(self._region(line))
            self._close_regions(op)
        elif self.position < len(self.statements) and self.statements[self.position][1] == "default {":
            self._close_regions(op, already_open=False)
        return op

    def _close_regions(self, op: Op, already_open: bool = True) -> None:
        while True:
            if self.position >= len(self.statements):
                raise self.error(op.line, f"region of {op.name} is not closed")
            line, text = self.statements[self.position]
            if already_open:
                rest = text[1:].strip()  # after '}'
                if not rest and self.position + 1 < len(self.statements) and \
                        _PARTITION.match(self.statements[self.position + 1][1]):
                    self.position += 1  # `}` alone, the next partition header on its own line
                    already_open = False
                    continue
            else:
                rest, already_open = text, True
            if rest.endswith("{") and not rest.startswith(("{", ":", "loc(")):
                self.position += 1
                op.region_headers.append(rest[:-1].strip())
                op.regions.append(self._region(line))
                continue
            self.position += 1
            _, loc = _strip_loc(rest)
            if loc and op.loc is None:
                op.loc = loc
            return


def _resolve_locations(raw: dict[str, str]) -> dict[str, str]:
    """"#locN" -> "file:line:column", following location references (fused, callsite, named locs)."""
    def resolve(reference: str, depth: int) -> str | None:
        value = raw.get(reference, reference)
        direct = _LOC_FILE.match(value)
        if direct:
            return f"{direct.group(1)}:{direct.group(2)}:{direct.group(3)}"
        if depth > 20:
            return None
        inline = re.search(r'"([^"]+)":(\d+):(\d+)', value)
        if inline:
            return f"{inline.group(1)}:{inline.group(2)}:{inline.group(3)}"
        for ref in _LOC_REF.findall(value):
            if ref != reference:
                resolved = resolve(ref, depth + 1)
                if resolved:
                    return resolved
        return None

    resolved = {name: resolve(name, 0) for name in raw}
    return {name: value for name, value in resolved.items() if value}


def _split_commas(text: str) -> list[str]:
    parts, rest = [], text
    while rest is not None and rest.strip():
        part, rest = _split_top(rest, ",")
        parts.append(part.strip())
    return parts


def parse_ttgir(text: str, filename: str = "<ttgir>") -> TtgirModule:
    return _Parser(text, filename).parse()


# ----------------------------------------------------------------------------------------------
# Buffers: which allocation (and which part of it) a memdesc value refers to

UNKNOWN_ROOT = "?"  # a descriptor the analysis cannot trace (function argument, call result...)


@dataclass(frozen=True)
class BufferRef:
    root: str  # the allocating op ("%name@line") or UNKNOWN_ROOT
    path: tuple = ()  # ("index", k) / ("slice", offsets) steps into the allocation
    interval: tuple[int, int] | None = None  # bytes [lo, hi) when allocation.offset is known

    def overlap(self, other: "BufferRef") -> Overlap:
        if self.interval and other.interval:
            lo, hi = self.interval
            olo, ohi = other.interval
            if hi <= olo or ohi <= lo:
                return Overlap.NO
            if self.root != other.root:
                return Overlap.YES
        if UNKNOWN_ROOT in (self.root, other.root):
            return Overlap.UNKNOWN
        if self.root != other.root:
            return Overlap.NO
        for mine, theirs in zip(self.path, other.path):
            if mine == theirs:
                continue
            if mine[0] == theirs[0] == "index" and isinstance(mine[1], int) and isinstance(theirs[1], int):
                return Overlap.NO
            return Overlap.UNKNOWN
        return Overlap.YES


@dataclass(frozen=True)
class TtgirRegion:
    refs: frozenset  # of BufferRef

    def overlap(self, other: "TtgirRegion") -> Overlap:
        result = Overlap.NO
        for mine in self.refs:
            for theirs in other.refs:
                result = max(result, mine.overlap(theirs), key=lambda o: o.value)
        return result

    def __str__(self) -> str:
        names = sorted("unresolved descriptor" if r.root == UNKNOWN_ROOT else
                       r.root.split("@")[0] + "".join(f"[{s[1]}]" for s in r.path) for r in self.refs)
        return " | ".join(names)


_UNKNOWN_REGION = TtgirRegion(frozenset({BufferRef(UNKNOWN_ROOT)}))
_VIEWS = {"ttg.memdesc_index", "ttg.memdesc_subslice", "ttg.memdesc_trans", "ttg.memdesc_reshape",
          "ttg.memdesc_reinterpret", "ttg.memdesc_subview"}


def _memdesc_bytes(type_text: str) -> int | None:
    match = re.search(r"memdesc<([\dx]+)x([a-zA-Z][\w]*)", type_text)
    if not match:
        return None
    count = 1
    for dim in match.group(1).split("x"):
        count *= int(dim)
    bits = re.search(r"(\d+)", match.group(2))
    return count * int(bits.group(1)) // 8 if bits else None


# ----------------------------------------------------------------------------------------------
# Op classes (Triton 3.6 / 3.9 names)

_GENERIC_WRITE_FIRST_MEMDESC = {"ttg.local_store", "ttng.async_shared_store"}
_COPY_COMPLETION = {"ttg.async_commit_group", "ttg.async_wait", "ttng.async_copy_mbarrier_arrive", "ttng.wait_barrier"}
_GENERIC_READ_WRITE = {"ttg.local_atomic_scatter_rmw", "ttg.local_atomic_rmw", "ttg.local_atomic_cas"}
_ASYNC_READ_FIRST_MEMDESC = {"ttng.async_tma_copy_local_to_global", "ttng.async_tma_reduce",
                             "ttng.async_tma_scatter", "ttng.tmem_copy"}
_ASYNC_READ_TWO_OPERANDS = {"ttng.warp_group_dot", "ttng.tc_gen5_mma", "ttng.tc_gen5_mma_scaled"}
_ASYNC_WRITE_FIRST_MEMDESC = {"ttng.async_tma_copy_global_to_local", "ttng.async_tma_gather",
                              "ttng.clc_try_cancel"}
# ops that define or carry descriptor values (the others are skipped while tracing them)
_VALUE_OPS = _VIEWS | {"arith.constant", "ttg.local_alloc", "arith.select", "tt.call", "scf.for", "scf.if",
                       "scf.while", "ttg.warp_specialize", "cf.br", "cf.cond_br"}
_ASYNC_OPS = _ASYNC_READ_FIRST_MEMDESC | _ASYNC_READ_TWO_OPERANDS | _ASYNC_WRITE_FIRST_MEMDESC
_LOOPS = {"scf.for", "scf.while"}


@dataclass
class _Context:
    """Descriptor values of one (inlined) function body: SSA name -> TtgirRegion."""
    values: dict[str, TtgirRegion]
    constants: dict[str, int]
    depth: int = 0
    frame: int = 0  # allocation.offset of the (inlined) call frame: callee offsets are relative to it


class _Lowering:
    """Lower an entry function (callees inlined) to dataflow blocks."""

    def __init__(self, module: TtgirModule):
        self.module = module
        self.blocks: list[Block] = []
        self._block_by_label: dict[str, IrBlock] = {}
        self.two_ctas = _flag(module.attributes, '"ttng.two-ctas"')
        num_ctas = re.search(r'"ttg\.num-ctas"\s*=\s*(\d+)', module.attributes)
        self.num_ctas = int(num_ctas.group(1)) if num_ctas else 1

    def new_block(self) -> int:
        self.blocks.append(Block())
        return len(self.blocks) - 1

    def edge(self, source: int, target: int) -> None:
        if target not in self.blocks[source].successors:
            self.blocks[source].successors.append(target)

    # -- descriptor values --------------------------------------------------------------------

    def _define_values(self, op: Op, context: _Context) -> None:
        values = context.values
        if op.name == "arith.constant":
            number = _INTEGER.match(op.attributes)
            if number and op.results:
                context.constants[op.results[0]] = int(number.group(1))
        elif op.name == "ttg.local_alloc" and op.results:
            offset = re.search(r"allocation\.offset\s*=\s*(\d+)", op.attributes)
            size = _memdesc_bytes(op.types)
            start = int(offset.group(1)) + context.frame if offset else 0
            interval = (start, start + size) if offset and size else None
            if "#smem" in op.types or "shared_memory" in op.types or "memdesc" in op.types:
                values[op.results[0]] = TtgirRegion(frozenset({BufferRef(f"{op.results[0]}@{op.line}",
                                                                         interval=interval)}))
        elif op.name in _VIEWS and op.results and op.operands:
            source = values.get(op.operands[0])
            if source is not None:
                values[op.results[0]] = self._view(op, source, context)
        elif op.name == "arith.select" and op.results and len(op.operands) >= 3:
            self._join_into(context, op.results[0], op.operands[1:3])
        elif op.name == "tt.call" and op.results:
            for result in op.results:
                if _is_shared_memdesc(op.types, self.module):
                    values[result] = _UNKNOWN_REGION

    def _view(self, op: Op, source: TtgirRegion, context: _Context) -> TtgirRegion:
        step = None
        if op.name == "ttg.memdesc_index":
            index = re.search(r"\[\s*(%[\w$.\-]+|\d+)\s*\]", op.attributes)
            if index:
                token = index.group(1)
                step = ("index", context.constants.get(token, token) if token.startswith("%") else int(token))
            elif len(op.operands) > 1:
                step = ("index", context.constants.get(op.operands[1], op.operands[1]))
        elif op.name in ("ttg.memdesc_subslice", "ttg.memdesc_subview"):
            offsets = re.search(r"\[([^\]]*)\]", op.attributes)
            step = ("slice", offsets.group(1).replace(" ", "") if offsets else "?")
        if step is None:
            return source
        return TtgirRegion(frozenset(BufferRef(r.root, r.path + (step,)) for r in source.refs))

    def _join_into(self, context: _Context, target: str, sources: list[str]) -> bool:
        refs = set(context.values[target].refs) if target in context.values else set()
        before = len(refs)
        for source in sources:
            region = context.values.get(source)
            if region is not None:
                refs |= region.refs
        if refs and (target not in context.values or len(refs) != before):
            context.values[target] = TtgirRegion(frozenset(refs))
            return True
        return False

    # -- events ------------------------------------------------------------------------------

    def instruction(self, op: Op) -> Instruction:
        text = _strip_loc(op.text)[0]
        return Instruction(text if len(text) <= 240 else text[:237] + "...", op.line, source_of(self.module, op))

    def events(self, op: Op, context: _Context) -> list:
        name = op.name
        memdescs = [v for v in op.operands if v in context.values]

        def access(kind, value, scope=Scope.CTA, in_flight=False):
            return Access(kind, context.values[value], self.instruction(op), scope, in_flight=in_flight)

        if name == "ttng.fence_async_shared":
            scope = Scope.CLUSTER if re.search(r"bCluster\s*=\s*true", op.attributes) else Scope.CTA
            return [Fence(scope, self.instruction(op))]
        if name in _COPY_COMPLETION:
            return self._copy_completion(op, context.values[memdescs[0]] if memdescs else _UNKNOWN_REGION)
        if name == "ttg.async_copy_global_to_local" and memdescs:  # cp.async: made when it completes
            return [access(AccessKind.GENERIC_WRITE, memdescs[0], in_flight=True)]
        if name == "ttg.local_alloc" and op.operands and op.results and op.results[0] in context.values:
            return [access(AccessKind.GENERIC_WRITE, op.results[0])]
        if name in _GENERIC_WRITE_FIRST_MEMDESC and memdescs:
            return [access(AccessKind.GENERIC_WRITE, memdescs[0])]
        if name in ("ttg.local_load", "ttng.clc_load_result") and memdescs:
            return [access(AccessKind.GENERIC_READ, memdescs[0])]
        if name in _GENERIC_READ_WRITE and memdescs:
            return [access(AccessKind.GENERIC_READ, memdescs[0]), access(AccessKind.GENERIC_WRITE, memdescs[0])]
        if name not in _ASYNC_OPS:
            return []
        cluster = Scope.CLUSTER if _flag(op.attributes, "multicast") or _flag(op.attributes, "two_ctas") or \
            (name == "ttng.tmem_copy" and self.two_ctas) or (name == "ttng.clc_try_cancel" and self.num_ctas > 1) \
            else Scope.CTA
        if name in _ASYNC_READ_FIRST_MEMDESC and memdescs:
            return [access(AccessKind.ASYNC_READ, memdescs[0], cluster)]
        if name in _ASYNC_READ_TWO_OPERANDS:
            operands = [v for v in op.operands[:2] if v in context.values]
            if name == "ttng.tc_gen5_mma_scaled":
                operands += [v for v in op.operands[3:5] if v in context.values]
            return [access(AccessKind.ASYNC_READ, v, cluster) for v in operands]
        if name in _ASYNC_WRITE_FIRST_MEMDESC and memdescs:
            return [access(AccessKind.ASYNC_WRITE, memdescs[0], cluster)]
        return []

    def _copy_completion(self, op: Op, barrier) -> list:
        """What ``cp.async`` lowers these ops to, as ``dataflow``'s completion events (``barrier``: the
        region of the op's mbarrier operand)."""
        ref = self.instruction(op)
        if op.name == "ttg.async_commit_group":
            return [CopyCommit(ref)]
        if op.name == "ttng.async_copy_mbarrier_arrive":
            return [CopyArrive(barrier, ref)]
        if op.name == "ttng.wait_barrier":
            return [BarrierWait(barrier, ref)]
        match = re.search(r"(?<![\w.])num\s*=\s*(\d+)", op.attributes)
        if match is None:
            raise ParseError(self.module.filename, op.line, f"ttg.async_wait without its count: {ref.text[:80]!r}")
        return [CopyWait(int(match.group(1)), ref)]

    # -- control flow ------------------------------------------------------------------------

    def lower_function(self, function: Function) -> list[Block]:
        values = {}
        for name, type_text in function.arguments:
            if _is_shared_memdesc(type_text, self.module):
                values[name] = _UNKNOWN_REGION
        context = _Context(values, {})
        self._settle_values(function.body, context)
        entry = self.new_block()
        self.lower_region(function.body, context, entry)
        return self.blocks

    def _settle_values(self, region: Region, context: _Context) -> None:
        """Trace descriptor values through loops and branches to a fixed point."""
        for _ in range(8):
            if not self._value_pass(region, context):
                return

    def _value_pass(self, region: Region, context: _Context) -> bool:
        changed = False
        for block in region.blocks:
            for op in block.ops:
                if op.name not in _VALUE_OPS and not op.regions:
                    continue
                before = len(context.values)
                self._define_values(op, context)
                changed |= len(context.values) != before
                changed |= self._flow_values(op, context)
                for inner in op.regions:
                    changed |= self._value_pass(inner, context)
        return changed

    def _flow_values(self, op: Op, context: _Context) -> bool:
        """Descriptor values carried by region arguments, yields and results."""
        changed = False
        if op.name == "scf.for":
            pairs = re.findall(r"(%[\w$.\-]+)\s*=\s*(%[\w$.\-]+)", op.attributes.split("iter_args", 1)[-1]) \
                if "iter_args" in op.attributes else []
            yields = _terminator_operands(op.regions[0], "scf.yield") if op.regions else []
            for i, (argument, initial) in enumerate(pairs):
                sources = [initial] + [y[i] for y in yields if i < len(y)]
                changed |= self._join_into(context, argument, sources)
                if i < len(op.results):
                    changed |= self._join_into(context, op.results[i], [argument] + sources)
        elif op.name == "scf.if":
            for region in op.regions:
                for operands in _terminator_operands(region, "scf.yield"):
                    for result, value in zip(op.results, operands):
                        changed |= self._join_into(context, result, [value])
        elif op.name == "scf.while" and len(op.regions) == 2:
            pairs = re.findall(r"(%[\w$.\-]+)\s*=\s*(%[\w$.\-]+)", op.attributes)
            yields = _terminator_operands(op.regions[1], "scf.yield")
            for i, (argument, initial) in enumerate(pairs):
                changed |= self._join_into(context, argument, [initial] + [y[i] for y in yields if i < len(y)])
            after_args = op.regions[1].blocks[0].arguments
            for operands in _terminator_operands(op.regions[0], "scf.condition"):
                for target in (after_args, op.results):
                    for result, value in zip(target, operands[1:]):
                        changed |= self._join_into(context, result, [value])
        elif op.name == "ttg.warp_specialize":
            for region, header in zip(op.regions[1:], op.region_headers[1:]):
                names = _VALUE.findall(header.split(")")[0]) if "(" in header else region.blocks[0].arguments
                for name, value in zip(names, op.operands):
                    changed |= self._join_into(context, name, [value])
        elif op.name in ("cf.br", "cf.cond_br"):
            changed |= self._branch_values(op, context)
        return changed

    def _branch_values(self, op: Op, context: _Context) -> bool:
        changed = False
        for label, arguments in re.findall(r"\^([\w$.\-]+)(?:\(([^)]*)\))?", op.attributes):
            target = self._block_by_label.get(label)
            if target is None or not arguments:
                continue
            values = _VALUE.findall(arguments.split(":")[0] if ":" in arguments else arguments)
            for name, value in zip(target.arguments, values):
                changed |= self._join_into(context, name, [value])
        return changed

    def lower_region(self, region: Region, context: _Context, entry: int) -> int:
        """Emit ``region`` starting in block ``entry``; return the block where control leaves it."""
        labelled = {b.label: b for b in region.blocks if b.label}
        self._block_by_label = {**self._block_by_label, **labelled}
        if len(region.blocks) == 1:
            return self._lower_ops(region.blocks[0].ops, context, entry)
        # an unstructured (cf) region: one dataflow block per IR block
        starts = {id(b): (entry if i == 0 else self.new_block()) for i, b in enumerate(region.blocks)}
        exit_block = self.new_block()
        for block in region.blocks:
            current = self._lower_ops(block.ops, context, starts[id(block)])
            terminator = block.ops[-1] if block.ops else None
            if terminator is not None and terminator.name in ("cf.br", "cf.cond_br"):
                for label in re.findall(r"\^([\w$.\-]+)", terminator.attributes):
                    if label in labelled:
                        self.edge(current, starts[id(labelled[label])])
            else:
                self.edge(current, exit_block)
        return exit_block

    def _lower_ops(self, ops: list[Op], context: _Context, current: int) -> int:
        for op in ops:
            if op.name in _LOOPS and op.regions:
                header = self.new_block()
                self.edge(current, header)
                body_entry = self.new_block()
                self.edge(header, body_entry)
                body_end = body_entry
                for region in op.regions:
                    body_end = self.lower_region(region, context, body_end)
                self.edge(body_end, header)
                after = self.new_block()
                self.edge(header, after)
                current = after
            elif op.regions:  # scf.if, ttg.warp_specialize, other region ops: each region may run
                after = self.new_block()
                if op.name == "scf.if" and len(op.regions) == 1:
                    self.edge(current, after)
                for region in op.regions:
                    start = self.new_block()
                    self.edge(current, start)
                    self.edge(self.lower_region(region, context, start), after)
                current = after
            elif op.name == "tt.call":
                current = self._inline_call(op, context, current)
            else:
                self.blocks[current].events.extend(self.events(op, context))
        return current

    def _inline_call(self, op: Op, context: _Context, current: int) -> int:
        callee_name = _SYMBOL.search(op.attributes)
        callee = self.module.functions.get(_symbol_name(callee_name)) if callee_name else None
        if callee is None or context.depth > 8:
            return current
        values = {}
        for (name, _), value in zip(callee.arguments, op.operands):
            if value in context.values:
                values[name] = context.values[value]
        frame = re.search(r"allocation\.offset\s*=\s*(\d+)", op.attributes)
        inner = _Context(values, {}, context.depth + 1, context.frame + (int(frame.group(1)) if frame else 0))
        self._settle_values(callee.body, inner)
        start = self.new_block()
        self.edge(current, start)
        end = self.lower_region(callee.body, inner, start)
        returns = _terminator_operands(callee.body, "tt.return")
        for result_index, result in enumerate(op.results):
            sources = [r[result_index] for r in returns if result_index < len(r)]
            refs = set()
            for source in sources:
                if source in inner.values:
                    refs |= inner.values[source].refs
            if refs:
                context.values[result] = TtgirRegion(frozenset(refs))
        return end


def position_of(module: TtgirModule, op: Op) -> str | None:
    """The Python ``file:line:column`` of an op, from its ``loc(...)``."""
    loc = op.loc[4:-1] if op.loc and op.loc.startswith("loc(") else None
    if not loc:
        return None
    reference = _LOC_REF.search(loc)
    position = module.locations.get(loc) or (module.locations.get(reference.group(0)) if reference else None)
    if position is None:
        inline = re.search(r'"([^"]+)":(\d+):(\d+)', loc)
        position = f"{inline.group(1)}:{inline.group(2)}:{inline.group(3)}" if inline else None
    return position


def source_of(module: TtgirModule, op: Op) -> str | None:
    """The Python ``file:line`` of an op."""
    position = position_of(module, op)
    return position.rsplit(":", 1)[0] if position else None


# op -> the class of async operand the PTX front end asks extents for
_EXTENT_CLASSES = {
    "ttng.async_tma_copy_global_to_local": "tma_load", "ttng.async_tma_gather": "tma_load",
    "ttng.async_tma_copy_local_to_global": "tma_store", "ttng.async_tma_reduce": "tma_store",
    "ttng.async_tma_scatter": "tma_store", "ttng.warp_group_dot": "mma", "ttng.tc_gen5_mma": "mma",
    "ttng.tc_gen5_mma_scaled": "mma", "ttng.tmem_copy": "tmem_copy",
}
_MEMDESC = re.compile(r"memdesc<[^>]*>")


def async_operand_extents(text: str) -> dict[tuple[str, str], int]:
    """(Python ``file:line:column`` or ``file:line``, class) -> the most bytes any shared-memory operand of
    an async op of that class at that place covers (the memdesc shape times the element size; for TMA, what
    one message can move). MMA operands are sized one by one: class ``mma:i`` is the i-th shared-memory operand
    (A, then B; B alone when A is in registers or tensor memory).

    The PTX front end uses it to bound a TMA box or an MMA operand, which the PTX does not show: every
    instruction Triton lowers such an op to starts inside the operand and ends before its end. A place
    with an operand of unknown size gets no entry. Only the alias and location definitions and the lines
    of async ops are read, so this is cheap next to a full parse.
    """
    raw_locations, aliases = {}, {}
    ops = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("#"):
            name, _, value = line.partition("=")
            (raw_locations if name.startswith("#loc") else aliases)[name.strip()] = value.strip()
        elif "ttng." in line:
            name = next((n for n in _EXTENT_CLASSES if n + " " in line), None)
            if name is not None:
                ops.append(line)
    module = TtgirModule({}, _resolve_locations(raw_locations), {a for a, v in aliases.items()
                                                                    if "tensor_memory" in v}, "", aliases)
    extents: dict[tuple[str, str], int] = {}
    unknown: set[tuple[str, str]] = set()
    exact: dict[tuple[str, str], int] = {}  # (place, "tma_load=" / "tma_store="): bytes every message surely moves
    inexact: set[tuple[str, str]] = set()
    for line in ops:
        body, loc = _strip_loc(line)
        name = next(n for n in _EXTENT_CLASSES if n + " " in body)
        _, types = _split_top(body, " : ")
        position = position_of(module, Op(name, [], [], "", types or "", 0, line, loc))
        if not position:
            continue
        kind = _EXTENT_CLASSES[name]
        memdescs = [m for m in _MEMDESC.findall(types or "")
                    if not any(a in m for a in module.tensor_memory_aliases) and "tensor_memory" not in m]
        sizes = [_tma_box_bytes(m, module) if kind in ("tma_load", "tma_store") else _memdesc_bytes(m)
                 for m in memdescs]
        if kind == "mma":  # each operand its own size: "mma:0" is the first shared-memory operand, "mma:1" the next
            entries = [(f"mma:{i}", size) for i, size in enumerate(sizes)] or [("mma:0", None)]
        else:
            entries = [(kind, None if not sizes or None in sizes else max(sizes))]
        if kind in ("tma_load", "tma_store"):
            whole = _whole_box_bytes(name, types or "", memdescs, sizes)
            for key in ((position, kind + "="), (position.rsplit(":", 1)[0], kind + "=")):
                if whole is None:
                    inexact.add(key)
                else:
                    exact[key] = min(exact.get(key, whole), whole)
        for entry, size in entries:
            for key in ((position, entry), (position.rsplit(":", 1)[0], entry)):  # by column, and by line
                if size is None:
                    unknown.add(key)
                else:
                    extents[key] = max(extents.get(key, 0), size)
    result = {key: size for key, size in extents.items() if key not in unknown}
    result.update({key: size for key, size in exact.items() if key not in inexact})
    return result


_TENSORDESC_BLOCK = re.compile(r"tensordesc<tensor<([\dx]+)x([a-zA-Z][\w]*)")


def _whole_box_bytes(name: str, types: str, memdescs: list[str], sizes: list) -> int | None:
    """The bytes a plain TMA copy surely moves to or from shared memory, where the TTGIR says exactly: one
    shared-memory operand whose shape and element type are the descriptor's block (the box the tensor map was
    built for), and a box that one message moves whole (``_tma_box_bytes`` equals the buffer's bytes: Triton
    does not split it). Out-of-bounds elements are still read (a store) or zero-filled (a load) in shared
    memory, so every byte of the box is touched. None where any of this does not hold (gather, scatter,
    reduce, a split box)."""
    if name not in ("ttng.async_tma_copy_global_to_local", "ttng.async_tma_copy_local_to_global"):
        return None
    if len(memdescs) != 1 or sizes[0] is None or sizes[0] != _memdesc_bytes(memdescs[0]):
        return None
    block = _TENSORDESC_BLOCK.search(types)
    shape = re.search(r"memdesc<([\dx]+)x([a-zA-Z][\w]*)", memdescs[0])
    if block is None or shape is None or block.groups() != shape.groups():
        return None
    return sizes[0]


_SHARED_ATTRIBUTE = re.compile(r'"?ttg\.shared"?\s*=\s*(\d+)\s*:\s*i32')


def shared_allocation(text: str) -> int | None:
    """The bytes of shared memory a TTGIR module says it allocates (``ttg.shared``, set by Triton's allocation
    pass: present in IR dumped after it, not in ``asm["ttgir"]``), or None."""
    for line in text.splitlines():
        if line.startswith("module"):
            match = _SHARED_ATTRIBUTE.search(line)
            return int(match.group(1)) if match else None
    return None


_TMA_BOX_DIM = 256  # a TMA box has at most 256 elements in each dimension


def _tma_box_bytes(memdesc: str, module: TtgirModule) -> int | None:
    """The most bytes one TMA message can move to or from this buffer: the buffer, capped by the hardware's
    box limits (256 elements per dimension; with a swizzled layout, the swizzle width in the innermost one).
    Triton splits a larger copy into several messages, each starting at its own address."""
    size = _memdesc_bytes(memdesc)
    match = re.search(r"memdesc<([\dx]+)x([a-zA-Z][\w]*)", memdesc)
    bits = re.search(r"(\d+)", match.group(2)) if match else None
    if size is None or not bits:
        return size
    dims = [int(d) for d in match.group(1).split("x")]
    element = max(int(bits.group(1)) // 8, 1)
    layout = next((module.aliases[a] for a in re.findall(r"#[\w]+", memdesc) if a in module.aliases), memdesc)
    swizzle = re.search(r"swizzlingByteWidth\s*=\s*(\d+)", layout)
    inner = int(swizzle.group(1)) // element if swizzle and int(swizzle.group(1)) > 0 else _TMA_BOX_DIM
    transposed = re.search(r"transposed\s*=\s*(true|false)", layout)
    ends = {0 if transposed.group(1) == "true" else len(dims) - 1} if swizzle and transposed else {0, len(dims) - 1}
    best = 0
    for contiguous in ends:  # the contiguous dimension: the last one, or the first if transposed
        count = 1
        for i, dim in enumerate(dims):
            count *= min(dim, inner if i == contiguous else _TMA_BOX_DIM)
        best = max(best, count * element)
    return min(size, best)


def _flag(text: str, name: str) -> bool:
    """A boolean attribute: present as a unit attribute or ``= true`` (``= false`` and absent are false)."""
    if name not in text:
        return False
    match = re.search(rf"(?<![\w.\-\"%#]){re.escape(name)}(?![\w\-\"])(\s*=\s*(\w+))?", text)
    return match is not None and (match.group(2) is None or match.group(2) in ("true", "1"))


def _terminator_operands(region: Region, name: str) -> list[list[str]]:
    found = []
    for block in region.blocks:
        for op in block.ops:
            if op.name == name:
                found.append(op.operands)
            for inner in op.regions if op.name not in ("scf.for", "scf.if", "scf.while") else ():
                found.extend(_terminator_operands(inner, name))
    return found


def _is_shared_memdesc(type_text: str, module: TtgirModule) -> bool:
    if "memdesc<" not in type_text:
        return False
    return not any(alias in type_text for alias in module.tensor_memory_aliases) and \
        "tensor_memory" not in type_text


def entry_functions(module: TtgirModule) -> list[Function]:
    """Kernels: public functions, or every function when none is public."""
    public = [f for f in module.functions.values() if f.public]
    return public or list(module.functions.values())


def function_blocks(module: TtgirModule, function: Function) -> list[Block]:
    return _Lowering(module).lower_function(function)
