"""How fast a server secperf did not start (a `--target`) takes connections, measured from outside it:
a lower bound on `fleet`'s accept_per_s (its model otherwise assumes 20,000/s).

A remote server's accept queue cannot be read from here (sock_diag answers for this host's own
sockets only; measure/accept_rate.py reads it for the mosquitto secperf starts). So the probe times
what it can see:

- bursts of `n` TCP connects are made back to back (the sockets made beforehand); each connection
  sends, as soon as its connect completes, one TLS record the server cannot parse (a ClientHello
  record whose handshake body is empty): the server must accept the connection and read the record
  before it can answer, and it answers at once (a TLS alert, or it closes) without any key exchange
  or signature;
- a connection counts as accepted when its answer arrives: the kernel's receive timestamp of the
  alert (SO_TIMESTAMPNS), or for a server that closes without one, when this process saw the close;
- a round's rate is (n - 1) / (last answer - first answer): the pace at which the server got through
  the burst once it started on it. Each answer costs the server an accept plus the read of one record
  and an alert, and a slower probe or path only spreads the answers, so the rate is a lower bound on
  the accept rate. The wait before the first answer (the server's wake-up, the round trip) is apart
  (`first_answer_s`), as in accept_rate.py. The figure: the median of the rounds.

Bounded: at most `rounds` x `sizes` connections, each round `round_timeout_s`, all within `budget_s`.
A refused connect is an InputError naming the target (the TLS probe before it got in, so something
refuses a burst: a connection limit or a firewall); give [server].accept_per_s in a --system file
instead of the probe. Every connection is reset (SO_LINGER 0) at the round's end."""

from __future__ import annotations

import errno
import selectors
import socket
import statistics
import struct
import time
from typing import Any

from ..core.errors import InputError

SIZES = (16, 48)  # below any common listen backlog (mosquitto 100, nginx 511, somaxconn >= 128)
ROUNDS = 3
ROUND_TIMEOUT_S = 2.0
BUDGET_S = 10.0
# a TLS handshake record (type 22, version 3.1, 4 bytes) holding a ClientHello (type 1) of length 0
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux; Python does not name it
BAD_HELLO = bytes([22, 3, 1, 0, 4, 1, 0, 0, 0])
RULE = (
    "bursts of back-to-back TCP connects to the target, each sending one TLS record it cannot parse as "
    "soon as its connect completes; accepted = its answer's arrival (the kernel's receive timestamp of "
    "the alert, or the close seen); a round's rate = (connections - 1) / (last answer - first answer), "
    "the median of the rounds: a lower bound (the target's accept queue cannot be read from here, and "
    "each answer costs it an accept plus one record read and an alert); first_answer_s: the wait "
    "before the first answer (wake-up and round trip), apart"
)


def _family(addr: str, port: int) -> tuple[int, Any]:
    try:
        info = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise InputError(f"--target {addr}:{port}: the accept-rate probe cannot resolve it ({exc})") from None
    fam, _, _, _, sa = info[0]
    return fam, sa


def _answer_ns(s: socket.socket, seen_ns: int) -> int | None:
    """When the socket's answer arrived: the kernel's timestamp of its first bytes, or `seen_ns` for a
    close or reset without any; None when nothing is there yet."""
    try:
        data, anc, _, _ = s.recvmsg(64, 64)
    except BlockingIOError:
        return None
    except OSError:
        return seen_ns  # reset: the server had the connection
    for level, kind, raw in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(raw) >= 16:
            sec, nsec = struct.unpack_from("qq", raw)
            return int(sec) * 1_000_000_000 + int(nsec)
    return seen_ns  # closed, or bytes without a timestamp


def _round(fam: int, sa: Any, n: int, timeout_s: float) -> dict[str, Any]:
    socks = []
    for _ in range(n):
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        s.setblocking(False)
        socks.append(s)
    sel = selectors.DefaultSelector()
    answered: list[int] = []  # CLOCK_REALTIME ns
    refused = 0
    other: dict[str, int] = {}

    def error(code: int) -> None:
        nonlocal refused
        if code == errno.ECONNREFUSED:
            refused += 1
        else:
            name = errno.errorcode.get(code, str(code))
            other[name] = other.get(name, 0) + 1

    try:
        t0_ns, t0 = time.time_ns(), time.perf_counter()
        for i, s in enumerate(socks):
            rc = s.connect_ex(sa)
            if rc == 0:  # on loopback the handshake completes inside connect(): send at once
                s.send(BAD_HELLO)
                sel.register(s, selectors.EVENT_READ, i)
            elif rc in (errno.EINPROGRESS, errno.EAGAIN):
                sel.register(s, selectors.EVENT_WRITE, i)
            else:
                error(rc)
        client_s = time.perf_counter() - t0
        waiting = len(sel.get_map())
        while waiting:
            left = timeout_s - (time.perf_counter() - t0)
            if left <= 0:
                break
            for key, _ in sel.select(left):
                s = socks[key.data]  # the key's data: the socket's index
                if key.events == selectors.EVENT_WRITE:  # the connect completed (or failed)
                    err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        sel.unregister(s)
                        waiting -= 1
                        error(err)
                        continue
                    try:
                        s.send(BAD_HELLO)
                    except OSError:
                        pass  # reset already: the read sees it as the answer
                    sel.modify(s, selectors.EVENT_READ, key.data)
                    continue
                at = _answer_ns(s, time.time_ns())
                if at is None:
                    continue
                answered.append(at - t0_ns)
                sel.unregister(s)
                waiting -= 1
        timed_out = waiting
    finally:
        sel.close()
        for s in socks:
            s.close()
    out: dict[str, Any] = {
        "connections": n,
        "answered": len(answered),
        "refused": refused,
        "no_answer": timed_out,
        "client_s": client_s,
    }
    if other:
        out["errors"] = other
    if answered:
        out["first_answer_s"], out["last_answer_s"] = min(answered) / 1e9, max(answered) / 1e9
    if len(answered) == n and n >= 2 and max(answered) > min(answered):
        out["rate_per_s"] = (n - 1) / ((max(answered) - min(answered)) / 1e9)
    elif timed_out:
        out["failed"] = f"{timed_out} of {n} connections had no answer within {timeout_s:g} s"
    elif len(answered) < n:
        out["failed"] = f"{n - len(answered)} of {n} connections did not get in"
    else:
        out["failed"] = "every answer arrived at the same instant: no span to time"
    return out


def probe_accept_rate(
    addr: str,
    port: int,
    name: str,
    sizes: tuple[int, ...] = SIZES,
    rounds: int = ROUNDS,
    round_timeout_s: float = ROUND_TIMEOUT_S,
    budget_s: float = BUDGET_S,
    backlog: int | None = None,
) -> dict[str, Any]:
    """The target's accept rate as a lower bound (see the module's rule), or why there is none.
    `backlog`: the target's listen backlog when known ([server].backlog): bursts stay below it.
    A refused connect: InputError naming the target (`name`)."""
    if not sizes or not all(1 <= n <= 1024 for n in sizes) or not 1 <= rounds <= 20:
        raise InputError(f"accept-rate probe: sizes {sizes}, rounds {rounds}: give sizes 1..1024 and 1..20 rounds")
    if not 0 < round_timeout_s <= 30 or not 0 < budget_s <= 120:
        raise InputError(f"accept-rate probe: round time-out {round_timeout_s} s, budget {budget_s} s: too long")
    if backlog is not None:
        sizes = tuple(sorted({max(2, min(n, backlog)) for n in sizes}))
    fam, sa = _family(addr, port)
    by: dict[str, list[dict[str, Any]]] = {str(n): [] for n in sizes}
    t0 = time.monotonic()
    stopped = "done"
    for _ in range(rounds):
        for n in sizes:
            if time.monotonic() - t0 > budget_s:
                stopped = f"budget of {budget_s:g} s spent"
                break
            r = _round(fam, sa, n, round_timeout_s)
            by[str(n)].append(r)
            if r["refused"]:
                raise InputError(
                    f"--target {name}: refused {r['refused']} of {n} connections of the accept-rate probe "
                    f"(a burst of connects after the TLS probe got in): a connection limit or a firewall; "
                    f"give its accept rate as [server].accept_per_s in a --system file instead"
                )
            time.sleep(0.05)  # the server closes the reset connections before the next burst
        else:
            continue
        break
    every = [r for rs in by.values() for r in rs]
    rates = [r["rate_per_s"] for r in every if "rate_per_s" in r]
    waits = [r["first_answer_s"] for r in every if "first_answer_s" in r]
    out: dict[str, Any] = {
        "accept_per_s": statistics.median(rates) if rates else None,
        "lower_bound": True,
        "why_lower_bound": "the target's accept queue cannot be read from here: the answers to a burst are timed",
        "rounds_with_a_rate": len(rates),
        "best_round_per_s": max(rates) if rates else None,
        "first_answer_s": statistics.median(waits) if waits else None,
        "connections": sum(r["connections"] for r in every),
        "rounds": by,
        "stopped": stopped,
        "seconds": time.monotonic() - t0,
        "rule": RULE,
    }
    if not rates:
        out["why_none"] = "; ".join(sorted({r["failed"] for r in every if "failed" in r})) or "no round ran"
    return out
