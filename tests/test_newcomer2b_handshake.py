"""`handshake versions --connect` against a user's server with an ECDSA certificate: the TLS 1.2 row
offers suites that fit any certificate, and every row records what was negotiated, signature
included (issue 43, item 9)."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from secperf.lab.pki import LabPKI
from secperf.lab.services import SServer
from secperf.measure.handshake import V12, V13, for_any_certificate


@pytest.fixture(scope="module")
def pki():
    return LabPKI().ensure()


def test_an_offer_to_any_server_pairs_each_ecdhe_suite_with_both_signature_kinds():
    v12 = for_any_certificate(V12)
    assert v12.ciphers.split(":") == ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256"]
    assert v12.groups.split(":")[0] == "x25519" and "P-256" in v12.groups.split(":")
    assert "rsa" not in v12.label  # the label names no certificate type it cannot know
    assert for_any_certificate(V13).ciphersuites == V13.ciphersuites


@pytest.mark.slow
@pytest.mark.parametrize("key", ["ecdsa-p256", "rsa-2048"])
def test_versions_against_an_ecdsa_or_rsa_server_negotiate_every_row_and_record_it(pki, key, tmp_path):
    certs = pki.server(key, 1)
    with SServer(certs, workdir=tmp_path / "srv") as srv:
        p = run_cli(
            "handshake",
            "versions",
            "--connect",
            f"127.0.0.1:{srv.port}",
            "--ca",
            str(certs.ca),
            "--servername",
            "localhost",
            "--n",
            "2",
            "--warmup",
            "0",
            "--json",
            "--out",
            str(tmp_path / "res"),
        )
    assert p.returncode == 0, p.stderr[-2000:]
    series = json.loads(p.stdout)["series"]
    assert len(series) == 2
    kind = "ecdsa" if key.startswith("ecdsa") else "rsa"
    for s in series:
        assert s["status"] == "ok", s["failures"]
        neg = s["derived"]["negotiated"]
        assert neg["version"] and neg["cipher"] and neg["group"], neg
        assert neg["signature"] and neg["signature"].startswith(kind), neg
    tls12 = next(s for s in series if s["derived"]["negotiated"]["version"] == "TLSv1.2")
    assert f"ECDHE-{kind.upper()}-" in tls12["derived"]["negotiated"]["cipher"]
