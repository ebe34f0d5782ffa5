"""A child that outlives its time limit: real children that sleep past a tiny limit. Each path ends as a
named error or a failed sample with its reason (never a bare TimeoutExpired), and the child and every
process it started are gone afterwards. Structure only: no wall times are judged."""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import alive
from secperf.core.errors import InputError, SecperfError
from secperf.lab import registry
from secperf.lab.processes import first_line
from secperf.measure import build_stage, connect_spawn, device_build, device_sources, server_target


def _hang(pids: Path) -> list[str]:
    """A shell that starts a sleeping child of its own, writes both PIDs, and waits."""
    return ["sh", "-c", f'sleep 60 & echo "$$ $!" > {pids}; wait']


def _gone(pids: Path) -> list[int]:
    """The PIDs written by `_hang` still alive (not zombies) after a short grace for reaping."""
    listed = [int(x) for x in pids.read_text().split()]
    for _ in range(100):
        left = [p for p in listed if alive(p)]
        if not left:
            break
        time.sleep(0.05)
    return left


@pytest.mark.parametrize("own_group", [False, True], ids=["in-secperf-group", "own-process-group"])
def test_a_child_past_its_limit_is_a_named_timeout_and_leaves_no_process(tmp_path, own_group):
    pids = tmp_path / "pids"
    kw = {"start_new_session": True} if own_group else {}
    with pytest.raises(registry.ChildTimeout) as err:
        registry.run(_hang(pids), "a tool that hangs", 0.3, capture_output=True, text=True, **kw)
    exc = err.value
    # still a TimeoutExpired for the callers that turn it into a failed sample, and a named error for the CLI
    assert isinstance(exc, subprocess.TimeoutExpired) and isinstance(exc, SecperfError)
    assert "a tool that hangs" in str(exc) and "0.3 s" in str(exc)
    assert exc.timeout == pytest.approx(0.3)
    assert _gone(pids) == [], "the child or its own child outlived the time-out"
    listed = [p["pid"] for p in registry.current().doc["processes"]]
    assert int(pids.read_text().split()[0]) not in listed, "the killed child stayed in the run registry"


def test_the_limit_scale_applies_to_every_child_and_is_named_in_the_reason(tmp_path, monkeypatch):
    monkeypatch.setenv(registry.LIMIT_SCALE_ENV, "0.002")
    pids = tmp_path / "pids"
    with pytest.raises(registry.ChildTimeout) as err:
        registry.run(_hang(pids), "a scaled tool", 150)
    assert err.value.timeout == pytest.approx(0.3)
    assert "0.3 s" in str(err.value)
    assert _gone(pids) == []


@pytest.mark.parametrize("value", ["fast", "0", "-1", "nan", "inf"])
def test_a_bad_limit_scale_is_an_input_error_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv(registry.LIMIT_SCALE_ENV, value)
    with pytest.raises(InputError, match=registry.LIMIT_SCALE_ENV):
        registry.run(["true"], "anything", 5)


def test_a_build_step_past_its_limit_is_a_build_failure_naming_the_tool_and_the_limit(tmp_path, monkeypatch):
    monkeypatch.setenv(registry.LIMIT_SCALE_ENV, "0.001")
    pids = tmp_path / "pids"
    with pytest.raises(device_build.DeviceSetupError) as err:
        device_build._run(_hang(pids), "asking the test client what it offers (qemu-arm)", 300)
    msg = str(err.value)
    assert "qemu-arm" in msg and "0.3 s" in msg and registry.LIMIT_SCALE_ENV in msg
    assert _gone(pids) == [], "a process of the build outlived its time-out"


def test_the_build_group_runner_is_the_registry_runner_in_a_group_of_its_own(tmp_path):
    pids = tmp_path / "pids"
    with pytest.raises(registry.ChildTimeout):
        build_stage.run_group(_hang(pids), "a build that hangs", 0.3)
    assert _gone(pids) == []


def test_a_timed_client_past_its_limit_is_a_failed_run_with_its_reason(tmp_path):
    pids = tmp_path / "pids"
    r, _wall, bracket = connect_spawn.timed_run(_hang(pids), dict(os.environ), 0.3, "the test client")
    assert r.returncode == -9
    assert "the test client did not finish within 0.3 s" in r.stderr
    assert bracket["t1_ns"] >= bracket["t0_ns"]
    assert _gone(pids) == []


def test_a_client_timed_to_a_line_past_its_limit_says_it_was_stopped(tmp_path):
    pids = tmp_path / "pids"
    argv = ["sh", "-c", f'echo connecting; sleep 60 & echo "$$ $!" > {pids}; wait']
    hit, _wall, rc, tail = connect_spawn.stamp_lines(argv, dict(os.environ), "CONNACK", 0.3)
    assert hit is None and rc == -9
    assert tail.startswith("connecting") and "stopped after 0.3 s" in tail
    assert _gone(pids) == []


def test_a_start_up_run_past_its_limit_is_a_named_measurement_error(tmp_path, monkeypatch):
    monkeypatch.setenv(registry.LIMIT_SCALE_ENV, "0.01")  # 30 s -> 0.3 s
    pids = tmp_path / "pids"
    with pytest.raises(SecperfError, match="start-up.*did not finish within 0.3 s"):
        connect_spawn.median_startup(_hang(pids), 3)
    assert _gone(pids) == []


def test_timed_clients_carry_the_run_mark_so_a_killed_run_leaves_none(tmp_path):
    out = tmp_path / "env"
    r, _w, _b = connect_spawn.timed_run(["sh", "-c", f"env > {out}"], {"PATH": os.environ["PATH"]}, 10)
    assert r.returncode == 0
    assert f"{registry.ENV}={registry.current().mark}" in out.read_text().splitlines()


def test_a_target_that_accepts_tcp_but_never_completes_a_handshake_is_an_input_error(monkeypatch):
    # the check's own limit (3 x 5 s + 10 s) scaled to 0.25 s: it fires before the probe's own 5 s timeout
    monkeypatch.setenv(registry.LIMIT_SCALE_ENV, "0.01")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)  # the kernel completes TCP; nobody ever answers the ClientHello
        port = s.getsockname()[1]
        lt = server_target.parse_load_target(f"127.0.0.1:{port}")
        with pytest.raises(InputError) as err:
            server_target.probe(lt, timeout_s=5)
    msg = str(err.value)
    assert msg.startswith(f"--target 127.0.0.1:{port}: no handshake within 0.25 s"), msg
    assert not [p for p in registry.current().doc["processes"] if p["what"] == "probe client (target check)"]


def test_a_source_fetch_past_its_limit_is_a_setup_error_and_its_group_is_gone(tmp_path):
    pids = tmp_path / "pids"
    with pytest.raises(
        device_sources.DeviceSetupError, match=r"fetching a part: sh -c .* within 0.3 s and was stopped"
    ):
        device_sources._run(_hang(pids), tmp_path, "fetching a part", timeout=0.3)
    assert _gone(pids) == []


def test_a_child_timeout_survives_pickling_whole():
    exc = registry.ChildTimeout("a worker", ["sleep", "9"], 0.5, "partial out", "partial err")
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is registry.ChildTimeout and str(back) == str(exc)
    assert (back.what, back.cmd, back.timeout, back.output, back.stderr) == (
        "a worker",
        ["sleep", "9"],
        0.5,
        "partial out",
        "partial err",
    )


def test_a_server_that_never_says_ready_is_not_waited_on_without_end(tmp_path):
    pids = tmp_path / "pids"
    silent = subprocess.Popen(_hang(pids), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line, limit = first_line(silent, 0.3)
        assert (line, limit) == ("", 0.3) and silent.poll() is None  # still running: the caller stops it
    finally:
        registry.kill_tree(silent)
    assert _gone(pids) == []
    ready = subprocess.Popen(["sh", "-c", "echo; echo ready; sleep 0.2"], stdout=subprocess.PIPE, text=True)
    assert first_line(ready, 30)[0] == "ready\n"
    ready.wait()
