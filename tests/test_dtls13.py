"""DTLS 1.3 and DTLS 1.2 on the same wolfSSL 5.9 server (measure/dtls13.py, native/dtls13/dtls_pair.c)
and `secperf connect dtls13|dtls12`: the cookie exchange, mutual authentication, resumption verified
per connection, connection IDs on the wire, wolfSSL's retransmission timer, and the flight model
(model/flights/dtls13.py) against the measured datagrams."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import check_results_written
from secperf.lab.pki import LabPKI
from secperf.measure import dtls13 as D
from secperf.model import flights as F

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pki():
    return LabPKI().ensure()  # the lab's own (cached) PKI, as `secperf connect` uses


@pytest.fixture(scope="module")
def exe():
    try:
        return D.ensure_tool()  # first use builds wolfSSL 5.9 (minutes), then cached
    except D.DtlsSetupError as exc:
        pytest.fail(f"the DTLS pair cannot be built here: {exc}")


def _cli(*args, timeout=300):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    p = subprocess.run(
        [sys.executable, "-m", "secperf", *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env
    )
    check_results_written(args, p)
    return p


def _ok(series):
    assert series.status == "ok", series.failures
    return [c for c in series.samples if c["ok"]]


def _run(pki, exe, **kw):
    return D.measure(D.Dtls13Config(**kw), 2, 1, pki, None, 10.0, exe)


# slow: the first use builds wolfSSL 5.9 from source (minutes on a fresh machine)
@pytest.mark.slow
def test_dtls13_full_handshake_has_a_cookie_round_trip_and_mutual_authentication(pki, exe):
    s = _run(pki, exe, version="1.3", handshake="full")
    assert s.labels["library"].startswith("wolfSSL 5.9")
    for c in _ok(s):
        f = c["flights"]
        assert [x["dir"] for x in f[:4]] == ["c2s", "s2c", "c2s", "s2c"]
        assert f[0]["records"] == ["ClientHello"] and f[2]["records"] == ["ClientHello"]  # again, with the cookie
        assert f[1]["records"] == ["ServerHello"]  # the HelloRetryRequest
        # the client's certificate flight is encrypted: 3 records (Certificate, CertificateVerify, Finished)
        assert f[4]["dir"] == "c2s" and f[4]["records"] == ["encrypted"] * 3
        assert not c["resumed"] and not c["cid"]
        # wolfSSL's client returns from connect only after the server ACKs its Finished: 3 round trips
        assert c["handshake_round_trips"] == 3
        assert sum(x["cpu_us"] for x in c["cpu_segments"]) == pytest.approx(c["lib_cpu_us"])


# slow: the first use builds wolfSSL 5.9 from source (minutes on a fresh machine)
@pytest.mark.slow
def test_dtls13_resumed_is_verified_and_sends_no_certificates(pki, exe):
    full = _run(pki, exe, version="1.3", handshake="full")
    res = _run(pki, exe, version="1.3", handshake="resumed")
    ok = _ok(res)
    assert all(c["resumed"] for c in ok) and res.derived.resumed == 2
    assert res.derived.bytes_s2c_p50 < full.derived.bytes_s2c_p50 - 500  # no Certificate message
    assert all(c["flights"][4]["records"] == ["encrypted"] for c in ok)  # client Finished only


# slow: the first use builds wolfSSL 5.9 from source (minutes on a fresh machine)
@pytest.mark.slow
def test_connection_id_is_carried_by_every_protected_client_record(pki, exe):
    plain = _ok(_run(pki, exe, version="1.3", handshake="full"))[0]["flights"]
    cid = _ok(_run(pki, exe, version="1.3", handshake="full", cid=True))
    assert all(c["cid"] for c in cid)
    with_cid = cid[0]["flights"]
    # the client's protected flights grow by the server's 8-byte CID per record (the certificate flight
    # give or take an ECDSA signature's DER length, 70-72 bytes)
    for a, b in zip(plain[4:], with_cid[4:]):
        if a["dir"] == "c2s":
            slack = 0 if a["datagrams"] == 1 else 3
            assert abs(b["bytes"] - a["bytes"] - D.SERVER_CID_BYTES * a["datagrams"]) <= slack


# slow: the first use builds wolfSSL 5.9 from source (minutes on a fresh machine)
@pytest.mark.slow
def test_dtls12_on_the_same_server_uses_hello_verify_request(pki, exe):
    s = _run(pki, exe, version="1.2", handshake="full")
    for c in _ok(s):
        assert c["flights"][1]["records"] == ["HelloVerifyRequest"]
        assert "Certificate" in c["flights"][3]["records"]  # DTLS 1.2 sends it in clear
    assert s.id == "connect/dtls12/wolfssl/full"


# slow: the first use builds wolfSSL 5.9 from source (minutes on a fresh machine)
@pytest.mark.slow
def test_lost_client_hello_waits_for_wolfssl_retransmission_timer(pki, exe):
    s = D.measure(D.Dtls13Config("1.3", "resumed", lost="client-hello"), 1, 1, pki, None, 10.0, exe)
    c = _ok(s)[0]
    assert c["dropped"] == 1 and c["flights"][0]["datagrams"] == 2
    assert c["usable_us"] >= D.INITIAL_RTX_S * 1e6 * 0.99


# slow: the first use builds wolfSSL 5.9 from source (minutes on a fresh machine)
@pytest.mark.slow
def test_flight_model_matches_the_measured_datagrams(pki, exe):
    for hs, cfg in (("full", {}), ("resumed", {"handshake": "resumed"}), ("full-cid", {"cid": True})):
        c = _ok(_run(pki, exe, **{"version": "1.3", **cfg}))[0]
        m = F.build(F.Scenario("dtls1.3", hs))
        # the handshake flights one to one (through the client's certificate flight)
        measured = [f["bytes"] for f in c["flights"][:5]]
        model = [f["bytes"] for f in m.table()][:5]
        for a, b in zip(measured, model):
            assert abs(a - b) <= max(8, 0.02 * a), (hs, measured, model)
        for d, side in (("c2s", "client"), ("s2c", "server")):
            assert abs(m.bytes(side) - c[f"bytes_{d}"]) <= 0.02 * c[f"bytes_{d}"]
        # the client waits 4 round trips; the ticket and the request cross, so the wire turns 5 times
        assert m.round_trips == 4 and c["round_trips"] == 5 and c["handshake_round_trips"] == 3


@pytest.mark.slow
def test_connect_dtls13_and_dtls12_cli(tmp_path):
    p = _cli(
        "connect",
        "dtls13,dtls12",
        "--handshake",
        "full",
        "--cid",
        "off",
        "--key",
        "software",
        "--n",
        "2",
        "--warmup",
        "0",
        "--json",
        "--out",
        tmp_path,
    )
    assert p.returncode == 0, p.stderr
    ids = [s["id"] for s in json.loads(p.stdout)["series"]]
    assert ids == ["connect/dtls13/wolfssl/full", "connect/dtls12/wolfssl/full"]


@pytest.mark.parametrize(
    "args, words",
    [
        (("dtls13", "--handshake", "0rtt"), "0-RTT: QUIC only here"),
        (("dtls13", "--cid", "maybe"), "--cid 'maybe'"),
        (("dtls13", "--tls", "1.2"), "protocol dtls13 has nothing it changes: drop --tls"),
        (("dtls13", "--lost", "client-initial"), "unknown for dtls13"),
        (("dtls13", "--key", "token"), "software key only"),
        (("https", "--cid", "on"), "--cid on: acts on protocol dtls13"),
    ],
)
def test_connect_dtls13_bad_inputs_exit_2_naming_them(args, words, capsys):
    from secperf.cli import main

    assert main(["connect", *args, "--n", "1"]) == 2  # the exit status of `secperf connect ...`
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


# --- the planner's measure "DTLS 1.3 with connection IDs" (plan/measures.py: dtls13-cid) -------------


def _pattern(name: str, **changes):
    import tomllib
    from importlib import resources

    from secperf.inputs import patterns as PS

    d = tomllib.loads(resources.files("secperf.data").joinpath("patterns", f"{name}.toml").read_text())
    for path, value in changes.items():
        section, key = path.split("__")
        d[section][key] = value
    return PS.validate_pattern(d)


def test_dtls13_cid_measure_keeps_the_session_across_nat_time_outs():
    from secperf.plan import design as DS
    from secperf.plan import measures as MS
    from secperf.plan.evaluate import Day, connection_counts, setup_scenario

    p = _pattern("event-driven", connection__mode="always-on", stack__key="software")
    base = DS.baseline(p)
    assert MS.CATALOGUE["dtls13-cid"].not_applicable(p, base) is None
    cid = MS.CATALOGUE["dtls13-cid"].apply(base)
    assert setup_scenario(cid, cid.handshake(False)).protocol == "dtls1.3"
    assert cid.handshake(False) == "full-cid"
    # idle gaps of twice the NAT time-out: DTLS 1.2 sets up again after each, DTLS 1.3 with CIDs does not
    day = Day(activities=24.0, per_activity=1, gap_s=2 * p.connection.nat_timeout_s, random=False)
    assert connection_counts(p, base, day)["setups_per_activity"] > 0.9
    assert connection_counts(p, cid, day)["setups_per_activity"] < 0.1


def test_dtls13_cid_measure_applies_to_coap_only():
    from secperf.plan import design as DS
    from secperf.plan import measures as MS

    p = _pattern("remote-management")
    why = MS.CATALOGUE["dtls13-cid"].not_applicable(p, DS.baseline(p))
    assert why is not None and "DTLS 1.3 replaces CoAP" in why
