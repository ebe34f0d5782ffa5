"""Secure-element signing through the real token (SoftHSM2) behind the latency shim: S2's medians
reproduced, the delivered distribution matches the profile, the per-call breakdown comes from the
shim log, a client outside Python (the probe's mutual TLS via OpenSSL's pkcs11 engine) sees the
profile, and JWT caching keeps the token out of the request path."""

import json
import os
import subprocess

import pytest

from conftest import SLOW_SIGN
from secperf.core import result as R
from secperf.core.native import find_probe, find_shim
from secperf.inputs.se_profiles import get_profile, load_profiles
from secperf.inputs.se_runs import ks_distance
from secperf.lab.pki import LabPKI
from secperf.lab.services import ProbeServer
from secperf.lab.token import LabToken
from secperf.measure import signer as S

FAST = """
[profiles.fast]
description = "test profile: lognormal signing"
wait = "sleep"
source = "test"
[profiles.fast.C_Sign]
dist = "lognormal"
median = 20.0
sigma = 0.25
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("se")
    pki = LabPKI(root / "pki").ensure()
    token = LabToken(root / "token", pki=pki).ensure()
    return root, pki, token


def _profile(root, text, name):
    path = root / f"{name}.toml"
    path.write_text(text)
    return load_profiles(path)[name]


def _key(token, kt="ecdsa-p256"):
    return next(k for k in token.keys() if k["key_type"] == kt)


@pytest.mark.slow  # > 10 s: runs in `make test-slow` (CI runs it after `make test`)
def test_iot_safe_sim_reproduces_s2_medians(lab, tmp_path):
    root, _pki, token = lab
    prof = get_profile("iot-safe-sim")
    p = S.SignerParams(n=12, warmup=1, workdir=tmp_path)
    so = S.measure_token("iot-safe-sim", _key(token), "sign_only", p, token, prof)
    tot = S.measure_token("iot-safe-sim", _key(token), "total", p, token, prof)
    assert so.status == "ok" and tot.status == "ok", (so.failures, tot.failures)
    # The profile's part, which its seed makes repeatable, within 5% of the study's medians; the
    # measured total is that plus what the token, library and host add, measured in the same run
    # (per operation: wall time less the injected delay). A total within 5% of the study would
    # leave the host about 11 ms on this seed's draws (they sum to 661 ms at the median, 3% over
    # 642.2: 12 samples), and a busy CI host once took 17 ms more (680.6 ms).
    for s, study in ((so, 475.1), (tot, 642.2)):
        pc = s.derived.per_call
        total = s.summary.p50_us / 1000
        assert pc["injected_p50_ms"] == pytest.approx(study, rel=0.05), pc
        assert 0 <= pc["host_p50_ms"] < 0.1 * total, pc
        assert total >= pc["injected_p50_ms"], (total, pc)  # every operation waited its draws
    from secperf.report.html_signer import per_call_table
    from secperf.report.units import fmt_time_us

    row = per_call_table([tot]).split("whole operation")[1]  # the report splits it the same way
    assert fmt_time_us(tot.derived.per_call["injected_p50_ms"] * 1000) in row
    assert fmt_time_us(tot.derived.per_call["host_p50_ms"] * 1000) in row
    calls = {c["fn"]: c for c in tot.derived.per_call["calls"]}
    for fn in ("C_OpenSession", "C_Login", "C_FindObjectsInit", "C_FindObjects", "C_SignInit", "C_Sign"):
        assert fn in calls, calls.keys()
    assert calls["C_Sign"]["calls_per_op"] == pytest.approx(2.0)  # python-pkcs11: length query + real call
    assert "C_Login" not in {c["fn"] for c in so.derived.per_call["calls"]}  # kept session: no login


FIXED_20 = FAST.replace("profiles.fast", "profiles.fixed20").replace(
    'dist = "lognormal"\nmedian = 20.0\nsigma = 0.25', 'dist = "fixed"\nvalue = 20.0'
)


@pytest.mark.slow  # > 10 s: runs in `make test-slow` (CI runs it after `make test`)
def test_distribution_through_the_shim_matches_the_profile(lab, tmp_path):
    """What the client sees end to end, minus the cost around one delayed call (the token's own
    work, the client's, a late wake-up: a fixed 20 ms profile, same key, measured in the same run,
    less its 20 ms), is distributed as the profile says.

    Up to two attempts, each measuring the calibration and the profile afresh: on this shared
    machine a burst of host contention (seen: steal time up to 25%, the cost around a call jumping
    from 0.5 to 5 ms at its P90) during one of the two runs distorts that attempt; contention only
    adds delay, so a clean attempt shows what the shim delivers. The scaled-by-1.3 check on the
    same data shows the check can fail."""
    root, _pki, token = lab
    prof = _profile(root, FAST, "fast")
    fixed = _profile(root, FIXED_20, "fixed20")
    attempts = []
    for attempt in range(2):
        base = S.measure_token(
            "fixed20",
            _key(token),
            "sign_only",
            S.SignerParams(n=50, warmup=2, workdir=tmp_path / f"b{attempt}"),
            token,
            fixed,
        )
        base_ms = base.summary.p50_us / 1000 - 20.0
        assert 0 < base_ms < 5, base_ms  # the cost around a call is small and positive
        s = S.measure_token(
            "fast",
            _key(token),
            "sign_only",
            S.SignerParams(n=400, warmup=2, workdir=tmp_path / f"f{attempt}"),
            token,
            prof,
        )
        assert s.status == "ok", s.failures[:2]
        measured_ms = [v / 1000 - base_ms for v in s.values_us]
        assert len(measured_ms) == 400  # KS sampling noise at n=400: median ~0.04, 99th percentile ~0.08
        attempts.append((ks_distance(measured_ms, prof, "C_Sign"), measured_ms))
        if attempts[-1][0] < 0.1:
            break
    ks, measured_ms = min(attempts, key=lambda a: a[0])
    assert ks < 0.1, [round(a[0], 3) for a in attempts]
    shifted = [x * 1.3 for x in measured_ms]
    assert ks_distance(shifted, prof, "C_Sign") > 0.1  # the check can fail


def test_openssl_engine_client_sees_the_profile_in_mutual_tls(lab, tmp_path):
    """The probe (C, OpenSSL + libp11 engine) signs CertificateVerify with the token key through the
    shim: a 100 ms signing profile makes the handshake ~100 ms slower than no added delay."""
    root, pki, token = lab
    key = _key(token)
    certs = pki.server("ecdsa-p256", 1)
    medians, spread = {}, {}
    for name, prof in (("none", get_profile("softhsm")), ("slow", _profile(root, SLOW_SIGN, "slow-sign"))):
        (tmp_path / name).mkdir()
        env, _log = S.shim_env(token, prof, tmp_path / name, 1)
        env["SECPERF_PKCS11_MODULE"] = str(find_shim())
        with ProbeServer(certs, ["--tls", "1.3"], client_ca=pki.client().ca, workdir=tmp_path / f"srv-{name}") as srv:
            out = subprocess.run(
                [
                    str(find_probe()),
                    "client",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(srv.port),
                    "--tls",
                    "1.3",
                    "--ca",
                    str(certs.ca),
                    "--servername",
                    "localhost",
                    "--cert",
                    key["cert_path"],
                    "--key",
                    token.uri(key["label"], with_pin=True),
                    "--n",
                    "5",
                    "--warmup",
                    "1",
                    "--timeout-ms",
                    "5000",
                ],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
        conns = [json.loads(x) for x in out.stdout.splitlines() if '"type":"conn"' in x]
        assert conns and all(c["ok"] for c in conns), (out.stdout[-800:], out.stderr[-800:])
        assert all(c["client_cert_sent"] for c in conns)
        walls = sorted(c["handshake_wall_us"] for c in conns)
        medians[name], spread[name] = walls[len(walls) // 2], walls[-1] - walls[0]
    # the 100 ms sleep is added whatever the machine's load; what else a handshake takes on a busy
    # machine varies from one to the next, so the upper bound allows the spread the runs without the
    # added delay showed in this same test (about nothing on an idle machine)
    added = medians["slow"] - medians["none"]
    assert 75_000 <= added <= 125_000 + max(spread.values()), (medians, spread)


def test_jwt_cached_token_does_not_touch_the_secure_element(lab, tmp_path, monkeypatch):
    root, pki, token = lab
    monkeypatch.setenv("SECPERF_HOME", str(root))  # run_jwt uses the default lab locations
    prof_path = root / "fast.toml"
    prof_path.write_text(FAST)
    import secperf.inputs.se_profiles as SP

    doc = R.new_result(kind="jwt", command=[], params={}, host={}, run_id="x")
    fast = SP.profiles_with(prof_path)["fast"]  # resolved as the command does (app/phases.se_profiles)
    S.run_jwt([fast], ["ecdsa-p256"], S.SignerParams(n=4, warmup=1, workdir=tmp_path), doc)
    by = {(s.labels["profile"], s.labels["mode"]): s for s in doc.series}
    assert all(s.status == "ok" for s in doc.series), [s.failures[:1] for s in doc.series]
    fresh, cached = by[("fast", "jwt_fresh")], by[("fast", "jwt_cached")]
    assert {c["fn"] for c in fresh.derived.per_call["calls"]} >= {"C_Sign"}
    assert cached.derived.per_call["token_calls_per_op"] == 0
    # the profile's 20 ms median signature shows in a fresh token; a cached one and a software key's
    # signature cost a small part of it (measured side by side)
    fresh_us = fresh.derived.sign_p50_us
    assert fresh_us > 15_000
    assert (cached.derived.sign_p50_us or 0) < fresh_us / 4
    assert by[("software", "jwt_fresh")].derived.sign_p50_us < fresh_us / 4


def test_bad_signer_input_exits_2(tmp_path):
    from conftest import run_cli

    p = run_cli("signer", "--profile", "nope", "--out", str(tmp_path))
    assert p.returncode == 2 and "unknown profile 'nope'" in p.stderr and "iot-safe-sim" in p.stderr


@pytest.mark.parametrize(
    "line,needle",
    [
        ("C_Sign = lognormal 475", "C_Sign"),  # missing sigma
        ("C_Fly = fixed 3", "C_Fly"),  # unknown function
        ("C_Sign.tail = 1.5 fixed 3", "1.5"),  # probability outside [0, 1]
        ("C_Login = weibull 3 1", "weibull"),  # unknown distribution
    ],
)
def test_bad_shim_profile_fails_initialize_naming_the_line(lab, tmp_path, line, needle):
    import sys

    root, _pki, token = lab
    conf = tmp_path / "bad.conf"
    conf.write_text(f"module = {token.module_path}\n# comment\n{line}\n")
    code = (
        "import pkcs11, sys\n"
        "try:\n    pkcs11.lib(sys.argv[1])\nexcept Exception as e:\n    print(type(e).__name__); sys.exit(3)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, str(find_shim())],
        capture_output=True,
        text=True,
        env=dict(os.environ, **token.env(), SECPERF_SE_PROFILE=str(conf)),
        timeout=60,
    )
    assert p.returncode == 3, (p.stdout, p.stderr)
    assert "ArgumentsBad" in p.stdout  # CKR_ARGUMENTS_BAD from C_Initialize
    assert f"{conf}:3:" in p.stderr and needle in p.stderr


def test_jwt_signatures_per_hour_follow_the_lifetime():
    from secperf.model.tokens import signatures_per_hour

    assert signatures_per_hour(3600, 3600) == 1
    assert signatures_per_hour(60, 3600) == 60
    assert signatures_per_hour(1, 10) == 10  # never more signatures than requests
    assert signatures_per_hour(7, 3600) == 515  # ceil(3600 / 7)
