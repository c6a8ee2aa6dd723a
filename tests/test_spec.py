"""LaunchSpec: built from real Triton-compiled kernels (CPU, sm_90/sm_80), JSON round trips that
pack the same bytes, refusal of specs that contradict themselves, shape sharing, and the
generated code's visibility in tracebacks."""
import copy
import inspect
import json
import traceback

import pytest

import cpu_corpus as C
import kernels as K
import launcher
from launcher import CudaLauncher, LaunchSpec, SpecError, triton_adapter
from launcher import spec as S
from ptx_params import ptx_param_sizes
from triton_compile import compile_cpu

BASE = (1, 1, 1, 0, 0)  # grid, stream, function


def base_for(spec):
    return BASE + (spec.packed_metadata, None, None, None)


@pytest.fixture(autouse=True)
def fake_scratch_allocator():
    """Scratch for the kernels that take it: fake addresses, as CI has no GPU."""
    import triton

    calls = []

    def alloc(size, align, stream):
        calls.append((size, align, stream))
        return C.FakeTensor(0x7E0000000000)

    triton.set_allocator(alloc)
    return calls


def spec_of(ck):
    return CudaLauncher(ck.src, ck.metadata).spec


@pytest.mark.parametrize("entry", C.ENTRIES, ids=lambda e: e.name)
def test_corpus_specs_match_their_ptx(entry):
    ck = entry.compile()
    spec = spec_of(ck)
    assert [p.size for p in spec.params] == ptx_param_sizes(ck.asm["ptx"], ck.metadata.name)
    assert spec.kernel == ck.metadata.name and spec.arch == 90
    assert spec.packed_metadata == tuple(ck.packed_metadata)
    assert spec.global_scratch == (ck.metadata.global_scratch_size, ck.metadata.global_scratch_align)
    assert spec.cluster_dims == (ck.metadata.num_ctas, 1, 1)
    assert spec.launch_pdl == ck.metadata.launch_pdl
    assert spec.launch_cooperative_grid == ck.metadata.launch_cooperative_grid


@pytest.mark.parametrize("entry", C.ENTRIES, ids=lambda e: e.name)
def test_json_round_trip_is_the_same_spec_and_packs_the_same_bytes(entry):
    ck = entry.compile()
    original = CudaLauncher(ck.src, ck.metadata)
    text = json.dumps(original.spec.to_json())
    spec = LaunchSpec.from_json(json.loads(text))
    assert spec == original.spec
    assert json.loads(json.dumps(spec.to_json())) == json.loads(text)
    if entry.args is None:  # host TMA descriptors: encoding needs the driver
        return
    restored = CudaLauncher.from_spec(spec, global_allocator=triton_adapter.global_scratch_allocator)
    want = original.dry_run(*base_for(spec), *entry.args)
    assert restored.dry_run(*base_for(spec), *entry.args) == want
    assert restored.dry_run_planned(*base_for(spec), *entry.args) == want


def test_assumptions_record_divisibility_and_constexprs():
    entry = C.BY_NAME["tuples"]
    spec = spec_of(entry.compile())
    assert spec.aligned == ((0,), (1, 0), (1, 1), (2, 0, 0))
    assert dict(spec.constants) == {(1, 2): 3, (2, 1, 0): 5, (3,): 2}
    assert spec.arg_name((2, 1, 0)) == "nested[1][0]"


def test_irsource_specs_are_named_by_position_and_read_divisibility_from_the_ir(tmp_path):
    import triton
    from triton.backends.compiler import GPUTarget

    ck = C.BY_NAME["vector_add"].compile()
    path = tmp_path / "add.ttgir"
    path.write_text(ck.asm["ttgir"])
    ir_ck = triton.compile(str(path), target=GPUTarget("cuda", 90, 32))
    spec = spec_of(ir_ck)
    assert [p.size for p in spec.params] == ptx_param_sizes(ir_ck.asm["ptx"], ir_ck.metadata.name)
    assert [spec.param_name(i) for i in range(4)] == ["#0", "#1", "#2", "#3"]
    assert spec.aligned == ((0,), (1,), (2,), (3,)) and spec.constants == ()


def test_param_names_for_tuples_descriptors_and_scratch():
    spec = spec_of(C.BY_NAME["tuples"].compile())
    assert [spec.param_name(i) for i in range(len(spec.params))] == [
        "out", "t[0]", "t[1]", "nested[0][0]", "nested[0][1]", "nested[1][1]", "scale",
        "<global scratch>", "<profile scratch>"]


@pytest.mark.parametrize("arch", [90, 80])
def test_host_tensor_descriptors_with_and_without_tma(arch):
    ck = compile_cpu(K.tma_copy_kernel, C.TMA_SIG, (("BM", 64), ("BN", 64)), arch=arch)
    spec = spec_of(ck)
    assert [p.size for p in spec.params] == ptx_param_sizes(ck.asm["ptx"], ck.metadata.name)
    names = [spec.param_name(i) for i in range(len(spec.params))]
    if arch == 90:
        assert [p.kind for p in spec.params].count(S.TENSORMAP) == 2
        assert names[:5] == ["in_desc", "in_desc.shape[0]", "in_desc.shape[1]", "in_desc.strides[0]",
                             "in_desc.strides[1]"]
    else:
        flags = ["padding"] + (["round_f32_to_tf32"] if spec.conventions.tensordesc_tf32_flag else [])
        expected = ["base", "shape[0]", "shape[1]", "strides[0]", "strides[1]", *flags,
                    "shape[0]", "shape[1]", "strides[0]", "strides[1]"]
        assert names[:len(expected)] == ["in_desc." + e for e in expected]
    assert LaunchSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec


def test_conventions_follow_the_installed_release():
    v = triton_adapter.triton_version()
    c = triton_adapter.release().conventions
    assert c.tensordesc_tf32_flag == c.tma_original_shape == c.tma_tf32 == c.tma_clear_bit21 == (v >= (3, 7))
    assert c.oversized_shared == (v >= (3, 8))


META = {"swizzle": 3, "elem_size": 2, "elem_type": 6, "block_size": [16, 16]}  # as Triton writes one


def test_unknown_type_and_im2col_are_unsupported():
    with pytest.raises(S.UnsupportedSignature, match="fp8e5"):
        S.layout_for(["fp8e5"], tf32_flag=True)
    with pytest.raises(S.UnsupportedSignature, match="im2col"):
        S.layout_for(["tensordesc_im2col<fp16[64, 64],input_rank=4>"], [META], tf32_flag=True)


def test_parameter_space_is_limited_to_what_cuda_allows():
    ck = C.BY_NAME["vector_add"].compile()
    big = S.layout_for(["i64"] * 4093, tf32_flag=True)  # 32744 + 16 scratch bytes: fits
    assert big.size - S.HEADER_SIZE == 32760
    src = type("Src", (), {"signature": {f"a{i}": "i64" for i in range(4094)}})()
    with pytest.raises(ValueError, match=r"kernel 'add_kernel' takes 32768 bytes of parameters; CUDA allows at most 32764"):
        triton_adapter.spec_from_triton(src, ck.metadata)


def test_descriptor_count_must_match_metadata():
    with pytest.raises(S.UnsupportedSignature, match="2 tensordesc_meta entries for 1"):
        S.layout_for(["tensordesc<fp16[16, 16]>"], [META, META], tf32_flag=True)


def test_limits_are_the_native_librarys():
    _, lib = launcher.driver.native()
    ffi, _ = launcher.driver.native()
    assert S.MAX_PARAM_BYTES == lib.LAUNCHER_MAX_PARAM_BYTES == 32764
    assert S.HEADER_SIZE == ffi.sizeof("launcher_header") == 32
    assert S.HEADER_FORMAT == "QQiiii"


# ---- specs that contradict themselves ----
@pytest.fixture(scope="module")
def spec_json():
    return CudaLauncher(*_src_md(C.BY_NAME["tuples"])).spec.to_json()


def _src_md(entry):
    ck = entry.compile()
    return ck.src, ck.metadata


EDITS = [
    ("format", lambda d: d.update(format="something else"), "spec.format"),
    ("version", lambda d: d.update(version=99), "spec.version: this launcher reads version 1"),
    ("offset", lambda d: d["params"][2].update(offset=d["params"][2]["offset"] + 4), r"spec.params\[2\].offset"),
    ("size", lambda d: d["params"][0].update(size=-8), r"spec.params\[0\].size"),
    ("kind", lambda d: d["params"][1].update(kind="value"), r"spec.params\[1\].kind"),
    ("read_at", lambda d: d["params"][1].update(read_at=10**9), r"spec.params\[1\].read_at"),
    ("missing param", lambda d: d["params"].pop(), "parameters recorded"),
    ("extra param", lambda d: d["params"].append(dict(d["params"][0])), "parameters recorded"),
    ("packed size", lambda d: d.update(packed_size=8), "spec.packed_size"),
    ("type", lambda d: d["args"][0].update(type="fp8e5"), "unknown type 'fp8e5'"),
    ("type not a string", lambda d: d["args"][0].update(type=7), "a type must be a string"),
    ("num_warps", lambda d: d["launch"].update(num_warps=0), "num_warps: 0 is out of range"),
    ("num_warps type", lambda d: d["launch"].update(num_warps=4.0), "expected an integer"),
    ("cluster", lambda d: d["launch"].update(cluster_dims=[2, 1]), "cluster_dims"),
    ("cluster not num_ctas", lambda d: d["launch"].update(cluster_dims=[2, 1, 1]), "clusters of \\[1, 1, 1\\]"),
    ("cluster along y", lambda d: d["launch"].update(num_ctas=2, cluster_dims=[1, 2, 1]), "clusters of \\[2, 1, 1\\]"),
    ("shared", lambda d: d["launch"].update(shared=-1), "shared: -1 is out of range"),
    ("scratch align", lambda d: d["scratch"]["global"].update(align=3), "not a power of two"),
    ("conventions", lambda d: d["conventions"].pop("tma_tf32"), "spec.conventions"),
    ("arch", lambda d: d["target"].update(arch="sm_90"), "spec.target.arch"),
    ("aligned path", lambda d: d["assumptions"]["divisible_by_16"].append([99]), "is not an argument path"),
    # a recorded assumption must name an argument it can hold for, or it would silently never be checked
    ("aligned on a tuple", lambda d: d["assumptions"]["divisible_by_16"].append([2]), "not a pointer or integer"),
    ("aligned past a leaf", lambda d: d["assumptions"]["divisible_by_16"].append([0, 0]), "not a pointer or integer"),
    ("aligned float", lambda d: d["assumptions"]["divisible_by_16"].append([4]), "not a pointer or integer"),
    ("aligned constexpr", lambda d: d["assumptions"]["divisible_by_16"].append([3]), "not a pointer or integer"),
    ("aligned twice", lambda d: d["assumptions"]["divisible_by_16"].append([0]), "a path appears twice"),
    ("constexpr on a pointer", lambda d: d["assumptions"]["constexprs"].append([[0], 5]), "not a constexpr argument"),
    ("constexpr past a tuple", lambda d: d["assumptions"]["constexprs"].append([[1, 7], 5]),
     "not a constexpr argument"),
    ("constexpr twice", lambda d: d["assumptions"]["constexprs"].append([[3], 4]), r"\[3\] appears twice"),
    ("not an object", lambda d: d.clear(), "missing field|spec.format"),
]


@pytest.mark.parametrize("label,edit,message", EDITS, ids=[e[0] for e in EDITS])
def test_a_spec_that_contradicts_itself_is_refused(spec_json, label, edit, message):
    data = copy.deepcopy(spec_json)
    edit(data)
    with pytest.raises(SpecError, match=message):
        LaunchSpec.from_json(data)


@pytest.mark.parametrize("data", [None, [], "spec", 7, {"format": S.SPEC_FORMAT}])
def test_garbage_is_a_spec_error(data):
    with pytest.raises(SpecError):
        LaunchSpec.from_json(data)


# ---- shapes ----
def test_kernels_of_one_shape_share_a_shape_and_keep_their_names():
    a = C.BY_NAME["vector_add"].compile()
    sig = tuple((n.replace("ptr", "p"), t) for n, t in C.ADD_SIG)
    b = compile_cpu(K.add_kernel_renamed, sig, (("BLOCK", 1024),), 90, ((0,), (1,), (2,), (3,)))
    la, lb = CudaLauncher(a.src, a.metadata), CudaLauncher(b.src, b.metadata)
    assert la._shape is lb._shape and type(la) is type(lb)
    assert la.spec.kernel == "add_kernel" and lb.spec.kernel == "add_kernel_renamed"
    base = base_for(la.spec)
    with pytest.raises(TypeError, match="kernel 'add_kernel_renamed': parameter 'y_p'"):
        lb.dry_run(*base, 0, "not a pointer", 0, 1, 1024)
    with pytest.raises(TypeError, match="kernel 'add_kernel': parameter 'y_ptr'"):
        la.dry_run(*base, 0, "not a pointer", 0, 1, 1024)
    lc = CudaLauncher(b.src, b.metadata)  # its own spec not made yet: the planned packer's refusal names its parameter
    with pytest.raises(TypeError, match="kernel 'add_kernel_renamed': parameter 'y_p'"):
        lc.dry_run_planned(*base, 0, "not a pointer", 0, 1, 1024)


def test_a_launcher_triton_makes_derives_its_own_spec_on_first_use():
    """Construction costs the lookup of the shape (a launch needs nothing more); the kernel's own
    spec (its names, target and assumptions) is made when first asked for, and it is the spec
    spec_from_triton makes."""
    a = C.BY_NAME["vector_add"].compile()
    la = CudaLauncher(a.src, a.metadata)
    assert "spec" not in la.__dict__ and la.name == "add_kernel"
    assert la.spec == triton_adapter.spec_from_triton(a.src, a.metadata)
    assert la.__dict__["spec"] is la.spec
    assert la.packed_metadata == la.spec.packed_metadata


def test_another_launch_configuration_is_another_shape():
    a = C.BY_NAME["vector_add"].compile()
    b = C.BY_NAME["num_ctas_2"].compile()
    assert CudaLauncher(a.src, a.metadata)._shape is not CudaLauncher(b.src, b.metadata)._shape


# ---- the generated code is visible ----
def test_a_traceback_through_the_generated_code_shows_its_lines():
    ck = C.BY_NAME["vector_add"].compile()
    run = CudaLauncher(ck.src, ck.metadata)
    with pytest.raises(TypeError) as info:
        run.dry_run(*base_for(run.spec), 0, 0, 0, "n is not an int", 1024)
    frames = traceback.extract_tb(info.value.__traceback__)
    generated = [f for f in frames if f.filename.startswith("<launcher generated dry_run")]
    assert generated, [f.filename for f in frames]
    assert generated[0].line and "self._bad_call(exc" in generated[0].line
    source = inspect.getsource(run._shape.code["dry_run"])
    assert source.lstrip().startswith("def dry_run(self, gridX") and "pack_all(function, stream" in source


def test_first_launches_are_planned_then_the_fast_path_takes_over(monkeypatch):
    """A new shape's launchers are CudaLauncher itself (no class, no generated code); after
    HOT_AFTER launches of the shape, the launcher that launched and the shape's later ones are
    of the shape's subclass, whose __call__ is its generated launch. The C entry is swapped for
    one that records the launch (no GPU here)."""
    ck = C.BY_NAME["grid_3d"].compile()
    launcher.cuda_launcher.clear_launcher_cache()
    run = CudaLauncher(ck.src, ck.metadata)
    shape = run._shape
    assert type(run) is CudaLauncher and not shape.code and shape.hot is None
    assert CudaLauncher.HOT_AFTER >= 1
    other = CudaLauncher(ck.src, ck.metadata)  # made while the shape is cold
    launched = []
    monkeypatch.setattr(shape, "c_launch", lambda plan, buf, size: launched.append(size) or 0)
    args = C.BY_NAME["grid_3d"].args
    for _ in range(CudaLauncher.HOT_AFTER):
        assert type(run) is CudaLauncher
        run(1, 1, 1, 0, 0x1000, ck.packed_metadata, None, None, None, *args)
    assert len(launched) == CudaLauncher.HOT_AFTER
    hot = shape.hot
    assert type(run) is hot and issubclass(hot, CudaLauncher) and hot.__call__ is shape.code["launch"]
    assert hot.__call__.__code__.co_filename.startswith("<launcher generated launch")
    assert type(CudaLauncher(ck.src, ck.metadata)) is hot  # made hot
    assert type(other) is CudaLauncher
    other(1, 1, 1, 0, 0x1000, ck.packed_metadata, None, None, None, *args)  # one planned launch, then hot
    assert type(other) is hot and len(launched) == CudaLauncher.HOT_AFTER + 1


def test_a_shape_whose_launch_code_exists_already_still_turns_hot():
    """The fast dispatch generates a shape's launch code for its hits, possibly before the
    shape's launchers have launched HOT_AFTER times: they still switch to it then."""
    ck = C.BY_NAME["grid_3d"].compile()
    launcher.cuda_launcher.clear_launcher_cache()
    shape = CudaLauncher(ck.src, ck.metadata)._shape
    code = shape.generated("launch")
    assert shape.hot is None
    assert shape.make_hot().__call__ is code


@pytest.mark.parametrize("entry", [e for e in C.ENTRIES if e.args is not None], ids=lambda e: e.name)
def test_the_direct_launch_packs_what_a_launch_packs(entry):
    """CudaLauncher.direct() (bundles launch through it; the fast dispatch's hits call the same
    generated code unbound) hands the
    C launch the plan and bytes the generated launch packs, and refuses what it refuses. Its
    C entry is swapped for one that records what it is given (no GPU here)."""
    from launcher import codegen

    ck = entry.compile()
    run = CudaLauncher(ck.src, ck.metadata)
    shape = run._shape
    plan, want, _ = run.pack(*BASE, run.spec.packed_metadata, *entry.args)
    got = []
    namespace = dict(shape.namespace, c_launch=lambda plan, buf, size: got.append((plan, bytes(buf), size)) or 0)
    direct = codegen.generate("direct", run.spec.layout, (run.spec.global_scratch[0], run.spec.profile_scratch[0]),
                              namespace, shape.encoders)
    direct(run, *BASE, *entry.args)
    assert got == [(plan, bytes(want), run.spec.layout.size)]
    with pytest.raises(TypeError) as direct_error:
        direct(run, *BASE)  # no arguments
    with pytest.raises(TypeError) as dry_run_error:
        run.dry_run(*base_for(run.spec))
    assert str(direct_error.value) == str(dry_run_error.value)
    assert inspect.getsource(shape.generated("direct")).lstrip().startswith("def direct(self, gridX, gridY, gridZ, stream")


def test_callable_constants_encode_as_tritons_cache_key_holds_them():
    """A function constexpr encodes with what Triton's cache key holds for it: a @triton.jit
    function its cache_key (two of one source are one constant, two of one name and other
    sources are two), a Python function or lambda str() (that object only: every lambda of a
    scope shares one qualname)."""
    add, mul, add2 = K.combiner("add"), K.combiner("mul"), K.combiner("add")
    enc = S.encode_constant
    assert enc(add)["function"] == enc(mul)["function"] == "kernels.combiner.<locals>.combine"
    assert S.same_constant(enc(add), enc(add2)) and not S.same_constant(enc(add), enc(mul))
    assert enc(add)["key"] == add.cache_key
    f, g = (lambda a: a), (lambda a: a)
    assert S.same_constant(enc(f), enc(f)) and not S.same_constant(enc(f), enc(g))
    assert json.loads(json.dumps(enc(add))) == enc(add)  # JSON data, as bundles record it
