"""The lab PKI issues chains that verify; servers start on ephemeral loopback ports, answer real
TLS (mutual TLS on nginx), and are gone after stop."""

import os
import stat
import subprocess

import pytest

from secperf.lab.pki import SERVER_KEY_TYPES, LabPKI, PKIError
from secperf.lab.services import Nginx, SServer


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return LabPKI(tmp_path_factory.mktemp("lab") / "pki").ensure()


@pytest.mark.parametrize("key_type", ["rsa-2048", "ecdsa-p256", "ed25519"])
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_server_chains_verify_against_their_root(pki, key_type, depth):
    cs = pki.server(key_type, depth)
    chain = cs.chain.read_text()
    assert chain.count("BEGIN CERTIFICATE") == depth  # leaf + depth-1 intermediates
    p = subprocess.run(
        ["openssl", "verify", "-CAfile", str(cs.ca), "-untrusted", str(cs.chain), str(cs.cert)],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert stat.S_IMODE(os.stat(cs.key).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(cs.key.parent).st_mode) == 0o700


def test_pki_is_reused_not_regenerated(pki):
    a = pki.server("ecdsa-p256", 1).cert.read_bytes()
    assert pki.server("ecdsa-p256", 1).cert.read_bytes() == a


def test_bad_pki_requests_name_the_problem(pki):
    with pytest.raises(PKIError, match="known: " + SERVER_KEY_TYPES[0]):
        pki.server("dsa-1024")
    with pytest.raises(PKIError, match="depth 4"):
        pki.server("rsa-2048", 4)


def _curl(port, ca, *extra):
    return subprocess.run(
        [
            "curl",
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "5",
            "--cacert",
            str(ca),
            *extra,
            f"https://localhost:{port}/",
        ],
        capture_output=True,
        text=True,
        timeout=20,
    )


def test_nginx_requires_the_client_certificate_and_stops_by_pid(pki, tmp_path):
    srv, cli = pki.server("ecdsa-p256", 2), pki.client("ecdsa-p256")
    with Nginx(srv, client_ca=cli.ca, workdir=tmp_path / "nginx") as n:
        assert n.port and n.port > 1024
        assert _curl(n.port, srv.ca, "--cert", str(cli.cert), "--key", str(cli.key)).stdout == "200"
        assert _curl(n.port, srv.ca).stdout == "400"  # no client certificate
        pid = n.proc.pid
    assert not os.path.exists(f"/proc/{pid}")


def test_s_server_starts_on_an_ephemeral_port(pki, tmp_path):
    srv = pki.server("rsa-2048", 1)
    with SServer(srv, workdir=tmp_path / "s") as s:
        assert _curl(s.port, srv.ca).stdout == "200"
        pid = s.proc.pid
    assert not os.path.exists(f"/proc/{pid}")


def test_s_server_sends_each_chain_certificate_once(pki, tmp_path):
    srv = pki.server("ecdsa-p256", 3)
    with SServer(srv, workdir=tmp_path / "s") as s:
        out = subprocess.run(
            ["openssl", "s_client", "-connect", f"127.0.0.1:{s.port}", "-showcerts", "-CAfile", str(srv.ca)],
            input="",
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout
    assert out.count("BEGIN CERTIFICATE") == 3  # leaf + two intermediates, no duplicate leaf
    assert "Verify return code: 0 (ok)" in out
