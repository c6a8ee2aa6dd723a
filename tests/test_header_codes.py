"""The numbers cdefs/launcher.h holds for C and Python alike: CUDA's enum values (written there
only, and read by Python through cffi), the check kinds and pack codes of launcher._call, and the
header's facts that launcher.spec reads on first use (importing it loads nothing native)."""
import os
import struct
import subprocess
import sys

import pytest

from launcher import driver
from launcher import spec as S

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _header_names(*prefixes):
    lib = driver.native()[1]
    return {n: getattr(lib, n) for n in dir(lib) if n.startswith(prefixes)}


def _bindings_members(cu):
    """{member name: value} of every enum cuda.bindings.driver has."""
    out = {}
    for attr in dir(cu):
        enum = getattr(cu, attr)
        members = getattr(enum, "__members__", None)
        if isinstance(members, dict) or hasattr(members, "items"):
            for name, member in members.items():
                out.setdefault(name, int(member))
    return out


def test_every_cuda_number_in_the_header_is_cuda_bindings_own():
    cu = pytest.importorskip("cuda.bindings.driver")
    known = _bindings_members(cu)
    numbers = _header_names("CU_", "CUDA_")
    assert len(numbers) > 30
    checked = 0
    for name, value in numbers.items():
        if name in known:  # bindings older than the header's CUDA lack a few names
            assert known[name] == value, name
            checked += 1
    assert checked >= len(numbers) - 3  # CUDA 13.1+ names: SHARED_MEMORY_MODE, MAX_OVERSIZED_SHARED...
    for name, value in _header_names("LAUNCHER_ATTR_").items():  # CUlaunchAttributeID values
        assert int(getattr(cu.CUlaunchAttributeID, "CU_LAUNCH_ATTRIBUTE_" + name[len("LAUNCHER_ATTR_"):])) == value


def test_drivers_tables_are_the_headers():
    lib = driver.native()[1]
    assert driver.FUNCTION_ATTRIBUTES["NUM_REGS"] == lib.CU_FUNC_ATTRIBUTE_NUM_REGS
    assert driver.DEVICE_ATTRIBUTES["MAX_OVERSIZED_SHARED_MEMORY_PER_BLOCK"] == 150
    assert driver._attribute_number("SHARED_MEMORY_MODE", "CUfunction_attribute", "CU_FUNC_ATTRIBUTE_") == 17
    assert driver._TEARDOWN == {4, 201, 709}


def test_the_tensor_map_numbers_are_tritons():
    from launcher.tensormap import TMA_DTYPE_DEVICE_TO_HOST, TMA_TF32

    assert TMA_TF32 == 11
    assert [TMA_DTYPE_DEVICE_TO_HOST[i] for i in range(16)] == [0, 1, 2, 3, 4, 5, 6, 7, 10, 8, 9, 11, 12, 13, 14, 15]


def test_pack_codes_are_struct_codes_and_cover_what_the_layout_packs():
    """A parameter's struct code is its pack code: each LAUNCHER_PACK_* but the tensor map's is a
    struct code of its size, and every scalar's code but fp16's ("e", kept in Python) is one."""
    codes = _header_names("LAUNCHER_PACK_")
    sizes = {"BOOL": 1, "I8": 1, "U8": 1, "I16": 2, "U16": 2, "I32": 4, "U32": 4, "I64": 8, "U64": 8, "F32": 4, "F64": 8}
    for name, code in codes.items():
        short = name[len("LAUNCHER_PACK_"):]
        if short == "TENSORMAP":
            continue
        assert struct.calcsize("<" + chr(code)) == sizes[short], name
    packable = {chr(c) for c in codes.values()}
    assert {code for code, *_ in S.SCALARS.values()} - packable == {"e"}


def test_check_kinds_are_distinct():
    kinds = _header_names("LAUNCHER_CHECK_")
    assert len(kinds) == 9 and len(set(kinds.values())) == 9


def _fresh(code):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_importing_spec_loads_nothing_native():
    """launcher.spec on its own (the package's __init__ not run) imports neither native module;
    `import launcher.spec` through the package does not load the native library either. The
    header's facts are read when first asked for."""
    bare = ("import sys, types\n"
            "pkg = types.ModuleType('launcher'); pkg.__path__ = [%r]; sys.modules['launcher'] = pkg\n"
            "import launcher.spec as S\n"
            "print(sorted(m for m in ('launcher._native', 'launcher._call') if m in sys.modules))\n"
            "S.HEADER_SIZE\n"
            "print('launcher._native' in sys.modules)\n") % os.path.join(ROOT, "launcher")
    assert _fresh(bare).splitlines() == ["[]", "True"]
    assert _fresh("import sys, launcher.spec\nprint('launcher._native' in sys.modules)\n") == "False"


def test_header_facts_are_the_structs():
    ffi = driver.native()[0]
    facts = S.header_facts()
    assert (S.HEADER_SIZE, S.HEADER_STREAM_AT, S.HEADER_GRID_AT) == (facts.size, facts.stream_at, facts.grid_at)
    assert facts.function_at == ffi.offsetof("launcher_header", "function")
    with pytest.raises(AttributeError):
        S.NO_SUCH_FACT
