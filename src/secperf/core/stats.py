"""Summary statistics of raw samples: small pure functions over numpy/scipy, no I/O.

Percentiles use numpy's default "linear" method (Hyndman & Fan type 7, interpolation between
closest ranks), the definition Results have always used. The median's 95% interval is
scipy.stats.bootstrap's percentile interval with a fixed seed, so a re-render of the same Result
gives the same interval. `secperf compare` uses scipy.stats.mannwhitneyu.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Union

import numpy as np

from .errors import InputError

BOOTSTRAP_RESAMPLES = 2000
# resampled values held in memory at once (2e6 doubles = 16 MB): bounds memory for long series
_BOOTSTRAP_CELLS = 2_000_000


class StatsError(InputError):
    """Raised for input no statistic can be computed from."""


# samples as given by callers: a sequence of numbers or a numpy array of them
Samples = Union[Sequence[float], "np.ndarray[Any, Any]"]


def _checked(values: Samples) -> np.ndarray:
    try:
        xs = np.asarray(values, dtype=float).ravel()
    except (TypeError, ValueError):
        raise StatsError("samples must be numbers") from None
    if xs.size == 0:
        raise StatsError("no samples: a summary needs at least one value")
    if not np.all(np.isfinite(xs)):
        raise StatsError("samples must be finite numbers (found NaN or infinity)")
    return xs


def percentile(values: Samples, q: float) -> float:
    """The q-th percentile (0..100), linear interpolation between closest ranks."""
    if not 0.0 <= q <= 100.0:
        raise StatsError(f"percentile must be within 0..100, got {q}")
    return float(np.percentile(_checked(values), q))


def mean(values: Samples) -> float:
    return float(np.mean(_checked(values)))


def stdev(values: Samples) -> float:
    """Sample standard deviation (n - 1 in the denominator); 0.0 for a single value."""
    xs = _checked(values)
    return float(np.std(xs, ddof=1)) if xs.size > 1 else 0.0


def median(values: Samples) -> float:
    return percentile(values, 50.0)


def bootstrap_median_ci(
    values: Samples, confidence: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """Percentile-bootstrap interval of the median (deterministic for a given seed)."""
    xs = _checked(values)
    if not 0.0 < confidence < 1.0:
        raise StatsError(f"confidence must be between 0 and 1, got {confidence}")
    if resamples < 1:
        raise StatsError(f"resamples must be at least 1, got {resamples}")
    from scipy import stats as _sp  # reason: importing scipy.stats costs ~1 s per command (start-up)

    if xs.size == 1 or np.ptp(xs) == 0:  # every resample has the same median: scipy calls that degenerate
        return float(xs[0]), float(xs[0])
    with warnings.catch_warnings():
        # a few distinct values make a lumpy bootstrap distribution; the percentile interval is still defined
        warnings.simplefilter("ignore", _sp.DegenerateDataWarning)
        res = _sp.bootstrap(
            (xs,),
            np.median,
            n_resamples=resamples,
            confidence_level=confidence,
            method="percentile",
            vectorized=True,
            batch=max(1, _BOOTSTRAP_CELLS // xs.size),
            rng=np.random.default_rng(seed),
        )
    lo, hi = res.confidence_interval
    return float(lo), float(hi)


def bootstrap_ratio_ci(
    numerator: Sequence[float],
    denominator: Sequence[float],
    confidence: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap interval of median(numerator) / median(denominator), the two samples
    resampled independently by scipy.stats.bootstrap (deterministic for a given seed): how sure
    "library A takes 1.5x library B's time" is."""
    a, b = _checked(numerator), _checked(denominator)
    if not 0.0 < confidence < 1.0:
        raise StatsError(f"confidence must be between 0 and 1, got {confidence}")
    if np.median(b) <= 0 or np.any(b <= 0):
        raise StatsError("the denominator's samples must be positive")
    if resamples < 1:
        raise StatsError(f"resamples must be at least 1, got {resamples}")
    from scipy import stats as _sp  # reason: scipy: ~1 s to import (start-up)

    # scipy resamples only samples of two or more values; a single value is its own median in every
    # resample, so it stays fixed and the ratio is bootstrapped over the other sample alone
    if a.size == 1 and b.size == 1:
        return float(a[0] / b[0]), float(a[0] / b[0])
    data: tuple[np.ndarray, ...] = tuple(x for x in (a, b) if x.size > 1)

    def statistic(*resampled: np.ndarray, axis: int = -1) -> np.ndarray:
        drawn = iter(resampled)  # in the order of `data`
        ma, mb = (float(x[0]) if x.size == 1 else np.median(next(drawn), axis=axis) for x in (a, b))
        return np.asarray(ma / mb)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", _sp.DegenerateDataWarning)  # as in bootstrap_median_ci
        res = _sp.bootstrap(
            data,
            statistic,
            n_resamples=resamples,
            confidence_level=confidence,
            method="percentile",
            vectorized=True,
            paired=False,
            batch=max(1, _BOOTSTRAP_CELLS // max(a.size, b.size)),
            rng=np.random.default_rng(seed),
        )
    lo, hi = res.confidence_interval
    return float(lo), float(hi)


def summarize(values: Samples, unit: str, threshold: float | None = None) -> dict[str, Any]:
    """n, mean, sd, min, P50, P90, P99, max, count over a threshold, bootstrap 95% CI of the median.

    Keys carry the unit (``p50_us`` for unit ``us``), as every Result field does.
    """
    xs = _checked(values)
    lo, hi = bootstrap_median_ci(xs)
    p50, p90, p99 = (float(v) for v in np.percentile(xs, [50.0, 90.0, 99.0]))
    u = unit
    out: dict[str, Any] = {
        "n": int(xs.size),
        f"mean_{u}": mean(xs),
        f"sd_{u}": stdev(xs),
        f"min_{u}": float(xs.min()),
        f"p50_{u}": p50,
        f"p90_{u}": p90,
        f"p99_{u}": p99,
        f"max_{u}": float(xs.max()),
        f"median_ci95_{u}": [lo, hi],
    }
    if threshold is not None:
        out[f"threshold_{u}"] = threshold
        out["over_threshold"] = int(np.count_nonzero(xs > threshold))
    return out


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Mann-Whitney U test p-value (scipy: exact for small samples without ties, else the
    normal approximation with tie and continuity corrections).

    Used by `secperf compare`. Returns 1.0 when the test cannot tell (all values tied).
    """
    from scipy import stats as _sp  # reason: scipy: ~1 s to import (start-up)

    xa, xb = _checked(a), _checked(b)
    if np.ptp(np.concatenate([xa, xb])) == 0:
        return 1.0
    p = float(_sp.mannwhitneyu(xa, xb, alternative="two-sided", method="auto").pvalue)
    return 1.0 if np.isnan(p) else min(p, 1.0)
