"""Secure-element latency profiles: loading and validation, the shim's config format, S2 calibration
by Monte Carlo, and the KS distance used to check the shim against its profile."""

import math
import random

import numpy as np
import pytest

from secperf.inputs import se_profiles as SP
from secperf.inputs import se_runs as SR
from secperf.inputs.se_profiles import ProfileError, load_profiles
from secperf.inputs.se_runs import simulate_modes

S2 = {"sign_only_p50": 475.1, "total_p50": 642.2}
CHIPS = ("atecc608", "optiga-trust-m", "tpm2", "yubikey-piv")


@pytest.fixture(scope="module")
def profiles():
    return load_profiles()


def _write(tmp_path, text: str):
    p = tmp_path / "profiles.toml"
    p.write_text(text)
    return p


GOOD = """
[profiles.demo]
description = "demo"
wait = "sleep"
source = "test"

[profiles.demo.C_Sign]
dist = "lognormal"
median = 475.1
sigma = 0.019
tail = { p = 0.04, dist = "lognormal", median = 1300, sigma = 0.25 }

[profiles.demo.C_Login]
dist = "fixed"
value = 120

[profiles.demo.C_FindObjects]
dist = "normal"
mean = 30
sd = 4

[profiles.demo.C_OpenSession]
dist = "empirical"
samples = [12.1, 13.4, 11.9]
"""


# --- loading ---------------------------------------------------------------------------------------
def test_builtin_profiles_load_with_sources(profiles):
    for name in ("iot-safe-sim", "atecc608", "optiga-trust-m", "tpm2", "yubikey-piv", "rsa-card-1998", "softhsm"):
        assert name in profiles
    for name, pr in profiles.items():
        assert pr.source.strip(), name
        assert pr.description.strip(), name
        assert pr.wait in ("sleep", "busy")
        for fn, d in pr.functions.items():
            assert fn in SP.PKCS11_FUNCTIONS
            assert d.source.strip(), f"{name} {fn}: every figure names its source"
            if d.tail is not None:
                assert d.tail.source.strip(), f"{name} {fn}.tail"
    assert profiles["rsa-card-1998"].wait == "busy"
    assert profiles["softhsm"].functions == {}


def test_estimates_are_flagged(profiles):
    for name in CHIPS:
        for fn in ("C_OpenSession", "C_Login", "C_FindObjectsInit", "C_FindObjects"):
            assert "estimate" in profiles[name].functions[fn].source, (name, fn)


def test_pkcs11_function_list_is_v240():
    assert len(SP.PKCS11_FUNCTIONS) == 68 and len(set(SP.PKCS11_FUNCTIONS)) == 68
    for fn in ("C_Initialize", "C_GetFunctionList", "C_WaitForSlotEvent", "C_SignRecover", "C_CancelFunction"):
        assert fn in SP.PKCS11_FUNCTIONS


def test_published_figures(profiles):
    assert profiles["atecc608-nopoll"].functions["C_Sign"].params == (135.0,)
    assert profiles["optiga-trust-m"].functions["C_Sign"].params[0] == 65.0
    assert profiles["yubikey-piv"].functions["C_Sign"].params[0] == 72.0
    assert profiles["rsa-card-1998"].functions["C_Sign"].params == (27.0,)
    tpm = profiles["tpm2"]
    assert tpm.ppf("C_Sign", 0.5) == pytest.approx(200, rel=1e-6)
    assert tpm.ppf("C_Sign", 0.95) == pytest.approx(600, rel=1e-3)


# --- S2 calibration ----------------------------------------------------------------------------
def test_iot_safe_sim_matches_s2(profiles):
    sim = simulate_modes(profiles["iot-safe-sim"], n=20000, seed=7)
    so, tot = sim["sign_only"], sim["total"]
    assert so["p50_ms"] == pytest.approx(S2["sign_only_p50"], rel=0.05)
    assert tot["p50_ms"] == pytest.approx(S2["total_p50"], rel=0.05)
    assert so["over_threshold"] == 0 and so["max_ms"] < 1000  # S2: no sign_only run over 1 s
    assert 0.015 <= tot["share_over_threshold"] <= 0.07  # S2: 4 of 100
    assert 1300 <= tot["p99_ms"] <= 2200  # S2: 1739.4
    assert 640 <= tot["mean_ms"] <= 720  # S2: 677.7
    assert so["p90_ms"] == pytest.approx(483.5, rel=0.03)
    assert tot["p90_ms"] == pytest.approx(671.9, rel=0.05)
    assert so["calls"] == ["C_SignInit", "C_Sign"]
    assert tot["calls"][:3] == ["C_OpenSession", "C_Login", "C_FindObjectsInit"]


def test_calibration_check_rows(profiles):
    rows = SR.calibration_check(profiles["iot-safe-sim"], n=20000, seed=3)
    got = {(r["mode"], r["stat"]): r for r in rows}
    assert abs(got[("sign_only", "p50")]["rel_error"]) < 0.05
    assert abs(got[("total", "p50")]["rel_error"]) < 0.05
    assert got[("total", "p50")]["study"] == 642.2
    assert SR.calibration_check(profiles["softhsm"]) == []


def test_simulation_percentiles_agree_with_numpy(profiles):
    pr = profiles["iot-safe-sim"]
    rng = random.Random(11)
    xs = [sum(pr.sample(fn, rng) for fn in SP.TOTAL_CALLS) for _ in range(5000)]
    s = SR._summary(xs)
    assert s["p50_ms"] == pytest.approx(float(np.percentile(xs, 50)))
    assert s["p99_ms"] == pytest.approx(float(np.percentile(xs, 99)))
    assert s["sd_ms"] == pytest.approx(float(np.std(xs, ddof=1)))


def test_simulate_modes_base_ms_and_empty_profile(profiles):
    soft = profiles["softhsm"]
    assert simulate_modes(soft, n=10, seed=0)["total"]["p50_ms"] == 0
    assert simulate_modes(soft, n=10, seed=0, base_ms=5)["sign_only"]["p50_ms"] == 5
    sim = simulate_modes(soft, n=10, seed=0, base_ms={"C_Sign": 1.5, "C_Login": 2})
    assert sim["sign_only"]["p50_ms"] == 1.5 and sim["total"]["p50_ms"] == 3.5
    with pytest.raises(ProfileError, match="C_Sing"):
        simulate_modes(soft, n=10, base_ms={"C_Sing": 1})


def test_logout_close_counted_only_when_set(tmp_path):
    text = GOOD + '\n[profiles.demo.C_CloseSession]\ndist = "fixed"\nvalue = 7\n'
    pr = load_profiles(_write(tmp_path, text))["demo"]
    assert SR.mode_calls(pr)["total"][-1] == "C_CloseSession"
    assert "C_Logout" not in SR.mode_calls(pr)["total"]


# --- sampling semantics ----------------------------------------------------------------------------
def test_sampling_semantics(tmp_path):
    text = """
[profiles.s]
description = "s"
wait = "busy"
source = "test"
C_Login = { dist = "normal", mean = 1, sd = 10 }
C_Logout = { dist = "empirical", samples = [3, 5] }
C_Sign = { dist = "fixed", value = 10, tail = { p = 0.3, dist = "fixed", value = 100 } }
"""
    pr = load_profiles(_write(tmp_path, text))["s"]
    login = pr.distribution_samples("C_Login", 4000, seed=1)
    assert min(login) > 0.0 and max(login) > 10  # truncated at zero: redrawn, never negative
    assert SR.ks_distance(login, pr, "C_Login") < 1.63 / math.sqrt(len(login))
    assert pr.functions["C_Login"].mean() == pytest.approx(sum(login) / len(login), rel=0.05)
    assert set(pr.distribution_samples("C_Logout", 200, seed=1)) == {3.0, 5.0}
    sign = pr.distribution_samples("C_Sign", 20000, seed=2)
    assert set(sign) == {10.0, 100.0}
    assert sign.count(100.0) / len(sign) == pytest.approx(0.3, abs=0.02)
    assert pr.distribution_samples("C_Sign", 50, seed=9) == pr.distribution_samples("C_Sign", 50, seed=9)
    assert pr.sample("C_Encrypt", random.Random(0)) == 0.0  # not in the profile: no delay
    assert pr.functions["C_Sign"].mean() == pytest.approx(0.7 * 10 + 0.3 * 100)
    assert pr.cdf("C_Sign", 50) == pytest.approx(0.7)


# --- validation ----------------------------------------------------------------------------------
BAD = [
    ('C_Sign = { dist = "gamma", shape = 2 }', "C_Sign", "dist"),
    ('C_Sign = { dist = "normal", mean = 5 }', "C_Sign", "sd"),
    ('C_Sign = { dist = "normal", mean = -5, sd = 1 }', "C_Sign", "mean"),
    ('C_Sign = { dist = "lognormal", median = 0, sigma = 0.1 }', "C_Sign", "median"),
    ('C_Sign = { dist = "lognormal", median = 10, sigma = -0.1 }', "C_Sign", "sigma"),
    ('C_Sign = { dist = "fixed", value = "10" }', "C_Sign", "value"),
    ('C_Sign = { dist = "fixed", value = 10, meadian = 3 }', "C_Sign", "meadian"),
    ('C_Sign = { dist = "empirical", samples = [] }', "C_Sign", "samples"),
    ('C_Sign = { dist = "empirical", samples = [1, -2] }', "C_Sign", "samples[1]"),
    ('C_Sign = { dist = "fixed", value = 10, tail = { p = 1.5, dist = "fixed", value = 1 } }', "C_Sign", "tail.p"),
    ('C_Sign = { dist = "fixed", value = 10, tail = { p = -0.1, dist = "fixed", value = 1 } }', "C_Sign", "tail.p"),
    ('C_Sign = { dist = "fixed", value = 10, tail = { dist = "fixed", value = 1 } }', "C_Sign", "tail.p"),
    ('C_Sign = { dist = "fixed", value = 10, tail = { p = 0.1, dist = "fixed" } }', "C_Sign", "tail.value"),
    ('C_Sing = { dist = "fixed", value = 10 }', "C_Sing", None),
    ('colour = "red"', None, "colour"),
]


@pytest.mark.parametrize("line,fn,fld", BAD)
def test_bad_profile_names_profile_function_field(tmp_path, line, fn, fld):
    text = f'[profiles.broken]\ndescription = "b"\nwait = "sleep"\nsource = "test"\n{line}\n'
    with pytest.raises(ProfileError) as ei:
        load_profiles(_write(tmp_path, text))
    msg = str(ei.value)
    assert "'broken'" in msg
    if fn:
        assert fn in msg
    if fld:
        assert f"'{fld}'" in msg
    assert str(tmp_path) in msg  # and which file


@pytest.mark.parametrize("drop,fld", [("source", "source"), ("description", "description"), ("wait", "wait")])
def test_profile_needs_description_wait_source(tmp_path, drop, fld):
    fields = {"description": '"d"', "wait": '"sleep"', "source": '"s"'}
    fields.pop(drop)
    text = "[profiles.p]\n" + "".join(f"{k} = {v}\n" for k, v in fields.items())
    with pytest.raises(ProfileError, match=f"'p'.*field '{fld}'"):
        load_profiles(_write(tmp_path, text))


def test_bad_wait_and_bad_files(tmp_path):
    with pytest.raises(ProfileError, match="wait.*sleep, busy"):
        load_profiles(_write(tmp_path, '[profiles.p]\ndescription="d"\nsource="s"\nwait="nap"\n'))
    with pytest.raises(ProfileError, match="invalid TOML"):
        load_profiles(_write(tmp_path, "[profiles.p\n"))
    with pytest.raises(ProfileError, match="cannot read"):
        load_profiles(tmp_path / "missing.toml")
    with pytest.raises(ProfileError, match="unknown secure-element profile 'nope'; known: .*iot-safe-sim"):
        SP.get_profile("nope")


# --- shim config -----------------------------------------------------------------------------------
def test_shim_config_exact_format(tmp_path):
    pr = load_profiles(_write(tmp_path, GOOD))["demo"]
    out = SP.write_shim_config(pr, "/usr/lib/softhsm/libsofthsm2.so", "/path/calls.jsonl", 1, tmp_path / "shim.conf")
    assert out.read_text() == (
        "module = /usr/lib/softhsm/libsofthsm2.so\n"
        "log = /path/calls.jsonl\n"
        "seed = 1\n"
        "wait = sleep\n"
        "C_Sign = lognormal 475.1 0.019\n"
        "C_Sign.tail = 0.04 lognormal 1300 0.25\n"
        "C_Login = fixed 120\n"
        "C_FindObjects = normal 30 4\n"
        "C_OpenSession = empirical 12.1 13.4 11.9\n"
    )
    assert SP.SHIM_ENV == "SECPERF_SE_PROFILE"


def _parse_shim(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        k, v = line.split(" = ", 1)
        out[k] = v
    return out


def test_shim_config_roundtrip_builtin(profiles, tmp_path):
    for pr in profiles.values():
        text = SP.shim_config_text(pr, "/m.so", "/l.jsonl", 42)
        kv = _parse_shim(text)
        assert list(kv)[:4] == ["module", "log", "seed", "wait"] and kv["wait"] == pr.wait
        for fn, d in pr.functions.items():
            kind, *params = kv[fn].split()
            assert kind == d.kind and tuple(float(x) for x in params) == d.params
            if d.tail:
                p, tkind, *tparams = kv[f"{fn}.tail"].split()
                assert float(p) == d.tail.p and tkind == d.tail.dist.kind
                assert tuple(float(x) for x in tparams) == d.tail.dist.params
    assert "wait = busy" in SP.shim_config_text(profiles["rsa-card-1998"], "/m.so", "/l", 1)
    with pytest.raises(ProfileError, match="newline"):
        SP.shim_config_text(profiles["softhsm"], "/m.so\nC_Sign = fixed 0", "/l", 1)


# --- KS --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name,fn",
    [
        ("iot-safe-sim", "C_Sign"),
        ("iot-safe-sim", "C_OpenSession"),
        ("tpm2", "C_Sign"),
        ("optiga-trust-m", "C_Sign"),
        ("atecc608", "C_Sign"),
        ("rsa-card-1998", "C_Sign"),
    ],
)
def test_ks_same_profile_small_shifted_large(profiles, name, fn):
    pr = profiles[name]
    xs = pr.distribution_samples(fn, 3000, seed=123)
    crit = 1.63 / math.sqrt(len(xs))  # alpha = 0.01
    assert SR.ks_distance(xs, pr, fn) < crit
    assert SR.ks_distance(xs, pr, fn, n_ref=20000, seed=5) < 1.63 * math.sqrt(1 / 3000 + 1 / 20000)
    shifted = [x * 2 + 2 for x in xs]  # twice as slow
    assert SR.ks_distance(shifted, pr, fn) > 0.3
    assert SR.ks_distance(shifted, pr, fn, n_ref=20000) > 0.3


def test_ks_two_sample_matches_numpy():
    rng = np.random.default_rng(0)
    a, b = rng.normal(0, 1, 500), rng.normal(0.2, 1, 700)
    grid = np.concatenate([a, b])
    ref = np.max(
        np.abs(
            np.searchsorted(np.sort(a), grid, side="right") / len(a)
            - np.searchsorted(np.sort(b), grid, side="right") / len(b)
        )
    )
    assert SR.ks_two_sample(a.tolist(), b.tolist()) == pytest.approx(float(ref))


def test_ks_on_discrete_distributions(profiles):
    pr = profiles["rsa-card-1998"]
    assert SR.ks_distance([27.0] * 50, pr, "C_Sign") == 0.0
    assert SR.ks_distance([27.0] * 25 + [30.0] * 25, pr, "C_Sign") == pytest.approx(0.5)
    assert SR.ks_distance([0.0] * 10, profiles["softhsm"], "C_Sign") == 0.0
    with pytest.raises(ProfileError):
        SR.ks_distance([], pr, "C_Sign")


# --- the samplers (mirrored by the shim) follow the scipy distributions ---------------------------
def _continuous_functions(profiles):
    for name, pr in sorted(profiles.items()):
        for fn, d in sorted(pr.functions.items()):
            if not d.has_atoms:
                yield name, fn


def test_samplers_follow_scipy_distributions_ks(profiles):
    """Every continuous delay of the built-in profiles: the seeded sampler's draws against the scipy
    CDF of the same parameters (one-sample KS, alpha = 0.001 per function)."""
    from scipy import stats as sps

    checked = 0
    for name, fn in _continuous_functions(profiles):
        xs = profiles[name].distribution_samples(fn, 2000, seed=31)
        p = sps.kstest(xs, profiles[name].functions[fn].cdf).pvalue
        assert p > 0.001, (name, fn, p)
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize(
    "kind,params,reference",
    [
        ("lognormal", (475.1, 0.019), lambda sps: sps.lognorm(0.019, scale=475.1)),
        ("lognormal", (200.0, 0.7), lambda sps: sps.lognorm(0.7, scale=200.0)),
        ("normal", (30.0, 4.0), lambda sps: sps.truncnorm(-30 / 4, np.inf, loc=30, scale=4)),
        ("normal", (1.0, 10.0), lambda sps: sps.truncnorm(-1 / 10, np.inf, loc=1, scale=10)),  # mostly truncated
    ],
)
def test_body_sampler_matches_independent_scipy_distribution(kind, params, reference):
    """The sampler against a scipy distribution written out here, not the module's own mapping."""
    from scipy import stats as sps

    d = SP.Dist(kind, params)
    rng = random.Random(17)
    xs = [d.sample(rng) for _ in range(4000)]
    ref = reference(sps)
    assert sps.kstest(xs, ref.cdf).pvalue > 0.001
    assert d.mean() == pytest.approx(float(ref.mean()), rel=1e-9)
    for q in (0.1, 0.5, 0.99):
        assert d.ppf(q) == pytest.approx(float(ref.ppf(q)), rel=1e-9)


def test_tail_mixture_sampler_matches_the_weighted_scipy_cdf():
    from scipy import stats as sps

    d = SP.Dist("lognormal", (475.1, 0.019), tail=SP.Tail(0.04, SP.Dist("lognormal", (1300.0, 0.25))))
    rng = random.Random(5)
    xs = [d.sample(rng) for _ in range(5000)]
    body, tail = sps.lognorm(0.019, scale=475.1), sps.lognorm(0.25, scale=1300.0)
    assert sps.kstest(xs, lambda x: 0.96 * body.cdf(x) + 0.04 * tail.cdf(x)).pvalue > 0.001
    q = d.ppf(0.99)
    assert 0.96 * body.cdf(q) + 0.04 * tail.cdf(q) == pytest.approx(0.99, abs=1e-9)


def test_ks_distance_uses_kstest_for_continuous_and_sees_atoms(profiles):
    from scipy import stats as sps

    pr = profiles["iot-safe-sim"]
    xs = pr.distribution_samples("C_Sign", 500, seed=4)
    assert not pr.functions["C_Sign"].has_atoms
    assert SR.ks_distance(xs, pr, "C_Sign") == pytest.approx(sps.kstest(xs, pr.functions["C_Sign"].cdf).statistic)
    # a fixed delay matched exactly: distance 0, where kstest (continuous CDF assumed) would say 1
    assert sps.kstest([27.0] * 5, lambda x: np.where(np.asarray(x) >= 27.0, 1.0, 0.0)).statistic == 1.0
    assert SR.ks_distance([27.0] * 5, profiles["rsa-card-1998"], "C_Sign") == 0.0
