"""The bundle file: kernels and their compiled variants as data, written and read back strictly.

A bundle is one uncompressed ("stored") zip archive, written canonically by `write_bundle`:

    manifest.json                   what the bundle holds (below), and every other entry's
                                    SHA-256 and size
    variants/<id>/spec.json         the variant's LaunchSpec (launcher.spec, `to_json`)
    variants/<id>/kernel.cubin      the GPU code
    variants/<id>/kernel.ptx        optional: PTX, for the fence check at load
    variants/<id>/kernel.ttgir      optional: TTGIR, to name the Python line of a finding

The manifest (format "launcher.bundle", version 1; docs/bundles.md documents every field)
lists kernels by qualified name (`module.qualname` of the Triton function) with their Python
parameters, the ids of their variants, the autotune and heuristics layers around them and the
calls a capture saw; and the variants with target architecture, Triton, PTX ISA and ptxas
versions and compile options. A variant's id is a hash of its spec and cubin.

Reading trusts nothing: `read_bundle` refuses, with a `BundleError` naming the entry, a file
that is not a zip, is truncated, holds an entry the manifest does not list (or lacks one it
lists), an entry whose SHA-256 or size differs, an unknown format or version, a manifest or
spec of the wrong shape, a spec that contradicts itself (launcher.spec) or its cubin (the
kernel symbol must be a function of the cubin's ELF symbol table; the cubin's architecture,
parameter sizes and block size must be the spec's), and any archive that is not byte for
byte what `write_bundle` writes for these entries. Reading runs nothing from the file: it is
JSON and bytes, and the cubins are only parsed, never loaded, here. A hash shows that a
bundle is intact, not that it can be trusted: cubins are GPU code.
"""
from __future__ import annotations

import hashlib
import json
import keyword
import math
import re
import struct
import zlib

from launcher import elf
from launcher.codegen import RESERVED
from launcher import spec as S

FORMAT = "launcher.bundle"
VERSION = 1
MANIFEST = "manifest.json"
MAX_BUNDLE_BYTES = 2**31  # no zip64: every offset fits 32 bits
MAX_ENTRIES = 20000
_ENTRY_NAME = re.compile(r"variants/([0-9a-f]{16})/(spec\.json|kernel\.cubin|kernel\.ptx|kernel\.ttgir)\Z")
_FILE_KINDS = {"spec": "spec.json", "cubin": "kernel.cubin", "ptx": "kernel.ptx", "ttgir": "kernel.ttgir"}
_LAYER_KINDS = ("autotune", "heuristics")
_CONFIG_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
MAX_PARAMS = 1024  # Python parameters of one kernel (constexprs included: they cost no kernel parameter bytes)
MAX_LAYERS = 16  # autotune and heuristics layers around one kernel (Triton's stacks hold one to three): each call
                 # reads the parameters once per layer (variants.Chooser.apply_layers)


class BundleError(ValueError):
    """A bundle that cannot be read or written; the message names the bundle and the entry."""

    def __init__(self, message: str, entry: str | None = None):
        super().__init__(message)
        self.entry = entry


# ---- what a bundle holds ----
class _Record:
    """A plain record: fields in __slots__, equal when every field is (no dataclass machinery,
    which would cost every `import` of the bundle path)."""

    __slots__ = ()

    def _values(self):
        return tuple(getattr(self, f) for f in self.__slots__)

    def __eq__(self, other):
        return type(other) is type(self) and self._values() == other._values()

    __hash__ = None

    def __repr__(self):
        return f"{type(self).__name__}(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in self.__slots__) + ")"

    def replace(self, **changes):
        """A copy with some fields changed."""
        return type(self)(**{**{f: getattr(self, f) for f in self.__slots__}, **changes})


class Param(_Record):
    """One parameter of a kernel's Python signature (the Triton function's)."""

    __slots__ = ("name", "constexpr", "keyword_only", "has_default", "default", "annotation", "do_not_specialize",
                 "do_not_specialize_on_alignment")

    def __init__(self, name, constexpr=False, keyword_only=False, has_default=False, default=None, annotation="",
                 do_not_specialize=False, do_not_specialize_on_alignment=False):
        self.name, self.constexpr, self.keyword_only = name, constexpr, keyword_only
        self.has_default = has_default
        self.default = default  # the default as an encoded constant (launcher.spec.encode_constant)
        self.annotation = annotation  # Triton's normalized annotation ("*fp32", "i64", "constexpr", ...)
        self.do_not_specialize, self.do_not_specialize_on_alignment = do_not_specialize, do_not_specialize_on_alignment

    def to_json(self) -> dict:
        out = {"name": self.name, "constexpr": self.constexpr, "keyword_only": self.keyword_only,
               "annotation": self.annotation, "do_not_specialize": self.do_not_specialize,
               "do_not_specialize_on_alignment": self.do_not_specialize_on_alignment}
        if self.has_default:
            out["default"] = self.default
        return out


class Autotune(_Record):
    """A @triton.autotune layer: its key (argument names), its configs ({"kwargs": {name:
    encoded}, "num_warps", "num_stages", "num_ctas", "maxnreg"}) and the config it chose for
    each key seen: (normalized key as JSON data, index into configs)."""

    __slots__ = ("key", "configs", "choices")
    kind = "autotune"

    def __init__(self, key, configs, choices=()):
        self.key, self.configs, self.choices = tuple(key), tuple(configs), tuple(choices)

    def to_json(self) -> dict:
        return {"kind": "autotune", "key": list(self.key), "configs": list(self.configs),
                "choices": [{"key": k, "config": c} for k, c in self.choices]}


class Heuristics(_Record):
    """A @triton.heuristics layer: the constexprs it computes, and what it computed for the
    argument values it read (records of (inputs {name: call form}, values {name: encoded}))."""

    __slots__ = ("names", "records")
    kind = "heuristics"

    def __init__(self, names, records=()):
        self.names, self.records = tuple(names), tuple(records)

    def to_json(self) -> dict:
        return {"kind": "heuristics", "names": list(self.names),
                "records": [{"inputs": i, "values": v} for i, v in self.records]}


class Call(_Record):
    """A call a capture saw: the arguments the caller passed (as call forms, see
    launcher.variants.call_form), the compile options it passed, and the variant it ran."""

    __slots__ = ("args", "options", "variant")

    def __init__(self, args, options, variant):
        self.args, self.options, self.variant = args, options, variant

    def to_json(self) -> dict:
        return {"args": self.args, "options": self.options, "variant": self.variant}


class KernelEntry(_Record):
    """A kernel: its qualified name (unique in the bundle), the Python function's name, module,
    file and line, its parameters (Param), its variants' ids, the layers around it (Autotune,
    Heuristics; outermost first) and the calls a capture recorded (Call)."""

    __slots__ = ("name", "function", "module", "file", "line", "params", "variants", "layers", "calls")

    def __init__(self, name, function, module, file, line, params, variants, layers=(), calls=()):
        self.name, self.function, self.module, self.file, self.line = name, function, module, file, line
        self.params, self.variants = tuple(params), tuple(variants)
        self.layers, self.calls = tuple(layers), tuple(calls)

    def to_json(self) -> dict:
        return {"name": self.name, "function": self.function, "module": self.module, "file": self.file,
                "line": self.line, "params": [p.to_json() for p in self.params], "variants": list(self.variants),
                "layers": [layer.to_json() for layer in self.layers], "calls": [c.to_json() for c in self.calls]}


class VariantEntry(_Record):
    """One compiled variant: its spec and cubin (PTX and TTGIR where kept), its target ("sm_90a",
    the PTX .target), the Triton, PTX ISA ("8.7") and ptxas ("12.8.93") versions, the compile
    options it was built with and its Triton release's defaults of the selectable ones, and the
    fence check's result at export ({"checker": id of the checker's code, "clean": bool})."""

    __slots__ = ("id", "kernel", "spec", "cubin", "ptx", "ttgir", "target", "triton_version", "ptx_isa",
                 "ptxas_version", "options", "default_options", "fence")

    def __init__(self, id, kernel, spec, cubin, ptx=None, ttgir=None, target="", triton_version="", ptx_isa="",
                 ptxas_version="", options=None, default_options=None, fence=None):
        self.id, self.kernel, self.spec, self.cubin = id, kernel, spec, cubin
        self.ptx, self.ttgir, self.target = ptx, ttgir, target
        self.triton_version, self.ptx_isa, self.ptxas_version = triton_version, ptx_isa, ptxas_version
        self.options = {} if options is None else options
        self.default_options = {} if default_options is None else default_options
        self.fence = fence

    @property
    def arch(self) -> int | None:
        return self.spec.arch

    def files(self) -> dict:
        """{kind: entry name} of the files this variant has."""
        out = {"spec": f"variants/{self.id}/spec.json", "cubin": f"variants/{self.id}/kernel.cubin"}
        if self.ptx is not None:
            out["ptx"] = f"variants/{self.id}/kernel.ptx"
        if self.ttgir is not None:
            out["ttgir"] = f"variants/{self.id}/kernel.ttgir"
        return out

    def to_json(self) -> dict:
        out = {"id": self.id, "kernel": self.kernel, "symbol": self.spec.kernel, "arch": self.spec.arch,
               "target": self.target, "triton_version": self.triton_version, "ptx_isa": self.ptx_isa,
               "ptxas_version": self.ptxas_version, "options": self.options,
               "default_options": self.default_options, "files": self.files()}
        if self.fence is not None:
            out["fence"] = self.fence
        return out


class BundleData(_Record):
    """What a bundle holds: kernels by qualified name (in the manifest's order), variants by id."""

    __slots__ = ("kernels", "variants", "writer")

    def __init__(self, kernels, variants, writer=""):
        self.kernels, self.variants, self.writer = kernels, variants, writer


def variant_id(spec: S.LaunchSpec, cubin: bytes) -> str:
    """The id of a variant: what its spec (as the bundle stores it) and cubin hash to."""
    return _variant_id(_dumps(spec.to_json()), cubin)


def _variant_id(spec_json: bytes, cubin: bytes) -> str:
    h = hashlib.sha256(spec_json)
    h.update(b"\0")
    h.update(cubin)
    return h.hexdigest()[:16]


def _dumps(data) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode()


# ---- writing ----
def bundle_bytes(data: BundleData, writer: str) -> bytes:
    """The canonical bytes of a bundle holding `data`."""
    blobs = {}
    for vid in sorted(data.variants):
        v = data.variants[vid]
        if v.id != vid:
            raise BundleError(f"variant {vid!r} is recorded under another id ({v.id!r})")
        files = v.files()
        blobs[files["spec"]] = _dumps(v.spec.to_json())
        blobs[files["cubin"]] = bytes(v.cubin)
        if v.ptx is not None:
            blobs[files["ptx"]] = v.ptx.encode("utf-8")
        if v.ttgir is not None:
            blobs[files["ttgir"]] = v.ttgir.encode("utf-8")
    manifest = {
        "format": FORMAT, "version": VERSION, "writer": writer,
        "kernels": [k.to_json() for k in data.kernels.values()],
        "variants": [data.variants[vid].to_json() for vid in sorted(data.variants)],
        "entries": {name: {"sha256": hashlib.sha256(b).hexdigest(), "size": len(b)} for name, b in sorted(blobs.items())},
    }
    try:
        members = [(MANIFEST, _dumps(manifest))] + sorted(blobs.items())
    except (TypeError, ValueError) as e:
        raise BundleError(f"the manifest is not JSON data: {e}") from None
    return _zip(members)


def write_bundle(path, data: BundleData, writer: str) -> None:
    """Write `data` to `path` (atomically: a temporary file renamed over it)."""
    import os
    import tempfile

    raw = bundle_bytes(data, writer)
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".bundle-", suffix=".tmp")
    except OSError as e:
        raise BundleError(f"bundle {path!r}: cannot be written: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as open() would make it (mkstemp makes it private)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


_DOS_DATE = (0 << 9) | (1 << 5) | 1  # 1980-01-01, the earliest a zip can say
_LOCAL = struct.Struct("<IHHHHHIIIHH")  # a local file header, as written and as read
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")  # a central directory record
_END = struct.Struct("<IHHHHIIH")  # the end-of-archive record (22 bytes)


def _zip(members) -> bytes:
    """A stored zip of (name, bytes) in this order, with fixed metadata: the same entries
    always give the same bytes (no timestamps, no extra fields, no zip64)."""
    return b"".join(_zip_parts(members))


def _zip_parts(members):
    """The pieces of `_zip`'s archive in order (each header, each entry's own bytes, the central
    directory, the end record): a reader compares a file with them without building a second copy."""
    if len(members) > MAX_ENTRIES:
        raise BundleError(f"{len(members)} entries; a bundle holds at most {MAX_ENTRIES}")
    central, offset, central_size = [], 0, 0
    for name, data in members:
        raw_name = name.encode("ascii")
        crc = zlib.crc32(data) & 0xFFFFFFFF
        yield _LOCAL.pack(0x04034B50, 10, 0, 0, 0, _DOS_DATE, crc, len(data), len(data), len(raw_name), 0) + raw_name
        yield data
        record = _CENTRAL.pack(0x02014B50, (3 << 8) | 10, 10, 0, 0, 0, _DOS_DATE, crc, len(data), len(data),
                               len(raw_name), 0, 0, 0, 0, 0o100644 << 16, offset) + raw_name
        central.append(record)
        offset += _LOCAL.size + len(raw_name) + len(data)
        central_size += len(record)
        if offset + central_size >= MAX_BUNDLE_BYTES:
            raise BundleError(f"the bundle would exceed {MAX_BUNDLE_BYTES} bytes")
    yield from central
    yield _END.pack(0x06054B50, 0, 0, len(members), len(members), central_size, offset, 0)


# ---- reading ----
def read_bundle(path) -> BundleData:
    """Read and check a bundle (see the module docstring); BundleError for anything wrong."""
    import os

    from launcher.files import read_regular_file

    if not isinstance(path, (str, bytes, os.PathLike)):
        raise BundleError(f"bundle: expected a path (a str, bytes or os.PathLike), got {type(path).__name__}")
    where = f"bundle {os.fspath(path)!r}"
    try:
        raw = read_regular_file(path, MAX_BUNDLE_BYTES)
    except OSError as e:
        raise BundleError(f"{where}: cannot be read: {e.strerror or e}") from None
    except ValueError as e:  # os.open's answer to a path no file can have ("embedded null byte")
        raise BundleError(f"{where}: cannot be read: not a usable path ({e})") from None
    return parse_bundle(raw, where)


def parse_bundle(raw: bytes, where: str = "bundle") -> BundleData:
    """Check and read the bytes of a bundle."""
    if len(raw) > MAX_BUNDLE_BYTES:
        raise BundleError(f"{where}: larger than {MAX_BUNDLE_BYTES} bytes")
    members = _unzip(raw, where)
    if MANIFEST not in members:
        raise BundleError(f"{where}: no {MANIFEST} (not a launcher bundle?)", MANIFEST)
    manifest = _json(members[MANIFEST], f"{where}: {MANIFEST}", MANIFEST)
    _Reader(where, manifest, members).check_header()
    data = _Reader(where, manifest, members).read()
    order = [MANIFEST] + sorted(n for n in members if n != MANIFEST)
    first, total = _first_difference_at(raw, _zip_parts([(n, members[n]) for n in order]))
    if first is not None:
        text, entry = _first_difference(first, len(raw), total, order, members)
        raise BundleError(f"{where}: the archive is not as launcher writes it{text} (damaged, or edited or re-packed "
                          "after writing?)", entry)
    return data


_EOCD = b"PK\x05\x06"
# Zip compression methods (APPNOTE 4.4.5) a tool that re-packs a bundle may have used: deflate,
# deflate64, bzip2, LZMA, zstd, xz, PPMd. Any other method in a bundle's header is damage.
_COMPRESSION_METHODS = (8, 9, 12, 14, 93, 95, 98)


def _first_difference_at(raw, parts) -> tuple:
    """(the first byte at which `raw` differs from the archive `parts` make, or None where it is that
    archive; the archive's length). Compared in 64 KiB blocks: a large file is neither walked in
    Python nor copied whole."""
    view, pos, first, step = memoryview(raw), 0, None, 1 << 16
    for part in parts:
        if first is None:
            part_view = memoryview(part)
            for i in range(0, len(part), step):
                b = part_view[i:i + step].tobytes()
                a = view[pos + i:pos + i + len(b)].tobytes()
                if a != b:
                    first = pos + i + next((k for k in range(len(b)) if k >= len(a) or a[k] != b[k]), len(b))
                    break
        pos += len(part)
    if first is None and pos != len(raw):
        first = min(pos, len(raw))
    return first, pos


def _first_difference(i, raw_size, size, order, members) -> tuple:
    """Where a file of `raw_size` bytes first differs, at byte `i`, from the canonical archive of
    `size` bytes of the same entries: (text for a message, the entry whose header holds it or None)."""
    pos = 0
    spans = []
    for name in order:
        header = _LOCAL.size + len(name)
        spans.append((pos, pos + header, name, "local header"))
        pos += header + len(members[name])
    for name in order:
        spans.append((pos, pos + _CENTRAL.size + len(name), name, "central directory record"))
        pos += _CENTRAL.size + len(name)
    for start, end, name, what in spans:
        if start <= i < end:
            return f": the {what} of entry {name!r} differs at byte {i}", name
    if pos <= i < min(raw_size, size):
        return f": the end-of-archive record differs at byte {i}", None
    return (f": {raw_size} bytes where launcher writes {size}" if raw_size != size else ""), None


def _central_records(raw: bytes) -> dict:
    """{offset of a local header: (name, flags, method, size, usize, extra length)} as the central directory
    says, as far as it can be read (it is checked as a whole later; here it tells a damaged
    local header from an entry that another tool wrote on purpose)."""
    records = {}
    try:
        *_, count, _cd_size, pos, _comment = _END.unpack_from(raw, len(raw) - _END.size)
        for _ in range(min(count, MAX_ENTRIES + 1)):
            if raw[pos:pos + 4] != b"PK\x01\x02":
                break
            fields = _CENTRAL.unpack_from(raw, pos)
            flags, method, size, usize, name_len, extra_len, comment_len, offset = (
                fields[3], fields[4], fields[8], fields[9], fields[10], fields[11], fields[12], fields[16])
            name = raw[pos + _CENTRAL.size:pos + _CENTRAL.size + name_len].decode("ascii", "replace")
            records[offset] = (name, flags, method, size, usize, extra_len)
            pos += _CENTRAL.size + name_len + extra_len + comment_len
    except struct.error:
        pass
    return records


def _damaged_header(where, pos, name, central, what) -> BundleError:
    """The refusal of an entry whose local header is damaged (it names the entry as the central
    directory does, where that can be read)."""
    record = central.get(pos)
    entry = record[0] if record and (record[0] == MANIFEST or _ENTRY_NAME.match(record[0])) else name
    return BundleError(f"{where}: entry {entry!r}: its zip header (at byte {pos}) is damaged: {what}; the bundle "
                       "is corrupt (copy or export it again)", entry)


def _unzip(raw: bytes, where: str) -> dict:
    """{name: bytes} of the entries of a stored zip, read strictly from the front (the archive
    as a whole is compared with what the writer makes of these entries afterwards, which
    checks everything else: CRCs, the central directory, the end record)."""
    if len(raw) < 22 or raw[-22:-18] != _EOCD:
        raise BundleError(f"{where}: not a readable bundle (truncated, or not a zip: no end-of-archive record)")
    members = {}
    central = _central_records(raw)  # to tell a damaged local header from another tool's entry
    pos = 0
    while raw[pos:pos + 4] == b"PK\x03\x04":
        if pos + _LOCAL.size > len(raw):
            raise BundleError(f"{where}: not a readable bundle (an entry header is cut off: truncated)")
        _sig, version, flags, method, time, date, _crc, size, usize, name_len, extra_len = _LOCAL.unpack_from(raw, pos)
        start = pos + _LOCAL.size + name_len + extra_len
        raw_name = raw[pos + _LOCAL.size:pos + _LOCAL.size + name_len]
        name = raw_name.decode("ascii", "replace")
        valid_name = raw_name.isascii() and (name == MANIFEST or _ENTRY_NAME.match(name) is not None)
        record = central.get(pos)
        if record is not None and record[0] != name and (record[0] == MANIFEST or _ENTRY_NAME.match(record[0])):
            raise _damaged_header(where, pos, name, central, f"it names the entry {name!r}")
        if record is not None and extra_len != record[5] and (version, flags, method, time, date) == (10, 0, 0, 0, _DOS_DATE):
            # a header as launcher writes it (version 1.0, 1980-01-01, stored) but for the length of its
            # extra fields, which the central directory does not share (launcher writes none): damage
            raise _damaged_header(where, pos, name, central, f"extra field length {extra_len} where the central "
                                  f"directory says {record[5]}")
        if not valid_name or method != 0 or size != usize or flags & 0x8:
            if not raw_name.isascii():
                raise BundleError(f"{where}: not a readable bundle (an entry name that is not ASCII)")
            if not valid_name:
                raise BundleError(f"{where}: unexpected entry {name!r}", name)
            # Another tool's compressed or streamed (data descriptor) entry says so in the central
            # directory too; a local header that disagrees with it, or names no compression
            # method, is damage.
            on_purpose = (method in _COMPRESSION_METHODS or (method == 0 and flags & 0x8)) and record is not None \
                and record[1:3] == (flags, method) and (flags & 0x8 or record[3:5] == (size, usize))
            if not on_purpose:
                details = []
                if record is None:
                    details.append("the central directory has no entry that starts there")
                else:
                    for field, local, listed in (("flags", flags, record[1]), ("method", method, record[2]),
                                                 ("size", size, record[3]), ("uncompressed size", usize, record[4])):
                        if local != listed:
                            details.append(f"{field} {local:#x} where the central directory says {listed:#x}")
                if method not in (0, *_COMPRESSION_METHODS):
                    details.append(f"compression method {method} is no zip method")
                raise _damaged_header(where, pos, name, central, "; ".join(details) or "its fields contradict each other")
            raise BundleError(f"{where}: entry {name!r} is compressed or streamed (another tool re-packed the "
                              "bundle?); bundles store entries as they are", name)
        if name in members:
            raise BundleError(f"{where}: entry {name!r} appears twice", name)
        if start + size > len(raw):
            raise BundleError(f"{where}: entry {name!r} runs past the end of the file (truncated)", name)
        members[name] = raw[start:start + size]
        pos = start + size
        if len(members) > MAX_ENTRIES:
            raise BundleError(f"{where}: more than {MAX_ENTRIES} entries")
    if not members:
        raise BundleError(f"{where}: not a readable bundle (no entries where the archive starts)")
    return members


def _json(raw: bytes, where: str, entry: str):
    def no_constants(name):
        raise ValueError(f"{name} is not JSON")

    def finite(text):  # 1e400 would read as inf: a number no writer wrote
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(f"the number {text[:40]} is not finite")
        return value

    def no_duplicates(pairs):  # {"version": 2, "version": 1} is not read as either
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise ValueError(f"the key {next(k for k in keys if keys.count(k) > 1)!r} appears twice in one object")
        return dict(pairs)

    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=no_constants, parse_float=finite,
                          object_pairs_hook=no_duplicates)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise BundleError(f"{where}: not valid JSON ({e})", entry) from None
    if _deeper_than(data, _MAX_DEPTH):  # what reads it (types, constants) recurses: no RecursionError later
        raise BundleError(f"{where}: nested more than {_MAX_DEPTH} levels deep", entry)
    return data


_MAX_DEPTH = 64  # JSON nesting a bundle may have: types and constants (tuples of tuples) far below it


def _deeper_than(data, limit: int) -> bool:
    """Whether lists and objects nest more than `limit` levels deep in `data` (iteratively: any
    depth json.loads accepted)."""
    todo = [(data, 1)]
    while todo:
        value, depth = todo.pop()
        if isinstance(value, (list, dict)):
            if depth > limit:
                return True
            todo.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))
    return False


def _is_identifier(name) -> bool:
    """A usable Python parameter name that generated code may bind (none starts with
    codegen.RESERVED, the prefix of the names it gives itself)."""
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name) \
        and name != "__debug__" and not name.startswith(RESERVED) and name.isascii()


class _Reader:
    """Reads the manifest's fields, naming the entry and the field in every refusal."""

    def __init__(self, where, manifest, members):
        self.where, self.manifest, self.members = where, manifest, members

    def fail(self, what, entry=MANIFEST):
        raise BundleError(f"{self.where}: {entry}: {what}", entry)

    def get(self, obj, key, kind, what, entry=MANIFEST, optional=False):
        if not isinstance(obj, dict):
            self.fail(f"{what}: expected an object", entry)
        if key not in obj:
            if optional:
                return None
            self.fail(f"{what}: missing field {key!r}", entry)
        value = obj[key]
        ok = {int: lambda v: type(v) is int, bool: lambda v: type(v) is bool, str: lambda v: isinstance(v, str),
              list: lambda v: isinstance(v, list), dict: lambda v: isinstance(v, dict),
              object: lambda v: True}[kind](value)
        if optional and value is None:
            return None
        if not ok:
            name = {int: "an integer", bool: "true or false", str: "a string", list: "a list", dict: "an object"}[kind]
            self.fail(f"{what}.{key}: expected {name}, got {_short(value)}", entry)
        return value

    def text(self, obj, key, what, entry=MANIFEST, optional=False):
        """A string field that inspect or an error message prints: printable text only (no escape
        sequences, line breaks or lone surrogates: one rule for every such field)."""
        value = self.get(obj, key, str, what, entry, optional)
        if value is not None:
            check_text(value, f"{what}.{key}", lambda message: self.fail(message, entry))
        return value

    def constant(self, value, what, entry=MANIFEST):
        """`value` (an encoded constant, a compile option, a call form), where it nests no deeper
        than constants may (launcher.spec.check_data_nesting, the one rule)."""
        try:
            S.check_data_nesting(value, what)
        except S.SpecError as e:
            problem = str(e)
        else:
            return value
        self.fail(problem, entry)  # outside the except: the refusal is not chained to the SpecError

    def check_header(self):
        m = self.manifest
        if not isinstance(m, dict):
            self.fail("expected a JSON object")
        if m.get("format") != FORMAT:
            self.fail(f"format is {_short(m.get('format'))}, expected {FORMAT!r} (not a launcher bundle)")
        if type(m.get("version")) is not int or m.get("version") != VERSION:  # not true, not 1.0
            self.fail(f"format version {_short(m.get('version'))} is not one this launcher reads (it reads "
                      f"version {VERSION}); use the launcher release that wrote it, or export the kernels again")

    def read(self) -> BundleData:
        m = self.manifest
        writer = self.text(m, "writer", "manifest")
        entries = self.get(m, "entries", dict, "manifest")
        listed = set(entries)
        present = set(self.members) - {MANIFEST}
        for name in sorted(present - listed):
            self.fail(f"the archive holds {name!r}, which the manifest does not list", name)
        for name in sorted(listed - present):
            self.fail(f"the manifest lists {name!r}, which the archive lacks (dropped?)", name)
        for name in sorted(listed):
            e = entries[name]
            digest = self.get(e, "sha256", str, f"entries[{name!r}]")
            size = self.get(e, "size", int, f"entries[{name!r}]")
            blob = self.members[name]
            if size != len(blob):
                self.fail(f"{len(blob)} bytes, the manifest says {size} (truncated or tampered)", name)
            if hashlib.sha256(blob).hexdigest() != digest:
                self.fail("SHA-256 mismatch: the entry is not what was written (tampered or damaged)", name)
        variants = {}
        for i, v in enumerate(self.get(m, "variants", list, "manifest")):
            entry = self.variant(v, f"variants[{i}]")
            if entry.id in variants:
                self.fail(f"variants[{i}]: variant {entry.id!r} appears twice")
            variants[entry.id] = entry
        used = {name for v in variants.values() for name in v.files().values()}
        for name in sorted(listed - used):
            self.fail("the entry belongs to no variant of the manifest", name)
        kernels = {}
        owner = {}
        for i, k in enumerate(self.get(m, "kernels", list, "manifest")):
            entry = self.kernel(k, f"kernels[{i}]", variants)
            if entry.name in kernels:
                self.fail(f"kernels[{i}]: the qualified name {entry.name!r} appears twice")
            for vid in entry.variants:
                if vid in owner:
                    self.fail(f"kernels[{i}]: variant {vid!r} belongs to {owner[vid]!r} too")
                owner[vid] = entry.name
            kernels[entry.name] = entry
        for vid, v in variants.items():
            if owner.get(vid) != v.kernel:
                self.fail(f"variant {vid!r} names kernel {v.kernel!r}, which does not list it")
        return BundleData(kernels, variants, writer)

    # -- variants --
    def variant(self, v, what) -> VariantEntry:
        vid = self.get(v, "id", str, what)
        if not re.fullmatch(r"[0-9a-f]{16}", vid):
            self.fail(f"{what}.id: {vid!r} is not a variant id")
        what = f"variant {vid}"
        files = self.get(v, "files", dict, what)
        for kind, name in files.items():
            if kind not in _FILE_KINDS or name != f"variants/{vid}/{_FILE_KINDS[kind]}":
                self.fail(f"{what}.files: {kind!r}: {_short(name)} is not this variant's {kind} entry")
        for kind in ("spec", "cubin"):
            if kind not in files:
                self.fail(f"{what}.files: no {kind}")
        spec_name, cubin_name = files["spec"], files["cubin"]
        for name in files.values():
            if name not in self.members:
                self.fail(f"{what}: its entry {name!r} is missing from the archive", name)
        try:
            spec = S.LaunchSpec.from_json(_json(self.members[spec_name], f"{self.where}: {spec_name}", spec_name))
        except S.SpecError as e:
            self.fail(f"not a valid launch spec: {e}", spec_name)
        if spec.aligned is None or spec.constants is None:
            self.fail("the spec does not record what the compiler assumed about the arguments", spec_name)
        cubin = self.members[cubin_name]
        texts = {}
        for kind in ("ptx", "ttgir"):
            if kind in files:
                try:
                    texts[kind] = self.members[files[kind]].decode("utf-8")
                except UnicodeDecodeError:
                    self.fail("not UTF-8 text", files[kind])
        entry = VariantEntry(
            id=vid, kernel=self.get(v, "kernel", str, what), spec=spec, cubin=cubin,
            ptx=texts.get("ptx"), ttgir=texts.get("ttgir"),
            target=self.text(v, "target", what), triton_version=self.text(v, "triton_version", what),
            ptx_isa=self.text(v, "ptx_isa", what), ptxas_version=self.text(v, "ptxas_version", what),
            options=self.get(v, "options", dict, what), default_options=self.get(v, "default_options", dict, what),
            fence=self.fence(v, what))
        if self.get(v, "symbol", str, what) != spec.kernel:
            self.fail(f"{what}.symbol: {_short(v['symbol'])}, but its spec launches {spec.kernel!r}")
        if self.get(v, "arch", int, what) != spec.arch:
            self.fail(f"{what}.arch: {_short(v['arch'])}, but its spec targets {spec.arch!r}")
        for field in ("options", "default_options"):
            for key, value in getattr(entry, field).items():
                if not _is_identifier(key):  # a keyword a call passes; messages print it
                    self.fail(f"{what}.{field}: {_short(key)} is not a compile option name")
                self.constant(value, f"{what}.{field}.{key}")
        for key, value in entry.options.items():
            if key in ("num_warps", "num_ctas") and value != getattr(spec, key):
                self.fail(f"{what}.options.{key}: {_short(value)}, but its spec says {getattr(spec, key)}")
        if _variant_id(self.members[spec_name], cubin) != vid:
            self.fail(f"{what}: the id is not the hash of its spec and cubin", spec_name)
        self.check_cubin(spec, cubin, cubin_name)
        if entry.ptx is not None:
            problem = ptx_param_problem(spec, entry.ptx)
            if problem:
                self.fail(f"the spec contradicts the kernel's PTX: {problem}", files["ptx"])
        return entry

    def fence(self, v, what):
        record = self.get(v, "fence", dict, what, optional=True)
        if record is not None:
            self.text(record, "checker", f"{what}.fence")
            self.get(record, "clean", bool, f"{what}.fence")
            if set(record) != {"checker", "clean"}:
                self.fail(f"{what}.fence: expected the fields checker and clean")
        return record

    def check_cubin(self, spec, cubin, name):
        try:
            info = elf.read_cubin(cubin)
        except elf.ElfError as e:
            self.fail(f"not a cubin: {e}", name)
        if spec.kernel not in info.functions:
            known = ", ".join(sorted(info.functions)[:8]) or "none"
            if len(info.functions) > 8:
                known += f", ... ({len(info.functions)} in all)"
            self.fail(f"the spec launches {spec.kernel!r}, which is not a function of the cubin's ELF symbol table "
                      f"(its functions: {known})", name)
        if spec.arch is None:  # a bundle chooses among its variants by the device's architecture
            self.fail(f"the spec names no architecture (target.arch); the cubin is for sm_{info.arch}", name)
        if info.arch != spec.arch:
            self.fail(f"the cubin is for sm_{info.arch}, the spec says sm_{spec.arch}", name)
        kernel = info.kernels.get(spec.kernel)
        if kernel is None:  # ptxas writes one for every kernel: without it the parameters cannot be held to the spec
            self.fail(f"the cubin has no .nv.info.{spec.kernel} section, so the sizes of its kernel's parameters "
                      "cannot be checked against the spec", name)
        sizes = [p.size for p in spec.params]
        if kernel.param_sizes != sizes:
            self.fail(f"the cubin's kernel {spec.kernel!r} takes parameters of {kernel.param_sizes} bytes, "
                      f"the spec packs {sizes}", name)
        threads = spec.num_warps * spec.warp_size  # without the record (Triton always writes .reqntid) the driver checks
        if kernel.reqntid is not None and kernel.reqntid[0] * kernel.reqntid[1] * kernel.reqntid[2] != threads:
            self.fail(f"the cubin's kernel requires blocks of {kernel.reqntid} threads, the spec launches "
                      f"{spec.num_warps} warps of {spec.warp_size}", name)

    # -- kernels --
    def kernel(self, k, what, variants) -> KernelEntry:
        name = self.text(k, "name", what)
        what = f"kernel {name!r}"
        function = self.get(k, "function", str, what)
        if not _is_identifier(function):
            self.fail(f"{what}.function: {_short(function)} is not a Python name")
        module = self.text(k, "module", what)
        file = self.text(k, "file", what, optional=True)
        line = self.get(k, "line", int, what, optional=True)
        params = []
        listed = self.get(k, "params", list, what)
        if len(listed) > MAX_PARAMS:
            self.fail(f"{what}.params: {len(listed)} parameters; a kernel may have at most {MAX_PARAMS}")
        for i, p in enumerate(listed):
            params.append(self.param(p, f"{what}.params[{i}]"))
        names = tuple(p.name for p in params)
        known = frozenset(names)  # built once: every check of a name below is one lookup
        if len(known) != len(names):
            self.fail(f"{what}.params: a name appears twice in {_short(list(names))}")
        if any(not p.keyword_only and q.keyword_only for p, q in zip(params[1:], params)):
            self.fail(f"{what}.params: a positional parameter follows a keyword-only one")
        vids = self.get(k, "variants", list, what)
        if not vids:
            self.fail(f"{what}.variants: a kernel needs at least one variant")
        for vid in vids:
            if not isinstance(vid, str) or vid not in variants:
                self.fail(f"{what}.variants: {_short(vid)} is not a variant of this bundle")
            spec = variants[vid].spec
            if spec.arg_names != names:
                self.fail(f"{what}: variant {vid} takes arguments {_short(list(spec.arg_names))}, the kernel's "
                          f"parameters are {_short(list(names))}")
            for i, (param, arg) in enumerate(zip(params, spec.args)):
                if param.constexpr and arg.kind != "constexpr":
                    self.fail(f"{what}: parameter {param.name!r} is a constexpr, variant {vid} passes it as {arg.type!r}")
        listed = self.get(k, "layers", list, what)
        if len(listed) > MAX_LAYERS:
            self.fail(f"{what}.layers: {len(listed)} layers; a kernel may have at most {MAX_LAYERS}")
        layers = tuple(self.layer(layer, f"{what}.layers[{i}]", known) for i, layer in enumerate(listed))
        calls = []
        for i, c in enumerate(self.get(k, "calls", list, what)):
            w = f"{what}.calls[{i}]"
            args = self.get(c, "args", dict, w)
            unknown = [n for n in args if n not in known]
            if unknown:
                self.fail(f"{w}.args: {sorted(unknown)} are not parameters of the kernel")
            vid = self.get(c, "variant", str, w)
            if vid not in vids:
                self.fail(f"{w}.variant: {vid!r} is not a variant of this kernel")
            self.constant(args, f"{w}.args")
            calls.append(Call(args, self.constant(self.get(c, "options", dict, w), f"{w}.options"), vid))
        return KernelEntry(name, function, module, file, line, tuple(params), tuple(vids), layers, tuple(calls))

    def param(self, p, what) -> Param:
        name = self.get(p, "name", str, what)
        if not _is_identifier(name):
            self.fail(f"{what}.name: {_short(name)} is not a usable Python parameter name")
        flags = {key: self.get(p, key, bool, what) for key in
                 ("constexpr", "keyword_only", "do_not_specialize", "do_not_specialize_on_alignment")}
        has_default = isinstance(p, dict) and "default" in p
        if has_default:
            self.constant(p["default"], f"{what}.default")
        return Param(name, has_default=has_default, default=p.get("default") if has_default else None,
                     annotation=self.text(p, "annotation", what), **flags)

    def layer(self, layer, what, names: frozenset):
        kind = self.get(layer, "kind", str, what)
        if kind == "autotune":
            key = self.get(layer, "key", list, what)
            if not all(isinstance(k, str) and k in names for k in key):
                self.fail(f"{what}.key: {_short(key)} are not all parameter names")
            configs = self.get(layer, "configs", list, what)
            if not configs:
                self.fail(f"{what}.configs: no configs")
            for i, c in enumerate(configs):
                kwargs = self.constant(self.get(c, "kwargs", dict, f"{what}.configs[{i}]"), f"{what}.configs[{i}].kwargs")
                for n in kwargs:
                    if n not in names:
                        self.fail(f"{what}.configs[{i}].kwargs: {n!r} is not a parameter of the kernel")
                for option in _CONFIG_OPTIONS:
                    value = self.get(c, option, int, f"{what}.configs[{i}]", optional=True)
                    if value is not None and not 0 < value < 1 << 16:
                        self.fail(f"{what}.configs[{i}].{option}: {value} is out of range")
                extra = set(c) - {"kwargs", *_CONFIG_OPTIONS}
                if extra:
                    self.fail(f"{what}.configs[{i}]: unknown fields {sorted(extra)}")
            choices = []
            for i, ch in enumerate(self.get(layer, "choices", list, what)):
                index = self.get(ch, "config", int, f"{what}.choices[{i}]")
                if not 0 <= index < len(configs):
                    self.fail(f"{what}.choices[{i}].config: {index} is not a config index")
                key_data = self.get(ch, "key", dict, f"{what}.choices[{i}]")
                for j, form in enumerate(self.get(key_data, "values", list, f"{what}.choices[{i}].key")):
                    self.constant(form, f"{what}.choices[{i}].key.values[{j}]")
                dtypes = self.get(key_data, "dtypes", list, f"{what}.choices[{i}].key")
                if not all(isinstance(d, str) for d in dtypes):
                    self.fail(f"{what}.choices[{i}].key.dtypes: expected dtype names, got {_short(dtypes)}")
                for j, dtype in enumerate(dtypes):
                    check_text(dtype, f"{what}.choices[{i}].key.dtypes[{j}]", self.fail)
                choices.append((key_data, index))
            return Autotune(tuple(key), tuple(configs), tuple(choices))
        if kind == "heuristics":
            hnames = self.get(layer, "names", list, what)
            if not hnames or not all(isinstance(n, str) and n in names for n in hnames):
                self.fail(f"{what}.names: {_short(hnames)} are not all parameter names")
            computed = frozenset(hnames)
            if len(computed) != len(hnames):
                self.fail(f"{what}.names: a name appears twice in {_short(hnames)}")
            records = []
            for i, r in enumerate(self.get(layer, "records", list, what)):
                inputs = self.get(r, "inputs", dict, f"{what}.records[{i}]")
                values = self.get(r, "values", dict, f"{what}.records[{i}]")
                self.constant(inputs, f"{what}.records[{i}].inputs")
                self.constant(values, f"{what}.records[{i}].values")
                if not all(n in names for n in inputs) or values.keys() != computed:
                    self.fail(f"{what}.records[{i}]: inputs must be parameters and values must be {_short(hnames)}")
                records.append((inputs, values))
            return Heuristics(tuple(hnames), tuple(records))
        self.fail(f"{what}.kind: {_short(kind)} is not one of {', '.join(_LAYER_KINDS)}")


# How Triton (3.6 to 3.9) declares each kind of kernel parameter in PTX: ints of every width as
# .u8/.u16/.u32/.u64 (i1 as .u8), fp32 and fp64 as .f32/.f64, fp16 and bf16 as 2-byte .b8
# arrays, pointers as .u64 (.ptr .global), TMA descriptors as 128-byte .b8 arrays. A spec type is
# held to the class of its declaration and its size: an fp32 parameter retyped i32 (same size)
# would pack an int's bytes where the kernel reads a float.
_PTX_TYPE = re.compile(r"\.([usbf])(8|16|32|64)")
_PTX_NAME = re.compile(r"[\w$]+(?:\[(\d{1,6})\])?")
_PTX_OTHER = frozenset((".align", ".ptr", ".global", ".const", ".shared", ".local"))


def _ptx_decl(decl: str):
    """(class letter, bits, array count or 0) of one `.param` declaration, or None: read token by
    token (a regular expression over a crafted declaration could backtrack)."""
    tokens = decl.split()
    if len(tokens) < 3 or tokens[0] != ".param":
        return None
    name = _PTX_NAME.fullmatch(tokens[-1])
    types = [t for t in tokens[1:-1] if _PTX_TYPE.fullmatch(t)]
    if name is None or len(types) != 1 or not all(t in _PTX_OTHER or t.isdigit() or t == types[0]
                                                  for t in tokens[1:-1]):
        return None
    kind, bits = _PTX_TYPE.fullmatch(types[0]).groups()
    return kind, int(bits), int(name.group(1) or 0)


def _ptx_accepts(param, kind, bits, count) -> bool:
    size = bits // 8 * (count or 1)
    if param.kind == S.POINTER:
        return kind in "usb" and size == 8 and not count
    if param.kind == S.TENSORMAP:
        return kind == "b" and size == 128 and bool(count)
    if param.type in S.INT_RANGES:
        return kind in "usb" and size == param.size and not count
    if param.type in ("fp16", "bf16"):
        return size == 2 and (kind in "bf")
    return kind in "bf" and size == param.size and not count  # fp32, fp64


def ptx_param_problem(spec, ptx: str):
    """Where the spec's parameters contradict the `.param` list of the kernel's `.entry` in its
    PTX (count, or a type's class or size: Triton's declarations, above), in words; None where
    they agree. Linear in the PTX's length."""
    m = re.search(r"\.entry\s+" + re.escape(spec.kernel) + r"\s*\(", ptx)
    if m is None:
        return f"it has no .entry {spec.kernel}"
    end = ptx.find(")", m.end())
    if end < 0:
        return f"the parameter list of .entry {spec.kernel} does not end"
    body = ptx[m.end():end]
    decls = [d.strip() for d in body.split(",")] if body.strip() else []
    if len(decls) != len(spec.params):
        return f".entry {spec.kernel} declares {len(decls)} parameters, the spec packs {len(spec.params)}"
    for i, (param, decl) in enumerate(zip(spec.params, decls)):
        d = _ptx_decl(decl)
        if d is None or not _ptx_accepts(param, *d):
            shown = " ".join(decl.split())
            return (f"parameter {i} ({spec.param_name(i)}) is {param.type} in the spec, declared "
                    f"{shown[:80]!r} in the PTX")
    return None


def check_text(text: str, what: str, fail) -> None:
    """The one rule for text a bundle holds that inspect or a message prints (launcher.spec's
    check_text): printable characters only; fail(message) where it is not."""
    try:
        S.check_text(text, what)
        return
    except S.SpecError as e:
        problem = str(e)
    fail(problem)  # outside the except: the refusal is not chained to the SpecError


_short = S.short_repr
