"""The launch-latency suite, for checkout users:

    pytest bench/test_launch_latency.py --benchmark-json=bench.json
    python bench/report.py bench.json --markdown bench.md --png bench.png

The tests live in launcher/bench/suite.py, inside the package, so that `python -m launcher bench`
runs the same suite from an installed wheel; this file only collects them. Without a GPU and
torch the module is skipped.
"""
from launcher.bench.suite import *  # noqa: F401,F403
