"""The child processes a service runs, seen from outside: stopped by their PID (the whole group when
they lead one), a free loopback port for them, and waiting until they are ready (a port that accepts
TCP, any socket they listen on, read in their own network namespace, or a line on their stdout).

lab/services.py builds its servers on these; other parts of the lab and measure/ that start a
process of their own use them too."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import psutil

from ..core.wait import wait_until
from . import registry

LOOPBACK = "127.0.0.1"


class SocketFactory(Protocol):
    """Makes a socket where the server is (e.g. inside its namespace): TCP, or the socket type given
    (iot_services' CoAP ping asks for a datagram socket)."""

    def __call__(self, kind: int = ..., /) -> socket.socket: ...


_T = TypeVar("_T")


def stop_process(proc: subprocess.Popen[Any], timeout_s: float = 5.0) -> None:
    """SIGTERM a child we started, wait (bounded), SIGKILL if it did not exit; always reaped. A child
    leading its own process group (spawned in its own session) takes what is left of its group
    with it (e.g. workers a server forked)."""
    if proc.poll() is not None:
        return
    try:
        leads_group = os.getpgid(proc.pid) == proc.pid
    except OSError:
        leads_group = False
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if leads_group:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the group outlives its reaped leader only while members remain
        except OSError:
            pass


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """An unused loopback port (for servers that cannot report an ephemeral one)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind((LOOPBACK, 0))
        port: int = s.getsockname()[1]
        return port


def _accepts_tcp(host: str, port: int, make_socket: SocketFactory | None = None) -> bool:
    """One attempt: does host:port accept a TCP connection (on a socket from make_socket())?"""
    try:
        if make_socket is None:
            with socket.create_connection((host, port), timeout=0.2):
                return True
        with make_socket() as s:
            s.settimeout(0.2)
            s.connect((host, port))
            return True
    except OSError:
        return False


def wait_tcp(
    port: int,
    timeout_s: float,
    proc: subprocess.Popen[Any] | None = None,
    host: str = LOOPBACK,
    make_socket: SocketFactory | None = None,
) -> bool:
    """True once host:port accepts TCP; make_socket() makes the socket (e.g. inside a namespace).
    False when `proc` exits first (never checked against a port someone else took meanwhile)."""

    def exited() -> bool:
        return proc is not None and proc.poll() is not None

    return bool(wait_until(lambda: not exited() and _accepts_tcp(host, port, make_socket), timeout_s, give_up=exited))


def _tree(pid: int) -> list[int]:
    """pid and its descendants; [] if there is no such process."""
    try:
        proc = psutil.Process(pid)
        return [pid] + [c.pid for c in proc.children(recursive=True)]
    except psutil.Error:
        return []


def listening_ports(pid: int) -> set[tuple[str, int]]:
    """(tcp|udp, port) of the TCP listeners and bound UDP sockets held by a process or its
    descendants, read in the process's own network namespace (/proc/PID/net).

    psutil finds the tree, but not the sockets: its net_connections() matches a process's socket
    inodes against /proc/net/*, the *caller's* namespace, and a server secperf placed in a link's
    server namespace has its sockets only in that namespace's tables, which /proc/PID/net shows."""
    out: set[tuple[str, int]] = set()
    for p in _tree(pid):
        inodes: set[str] = set()
        try:
            for fd in os.listdir(f"/proc/{p}/fd"):
                try:
                    link = os.readlink(f"/proc/{p}/fd/{fd}")
                except OSError:
                    continue
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        except OSError:
            continue
        for proto in ("tcp", "tcp6", "udp", "udp6"):
            try:
                lines = Path(f"/proc/{p}/net/{proto}").read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                f = line.split()
                if len(f) > 9 and f[9] in inodes and (f[3] == "0A" or proto.startswith("udp")):
                    out.add((proto[:3], int(f[1].rsplit(":", 1)[1], 16)))
    return out


def wait_listening(
    proc: subprocess.Popen[Any],
    timeout_s: float,
    port: int | None = None,
    host: str = LOOPBACK,
    make_socket: SocketFactory | None = None,
) -> tuple[bool, str]:
    """Wait until a server process is ready: with `port`, until host:port accepts TCP; otherwise until
    the process (or a descendant) listens on a TCP port or has bound a UDP port. (ready, what)."""
    if port is not None:
        ok = wait_tcp(port, timeout_s, proc, host, make_socket)
        return ok, f"TCP port {port} accepts" if ok else f"TCP port {port} did not accept"

    def exited() -> bool:
        return proc.poll() is not None

    ports = wait_until(lambda: set() if exited() else listening_ports(proc.pid), timeout_s, give_up=exited)
    if ports:
        return True, "listening on " + ", ".join(f"{k}/{n}" for k, n in sorted(ports))
    if exited():
        return False, f"the server exited with code {proc.returncode} before listening"
    return False, "no listening socket"


def watch_stdout(proc: subprocess.Popen[str], on_line: Callable[[str], _T | None], timeout_s: float) -> _T | None:
    """Read the child's stdout in a thread for its whole life (so it never blocks on a full pipe);
    return the first non-None value of on_line(line), or None on exit or after timeout_s."""
    first: queue.Queue[_T | None] = queue.Queue()

    def reader() -> None:
        for line in proc.stdout or ():  # a child started without stdout=PIPE: nothing to read
            value = on_line(line)
            if value is not None:
                first.put(value)
        first.put(None)

    threading.Thread(target=reader, daemon=True).start()
    try:
        return first.get(timeout=timeout_s)
    except queue.Empty:
        return None


def first_line(proc: subprocess.Popen[str], limit_s: float) -> tuple[str, float]:
    """A server's first non-empty stdout line (its "ready" line) within limit_s after
    $SECPERF_LIMIT_SCALE: (the line, or "" when its output ended or the limit came first; the limit
    applied, for the reason). Its stdout is drained for its whole life (`watch_stdout`), so neither a
    silent server nor a chatty one can make the caller wait without end."""
    limit = registry.scaled(limit_s) or limit_s
    line = watch_stdout(proc, lambda ln: ln if ln.strip() else None, limit)
    if line is None:
        try:  # its output ended: let it finish exiting, so that its stderr can be read
            proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass
    return line or "", limit
