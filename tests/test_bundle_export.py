"""launcher.export and the bundle format (issue 12): real Triton-compiled kernels for sm_80, sm_90
and sm_100 (plain, tuple and tensor-descriptor signatures, two kernels of one name from two
modules) written and read back equal; what each variant records; `python -m launcher inspect`;
and the refusal, naming the entry, of bundles that are truncated, tampered with, of another
version, or whose spec contradicts its cubin."""
import dataclasses
import json
import os
import re
import subprocess
import sys

import pytest

import bundle_cases as BC
import cpu_corpus as C
import kernels as K
import launcher
from launcher import BundleError, CudaLauncher
from launcher import bundle_format as BF
from triton_compile import compile_cpu

ROOT = os.path.dirname(os.path.dirname(__file__))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("bundles") / "corpus.bundle"
    data, kernels = BC.export_corpus(path)
    return path, data, kernels


def test_what_is_read_back_is_what_was_exported(corpus):
    path, written, kernels = corpus
    data = BF.read_bundle(path)
    assert list(data.kernels) == list(written.kernels)
    for label, _entry, ck in kernels:
        spec = CudaLauncher(ck.src, ck.metadata).spec
        vid = BF.variant_id(spec, bytes(ck.kernel))
        v = data.variants[vid]
        assert v.spec == spec, label
        assert v.cubin == bytes(ck.kernel) and v.ptx == ck.asm["ptx"] and v.ttgir == ck.asm["ttgir"], label
    for name, k in written.kernels.items():
        assert data.kernels[name] == k


def test_several_archs_and_same_named_kernels_have_unique_qualified_names(corpus):
    _, data, _ = corpus
    assert "kernels.add_kernel" in data.kernels and "bundle_kernels.add_kernel" in data.kernels
    add = data.kernels["kernels.add_kernel"]
    assert {data.variants[v].arch for v in add.variants} == {90, 100}
    tma = data.kernels["kernels.tma_copy_kernel"]
    assert {data.variants[v].arch for v in tma.variants} == {80, 90, 100}
    bundle = launcher.load_bundle(corpus[0])
    with pytest.raises(KeyError, match="'add_kernel' names several kernels; use a qualified name: "
                                       "kernels.add_kernel, bundle_kernels.add_kernel"):
        bundle["add_kernel"]
    with pytest.raises(AttributeError, match="names several kernels"):
        bundle.add_kernel
    assert bundle.tuple_kernel is bundle["kernels.tuple_kernel"] is bundle["tuple_kernel"]
    with pytest.raises(KeyError, match="has no kernel 'nope'; it has: kernels.add_kernel"):
        bundle["nope"]


def test_each_variant_records_target_versions_options_and_source(corpus):
    import triton

    _, data, _ = corpus
    for v in data.variants.values():
        assert v.target == f"sm_{v.arch}" + ("a" if v.arch >= 90 else "")
        assert v.triton_version == triton.__version__
        assert re.fullmatch(r"\d+\.\d+", v.ptx_isa)
        assert re.fullmatch(r"\d+\.\d+(\.\d+)?", v.ptxas_version)
        assert v.options["num_warps"] == v.spec.num_warps and v.options["num_ctas"] == v.spec.num_ctas
        assert v.default_options["num_warps"] == 4 and v.default_options["num_stages"] == 3
    k = data.kernels["kernels.tuple_kernel"]
    assert (k.function, k.module, os.path.basename(k.file)) == ("tuple_kernel", "kernels", "kernels.py")
    assert k.line == K.tuple_kernel.starting_line_number
    assert [p.name for p in k.params] == ["out", "t", "nested", "k", "scale"]
    assert [p.constexpr for p in k.params] == [False, False, False, True, False]
    large = data.variants[data.kernels["kernels.matmul_kernel"].variants[0]]
    assert large.options["num_stages"] == 4


def test_writing_is_deterministic(tmp_path, corpus):
    _, _, kernels = corpus
    cks = [ck for _, _, ck in kernels[:4]]
    launcher.export(tmp_path / "a.bundle", *cks)
    launcher.export(tmp_path / "b.bundle", [cks[0], cks[1]], cks[2:])
    assert (tmp_path / "a.bundle").read_bytes() == (tmp_path / "b.bundle").read_bytes()


def test_export_refuses_what_it_cannot_bundle(tmp_path):
    import triton
    from triton.backends.compiler import GPUTarget

    ck = C.BY_NAME["vector_add"].compile()
    ir = tmp_path / "add.ttgir"
    ir.write_text(ck.asm["ttgir"])
    ir_ck = triton.compile(str(ir), target=GPUTarget("cuda", 90, 32))
    with pytest.raises(launcher.UnsupportedKernel, match="kernel 'add_kernel' was compiled from an IR file"):
        launcher.export(tmp_path / "x.bundle", ir_ck)
    with pytest.raises(TypeError, match="expects Triton CompiledKernel objects, got str"):
        launcher.export(tmp_path / "x.bundle", "not a kernel")
    with pytest.raises(BundleError, match="no kernels to write"):
        launcher.export(tmp_path / "x.bundle")
    assert not (tmp_path / "x.bundle").exists()
    with pytest.raises(BundleError, match="missing/x.bundle': cannot be written: No such file or directory"):
        launcher.export(tmp_path / "missing" / "x.bundle", ck)


# ---- python -m launcher inspect ----
def _inspect(*args):
    return subprocess.run([sys.executable, "-m", "launcher", "inspect", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def test_inspect_lists_kernels_variants_and_autotune_choices(tmp_path):
    path = tmp_path / "captured.bundle"
    BC.capture_workload(path, 90)
    text = _inspect(path)
    assert text.returncode == 0, text.stderr
    out = text.stdout
    for needle in ("kernels.add_kernel", "bundle_kernels.add_kernel", "bundle_kernels.tuned_add",
                   "tuned_add(x_ptr, y_ptr, out_ptr, n, BLOCK: constexpr)", "autotune on n: 3 configs",
                   "key (4096, fp32, fp32, fp32) -> config 1: BLOCK=512, num_warps=8",
                   "key (100, fp32, fp32, fp32) -> config 0: BLOCK=128", "heuristics compute BLOCK, EVEN",
                   "n=1000 -> BLOCK=1024, EVEN=False", "scale_kernel(x_ptr, out_ptr, n, stride, scale, BLOCK: constexpr = 256)",
                   "sm_90a, Triton", "tensordesc<fp16[64, 64]>"):
        assert needle in out, needle
    js = _inspect("--format", "json", path)
    assert js.returncode == 0, js.stderr
    doc = json.loads(js.stdout)
    assert doc["format"] == "launcher.bundle" and doc["version"] == 1
    tuned = next(k for k in doc["kernels"] if k["name"] == "bundle_kernels.tuned_add")
    layer = tuned["layers"][0]
    assert layer["kind"] == "autotune" and layer["key"] == ["n"]
    assert {json.dumps(c["key"]["values"]): c["config"] for c in layer["choices"]} == \
        {json.dumps([{"int": 4096}]): 1, json.dumps([{"int": 100}]): 0}
    variant = tuned["variants"][0]
    assert variant["arch"] == 90 and variant["sizes"]["cubin"] > 0 and variant["signature"]["x_ptr"] == "*fp32"

    def bad_dtypes(m):  # a dtype that is not a name: refused as the bundle is read, not a traceback in inspect
        tuned = next(k for k in m["kernels"] if k["name"] == "bundle_kernels.tuned_add")
        tuned["layers"][0]["choices"][0]["key"]["dtypes"][0] = 7
    _refused(_rezip(path.read_bytes(), _manifest_edit(bad_dtypes)), r"choices\[0\]\.key\.dtypes: expected dtype names")


def test_inspect_of_a_bad_bundle_is_one_line_and_no_traceback(tmp_path, corpus):
    raw = corpus[0].read_bytes()
    bad = tmp_path / "bad.bundle"
    for label, content in (("truncated", raw[:len(raw) // 2]), ("garbage", b"not a zip at all"), ("empty", b"")):
        bad.write_bytes(content)
        proc = _inspect(bad)
        assert proc.returncode == 2, label
        assert proc.stdout == "" and "Traceback" not in proc.stderr, label
        assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("launcher inspect: bundle "), label
    proc = _inspect(tmp_path / "missing.bundle")
    assert proc.returncode == 2 and "cannot be read" in proc.stderr


# ---- bundles that must be refused ----
_rezip = BC.rezip


def _manifest_edit(fn):
    def edit(members):
        m = json.loads(members[BF.MANIFEST])
        fn(m)
        members[BF.MANIFEST] = BF._dumps(m)
    return edit


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    path = tmp_path_factory.mktemp("small") / "small.bundle"
    data = launcher.export(path, C.BY_NAME["vector_add"].compile(), C.BY_NAME["tuples"].compile())
    return path.read_bytes(), data


def _refused(raw, message, entry=None):
    with pytest.raises(BundleError, match=message) as info:
        BF.parse_bundle(raw, "bundle 'b'")
    if entry is not None:
        assert info.value.entry is not None and re.fullmatch(entry, info.value.entry), info.value.entry
    return info.value


def _spec_name(data, kernel):
    vid = data.kernels[kernel].variants[0]
    return vid, f"variants/{vid}/spec.json", f"variants/{vid}/kernel.cubin"


def test_truncated_damaged_or_foreign_files_are_refused(small):
    raw, data = small
    for n in (0, 10, len(raw) // 3, len(raw) - 1):
        _refused(raw[:n], "not a readable bundle|no manifest.json")
    vid, spec_name, cubin_name = _spec_name(data, "kernels.add_kernel")
    # one flipped byte inside the cubin: the entry's hash no longer matches
    i = raw.index(data.variants[vid].cubin[100:140])
    flipped = raw[:i] + bytes([raw[i] ^ 0x40]) + raw[i + 1:]
    _refused(flipped, "not a readable bundle|SHA-256 mismatch", None)
    _refused(_rezip(raw, lambda m: m.update({"extra.txt": b"x"})), "unexpected entry 'extra.txt'")


def test_a_tampered_entry_is_named(small):
    raw, data = small
    vid, spec_name, cubin_name = _spec_name(data, "kernels.add_kernel")
    tampered = BC.rezip(raw, lambda m: m.update({cubin_name: m[cubin_name][:-8] + bytes(8)}), rehash=False)
    e = _refused(tampered, f"{re.escape(cubin_name)}: SHA-256 mismatch", re.escape(cubin_name))
    assert "tampered" in str(e)


def test_unknown_format_or_version_is_refused(small):
    raw, _ = small
    _refused(_rezip(raw, _manifest_edit(lambda m: m.update(version=2))),
             "format version 2 is not one this launcher reads \\(it reads version 1\\)", "manifest.json")
    _refused(_rezip(raw, _manifest_edit(lambda m: m.update(format="zip of something"))), "not a launcher bundle")


def test_dropped_entries_are_refused(small):
    raw, data = small
    vid, spec_name, cubin_name = _spec_name(data, "kernels.tuple_kernel")
    _refused(_rezip(raw, lambda m: m.pop(cubin_name)), "missing from the archive", re.escape(cubin_name))
    only_dropped = BC.rezip(raw, lambda m: m.pop(spec_name), rehash=False)
    _refused(only_dropped, "the archive lacks \\(dropped\\?\\)", re.escape(spec_name))


def _rebuild(data, vid, **changes):
    """A bundle whose variant `vid` is replaced by one with `changes` (id recomputed)."""
    v = data.variants[vid]
    new = v.replace(**changes)
    new.id = BF.variant_id(new.spec, new.cubin)
    variants = {k: val for k, val in data.variants.items() if k != vid}
    variants[new.id] = new
    kernels = {name: k.replace(variants=tuple(new.id if x == vid else x for x in k.variants))
               for name, k in data.kernels.items()}
    return BF.bundle_bytes(BF.BundleData(kernels, variants), "test")


def test_a_spec_that_contradicts_its_cubin_is_refused(small):
    raw, data = small
    vid, _, _ = _spec_name(data, "kernels.add_kernel")
    v = data.variants[vid]
    e = _refused(_rebuild(data, vid, spec=v.spec.derive(kernel="other_kernel")),
                 "the spec launches 'other_kernel', which is not a function of the cubin's ELF symbol table "
                 "\\(its functions: add_kernel\\)", r"variants/[0-9a-f]{16}/kernel\.cubin")
    assert "kernel.cubin" in str(e)
    _refused(_rebuild(data, vid, spec=v.spec.derive(arch=100)), "the cubin is for sm_90, the spec says sm_100")
    _refused(_rebuild(data, vid, spec=v.spec.derive(arch=None)), "the spec names no architecture|arch: expected an integer")
    # the same kernel compiled with n as i64: a cubin taking an 8-byte n, under the i32 spec
    sig = tuple((name, "i64" if name == "n" else t) for name, t in C.ADD_SIG)
    wide = compile_cpu(K.add_kernel, sig, (("BLOCK", 1024),), 90, ((0,), (1,), (2,), (3,)))
    _refused(_rebuild(data, vid, cubin=bytes(wide.kernel)),
             r"takes parameters of \[8, 8, 8, 8, 8, 8\] bytes, the spec packs \[8, 8, 8, 4, 8, 8\]")
    more_warps = dataclasses.replace(v.spec, num_warps=8)
    _refused(_rebuild(data, vid, spec=more_warps, options=dict(v.options, num_warps=8)),
             r"requires blocks of \(128, 1, 1\) threads, the spec launches 8 warps of 32")
    _refused(_rebuild(data, vid, cubin=b"\x7fELF" + bytes(100)), "not a cubin")
    # a cubin whose kernel has no .nv.info section (renamed): its parameters could not be checked
    renamed = v.cubin.replace(b".nv.info.add_kernel\x00", b".nv.info.add_kernez\x00")
    assert renamed != v.cubin
    _refused(_rebuild(data, vid, cubin=renamed), r"no \.nv\.info\.add_kernel section")


def test_manifest_fields_are_checked(small):
    raw, data = small
    vid, _, _ = _spec_name(data, "kernels.add_kernel")

    def first_kernel(fn):
        return _manifest_edit(lambda m: fn(m["kernels"][0]))

    cases = [
        (first_kernel(lambda k: k["params"][0].update(name="x y")), "is not a usable Python parameter name"),
        (first_kernel(lambda k: k["params"][0].update(name="_launcher_grid")), "not a usable Python parameter name"),
        (first_kernel(lambda k: k["params"][0].update(name="import")), "not a usable Python parameter name"),
        (first_kernel(lambda k: k["params"][0].update(name="__debug__")), "not a usable Python parameter name"),
        (first_kernel(lambda k: k["params"][0].update(default=_nested(200))), "nested more than 64 levels deep"),
        (first_kernel(lambda k: k.update(function="f(); import os")), "is not a Python name"),
        (first_kernel(lambda k: k["params"].pop()), "takes arguments .* the kernel's parameters are"),
        (first_kernel(lambda k: k.update(variants=[])), "needs at least one variant"),
        (first_kernel(lambda k: k["layers"].append({"kind": "pickle"})), "is not one of autotune, heuristics"),
        (_manifest_edit(lambda m: m["variants"][0].update(symbol="nope")), "symbol: 'nope', but its spec launches"),
        (_manifest_edit(lambda m: m["variants"][0].update(options=7)), "options: expected an object"),
        (_manifest_edit(lambda m: m.pop("kernels")), "missing field 'kernels'"),
        (_manifest_edit(lambda m: m.update(version=True)), "format version True is not one this launcher reads"),
        (_manifest_edit(lambda m: m.update(version=1.0)), "format version 1.0 is not one this launcher reads"),
        (_manifest_edit(lambda m: m["variants"][0].update(arch=90.0)), "arch: expected an integer"),
        (first_kernel(lambda k: k.update(name="kernels.add\x1b[31m_kernel")), "name: .* not printable"),
        (first_kernel(lambda k: k.update(file="a.py\nfake line")), "file: .* not printable"),
    ]
    for edit, message in cases:
        _refused(_rezip(raw, edit), message, "manifest.json")
    twice = BC.rezip(raw, lambda m: m.update({BF.MANIFEST: m[BF.MANIFEST].replace(b"{", b'{"version": 2, ', 1)}),
                     rehash=False)  # {"version": 2, ..., "version": 1}: read as neither
    _refused(twice, "the key 'version' appears twice", "manifest.json")


def _nested(depth):
    value = {"int": 1}
    for _ in range(depth):
        value = {"tuple": [value]}
    return value


def test_hostile_specs_and_cubins_are_refused_at_once(small):
    """What a hostile writer can put in a bundle that passes every hash: a descriptor rank in the
    millions, types nested hundreds deep. Each is refused, quickly, with a BundleError naming the
    entry."""
    raw, data = small
    _, spec_name, _ = _spec_name(data, "kernels.add_kernel")
    for ty in ("tensordesc<fp16[64],input_rank=1000000>", "tensordesc<fp16[64],input_rank=6>"):
        with pytest.raises(BundleError, match="a rank other than 1 to 5"):
            BF.parse_bundle(_rezip(raw, _spec_entry_edit(spec_name, lambda sp: sp["args"][3].update(type=ty))),
                            "bundle 'b'")
    deep = "i32"
    for _ in range(300):
        deep = [deep]
    with pytest.raises(BundleError, match="nested more than 64 levels deep"):
        BF.parse_bundle(_rezip(raw, _spec_entry_edit(spec_name, lambda sp: sp["args"][3].update(type=deep))),
                        "bundle 'b'")


def _spec_entry_edit(name, fn):
    def edit(members):
        spec = json.loads(members[name])
        fn(spec)
        members[name] = BF._dumps(spec)
    return edit


def test_a_hand_edited_archive_is_refused(small):
    raw, _ = small
    # the zip's own metadata (a timestamp) changed: every entry intact, the archive not as written
    i = raw.index(b"PK\x01\x02") + 14
    edited = raw[:i] + b"\x22" + raw[i + 1:]
    _refused(edited, "not as launcher writes it|not a readable bundle")


def test_symbol_tables_are_bounded_in_all_not_one_by_one(monkeypatch):
    """Every section header may point at the same symbol table: the bound on symbols read holds
    for the whole cubin (a cubin of 65535 such headers took minutes to read before)."""
    import struct

    from launcher import elf

    cubin = bytes(C.BY_NAME["vector_add"].compile().kernel)
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    _, shnum, _ = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [cubin[shoff + i * 64: shoff + (i + 1) * 64] for i in range(shnum)]
    (symtab,) = [h for h in headers if struct.unpack_from("<I", h, 4)[0] == 2]
    count = struct.unpack_from("<Q", symtab, 32)[0] // 24
    monkeypatch.setattr(elf, "_MAX_SYMBOLS", count)
    elf.read_cubin(cubin)  # one table of `count` symbols: within the bound
    twice = cubin[:shoff + (shnum - 1) * 64] + symtab + cubin[shoff + shnum * 64:]  # the last header: a second one
    with pytest.raises(elf.ElfError, match=f"more than {count} symbols in all"):
        elf.read_cubin(twice)


def test_a_string_table_cannot_make_symbol_names_costly():
    """Symbols that all name one unterminated megabyte of string table were each decoded in full
    (a 3.7 MB bundle took a minute to load): a name is at most elf._MAX_NAME bytes, read once."""
    import struct

    from launcher import elf

    cubin = bytes(C.BY_NAME["vector_add"].compile().kernel)
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    _, shnum, _ = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [bytearray(cubin[shoff + i * 64: shoff + (i + 1) * 64]) for i in range(shnum)]
    (symtab,) = [h for h in headers if struct.unpack_from("<I", h, 4)[0] == 2]
    strtab = headers[struct.unpack_from("<I", symtab, 40)[0]]
    names = b"A" * (1 << 20) + b"\0"
    table = struct.pack("<IBBHQQ", 0, 0x12, 0, 0, 0, 0) * 100_000
    end = len(cubin)
    struct.pack_into("<QQ", symtab, 24, end, len(table))
    struct.pack_into("<QQ", strtab, 24, end + len(table), len(names))
    edited = cubin[:shoff] + b"".join(headers) + cubin[shoff + shnum * 64:] + table + names
    with pytest.raises(elf.ElfError, match=f"a name longer than {elf._MAX_NAME} bytes"):
        elf.read_cubin(edited)
    short = b"k\0" + names[2:]
    edited = cubin[:shoff] + b"".join(headers) + cubin[shoff + shnum * 64:] + table + short
    assert "k" in elf.read_cubin(edited).functions  # 100000 symbols naming offset 0: decoded once


# Issue 35: a bundle made on a machine without a GPU (the docs' recipe, run as written), what it
# records of that machine, and a damaged zip header named as damage.

def _docs_recipe(title):
    """The first Python block after the docs/bundles.md heading `title`."""
    text = open(os.path.join(ROOT, "docs", "bundles.md"), encoding="utf-8").read()
    section = text.split(f"\n## {title}\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.fixture(scope="module")
def cpu_bundle(tmp_path_factory):
    """docs/bundles.md's build_on_cpu.py, run in a fresh directory with no GPU visible."""
    where = tmp_path_factory.mktemp("exporting machine")
    script = where / "build_on_cpu.py"
    script.write_text(_docs_recipe("Bundles made on a machine without a GPU"))
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TRITON_CACHE_DIR=str(where / "triton-cache"))
    proc = subprocess.run([sys.executable, str(script)], cwd=where, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "wrote add.bundle"
    return where, where / "add.bundle"


def test_a_bundle_is_made_without_a_gpu_as_the_docs_say(cpu_bundle):
    _, path = cpu_bundle
    data = BF.read_bundle(path)
    (kernel,) = data.kernels.values()
    assert kernel.name == "__main__.add_kernel" and kernel.function == "add_kernel"
    assert sorted(data.variants[v].arch for v in kernel.variants) == [80, 90]
    bundle = launcher.load_bundle(path)
    assert bundle.add_kernel is bundle["__main__.add_kernel"]
    proc = _inspect(path)
    assert proc.returncode == 0, proc.stderr
    assert "add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: constexpr)   [build_on_cpu.py:" in proc.stdout, proc.stdout


def _json_entries(path):
    import zipfile

    with zipfile.ZipFile(path) as z:
        return {n: z.read(n).decode() for n in z.namelist() if n.endswith(".json")}


def test_the_bundle_records_no_path_of_the_exporting_machine(cpu_bundle):
    where, path = cpu_bundle
    machine = {str(where), os.path.realpath(where), os.path.dirname(str(where)), sys.prefix, sys.base_prefix,
               os.path.expanduser("~"), os.getcwd(), os.path.dirname(os.path.dirname(launcher.__file__))}
    import triton

    machine.add(os.path.dirname(triton.__file__))
    entries = _json_entries(path)
    assert "manifest.json" in entries and any(n.endswith("spec.json") for n in entries)
    for name, text in entries.items():
        for directory in machine:
            assert directory not in text and json.dumps(directory)[1:-1] not in text, (name, directory)
        for s in re.findall(r'"((?:[^"\\]|\\.)*)"', text):  # no absolute path at all
            assert not s.startswith(("/", "~")), (name, s)
    manifest = json.loads(entries["manifest.json"])
    assert manifest["kernels"][0]["file"] == "build_on_cpu.py"
    for v in manifest["variants"]:
        libs = v["options"].get("extern_libs")
        if libs:  # libdevice by its name only
            assert all("/" not in lib_path for _, lib_path in libs), libs


def test_a_kernel_file_is_kept_relative_to_its_package_root():
    from launcher.bundle_export import portable_file, portable_options

    assert portable_file("/srcs/u/pkg/sub/kern.py", "pkg.sub.kern") == "pkg/sub/kern.py"
    assert portable_file("/srcs/u/pkg/__init__.py", "pkg") == "pkg/__init__.py"
    assert portable_file("/tmp/x/build.py", "__main__") == "build.py"
    assert portable_file("/tmp/ipykernel_1/123.py", "__main__") == "123.py"
    assert portable_file("/elsewhere/kern.py", "pkg.other") == "kern.py"  # a module not at its path
    assert portable_file(None, "m") is None
    assert portable_options({"extern_libs": [["libdevice", "/usr/lib/t/libdevice.10.bc"]], "num_warps": 4,
                             "arch": "sm90", "ir_override": None}) == \
        {"extern_libs": [["libdevice", "libdevice.10.bc"]], "num_warps": 4, "arch": "sm90", "ir_override": None}


def test_old_bundles_with_absolute_paths_still_read(small, tmp_path):
    raw, data = small
    name = next(iter(data.kernels))
    old = _rezip(raw, _manifest_edit(lambda m: m["kernels"][0].update(file="/exporter/project/kernels.py")))
    read = BF.parse_bundle(old, "bundle 'old'")
    assert read.kernels[name].file == "/exporter/project/kernels.py"
    (tmp_path / "old.bundle").write_bytes(old)
    proc = _inspect(tmp_path / "old.bundle")
    assert proc.returncode == 0 and "/exporter/project/kernels.py:" in proc.stdout, proc.stdout + proc.stderr


def _local_headers(raw):
    import io
    import zipfile

    return [(i.filename, i.header_offset) for i in zipfile.ZipFile(io.BytesIO(raw)).infolist()]


@pytest.mark.parametrize("field, offset", [("flags", 6), ("method", 8), ("compressed size", 18),
                                           ("uncompressed size", 22), ("name length", 26), ("name", 30),
                                           ("extra length", 28)])
def test_a_damaged_local_header_is_named_as_damage(small, field, offset):
    raw, _ = small
    for entry, at in _local_headers(raw)[:3]:  # the manifest, then two variant entries
        damaged = bytearray(raw)
        damaged[at + offset] ^= 0x08
        e = _refused(bytes(damaged), f"entry {re.escape(repr(entry))}: its zip header \\(at byte {at}\\) is damaged",
                     re.escape(entry))
        assert "compressed or streamed" not in str(e) and "corrupt" in str(e), (field, str(e))


def test_a_damaged_header_of_an_exported_file_is_reported_by_inspect(cpu_bundle, tmp_path):
    _, path = cpu_bundle
    raw = path.read_bytes()
    entry, at = _local_headers(raw)[1]
    damaged = bytearray(raw)
    damaged[at + 8] = 8  # the method field says deflate; the central directory says stored
    (tmp_path / "damaged.bundle").write_bytes(bytes(damaged))
    with pytest.raises(BundleError, match=f"entry '{entry}': its zip header .* is damaged: method 0x8 where the "
                                          "central directory says 0x0") as info:
        launcher.load_bundle(tmp_path / "damaged.bundle")
    assert info.value.entry == entry
    proc = _inspect(tmp_path / "damaged.bundle")
    assert proc.returncode == 2 and "is damaged" in proc.stderr and entry in proc.stderr, proc.stderr


def test_a_bundle_another_tool_compressed_is_still_called_so(small):
    import io
    import zipfile

    raw, _ = small
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as src, zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            out.writestr(info.filename, src.read(info.filename))
    e = _refused(buf.getvalue(), "entry 'manifest.json' is compressed or streamed", "manifest.json")
    assert "damaged" not in str(e)


def test_a_changed_timestamp_names_the_entry_whose_header_holds_it(small):
    raw, _ = small
    entry, at = _local_headers(raw)[1]
    edited = bytearray(raw)
    edited[at + 10] ^= 0x22  # the modification time: the entry reads, the archive is not as written
    _refused(bytes(edited), f"not as launcher writes it: the local header of entry {re.escape(repr(entry))} differs "
                            f"at byte {at + 10}", re.escape(entry))


@pytest.mark.parametrize("at", [0, 1, 65535, 65536, 65537, 200_001, None])
def test_the_first_difference_is_found_block_by_block(at):
    """_first_difference_at compares a large archive in blocks (not byte by byte in Python), part by
    part, and still finds the first byte that differs, or the length where one archive is a prefix of
    the other."""
    expected = bytes(range(256)) * 1200  # 307,200 bytes
    raw = bytearray(expected)
    if at is None:
        raw = raw[:250_000]
    else:
        raw[at] ^= 1
        raw[at + 5] ^= 1  # a later difference is not the first
    first, size = BF._first_difference_at(bytes(raw), [expected[:70_000], expected[70_000:]])
    assert size == len(expected) and first == (250_000 if at is None else at)
    text, entry = BF._first_difference(first, len(raw), size, [], {})
    want = 250_000 if at is None else at
    assert entry is None and (text == ": 250000 bytes where launcher writes 307200" if at is None
                              else text == f": the end-of-archive record differs at byte {want}")


def test_a_path_that_is_not_a_regular_file_is_refused_without_reading_it(tmp_path):
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it to read would wait for a writer
    for path, message in ((fifo, "not a regular file"), ("/dev/zero", "not a regular file"),
                          (tmp_path, "not a regular file|cannot be read"), (0, "expected a path")):
        with pytest.raises(BundleError, match=message):
            launcher.load_bundle(path)


def test_reading_a_bundle_holds_about_three_copies_of_it_at_most(small, tmp_path):
    """The file's bytes, its entries and the decoded texts: the archive is compared with what the
    writer makes of the entries part by part, not by building a second archive (a 100 MB bundle peaked
    at 515 MB, and every read set aside the 2 GiB limit first)."""
    import tracemalloc

    _, data = small
    vid = sorted(data.variants)[0]
    variant = data.variants[vid]
    data.variants[vid] = variant.replace(ptx=(variant.ptx or "") + "\n// " + "x" * 20_000_000 + "\n")
    try:
        raw = BF.bundle_bytes(data, "memory test")
    finally:
        data.variants[vid] = variant
    path = tmp_path / "large.bundle"
    path.write_bytes(raw)
    size = len(raw)
    del raw
    tracemalloc.start()
    try:
        BF.read_bundle(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3.3 * size, f"{peak / size:.1f} x the bundle's size"
