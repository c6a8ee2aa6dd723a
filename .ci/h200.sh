#!/usr/bin/env bash
# The one script for the H200 (see ../shared/device.md): build the extension there, run every
# test (CPU and GPU), the demo and the launch benchmarks; logs and results go to $OUT.
# Usage (device tool, with .whl carried): bash .ci/h200.sh [pytest -k expression]
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
python3 -m pip install -q --no-build-isolation --no-deps --no-index -e . 2>&1 | tail -3 || exit 1
{ nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -m launcher info; } 2>&1 | tee "$OUT/info.txt"
K=${1:-}
python3 -m pytest tests -q -rs -p no:cacheprovider ${K:+-k "$K"} 2>&1 | tee "$OUT/tests.log" | tail -60
echo "tests exit: ${PIPESTATUS[0]}" | tee -a "$OUT/tests.log"
if [ -z "$K" ] || [ -n "${LAUNCHER_RUN_DEMO:-}" ]; then
  python3 -m launcher demo 2>&1 | tee "$OUT/demo.txt"
fi
if [ -n "${LAUNCHER_RUN_BENCH:-}" ]; then
  python3 -m launcher bench --out "$OUT" > "$OUT/bench.log" 2>&1
  tail -60 "$OUT/bench.log"
  python3 bench/quick_profile.py > "$OUT/profile.txt" 2>&1
fi
