"""The native library trusts nothing it is handed (CPU: the dry run reaches no driver).

Malformed plans are refused when they are made, with the reason in words; a buffer of the wrong
size is refused by every launch entry; the process survives all of it. .ci/asan.sh runs this
file against an AddressSanitizer build of the library."""
import pytest

import cpu_corpus as C
from launcher import CudaLauncher, PlanError, cuda_launcher, driver
from launcher.driver import CudaDriverNotFound
from launcher import spec as S

H = S.HEADER_SIZE


def lib():
    return driver.native()[1]


def kinds(*names):
    return [getattr(lib(), "LAUNCHER_PARAM_" + n) for n in names]


def plan(offsets=(H, H + 8), sizes=(8, 4), kind=("POINTER", "VALUE"), size=H + 16, block=128,
         shared=0, cluster=1, attrs=()):
    return driver.make_plan(list(offsets), list(sizes), kinds(*kind) if kind and isinstance(kind[0], str) else list(kind),
                            size, block, shared, cluster, attrs)


def test_a_good_plan_dry_runs_what_it_was_given():
    p = plan()
    buf = bytes(H) + (0x1234).to_bytes(8, "little") + (7).to_bytes(4, "little") + bytes(4)
    ffi, L = driver.native()
    out = ffi.new("char[]", 12)
    assert L.launcher_dry_run(p, buf, len(buf), out, 12) == 0
    assert bytes(ffi.buffer(out, 12)) == buf[H:H + 12]


MALFORMED = [
    ("negative count", dict(offsets=[], sizes=[], kind=[]), None),  # fine: no parameters
    ("offset past the buffer", dict(offsets=(H, H + 16)), "parameter 1 lies outside the packed buffer"),
    ("offset into the header", dict(offsets=(0, H + 8)), "parameter 0 lies outside the packed buffer, overlaps its header"),
    ("negative offset", dict(offsets=(H, -4)), "parameter 1 lies outside"),
    ("misaligned pointer", dict(offsets=(H + 4, H + 12), size=H + 24), "parameter 0 .* misaligned"),
    ("negative size", dict(sizes=(8, -4)), "parameter 1 has a size that is not positive"),
    ("zero size", dict(sizes=(8, 0)), "parameter 1 has a size that is not positive"),
    ("pointer of 4 bytes", dict(sizes=(4, 4)), "parameter 0 has a size that is not positive or wrong for its kind"),
    ("unknown kind", dict(kind=(1, 9)), "parameter 1 has an unknown kind"),
    ("buffer smaller than the header", dict(offsets=[], sizes=[], kind=[], size=8), "packed size 8 is below the header"),
    ("buffer beyond the parameter space", dict(offsets=[], sizes=[], kind=[], size=H + 70000), "above the parameter space"),
    ("too many bytes", dict(offsets=(H, H + 8), sizes=(8, 32760), size=H + 32768), "take 32768 bytes"),
    ("zero block", dict(block=0), "block size or cluster size is zero"),
    ("zero cluster", dict(cluster=0), "block size or cluster size is zero"),
    ("unknown attribute", dict(attrs=[(99, (1, 0, 0))]), "launch attribute 0 is unknown"),
    ("too many attributes", dict(attrs=[(2, (1, 0, 0))] * 9), "launch attribute 9 is unknown, or there are too many"),
]


@pytest.mark.parametrize("label,kw,message", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_plans_are_refused_when_made(label, kw, message):
    if message is None:
        plan(**kw)
        return
    with pytest.raises(PlanError, match=message):
        plan(**kw)


def test_too_many_parameters_are_refused():
    n = S.MAX_PARAM_BYTES + 1
    with pytest.raises(PlanError, match=f"too many parameters \\({n}\\)"):
        driver.make_plan([H] * n, [1] * n, kinds("VALUE") * n, H + n, 32, 0, 1)


def test_plan_arrays_of_different_lengths_and_values_out_of_range_are_refused():
    with pytest.raises(PlanError, match="2 offsets, 1 sizes"):
        driver.make_plan([H, H + 8], [8], kinds("POINTER", "VALUE"), H + 16, 32, 0, 1)
    with pytest.raises(PlanError, match="block size -1 is out of range"):
        plan(block=-1)
    with pytest.raises(PlanError):
        driver.make_plan([2**40], [8], kinds("POINTER"), H + 16, 32, 0, 1)  # not a C int


@pytest.mark.parametrize("delta", [-1, 1, -(H + 16)])
def test_every_entry_refuses_a_buffer_of_the_wrong_size(delta):
    ffi, L = driver.native()
    p = plan()
    buf = bytes(H + 16 + delta) if H + 16 + delta > 0 else b""
    out = ffi.new("char[]", 64)
    for status in (L.launcher_dry_run(p, buf, len(buf), out, 64),
                   L.launcher_launch(p, buf, len(buf)),
                   L.launcher_launch_repeat(p, buf, len(buf), 3)):
        assert status == L.LAUNCHER_ERROR_BAD_BUFFER
        assert isinstance(driver.error(status), PlanError)
    with pytest.raises(PlanError, match="does not have the plan's size"):
        driver.bind(p, buf)


def test_a_dry_run_output_too_small_is_refused():
    ffi, L = driver.native()
    p = plan()
    out = ffi.new("char[]", 11)  # the parameters need 12 bytes
    assert L.launcher_dry_run(p, bytes(H + 16), H + 16, out, 11) == L.LAUNCHER_ERROR_BAD_BUFFER
    assert L.launcher_dry_run(p, bytes(H + 16), H + 16, ffi.NULL, 64) == L.LAUNCHER_ERROR_BAD_BUFFER


def test_a_null_plan_is_refused():
    ffi, L = driver.native()
    assert L.launcher_dry_run(ffi.NULL, bytes(H), H, ffi.new("char[]", 8), 8) == L.LAUNCHER_ERROR_BAD_PLAN
    assert L.launcher_launch(ffi.NULL, bytes(H), H) == L.LAUNCHER_ERROR_BAD_PLAN
    assert L.launcher_bound_launch(ffi.NULL, 0) == L.LAUNCHER_ERROR_BAD_PLAN
    assert L.launcher_plan_dry_run_size(ffi.NULL) == -1
    failed = ffi.new("int *")
    nulls = ffi.new("launcher_bound *[]", 3)
    assert L.launcher_bound_sequence(nulls, 3, 0, 1, failed) == L.LAUNCHER_ERROR_BAD_PLAN and failed[0] == 0
    for n in (0, -1, L.LAUNCHER_SEQUENCE_MAX + 1):  # the count is checked before any item is read
        assert L.launcher_bound_sequence(ffi.NULL, n, 0, 1, failed) == L.LAUNCHER_ERROR_BAD_PLAN
        assert failed[0] == -1  # no launch's failure


def test_a_sequence_of_bound_launches_is_checked_in_python():
    for bad, err in [([], ValueError), (["not bound"], TypeError), ([None], TypeError)]:
        with pytest.raises(err):
            cuda_launcher.repeat_sequence(bad, 1)
    with pytest.raises(ValueError, match="1 to 64"):
        driver.bound_sequence([driver.native()[0].NULL] * 65, 0, 1)
    ck = C.BY_NAME["vector_add"].compile()
    run = CudaLauncher(ck.src, ck.metadata)
    bound = run.bind(1, 1, 1, 0, 0, run.spec.packed_metadata, *C.BY_NAME["vector_add"].args)
    for count in (-1, 1.0, True):
        with pytest.raises(ValueError, match="count"):
            cuda_launcher.repeat_sequence([bound], count)
    if driver.native()[1].launcher_driver_init() != 0:  # no GPU here: the driver's failure is no launch's
        with pytest.raises(CudaDriverNotFound):
            cuda_launcher.repeat_sequence([bound, bound], 1)


def test_a_launcher_handed_a_short_buffer_raises_and_survives():
    ck = C.BY_NAME["vector_add"].compile()
    run = CudaLauncher(ck.src, ck.metadata)
    plan_, buf, _ = run.pack(1, 1, 1, 0, 0, run.spec.packed_metadata, *C.BY_NAME["vector_add"].args)
    with pytest.raises(PlanError):
        driver.bind(plan_, buf[:-1])
    ffi, L = driver.native()
    with pytest.raises(PlanError):
        raise driver.error(L.launcher_dry_run(plan_, buf[:-8], len(buf) - 8, ffi.new("char[]", 64), 64))
    # and the launcher still works
    assert run.dry_run(1, 1, 1, 0, 0, run.spec.packed_metadata, None, None, None,
                       *C.BY_NAME["vector_add"].args)[3] == (98432).to_bytes(4, "little")


def test_the_plans_of_every_corpus_kernel_are_valid():
    for entry in C.ENTRIES:
        ck = entry.compile()
        run = CudaLauncher(ck.src, ck.metadata)
        assert driver.dry_run_size(run._shape.plan) == sum(p.size for p in run.spec.params)


@pytest.mark.parametrize("rank, shape, strides, box, elem_size", [
    (0, [1], [1], [1], 4),
    (6, [1] * 6, [1] * 6, [1] * 6, 4),
    (2, [64, -1], [64, 1], [64, 64], 2),
    (2, [64, 64], [-64, 1], [64, 64], 2),
    (2, [64, 64], [2**62, 1], [64, 64], 4),  # a byte stride beyond 64 bits
    (2, [64, 64], [64, 1], [0, 64], 2),
    (2, [64, 64], [64, 1], [64, 64], 0),
], ids=["rank 0", "rank 6", "negative size", "negative stride", "byte stride overflow", "empty box",
        "no element size"])
def test_a_tensor_map_geometry_out_of_range_is_refused_before_the_driver(rank, shape, strides, box, elem_size):
    """launcher_encode_tensor and launcher_encode_tensor_map (a format made once, one array of
    sizes and strides) check the geometry before they open the driver (so also here, with no GPU,
    and under AddressSanitizer) and write nothing."""
    ffi = driver.native()[0]
    out = ffi.new("char[128]", b"\x5a" * 128)
    rc = lib().launcher_encode_tensor(out, 7, rank, 0x1000, shape, strides, box, elem_size, 0, 0, 2, 0, 0)
    assert rc == lib().LAUNCHER_ERROR_BAD_GEOMETRY
    assert bytes(ffi.buffer(out, 128)) == b"\x5a" * 128
    fmt = ffi.new("launcher_tensor_map_format *", {"elem_type": 7, "rank": rank, "box": box[:5], "elem_size": elem_size,
                                                   "l2_promotion": 2})
    dims = ffi.new("int64_t[]", shape + strides)
    assert lib().launcher_encode_tensor_map(out, fmt, 0x1000, dims) == lib().LAUNCHER_ERROR_BAD_GEOMETRY
    assert bytes(ffi.buffer(out, 128)) == b"\x5a" * 128


def test_tensor_map_arrays_of_another_rank_are_refused_in_python():
    with pytest.raises(ValueError, match="different ranks"):
        driver.encode_tensor(7, 0x1000, [64, 64], [1], [64, 64], 4, 0, 0, 2, 0)
