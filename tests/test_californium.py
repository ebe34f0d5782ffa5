"""Eclipse Californium as a second real CoAP/DTLS server: it resumes DTLS sessions with a verified
client certificate (the probe's resumed rows really resume, the server says so too) and carries a
request across a NAT rebinding on the connection ID; without a connection ID the same rebinding
breaks the session. The jar is built by scripts/bootstrap (Maven)."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import run_cli
from secperf.lab.californium import CaliforniumServer, find_jar, java_exe, pkcs8_pem
from secperf.lab.pki import LabPKI


@pytest.fixture(scope="module")
def pki():
    return LabPKI().ensure()


def _client(pki, port, tmp_path, row, cid, n=2, warmup=1, timeout_ms=2000):
    client = pki.client("ecdsa-p256")
    key = tmp_path / "client.p8.pem"
    key.write_bytes(pkcs8_pem(client.key))
    argv = [
        java_exe(),
        "-jar",
        str(find_jar()),
        "client",
        "--port",
        str(port),
        "--ca",
        str(pki.server("ecdsa-p256", 1).ca),
        "--cert",
        str(client.cert),
        "--key",
        str(key),
        "--n",
        str(n),
        "--warmup",
        str(warmup),
        "--row",
        row,
        "--cid-length",
        str(cid),
        "--timeout-ms",
        str(timeout_ms),
    ]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    return [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{") and '"conn"' in x]


def test_a_rebinding_rides_on_the_connection_id_and_breaks_without_it(pki, tmp_path):
    srv = CaliforniumServer(pki.server("ecdsa-p256", 1), pki.client("ecdsa-p256").ca, workdir=tmp_path / "srv")
    with srv:
        with_cid = _client(pki, srv.port, tmp_path, "cid-rebind", cid=4)
        without = _client(pki, srv.port, tmp_path, "cid-rebind", cid=0, n=1, warmup=0, timeout_ms=1000)
        resumed = _client(pki, srv.port, tmp_path, "resumed", cid=0)
        handshakes = srv.drain()
    assert with_cid and all(c["ok"] and c["handshakes"] == 0 for c in with_cid), with_cid
    assert without and not without[0]["ok"], without  # the server cannot tell the new address is the old peer
    assert all(c["ok"] and c["resumed"] for c in resumed), resumed
    assert any(h["resumed"] for h in handshakes) and any(not h["resumed"] for h in handshakes)


@pytest.mark.slow
def test_connect_coap_with_californium_rows_full_resumed_and_cid(tmp_path):
    p = run_cli(
        "connect",
        "coap",
        "--coap-server",
        "californium",
        "--key",
        "software,token",
        "--n",
        "3",
        "--json",
        "--out",
        str(tmp_path / "res"),
    )
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    by = {s["id"]: s for s in doc["series"]}
    for ks in ("software", "token"):
        full = by[f"connect/coap/probe/{ks}/full/californium-server"]
        res = by[f"connect/coap/probe/{ks}/resumed/californium-server"]
        assert full["status"] == res["status"] == "ok"
        assert res["derived"]["resumed"] == 3 and res["derived"]["server_resumed"] == 3
    assert by["connect/coap/probe/token/resumed/californium-server"]["derived"]["se_calls"]["token_calls_per_op"] == 0
    cid = by["connect/coap/californium/software/cid-rebind/californium-server"]
    assert cid["status"] == "ok" and cid["derived"]["handshakes_per_request"] == 0
    # the Java client signs with the token key through SunPKCS11 and the shim: one C_Sign per full
    # handshake, none when it resumes or rides the connection ID
    full = by["connect/coap/californium/token/full/californium-server"]
    assert full["status"] == "ok", full["failures"][:1]
    assert full["derived"]["token_sign_per_connection"] == 1
    for row in ("resumed", "cid-rebind"):
        s = by[f"connect/coap/californium/token/{row}/californium-server"]
        assert s["status"] == "ok" and s["derived"]["token_sign_per_connection"] == 0, (row, s["failures"][:1])


def test_the_sunpkcs11_configuration_enables_only_signing_and_the_keystore():
    from secperf.lab.californium import sunpkcs11_config

    text = sunpkcs11_config("/m.so")
    assert "library = /m.so" in text
    mechs = text.split("enabledMechanisms = {", 1)[1].split("}", 1)[0].split()
    assert mechs == ["CKM_ECDSA", "CKM_RSA_PKCS", "KeyStore"]
