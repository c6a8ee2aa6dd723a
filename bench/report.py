"""Markdown report and chart of a launch-latency JSON, for checkout users:

    python bench/report.py bench.json --markdown bench.md --png bench.png

The code is launcher.bench.report (`python -m launcher bench --report bench.json` does the same).
"""
import sys

from launcher.bench.report import main

if __name__ == "__main__":
    sys.exit(main())
