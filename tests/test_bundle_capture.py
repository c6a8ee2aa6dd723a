"""launcher.capture (issue 12) with Triton's own JIT, autotuner and heuristics running on the CPU
(tests/cpu_triton.py: launches are launcher dry runs, for sm_90 and sm_100): every kernel and
specialization launched or loaded in the block is in the bundle, kernels compiled before it
too; the autotuner's choice per key and the heuristics' results are recorded; a block that
raises writes nothing. tests/test_bundle_no_triton.py replays the recorded calls without Triton.
"""
import threading

import pytest
import triton
import triton.language as tl

import bundle_cases as BC
import cpu_corpus as C
import launcher
from bundle_cases import WORKLOAD
from cpu_triton import FakeTensor, cpu_triton
from launcher import BundleError, CudaLauncher
from launcher import bundle_format as BF


@pytest.fixture(scope="module", params=[90, 100])
def captured(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("capture") / f"captured{request.param}.bundle"
    launches = BC.capture_workload(path, request.param)
    return request.param, BF.read_bundle(path), launches


def test_every_kernel_and_specialization_launched_is_captured(captured):
    arch, data, launches = captured
    assert set(data.kernels) == {c.kernel for c in WORKLOAD} | {"kernels.tma_copy_kernel"}
    specs = {v.spec for v in data.variants.values()}
    for call, launch in launches:
        assert launch.spec in specs, call
    assert all(v.arch == arch for v in data.variants.values())
    scale = data.kernels["bundle_kernels.scale_kernel"]
    ran = {launch.spec for call, launch in launches if call.kernel == scale.name}
    assert len(ran) == 4 and {data.variants[v].spec for v in scale.variants} == ran
    # the constexpr default, n == 1 and stride == 1 specialized away, i64 n: as Triton compiled them
    consts = [dict(data.variants[v].spec.constants) for v in scale.variants]
    assert {c.get((5,)) for c in consts} == {256, 128}
    assert any(c.get((2,)) == 1 and c.get((3,)) == 1 for c in consts)
    assert any(data.variants[v].spec.args[2].type == "i64" for v in scale.variants)
    # recorded calls: what the caller passed and the variant it ran
    assert len(scale.calls) == 4 and all(c.variant in scale.variants for c in scale.calls)


def test_a_kernel_compiled_before_the_block_and_launched_in_it_is_captured(captured):
    _, data, launches = captured
    add = data.kernels["kernels.add_kernel"]
    assert len(add.variants) == 1 and len(add.calls) == 1
    assert add.calls[0].args["x_ptr"] == {"tensor": "fp32", "aligned": True}
    assert add.calls[0].args["n"] == {"int": 4096} and add.calls[0].args["BLOCK"] == {"int": 1024}


def test_autotune_choices_are_recorded_per_key(captured):
    _, data, _ = captured
    tuned = data.kernels["bundle_kernels.tuned_add"]
    (layer,) = tuned.layers
    assert layer.kind == "autotune" and layer.key == ("n",)
    assert [c["kwargs"] for c in layer.configs] == [{"BLOCK": 128}, {"BLOCK": 512}, {"BLOCK": 1024}]
    assert [c["num_warps"] for c in layer.configs] == [4, 8, 4]
    choices = {c[0]["values"][0]["int"]: c[1] for c in layer.choices}
    assert choices == {4096: 1, 100: 0}  # what the scripted benchmark made fastest
    assert all(c[0]["dtypes"] == ["fp32", "fp32", "fp32"] for c in layer.choices)
    # every config benchmarked is a variant (3 configs x 2 specializations of n)
    assert len(tuned.variants) == 6


def test_heuristics_results_are_recorded_with_the_arguments_they_read(captured):
    _, data, _ = captured
    heur = data.kernels["bundle_kernels.heuristic_add"]
    (layer,) = heur.layers
    assert layer.kind == "heuristics" and layer.names == ("BLOCK", "EVEN")
    assert sorted((i["n"]["int"], v["BLOCK"], v["EVEN"]) for i, v in layer.records) == [(512, 512, True),
                                                                                      (1000, 1024, False)]
    assert all(set(i) == {"n"} for i, _ in layer.records)  # the heuristics read n (and BLOCK, their own)


def test_calls_through_layers_record_what_the_caller_passed_not_the_runs_own_keywords(captured):
    """kernel[grid] hands the autotuner and heuristics grid= and warmup=: they are not options of
    the call (a recorded call with them would match no later call)."""
    _, data, _ = captured
    for name in ("bundle_kernels.tuned_add", "bundle_kernels.heuristic_add"):
        calls = data.kernels[name].calls
        assert calls and all(not ({"grid", "warmup"} & set(c.options)) for c in calls), (name, calls)


def test_tensor_descriptor_kernels_are_captured(captured):
    arch, data, _ = captured
    tma = data.kernels["kernels.tma_copy_kernel"]
    (vid,) = tma.variants
    spec = data.variants[vid].spec
    assert [a.kind for a in spec.args] == ["tensordesc", "tensordesc", "constexpr", "constexpr"]
    assert (spec.args[0].desc.tma is not None) == (arch >= 90)


def test_compiled_kernels_launched_directly_are_captured(tmp_path):
    ck = C.BY_NAME["grid_3d"].compile()
    with cpu_triton(90) as d:
        with launcher.capture(tmp_path / "direct.bundle") as cap:
            ck[(4, 3, 2)](C.P[7], 4, 3)
        assert len(d.launches) == 1
    (k,) = cap.data.kernels.values()
    assert k.name == "kernels.grid3d_kernel" and not k.calls
    assert cap.data.variants[k.variants[0]].spec == CudaLauncher(ck.src, ck.metadata).spec


def test_kernels_launched_by_other_threads_are_captured(tmp_path):
    import kernels as K

    x = FakeTensor(C.P[0], tl.float32)
    with cpu_triton(90, K.add_kernel):
        with launcher.capture(tmp_path / "threads.bundle") as cap:
            t = threading.Thread(target=lambda: K.add_kernel[(1,)](x, x, x, 17, BLOCK=64))
            t.start()
            t.join()
    (k,) = cap.data.kernels.values()
    assert k.name == "kernels.add_kernel" and dict(cap.data.variants[k.variants[0]].spec.constants)[(4,)] == 64


def test_a_block_that_raises_writes_nothing(tmp_path):
    import kernels as K

    x = FakeTensor(C.P[0], tl.float32)
    path = tmp_path / "never.bundle"
    with cpu_triton(90, K.add_kernel):
        with pytest.raises(ZeroDivisionError):
            with launcher.capture(path):
                K.add_kernel[(1,)](x, x, x, 16, BLOCK=64)
                1 / 0
    assert not path.exists()
    with pytest.raises(BundleError, match="no kernels to write"):
        with launcher.capture(path):
            pass


def _zero(nargs):
    pass


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, pre_hook=_zero), triton.Config({"BLOCK": 128})], key=["n"],
                 do_bench=lambda fn, quantiles: (fn(), [1.0, 1.0, 1.0])[1])
@triton.jit
def hooked_add(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def test_python_code_that_a_bundle_cannot_hold_is_refused_with_the_kernel_named(tmp_path):
    x = FakeTensor(C.P[0], tl.float32)
    path = tmp_path / "hooked.bundle"
    with cpu_triton(90, hooked_add):
        with pytest.raises(BundleError, match="autotune config BLOCK: 64.* has a pre_hook, Python code that a "
                                              "bundle cannot hold"):
            with launcher.capture(path):
                hooked_add[(1,)](x, 100)
    assert not path.exists()


def test_a_bundled_function_constexpr_is_chosen_by_the_function_triton_compiled(tmp_path):
    """A kernel captured with a @triton.jit function as its constexpr takes, bundled, that
    function or one of the same source, and not another of the same name (a factory's)."""
    import kernels as K

    x = FakeTensor(C.P[0], tl.float32)
    add, mul = K.combiner("add"), K.combiner("mul")
    with cpu_triton(90, K.combine_kernel):
        with launcher.capture(tmp_path / "combine.bundle"):
            K.combine_kernel[(1,)](x, x, add)
    with launcher.load_bundle(tmp_path / "combine.bundle") as bundle:
        k = bundle["kernels.combine_kernel"]
        assert k.choose(arch=90)(x, x, add) is k.choose(arch=90)(x, x, K.combiner("add"))
        with pytest.raises(Exception, match="COMBINE"):
            k.choose(arch=90)(x, x, mul)
