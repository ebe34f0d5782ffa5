"""The one delay sampler, written twice: secperf.inputs.se_profiles (Dist.sample_ms, numpy; the Monte
Carlo uses it too) and the shim's native/se_shim/profile.c (se_draw_delay_ms, drawn here through
secperf-se-sample). Many draws from both, with fixed seeds, must have the same distribution: a
two-sample Kolmogorov-Smirnov test at a loose alpha and the quantiles of one side falling at the
same ranks of the other."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from secperf.core.native import find_native
from secperf.inputs import se_profiles as SP
from secperf.sim import montecarlo as MC

N = 20000
ALPHA = 0.001
QUANTILES = (0.01, 0.1, 0.5, 0.9, 0.99)
RANK_TOLERANCE = 0.015  # about 5 standard errors of the difference of two empirical CDFs, N each


def _sampler_tool() -> Path:
    return find_native("secperf-se-sample", "bin", "SECPERF_SE_SAMPLE", "native/se_shim")


def _c_draws(tmp_path: Path, body: str, tail: str | None, n: int = N, seed: int = 11) -> np.ndarray:
    prof = tmp_path / "profile.txt"
    lines = ["module = /nonexistent/module.so   # parsed, never loaded", f"C_Sign = {body}"]
    if tail:
        lines.append(f"C_Sign.tail = {tail}")
    prof.write_text("\n".join(lines) + "\n")
    p = subprocess.run(
        [str(_sampler_tool()), "--profile", str(prof), "--function", "C_Sign", "--n", str(n), "--seed", str(seed)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    return np.array([float(x) for x in p.stdout.split()])


def _dist(body: str, tail: str | None) -> SP.Dist:
    kind, *params = body.split()
    t = None
    if tail:
        prob, tkind, *tparams = tail.split()
        t = SP.Tail(float(prob), SP.Dist(tkind, tuple(float(x) for x in tparams)))
    return SP.Dist(kind, tuple(float(x) for x in params), tail=t)


def _py_draws(body: str, tail: str | None, n: int = N, seed: int = 11) -> np.ndarray:
    return _dist(body, tail).sample_ms(np.random.default_rng(seed), n)


def _same_distribution(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(KS p-value, the largest gap between the two empirical CDFs at a's quantiles: the share of
    each sample at or below them, so a point mass counts the same on both sides)."""
    from scipy import stats as sps

    p = sps.ks_2samp(a, b).pvalue
    sa, sb = np.sort(a), np.sort(b)
    xs = np.quantile(a, QUANTILES)
    gap = np.max(
        np.abs(np.searchsorted(sa, xs, side="right") / len(a) - np.searchsorted(sb, xs, side="right") / len(b))
    )
    return float(p), float(gap)


CASES = [
    ("lognormal 475.1 0.019", "0.04 lognormal 1300 0.25"),  # the IoT SAFE SIM's C_Sign, heavy tail
    ("lognormal 200 0.7", None),
    ("normal 30 4", None),
    ("normal 1 10", None),  # mostly truncated: the redraws matter
    ("normal 0 10", "0.3 normal 50 20"),
    ("empirical 12.1 13.4 11.9 15.0", "0.1 fixed 80"),
]


@pytest.mark.parametrize("body,tail", CASES)
def test_python_and_c_samplers_draw_the_same_distribution(tmp_path, body, tail):
    c, py = _c_draws(tmp_path, body, tail), _py_draws(body, tail)
    assert len(c) == len(py) == N
    assert c.min() >= 0.0 and py.min() >= 0.0
    p, gap = _same_distribution(c, py)
    assert p > ALPHA, (body, tail, p)
    assert gap < RANK_TOLERANCE, (body, tail, gap)


def test_the_comparison_tells_a_five_percent_slower_sampler_apart(tmp_path):
    """The check has power: the shim's draws against Python's for a median 5% higher fail it."""
    c = _c_draws(tmp_path, "lognormal 475.1 0.019", "0.04 lognormal 1300 0.25")
    py = _py_draws("lognormal 498.9 0.019", "0.04 lognormal 1300 0.25")
    p, gap = _same_distribution(c, py)
    assert p < ALPHA and gap > RANK_TOLERANCE


def test_both_clamp_at_the_same_ceiling(tmp_path):
    """A lognormal wide enough to pass one hour: both sides clamp there, the same share of draws."""
    c = _c_draws(tmp_path, "lognormal 1000 8", None)
    py = _py_draws("lognormal 1000 8", None)
    assert c.max() == py.max() == SP.DELAY_MAX_MS
    share_c, share_py = np.mean(c == SP.DELAY_MAX_MS), np.mean(py == SP.DELAY_MAX_MS)
    assert 0.1 < share_py < 0.2  # P(1000 e^(8z) > 3.6e6) = P(z > 1.02) = 0.15
    assert share_c == pytest.approx(share_py, abs=RANK_TOLERANCE)


def test_truncated_normal_is_redrawn_not_piled_at_zero(tmp_path):
    """MEAN 0: half the first draws are negative; redrawing leaves no mass at 0 on either side."""
    c, py = _c_draws(tmp_path, "normal 0 10", None), _py_draws("normal 0 10", None)
    assert np.count_nonzero(c == 0.0) == 0 and np.count_nonzero(py == 0.0) == 0
    assert np.median(py) == pytest.approx(10 * 0.6745, rel=0.05)  # the half-normal's median


def test_monte_carlo_draws_the_secure_element_through_the_same_sampler():
    """sim/montecarlo.se_delays_ms is the sum of Profile.sample_ms over the calls, draw for draw."""
    pr = SP.load_profiles()["iot-safe-sim"]
    calls = ("C_SignInit", "C_Sign")
    got = MC.se_delays_ms(pr, calls, np.random.default_rng(3), 1000)
    rng = np.random.default_rng(3)
    want = sum(pr.sample_ms(fn, rng, 1000) for fn in calls)
    assert np.array_equal(got, want)


def test_sampler_tool_rejects_a_bad_count_naming_the_option(tmp_path):
    p = subprocess.run(
        [str(_sampler_tool()), "--profile", str(tmp_path / "x"), "--function", "C_Sign", "--n", "0"],
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 2 and "--n" in p.stderr and "Traceback" not in p.stderr
