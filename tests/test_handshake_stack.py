"""`secperf handshake --stack`: wolfSSL's and Mbed TLS's clients built for this host, with the same
per-message client CPU partition as the OpenSSL probe (real handshakes against openssl s_server)."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli

PROBE_TLS13 = [
    "ClientHello (sent)",
    "ServerHello (received)",
    "EncryptedExtensions (received)",
    "Certificate (received)",
    "CertificateVerify (received)",
    "Finished (received)",
]


def _hs(tmp_path, *args):
    return run_cli("handshake", *args, "--out", str(tmp_path / "results"), "--no-report", "--json", cwd=tmp_path)


def test_wolfssl_and_mbedtls_rows_partition_their_client_cpu_per_message(tmp_path):
    p = _hs(tmp_path, "versions", "--stack", "openssl,wolfssl,mbedtls", "--n", "5", "--warmup", "1")
    assert p.returncode == 0, p.stderr
    assert "skipped what the library does not offer" in p.stderr  # Mbed TLS 2.28 has no TLS 1.3
    doc = json.loads(p.stdout)
    by = {(s["labels"].get("stack", "openssl"), s["labels"]["tls"]): s for s in doc["series"]}
    assert set(by) == {
        ("openssl", "1.3"),
        ("openssl", "1.2"),
        ("wolfssl", "1.3"),
        ("wolfssl", "1.2"),
        ("mbedtls", "1.2"),
    }
    for (stack, _tls), s in by.items():
        assert s["status"] == "ok", s["failures"]
        b = s["derived"]["breakdown"]
        assert b["sum_rule_ok"]
        assert sum(m["p50_cpu_us"] for m in b["messages"]) > 0
        if stack != "openssl":
            assert s["labels"]["library"].split()[0] in ("wolfSSL", "Mbed")
            # every handshake: the parts add up to its thread CPU (the partition), CPU below wall time
            assert len(s["cpu_values_us"]) == len(s["values_us"]) == 5
            assert all(c <= w for c, w in zip(s["cpu_values_us"], s["values_us"]))
    # TLS 1.3: wolfSSL's rows carry the probe's message names
    names = [m["message"] for m in by[("wolfssl", "1.3")]["derived"]["breakdown"]["messages"]]
    assert [n for n in names if n in PROBE_TLS13] == PROBE_TLS13
    probe_names = {m["message"] for m in by[("openssl", "1.3")]["derived"]["breakdown"]["messages"]}
    assert set(PROBE_TLS13) <= probe_names


@pytest.mark.parametrize(
    "args,field",
    [
        (("versions", "--stack", "nosuch"), "--stack"),
        (("versions", "--stack", "wolfssl", "--network", "delay=10ms"), "--stack"),
        (("versions", "--stack", "wolfssl", "--mtls"), "--mtls"),
        (("psk", "--stack", "mbedtls"), "--stack"),  # no configuration of the experiment runs there
    ],
)
def test_stack_bad_input_exits_2(tmp_path, args, field):
    p = run_cli("handshake", *args, "--n", "2", "--out", str(tmp_path / "results"), cwd=tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr[-400:])
    assert field in p.stderr
