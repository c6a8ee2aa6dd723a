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
#   third-party    third-party Triton libraries' own tests (FlagGems, Liger-Kernel: a small selection
#                  in .device/thirdparty, fetched by .ci/third_party_fetch.sh, never committed), stock
#                  and then with launcher and its fast dispatch on (the same plugin as triton-tests),
#                  compared test by test (.ci/compare_junit.py); TP_TIMEOUT bounds each mode (150 s),
#                  TP_LIBS picks libraries ("flaggems liger"), TP_FG_K replaces FlagGems' -k expression
#   third-party-ops  .ci/third_party_ops.py: typical small FlagGems and Liger calls, µs per call, stock
#                  against launcher and launcher with its guard, interleaved
#   bench NAME     python -m launcher bench into $OUT/NAME (compared with an earlier NAME given
#                  to compare); BENCH_K=EXPR runs only the suite's tests matching it
#   compare A B    python -m launcher bench --compare $OUT/A/bench.json $OUT/B/bench.json
#   demo           python -m launcher demo
#   profile        bench/quick_profile.py
#   script FILE    python3 FILE (a probe carried in an ignored folder)
#   trim           delete everything under $OUT but the bench reports (bench.md): the device tool
#                  brings back at most 8 files, 2 folders down; a call that runs both releases ends
#                  each with trim, or their reports may be the files left behind
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
      if [ "$phase" = tests ] && [ $# -gt 0 ] && [[ $1 != -* ]] && ! [[ $1 =~ ^(gpu|triton-tests|third-party|third-party-ops|bench|compare|demo|profile|script)$ ]]; then K=$1; shift; fi
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
    third-party|third-party-ops)
      # the carried wheels (no network there): packaging only where the machine has none
      tpw=.device/thirdparty/wheels
      [ -d "$tpw" ] || { echo "-- $phase: no $tpw (run .ci/third_party_fetch.sh and carry .device/thirdparty)"; continue; }
      whls=$(ls $tpw/*.whl | grep -v /packaging-)
      python3 -c "import packaging" 2>/dev/null || whls="$whls $(ls $tpw/packaging-*.whl)"
      python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $whls > "$OUT/tp-install.log" 2>&1 \
        || { echo "-- $phase: installing the carried wheels failed"; tail -5 "$OUT/tp-install.log"; continue; }
      if [ "$phase" = third-party-ops ]; then
        python3 .ci/third_party_ops.py > "$OUT/$tag-tp-ops.log" 2>&1
        echo "-- third-party ops exit $?"; tail -30 "$OUT/$tag-tp-ops.log"
        continue
      fi
      for lib in ${TP_LIBS:-flaggems liger}; do
        case $lib in
          flaggems) dir=flaggems; sel="tests/test_add.py tests/test_mul.py tests/test_exp.py tests/test_relu.py
            tests/test_silu.py tests/test_gelu.py tests/test_softmax.py tests/test_sum.py tests/test_mean.py
            tests/test_layer_norm.py tests/test_rms_norm.py"
            opts=(--quick -k "${TP_FG_K:-not add_scalar_tensor and not add_tensor_scalar}");;
          liger) dir=liger; sel="test/ops/test_rms_norm.py test/ops/test_swiglu.py test/ops/test_softmax.py
            test/ops/test_layer_norm.py test/ops/test_geglu.py test/ops/test_fused_add_rms_norm.py"
            opts=();;
          *) echo "-- third-party: unknown library $lib"; continue;;
        esac
        root=$PWD/.device/thirdparty/$dir
        missing=$(for f in $sel; do [ -f "$root/$f" ] || echo "$f"; done)
        [ "$lib" = flaggems ] && { [ -f "$root/pytest.ini" ] && [ -f "$root/tests/conftest.py" ] || missing="$missing conftest"; }
        if [ -n "$(echo $missing)" ]; then
          echo "-- $lib: test files missing under .device/thirdparty/$dir ($(echo $missing | wc -w)): run .ci/third_party_fetch.sh"
          continue
        fi
        for mode in stock launcher; do
          if [ "$mode" = stock ]; then envs="LAUNCHER_TRITON_TESTS_STOCK=1"; else envs="LAUNCHER_FAST_DISPATCH=1"; fi
          log=$OUT/$tag-tp-$lib-$mode.log
          # a scratch working directory (FlagGems' conftest writes result_*.json there), cold caches
          # per mode; SIGINT at the timeout lets pytest write its summary and junit xml
          run=/tmp/tp-run-$lib-$mode && rm -rf $run && mkdir -p $run
          (export PYTHONPATH=$PWD/.ci:$PYTHONPATH; cd $run && env $envs GEMS_VENDOR=nvidia \
            TRITON_CACHE_DIR=$run/triton-cache FLAGGEMS_CACHE_DIR=$run/flaggems-cache \
            timeout -s INT -k 30 ${TP_TIMEOUT:-150} python3 -m pytest -q -rf -p no:cacheprovider -p conftest_launcher \
            --junitxml="$OUT/$tag-tp-$lib-$mode.xml" "${opts[@]}" $(for f in $sel; do echo $root/$f; done) > "$log" 2>&1)
          rc=$?
          stopped=""; [ $rc = 124 ] || [ $rc = 137 ] && stopped=", stopped by TP_TIMEOUT=${TP_TIMEOUT:-150}"
          echo "-- $lib, $mode (exit $rc$stopped): $(grep -E '(passed|failed|error|skipped|deselected|no tests ran).* in [0-9.]+s' "$log" | tail -1)"
          grep -E "^(FAILED|ERROR|ImportError)|error: |fast dispatch" "$log" | head -12
        done
        echo "-- $lib, stock against launcher: $(python3 .ci/compare_junit.py "$OUT/$tag-tp-$lib-stock.xml" "$OUT/$tag-tp-$lib-launcher.xml" | head -30)"
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
    trim)
      find "$OUT" -type f ! -name bench.md -delete
      find "$OUT" -depth -type d -empty -delete 2>/dev/null
      mkdir -p "$OUT"
      ;;
    *)
      echo "unknown phase $phase"; exit 2
      ;;
  esac
done
