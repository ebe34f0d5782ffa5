"""`secperf device handshake --tls dtls1.2,dtls1.3`: DTLS on the emulated cores.

Structure only, never time: the per-message parts add up to the handshake, the cookie exchange and
(under mutual authentication) the client's signature are segments of their own, a resumed handshake
counts fewer instructions than a full one, a CID row carries a connection ID, and what a stack or a
version lacks exits 2 naming what there is.
"""

import json
from types import SimpleNamespace

import pytest

from conftest import device_build_or_skip, run_cli
from secperf.core.errors import InputError
from secperf.inputs.devices import resolve_core
from secperf.measure import device as D
from secperf.measure import device_attrib as A
from secperf.measure import device_dtls as DT


def _ev(count, kind, a1, a2=0):
    return A.Event(count, kind, a1, a2)


def _rec(ctype, hs, length):
    return (ctype << 24) | (hs << 16) | length


# --- attribution (pure) ------------------------------------------------------------------------------


def test_dtls13_cookie_flight_and_ack_are_named():
    """DTLS 1.3 full handshake as wolfSSL 5.9 runs it against a server that asks for a cookie: the
    HelloRetryRequest (a ServerHello with the HRR random: type 6 from the guest), the second ClientHello
    (built while the HRR is processed), encrypted records named by position, then the server's ACK."""
    W = {v: k for k, v in __import__("secperf.measure.device_build", fromlist=["WATCH"]).WATCH.items()}
    ev = [
        _ev(0, "M", A.HS_BEGIN, 0),
        _ev(10, "W", W["SendTls13ClientHello"]),
        _ev(900, "M", A.SEND, _rec(22, 1, 1)),
        _ev(910, "M", A.RECV_BEGIN, 0),
        _ev(920, "M", A.RECV_INFO, _rec(22, 6, 144)),
        _ev(930, "W", W["DoTls13HandShakeMsgType"]),
        _ev(960, "W", W["SendTls13ClientHello"]),
        _ev(990, "M", A.SEND, _rec(22, 1, 1)),
        _ev(1000, "M", A.RECV_BEGIN, 1),
        _ev(1005, "M", A.RECV_INFO, _rec(22, 2, 111)),
        _ev(1010, "W", W["DoTls13HandShakeMsgType"]),
    ]
    t = 2000
    for i in range(4):  # EncryptedExtensions, Certificate, CertificateVerify, Finished: one record each
        ev += [
            _ev(t, "M", A.RECV_BEGIN, 2 + i),
            _ev(t + 5, "M", A.RECV_INFO, _rec(23, 0xFF, 50)),
            _ev(t + 10, "W", W["DoTls13HandShakeMsgType"]),
        ]
        t += 1000
    ev += [
        _ev(t, "W", W["SendTls13Finished"]),
        _ev(t + 100, "M", A.SEND, _rec(23, 0xFF, 1)),
        _ev(t + 200, "M", A.RECV_BEGIN, 6),
        _ev(t + 205, "M", A.RECV_INFO, _rec(23, 0xFF, 40)),
        _ev(t + 300, "M", A.HS_END, 1),
    ]
    (hs,) = A.handshakes(ev, [{"conn": 0, "ok": 1, "resumed": 0}], "dtls1.3")
    names = [(m["dir"], m["message"]) for m in hs.messages]
    assert names == [
        ("sent", "ClientHello"),
        ("received", "HelloRetryRequest"),
        ("sent", "ClientHello"),
        ("received", "ServerHello"),
        ("received", "EncryptedExtensions"),
        ("received", "Certificate"),
        ("received", "CertificateVerify"),
        ("received", "Finished"),
        ("sent", "Finished"),
        ("received", "ACK"),
    ]
    assert hs.parts_sum == hs.instructions == t + 300


def test_dtls13_mutual_auth_names_the_clients_signature():
    """Under mutual authentication the client's CertificateVerify (its signature: the secure element's
    sign step) is a segment of its own, apart from its Certificate and Finished."""
    W = {v: k for k, v in __import__("secperf.measure.device_build", fromlist=["WATCH"]).WATCH.items()}
    ev = [
        _ev(0, "M", A.HS_BEGIN, 0),
        _ev(1, "W", W["SendTls13ClientHello"]),
        _ev(100, "M", A.SEND, _rec(22, 1, 1)),
        _ev(110, "M", A.RECV_BEGIN, 0),
        _ev(115, "M", A.RECV_INFO, _rec(22, 2, 111)),
        _ev(120, "W", W["DoTls13HandShakeMsgType"]),
    ]
    t = 1000
    for i in range(5):  # EncryptedExtensions, CertificateRequest, Certificate, CertificateVerify, Finished
        ev += [
            _ev(t, "M", A.RECV_BEGIN, 1 + i),
            _ev(t + 5, "M", A.RECV_INFO, _rec(23, 0xFF, 50)),
            _ev(t + 10, "W", W["DoTls13HandShakeMsgType"]),
        ]
        t += 1000
    ev += [
        _ev(t, "W", W["SendTls13Certificate"]),
        _ev(t + 500, "W", W["SendTls13CertificateVerify"]),
        _ev(t + 9000, "W", W["SendTls13Finished"]),
        _ev(t + 9500, "M", A.SEND, _rec(23, 0xFF, 3)),
        _ev(t + 9600, "M", A.RECV_BEGIN, 9),
        _ev(t + 9605, "M", A.RECV_INFO, _rec(23, 0xFF, 40)),
        _ev(t + 9700, "M", A.HS_END, 1),
    ]
    (hs,) = A.handshakes(ev, [{"conn": 0, "ok": 1, "resumed": 0}], "dtls1.3", mtls=True)
    by = {(m["dir"], m["message"]): m["instructions"] for m in hs.messages}
    assert by[("sent", "CertificateVerify")] == 8500
    assert ("received", "CertificateRequest") in by and ("received", "ACK") in by
    assert hs.parts_sum == hs.instructions


# --- bad input (no emulator) -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stack, tls, mode, names",
    [
        ("mbedtls3", "dtls1.3", "full", ["--tls dtls1.3", "mbedtls3", "wolfssl59", "no DTLS 1.3"]),
        ("wolfssl", "dtls1.3", "full", ["--tls dtls1.3", "stacks with DTLS1.3: wolfssl59"]),
        ("wolfssl59", "1.3", "full-cid", ["--mode full-cid", "DTLS extension", "dtls1.2 or dtls1.3"]),
        ("wolfssl59", "1.2", "psk", ["--mode psk", "TLS 1.2 over TCP", "dtls1.2"]),
    ],
)
def test_plan_refuses_what_no_stack_or_version_has(stack, tls, mode, names):
    with pytest.raises(InputError) as exc:
        D.plan(resolve_core("cortex-m4-80"), stack, tls, "x25519", "aes128gcm", mode)
    for n in names:
        assert n in str(exc.value)


def test_plan_takes_the_whatif_handshake_names():
    cfgs = D.plan(
        resolve_core("cortex-m4-80"),
        "wolfssl59",
        "dtls1.2,dtls1.3",
        "x25519",
        "aes128gcm",
        "full,resumed,psk,full-cid,resumed-cid",
    )
    assert len(cfgs) == 10 and {c.tls for c in cfgs} == {"dtls1.2", "dtls1.3"}
    assert all(c.dtls for c in cfgs)
    assert len({c.key for c in cfgs}) == 10  # one series id each
    assert [DT.needs_pair(c) for c in cfgs if c.tls == "dtls1.2"] == [False, False, False, True, True]


def test_a_mode_the_build_lacks_names_what_it_offers():
    """A build's offers decide: wolfSSL 5.5 has no DTLS 1.2 connection ID."""
    cfg = D.Config(resolve_core("cortex-m4-80"), "wolfssl", "dtls1.2", "x25519", "aes128gcm", "full-cid", "rsa-2048")
    build = SimpleNamespace(
        offers={
            "tls": ["1.3", "1.2", "dtls1.2"],
            "groups": ["x25519"],
            "suites": ["aes128gcm"],
            "modes": ["full", "resumed", "psk"],
            "dtls_modes": {"dtls1.2": ["full", "resumed", "psk"]},
            "mtls": True,
        },
        library="wolfSSL 5.5.4 (cortex-m4 build)",
        target="cortex-m4",
    )
    with pytest.raises(InputError) as exc:
        D.check_offers(cfg, build)
    assert "--mode full-cid" in str(exc.value) and "full, resumed, psk" in str(exc.value)


def test_cli_stack_without_dtls13_exits_2(tmp_path):
    p = run_cli(
        "device",
        "handshake",
        "--device",
        "cortex-m4-80",
        "--stack",
        "mbedtls3",
        "--tls",
        "dtls1.3",
        "--out",
        str(tmp_path),
        timeout=120,
    )
    assert p.returncode == 2, p.stderr
    assert "wolfssl59" in p.stderr and "Traceback" not in p.stderr


# --- on the emulator ---------------------------------------------------------------------------------


def _run(tmp_path, *args, n=1):
    p = run_cli(
        "device",
        "handshake",
        "--device",
        "cortex-m4-80",
        "--group",
        "x25519",
        "--suite",
        "aes128gcm",
        "--n",
        str(n),
        "--warmup",
        "0",
        *args,
        "--out",
        str(tmp_path),
        "--json",
        timeout=1500,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    return [s for s in json.loads(p.stdout)["series"] if s["labels"]["phase"] == "warm"]


def _check_parts(s):
    assert s["status"] == "ok", s["failures"]
    for smp in s["samples"]:
        assert smp["parts_sum"] == smp["instructions"] > 0
        assert smp["version"].startswith("DTLS")
    rows = s["derived"]["messages"]
    assert rows and all(r["instructions"] > 0 for r in rows)
    return {(r["dir"], r["message"]): r for r in rows}


@pytest.mark.slow
def test_dtls13_full_resumed_and_cid_rows_on_cortex_m4(tmp_path):
    device_build_or_skip("wolfssl59", "cortex-m4")
    rows = {
        s["labels"]["mode"]: s
        for s in _run(tmp_path, "--stack", "wolfssl59", "--tls", "dtls1.3", "--mode", "full,resumed,full-cid")
    }
    full, resumed, cid = (_check_parts(rows[m]) for m in ("full", "resumed", "full-cid"))
    for want in (
        ("received", "HelloRetryRequest"),
        ("received", "ServerHello"),
        ("received", "CertificateVerify"),
        ("sent", "Finished"),
        ("received", "ACK"),
    ):
        assert want in full, (want, list(full))
    assert ("received", "Certificate") not in resumed
    assert rows["resumed"]["derived"]["instructions_median"] < rows["full"]["derived"]["instructions_median"]
    assert rows["full"]["labels"]["tls"] == "dtls1.3" and rows["full-cid"]["labels"]["cid"] is True
    assert all(smp["cid_bytes"] == DT.SERVER_CID_BYTES for smp in rows["full-cid"]["samples"])
    assert all(smp["cid_bytes"] == 0 for smp in rows["full"]["samples"])
    # the time model's figure is there, per message too (timing on, as the TLS rows)
    assert rows["full"]["derived"]["time"] and all("time" in r for r in rows["full"]["derived"]["messages"])
    assert cid


@pytest.mark.slow
def test_dtls12_full_resumed_psk_and_cid_rows_on_cortex_m4(tmp_path):
    device_build_or_skip("wolfssl59", "cortex-m4")
    rows = {
        s["labels"]["mode"]: s
        for s in _run(
            tmp_path,
            "--stack",
            "wolfssl59",
            "--tls",
            "dtls1.2",
            "--mode",
            "full,resumed,psk,resumed-cid",
            "--timing",
            "off",
        )
    }
    full, resumed, psk, rcid = (_check_parts(rows[m]) for m in ("full", "resumed", "psk", "resumed-cid"))
    assert ("received", "HelloVerifyRequest") in full and ("received", "HelloVerifyRequest") in psk
    assert ("received", "Certificate") not in psk and ("received", "Certificate") not in resumed
    ins = {m: rows[m]["derived"]["instructions_median"] for m in rows}
    assert ins["resumed"] < ins["full"] and ins["psk"] < ins["full"] and ins["resumed-cid"] < ins["full"]
    assert all(smp["resumed"] for smp in rows["resumed"]["samples"] + rows["resumed-cid"]["samples"])
    assert all(smp["cid_bytes"] > 0 for smp in rows["resumed-cid"]["samples"])
    assert rows["psk"]["samples"][0]["negotiated_suite"].startswith("PSK-")


@pytest.mark.slow
def test_mutual_auth_rows_name_the_clients_sign_step(tmp_path):
    """DTLS 1.3 and DTLS 1.2 with a client certificate: the client's CertificateVerify is a segment."""
    device_build_or_skip("wolfssl59", "cortex-m4")
    for s in _run(
        tmp_path,
        "--stack",
        "wolfssl59",
        "--tls",
        "dtls1.3,dtls1.2",
        "--client-cert",
        "ecdsa-p256",
        "--server-cert",
        "ecdsa-p256",
        "--timing",
        "off",
    ):
        rows = _check_parts(s)
        assert ("sent", "Certificate") in rows and ("sent", "CertificateVerify") in rows, (s["id"], list(rows))


@pytest.mark.slow
def test_mbedtls3_dtls12_mutual_p256_row_on_cortex_m33(tmp_path):
    """The row that failed under emulation (the retransmission timer on the host's stretched clock)."""
    device_build_or_skip("mbedtls3", "cortex-m33")
    p = run_cli(
        "device",
        "handshake",
        "--device",
        "cortex-m33-160",
        "--stack",
        "mbedtls3",
        "--tls",
        "dtls1.2",
        "--group",
        "p-256",
        "--suite",
        "aes128gcm",
        "--client-cert",
        "ecdsa-p256",
        "--server-cert",
        "ecdsa-p256",
        "--n",
        "1",
        "--warmup",
        "0",
        "--out",
        str(tmp_path),
        "--json",
        timeout=1500,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    for s in json.loads(p.stdout)["series"]:
        rows = _check_parts(s)
        assert ("sent", "CertificateVerify") in rows


def test_a_builds_offers_answer_the_whatif_questions():
    """What the what-if asks a build: does it have DTLS 1.3, which handshakes, connection IDs."""
    w59 = {
        "tls": ["1.3", "1.2", "dtls1.2", "dtls1.3"],
        "modes": ["full", "resumed", "psk"],
        "dtls_modes": {
            "dtls1.2": ["full", "resumed", "psk", "full-cid", "resumed-cid"],
            "dtls1.3": ["full", "resumed", "psk", "full-cid", "resumed-cid"],
        },
    }
    openssl = {"tls": ["1.3", "1.2", "dtls1.2"], "modes": ["full", "resumed", "psk"]}  # declares no DTLS modes
    assert DT.handshakes_offered(w59, "dtls1.3") == ("full", "resumed", "psk", "full-cid", "resumed-cid")
    assert DT.has_cid(w59, "dtls1.2") and not DT.has_cid(openssl, "dtls1.2")
    assert DT.handshakes_offered(openssl, "dtls1.2") == ("full",) and DT.handshakes_offered(openssl, "dtls1.3") == ()
    assert DT.handshakes_offered(openssl, "1.3") == ("full", "resumed", "psk")
