"""No secret on any command line: while a PSK run goes, every process's /proc/PID/cmdline is scanned for
the run's PSK (hex, or its bytes as text) and fails the test if it appears; the PSK reaches s_server as
a 0600 session file (lab/psk_session) that s_server accepts as the same external PSK."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import proc_cmdlines
from secperf.lab.psk_session import session_pem
from secperf.measure.handshake import PSK_HEX


class Scanner(threading.Thread):
    """Reads every process's command line until stopped; `hits` holds those with a secret in them."""

    def __init__(self, secrets_of):
        super().__init__(daemon=True)
        self.secrets_of, self.hits, self.scans, self.stop = secrets_of, [], 0, threading.Event()
        self.keys_seen = 0  # scans that had a key to look for (a scan of nothing cannot fail)

    def run(self):
        while not self.stop.is_set():
            secrets = self.secrets_of()
            self.keys_seen += bool(secrets)
            for line in proc_cmdlines():
                if any(s and s.lower() in line.lower() for s in secrets):
                    self.hits.append(line[:300])
            self.scans += 1
            self.stop.wait(0.05)


def test_the_session_file_is_a_psk_s_server_accepts(tmp_path):
    """s_server with -psk_session resumes with a client that holds the same key: 'Reused'."""
    from secperf.lab.pki import LabPKI
    from secperf.lab.services import SServer

    key = os.urandom(32)
    certs = LabPKI().ensure().server("ecdsa-p256")
    srv = SServer(certs, psk=("secperf-test", key), workdir=tmp_path / "srv").start()
    scan = Scanner(lambda: [key.hex()])
    scan.start()
    try:
        # the test's own client takes the key on its command line: the scan looks for the server's copy only
        p = subprocess.run(
            [
                "openssl",
                "s_client",
                "-connect",
                f"127.0.0.1:{srv.port}",
                "-tls1_3",
                "-psk_identity",
                "secperf-test",
                "-psk",
                key.hex(),
                "-ciphersuites",
                "TLS_AES_128_GCM_SHA256",
            ],
            input="",
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        scan.stop.set()
        scan.join()
        srv.stop()
    assert "Reused, TLSv1.3" in p.stdout, p.stdout[-2000:]
    assert not [h for h in scan.hits if "s_server" in h], scan.hits
    sessions = list((tmp_path / "srv").rglob("psk-session.pem"))
    assert sessions == [] or all(stat.S_IMODE(s.stat().st_mode) == 0o600 for s in sessions)


@pytest.mark.parametrize("proto", ["tls", "dtls"])
@pytest.mark.parametrize(
    "argv",
    [
        ["-psk", "00" * 32],
        ["--psk", "00" * 32],
        ["-psk=" + "00" * 32],
        ["-PSK", "00" * 32],
        ["-psk_hex", "00" * 32],
        ["-pass", "pass:secret"],
        ["-pass=pass:secret"],
    ],
)
def test_s_server_refuses_a_secret_on_its_command_line_for_every_protocol(tmp_path, proto, argv):
    """No spelling of -psk (OpenSSL's apps read --psk and -psk=HEX too) and no pass:TEXT reaches s_server's argv."""
    from secperf.lab.pki import LabPKI
    from secperf.lab.services import ServiceError, SServer

    certs = LabPKI().ensure().server("ecdsa-p256")
    with pytest.raises(ServiceError, match="secret on the command line"):
        SServer(certs, args=["-no_ticket", *argv], proto=proto, workdir=tmp_path)


@pytest.mark.parametrize(
    "proto, args, why",
    [
        ("dtls", [], "DTLS PSK"),
        ("tls", ["-tls1_2"], "TLS 1.2 PSK"),
        ("tls", ["--tls1_2"], "TLS 1.2 PSK"),
        ("tls", ["-dtls1_2"], "TLS 1.2 PSK"),
    ],
)
def test_s_server_refuses_a_psk_only_its_command_line_could_carry(tmp_path, proto, args, why):
    """A TLS 1.2 or DTLS PSK (s_server reads it from -psk only) is refused when the server starts,
    before its process does (the row's failure); the TLS 1.3 PSK goes in a session file (the first test here)."""
    from secperf.lab.pki import LabPKI
    from secperf.lab.services import ServiceError, SServer

    certs = LabPKI().ensure().server("ecdsa-p256")
    srv = SServer(certs, args=args, proto=proto, psk=("x", b"k" * 16), workdir=tmp_path)
    with pytest.raises(ServiceError, match=why):
        srv.start()
    assert srv.proc is None
    assert SServer(certs, args=args, proto=proto, workdir=tmp_path).psk_args() == []  # no PSK: nothing refused
    tls13 = SServer(certs, proto="tls", psk=("x", b"k" * 16), workdir=tmp_path).psk_args()
    assert tls13[0] == "-psk_session" and "-psk" not in tls13
    with pytest.raises(ServiceError, match="protocol"):
        SServer(certs, proto="quic", workdir=tmp_path)


def test_the_pem_is_what_openssl_reads(tmp_path):
    key = bytes(range(32))
    (tmp_path / "s.pem").write_bytes(session_pem(key))
    p = subprocess.run(
        ["openssl", "sess_id", "-in", str(tmp_path / "s.pem"), "-text", "-noout"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 0 and "TLSv1.3" in p.stdout and key.hex().upper() in p.stdout, p.stdout + p.stderr


def _device_psk_run(tmp_path, argv):
    """A device PSK run with the cmdline scan: the PSK is random per server, so the scan reads every
    private psk file the run writes (under the temporary directories) and looks for its hex."""
    import tempfile

    tmp = Path(tempfile.gettempdir())

    def secrets_now():
        found = []
        for f in list(tmp.glob("secperf-device-*/*/psk")) + list(tmp.glob("secperf-device-*/psk")):
            try:
                found += [ln for ln in f.read_text().split() if len(ln) >= 32]
            except OSError:
                pass
        return found

    return _scanned_run([*argv, "--out", str(tmp_path)], secrets_now, 1800)


def _scanned_run(argv, secrets_of, timeout):
    """`secperf ARGV` in its own process while every process's command line is scanned for the secrets."""
    scan = Scanner(secrets_of)
    scan.start()
    try:
        p = subprocess.run([sys.executable, "-m", "secperf", *argv], capture_output=True, text=True, timeout=timeout)
    finally:
        scan.stop.set()
        scan.join()
    return p, scan


@pytest.mark.slow
@pytest.mark.parametrize(
    "tls, stack", [("1.3", "wolfssl"), ("1.3", "mbedtls3"), ("dtls1.2", "wolfssl59"), ("dtls1.2", "mbedtls3")]
)
def test_a_device_psk_handshake_puts_no_key_on_the_process_list(tmp_path, tls, stack):
    """The scan saw the run's key while it ran (the keys it looks for come from the run's own 0600
    files), and every handshake was a PSK one: DTLS 1.2's a plain PSK suite against the probe server
    (measure/device_dtls.psk_server), TLS 1.3's with no server Certificate."""
    import json

    p, scan = _device_psk_run(
        tmp_path,
        [
            "device",
            "handshake",
            "--mode",
            "psk",
            "--tls",
            tls,
            "--stack",
            stack,
            # DTLS 1.2's psk row is a plain PSK suite: no group to give (option scope refuses one)
            *(["--group", "x25519"] if tls == "1.3" else []),
            "--suite",
            "aes128gcm",
            "--n",
            "1",
            "--warmup",
            "0",
            "--timing",
            "off",
            "--no-report",
            "--json",
        ],
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    assert scan.scans > 0 and scan.keys_seen, "the scan never saw the run's key: it could not have failed"
    assert not scan.hits, scan.hits
    series = json.loads(p.stdout)["series"]
    assert [s["labels"]["phase"] for s in series] == ["cold", "warm"]
    for s in series:
        assert s["status"] == "ok" and s["samples"], s["failures"]
        messages = {m["message"] for m in s["derived"]["messages"]}
        assert "Certificate" not in messages, messages
        if tls == "dtls1.2":
            assert all("PSK" in x["negotiated_suite"] and "ECDHE" not in x["negotiated_suite"] for x in s["samples"])
            assert "HelloVerifyRequest" in messages and "ServerKeyExchange" not in messages, messages
            assert "secperf-probe" in s["labels"]["server"]


def test_the_probes_psk_handshake_puts_no_key_on_the_process_list(tmp_path):
    """secperf's own probe (client and server) reads the PSK from a 0600 file (--psk-file)."""
    from secperf.measure.handshake import PSK_HEX

    p, scan = _scanned_run(
        ["handshake", "psk", "--n", "3", "--warmup", "1", "--no-report", "--out", str(tmp_path)], lambda: [PSK_HEX], 600
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert scan.scans > 0
    assert not scan.hits, scan.hits
    from secperf.core.paths import secperf_home

    files = list((secperf_home() / "psk").glob("*.hex"))
    assert files and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)


def test_coap_psk_puts_no_key_on_the_process_list(tmp_path):
    """libcoap's server and client get the CoAP PSK through their 0600 match files (-i / -h), the
    probe through --psk-file; -k holds a decoy. Both clients' handshakes succeed, so the key matched."""
    from secperf.measure.connect_config import COAP_PSK

    p, scan = _scanned_run(
        [
            "connect",
            "coap",
            "--coap-security",
            "psk",
            "--client",
            "probe,coap-client",
            "--n",
            "2",
            "--warmup",
            "1",
            "--no-report",
            "--json",
            "--out",
            str(tmp_path),
        ],
        lambda: [COAP_PSK.decode(), COAP_PSK.hex()],
        600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert scan.scans > 0
    assert not scan.hits, scan.hits
    import json

    doc = json.loads(p.stdout)
    assert sorted(s["labels"]["client"] for s in doc["series"] if s["status"] == "ok") == ["coap-client", "probe"]


def test_the_token_is_provisioned_with_no_pin_on_a_command_line(tmp_path, monkeypatch):
    """softhsm2-util gets the SO and user PINs at its prompts on a pseudo-terminal, not as --so-pin/--pin:
    every command line the provisioning starts is recorded (the real processes run), none holds a PIN,
    and the token it made opens with the user PIN from its 0600 file."""
    from secperf.lab.pki import LabPKI
    from secperf.lab.token import LabToken

    real, argvs = subprocess.Popen, []

    def recording(argv, *a, **kw):
        argvs.append([str(x) for x in argv])
        return real(argv, *a, **kw)

    monkeypatch.setattr(subprocess, "Popen", recording)
    tok = LabToken(tmp_path / "token", pki=LabPKI(tmp_path / "pki")).ensure()
    monkeypatch.setattr(subprocess, "Popen", real)
    pins = [f.read_text().strip() for f in (tmp_path / "token").glob("*.pin")]
    assert len(pins) == 2 and all(len(p) >= 16 for p in pins)
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in (tmp_path / "token").glob("*.pin"))
    init = [a for a in argvs if "--init-token" in a]
    assert len(init) == 1, argvs
    assert not [a for a in argvs if "--pin" in a or "--so-pin" in a or any(p in " ".join(a) for p in pins)], argvs
    assert tok.keys(), "the provisioned token holds no keys"


@pytest.mark.slow
def test_s_server_psk_rows_it_cannot_hold_in_a_file_are_skipped_with_a_note(tmp_path):
    """`handshake psk --server s_server`: the TLS 1.2 PSK row (s_server would need -psk HEX) is skipped with
    a note naming why and where it runs; the TLS 1.3 rows run there from the session file, exit 0."""
    import json

    p, scan = _scanned_run(
        [
            "handshake",
            "psk",
            "--server",
            "s_server",
            "--n",
            "1",
            "--warmup",
            "0",
            "--no-report",
            "--json",
            "--out",
            str(tmp_path),
        ],
        lambda: [PSK_HEX],
        600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert "1 s_server configuration(s) skipped" in p.stderr and "--server probe" in p.stderr, p.stderr[-2000:]
    series = json.loads(p.stdout)["series"]
    assert series and all(s["status"] == "ok" for s in series), [s.get("failures") for s in series]
    assert {s["labels"].get("tls") for s in series} == {"1.3"}, [s["labels"] for s in series]
    assert not scan.hits, scan.hits
