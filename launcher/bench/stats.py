"""Medians, quantiles and per-round ratios (pure Python, no numpy)."""
from __future__ import annotations

import math


def quantile(values, q: float) -> float:
    """The q-quantile (0 <= q <= 1) with linear interpolation between order statistics, as
    numpy's default method and `statistics.quantiles(..., method="inclusive")` compute it."""
    xs = sorted(float(v) for v in values)
    if not xs:
        raise ValueError("quantile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q}")
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def median(values) -> float:
    return quantile(values, 0.5)


def summary(values) -> dict:
    """median, p25, p75, min, max and n of some values (NaNs, from rounds with no ratio, dropped)."""
    xs = [float(v) for v in values if not math.isnan(float(v))]
    if not xs:
        return {"n": 0}
    return {"median": median(xs), "p25": quantile(xs, 0.25), "p75": quantile(xs, 0.75),
            "min": min(xs), "max": max(xs), "n": len(xs)}


def per_round_ratio(numerator, denominator) -> list:
    """numerator[r] / denominator[r] for every round r: both series must come from the same rounds."""
    num, den = list(numerator), list(denominator)
    if len(num) != len(den):
        raise ValueError(f"series of {len(num)} and {len(den)} rounds: ratios need the same rounds")
    return [a / b if b > 0 else math.nan for a, b in zip(num, den)]


def per_round_overhead_share(path, floor, reference) -> list:
    """(path - floor) / (reference - floor), round by round: how much of the reference's time above
    the floor the path spends. A round where the reference is not above the floor gives NaN."""
    p, f, r = list(path), list(floor), list(reference)
    if not len(p) == len(f) == len(r):
        raise ValueError("overhead shares need three series from the same rounds")
    return [(a - c) / (b - c) if b > c else math.nan for a, b, c in zip(p, r, f)]
