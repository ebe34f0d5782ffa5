"""The user's own servers (`--connect HOST:PORT` of handshake and connect), cold key sessions, and
`netem run --server` waiting for its server: against real servers these tests start on loopback."""

from __future__ import annotations

import json
import sys

import pytest

from conftest import needs_links, run_cli
from secperf.lab.iot_services import Mosquitto
from secperf.lab.pki import LabPKI
from secperf.lab.services import Nginx, SServer


@pytest.fixture(scope="module")
def pki():
    return LabPKI().ensure()


def _result(p) -> dict:
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout)


def test_handshake_connect_measures_the_users_server_with_the_per_message_split(pki, tmp_path):
    certs = pki.server("rsa-2048", 1)
    with SServer(certs, workdir=tmp_path / "srv") as srv:
        doc = _result(
            run_cli(
                "handshake",
                "versions",
                "--connect",
                f"127.0.0.1:{srv.port}",
                "--ca",
                str(certs.ca),
                "--servername",
                "localhost",
                "--n",
                "3",
                "--warmup",
                "1",
                "--json",
                "--out",
                str(tmp_path / "res"),
            )
        )
    assert len(doc["series"]) == 2
    for s in doc["series"]:
        assert s["status"] == "ok", s["failures"]
        assert s["labels"]["server"] == "remote" and s["labels"]["target"] == f"127.0.0.1:{srv.port}"
        assert s["labels"]["server_verified"] is True
        assert s["derived"]["breakdown"]  # the same per-message split as against secperf's servers


def test_connect_https_and_mqtt_against_the_users_servers_with_a_client_certificate(pki, tmp_path):
    certs, client = pki.server("ecdsa-p256", 1), pki.client("ecdsa-p256")
    common = [
        "--ca",
        str(certs.ca),
        "--servername",
        "localhost",
        "--client-cert",
        str(client.cert),
        "--client-key",
        str(client.key),
        "--key",
        "software",
        "--handshake",
        "full",
        "--n",
        "3",
        "--warmup",
        "1",
        "--json",
        "--out",
        str(tmp_path / "res"),
    ]
    with Nginx(certs, client_ca=client.ca, workdir=tmp_path / "nginx") as ng:
        doc = _result(run_cli("connect", "https", "--connect", f"127.0.0.1:{ng.port}", *common))
    with Mosquitto(certs, client.ca, workdir=tmp_path / "mosq") as mq:
        doc2 = _result(run_cli("connect", "mqtt", "--connect", f"localhost:{mq.port}", *common))
    for s in doc["series"] + doc2["series"]:
        assert s["status"] == "ok", s["failures"]
        assert s["labels"]["server"] == "remote" and s["values_us"]
        assert [p["phase"] for p in s["samples"][0]["phases"]][0] == "socket connect"


def test_connect_to_a_server_that_requires_a_certificate_without_one_fails_per_connection(pki, tmp_path):
    certs, client = pki.server("ecdsa-p256", 1), pki.client("ecdsa-p256")
    with Nginx(certs, client_ca=client.ca, workdir=tmp_path / "nginx") as ng:
        p = run_cli(
            "connect",
            "https",
            "--connect",
            f"127.0.0.1:{ng.port}",
            "--ca",
            str(certs.ca),
            "--servername",
            "localhost",
            "--key",
            "software",
            "--handshake",
            "full",
            "--n",
            "2",
            "--warmup",
            "0",
            "--json",
            "--out",
            str(tmp_path / "res"),
        )
    assert p.returncode == 1
    s = json.loads(p.stdout)["series"][0]
    assert s["failures"] and not s["values_us"]


@pytest.mark.parametrize(
    "args, names",
    [
        (["--connect", "nohost"], "--connect"),
        (["--connect", "127.0.0.1:70000"], "--connect"),
        (["--connect", "127.0.0.1:443", "--ca", "/nonexistent.pem"], "--ca"),
        (["--connect", "127.0.0.1:443", "--client-cert", "/etc/hostname"], "--client-key"),
        (["--ca", "/etc/hostname"], "--connect"),
    ],
)
def test_bad_target_options_are_named_input_errors(args, names, tmp_path):
    p = run_cli("handshake", "versions", *args, "--out", str(tmp_path / "res"))
    assert p.returncode == 2 and names in p.stderr and "Traceback" not in p.stderr, p.stderr


@pytest.mark.slow  # over 10 s here: a fidelity check for the slow run
def test_nothing_listening_at_the_target_is_a_failed_series_with_the_reason(tmp_path):
    from secperf.lab.services import free_port

    p = run_cli(
        "handshake",
        "versions",
        "--connect",
        f"127.0.0.1:{free_port()}",
        "--n",
        "2",
        "--json",
        "--out",
        str(tmp_path / "res"),
    )
    assert p.returncode == 1
    assert "nothing accepts TCP connections" in json.loads(p.stdout)["series"][0]["failures"][0]["reason"]


def test_cold_key_session_pays_session_login_and_key_search_per_connection(tmp_path):
    doc = _result(
        run_cli(
            "connect",
            "https",
            "--key",
            "token",
            "--handshake",
            "full",
            "--auth",
            "mtls",
            "--key-session",
            "warm,cold",
            "--n",
            "3",
            "--warmup",
            "1",
            "--json",
            "--out",
            str(tmp_path / "res"),
        )
    )
    warm = next(s for s in doc["series"] if s["labels"]["key_session"] == "warm")
    cold = next(s for s in doc["series"] if s["labels"]["key_session"] == "cold")
    assert warm["status"] == cold["status"] == "ok", cold["failures"]
    assert cold["id"].endswith("/cold") and "C_OpenSession" in cold["timer"]["start"]
    fns = {c["fn"] for c in cold["derived"]["se_calls"]["calls"]}
    assert {"C_OpenSession", "C_Login", "C_FindObjects", "C_Sign"} <= fns
    assert "C_Login" not in {c["fn"] for c in warm["derived"]["se_calls"]["calls"]}
    for c in cold["samples"]:
        parts = [p["phase"] for p in c["phases"]]
        assert parts[:2] == [
            "key session: open, login, find key",
            "key session: host (engine, key and context loading)",
        ]
        assert abs(sum(p["us"] for p in c["phases"]) - c["usable_us"]) < 1.0  # phases add up
    # both in the S2 table
    from secperf.core.result import validate
    from secperf.report.views.connect import summary

    rows = summary(validate(doc))["rows"]
    assert {r.get("key_session") for r in rows if r["protocol"] == "https"} == {"warm", "cold"}


def test_jwt_cold_key_session_opens_a_session_per_signature(tmp_path):
    doc = _result(
        run_cli(
            "jwt",
            "--profile",
            "softhsm",
            "--key-session",
            "cold",
            "--n",
            "2",
            "--warmup",
            "0",
            "--json",
            "--out",
            str(tmp_path / "res"),
        )
    )
    cold = next(s for s in doc["series"] if s["id"] == "jwt/softhsm/ecdsa-p256/jwt_fresh/cold")
    assert cold["status"] == "ok", cold["failures"]
    fns = {c["fn"]: c["calls_per_op"] for c in cold["derived"]["per_call"]["calls"]}
    assert fns.get("C_OpenSession") == 1 and fns.get("C_Login") == 1
    assert "jwt/softhsm/ecdsa-p256/jwt_cached" in {s["id"] for s in doc["series"]}  # cached stays warm


def test_key_session_must_be_warm_or_cold(tmp_path):
    p = run_cli("connect", "https", "--key-session", "tepid", "--out", str(tmp_path / "res"))
    assert p.returncode == 2 and "--key-session" in p.stderr


SLOW_SERVER = """
import socket, time
time.sleep(1.0)  # not listening yet: a client started at once would be refused
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.77.0.2", 8099))
s.listen()
s.settimeout(10)
for _ in range(5):  # bounded; the readiness check is a connection too
    c, _ = s.accept()
    try:
        c.sendall(b"hello")
    except OSError:
        pass
    c.close()
"""
CLIENT = "import socket; s = socket.create_connection(('10.77.0.2', 8099), timeout=5); assert s.recv(5) == b'hello'"


@needs_links
@pytest.mark.parametrize("wait", [[], ["--wait-port", "8099"]])
def test_netem_run_waits_for_a_slow_server_before_the_client(wait, tmp_path):
    (tmp_path / "server.py").write_text(SLOW_SERVER)
    p = run_cli(
        "netem",
        "run",
        "delay=1ms",
        *wait,
        "--server",
        f"{sys.executable} {tmp_path / 'server.py'}",
        "--",
        sys.executable,
        "-c",
        CLIENT,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr[-1500:]


@needs_links
def test_netem_run_says_when_the_server_never_gets_ready(tmp_path):
    p = run_cli("netem", "run", "delay=1ms", "--wait-timeout", "1", "--server", "sleep 10", "--", "true", timeout=60)
    assert p.returncode == 1
    assert "was not ready within 1 s" in p.stderr and "Traceback" not in p.stderr


def test_the_1998_rsa_card_signs_with_an_rsa_1024_key_made_in_the_token(tmp_path):
    from cryptography import x509

    from secperf.lab.token import LabToken

    doc = _result(
        run_cli(
            "signer",
            "--profile",
            "rsa-card-1998",
            "--mode",
            "sign_only",
            "--n",
            "2",
            "--warmup",
            "0",
            "--json",
            "--out",
            str(tmp_path / "res"),
        )
    )
    s = doc["series"][0]
    assert s["status"] == "ok" and s["labels"]["key_type"] == "rsa-1024"
    key = LabToken().ensure().key("rsa-1024")
    assert x509.load_pem_x509_certificate(open(key["cert_path"], "rb").read()).public_key().key_size == 1024


def test_a_long_servername_gets_a_request_big_enough_for_its_host_header(pki, tmp_path):
    """Any --servername over 14 characters made every series fail ("--request-bytes 40 too small"):
    the GET is now as large as its Host line needs."""
    certs = pki.server("rsa-2048", 1)
    name = "gateway-17.devices.example.org"
    with SServer(certs, workdir=tmp_path / "srv") as srv:
        doc = _result(
            run_cli(
                "handshake",
                "versions",
                "--connect",
                f"127.0.0.1:{srv.port}",
                "--servername",
                name,
                "--n",
                "2",
                "--warmup",
                "0",
                "--json",
                "--out",
                str(tmp_path / "res"),
            )
        )
    for s in doc["series"]:
        assert s["status"] == "ok", s["failures"]
        assert s["labels"]["servername"] == name


@pytest.mark.parametrize("port", ["44\u00b3", "\u0664\u0664\u0663", "４４３"])
def test_a_port_with_non_ascii_digits_is_a_named_input_error(port, tmp_path):
    p = run_cli("handshake", "versions", "--connect", f"127.0.0.1:{port}", "--out", str(tmp_path / "res"))
    assert p.returncode == 2 and "--connect" in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_a_client_key_that_is_not_the_certificates_is_refused_up_front(pki, tmp_path):
    a, b = pki.client("ecdsa-p256"), pki.client("rsa-2048")
    p = run_cli(
        "handshake",
        "versions",
        "--connect",
        "127.0.0.1:443",
        "--client-cert",
        str(a.cert),
        "--client-key",
        str(b.key),
        "--out",
        str(tmp_path / "res"),
    )
    assert p.returncode == 2 and "is not the key of --client-cert" in p.stderr, p.stderr
