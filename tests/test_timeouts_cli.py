"""`secperf device handshake` when a tool it runs hangs, end to end: a fresh SECPERF_HOME (nothing
built), a stand-in `make` that leaves the build's files at once and a stand-in `qemu-arm` that never
answers `--offers` (with a child of its own). With a tiny limit (SECPERF_LIMIT_SCALE) the command fails
as a build failure naming the tool and the limit, exit 1, no traceback, and both stand-ins are gone;
killed with -9 while it waits, the run's watchdog stops them. Structure only."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import alive, import_or_skip, skip
from secperf.lab import registry
from secperf.measure import device_sources, quic_device_build

ROOT = Path(__file__).resolve().parents[1]

FAKE_MAKE = """#!/bin/sh
# stands in for make: leaves the files a device build writes into OUT=, at once
for a in "$@"; do case "$a" in OUT=*) out="${a#OUT=}";; esac; done
mkdir -p "$out"
for f in sp-device-quic libinsn_events.so sp-wolfssl sp-mbedtls sp-edhoc; do : > "$out/$f"; chmod +x "$out/$f"; done
"""

FAKE_QEMU = """#!/bin/sh
# stands in for qemu-arm: never answers, and has a child of its own
case "$1" in --version) echo "qemu-arm version 0 (a stand-in that hangs)"; exit 0;; esac
sleep 300 &
echo "$$ $!" > "$FAKE_PIDS.tmp" && mv "$FAKE_PIDS.tmp" "$FAKE_PIDS"
wait
"""


def _needs_cross_tools() -> None:
    if not shutil.which("arm-linux-gnueabihf-gcc") or not (quic_device_build.CROSS_LIBC / "lib").is_dir():
        skip("needs-bootstrap", "the ARM cross-compiler and its loader (scripts/bootstrap installs them)")
    # where a run with a fresh SECPERF_HOME looks (it would fetch Debian's packages otherwise)
    libdirs = [r / "usr/lib/arm-linux-gnueabihf" for r in (device_sources.install_cache() / "sysroot-armhf", Path("/"))]
    if not any(all((d / lib).exists() for lib in quic_device_build.ARMHF_LIBS) for d in libdirs):
        skip("needs-bootstrap", "the armhf ngtcp2/GnuTLS sysroot (scripts/bootstrap fetches it)")


def _env(tmp_path: Path, scale: str | None) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("make", FAKE_MAKE), ("qemu-arm", FAKE_QEMU)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SECPERF_HOME": str(tmp_path / "home"),  # nothing built there: the build (and its --offers) runs now
        "FAKE_PIDS": str(tmp_path / "pids"),
    }
    env.pop(registry.LIMIT_SCALE_ENV, None)
    if scale is not None:
        env[registry.LIMIT_SCALE_ENV] = scale
    return env


def _argv(tmp_path: Path, tls: str) -> list[str]:
    stack = ["--stack", "ngtcp2"] if tls == "quic" else []
    return [sys.executable, "-m", "secperf", "device", "handshake", "--tls", tls, *stack, "--n", "1"] + [
        "--no-report",
        "--out",
        str(tmp_path / "out"),
    ]


def _left(pids: list[int], grace_s: float = 10.0) -> list[int]:
    end = time.monotonic() + grace_s
    while time.monotonic() < end and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


@pytest.mark.parametrize(
    ("tls", "asked"),
    [
        ("quic", "asking the QUIC client what it offers (qemu-arm)"),
        ("edhoc", "asking the mbedtls3 client what it offers"),
    ],
)
def test_offers_that_never_come_fail_the_build_naming_the_tool_and_its_limit(tmp_path, tls, asked):
    _needs_cross_tools()
    p = subprocess.run(
        _argv(tmp_path, tls), env=_env(tmp_path, "0.01"), capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    assert p.returncode == 1, p.stderr[-2000:]
    assert "secperf device: error:" in p.stderr
    assert asked in p.stderr and "did not finish within 0.6 s" in p.stderr, p.stderr[-1000:]
    pids = [int(x) for x in (tmp_path / "pids").read_text().split()]
    assert _left(pids) == [], "the emulator or its child outlived the time-out"
    # the failed build left nothing a later run would reuse
    build = tmp_path / "home" / "device" / "build"
    assert not [d for d in build.iterdir() if d.name != ".lock" and d.is_dir()]


def test_a_bad_limit_scale_exits_2_naming_the_variable(tmp_path):
    _needs_cross_tools()
    p = subprocess.run(
        _argv(tmp_path, "quic"), env=_env(tmp_path, "soon"), capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert p.returncode == 2, p.stderr[-2000:]
    assert "Traceback" not in p.stderr
    assert f"{registry.LIMIT_SCALE_ENV}='soon'" in p.stderr


def test_a_bad_limit_scale_is_refused_before_a_connect_run_starts(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), registry.LIMIT_SCALE_ENV: "-2"}
    argv = [sys.executable, "-m", "secperf", "connect", "edhoc", "--n", "1", "--no-report", "--out", str(tmp_path)]
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert f"{registry.LIMIT_SCALE_ENV}='-2': expected a number above 0" in p.stderr
    assert not list(tmp_path.glob("**/result.json")), "a run was started despite the bad value"


def test_secperf_killed_while_it_waits_on_a_hanging_tool_leaves_nothing(tmp_path):
    _needs_cross_tools()
    proc = subprocess.Popen(
        _argv(tmp_path, "quic"),
        env=_env(tmp_path, None),  # the real limit (60 s): secperf is killed long before
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    pidfile = tmp_path / "pids"
    try:
        end = time.monotonic() + 120
        while not pidfile.is_file() and proc.poll() is None and time.monotonic() < end:
            time.sleep(0.05)
        assert pidfile.is_file(), f"the stand-in emulator never started: {proc.stderr.read() if proc.stderr else ''}"
        pids = [int(x) for x in pidfile.read_text().split()]
        assert all(alive(p) for p in pids)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert _left(pids) == [], "the hanging tool or its child outlived a kill -9 of secperf"


FAKE_CURL = """#!/bin/sh
# stands in for curl: never connects, and has a child of its own
sleep 300 &
echo "$$ $!" >> "$FAKE_PIDS"
wait
"""


@pytest.mark.slow  # starts the lab's nginx and token; four client runs of about a second each
def test_a_client_past_its_limit_is_a_failed_sample_with_its_reason_and_the_run_goes_on(tmp_path):
    if not (shutil.which("nginx") or os.path.exists("/usr/sbin/nginx")):
        skip("needs-bootstrap", "nginx (scripts/bootstrap installs it)")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "curl").write_text(FAKE_CURL)
    (bin_dir / "curl").chmod(0o755)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "FAKE_PIDS": str(tmp_path / "pids"),
        registry.LIMIT_SCALE_ENV: "0.05",  # the client's limit (--timeout-ms + 30 s) becomes about 1.5 s
    }
    argv = [sys.executable, "-m", "secperf", "connect", "https", "--client", "curl", "--auth", "mtls"]
    argv += ["--n", "2", "--warmup", "0", "--timeout-ms", "100", "--json", "--no-report", "--out", str(tmp_path)]
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    assert p.returncode == 1, p.stderr[-2000:]  # measurement failures, not a crash
    doc = json.loads(p.stdout)
    assert doc["series"], "no series: the run did not go on"
    for s in doc["series"]:
        assert len(s["samples"]) == 2, "every run is a sample: the run went on after the first time-out"
        for x in s["samples"]:
            assert x["ok"] is False
            assert "curl exited -9" in x["reason"] and "did not finish within" in x["reason"]
    pids = [int(x) for x in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 2 * 2 * len(doc["series"])
    assert _left(pids) == [], "a timed-out client or its child outlived the run"


def _tagged(tag: str, word: str) -> list[int]:
    """Live processes whose command line has `word` and whose environment carries this test's tag."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                env = (d / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if word in cmd and tag.encode() in env and alive(int(d.name)):
                out.append(int(d.name))
    return out


def test_a_server_that_is_not_ready_within_its_limit_is_a_failed_series_and_is_stopped(tmp_path):
    import_or_skip("lakers", "scripts/bootstrap installs the 'protocols' extra")
    import_or_skip("aiocoap", "scripts/bootstrap installs the 'protocols' extra")
    tag = f"SECPERF_TEST_RUN=timeouts-{os.getpid()}-{time.monotonic_ns()}"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "SECPERF_TEST_RUN": tag.split("=", 1)[1],
        # the server's 60 s to say "ready" become 6 ms, below a Python interpreter's start-up on any host
        registry.LIMIT_SCALE_ENV: "0.0001",
    }
    argv = [sys.executable, "-m", "secperf", "connect", "edhoc", "--n", "2", "--warmup", "0", "--json"]
    argv += ["--no-report", "--out", str(tmp_path)]
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    assert p.returncode == 1, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert [s["status"] for s in doc["series"]] == ["failed"]
    reasons = [f["reason"] for f in doc["series"][0]["failures"]]
    assert any("EDHOC server did not start: no ready line within 0.006 s" in r for r in reasons), reasons
    assert _left(_tagged(tag, "edhoc_peer")) == [], "the EDHOC server outlived its failed start"


@pytest.mark.slow  # real emulator runs (the device builds at first use when not cached)
@pytest.mark.parametrize(
    ("tls", "reason"),
    [
        ("1.3", "the wolfssl guest client did not finish 2 handshakes within"),
        ("quic", "the QUIC guest client did not finish 2 connections within"),
        ("edhoc", "the EDHOC guest did not finish within"),
    ],
)
def test_an_emulator_past_its_limit_fails_its_configuration_and_the_run_goes_on(tmp_path, tls, reason):
    if not shutil.which("qemu-arm") or not shutil.which("arm-linux-gnueabihf-gcc"):
        skip("needs-bootstrap", "qemu-arm and the ARM cross-compiler (scripts/bootstrap installs them)")
    tag = f"SECPERF_TEST_RUN=timeouts-{os.getpid()}-{tls}-{time.monotonic_ns()}"
    base = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SECPERF_TEST_RUN": tag.split("=", 1)[1]}
    argv = [sys.executable, "-m", "secperf", "device", "handshake", "--tls", tls, "--n", "1", "--warmup", "0"]
    argv += ["--stack", "ngtcp2"] if tls == "quic" else ["--stack", "wolfssl"] if tls == "1.3" else []
    argv += ["--timing", "off", "--json", "--no-report", "--out", str(tmp_path)]
    # built (or found) first with the real limits; then every emulator run gets a few milliseconds
    warm = subprocess.run([*argv[:-1], str(tmp_path / "warm")], env=base, capture_output=True, text=True, timeout=1800)
    assert warm.returncode == 0, warm.stderr[-2000:]
    # 0.00003: the guests' limits become 4-6 ms, below qemu-arm's own start-up and two emulated handshakes on
    # any host (at 0.002, 0.24-0.38 s, a quiet host finished them in time); the peers' start limits still hold
    env = {**base, registry.LIMIT_SCALE_ENV: "0.00003"}
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    assert p.returncode == 1, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert len(doc["series"]) == len(json.loads(warm.stdout)["series"]) >= 2, "a configuration was dropped"
    for s in doc["series"]:
        assert s["status"] == "failed" and s["samples"] == []
        assert any(reason in f["reason"] for f in s["failures"]), s["failures"]
    assert _left(_tagged(tag, "qemu-arm")) == [], "an emulator outlived its time-out"
