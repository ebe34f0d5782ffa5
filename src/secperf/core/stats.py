"""Summary statistics of raw samples: small pure functions, no I/O.

Percentiles use linear interpolation between closest ranks (numpy's default "linear" method,
Hyndman & Fan type 7), so figures agree with numpy/pandas. The median's 95% interval is a
percentile bootstrap with a fixed seed, so a re-render of the same Result gives the same interval.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from .errors import InputError

BOOTSTRAP_RESAMPLES = 2000


class StatsError(InputError):
    """Raised for input no statistic can be computed from."""


def _checked(values: Sequence[float]) -> list[float]:
    xs = [float(v) for v in values]
    if not xs:
        raise StatsError("no samples: a summary needs at least one value")
    if any(math.isnan(x) or math.isinf(x) for x in xs):
        raise StatsError("samples must be finite numbers (found NaN or infinity)")
    return xs


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), linear interpolation between closest ranks."""
    if not 0.0 <= q <= 100.0:
        raise StatsError(f"percentile must be within 0..100, got {q}")
    xs = sorted(_checked(values))
    return _percentile_sorted(xs, q)


def _percentile_sorted(xs: list[float], q: float) -> float:
    if len(xs) == 1:
        return xs[0]
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    frac = pos - lo
    return xs[lo] + (xs[hi] - xs[lo]) * frac


def mean(values: Sequence[float]) -> float:
    xs = _checked(values)
    return math.fsum(xs) / len(xs)


def stdev(values: Sequence[float]) -> float:
    """Sample standard deviation (n - 1 in the denominator); 0.0 for a single value."""
    xs = _checked(values)
    if len(xs) < 2:
        return 0.0
    m = math.fsum(xs) / len(xs)
    return math.sqrt(math.fsum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def median(values: Sequence[float]) -> float:
    return percentile(values, 50.0)


def bootstrap_median_ci(values: Sequence[float], confidence: float = 0.95,
                        resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap interval of the median (deterministic for a given seed)."""
    xs = _checked(values)
    if not 0.0 < confidence < 1.0:
        raise StatsError(f"confidence must be between 0 and 1, got {confidence}")
    if len(xs) == 1:
        return xs[0], xs[0]
    rng = random.Random(seed)
    n = len(xs)
    meds = []
    for _ in range(resamples):
        sample = sorted(rng.choices(xs, k=n))  # choices(): ~10x faster than a randrange loop
        meds.append(_percentile_sorted(sample, 50.0))
    meds.sort()
    alpha = (1.0 - confidence) / 2.0
    return _percentile_sorted(meds, 100 * alpha), _percentile_sorted(meds, 100 * (1 - alpha))


def summarize(values: Sequence[float], unit: str, threshold: float | None = None) -> dict:
    """n, mean, sd, min, P50, P90, P99, max, count over a threshold, bootstrap 95% CI of the median.

    Keys carry the unit (``p50_us`` for unit ``us``), as every Result field does.
    """
    xs = sorted(_checked(values))
    lo, hi = bootstrap_median_ci(xs)
    u = unit
    out = {
        "n": len(xs),
        f"mean_{u}": mean(xs),
        f"sd_{u}": stdev(xs),
        f"min_{u}": xs[0],
        f"p50_{u}": _percentile_sorted(xs, 50.0),
        f"p90_{u}": _percentile_sorted(xs, 90.0),
        f"p99_{u}": _percentile_sorted(xs, 99.0),
        f"max_{u}": xs[-1],
        f"median_ci95_{u}": [lo, hi],
    }
    if threshold is not None:
        out[f"threshold_{u}"] = threshold
        out["over_threshold"] = sum(1 for x in xs if x > threshold)
    return out


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Mann-Whitney U test p-value (normal approximation with tie correction).

    Used by `secperf compare`; exact for the purpose of a significance verdict once each side has
    a handful of samples. Returns 1.0 when the test cannot tell (all values tied).
    """
    xa, xb = _checked(a), _checked(b)
    n1, n2 = len(xa), len(xb)
    pooled = sorted([(x, 0) for x in xa] + [(x, 1) for x in xb])
    ranks = [0.0] * len(pooled)
    tie_term = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        r = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            ranks[k] = r
        t = j - i + 1
        tie_term += t ** 3 - t
        i = j + 1
    r1 = sum(r for r, (_, g) in zip(ranks, pooled) if g == 0)
    u1 = r1 - n1 * (n1 + 1) / 2.0
    mu = n1 * n2 / 2.0
    n = n1 + n2
    var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return 1.0
    z = (abs(u1 - mu) - 0.5) / math.sqrt(var)  # continuity correction
    if z <= 0:
        return 1.0
    return math.erfc(z / math.sqrt(2.0))
