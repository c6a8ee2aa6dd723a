#!/usr/bin/env bash
# The native libraries under AddressSanitizer: build cdefs/launcher.c (and cdefs/call.c, the
# prepared launch's call) with -fsanitize=address into a copy of the package, then run the tests
# that hand them malformed plans, buffers and configurations (and the packing, error and prepared
# launch tests, which go through their dry runs, and the property test holding the C packers to the
# Python ones) against that build.
#   bash .ci/asan.sh [python]      (the python must have the package's dependencies installed)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r launcher "$work/"
rm -f "$work"/launcher/_native*.so "$work"/launcher/_call*.so
"$PY" - "$work" <<'PYEOF'
import pathlib, sys
from cffi import FFI
sys.path.insert(0, "cdefs")
import build  # the package's own builder: the same header and C file
ffi = FFI()
ffi.cdef(build.cdef_text(pathlib.Path("cdefs/launcher.h").read_text()))
ffi.set_source(
    "launcher._native", pathlib.Path("cdefs/launcher.c").read_text(), include_dirs=[str(pathlib.Path("cdefs").resolve())],
    libraries=["dl", "pthread"],
    extra_compile_args=["-O1", "-g", "-std=c11", "-D_GNU_SOURCE", "-fsanitize=address,undefined",
                        "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined"],
    extra_link_args=["-fsanitize=address,undefined"])
print("built", ffi.compile(tmpdir=sys.argv[1]))
PYEOF
include=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
gcc -shared -fPIC -O1 -g -std=c11 -Wall -fsanitize=address,undefined -fno-omit-frame-pointer \
  -fno-sanitize-recover=undefined -I"$include" cdefs/call.c -o "$work/launcher/_call.abi3.so"
echo "built $work/launcher/_call.abi3.so"
asan=$(gcc -print-file-name=libasan.so)
ubsan=$(gcc -print-file-name=libubsan.so)
echo "running against the AddressSanitizer build ($asan)"
env LD_PRELOAD="$asan:$ubsan" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 PYTHONPATH="$work" \
  "$PY" -P -m pytest -q -p no:cacheprovider --capture=sys tests/test_native.py tests/test_packing.py tests/test_errors.py \
  tests/test_fuzz_launch_args.py tests/test_prepared.py tests/test_prepared_c.py tests/test_descriptor_c.py tests/test_flat_launch.py tests/test_fast_dispatch.py tests/test_guard_key.py \
  tests/test_packers_agree.py tests/test_header_codes.py -x "${@:2}"
env LD_PRELOAD="$asan:$ubsan" ASAN_OPTIONS=detect_leaks=0 PYTHONPATH="$work" \
  "$PY" -P -c "import launcher._native as n, launcher._call as c; print('the tests ran against', n.__file__, c.__file__)"
