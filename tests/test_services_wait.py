"""Waiting for servers and finding a run's processes (lab/services, lab/iot_services, lab/reaper on
psutil and core.wait): a server is ready when it listens (also a descendant, also inside a link's
namespace), never when it has exited; the reaper finds exactly the processes carrying the run's mark."""

import os
import signal
import socket
import subprocess
import sys
import time

from conftest import needs_links
from secperf.core.wait import wait_until
from secperf.lab import reaper
from secperf.lab.iot_services import tls_answers
from secperf.lab.services import listening_ports, wait_listening, wait_tcp

LISTEN_IN_CHILD = (
    "import socket, subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', \"import socket, time; "
    "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(('127.0.0.1', 0)); "
    "t = socket.socket(); t.bind(('127.0.0.1', 0)); t.listen(); time.sleep(30)\"])\n"
    "time.sleep(30)\n"
)


def _stop(proc):
    for pid in [*_kids(proc.pid), proc.pid]:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    proc.wait()


def _kids(pid):
    import psutil

    try:
        return [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def test_a_server_whose_child_listens_is_ready_and_names_its_sockets():
    proc = subprocess.Popen([sys.executable, "-c", LISTEN_IN_CHILD])
    try:
        ok, what = wait_listening(proc, 10)
        assert ok, what

        # the child binds UDP, then listens on TCP: both show, as the grandchild's
        def both():
            found = listening_ports(proc.pid)
            return found if len(found) == 2 else None

        ports = wait_until(both, 10)
        assert ports is not None and sorted(k for k, _ in ports) == ["tcp", "udp"], ports
        assert what.startswith("listening on ") and any(f"{k}/{n}" in what for k, n in ports), (what, ports)
    finally:
        _stop(proc)
    assert listening_ports(proc.pid) == set()  # gone: nothing, not an error


def test_a_server_that_exits_is_not_ready_even_when_its_port_accepts():
    """The port is taken by someone else (here: this test) and the server exits: not ready, at once."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        assert wait_tcp(port, 5)  # the port itself accepts
        proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
        proc.wait()
        t0 = time.monotonic()
        assert wait_tcp(port, 5, proc) is False
        assert wait_listening(proc, 5, port) == (False, f"TCP port {port} did not accept")
        assert wait_listening(proc, 5) == (False, "the server exited with code 3 before listening")
        assert tls_answers(port, 5, proc) is False
        assert time.monotonic() - t0 < 4  # given up when the process was seen gone, not at the deadline


def test_a_server_that_never_listens_times_out_naming_it():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert wait_listening(proc, 0.3) == (False, "no listening socket")
        assert wait_tcp(1, 0.2, proc) is False
    finally:
        _stop(proc)


@needs_links
def test_a_server_inside_a_link_namespace_is_seen_listening(tmp_path):
    """psutil would look in this (the host's) namespace and find nothing: /proc/PID/net is read."""
    from secperf.lab import netns

    with netns.Link("delay=1ms") as link:
        proc = link.popen(
            "srv",
            [
                sys.executable,
                "-c",
                "import socket, time; s = socket.socket(); s.bind(('0.0.0.0', 7799)); s.listen(); time.sleep(30)",
            ],
            stdin=subprocess.DEVNULL,
        )
        try:
            ok, what = wait_listening(proc, 10)
            assert ok and what == "listening on tcp/7799", what
            assert wait_tcp(7799, 5, proc, link.server_addr, lambda: link.socket("dev"))
        finally:
            _stop(proc)


def test_the_reaper_finds_and_stops_exactly_the_marked_processes():
    mark = f"test-{os.getpid()}-{time.monotonic_ns()}"
    env = {**os.environ, reaper.ENV: mark}
    marked = [
        subprocess.Popen(["sleep", "30"], env=env),
        subprocess.Popen(["sh", "-c", "sleep 30 & wait"], env=env),
    ]  # and its child
    other = subprocess.Popen(["sleep", "30"], env={**os.environ, reaper.ENV: mark + "0"})  # a longer mark
    try:
        time.sleep(0.2)
        expected = {p.pid for p in marked} | set(_kids(marked[1].pid))
        assert len(expected) == 3
        assert set(reaper.marked_pids(mark)) == expected
        # the registry's entry by PID and start time catches an unmarked process too
        doc = {
            "processes": [
                {"pid": other.pid, "start_ticks": reaper.start_ticks(other.pid)},
                {"pid": other.pid + 100000, "start_ticks": 1},
            ]
        }
        assert reaper.listed_pids(doc) == [other.pid]
        assert reaper.listed_pids({"processes": [{"pid": other.pid, "start_ticks": 1}]}) == []  # a reused PID
        stopped = reaper.stop_processes(doc, mark)
        assert set(stopped) == expected | {other.pid}
        by_signal = (-signal.SIGTERM, -signal.SIGKILL)  # SIGTERM, or SIGKILL when it took over a second to go
        for p in [marked[0], other]:
            assert p.wait(timeout=5) in by_signal
        # the shell waits on its child: when the child's SIGTERM lands first, `wait` returns and the shell
        # ends by itself (0) before its own signal is handled; either way it is gone
        assert marked[1].wait(timeout=5) in (*by_signal, 0)
        assert reaper.marked_pids(mark) == []
    finally:
        for p in [*marked, other]:
            if p.poll() is None:
                _stop(p)
