#!/usr/bin/env bash
# Fetch what .ci/h200.sh's third-party phase carries to the GPU machine (which has no network) into
# the git-ignored .device/thirdparty/: third-party Triton libraries' wheels and a small selection of
# their own tests. Run it here, on a machine with PyPI access, from the repository root:
#
#   bash .ci/third_party_fetch.sh
#
# Nothing here is ever committed: it is other projects' code (their licences are kept beside it).
#
# wheels/ (Python 3.12, manylinux x86_64 or pure Python; installed there with --no-deps into /tmp/site):
#   flag_gems 5.0.2 and liger_kernel 0.8.5; flag_gems' Requires-Dist (outside extras) pins packaging==26.0,
#   PyYAML==6.0.3, sqlalchemy==2.0.48 and numpy==1.26.4: numpy is on the machine (not pinned there,
#   not carried), the other three are carried. sqlalchemy's greenlet dependency is left out: only
#   its asyncio extension needs it (flag_gems uses the plain engine, for its autotune cache);
#   typing_extensions comes with torch. liger_kernel needs only torch and triton.
#
# flaggems/: FlagGems' tests at release v5.0.2, github.com/flagos-ai/FlagGems (FlagOpen/FlagGems moved
#   there) commit 30bfcc0735b8ebd48bd7339ef752ec64df69663f (tag v5.0.2, 2026-04-24): pytest.ini,
#   LICENSE and tests/{__init__,conftest,accuracy_utils}.py with tests/test_{add,mul,exp,relu,silu,
#   gelu,softmax,sum,mean,layer_norm,rms_norm}.py, unchanged. There is no FlagGems sdist on PyPI and
#   CI cannot reach GitHub: these were written from that commit with the session's GitHub tools
#   (git show v5.0.2:PATH). Where they are missing this script tries raw.githubusercontent.com at that
#   commit; either way it checks them against these sha256 sums:
#   9c86585b79582053788bb0ec33a027bcd0139cc57512dd93279f670c7307182b  flaggems/pytest.ini
#   0d542e0c8804e39aa7f37eb00da5a762149dc682d7829451287e11b938e94594  flaggems/LICENSE
#   e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  flaggems/tests/__init__.py
#   9d20ac35cf5294bdf573acc87d9f1bd75b1ce3cbe3a53c0d0a10e9c521e60719  flaggems/tests/accuracy_utils.py
#   9660358fe037689617f26ec4b51ef4b74fca158cbf8efb3cf308e7ab129cc1c8  flaggems/tests/conftest.py
#   dabdc7a437f8cc0c6d839c018e94ad6f3611f5674060742fbd2781f076ef199c  flaggems/tests/test_add.py
#   9a1fafb067a3e088e3f65d14f1d761cf8d6d6aa70b60ca0bc92c8622ab259b28  flaggems/tests/test_exp.py
#   6ecb332d020a6d4d62e31b6fa3a2136373139596fd600e2abad6b3ffe594958e  flaggems/tests/test_gelu.py
#   292a11fbd33af636632c1723452f4792fd6dfd94bf7d3d5d43f97ed1323a9676  flaggems/tests/test_layer_norm.py
#   be16dba3c8d7579e7e1510faadc6c2b78a590dca5b0607092c0444aaa810df89  flaggems/tests/test_mean.py
#   e498bd8234210eb2e10e5764e8af7675c2878a4e46c79f3306b62d43591aa182  flaggems/tests/test_mul.py
#   c4cc97375014fb898dc8fa51f84f57cb6c12bedaf42253a41e6b6f65dba36612  flaggems/tests/test_relu.py
#   9b0122162302e1f554f90f79081d1bbc4f1b47e64ae8b506add4fb8537821347  flaggems/tests/test_rms_norm.py
#   e44d5e966ffbbc121bda254abdd84c6647d27d3ce79555ca76020b6ae5629d1f  flaggems/tests/test_silu.py
#   8c4ee8c28043193e8de9d36a1741941163ea8d4b595bff1999fb7b70f0db13a3  flaggems/tests/test_softmax.py
#   923e2d99c6ed182ead4fb21a55eba4bda3ecca26cf9434e5d4417673c0adb418  flaggems/tests/test_sum.py
#
# liger/: Liger-Kernel's tests at release 0.8.5, taken from its PyPI sdist liger_kernel-0.8.5.tar.gz (the
#   released source of github.com/linkedin/Liger-Kernel 0.8.5; the stored GitHub snapshot stops at 0.8.2):
#   LICENSE, test/__init__.py and test/ops/{__init__,conftest}.py with test/ops/test_{rms_norm,swiglu,
#   softmax,layer_norm,geglu,fused_add_rms_norm}.py, unchanged. Two files are ours, written below:
#   liger/pytest.ini (python_files only: Liger's pyproject sets pythonpath and log_cli, which a
#   carried copy does not need) and liger/test/conftest.py, a stand-in for Liger's own, which imports
#   test/utils.py and with it transformers and tokenizers (absent on the GPU machine); the test/ops
#   tests import neither, and the stand-in keeps what Liger's autouse fixtures do for them.
#
# Size: about 7.2 MiB in all (sqlalchemy 3.3 MB, flag_gems 2.2 MB, liger 0.9 MB, PyYAML 0.8 MB), to
# carry with .whl (cffi): `carry: [".whl", ".device/thirdparty"]`.
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/.."
TP=.device/thirdparty
mkdir -p "$TP/wheels"
git check-ignore -q "$TP" || { echo "$TP is not git-ignored: stop"; exit 1; }

PLAT=(--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any)
python3 -m pip download -q --no-deps "${PLAT[@]}" -d "$TP/wheels" \
  flag-gems==5.0.2 liger-kernel==0.8.5 PyYAML==6.0.3 SQLAlchemy==2.0.48 packaging==26.0

# Liger-Kernel's tests from its sdist (downloaded to a scratch folder, never kept)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --no-deps --no-binary=:all: -d "$tmp" liger-kernel==0.8.5
tar -xzf "$tmp"/liger_kernel-0.8.5.tar.gz -C "$tmp"
src=$tmp/liger_kernel-0.8.5
L=$TP/liger
rm -rf "$L" && mkdir -p "$L/test/ops"
cp "$src/LICENSE" "$L/" && cp "$src/test/__init__.py" "$L/test/"
for f in __init__ conftest test_rms_norm test_swiglu test_softmax test_layer_norm test_geglu test_fused_add_rms_norm; do
  cp "$src/test/ops/$f.py" "$L/test/ops/"
done
printf '[pytest]\npython_files = test_*.py\n' > "$L/pytest.ini"
cat > "$L/test/conftest.py" <<'EOF'
# Written by launcher's .ci/third_party_fetch.sh, NOT Liger-Kernel's file: Liger's test/conftest.py
# imports test/utils.py, which imports transformers and tokenizers (absent on the GPU machine). The
# test/ops tests need neither; this stand-in keeps what its autouse fixtures do for them: the seeds
# (as test.utils.set_seed(42)) and the reset of the backend choice after each test.
import random

import numpy as np
import pytest
import torch


@pytest.fixture(autouse=True)
def set_random_seed():
    random.seed(42)
    np.random.seed(0)
    torch.manual_seed(42)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(42)


@pytest.fixture(autouse=True)
def clear_gpu_cache():
    yield
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


@pytest.fixture(autouse=True)
def reset_liger_backend_selection():
    yield
    try:
        from liger_kernel.backends.dispatch import clear_available_cache, set_impl

        set_impl(None)
        clear_available_cache()
    except Exception:
        pass
EOF

# FlagGems' tests: written from GitHub beforehand (see the header); fetched here only where missing
commit=30bfcc0735b8ebd48bd7339ef752ec64df69663f
sums=$(sed -n 's/^#   \([0-9a-f]\{64\}  flaggems\/.*\)$/\1/p' "$self")
mkdir -p "$TP/flaggems/tests"
while read -r _ path; do
  [ -e "$TP/$path" ] && continue
  curl -fsSL --max-time 20 -o "$TP/$path" \
    "https://raw.githubusercontent.com/flagos-ai/FlagGems/$commit/${path#flaggems/}" \
    || { rm -f "$TP/$path"; echo "missing $TP/$path: write it from github flagos-ai/FlagGems@$commit"; }
done <<< "$sums"
# a missing or changed file stops here: an empty tests folder carried to the GPU machine makes pytest refuse
# FlagGems' own option (--quick) with a usage error, in both modes, and nothing is tested
(cd "$TP" && sha256sum --quiet -c <<< "$sums") \
  || { echo "FlagGems test files missing or changed: write them from github flagos-ai/FlagGems@$commit"; exit 1; }
echo "FlagGems test files: checked against their sha256 sums"

ls -l "$TP/wheels"
echo "$TP: $(du -sh "$TP" | cut -f1)"
