"""Handshakes against real servers: every mode completes and is verified per connection, the
per-message CPU partitions the library CPU, and broken set-ups give failed samples with reasons
within a bounded time while the run goes on."""

import time

import pytest

from secperf.core import result as R
from secperf.lab.pki import LabPKI
from secperf.lab.services import ProbeServer, free_port
from secperf.measure import handshake as H


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return LabPKI(tmp_path_factory.mktemp("hs") / "pki").ensure()


@pytest.fixture
def params(tmp_path):
    return H.HandshakeParams(n=6, warmup=1, timeout_ms=3000, workdir=tmp_path / "svc")


def _by_label(configs):
    return {c.label: c for c in configs}


@pytest.mark.parametrize("experiment", ["versions", "resumption", "psk", "0rtt", "mtls", "dtls", "groups"])
def test_every_mode_completes_and_is_verified(experiment, pki, params):
    for cfg in H.experiment(experiment):
        s = H.measure_config(cfg, params, pki)
        assert s.status == "ok", (cfg.label, s.failures[:3])
        assert len(s.values_us) == params.n
        d = s.derived
        assert d.negotiated["version"] == ("DTLSv1.2" if cfg.proto == "dtls" else f"TLSv{cfg.tls}")
        kex = {c["kex"] for c in s.samples}
        if cfg.mode.startswith("resume") or cfg.mode == "0rtt":
            assert d.resumed == params.n  # verified on every connection
        elif cfg.mode == "psk":  # OpenSSL counts an external PSK as a resumed session; kex tells which
            assert kex == ({"psk_ke"} if cfg.tls == "1.3" else {"psk"})
        elif cfg.mode == "psk-dhe":
            assert kex == {"psk_dhe_ke"}
        else:
            assert not any(c.get("resumed") for c in s.samples)
            assert kex <= {"ecdhe", "dhe"}
        if cfg.mode == "0rtt":
            assert d.early_data_accepted == params.n
        if cfg.mode == "psk":
            names = {m["message"] for m in d.breakdown["messages"]}
            assert "Certificate (received)" not in names  # PSK: no certificate at all
        if cfg.mtls:
            assert all(c["client_cert_sent"] for c in s.samples)


def test_per_message_cpu_sums_to_library_cpu_on_every_connection(pki, params):
    for cfg in H.experiment("versions") + [H.experiment("mtls")[1]]:
        s = H.measure_config(cfg, params, pki)
        assert s.status == "ok", s.failures[:3]
        for c in s.samples:
            parts = sum(m["cpu_us"] for m in c["messages"])
            assert parts == pytest.approx(c["lib_cpu_us"], rel=H.SUM_RULE_TOLERANCE)
        assert s.derived.breakdown["sum_rule_ok"]
        names = [m["message"] for m in s.derived.breakdown["messages"]]
        assert names[0] == "ClientHello (sent)" and "Finished (sent)" in names


def test_server_cpu_is_reported_by_the_probe_server(pki, params):
    s = H.measure_config(H.V13, params, pki)
    assert s.derived.server_cpu_p50_us > 0


def test_against_openssl_s_server(pki, params):
    from dataclasses import replace

    for cfg in (replace(H.V13, server="s_server"), replace(H.V12, server="s_server")):
        s = H.measure_config(cfg, params, pki)
        assert s.status == "ok", s.failures[:3]


CLIENT_N, CLIENT_TIMEOUT_S = 2, 2.0
# a failing connection ends within the client's own --timeout-ms: the whole client run within a
# start-up and CLIENT_N timeouts, with a timeout's worth of slack each (never the harness's 60 s cap)
FAILED_RUN_BOUND_S = (2 * CLIENT_N + 1) * CLIENT_TIMEOUT_S


def _client(pki, port, *extra, ca=None):
    certs = pki.server("rsa-2048", 1)
    args = [
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--ca",
        str(ca or certs.ca),
        "--servername",
        "localhost",
        "--n",
        str(CLIENT_N),
        "--warmup",
        "0",
        "--timeout-ms",
        str(int(CLIENT_TIMEOUT_S * 1000)),
        *extra,
    ]
    t0 = time.monotonic()
    meta, conns, err = H.run_client(args, 60)
    return conns, err, time.monotonic() - t0


@pytest.mark.parametrize("case", ["suite mismatch", "wrong CA", "missing client certificate", "unreachable port"])
def test_broken_setups_are_failed_samples_with_reasons(case, pki, tmp_path):
    srv_args, client_extra, client_ca, ca = [], [], None, None
    if case == "suite mismatch":
        srv_args = ["--tls", "1.3", "--ciphersuites", "TLS_AES_128_GCM_SHA256"]
        client_extra = ["--tls", "1.3", "--ciphersuites", "TLS_CHACHA20_POLY1305_SHA256"]
        needle = "handshake"
    elif case == "wrong CA":
        ca = pki.server("ecdsa-p256", 1).ca
        needle = "certificate"
    elif case == "missing client certificate":
        client_ca = pki.client().ca
        needle = "certificate"
    if case == "unreachable port":
        conns, err, took = _client(pki, free_port())
        needle = "refused"
    else:
        with ProbeServer(pki.server("rsa-2048", 1), srv_args, client_ca=client_ca, workdir=tmp_path / "s") as s:
            conns, err, took = _client(pki, s.port, *client_extra, ca=ca)
    assert err is None  # the run itself goes on: failures are samples
    assert len(conns) == 2 and not any(c["ok"] for c in conns)
    assert all(needle in c["reason"].lower() for c in conns), [c["reason"] for c in conns]
    assert took < FAILED_RUN_BOUND_S


def test_silent_server_times_out_as_a_failed_sample(pki):
    import socket

    with socket.socket() as lsock:  # accepts TCP, never speaks TLS
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(8)
        conns, err, took = _client(pki, lsock.getsockname()[1])
    assert len(conns) == 2 and not any(c["ok"] for c in conns)
    assert all("timed out" in c["reason"] for c in conns)
    assert took < FAILED_RUN_BOUND_S


def test_server_side_reason_of_a_failed_connection_is_kept(pki, params, monkeypatch):
    """A connection the server refused keeps the server's stage and reason next to the client's."""
    from dataclasses import replace

    real = H.client_args

    def without_client_cert(*a, **k):  # the server asks for a client certificate; none comes
        args = real(*a, **k)
        i = args.index("--cert")
        return args[:i] + args[i + 4 :]

    monkeypatch.setattr(H, "client_args", without_client_cert)
    s = H.measure_config(replace(H.V13, label="mtls without a client certificate", mtls=True), params, pki)
    assert s.status == "failed" and s.failures
    srv = s.derived.server_failures
    assert srv and all(f["stage"] == "handshake" for f in srv), srv
    assert all("certificate" in f["reason"].lower() for f in srv), srv


def test_dtls_server_moves_on_when_a_client_leaves_before_its_request(pki, tmp_path):
    """A DTLS client that finishes its handshake and vanishes (no request, no close_notify) is a
    failed connection on the server as soon as the next client knocks, not after --timeout-ms."""
    import subprocess

    certs = pki.server("rsa-2048", 1)
    with ProbeServer(certs, ["--timeout-ms", "60000"], proto="dtls", workdir=tmp_path / "s") as s:
        sc = subprocess.Popen(
            ["openssl", "s_client", "-dtls1_2", "-connect", f"127.0.0.1:{s.port}", "-CAfile", str(certs.ca)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        import threading

        done = threading.Event()

        def watch():  # until s_client reports the handshake
            for line in sc.stdout:
                if "Verify return code" in line:
                    done.set()
                    return

        threading.Thread(target=watch, daemon=True).start()
        try:
            assert done.wait(20), "openssl s_client did not finish a DTLS handshake"
        finally:
            sc.kill()
            sc.wait()
        conns, err, took = _client(pki, s.port, "--proto", "dtls")  # 2 s per connection at most
        lines, deadline = [], time.monotonic() + 20  # the server's three lines (two served, one gone): waited
        while len(lines) < 3 and time.monotonic() < deadline:  # for, not assumed within a fixed 0.2 s
            lines += s.drain()
            time.sleep(0.02)
    assert err is None and len(conns) == 2 and all(c["ok"] for c in conns), [c.get("reason") for c in conns]
    gone = [c for c in lines if not c.get("ok")]
    assert len(gone) == 1 and "went away before its request" in gone[0]["reason"], lines
    assert sum(1 for c in lines if c.get("ok")) == 2


def test_failed_configuration_does_not_stop_the_run(pki, params):
    from dataclasses import replace

    doc = R.new_result(kind="handshake", command=[], params={}, host={}, run_id="x")
    bad = replace(H.V13, label="impossible group", groups="no-such-group")
    H.run_handshakes([bad, H.V13], params, doc)
    assert doc.series[0].status == "failed" and doc.series[0].failures
    assert doc.series[1].status == "ok"


def test_cli_breakdown_prints_json_result_and_report_with_stacked_bars(tmp_path):
    import json

    from conftest import run_cli

    p = run_cli("handshake", "breakdown", "--n", "5", "--warmup", "1", "--out", str(tmp_path), "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert [s["status"] for s in doc["series"]] == ["ok"] * 4
    groups = {s["derived"]["negotiated"]["group"] for s in doc["series"]}
    assert groups == {"x25519", "secp256r1"} or len(groups) == 2
    assert doc["host"]["openssl"].startswith("OpenSSL 3")
    html = (tmp_path / "latest" / "report.html").read_text()
    assert 'data-plot="stacked"' in html and "ClientHello (sent)" in html


@pytest.mark.parametrize(
    "args,needle",
    [
        (["handshake", "nosuch"], "unknown experiment 'nosuch'"),
        (["handshake", "versions", "--server", "apache"], "unknown --server 'apache'"),
        (["handshake", "versions", "--network", "delay=50"], "field 'delay'"),
    ],
)
def test_cli_handshake_bad_input_exits_2(args, needle, tmp_path):
    from conftest import run_cli

    p = run_cli(*args, "--out", str(tmp_path))
    assert p.returncode == 2 and needle in p.stderr
