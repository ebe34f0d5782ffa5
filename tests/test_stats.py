"""Statistics agree with numpy and behave on edge cases."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from secperf.core import stats

finite = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(st.lists(finite, min_size=1, max_size=80), st.floats(min_value=0, max_value=100))
def test_percentile_matches_numpy_linear(values, q):
    assert stats.percentile(values, q) == pytest.approx(np.percentile(values, q), rel=1e-9, abs=1e-6)


@settings(max_examples=100, deadline=None)
@given(st.lists(finite, min_size=2, max_size=80))
def test_mean_and_sample_sd_match_numpy(values):
    assert stats.mean(values) == pytest.approx(np.mean(values), rel=1e-9, abs=1e-6)
    assert stats.stdev(values) == pytest.approx(np.std(values, ddof=1), rel=1e-7, abs=1e-5)


def test_summary_fields_carry_unit_and_match_numpy():
    rng = np.random.default_rng(7)
    xs = rng.lognormal(3, 0.5, 501).tolist()
    s = stats.summarize(xs, "us", threshold=40.0)
    assert s["n"] == 501
    for key, q in (("p50_us", 50), ("p90_us", 90), ("p99_us", 99)):
        assert s[key] == pytest.approx(np.percentile(xs, q))
    assert s["min_us"] == min(xs) and s["max_us"] == max(xs)
    assert s["over_threshold"] == int(np.sum(np.array(xs) > 40.0))
    lo, hi = s["median_ci95_us"]
    assert lo <= s["p50_us"] <= hi


def test_bootstrap_ci_is_deterministic_and_narrows_with_n():
    rng = np.random.default_rng(1)
    small = rng.normal(100, 10, 20).tolist()
    large = rng.normal(100, 10, 2000).tolist()
    assert stats.bootstrap_median_ci(small) == stats.bootstrap_median_ci(small)
    w_small = np.subtract(*stats.bootstrap_median_ci(small)[::-1])
    w_large = np.subtract(*stats.bootstrap_median_ci(large)[::-1])
    assert w_large < w_small / 3


def test_bootstrap_ci_covers_true_median_mostly():
    rng = np.random.default_rng(3)
    hits = 0
    for _ in range(60):
        xs = rng.exponential(1.0, 60).tolist()
        lo, hi = stats.bootstrap_median_ci(xs, resamples=500)
        hits += lo <= np.log(2) <= hi
    assert hits >= 48  # nominal 95%; a broken interval would miss far more often


def test_empty_and_non_finite_samples_are_rejected():
    with pytest.raises(stats.StatsError, match="no samples"):
        stats.summarize([], "us")
    with pytest.raises(stats.StatsError, match="finite"):
        stats.mean([1.0, float("nan")])
    with pytest.raises(stats.StatsError, match="0..100"):
        stats.percentile([1.0], 101)


def test_mann_whitney_separates_shifted_samples_and_not_identical_ones():
    rng = np.random.default_rng(5)
    a = rng.normal(100, 5, 40).tolist()
    b = rng.normal(110, 5, 40).tolist()
    assert stats.mann_whitney_p(a, b) < 1e-6
    assert stats.mann_whitney_p(a, a) > 0.5
    assert stats.mann_whitney_p([1.0] * 10, [1.0] * 10) == 1.0
