"""How fast an idle server takes connections off its accept queue (`fleet`'s model: accept_per_s, until
now assumed 20,000/s). Measured on a server secperf started here, on loopback, before any load:

- `n` (below the listen backlog) non-blocking TCP connects are made back to back; on loopback the
  kernel completes each three-way handshake inside connect(), so each connection is in the server's
  accept queue as soon as its connect returns;
- the listening socket's accept queue length (/proc/net/tcp, the LISTEN row's rx_queue: connections
  the server has not accepted) is read until it is empty;
- rate = n / (queue empty - first connect). The connects themselves take part of that time, so when
  the queue was never seen above 1 the server kept up with the connects and the figure is a lower
  bound (`lower_bound`: true).

The connections carry no TLS: the server accepts them and waits for a ClientHello that never comes;
they are reset (SO_LINGER 0) after each round. The median of the rounds is the figure."""

from __future__ import annotations

import socket
import statistics
import struct
import time
from typing import Any

from ..core.errors import InputError, MeasurementError

POLL_LIMIT_S = 2.0  # a round whose queue does not empty within this is a failed round


def accept_queue(port: int) -> int | None:
    """Connections waiting in the accept queue of the listening socket(s) on `port` (IPv4 and IPv6)."""
    want = f"{port:04X}"
    total, seen = 0, False
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path, encoding="ascii") as f:
                next(f, None)
                for line in f:
                    p = line.split()
                    if len(p) > 4 and p[3] == "0A" and p[1].rsplit(":", 1)[-1] == want:
                        total += int(p[4].split(":")[1], 16)
                        seen = True
        except OSError:
            continue
    return total if seen else None


def _round(host: str, port: int, n: int) -> dict[str, Any]:
    socks: list[socket.socket] = []
    peak = 0
    try:
        t0 = time.perf_counter()
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.setblocking(False)
            s.connect_ex((host, port))
            socks.append(s)
        t_connects = time.perf_counter()
        while True:
            q = accept_queue(port)
            now = time.perf_counter()
            if q is None:
                raise MeasurementError(f"accept rate: no listening socket on port {port}")
            peak = max(peak, q)
            if q == 0:
                break
            if now - t0 > POLL_LIMIT_S:
                return {"failed": f"{q} connections still not accepted after {POLL_LIMIT_S:g} s"}
        return {
            "connections": n,
            "seconds": now - t0,
            "connect_seconds": t_connects - t0,
            "peak_queue": peak,
            "per_s": n / (now - t0),
            "lower_bound": peak <= 1,
        }
    finally:
        for s in socks:
            s.close()


def measure_accept_rate(
    port: int, host: str = "127.0.0.1", sizes: tuple[int, int] = (16, 96), rounds: int = 5
) -> dict[str, Any]:
    """The idle server's accept rate: rounds of two burst sizes, the median time to empty the queue of
    each; the rate is the slope between them (extra connections / extra time) and the intercept the
    delay before the server starts accepting (its wake-up on a busy host, which a single burst size
    would fold into the rate). None (with why) when the larger burst did not take longer."""
    small, large = sizes
    if not 1 <= small < large <= 4096 or not 1 <= rounds <= 50:
        raise InputError(
            f"accept rate: sizes {sizes}, rounds {rounds}: give 1 <= small < large <= 4096 and 1..50 rounds"
        )
    by: dict[int, list[dict[str, Any]]] = {small: [], large: []}
    for _ in range(rounds):
        for n in (small, large):
            by[n].append(_round(host, port, n))
            time.sleep(0.05)  # the server closes the reset connections before the next round
    med = {}
    for n, rs in by.items():
        ok = [r["seconds"] for r in rs if "seconds" in r]
        med[n] = statistics.median(ok) if ok else None
    out: dict[str, Any] = {
        "accept_per_s": None,
        "start_delay_s": None,
        "median_seconds": {str(n): v for n, v in med.items()},
        "peak_queue_max": max((r.get("peak_queue", 0) for rs in by.values() for r in rs), default=0),
        "rounds": {str(n): rs for n, rs in by.items()},
        "rule": "bursts of back-to-back TCP connects (no TLS) into the idle server's accept queue, the queue "
        "read from /proc/net/tcp until empty; rate = (large - small) / (median time of large - of small)",
    }
    a, b = med[small], med[large]
    if a is None or b is None:
        out["why_none"] = "a burst size had no round whose queue emptied"
    elif b <= a:
        out["why_none"] = "the larger burst did not take longer: the accepts are below this method's resolution"
    else:
        rate = (large - small) / (b - a)
        out["accept_per_s"] = rate
        out["start_delay_s"] = max(0.0, a - small / rate)
    return out
