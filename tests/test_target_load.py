"""`secperf server --target HOST:PORT` and `fleet --replay --target`: the generators aimed at a server
secperf did not start (real nginx on loopback here), the probe that turns an unusable target into
exit 2, and what each level records (negotiated parameters; server CPU said not measured)."""

from __future__ import annotations

import json
import os
import socket
import threading

import pytest

from conftest import run_cli
from secperf.core.errors import InputError
from secperf.lab.pki import LabPKI
from secperf.lab.services import Nginx
from secperf.measure import server_target as T


@pytest.fixture(scope="module")
def pki():
    return LabPKI().ensure()


@pytest.fixture(scope="module")
def nginx(pki, tmp_path_factory):
    certs = pki.server("ecdsa-p256", 1)
    with Nginx(certs, workdir=tmp_path_factory.mktemp("nginx")) as ng:
        yield ng, certs


@pytest.fixture(scope="module")
def nginx_auth(pki, tmp_path_factory):
    certs, client = pki.server("ecdsa-p256", 1), pki.client("ecdsa-p256")
    with Nginx(certs, client_ca=client.ca, workdir=tmp_path_factory.mktemp("nginx-auth")) as ng:
        yield ng, client


@pytest.fixture
def plain_tcp():
    """A TCP server that answers in plain text: not TLS."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)

    def serve():
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            try:
                c.recv(2048)
                c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            finally:
                c.close()

    threading.Thread(target=serve, daemon=True).start()
    yield s.getsockname()[1]
    s.close()


def test_a_target_gives_the_generators_its_address_name_offer_and_client_certificate(pki):
    client = pki.client("ecdsa-p256")
    lt = T.parse_load_target(
        "localhost:8443",
        servername="gw.example",
        client_cert=str(client.cert),
        client_key=str(client.key),
        groups="x25519:P-256",
        ciphersuites="TLS_AES_128_GCM_SHA256",
    )
    a = lt.loadgen_args()
    assert a[a.index("--host") + 1] == "127.0.0.1" and a[a.index("--port") + 1] == "8443"
    assert a[a.index("--servername") + 1] == "gw.example" and a[a.index("--groups") + 1] == "x25519:P-256"
    assert a[a.index("--key") + 1] == str(client.key)  # a path to the 0600 file, never the key
    assert lt.mqtt_args()["client_cert"] == str(client.cert) and lt.mqtt_args()["port"] == 8443
    re = T.retarget(["loadgen", "--port", "1234", "--storm", "10"], lt)
    assert "1234" not in re and re[re.index("--port") + 1] == "8443" and re[-2:] == ["--storm", "10"]


@pytest.mark.parametrize(
    "kw, word",
    [
        ({"text": "127.0.0.1"}, "--target"),
        ({"text": "127.0.0.1:0"}, "--target"),
        ({"text": "127.0.0.1:443", "protocol": "dtls", "app": "http"}, "--target-app"),
        ({"text": "127.0.0.1:443", "app": "smtp"}, "--target-app"),
        ({"text": "127.0.0.1:443", "groups": "x25519 P-256"}, "--groups"),
        ({"text": "127.0.0.1:443", "client_cert": "x.pem", "client_key": "pkcs11:object=k"}, "--client-key"),
    ],
)
def test_bad_targets_are_input_errors_naming_the_option(kw, word):
    with pytest.raises(InputError, match=word):
        T.parse_load_target(**kw)


def test_a_client_key_others_can_read_is_refused(pki, tmp_path):
    client = pki.client("ecdsa-p256")
    key = tmp_path / "k.pem"
    key.write_bytes(client.key.read_bytes())
    os.chmod(key, 0o644)
    with pytest.raises(InputError, match="chmod 600"):
        T.parse_load_target("127.0.0.1:443", client_cert=str(client.cert), client_key=str(key))


def test_unreachable_not_tls_and_refused_certificates_exit_2(nginx_auth, pki, plain_tcp, tmp_path):
    ng, client = nginx_auth
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    wrong = pki.server("rsa-2048", 1)
    cases = [
        (["--target", f"127.0.0.1:{port}"], "unreachable"),
        (["--target", f"127.0.0.1:{plain_tcp}"], "does not speak TLS"),
        (["--target", f"127.0.0.1:{ng.port}"], "asks for a client certificate"),
        (
            ["--target", f"127.0.0.1:{ng.port}", "--client-cert", str(wrong.cert), "--client-key", str(wrong.key)],
            "refuses it",
        ),
        (["--target", f"127.0.0.1:{ng.port}", "--key", "ecdsa-p256"], "--key with --target"),
        (["--ca", str(wrong.ca)], "--ca applies to --target"),
    ]
    for argv, word in cases:
        p = run_cli("server", *argv, "--concurrency", "1", "--duration", "0.5", "--out", str(tmp_path / "res"))
        assert p.returncode == 2, (argv, p.stderr[-800:])
        assert word in p.stderr, (word, p.stderr[-800:])
    assert not (tmp_path / "res").exists() or not any((tmp_path / "res").iterdir())  # nothing run


@pytest.mark.slow
def test_server_target_loads_nginx_and_records_what_it_negotiated(nginx, tmp_path):
    ng, certs = nginx
    p = run_cli(
        "server",
        "--target",
        f"127.0.0.1:{ng.port}",
        "--ca",
        str(certs.ca),
        "--servername",
        "localhost",
        "--concurrency",
        "2",
        "--duration",
        "0.6",
        "--warmup",
        "0.2",
        "--resume-ratio",
        "0,1",
        "--json",
        "--no-report",
        "--out",
        str(tmp_path / "res"),
    )
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert len(doc["series"]) == 2  # 2 resume ratios x 1 level
    for s in doc["series"]:
        d = s["derived"]
        assert s["status"] == "ok", s["failures"]
        assert s["labels"]["target"] == f"127.0.0.1:{ng.port}" and s["labels"]["server_verified"] is True
        assert d["handshakes"] > 0 and d["handshakes"] == d["full"] + d["resumed"]
        assert d["negotiated"]["version"] == "TLSv1.3" and d["negotiated"]["group"]
        assert d["server_cpu_us_per_handshake"] is None and "not measured" in d["server_cpu"]
    resumed = [s for s in doc["series"] if s["labels"]["resume_ratio"] == 1.0]
    assert all(s["derived"]["resumed"] > 0 for s in resumed)
    assert doc["analysis"]["target"]["negotiated"]["cipher"]


def test_server_target_with_a_client_certificate(nginx_auth, tmp_path):
    ng, client = nginx_auth
    p = run_cli(
        "server",
        "--target",
        f"127.0.0.1:{ng.port}",
        "--client-cert",
        str(client.cert),
        "--client-key",
        str(client.key),
        "--concurrency",
        "2",
        "--duration",
        "0.5",
        "--warmup",
        "0.1",
        "--json",
        "--no-report",
        "--out",
        str(tmp_path / "res"),
    )
    assert p.returncode == 0, p.stderr[-2000:]
    (s,) = json.loads(p.stdout)["series"]
    assert s["status"] == "ok", s["failures"]
    assert s["labels"]["client_auth"] is True and s["derived"]["negotiated"]["client_cert_sent"] is True
    assert s["derived"]["handshakes"] > 0 and s["derived"]["failed"] == 0


@pytest.mark.slow
def test_fleet_replay_against_a_target(nginx, tmp_path):
    ng, _ = nginx
    p = run_cli(
        "fleet",
        "--replay",
        "20",
        "--target",
        f"127.0.0.1:{ng.port}",
        "--measure-seconds",
        "0.5",
        "--base",
        "0.05",
        "--cap",
        "0.2",
        "--json",
        "--no-report",
        "--out",
        str(tmp_path / "res"),
    )
    assert p.returncode == 0, p.stderr[-2000:]
    (r,) = json.loads(p.stdout)["analysis"]["fleet"]["replays"]
    assert "failed" not in r, r
    assert r["clients"] == 20 and r["measured"]["back"] == 20 and r["capacity_per_s"] > 0
    assert r["server_cpu_s"] is None
    # the model's accept rate: probed against the target before the replay, a lower bound said so
    assert (
        r["accept_per_s"] > 0
        and r["accept_from"].startswith("measured from here")
        and "lower bound" in r["accept_from"]
    )


SYSTEM = """name = "gw"
[device]
core = "host-default"
[network]
link = "lte-m"
[protocol]
name = "https"
"""


def test_a_system_files_server_table_gives_the_target(nginx, tmp_path):
    ng, certs = nginx
    (tmp_path / "ca.pem").write_bytes(certs.ca.read_bytes())
    good = tmp_path / "good.toml"
    good.write_text(SYSTEM + f'[server]\ntarget = "127.0.0.1:{ng.port}"\nca = "ca.pem"\nservername = "localhost"\n')
    p = run_cli(
        "server",
        "--system",
        str(good),
        "--concurrency",
        "1",
        "--duration",
        "0.4",
        "--warmup",
        "0.1",
        "--json",
        "--no-report",
        "--out",
        str(tmp_path / "res"),
    )
    assert p.returncode == 0, p.stderr[-1500:]
    (s,) = json.loads(p.stdout)["series"]
    assert s["labels"]["target"] == f"127.0.0.1:{ng.port}" and s["labels"]["server_verified"] is True
    none = tmp_path / "none.toml"
    none.write_text(SYSTEM)
    typo = tmp_path / "typo.toml"
    typo.write_text(SYSTEM + '[server]\ntarget = "127.0.0.1:1"\nclient_crt = "c.pem"\n')
    for f, word in ((none, "[server]"), (typo, "client_crt")):
        p = run_cli("server", "--system", str(f), "--out", str(tmp_path / "res"))
        assert p.returncode == 2 and word in p.stderr, p.stderr[-800:]


def test_a_dtls_target_is_loaded_with_dtls_handshakes(pki, tmp_path):
    from secperf.lab.iot_services import CoapServer

    with CoapServer(pki.server("ecdsa-p256"), workdir=tmp_path / "coap", verbosity=3) as srv:
        p = run_cli(
            "server",
            "--protocol",
            "dtls",
            "--target",
            f"127.0.0.1:{srv.port}",
            "--concurrency",
            "2",
            "--duration",
            "0.5",
            "--warmup",
            "0.1",
            "--json",
            "--no-report",
            "--out",
            str(tmp_path / "res"),
        )
    assert p.returncode == 0, p.stderr[-2000:]
    (s,) = json.loads(p.stdout)["series"]
    assert s["status"] == "ok", s["failures"]
    assert s["labels"]["tls"] == "dtls1.2" and s["labels"]["target_app"] == "none"
    assert s["derived"]["handshakes"] > 0 and s["derived"]["negotiated"]["version"] == "DTLSv1.2"
    # the server's signature, read over DTLS as for a TLS target (an ECDSA P-256 key signs with ECDSA)
    assert s["derived"]["negotiated"]["signature"].upper().startswith("ECDSA"), s["derived"]["negotiated"]


@pytest.mark.slow
def test_fleet_replay_with_a_system_file_takes_its_backlog_and_accept_rate(nginx, tmp_path):
    ng, _ = nginx
    f = tmp_path / "sys.toml"
    f.write_text(SYSTEM + f'[server]\ntarget = "127.0.0.1:{ng.port}"\nbacklog = 256\naccept_per_s = 8000\n')
    p = run_cli(
        "fleet",
        "--replay",
        "20",
        "--system",
        str(f),
        "--measure-seconds",
        "0.5",
        "--base",
        "0.05",
        "--cap",
        "0.2",
        "--json",
        "--no-report",
        "--out",
        str(tmp_path / "res"),
    )
    assert p.returncode == 0, p.stderr[-2000:]
    (r,) = json.loads(p.stdout)["analysis"]["fleet"]["replays"]
    assert "failed" not in r, r
    assert (r["backlog"], r["backlog_from"]) == (256, "[server].backlog of the --system file")
    assert (r["accept_per_s"], r["accept_from"]) == (8000.0, "[server].accept_per_s of the --system file")
    assert r["measured"]["back"] == 20 and r["models"]
