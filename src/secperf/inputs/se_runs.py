"""What a secure-element profile gives over many runs: S2's two token modes simulated (sign only on a
kept session, and the whole open-login-find-sign sequence), the calibration check of a profile
against the figures it names, and the Kolmogorov-Smirnov distance of measured delays from a profile's
distribution (what `secperf signer` and the tests judge a shim's delays by). The profiles themselves,
their distributions and the one delay sampler are in inputs/se_profiles.py."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import numpy as np

from ..core.stats import mean as _mean
from ..core.stats import percentile as _percentile
from ..core.stats import stdev as _stdev
from .se_profiles import (
    _FUNCTION_SET,
    OVER_MS,
    SIGN_ONLY_CALLS,
    TOTAL_CALLS,
    TOTAL_OPTIONAL_CALLS,
    Dist,
    Profile,
    ProfileError,
)


class MsSummary(TypedDict):
    """Simulated runs of one token mode, in ms, and how many exceed the threshold."""

    n: int
    mean_ms: float
    sd_ms: float
    min_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    threshold_ms: float
    over_threshold: int
    share_over_threshold: float


def _summary(xs: Sequence[float], over_ms: float = OVER_MS) -> MsSummary:
    over = sum(1 for x in xs if x > over_ms)
    return MsSummary(
        n=len(xs),
        mean_ms=_mean(xs),
        sd_ms=_stdev(xs),
        min_ms=min(xs),
        p50_ms=_percentile(xs, 50.0),
        p90_ms=_percentile(xs, 90.0),
        p99_ms=_percentile(xs, 99.0),
        max_ms=max(xs),
        threshold_ms=over_ms,
        over_threshold=over,
        share_over_threshold=over / len(xs),
    )


def mode_calls(profile: Profile) -> dict[str, tuple[str, ...]]:
    extra = tuple(fn for fn in TOTAL_OPTIONAL_CALLS if fn in profile.functions)
    return {"sign_only": SIGN_ONLY_CALLS, "total": TOTAL_CALLS + extra}


def simulate_modes(
    profile: Profile, n: int = 20000, seed: int = 0, base_ms: float | Mapping[str, float] | None = None
) -> dict[str, dict[str, Any]]:
    """Simulate S2's two modes ``n`` times each: ``sign_only`` (C_SignInit + C_Sign on a kept session)
    and ``total`` (open session, log in, find the key, sign; plus C_Logout/C_CloseSession when the
    profile sets them). ``base_ms`` is what the host and the underlying token cost without the
    profile: a number added once per run, or a mapping PKCS#11 function -> ms added to each call.
    Returns per mode n, mean_ms, sd_ms, min_ms, p50_ms, p90_ms, p99_ms, max_ms, over_threshold (runs
    over 1000 ms) and share_over_threshold, plus the calls each mode makes."""
    if n < 1:
        raise ProfileError(f"simulate_modes needs n >= 1, got {n}")
    per_call: Mapping[str, float] = base_ms if isinstance(base_ms, Mapping) else {}
    per_run = float(base_ms) if isinstance(base_ms, (int, float)) else 0.0
    for fn in per_call:
        if fn not in _FUNCTION_SET:
            raise ProfileError(f"base_ms: {fn!r} is not a PKCS#11 v2.40 function name")
    out = {}
    for mode, calls in mode_calls(profile).items():
        rng = np.random.default_rng(random.Random(f"{seed}:{mode}").getrandbits(128))
        runs = np.full(n, per_run)
        for fn in calls:
            runs += profile.sample_ms(fn, rng, n) + per_call.get(fn, 0.0)
        out[mode] = {**_summary(runs.tolist()), "calls": list(calls)}
    return out


def calibration_check(profile: Profile, n: int = 20000, seed: int = 0) -> list[dict[str, Any]]:
    """Simulated vs the study figures in the profile's ``calibrated_to`` table, per mode and statistic:
    rows {mode, stat, study, simulated, rel_error}. Empty when the profile is not calibrated."""
    cal = profile.calibrated_to
    if not cal:
        return []
    sim = simulate_modes(profile, n, seed)
    rows = []
    keys = {
        "mean": "mean_ms",
        "sd": "sd_ms",
        "p50": "p50_ms",
        "p90": "p90_ms",
        "p99": "p99_ms",
        "share_over_1s": "share_over_threshold",
    }
    for mode in ("sign_only", "total"):
        target = cal.get(mode) or {}
        for stat, key in keys.items():
            if stat in target:
                study, got = float(target[stat]), sim[mode][key]
                rel = (got - study) / study if study else (got - study)
                rows.append({"mode": mode, "stat": stat, "study": study, "simulated": got, "rel_error": rel})
    return rows


# --- Kolmogorov-Smirnov ----------------------------------------------------------------------------
_NO_DELAY = Dist("fixed", (0.0,))  # a function the profile leaves alone: always 0 ms


def ks_distance(
    samples: Sequence[float], profile: Profile, fn: str, *, n_ref: int | None = None, seed: int = 0
) -> float:
    """KS distance between observed delays (ms) and the profile's distribution for ``fn``.

    Default: one-sample, against the exact CDF (body and tail mixture). A continuous CDF goes to
    scipy.stats.kstest; one with point masses (fixed, empirical) is compared at each distinct value
    on both sides of the jump, because kstest assumes a continuous CDF and would report a perfect
    match of a fixed delay as distance 1. With ``n_ref``: two-sample (scipy.stats.ks_2samp) against
    ``n_ref`` delays simulated with ``seed``."""
    from scipy import stats as sps  # reason: scipy: ~1 s to import (start-up)

    xs = np.sort(np.asarray([float(v) for v in samples]))
    if xs.size == 0:
        raise ProfileError("ks_distance needs at least one sample")
    if n_ref is not None:
        return ks_two_sample(xs, profile.distribution_samples(fn, n_ref, seed))
    d = profile.dist(fn) or _NO_DELAY
    if not d.has_atoms:
        return float(sps.kstest(xs, d.cdf).statistic)
    values, counts = np.unique(xs, return_counts=True)
    upto = np.cumsum(counts) / xs.size  # the sample's CDF at each distinct value
    before = upto - counts / xs.size  # ... and just below it
    return float(max(np.max(np.abs(d.cdf(values) - upto)), np.max(np.abs(d.cdf(values, left=True) - before))))


def ks_two_sample(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Two-sample KS distance (scipy.stats.ks_2samp; exact with ties)."""
    from scipy import stats as sps  # reason: scipy: ~1 s to import (start-up)

    if len(a) == 0 or len(b) == 0:
        raise ProfileError("ks_two_sample needs two non-empty samples")
    return float(sps.ks_2samp(np.asarray(a, dtype=float), np.asarray(b, dtype=float)).statistic)
