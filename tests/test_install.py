"""install()/uninstall(), LAUNCHER_INSTALL=1, the stock fallback, and no compiler at run time
(CPU: everything short of a launch, which tests/test_gpu.py covers on the H200)."""
import os
import subprocess
import sys
import types

import pytest

import launcher
from triton_compile import compile_cpu
from launcher import CudaLauncher

import kernels as K

ADD_SIG = (("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("out_ptr", "*fp32"), ("n", "i32"), ("BLOCK", "constexpr"))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def clean():
    launcher.uninstall()
    yield
    launcher.uninstall()


def test_install_swaps_triton_driver_classes_and_uninstall_restores(clean):
    from triton.backends.nvidia import driver as nv

    stock_launcher, stock_utils = nv.CudaLauncher, nv.CudaUtils
    launcher.install()
    assert nv.CudaLauncher is CudaLauncher
    utils = nv.CudaUtils()  # what CudaDriver.__init__ calls
    assert type(utils).__module__ == "launcher.utils"
    assert utils.load_binary.__func__ is launcher.utils.CudaUtils.load_binary
    launcher.install()  # idempotent
    launcher.uninstall()
    assert nv.CudaLauncher is stock_launcher and nv.CudaUtils is stock_utils
    assert CudaLauncher.stock_launcher_cls is None


def test_context_manager_restores(clean):
    from triton.backends.nvidia import driver as nv

    with launcher.installed():
        assert launcher.is_installed() and nv.CudaLauncher is CudaLauncher
    assert not launcher.is_installed() and nv.CudaLauncher is not CudaLauncher


def test_fence_policy_is_validated(clean, monkeypatch):
    monkeypatch.setenv("LAUNCHER_FENCE_CHECK", "loud")
    with pytest.raises(ValueError, match="LAUNCHER_FENCE_CHECK must be one of off, warn, error"):
        launcher.install()
    assert not launcher.is_installed()


def test_bad_fence_check_argument_names_the_argument(clean, monkeypatch):
    """The error names what the user gave: the argument, or LAUNCHER_FENCE_CHECK only when the
    policy came from the variable."""
    monkeypatch.delenv("LAUNCHER_FENCE_CHECK", raising=False)
    with pytest.raises(ValueError, match=r"^fence_check must be one of off, warn, error, got 'bogus'$"):
        launcher.install(fence_check="bogus")
    monkeypatch.setenv("LAUNCHER_FENCE_CHECK", "warn")
    with pytest.raises(ValueError, match=r"^fence_check must be one of off, warn, error, got ''$"):
        with launcher.installed(fence_check=""):
            pass
    assert not launcher.is_installed()
    monkeypatch.setenv("LAUNCHER_FENCE_CHECK", "loud")
    launcher.install(fence_check="ERROR")  # an argument wins over the variable, in any case
    assert sys.modules["launcher.install"]._state["fence"].policy == "error"


def test_fence_hook_is_added_to_the_load_hook_chain_and_removed(clean):
    from triton import knobs

    launcher.install(fence_check="error")
    chain = knobs.runtime.kernel_load_start_hook
    ours = [h for h in chain.calls if type(h).__name__ == "FenceCheckHook"]
    assert len(ours) == 1 and ours[0].policy == "error"
    launcher.uninstall()
    assert not [h for h in chain.calls if type(h).__name__ == "FenceCheckHook"]


def test_no_compiler_needed_to_build_launchers_and_utils(clean, no_compiler):
    """With PATH holding no compiler and Triton's build step made to fail, everything Triton's
    NVIDIA driver needs from us up to a launch is there."""
    from triton.backends.nvidia import driver as nv

    ck = compile_cpu(K.add_kernel, ADD_SIG, (("BLOCK", 128),))
    launcher.install()
    utils = nv.CudaUtils()
    fill = utils.fill_tma_descriptor if hasattr(utils, "fill_tma_descriptor") else utils.fill_tma_descriptor_tiled
    assert callable(fill) and callable(utils.load_binary) and callable(utils.get_device_properties)
    assert not hasattr(utils, "no_such_function")  # probing never compiles the stock module
    run = nv.CudaLauncher(ck.src, ck.metadata)
    assert isinstance(run, CudaLauncher)
    out = run.dry_run(1, 1, 1, 0, 0, (4, 1, 0), None, None, None, 0x1000, 0x2000, 0x3000, 77, 128)
    assert out[3] == (77).to_bytes(4, "little")


def test_import_and_build_in_a_process_without_compiler(tmp_path):
    """`import launcher` and building a launcher work in a fresh process with no compiler on PATH."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = (
        "import shutil, sys; assert shutil.which('gcc') is None and shutil.which('cc') is None\n"
        "import launcher, triton.runtime.build as b\n"
        "def refuse(*a, **k): raise SystemExit('Triton tried to compile C')\n"
        "b._build = refuse\n"
        f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "from triton_compile import compile_cpu; import kernels as K\n"
        f"ck = compile_cpu(K.add_kernel, {ADD_SIG!r}, (('BLOCK', 64),))\n"
        "launcher.install()\n"
        "from triton.backends.nvidia import driver as nv\n"
        "run = nv.CudaLauncher(ck.src, ck.metadata)\n"
        "print(isinstance(run, launcher.CudaLauncher), len(run.spec.params))\n")
    env = dict(os.environ, PATH=str(bindir))
    env.pop("CC", None)
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True 6"


def test_launcher_install_env_hook(tmp_path):
    """LAUNCHER_INSTALL=1 with our .pth in a site dir: Triton is patched right after import."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "launcher-autoinstall.pth").write_text(open(os.path.join(ROOT, "launcher-autoinstall.pth")).read())
    script = ("import site, sys; site.addsitedir(sys.argv[1])\n"
              "assert 'launcher' not in sys.modules or True\n"
              "import triton\n"
              "from triton.backends.nvidia import driver as nv\n"
              "print(nv.CudaLauncher.__module__)\n")
    ours, stock = "launcher.cuda_launcher", "triton.backends.nvidia.driver"
    # the values of every launcher switch (install.env_flag), as LAUNCHER_FAST_DISPATCH takes them
    for value, expected in (("1", ours), ("", stock), ("0", stock), ("false", stock), (" Off ", stock),
                            ("on", ours), ("TRUE", ours)):
        env = dict(os.environ, LAUNCHER_INSTALL=value)
        proc = subprocess.run([sys.executable, "-c", script, str(site)], env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip().splitlines()[-1] == expected, value
        assert "LAUNCHER_INSTALL" not in proc.stderr, (value, proc.stderr)
    # another value: one line on stderr naming the variable and its values; Python starts, nothing installed
    proc = subprocess.run([sys.executable, "-c", script, str(site)], env=dict(os.environ, LAUNCHER_INSTALL="yes"),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == stock
    lines = [line for line in proc.stderr.splitlines() if "LAUNCHER_INSTALL" in line]
    assert lines == ["launcher: LAUNCHER_INSTALL='yes' is not a value it takes: 1, true or on switch it on; 0, false, "
                     "off or empty (or unset) switch it off; launcher is not installed into Triton"], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("value, on", [("", False), ("0", False), ("false", False), ("OFF", False), (" 0 ", False),
                                       ("1", True), ("true", True), ("On", True), (" 1\n", True)])
def test_one_rule_for_launcher_switches(value, on):
    from launcher.install import env_flag

    assert env_flag("LAUNCHER_INSTALL", {"LAUNCHER_INSTALL": value}) is on
    assert env_flag("LAUNCHER_FAST_DISPATCH", {"LAUNCHER_FAST_DISPATCH": value}) is on
    assert env_flag("LAUNCHER_INSTALL", {}) is False


@pytest.mark.parametrize("value", ["yes", "no", "2", "enable", "truthy"])
def test_a_switch_refuses_other_values_naming_the_variable_and_the_values(value, monkeypatch, clean):
    from launcher import _autoinstall
    from launcher.install import env_flag

    for name in ("LAUNCHER_INSTALL", "LAUNCHER_FAST_DISPATCH"):
        with pytest.raises(ValueError, match=f"^{name}={value!r} is not a value it takes: 1, true or on switch it on; "
                                             "0, false, off or empty \\(or unset\\) switch it off$"):
            env_flag(name, {name: value})
    monkeypatch.setenv("LAUNCHER_FAST_DISPATCH", value)
    with pytest.raises(ValueError, match=f"LAUNCHER_FAST_DISPATCH={value!r} is not a value it takes"):
        launcher.install()
    assert not launcher.is_installed()
    # the hook's reading of LAUNCHER_INSTALL is that same function
    monkeypatch.setenv("LAUNCHER_INSTALL", value)
    assert _autoinstall._wanted() is False


def test_install_without_triton_says_what_to_install():
    """In a process where `import triton` fails as where it is not installed."""
    code = ("import sys; sys.modules['triton'] = None\n"  # every `import triton` fails from here on
            "import launcher\n"
            "from launcher.install import TritonNotInstalled\n"
            "try:\n"
            "    launcher.install()\n"
            "except TritonNotInstalled as e:\n"
            "    print(isinstance(e, ImportError), e.name, launcher.is_installed())\n"
            "    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first, message = proc.stdout.splitlines()
    assert first == "True triton False"
    assert 'pip install "triton-launcher[triton]"' in message and "(or pip install triton)" in message
    assert "Triton is not installed in this Python" in message and sys.executable in message


class RecordingStock:
    made = []

    def __init__(self, src, metadata):
        RecordingStock.made.append(metadata.name)


def test_unsupported_kernels_go_to_the_stock_launcher(clean):
    ck = compile_cpu(K.add_kernel, ADD_SIG, (("BLOCK", 256),))
    gsan_md = ck.metadata._replace(instrumentation_mode="gsan")
    CudaLauncher.stock_launcher_cls = RecordingStock
    try:
        run = CudaLauncher(ck.src, gsan_md)
        assert isinstance(run, RecordingStock) and RecordingStock.made == ["add_kernel"]
        src = types.SimpleNamespace(signature={"x": "fp8e5"})
        assert isinstance(CudaLauncher(src, ck.metadata), RecordingStock)
    finally:
        CudaLauncher.stock_launcher_cls = None
    with pytest.raises(launcher.UnsupportedKernel, match="gsan instrumentation is not supported"):
        CudaLauncher(ck.src, gsan_md)


def test_a_launch_without_a_driver_is_a_clear_error():
    from launcher import driver

    try:
        driver.ensure_driver()
    except launcher.CudaDriverNotFound:
        pass
    else:
        pytest.skip("this machine has a CUDA driver")
    ck = compile_cpu(K.add_kernel, ADD_SIG, (("BLOCK", 128),))
    run = CudaLauncher(ck.src, ck.metadata)
    with pytest.raises(launcher.CudaDriverNotFound, match="the CUDA driver was not found"):
        run(1, 1, 1, 0, 0, (4, 1, 0), None, None, None, 0x1000, 0x2000, 0x3000, 1, 128)


def test_new_signature_builds_without_touching_the_driver():
    from launcher import cuda_launcher

    cuda_launcher.clear_launcher_cache()
    ck = compile_cpu(K.tuple_kernel, K.TUPLE_SIGNATURE, K.TUPLE_CONSTEXPRS)
    run = CudaLauncher(ck.src, ck.metadata)
    assert not run._shape.code and type(run) is CudaLauncher  # nothing is generated (no class made) until needed
    run.dry_run(1, 1, 1, 0, 0, (4, 1, 0), None, None, None, 0, (0, 16, 3), ((0, 1), (5, 0.5)), 2, 1.0)
    assert set(run._shape.code) == {"dry_run"}  # generated on first use


def test_installed_block_keeps_the_outer_fence_policy(clean):
    launcher.install(fence_check="error")
    with launcher.installed():
        with launcher.installed(fence_check="off"):
            pass
    state = sys.modules["launcher.install"]._state  # the module (the package's `install` is the function)
    assert state["fence"].policy == "error"


def test_env_hook_survives_a_find_spec_probe(tmp_path):
    """Libraries probe with importlib.util.find_spec("triton"); the hook must stay armed."""
    script = ("import importlib.util, sys\n"
              "import launcher._autoinstall\n"
              "assert importlib.util.find_spec('triton') is not None\n"
              "import triton, launcher\n"
              "print(launcher.is_installed())\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, LAUNCHER_INSTALL="1"))  # what the .pth imports it for
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "True"


def test_fence_check_failure_never_stops_a_load_in_warn_mode(tmp_path, caplog):
    from launcher.fence_hook import FenceCheckHook

    bad = tmp_path / "k.ptx"
    bad.write_bytes(b"\xff\xfe not utf-8")
    hook = FenceCheckHook("warn")
    hook(None, None, "k", {"k.ptx": str(bad)}, "hash1")  # must not raise
    hook(None, None, "k", {"k.ptx": str(tmp_path / "missing.ptx")}, "hash2")
    assert "loaded unchecked" in caplog.text
