"""Benchmarks need a GPU; without one they are skipped with that message (CI collects them)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
