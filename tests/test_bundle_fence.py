"""The fence check of bundled kernels (issue 13): it runs on the bundled PTX before the cubin is
loaded, under install()'s policy when installed, else $LAUNCHER_FENCE_CHECK: off, warn (one
warning per kernel) or error (FenceHazardError, and no load). A clean result the exporter
recorded with the byte-identical checker is taken as it is; any other is checked again.

The hazardous kernel is a Gluon TMA store compiled on the CPU with fence_async_shared(), whose
PTX has its fence.proxy.async removed (Triton 3.9 fences even the unfenced source itself).
"""
import logging

import pytest

import fence_kernels as F
import launcher
from launcher import bundle_format as BF
from launcher import bundle_kernel as BK
from launcher.fence import FenceHazardError


def _without_fences(ptx):
    return "\n".join(line for line in ptx.splitlines()
                     if "fence.proxy.async" not in line or "fence.proxy.async.global" in line)


@pytest.fixture
def hazard(tmp_path, monkeypatch):
    """(bundled kernel, its variant entry) whose PTX lacks a needed proxy fence; the fence
    check's memory of kernels it saw is emptied around the test."""
    monkeypatch.setattr(BK, "_fence_seen", {})
    ck = F.compile_kernel(F.straight_tma_store, {"desc": F.DESC_64x64}, {"FENCE": True})
    data = launcher.export(tmp_path / "fenced.bundle", ck)
    (vid,) = data.variants
    v = data.variants[vid].replace(ptx=_without_fences(data.variants[vid].ptx), fence=None)
    data = data.replace(variants={vid: v})
    BF.write_bundle(tmp_path / "hazard.bundle", data, "test")
    k = launcher.load_bundle(tmp_path / "hazard.bundle").straight_tma_store
    return k, k.chooser.variants[0]


def test_error_policy_refuses_before_the_cubin_is_loaded(hazard, monkeypatch):
    k, variant = hazard
    monkeypatch.setenv("LAUNCHER_FENCE_CHECK", "error")
    with pytest.raises(FenceHazardError, match="straight_tma_store"):
        k._load(variant, 0)  # no driver on this machine: the refusal came first
    assert not k._modules and not k._functions


def test_warn_policy_warns_once_per_kernel(hazard, monkeypatch, caplog):
    _, variant = hazard
    monkeypatch.setenv("LAUNCHER_FENCE_CHECK", "warn")
    with caplog.at_level(logging.WARNING, logger="launcher.fence"):
        BK._fence_check(variant.entry)
        BK._fence_check(variant.entry)
    warnings = [r for r in caplog.records if "fence.proxy.async" in r.getMessage() or "straight_tma_store" in r.getMessage()]
    assert len(warnings) == 1


def test_off_policy_checks_nothing(hazard, monkeypatch):
    _, variant = hazard
    monkeypatch.setenv("LAUNCHER_FENCE_CHECK", "off")
    monkeypatch.setattr("launcher.fence.check_kernel", _must_not_run)
    BK._fence_check(variant.entry)


def _must_not_run(**kwargs):
    raise AssertionError("the fence checker ran")


def test_the_installed_policy_wins_over_the_environment(hazard, monkeypatch):
    k, variant = hazard
    monkeypatch.setenv("LAUNCHER_FENCE_CHECK", "off")
    with launcher.installed(fence_check="error"):
        assert BK.fence_policy() == "error"
        with pytest.raises(FenceHazardError):
            k._load(variant, 0)
    assert BK.fence_policy() == "off"
    monkeypatch.setenv("LAUNCHER_FENCE_CHECK", "sometimes")
    with pytest.raises(ValueError, match="LAUNCHER_FENCE_CHECK must be one of off, warn, error"):
        BK.fence_policy()


def test_a_recorded_clean_result_is_used_only_from_the_same_checker(hazard, monkeypatch):
    _, variant = hazard
    monkeypatch.setenv("LAUNCHER_FENCE_CHECK", "error")
    same = variant.entry.replace(fence={"checker": BK.fence_checker_id(), "clean": True})
    monkeypatch.setattr("launcher.fence.check_kernel", _must_not_run)
    BK._fence_check(same)
    monkeypatch.undo()
    monkeypatch.setattr(BK, "_fence_seen", {})
    monkeypatch.setenv("LAUNCHER_FENCE_CHECK", "error")
    other = variant.entry.replace(fence={"checker": "0" * 16, "clean": True})
    with pytest.raises(FenceHazardError):
        BK._fence_check(other)


def test_export_records_the_checkers_result(tmp_path):
    ck = F.compile_kernel(F.straight_tma_store, {"desc": F.DESC_64x64}, {"FENCE": True})
    data = launcher.export(tmp_path / "fenced.bundle", ck)
    (v,) = data.variants.values()
    assert v.fence == {"checker": BK.fence_checker_id(), "clean": True}
    assert BF.read_bundle(tmp_path / "fenced.bundle").variants[v.id].fence == v.fence
