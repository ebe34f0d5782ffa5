"""Statistics agree with numpy and behave on edge cases."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_bootstrap_ci_is_seeded_and_brackets_the_median():
    rng = np.random.default_rng(9)
    xs = rng.lognormal(2, 0.7, 300)
    a, b = stats.bootstrap_median_ci(xs, seed=1), stats.bootstrap_median_ci(xs.tolist(), seed=1)
    assert a == b  # same seed, same interval (list or array)
    assert stats.bootstrap_median_ci(xs, seed=2) != a  # the seed is what fixes it
    assert a[0] <= float(np.median(xs)) <= a[1]
    assert (
        stats.bootstrap_median_ci(xs, confidence=0.5)[1] - stats.bootstrap_median_ci(xs, confidence=0.5)[0]
        < a[1] - a[0]
    )  # a lower confidence gives a narrower interval


def test_bootstrap_ci_of_constant_or_single_samples_is_the_value():
    assert stats.bootstrap_median_ci([7.5]) == (7.5, 7.5)
    assert stats.bootstrap_median_ci([3.0] * 40) == (3.0, 3.0)
    assert stats.summarize([3.0] * 40, "us")["median_ci95_us"] == [3.0, 3.0]


def test_summary_values_are_plain_json_numbers():
    import json

    s = stats.summarize(np.arange(1.0, 51.0), "ms", threshold=25)
    assert type(s["n"]) is int and type(s["over_threshold"]) is int and s["over_threshold"] == 25
    assert all(
        type(v) is float
        for k, v in s.items()
        if k.endswith("_ms") and k != "threshold_ms" and not k.startswith("median_ci95")
    )
    assert all(type(v) is float for v in s["median_ci95_ms"])
    json.dumps(s)


def test_mann_whitney_is_exact_for_small_samples_without_ties():
    # fully separated 3 vs 3: 2 of the C(6,3) = 20 equally likely rank splits are as extreme
    assert stats.mann_whitney_p([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]) == pytest.approx(2 / 20)
    assert stats.mann_whitney_p([4.0, 5.0, 6.0], [1.0, 2.0, 3.0]) == pytest.approx(2 / 20)


def test_non_numeric_samples_are_rejected():
    with pytest.raises(stats.StatsError, match="numbers"):
        stats.mean(["fast", "slow"])
    with pytest.raises(stats.StatsError, match="confidence"):
        stats.bootstrap_median_ci([1.0, 2.0], confidence=1.5)


def test_ratio_interval_is_seeded_brackets_the_ratio_and_takes_single_values():
    rng = np.random.default_rng(5)
    a, b = rng.lognormal(3.0, 0.3, 400), rng.lognormal(2.0, 0.3, 300)
    lo, hi = stats.bootstrap_ratio_ci(a, b, seed=7)
    assert lo < np.median(a) / np.median(b) < hi
    assert stats.bootstrap_ratio_ci(a.tolist(), b.tolist(), seed=7) == (lo, hi)  # the seed fixes it
    assert stats.bootstrap_ratio_ci(a, b, seed=8) != (lo, hi)
    narrow = stats.bootstrap_ratio_ci(a, b, seed=7, confidence=0.5)
    assert lo < narrow[0] < narrow[1] < hi
    # a single value is its own median in every resample: only the other sample varies
    lo1, hi1 = stats.bootstrap_ratio_ci([40.0], b)
    assert 40.0 / b.max() <= lo1 < 40.0 / np.median(b) < hi1 <= 40.0 / b.min()
    assert stats.bootstrap_ratio_ci([6.0], [3.0]) == (2.0, 2.0)
    with pytest.raises(stats.StatsError, match="resamples"):
        stats.bootstrap_ratio_ci(a, b, resamples=0)
    with pytest.raises(stats.StatsError, match="positive"):
        stats.bootstrap_ratio_ci(a, [1.0, -1.0])
