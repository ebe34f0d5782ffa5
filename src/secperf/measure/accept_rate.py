"""How fast an idle server takes connections off its accept queue (`fleet`'s model: accept_per_s, until
now assumed 20,000/s). Measured on a server secperf started here, on loopback, before any load:

- `n` (below the listen backlog) non-blocking TCP connects are made back to back; on loopback the
  kernel completes each three-way handshake inside connect(), so each connection is in the server's
  accept queue as soon as its connect returns;
- the listening socket's accept queue length (the kernel's sock_diag netlink answer for listeners:
  connections the server has not accepted) is read until it is empty;
- the drain is timed from the last reading at the queue's peak to the first empty one: connections
  at the peak / that time. The wait before it (the server's wake-up, which a loaded host stretches
  to tens of ms) is apart (`start_delay_s`), not folded into the rate.

The connections carry no TLS: the server accepts them and waits for a ClientHello that never comes;
they are reset (SO_LINGER 0) after each round. The median of the rounds is the figure."""

from __future__ import annotations

import os
import socket
import statistics
import struct
import time
from typing import Any

from ..core.errors import InputError, MeasurementError

POLL_LIMIT_S = 2.0  # a round whose queue does not empty within this is a failed round


_NLM_REQUEST_DUMP = 0x1 | 0x300  # NLM_F_REQUEST | NLM_F_DUMP
_SOCK_DIAG_BY_FAMILY, _NLMSG_DONE, _NLMSG_ERROR = 20, 3, 2
_TCP_LISTEN = 10


def _listeners(family: int) -> list[tuple[int, int]]:
    """(local port, accept queue length) of every listening TCP socket of `family`, from the kernel's
    sock_diag netlink interface (inet_diag: a listener's rqueue is its accept queue). Reading
    /proc/net/tcp instead walks every socket of the host: 50 ms on a busy one, slower than the drain."""

    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4) as nl:  # NETLINK_SOCK_DIAG
        req = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 1 << _TCP_LISTEN) + bytes(48)
        nl.send(struct.pack("=IHHII", 16 + len(req), _SOCK_DIAG_BY_FAMILY, _NLM_REQUEST_DUMP, 1, os.getpid()) + req)
        out: list[tuple[int, int]] = []
        while True:
            data = nl.recv(65536)
            off = 0
            while off + 16 <= len(data):
                length, kind = struct.unpack_from("=IH", data, off)
                if kind == _NLMSG_DONE:
                    return out
                if kind == _NLMSG_ERROR or length < 16:
                    raise MeasurementError("accept rate: the kernel's sock_diag answered with an error")
                body = off + 16
                sport = struct.unpack_from(">H", data, body + 4)[0]
                rqueue = struct.unpack_from("=I", data, body + 56)[0]
                out.append((sport, rqueue))
                off += (length + 3) & ~3


def accept_queue(port: int) -> int | None:
    """Connections waiting in the accept queue of the listening socket(s) on `port` (IPv4 and IPv6);
    None when nothing listens there."""
    rows = [q for fam in (socket.AF_INET, socket.AF_INET6) for p, q in _listeners(fam) if p == port]
    return sum(rows) if rows else None


def _round(host: str, port: int, n: int) -> dict[str, Any]:
    socks: list[socket.socket] = []
    polls: list[tuple[float, int]] = []  # (seconds since the first connect, connections in the queue)
    try:
        t0 = time.perf_counter()
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.setblocking(False)
            s.connect_ex((host, port))
            socks.append(s)
        t_connects = time.perf_counter() - t0
        while True:
            q = accept_queue(port)
            now = time.perf_counter() - t0
            if q is None:
                raise MeasurementError(f"accept rate: no listening socket on port {port}")
            polls.append((now, q))
            if q == 0:
                break
            if now > POLL_LIMIT_S:
                return {"failed": f"{q} connections still not accepted after {POLL_LIMIT_S:g} s"}
    finally:
        for s in socks:
            s.close()
    peak = max(q for _, q in polls)
    # the drain: from the last reading at the peak to the first empty one (the broker's wake-up before
    # it, which a loaded host stretches, is apart: start_delay_s)
    i_peak = max(i for i, (_, q) in enumerate(polls) if q == peak)
    t_peak, t_empty = polls[i_peak][0], polls[-1][0]
    out: dict[str, Any] = {
        "connections": n,
        "seconds": t_empty,
        "connect_seconds": t_connects,
        "peak_queue": peak,
        "readings": len(polls),
        "start_delay_s": t_peak,
    }
    if peak >= 2 and t_empty > t_peak:
        out["drain_per_s"] = peak / (t_empty - t_peak)
        # emptied by the next reading: the drain took at most one reading's time, the rate is at least this
        out["within_one_reading"] = len(polls) - i_peak == 2
    return out


def measure_accept_rate(
    port: int, host: str = "127.0.0.1", sizes: tuple[int, int] = (32, 96), rounds: int = 5
) -> dict[str, Any]:
    """The idle broker's accept rate: the median over rounds (bursts of both sizes) of the drain rate,
    the connections at the queue's peak over the time from the last reading at the peak to the first
    empty one. A round emptied by the next reading gives a lower bound (the drain was at most that
    long); `lower_bound` says when most rounds did, so the median is itself one."""
    if not all(1 <= n <= 4096 for n in sizes) or not 1 <= rounds <= 50:
        raise InputError(f"accept rate: sizes {sizes}, rounds {rounds}: give sizes 1..4096 and 1..50 rounds")
    by: dict[int, list[dict[str, Any]]] = {n: [] for n in sizes}
    for _ in range(rounds):
        for n in sizes:
            by[n].append(_round(host, port, n))
            time.sleep(0.05)  # the server closes the reset connections before the next round
    every = [r for rs in by.values() for r in rs]
    drains = [r["drain_per_s"] for r in every if "drain_per_s" in r]
    delays = [r["start_delay_s"] for r in every if "start_delay_s" in r]
    fast = sum(1 for r in every if r.get("within_one_reading"))
    out: dict[str, Any] = {
        "accept_per_s": statistics.median(drains) if drains else None,
        "lower_bound": 2 * fast > len(drains),
        "rounds_within_one_reading": fast,
        "start_delay_s": statistics.median(delays) if delays else None,
        "rounds_with_a_drain": len(drains),
        "peak_queue_max": max((r.get("peak_queue", 0) for r in every), default=0),
        "rounds": {str(n): rs for n, rs in by.items()},
        "rule": "bursts of back-to-back TCP connects (no TLS) into the idle server's accept queue, the queue "
        "read from sock_diag until empty; rate = connections at the peak / (first empty reading - last "
        "reading at the peak), median of the rounds; start_delay_s: the median time until the drain began",
    }
    if not drains:
        out["why_none"] = "no burst reached the queue: the server accepted each as it was connected"
    return out
