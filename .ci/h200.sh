#!/usr/bin/env bash
# The one script for the GPU machine: set up there (carried wheels, optionally another Triton),
# build the extension, then run the phases asked for; logs and results go to $OUT.
#
#   bash .ci/h200.sh [--triton-tar .triton/triton-3.9.0.tar.xz] PHASE...
#
# Carry .whl (the cffi, pycparser and setuptools>=77 wheels for the machine's Python 3.12: that
# machine has no network; they are installed into /tmp/site, first on PYTHONPATH) and, for another
# Triton, the tarball of it made small enough to carry.
# Phases:
#   tests [EXPR]   every test (GPU ones included) or those matching the -k expression
#   gpu            the GPU-marked tests only
#   triton-tests   Triton's own runtime tests in .device/triton_tests (fetched separately, never
#                  committed), stock and then with launcher installed and its fast dispatch on
#                  (the pytest plugin .ci/conftest_launcher.py installs it and reports its counts);
#                  TT_DESELECT=NAME leaves one out (3.9's test_async_compile_mock
#                  hangs there, stock too), TT_TIMEOUT bounds each mode (100 s)
#   bench NAME     python -m launcher bench into $OUT/NAME (compared with an earlier NAME given
#                  to compare); BENCH_K=EXPR runs only the suite's tests matching it
#   compare A B    python -m launcher bench --compare $OUT/A/bench.json $OUT/B/bench.json
#   demo           python -m launcher demo
#   profile        bench/quick_profile.py
#   script FILE    python3 FILE (a probe carried in an ignored folder)
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
TAR=""
if [ "${1:-}" = "--triton-tar" ]; then TAR=$2; shift 2; fi

python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
if [ -n "$TAR" ]; then
  mkdir -p /tmp/tv && tar -xJf "$TAR" -C /tmp/tv || exit 1
  export PYTHONPATH=/tmp/tv:$PYTHONPATH TRITON_BACKENDS_IN_TREE=1 TRITON_DEFAULT_FP_FUSION=1
  # the packed 3.9 keeps only ptxas-blackwell (what it compiles with); Triton's tests ask ptxas's version
  bin=/tmp/tv/triton/backends/nvidia/bin
  [ -e $bin/ptxas ] || [ ! -e $bin/ptxas-blackwell ] || export TRITON_PTXAS_PATH=$bin/ptxas-blackwell
fi
python3 -m pip install -q --no-build-isolation --no-deps --no-index -e . > "$OUT/build.log" 2>&1 \
  || { tail -20 "$OUT/build.log"; exit 1; }
# Byte-compile the package as a regular pip install does (an editable one leaves it to the first
# import, which PYTHONDONTWRITEBYTECODE may forbid): fresh processes then import what users import.
python3 -m compileall -q launcher > /dev/null
TV=$(python3 -c "import triton; print(triton.__version__)")
echo "== Triton $TV, $(python3 -c 'import torch; print("torch", torch.__version__)'), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
export TRITON_CACHE_DIR=/tmp/triton-cache-$TV
tag=t${TV//./}

while [ $# -gt 0 ]; do
  phase=$1; shift
  case $phase in
    tests|gpu)
      K=""; M=""
      if [ "$phase" = tests ] && [ $# -gt 0 ] && [[ $1 != -* ]] && ! [[ $1 =~ ^(gpu|triton-tests|bench|compare|demo|profile|script)$ ]]; then K=$1; shift; fi
      [ "$phase" = gpu ] && M="gpu"
      python3 -m pytest tests -q -rs -s -p no:cacheprovider ${K:+-k "$K"} ${M:+-m "$M"} > "$OUT/$tag-$phase.log" 2>&1
      echo "-- $phase exit $?"
      grep -E "^(FAILED|ERROR)|passed|failed|rank [0-9]|launches: Python heap|launchers and module loads|cases, [0-9]+ failed" "$OUT/$tag-$phase.log" | tail -25
      ;;
    triton-tests)
      for mode in stock launcher; do
        if [ "$mode" = stock ]; then envs="LAUNCHER_TRITON_TESTS_STOCK=1"; else envs="LAUNCHER_FAST_DISPATCH=1"; fi
        (export PYTHONPATH=$PWD/.ci:$PYTHONPATH; cd .device/triton_tests && env $envs TRITON_CACHE_DIR=/tmp/tt-cache-$mode timeout ${TT_TIMEOUT:-100} python3 -m pytest -v -p no:cacheprovider \
          -p conftest_launcher -rf ${TT_DESELECT:+-k "not $TT_DESELECT"} test_launch.py test_cache.py test_specialize.py \
          > "$OUT/$tag-triton-$mode.log" 2>&1)
        echo "-- Triton's runtime tests, $mode (exit $?): $(grep -E '^=+ .*(passed|failed)' "$OUT/$tag-triton-$mode.log" | tail -1)"
        tail -1 "$OUT/$tag-triton-$mode.log"
        grep -E "^FAILED|fast dispatch" "$OUT/$tag-triton-$mode.log" | head -20
      done
      ;;
    bench)
      name=$1; shift
      python3 -m launcher bench --out "$OUT/$name" ${BENCH_K:+-k "$BENCH_K"} > "$OUT/$name.log" 2>&1
      echo "-- bench $name exit $?"; tail -4 "$OUT/$name.log"
      ;;
    compare)
      a=$1; b=$2; shift 2
      python3 -m launcher bench --compare "$OUT/$a/bench.json" "$OUT/$b/bench.json" --out "$OUT/$a-vs-$b" 2>&1 | tail -40
      echo "-- compare exit ${PIPESTATUS[0]}"
      ;;
    demo)
      python3 -m launcher demo 2>&1 | tail -40
      ;;
    profile)
      python3 bench/quick_profile.py 2>&1 | tail -40
      ;;
    script)
      f=$1; shift
      python3 "$f" 2>&1 | tail -80
      ;;
    *)
      echo "unknown phase $phase"; exit 2
      ;;
  esac
done
