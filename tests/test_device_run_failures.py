"""A device run's host peer that fails, and guests past their limit: the configuration fails with
the reason, the other configurations are measured, the Result is written and nothing is left running.

The peers fail for real: an executable standing in for the wolfSSL DTLS server that exits at once
with its own error line, one that never prints its ready line (with a start limit made tiny by
$SECPERF_LIMIT_SCALE: the stand-in never answers, so no host is fast enough to pass by luck), the
real server killed during a row; the timing kernels' emulator with a limit far below its start-up.
"""

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from conftest import device_build_or_skip, import_or_skip, patch_everywhere, pids_marked, skip
from secperf.cli import main
from secperf.core.errors import SetupError
from secperf.inputs.devices import resolve_core
from secperf.lab import registry
from secperf.measure import device as D
from secperf.measure import device_dtls as DT
from secperf.measure import device_timing as T
from secperf.measure import edhoc_device as E
from secperf.measure import quic_device as QD
from secperf.measure.quic_device_server import LoopbackServer as QdServer


def _peer_or_skip():
    try:
        return DT.ensure_peer()
    except SetupError as exc:
        skip("needs-bootstrap", f"the DTLS 1.3 peer cannot be built here (run scripts/bootstrap): {exc}")


def _stand_in(tmp_path: Path, body: str) -> Path:
    """An executable in place of the DTLS peer; it exports the test's directory, so that it and
    anything it starts carry it in their environment (conftest.pids_marked finds them)."""
    exe = tmp_path / "peer-stand-in"
    exe.write_text(f"#!/bin/sh\nexport H2_TEST_MARK={tmp_path}\n{body}\n")
    exe.chmod(0o755)
    return exe


def _config(tls="dtls1.3", mode="full"):
    dev = resolve_core("cortex-m4-80")
    (cfg,) = D.plan(dev, "wolfssl59", tls, "x25519", "aes128gcm", mode)
    return cfg


def _gone(mark: str, wait_s: float = 5.0) -> list[int]:
    """The processes carrying mark still alive after up to wait_s (a kill is seen after its reaping),
    this process's run-registry watchdog aside (it carries the run's mark by design)."""
    reg = registry.current()
    keep = {reg.watchdog.pid} if reg.watchdog is not None else set()
    end = time.monotonic() + wait_s
    while (left := [p for p in pids_marked(mark) if p not in keep]) and time.monotonic() < end:
        time.sleep(0.1)
    return left


@pytest.mark.slow
def test_a_dtls_peer_that_exits_fails_its_configuration_and_the_others_are_measured(tmp_path, monkeypatch, capsys):
    """`device handshake --tls dtls1.2,dtls1.3`: the DTLS 1.3 row's peer exits at once with its error
    line; that row's series fail with the peer's words and exit status, the DTLS 1.2 row (s_server)
    is measured, the Result is written and the run ends as a run with a failed row does (exit 1)."""
    device_build_or_skip("wolfssl59", "cortex-m4")
    stand_in = _stand_in(tmp_path, "echo 'dtls_pair: cannot bind 127.0.0.1: Address already in use' >&2\nexit 3")
    patch_everywhere(monkeypatch, DT, "ensure_peer", lambda: stand_in)
    out = tmp_path / "out"
    args = ["device", "handshake", "--device", "cortex-m4-80", "--stack", "wolfssl59", "--tls", "dtls1.2,dtls1.3"]
    args += ["--group", "x25519", "--suite", "aes128gcm", "--mode", "full", "--n", "1", "--warmup", "0"]
    code = main([*args, "--timing", "off", "--out", str(out), "--json"])
    printed = capsys.readouterr()
    assert code == 1, printed.err[-2000:]
    res = out / "latest" / "result.json"  # the run directory the store made (and points `latest` at)
    doc = json.loads(res.read_text())
    assert doc == json.loads(printed.out)
    by = {(s["labels"]["tls"], s["labels"]["phase"]): s for s in doc["series"]}
    assert set(by) == {(t, p) for t in ("dtls1.2", "dtls1.3") for p in ("cold", "warm")}
    for phase in ("cold", "warm"):
        failed = by[("dtls1.3", phase)]
        assert failed["status"] == "failed" and not failed["samples"]
        (reason,) = [f["reason"] for f in failed["failures"]]
        assert DT.PairServer.name in reason and "Address already in use" in reason and "exit status 3" in reason
        assert failed["labels"]["server"].endswith("DTLS server (native/dtls13, host, loopback)")
        measured = by[("dtls1.2", phase)]
        assert measured["status"] == "ok" and measured["samples"], measured["failures"]
        assert measured["samples"][0]["version"].startswith("DTLS")
    assert not _gone(str(tmp_path)) and not _gone(registry.current().mark)


def test_a_dtls_peer_past_its_start_limit_is_stopped_with_all_it_started(tmp_path, monkeypatch):
    """A peer that never prints its ready line (it waits on a child of its own) is stopped at its
    start limit, child included; the row fails naming the peer and the limit; no guest runs."""
    build = device_build_or_skip("wolfssl59", "cortex-m4")
    stand_in = _stand_in(tmp_path, "sleep 600 &\nwait")
    patch_everywhere(monkeypatch, DT, "ensure_peer", lambda: stand_in)
    monkeypatch.setenv(registry.LIMIT_SCALE_ENV, "0.0001")  # 30 s -> 3 ms
    series = D.measure_config(_config(), 1, 0, build, timed=False)
    assert [s.labels["phase"] for s in series] == ["cold", "warm"]
    for s in series:
        assert s.status == "failed" and not s.samples
        (reason,) = [f.reason for f in s.failures]
        assert reason.startswith(DT.PairServer.name) and "no ready line within 0.003 s" in reason
    assert not _gone(str(tmp_path))


def test_a_dtls_peer_that_dies_says_its_exit_and_its_words(tmp_path, monkeypatch):
    """The real peer, killed while it should serve: died() names the signal; a stand-in that exits
    after its ready line: its exit status and first stderr line."""
    _peer_or_skip()
    cfg = _config("dtls1.3", "full-cid")
    with DT.PairServer(cfg) as srv:
        assert srv.port > 0 and srv.died() is None
        os.kill(srv.proc.pid, signal.SIGKILL)
        srv.proc.wait()
        why = srv.died()
    assert why is not None and why.startswith(DT.PairServer.name) and "killed by signal 9" in why
    stand_in = _stand_in(tmp_path, 'echo \'{"ready": 9}\'\necho "dtls_pair: out of memory" >&2\nexit 4')
    patch_everywhere(monkeypatch, DT, "ensure_peer", lambda: stand_in)
    srv = DT.PairServer(cfg).__enter__()
    try:
        srv.proc.wait()
        why = srv.died()
    finally:
        srv.__exit__(None, None, None)
    assert why == f"{DT.PairServer.name} exited during the run (exit status 4): dtls_pair: out of memory"
    assert not _gone(str(tmp_path))


def test_the_timing_kernels_past_their_limit_are_a_guest_timeout(tmp_path, monkeypatch):
    """run_kernels goes through the run registry: with a limit far below the emulator's start-up
    (60 s x 0.00001 = 0.6 ms) it is stopped and the named guest failure of the device runs is raised."""
    try:
        exe, plugin = T.build_kernels(tmp_path / "k")
    except SetupError as exc:
        skip("needs-bootstrap", f"the device toolchain is unavailable (run scripts/bootstrap): {exc}")
    monkeypatch.setenv(registry.LIMIT_SCALE_ENV, "0.00001")
    dev = resolve_core("cortex-m4-80")
    with pytest.raises(D.GuestTimeout, match=r"timing kernels' guest did not finish within 0\.0006 s"):
        T.run_kernels(dev, exe, plugin, tmp_path)
    assert not _gone(str(tmp_path))
    monkeypatch.delenv(registry.LIMIT_SCALE_ENV)
    assert T.run_kernels(dev, exe, plugin, tmp_path)  # and within its limit it runs as before


def test_an_edhoc_responder_that_cannot_start_fails_its_variant_only(tmp_path, monkeypatch):
    """The host's EDHOC responder (lakers) reading key files that are not there: the variant's series
    fail naming the responder and its error (measure returns them: the run goes on) and no guest is
    left running."""
    import_or_skip("lakers", "scripts/bootstrap installs the 'protocols' extra")
    try:
        eb = E.build("cortex-m4", stack=E.DEFAULT_STACK)
    except SetupError as exc:
        skip("needs-bootstrap", f"the EDHOC initiator cannot be built here (run scripts/bootstrap): {exc}")
    real = E.Responder
    patch_everywhere(monkeypatch, E, "Responder", lambda keys, style: real(tmp_path / "no-keys", style))
    series = E.measure(resolve_core("cortex-m4-80"), "m3-kid", n=1, warmup=0, eb=eb, timed=False)
    assert [s.labels["phase"] for s in series] == ["cold", "warm"]
    for s in series:
        assert s.status == "failed" and not s.samples
        assert any("the EDHOC responder" in f.reason and "FileNotFoundError" in f.reason for f in s.failures)
    assert not _gone(registry.current().mark)


def test_a_quic_server_that_has_stopped_fails_its_configuration_without_a_guest(tmp_path):
    """The shared aioquic server whose socket is gone (its thread stopped with the error): the next
    configuration fails at once with the server's words instead of waiting out the guest's limit."""
    import_or_skip("aioquic", "scripts/bootstrap installs the 'protocols' extra")
    try:
        build = QD.ensure_built()
    except SetupError as exc:
        skip("needs-bootstrap", f"the QUIC device client cannot be built here (run scripts/bootstrap): {exc}")
    (cfg,) = QD.plan(resolve_core("cortex-a7-800"), "ngtcp2", "full", "x25519", "aes128gcm", "ecdsa-p256")
    srv = QdServer(cfg.server_cert).__enter__()
    try:
        srv.sock.close()  # the server's socket is gone: its loop stops, saying why
        end = time.monotonic() + 5
        while not srv.errors and time.monotonic() < end:
            time.sleep(0.05)
        assert srv.errors
        series = QD.measure_config(cfg, 1, 0, build, srv, timed=False)
    finally:
        srv.__exit__(None, None, None)
    assert [s.labels["phase"] for s in series] == ["cold", "warm"]
    for s in series:
        assert s.status == "failed" and not s.samples and s.labels["server"] == QD.SERVER
        assert [f.reason for f in s.failures] == srv.errors
    assert not _gone(registry.current().mark)


def test_the_signer_commands_past_their_limit_are_failed_samples(tmp_path, monkeypatch):
    """`openssl dgst -sign` of the local_sw_cmd row, with a limit far below a process start-up
    (30 s x 0.00001 = 0.3 ms): every sample fails naming the command and the limit, the in-process
    row beside it is measured, and no openssl is left."""
    from secperf.lab.pki import LabPKI
    from secperf.measure import signer as S

    pki = LabPKI().ensure()
    monkeypatch.setenv(registry.LIMIT_SCALE_ENV, "0.00001")
    key = {"key_type": "ecdsa-p256", "label": "device"}
    sw, cmd = S.measure_local("none", key, S.SignerParams(n=2, warmup=0, workdir=tmp_path), pki)
    assert sw.labels["mode"] == "local_sw" and sw.status == "ok" and len(sw.values_us) == 2
    assert cmd.labels["mode"] == "local_sw_cmd" and cmd.status == "failed" and not cmd.values_us
    assert [f.reason for f in cmd.failures] == ["openssl dgst did not finish within 0.0003 s (stopped)"] * 2
    assert not _gone(str(tmp_path))


@pytest.mark.slow
def test_a_shared_s_server_that_does_not_start_fails_its_rows_and_the_pair_rows_are_measured(
    tmp_path, monkeypatch, capsys
):
    """`--tls 1.3,dtls1.3`: the TLS 1.3 row's s_server exits at once (an `openssl` first on PATH that
    refuses s_server and hands every other command to the real one); that row fails naming s_server,
    the DTLS 1.3 row (its own wolfSSL peer) is measured, the Result is written."""
    device_build_or_skip("wolfssl59", "cortex-m4")
    _peer_or_skip()
    real = shutil.which("openssl")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "openssl"
    fake.write_text(
        f'#!/bin/sh\nif [ "$1" = s_server ]; then echo "s_server: bind: Address already in use" >&2; exit 1; fi\n'
        f'exec {real} "$@"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    out = tmp_path / "out"
    args = ["device", "handshake", "--device", "cortex-m4-80", "--stack", "wolfssl59", "--tls", "1.3,dtls1.3"]
    args += ["--group", "x25519", "--suite", "aes128gcm", "--mode", "full", "--n", "1", "--warmup", "0"]
    code = main([*args, "--timing", "off", "--out", str(out), "--json"])
    printed = capsys.readouterr()
    assert code == 1, printed.err[-2000:]
    doc = json.loads((out / "latest" / "result.json").read_text())
    by = {(s["labels"]["tls"], s["labels"]["phase"]): s for s in doc["series"]}
    assert set(by) == {(t, p) for t in ("1.3", "dtls1.3") for p in ("cold", "warm")}
    for phase in ("cold", "warm"):
        failed = by[("1.3", phase)]
        assert failed["status"] == "failed" and not failed["samples"]
        assert any(f["reason"].startswith("s_server:") for f in failed["failures"]), failed["failures"]
        assert by[("dtls1.3", phase)]["status"] == "ok" and by[("dtls1.3", phase)]["samples"]
    assert not _gone(str(tmp_path))
