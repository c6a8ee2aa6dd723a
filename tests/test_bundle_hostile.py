"""Bundles a hostile writer crafts, each passing every hash: refused at load with a BundleError
(and `python -m launcher inspect` with one line and exit status 2), in time bounded by the
file's size; calls whose arguments are out of range refused before the driver is asked anything."""
import json
import re
import struct
import subprocess
import sys

import pytest

import bundle_cases as BC
import cpu_corpus as C
import launcher
from launcher import BundleError
from launcher import bundle_format as BF
from launcher import elf


# ---- cubins whose parsing would cost sections x section size ----
def _cubin(n_infos=0, info_span=0, n_tables=1, n_syms=1, name_len=8, distinct_offsets=False, arch=90):
    """An ELF64 EM_CUDA file: one string table holding one name of `name_len` bytes ("fAAA..."),
    `n_tables` symbol tables all covering the same `n_syms` function symbols (naming the name, or
    each a suffix of it), and `n_infos` .nv.info sections (the name's, then f1, f2, ...) all
    covering the same `info_span` bytes of records."""
    first = b"f" + b"A" * (name_len - 1)
    shstr = b"\0.shstrtab\0.strtab\0.symtab\0"
    info_names = []
    for i in range(n_infos):
        info_names.append(len(shstr))
        shstr += b".nv.info." + (first if i == 0 else b"f%d" % i) + b"\0"
    strtab = b"\0" + first + b"\0"
    for i in range(1, n_infos):
        strtab += b"f%d\0" % i
    offsets = [1 + (i % name_len if distinct_offsets else 0) for i in range(n_syms)]
    offsets += [strtab.index(b"\0f%d\0" % i) + 1 for i in range(1, n_infos)]
    symtab = b"".join(struct.pack("<IBBHQQ", o, 0x12, 0, 0, 0, 0) for o in offsets)
    info = struct.pack("<BBH", 1, 0, 0) * (info_span // 4)
    body = bytearray(64)
    spans = {}
    for key, blob in (("shstr", shstr), ("str", strtab), ("sym", symtab), ("info", info)):
        spans[key] = (len(body), len(blob))
        body += blob
    while len(body) % 8:
        body += b"\0"
    shoff = len(body)
    secs = [(0,) * 10, (1, 3, 0, 0, *spans["shstr"], 0, 0, 1, 0), (11, 3, 0, 0, *spans["str"], 0, 0, 1, 0)]
    secs += [(19, 2, 0, 0, *spans["sym"], 2, 0, 8, 24)] * n_tables
    secs += [(o, 0x70000000, 0, 0, *spans["info"], 0, 0, 4, 0) for o in info_names]
    for s in secs:
        body += struct.pack("<IIQQQQIIQQ", *s)
    header = b"\x7fELF" + bytes([2, 1, 1, 0x33, 8]) + bytes(7)
    header += struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 0, shoff, (arch << 8) | arch, 64, 56, 0, 64, len(secs), 1)
    body[:64] = header
    return bytes(body)


def test_sections_that_share_bytes_are_refused_before_they_are_walked():
    """4000 .nv.info sections over the same 512 KiB were each walked, record by record (minutes for
    a 0.6 MB file), and 250 symbol tables over one table each decoded again: each byte of a cubin
    is now walked at most once, and sections that overlap or repeat are refused first."""
    assert set(elf.read_cubin(_cubin(n_infos=1, info_span=64)).kernels) == {"fAAAAAAA"}
    bomb = _cubin(n_infos=4000, info_span=1 << 19)
    with pytest.raises(elf.ElfError, match=r"section \.nv\.info\.f\d+ overlaps section \.nv\.info\.f\d+"):
        elf.read_cubin(bomb)
    with pytest.raises(elf.ElfError, match=r"symbol table \d+ overlaps symbol table \d+"):
        elf.read_cubin(_cubin(n_tables=250, n_syms=4000))


def test_names_read_are_bounded_by_the_file_size(monkeypatch):
    """Symbols naming each a suffix of one long name: every distinct offset decoded costs up to
    elf._MAX_NAME bytes; in all, names may take no more bytes than the file has."""
    reads = []
    real = elf._Names._read
    monkeypatch.setattr(elf._Names, "_read", lambda self, t, o, w: reads.append(o) or real(self, t, o, w))
    ok = _cubin(n_syms=100, name_len=8, distinct_offsets=True)
    assert len(elf.read_cubin(ok).functions) == 8
    bomb = _cubin(n_syms=4000, name_len=4000, distinct_offsets=True)
    reads.clear()
    with pytest.raises(elf.ElfError, match="names take more bytes in all than the file has"):
        elf.read_cubin(bomb)
    assert len(reads) * 24 < 2 * len(bomb)  # stopped once the file's size was read in names


def test_a_real_cubin_still_reads():
    cubin = bytes(C.BY_NAME["vector_add"].compile().kernel)
    info = elf.read_cubin(cubin)
    assert "add_kernel" in info.functions and info.kernels["add_kernel"].param_sizes == [8, 8, 8, 4, 8, 8]


# ---- bundles edited as a hostile writer would, every id and hash recomputed ----
def reseal(raw, manifest=None, spec=None):
    """The bundle with manifest(m) applied to its manifest and spec(kernel symbol, s) to each
    variant's spec (return None to keep it), variant ids, entries and hashes recomputed."""
    members = BC.members_of(raw)
    man = json.loads(members[BF.MANIFEST])
    if spec is not None:
        for v in list(man["variants"]):
            vid = v["id"]
            s = json.loads(members[f"variants/{vid}/spec.json"])
            if spec(s["kernel"], s) is None:
                continue
            blob = BF._dumps(s)
            new = BF._variant_id(blob, members[f"variants/{vid}/kernel.cubin"])
            members[f"variants/{vid}/spec.json"] = blob
            for name in [n for n in members if n.startswith(f"variants/{vid}/")]:
                members[name.replace(vid, new)] = members.pop(name)
            man = json.loads(json.dumps(man).replace(vid, new))
    if manifest is not None:
        manifest(man)
    members[BF.MANIFEST] = json.dumps(man).encode()
    return BC.rezip(BC.zip_members(members), lambda m: None)


def refused(raw, message):
    with pytest.raises(BundleError, match=message) as info:
        BF.parse_bundle(raw, "bundle 'b'")
    return info.value


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    path = tmp_path_factory.mktemp("small") / "small.bundle"
    launcher.export(path, C.BY_NAME["vector_add"].compile(), C.BY_NAME["tuples"].compile())
    return path.read_bytes()


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    path = tmp_path_factory.mktemp("captured") / "captured.bundle"
    BC.capture_workload(str(path), 90)
    return path.read_bytes()


def _many_params(raw, n, layers=True):
    """add_kernel with n more constexpr parameters, an autotune key naming them all, configs and
    a heuristics layer over them, and calls passing them."""
    extra = [f"c{i}" for i in range(n)]

    def spec(symbol, s):
        if symbol == "add_kernel":
            s["args"] += [{"name": x, "type": "constexpr"} for x in extra]
            return s

    def manifest(m):
        k = next(k for k in m["kernels"] if k["name"] == "kernels.add_kernel")
        k["params"] += [{"name": x, "constexpr": True, "keyword_only": False, "annotation": "constexpr",
                         "do_not_specialize": False, "do_not_specialize_on_alignment": False} for x in extra]
        if layers:
            k["layers"] = [{"kind": "autotune", "key": extra[::-1], "configs": [{"kwargs": {x: 1 for x in extra}}],
                            "choices": []},
                           {"kind": "heuristics", "names": extra[::-1],
                            "records": [{"inputs": {x: 1 for x in extra}, "values": {x: 1 for x in extra}}] * 50}]
            k["calls"] = [{"args": {x: {"int": 1} for x in extra}, "options": {}, "variant": k["variants"][0]}] * 50

    return reseal(raw, manifest, spec)


def test_a_kernel_has_at_most_max_layers_layers(small):
    """Each call reads the parameters once per layer (variants.Chooser.apply_layers): a kernel
    has at most BF.MAX_LAYERS layers, as it has at most BF.MAX_PARAMS parameters."""
    def layers(n):
        def manifest(m):
            k = next(k for k in m["kernels"] if k["name"] == "kernels.add_kernel")
            k["layers"] = [{"kind": "heuristics", "names": ["BLOCK"], "records": [{"inputs": {}, "values": {"BLOCK": 1024}}]}] * n
        return reseal(small, manifest)

    assert len(BF.parse_bundle(layers(BF.MAX_LAYERS), "bundle 'b'").kernels["kernels.add_kernel"].layers) == BF.MAX_LAYERS
    refused(layers(BF.MAX_LAYERS + 1), f"{BF.MAX_LAYERS + 1} layers; a kernel may have at most {BF.MAX_LAYERS}")


def test_manifest_checks_cost_one_lookup_per_name(small, monkeypatch):
    """Autotune keys, config kwargs, heuristics names and inputs, and recorded calls were checked
    with `name in list` (and set(names) built again per record): N^2 for N parameters. Each is one
    lookup in a set built once, and a kernel has at most BF.MAX_PARAMS parameters."""
    n = BF.MAX_PARAMS - 5
    data = BF.parse_bundle(_many_params(small, n), "bundle 'b'")
    assert len(data.kernels["kernels.add_kernel"].params) == n + 5 == BF.MAX_PARAMS
    refused(_many_params(small, BF.MAX_PARAMS, layers=False),
            f"{BF.MAX_PARAMS + 5} parameters; a kernel may have at most {BF.MAX_PARAMS}")

    compared = []  # what the checks cost: every == between two parameter names

    class Name(str):
        __hash__ = str.__hash__

        def __eq__(self, other):
            compared.append(1)
            return str.__eq__(self, other)

    real = BF._Reader.param

    def param(self, p, what):
        out = real(self, p, what)
        out.name = Name(out.name)
        return out

    monkeypatch.setattr(BF._Reader, "param", param)
    BF.parse_bundle(_many_params(small, n), "bundle 'b'")
    # one compare per name looked up (about 102 n: the key, kwargs, names, 50 records' inputs and 50
    # calls' args); a list scan per name would be some 50 n * n / 2
    assert len(compared) < 200 * n


def _inspect(raw, tmp_path, *args):
    path = tmp_path / "x.bundle"
    path.write_bytes(raw)
    return subprocess.run([sys.executable, "-m", "launcher", "inspect", *args, str(path)], capture_output=True)


def _refused_by_inspect(raw, tmp_path, message):
    """inspect's answer to a bundle load refuses: one line naming the problem, exit status 2."""
    for fmt in ("text", "json"):
        p = _inspect(raw, tmp_path, "--format", fmt)
        lines = p.stderr.decode().splitlines()
        assert p.returncode == 2 and len(lines) == 1 and re.search(message, lines[0]), (p.returncode, p.stderr)
        assert b"\x1b" not in p.stdout + p.stderr


def _deep(n, leaf=3):
    for _ in range(n):
        leaf = [leaf]
    return leaf


def _kernel(m, name):
    return next(k for k in m["kernels"] if k["name"] == name)


_DEEP_FIELDS = {  # where a bundle holds constants, compile options and call forms
    "variant options": lambda m, d: [v["options"].update(num_stages=d) for v in m["variants"]],
    "default options": lambda m, d: [v["default_options"].update(num_stages=d) for v in m["variants"]],
    "param default": lambda m, d: _kernel(m, "bundle_kernels.scale_kernel")["params"][-1].update(default=d),
    "config kwargs": lambda m, d: _kernel(m, "bundle_kernels.tuned_add")["layers"][0]["configs"][0]["kwargs"]
    .update(BLOCK=d),
    "autotune key": lambda m, d: _kernel(m, "bundle_kernels.tuned_add")["layers"][0]["choices"][0]["key"]["values"]
    .append(d),
    "heuristics values": lambda m, d: _kernel(m, "bundle_kernels.heuristic_add")["layers"][0]["records"][0]["values"]
    .update(BLOCK=d),
    "heuristics inputs": lambda m, d: _kernel(m, "bundle_kernels.heuristic_add")["layers"][0]["records"][0]["inputs"]
    .update(n=d),
    "call args": lambda m, d: _kernel(m, "bundle_kernels.scale_kernel")["calls"][0]["args"].update(n=d),
    "call options": lambda m, d: _kernel(m, "bundle_kernels.scale_kernel")["calls"][0]["options"].update(num_warps=d),
}


@pytest.mark.parametrize("field", sorted(_DEEP_FIELDS))
def test_options_and_constants_nest_as_deep_as_the_call_allows_no_deeper(captured, field, tmp_path):
    """A variant option nested 40 lists deep (JSON allows 64, constants 32) was read, then inspect
    died with a TypeError traceback and every call raised TypeError. One rule
    (launcher.spec.check_data_nesting, MAX_CONSTANT_DEPTH: what a call's constants may nest) now
    holds every constant, option and call form a bundle holds, at load."""
    from launcher import spec as S

    depth = S.MAX_CONSTANT_DEPTH
    S.check_nesting(_deep(depth), "x")  # a call's own rule: this deep, and no deeper
    with pytest.raises(TypeError):
        S.check_nesting(_deep(depth + 1), "x")
    BF.parse_bundle(reseal(captured, lambda m: _DEEP_FIELDS[field](m, _deep(depth))), "bundle 'b'")
    bad = reseal(captured, lambda m: _DEEP_FIELDS[field](m, _deep(depth + 1)))
    refused(bad, f"nested more than {depth} deep")
    if field == "variant options":
        _refused_by_inspect(bad, tmp_path, f"options.num_stages: tuples and lists nested more than {depth} deep")


def test_a_deep_constexpr_in_a_spec_is_refused_as_an_option_is(captured):
    from launcher import spec as S

    def spec(symbol, s):
        if symbol == "add_kernel" and s["assumptions"]["constexprs"]:
            s["assumptions"]["constexprs"][0][1] = _deep(S.MAX_CONSTANT_DEPTH + 1)
            return s

    refused(reseal(captured, spec=spec), f"constexprs\\[0\\]: tuples and lists nested more than {S.MAX_CONSTANT_DEPTH}")


# ---- text that inspect and messages print ----
_ESC = "\x1b[2J\x1b[31mINJECTED\x1b[0m\nfake line"


def _first_pointer(symbol, s, text):
    if s["args"][0]["type"].startswith("*"):
        s["args"][0]["type"] = s["params"][0]["type"] = "*fp32" + text
        return s


_TEXT_FIELDS = {  # field -> (edit(manifest, text) or None, edit of a spec or None, what the refusal names)
    "writer": (lambda m, t: m.update(writer="launcher " + t), None, r"manifest\.writer"),
    "target": (lambda m, t: m["variants"][0].update(target="sm_90a" + t), None, r"\.target"),
    "triton_version": (lambda m, t: m["variants"][0].update(triton_version="3.6" + t), None, r"\.triton_version"),
    "ptx_isa": (lambda m, t: m["variants"][0].update(ptx_isa="8.7" + t), None, r"\.ptx_isa"),
    "ptxas_version": (lambda m, t: m["variants"][0].update(ptxas_version="12" + t), None, r"\.ptxas_version"),
    "annotation": (lambda m, t: m["kernels"][0]["params"][0].update(annotation=t), None, r"params\[0\]\.annotation"),
    "autotune dtype": (lambda m, t: _kernel(m, "bundle_kernels.tuned_add")["layers"][0]["choices"][0]["key"]["dtypes"]
                       .append("fp32" + t), None, r"key\.dtypes\[\d+\]"),
    "option name": (lambda m, t: m["variants"][0]["options"].update({"num" + t: 1}), None, "not a compile option name"),
    "spec pointer type": (None, _first_pointer, r"args\[0\]\.type"),
}


@pytest.mark.parametrize("text", [_ESC, "\ud800"], ids=["escapes", "surrogate"])
@pytest.mark.parametrize("field", sorted(_TEXT_FIELDS))
def test_text_inspect_prints_is_printable_or_refused(captured, field, text, tmp_path):
    """writer, target, versions, annotations, autotune dtypes, spec types ("*" + anything was
    planned as a pointer) were printed raw by inspect: escape sequences reached the terminal, and a
    lone surrogate made inspect die with UnicodeEncodeError. One rule (launcher.spec.check_text)
    now holds every such field at load: a BundleError naming it; inspect: one line, exit 2."""
    manifest, spec, names = _TEXT_FIELDS[field]
    raw = reseal(captured, manifest and (lambda m: manifest(m, text)), spec and (lambda k, s: spec(k, s, text)))
    e = refused(raw, names)
    assert re.search("holds characters that are not printable|not a compile option name|not a pointer type", str(e))
    _refused_by_inspect(raw, tmp_path, names)


def test_pointer_types_are_triton_type_names(captured):
    from launcher import spec as S

    for ty in ("*fp32", "*kfp16", "*i1", "*u64", "*fp8e4nv", "**fp32", "*bf16"):
        assert S.pointer_type_ok(ty), ty
    for ty in ("*", "*k", "*fp32x", "*float", "*kk", "* fp32"):
        assert not S.pointer_type_ok(ty), ty
        refused(reseal(captured, spec=lambda k, s: _first_pointer(k, s, "") and (
            s["args"][0].update(type=ty), s["params"][0].update(type=ty)) and s), "is not a pointer type")


def test_non_finite_numbers_and_unusable_paths_are_bundle_errors(captured, tmp_path):
    raw = reseal(captured, lambda m: m["variants"][0]["options"].update(num_stages=1.5))
    members = BC.members_of(raw)
    members[BF.MANIFEST] = members[BF.MANIFEST].replace(b'"num_stages":1.5', b'"num_stages":1e400', 1)
    refused(BC.zip_members(members), "the number 1e400 is not finite")
    for path in ("a\0b.bundle", b"a\0b.bundle"):
        with pytest.raises(BundleError, match="not a usable path"):
            launcher.load_bundle(path)


def test_inspect_marks_keyword_only_parameters(tmp_path):
    from launcher import bundle_inspect as BI

    params = (BF.Param("x"), BF.Param("BLOCK", constexpr=True, keyword_only=True),
              BF.Param("scale", constexpr=True, keyword_only=True, has_default=True, default=2))
    k = BF.KernelEntry("m.kw", "kw", "m", None, None, params, ())
    assert BI._signature(k) == "kw(x, *, BLOCK: constexpr, scale: constexpr = 2)"


# ---- a spec that contradicts its kernel ----
@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.bundle"
    BC.export_corpus(str(path))
    return path.read_bytes()


@pytest.mark.parametrize("key, value, message", [
    ("elem_type", 99, r"elem_type: 99 is out of range \[0, 15\]"),
    ("swizzle", 7, r"swizzle: 7 is out of range"),
    ("elem_size", 3, r"elem_size: 3 bytes is not 1, 2, 4 or 8"),
    ("shuffle", 1, r"unknown fields \['shuffle'\]"),
    ("is_im2col", True, r"im2col tensor descriptors are not supported"),
])
def test_tensor_map_metadata_is_range_checked_at_load(corpus, key, value, message):
    """elem_type 99 was read, then a call died with a bare KeyError from launcher.tensormap."""
    def spec(symbol, s):
        if s["tensordesc_meta"]:
            s["tensordesc_meta"][0][key] = value
            return s

    refused(reseal(corpus, spec=spec), r"tensordesc_meta\[0\]\." * 0 + message)


def test_a_spec_type_the_ptx_contradicts_is_refused(small):
    """tuple_kernel's `scale` (PTX .param .f32) retyped i32 (same size) was read, and a call packed
    the int 2 where the kernel reads a float. Each parameter's type is held to its PTX
    declaration: class (.f32 / .u32 ...) and size."""
    def retype(old, new):
        def spec(symbol, s):
            if symbol == "tuple_kernel":
                i = [a["name"] for a in s["args"]].index("scale")
                assert s["args"][i]["type"] == old
                s["args"][i]["type"] = new
                for p in s["params"]:
                    if p["name"] == "scale":
                        p["type"] = new
                return s
        return spec

    e = refused(reseal(small, spec=retype("fp32", "i32")),
                r"the spec contradicts the kernel's PTX: parameter \d+ \(scale\) is i32 in the spec, declared "
                r"'\.param \.f32 tuple_kernel_param_\d+' in the PTX")
    assert e.entry.endswith("kernel.ptx")
    refused(reseal(small, spec=retype("fp32", "u32")), "contradicts the kernel's PTX")


def test_every_type_triton_declares_agrees_with_its_ptx(corpus):
    """What this Triton (3.6 to 3.9) declares for each type: the corpus's kernels, of every scalar
    type, pointers, tuples, host descriptors (TMA-lowered and decomposed), compiled here."""
    data = BF.parse_bundle(corpus, "bundle 'b'")
    types = set()
    for v in data.variants.values():
        assert v.ptx is not None and BF.ptx_param_problem(v.spec, v.ptx) is None
        types.update(p.type for p in v.spec.params)
    assert types >= {"i1", "u1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "fp16", "bf16", "fp32",
                     "fp64", "nvTmaDesc", "*fp16", "*fp32", "*i8"}, types


def test_a_crafted_ptx_declaration_is_read_in_linear_time():
    from launcher import spec as S

    spec = S.layout_for(["*fp32"], tf32_flag=True)
    decl = ".param" + " .u64 .ptr" * 200_000 + " x y"
    ls = S.LaunchSpec("k", ("x",), spec, num_warps=1)
    assert "declared" in BF.ptx_param_problem(ls, f".entry k({decl}, .param .u64 a, .param .u64 b)")


# ---- arguments out of range: refused before the driver is asked anything ----
class _T:
    def __init__(self, address, dtype="fp32"):
        self.address, self.dtype = address, dtype

    def data_ptr(self):
        return self.address


@pytest.mark.parametrize("case", ["x_ptr=-16", "x_ptr=2**64", "data_ptr()=-32", "fp32 1e300", "fp32 1e39"])
def test_out_of_range_arguments_are_refused_before_any_driver_call(captured, case, tmp_path, monkeypatch):
    """A pointer -16 or 2**64, a data_ptr() out of [0, 2**64) or an fp32 of 1e300 passed the
    variant choice; the call then asked the driver for the device and its capability and loaded
    the cubin before packing refused them. The packer's own checks (arguments.flat_values) now run
    when the variant is chosen, naming the kernel by its qualified name."""
    from launcher import bundle_kernel as BK
    from launcher import driver, modules

    asked = []
    monkeypatch.setattr(BK, "_current_device", lambda: asked.append("current_device") or 0)
    monkeypatch.setattr(driver, "device_capability", lambda d: asked.append("device_capability") or (9, 0))
    monkeypatch.setattr(modules, "module_cache", lambda: asked.append("module_cache") or None)
    path = tmp_path / "c.bundle"
    path.write_bytes(captured)
    b = launcher.load_bundle(path)
    add, scale = b["kernels.add_kernel"], b["bundle_kernels.scale_kernel"]
    P = [0x7F0000001000 + 0x100000 * i for i in range(3)]
    kernel, args, kwargs, name = {
        "x_ptr=-16": (add, (-16, _T(P[1]), _T(P[2]), 4096), {"BLOCK": 1024}, "x_ptr"),
        "x_ptr=2**64": (add, (2**64, _T(P[1]), _T(P[2]), 4096), {"BLOCK": 1024}, "x_ptr"),
        "data_ptr()=-32": (add, (_T(-32), _T(P[1]), _T(P[2]), 4096), {"BLOCK": 1024}, "x_ptr"),
        "fp32 1e300": (scale, (_T(P[0]), _T(P[1]), 4096, 1, 1e300), {}, "scale"),
        "fp32 1e39": (scale, (_T(P[0]), _T(P[1]), 4096, 1, 1e39), {}, "scale"),
    }[case]
    with pytest.raises(OverflowError, match=f"kernel '{re.escape(kernel.name)}': parameter '{name}'"):
        kernel[(4,)](*args, **kwargs)
    # a call made while nothing is recorded looks nothing up: not even the current device is asked
    assert asked == [], asked
    with pytest.raises(OverflowError, match=f"kernel '{re.escape(kernel.name)}': parameter '{name}'"):
        kernel.dry_run((4,), arch=90)(*args, **kwargs)
