"""What a cubin says about itself, read on the CPU: its target, its kernels and their parameters.

A cubin is an ELF64 file (little-endian, machine EM_CUDA = 190). This reader takes what a
bundle needs to hold a LaunchSpec against its cubin, and trusts none of the bytes:
- the SM architecture, from the ELF header flags (ABI version 8 and later keep it in bits
  8-15, older ones in bits 0-7);
- the function symbols of the symbol table (the kernels' names);
- for each kernel, from its `.nv.info.<name>` section: the size of every parameter, in
  parameter order (EIATTR_KPARAM_INFO records), and the block size it requires, where ptxas
  recorded one (EIATTR_REQNTID).

Every offset and size is bounds-checked; a malformed file raises `ElfError` naming what is
wrong. The work is bounded by the file's size: the sections walked record by record (symbol
tables, the kernels' .nv.info sections) may not overlap or repeat one another, and the names
read (section and function names, each read once per string table and offset) may not take
more bytes in all than the file has. Nothing here runs code from the file or touches a GPU.
"""
from __future__ import annotations

import struct

EM_CUDA = 190
_SHT_SYMTAB = 2
_STT_FUNC = 2
# .nv.info record formats and the attributes read here.
_EIFMT_NVAL, _EIFMT_BVAL, _EIFMT_HVAL, _EIFMT_SVAL = 1, 2, 3, 4
_EIATTR_KPARAM_INFO = 0x17
_EIATTR_REQNTID = 0x10
_MAX_SECTIONS = 1 << 16
_MAX_SYMBOLS = 1 << 20
_MAX_NAME = 4096  # bytes of one section or symbol name
_MAX_NAME_BYTES = 1 << 24  # bytes of the distinct function names of a file, in all


class ElfError(ValueError):
    """The bytes are not a well-formed CUDA ELF (cubin); the message says where."""


class KernelInfo:
    __slots__ = ("param_sizes", "reqntid")

    def __init__(self, param_sizes, reqntid=None):
        self.param_sizes = param_sizes  # bytes of each parameter, in order
        self.reqntid = reqntid  # (x, y, z) threads per block ptxas was told, if recorded


class CubinInfo:
    __slots__ = ("arch", "abi_version", "functions", "kernels")

    def __init__(self, arch, abi_version, functions, kernels):
        self.arch = arch  # e.g. 90, 100
        self.abi_version = abi_version
        self.functions = functions  # frozenset of the names of the function symbols
        self.kernels = kernels  # name -> KernelInfo, for the functions with a .nv.info.<name> section


def _unpack(fmt, data, offset, what):
    size = struct.calcsize(fmt)
    if offset < 0 or offset + size > len(data):
        raise ElfError(f"{what} at offset {offset} lies outside the file ({len(data)} bytes)")
    return struct.unpack_from(fmt, data, offset)


def _bounds(data, offset, size, what) -> None:
    if offset < 0 or size < 0 or offset + size > len(data):
        raise ElfError(f"{what} (offset {offset}, {size} bytes) lies outside the file ({len(data)} bytes)")


def _slice(data, offset, size, what):
    _bounds(data, offset, size, what)
    return data[offset:offset + size]


class _Names:
    """The names of one file's string tables, each (table, offset) read once, the bytes read in
    all bounded by the file's size (names that share bytes, read again and again from many
    offsets, would otherwise cost up to _MAX_NAME bytes each)."""

    def __init__(self, budget: int):
        self.budget = budget
        self.read = {}  # (table offset, table size, name offset) -> name

    def get(self, table: bytes, where: tuple, offset: int, what: str) -> str:
        key = where + (offset,)
        name = self.read.get(key)
        if name is None:
            name = self.read[key] = self._read(table, offset, what)
        return name

    def _read(self, table, offset, what) -> str:
        if not 0 <= offset < len(table):
            raise ElfError(f"{what}: string offset {offset} is outside its string table")
        end = table.find(b"\0", offset, offset + min(_MAX_NAME, self.budget) + 1)  # bounded: no scan past the budget
        if end < 0:
            if table.find(b"\0", offset, offset + _MAX_NAME + 1) >= 0:
                raise self._spent()
            raise ElfError(f"{what}: unterminated string" if table.find(b"\0", offset) < 0 else
                           f"{what}: a name longer than {_MAX_NAME} bytes")
        self.budget -= end - offset + 1
        if self.budget < 0:
            raise self._spent()
        try:
            return table[offset:end].decode("ascii")
        except UnicodeDecodeError:
            raise ElfError(f"{what}: a name that is not ASCII") from None

    @staticmethod
    def _spent() -> ElfError:
        return ElfError("the section and symbol names take more bytes in all than the file has "
                        "(string table entries read over and over: a crafted file)")


def _check_disjoint(walked) -> None:
    """The sections walked record by record ((offset, size, what), each inside the file) must
    neither overlap nor repeat: each byte of the file is walked at most once."""
    spans = sorted((off, size, what) for off, size, what in walked if size)
    for (a_off, a_size, a_what), (b_off, _b_size, b_what) in zip(spans, spans[1:]):
        if b_off < a_off + a_size:
            raise ElfError(f"{b_what} overlaps {a_what} (bytes {b_off} to {a_off + a_size}): sections that "
                           "share bytes would be read again for each (a crafted file)")


def read_cubin(data: bytes) -> CubinInfo:
    """The architecture, function symbols and per-kernel parameter sizes of a cubin."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ElfError(f"expected the bytes of a cubin, got {type(data).__name__}")
    data = bytes(data)
    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise ElfError("not an ELF file (no \\x7fELF magic)")
    if data[4] != 2 or data[5] != 1:
        raise ElfError("not a 64-bit little-endian ELF file")
    abi_version = data[8]
    (machine,) = _unpack("<H", data, 18, "e_machine")
    if machine != EM_CUDA:
        raise ElfError(f"ELF machine {machine} is not EM_CUDA ({EM_CUDA}): not a cubin")
    (flags,) = _unpack("<I", data, 48, "e_flags")
    arch = (flags >> 8) & 0xFF if abi_version >= 8 else flags & 0xFF
    shoff, = _unpack("<Q", data, 0x28, "e_shoff")
    shentsize, shnum, shstrndx = _unpack("<HHH", data, 0x3A, "section header counts")
    if shnum == 0 or shnum > _MAX_SECTIONS:
        raise ElfError(f"{shnum} sections")
    if shentsize != 64:
        raise ElfError(f"section header entry size {shentsize}, expected 64")
    sections = [_unpack("<IIQQQQIIQQ", data, shoff + i * 64, f"section header {i}") for i in range(shnum)]
    if shstrndx >= shnum:
        raise ElfError(f"section name table index {shstrndx} is out of range")
    names_sec = sections[shstrndx]
    names = _slice(data, names_sec[4], names_sec[5], "section name table")
    strings = _Names(len(data))
    by_name = {}
    for i, s in enumerate(sections):
        by_name[strings.get(names, (names_sec[4], names_sec[5]), s[0], f"section {i} name")] = s
    functions = set()
    tables = []  # (index, section) of the symbol tables, checked before any is read
    symbols = name_bytes = 0  # read across every symbol table: the bounds hold for the whole file
    for i, s in enumerate(sections):
        if s[1] != _SHT_SYMTAB:
            continue
        entsize = s[9]
        if entsize != 24:
            raise ElfError(f"symbol table entry size {entsize}, expected 24")
        if s[5] % 24:
            raise ElfError(f"symbol table {i} of {s[5]} bytes, not a whole number of 24-byte entries")
        symbols += s[5] // 24
        if symbols > _MAX_SYMBOLS:
            raise ElfError(f"symbol tables of more than {_MAX_SYMBOLS} symbols in all")
        _bounds(data, s[4], s[5], "symbol table")
        if s[6] >= shnum:
            raise ElfError(f"symbol table links string table {s[6]}, out of range")
        if s[5]:
            tables.append((i, s))
    _check_disjoint([(s[4], s[5], f"symbol table {i}") for i, s in tables])  # no table is walked twice
    string_tables = {}  # (offset, size) -> bytes: tables that share a string table share one copy
    for i, s in tables:
        table = _slice(data, s[4], s[5], "symbol table")
        strtab_sec = sections[s[6]]
        where = (strtab_sec[4], strtab_sec[5])
        strtab = string_tables.get(where)
        if strtab is None:
            strtab = string_tables[where] = _slice(data, strtab_sec[4], strtab_sec[5], "symbol string table")
        seen = set()  # the name offsets read from this table: each is decoded once
        for j in range(len(table) // 24):
            st_name, st_info, _other, _shndx, _value, _size = struct.unpack_from("<IBBHQQ", table, j * 24)
            if st_info & 0xF == _STT_FUNC and st_name not in seen:
                seen.add(st_name)
                name = strings.get(strtab, where, st_name, f"symbol {j} name")
                if name not in functions:
                    name_bytes += len(name)
                    if name_bytes > _MAX_NAME_BYTES:
                        raise ElfError(f"function names of more than {_MAX_NAME_BYTES} bytes in all")
                    functions.add(name)
    walked = [(s[4], s[5], f"symbol table {i}") for i, s in tables]
    infos = []
    for name in sorted(functions):
        s = by_name.get(".nv.info." + name)
        if s is not None:
            _bounds(data, s[4], s[5], f".nv.info.{name}")
            infos.append((name, s))
            walked.append((s[4], s[5], f"section .nv.info.{name}"))
    _check_disjoint(walked)  # before any is walked: each byte of the file is walked at most once
    kernels = {name: _kernel_info(_slice(data, s[4], s[5], f".nv.info.{name}"), name) for name, s in infos}
    return CubinInfo(arch, abi_version, frozenset(functions), kernels)


def _kernel_info(info: bytes, name: str) -> KernelInfo:
    params = {}
    reqntid = None
    pos = 0
    while pos + 4 <= len(info):
        fmt, attr, value = struct.unpack_from("<BBH", info, pos)
        pos += 4
        if fmt == _EIFMT_SVAL:
            if pos + value > len(info):
                raise ElfError(f".nv.info.{name}: a record of {value} bytes runs past the section")
            body = info[pos:pos + value]
            pos += value
            if attr == _EIATTR_KPARAM_INFO:
                if len(body) < 12:
                    raise ElfError(f".nv.info.{name}: a parameter record of {len(body)} bytes")
                _index, ordinal, _offset, bits = struct.unpack_from("<IHHI", body)
                if ordinal in params:
                    raise ElfError(f".nv.info.{name}: parameter {ordinal} is described twice")
                params[ordinal] = (bits >> 18) & 0x3FFF
            elif attr == _EIATTR_REQNTID and len(body) >= 12:
                reqntid = struct.unpack_from("<III", body)
        elif fmt not in (_EIFMT_NVAL, _EIFMT_BVAL, _EIFMT_HVAL):
            raise ElfError(f".nv.info.{name}: unknown record format {fmt}")
    if sorted(params) != list(range(len(params))):
        raise ElfError(f".nv.info.{name}: parameter ordinals {sorted(params)} are not 0..{len(params) - 1}")
    return KernelInfo([params[i] for i in range(len(params))], reqntid)
