"""Per-handshake timeouts in the DTLS 1.3, QUIC and EDHOC measurers: over a link that drops every
datagram (netem loss=100 %, in network namespaces secperf creates), each handshake is cut at its timeout
(derived from the link, as TLS's is) and recorded as a failed sample whose reason is "timeout after X s";
the run ends (exit 1: measurement failures), and no process of it is left. Structure only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import LINK_PROBLEM, skip

ROOT = Path(__file__).resolve().parents[1]
PEERS = ("dtls_pair", "edhoc_peer", "secperf-netem", "aioquic")


def _peers(tag: str) -> set[int]:
    """PIDs of processes a connect run over a link starts (its peers and the link's relay), of this test's
    run only: those whose environment carries `tag` (another test run beside this one starts the same
    peers)."""
    out = set()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            env = (d / "environ").read_bytes()
        except OSError:
            continue
        if any(p in cmd for p in PEERS) and tag.encode() in env.split(b"\0"):
            out.add(int(d.name))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["dtls13", "quic", "edhoc"])
def test_a_handshake_past_its_timeout_is_a_failed_sample_and_the_run_goes_on(protocol, tmp_path):
    if LINK_PROBLEM:
        skip("needs-links", f"cannot emulate links here: {LINK_PROBLEM}")
    tag = f"SECPERF_TEST_RUN={os.getpid()}-{protocol}-{time.monotonic_ns()}"
    before = _peers(tag)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SECPERF_TEST_RUN": tag.split("=", 1)[1]}
    argv = [
        sys.executable,
        "-m",
        "secperf",
        "connect",
        protocol,
        "--network",
        "delay=1ms,loss=100%",
        "--n",
        "2",
        "--warmup",
        "0",
        "--handshake",
        "full",
        "--timeout-ms",
        "1000",
        "--max-hours",
        "10",
        "--json",
        "--no-report",
        "--out",
        str(tmp_path),
    ]
    if protocol == "dtls13":
        argv += ["--cid", "off"]
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert p.returncode == 1, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert len(doc["series"]) == 1
    s = doc["series"][0]
    assert len(s["samples"]) == 2, "every handshake is a sample: the run went on after the first timeout"
    for x in s["samples"]:
        assert x["ok"] is False and x["reason"].startswith("timeout after "), x
        assert float(x["reason"].split()[2]) > 1.0, "the timeout is stretched by the link (loss: back-off)"
    assert all("timeout after" in f["reason"] for f in s["failures"])
    deadline = time.monotonic() + 5
    while (left := _peers(tag) - before) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"processes left: {left}"
