"""Fuzzing bundle files (issue 12): a real bundle (exported and captured kernels, with autotune and
heuristics layers), then truncated, with bytes flipped, a spec's offsets and sizes edited (with
the manifest's hashes left alone, recomputed, or recomputed with the variant's id too), or
entries dropped (from the archive, the manifest, or both). Every such file gets BundleError
from launcher.load_bundle, never another exception and never a crash; random edits of the
manifest's data with consistent hashes may make a valid bundle, but never anything but a
bundle or a BundleError. At least MIN_CASES files are tried (checked by the last test).
"""
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import bundle_cases as BC
import cpu_corpus as C
import launcher
from launcher import BundleError
from launcher import bundle_format as BF

MIN_CASES = 1500
CASES = {"refused": 0, "anything": 0}
FUZZ = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz")
    launcher.export(d / "exported.bundle", C.BY_NAME["vector_add"].compile(), C.BY_NAME["tuples"].compile(),
                    C.BY_NAME["host_tma"].compile(80))
    BC.capture_workload(d / "captured.bundle", 90)
    return Bundles((d / name).read_bytes() for name in ("exported.bundle", "captured.bundle"))


class Bundles(list):
    def __repr__(self):  # failure reports name the case, not 700 kB of bytes
        return f"<{len(self)} bundles of {[len(b) for b in self]} bytes>"


def load(raw, tmp_path):
    path = tmp_path / "fuzzed.bundle"
    path.write_bytes(raw)
    return launcher.load_bundle(path)


def refused(raw, tmp_path):
    with pytest.raises(BundleError) as info:
        load(raw, tmp_path)
    CASES["refused"] += 1
    assert str(info.value).startswith("bundle ")
    return info.value


def _spec_entries(raw):
    return sorted(n for n in BC.members_of(raw) if n.endswith("spec.json"))


@settings(max_examples=300, **FUZZ)
@given(st.integers(0, 1), st.floats(0, 1, exclude_max=True))
def test_truncated_files_are_refused(bundles, tmp_path, which, at):
    raw = bundles[which]
    refused(raw[:int(at * len(raw))], tmp_path)


@settings(max_examples=500, **FUZZ)
@given(st.integers(0, 1), st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(1, 255)), min_size=1,
                                   max_size=4))
def test_flipped_bytes_are_refused(bundles, tmp_path, which, flips):
    raw = bytearray(bundles[which])
    for at, mask in flips:
        raw[int(at * len(raw))] ^= mask
    if bytes(raw) == bundles[which]:  # two flips that cancel out
        return
    refused(bytes(raw), tmp_path)


PARAM_FIELDS = ("offset", "size", "read_at")


@settings(max_examples=400, **FUZZ)
@given(st.integers(0, 1), st.data(), st.sampled_from(PARAM_FIELDS + ("packed_size",)),
       st.integers(-64, 64).filter(bool), st.sampled_from(["raw", "rehash", "reid"]))
def test_edited_spec_offsets_and_sizes_are_refused(bundles, tmp_path, which, data, field, delta, how):
    raw = bundles[which]
    name = data.draw(st.sampled_from(_spec_entries(raw)))

    def edit(members):
        spec = json.loads(members[name])
        if field == "packed_size":
            spec["packed_size"] += delta
        else:
            i = data.draw(st.integers(0, len(spec["params"]) - 1))
            spec["params"][i][field] += delta
        members[name] = BF._dumps(spec)
        if how == "reid":  # a consistent bundle around the edited spec: the variant's id is its hash again
            old = name.split("/")[1]
            cubin = members[f"variants/{old}/kernel.cubin"]
            new = BF._variant_id(members[name], cubin)
            for n in [n for n in members if n.startswith(f"variants/{old}/")]:
                members[n.replace(old, new)] = members.pop(n)
            members[BF.MANIFEST] = members[BF.MANIFEST].replace(old.encode(), new.encode())

    refused(BC.rezip(raw, edit, rehash=how != "raw"), tmp_path)


@settings(max_examples=300, **FUZZ)
@given(st.integers(0, 1), st.data(), st.sampled_from(["archive", "manifest", "both", "kernel", "variant"]))
def test_dropped_entries_are_refused(bundles, tmp_path, which, data, where):
    raw = bundles[which]
    members = BC.members_of(raw)
    names = sorted(n for n in members if n != BF.MANIFEST)
    name = data.draw(st.sampled_from(names))

    def edit(m):
        manifest = json.loads(m[BF.MANIFEST])
        if where in ("archive", "both"):
            m.pop(name)
        if where in ("manifest", "both"):
            manifest["entries"].pop(name)
        if where == "kernel":
            manifest["kernels"].pop(data.draw(st.integers(0, len(manifest["kernels"]) - 1)))
        if where == "variant":
            manifest["variants"].pop(data.draw(st.integers(0, len(manifest["variants"]) - 1)))
        m[BF.MANIFEST] = BF._dumps(manifest)

    refused(BC.rezip(raw, edit, rehash=where in ("both", "kernel", "variant")), tmp_path)


def test_the_manifest_or_everything_dropped_is_refused(bundles, tmp_path):
    for raw in bundles:
        refused(BC.rezip(raw, lambda m: m.pop(BF.MANIFEST), rehash=False), tmp_path)
        refused(BC.zip_members({BF.MANIFEST: BC.members_of(raw)[BF.MANIFEST]}), tmp_path)


def _paths(value, prefix=()):
    """Every leaf path of JSON data."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))
    yield prefix


JUNK = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False, allow_infinity=False),
                 st.text(max_size=12), st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=4),
                                                                                            st.integers(), max_size=2),
                 st.sampled_from(["constexpr", "*fp32", "i32", "tensordesc<fp16[64, 64]>", "__import__('os')",
                                  "x y", "_launcher_grid", "#0", "import"]))


@settings(max_examples=500, **FUZZ)
@given(st.integers(0, 1), st.data(), JUNK, st.booleans())
def test_any_edit_of_the_manifest_or_a_spec_is_a_bundle_or_a_bundle_error(bundles, tmp_path, which, data, junk, spec):
    raw = bundles[which]
    members = BC.members_of(raw)
    name = data.draw(st.sampled_from(_spec_entries(raw))) if spec else BF.MANIFEST
    doc = json.loads(members[name])
    path = data.draw(st.sampled_from(list(_paths(doc))))

    def edit(m):
        d = json.loads(m[name])
        if not path:
            d = junk
        else:
            target = d
            for p in path[:-1]:
                target = target[p]
            target[path[-1]] = junk
        m[name] = json.dumps(d).encode()

    edited = BC.rezip(raw, edit)
    try:
        bundle = load(edited, tmp_path)
    except BundleError as e:
        assert str(e).startswith("bundle ")
    else:
        for k in bundle.kernels.values():  # a valid bundle: its kernels' call paths and choosers can be made
            assert k.chooser.variants and callable(k._generate())
    CASES["anything"] += 1


def test_every_refusal_names_the_entry(bundles, tmp_path):
    raw = bundles[1]
    name = _spec_entries(raw)[0]
    flip = lambda b: b[:10] + bytes([b[10] ^ 1]) + b[11:]  # noqa: E731
    e = refused(BC.rezip(raw, lambda m: m.update({name: flip(m[name])}), rehash=False), tmp_path)
    assert e.entry == name and re.search(re.escape(name) + ": SHA-256 mismatch", str(e))


def test_enough_cases_were_tried():
    assert CASES["refused"] + CASES["anything"] >= MIN_CASES, CASES
