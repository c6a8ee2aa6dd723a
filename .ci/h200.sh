#!/usr/bin/env bash
# The one script for the GPU machine (an H200 with no package index to install from): build the
# extension there, run every test (CPU and GPU), the demo and the launch benchmarks; logs and
# results go to $OUT. Wheels the machine lacks (setuptools>=77 for the build among them) are
# carried in .whl/ and installed into /tmp/site, which goes first on PYTHONPATH.
# Usage, from the repository root, with .whl/ beside it: bash .ci/h200.sh [pytest -k expression]
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
python3 -m pip install -q --no-build-isolation --no-deps --no-index -e . 2>&1 | tail -3 || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv
python3 -m launcher info
K=${1:-}
python3 -m pytest tests -q -rs -s -p no:cacheprovider ${K:+-k "$K"} > "$OUT/tests.log" 2>&1
echo "tests exit: $?" | tee -a "$OUT/tests.log"
grep -E "^(FAILED|ERROR)|passed|failed|1,000,000 launches|10,000 launchers|FAULT|ok  |FAIL " "$OUT/tests.log"
if [ -z "$K" ] || [ -n "${LAUNCHER_RUN_DEMO:-}" ]; then
  python3 -m launcher demo 2>&1
fi
if [ -n "${LAUNCHER_RUN_BENCH:-}" ]; then
  python3 -m launcher bench --out "$OUT" > "$OUT/bench.log" 2>&1
  grep -E "passed|failed|SKIPPED" "$OUT/bench.log"
  python3 bench/quick_profile.py 2>&1
  # Where the Python time of a launch goes (py-spy is brought as a wheel in .whl).
  if command -v py-spy >/dev/null || [ -x /tmp/site/bin/py-spy ]; then
    PYSPY=$(command -v py-spy || echo /tmp/site/bin/py-spy)
    "$PYSPY" record -r 5000 -f raw -o "$OUT/pyspy.txt" -- python3 bench/quick_profile.py > /dev/null 2>&1
    python3 bench/pyspy_top.py "$OUT/pyspy.txt" 2>&1 | head -30
  fi
fi
