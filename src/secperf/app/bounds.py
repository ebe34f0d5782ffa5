"""Bounded runs: a measuring command of connections estimates how long it will take from the link (delay,
jitter, rate, loss), the protocol's round trips and retransmission timers, --n and --warmup, BEFORE it
starts; shows the estimate, records it in the Result's parameters, and refuses (exit 2, naming the estimate
and --max-hours) a run over the limit.

Decisions. The estimate is a planning figure, not a prediction: per connection, the protocol's round trips
at the link's worst-case round trip (2 x (delay + 3 jitter) per direction pair), its flight bytes through
the rate, and for loss the expected retransmissions, each costing the protocol's first retransmission timer
(TCP's initial RTO 1 s, DTLS 1 s, QUIC's initial PTO about 1 s, CoAP's ACK_TIMEOUT 2 s, at least 3 round
trips), doubled per repeated loss (a loss of 45 % or more is costed at 60 s a flight). The
limit is --max-hours when given, else DEFAULT_HOURS (10 minutes: a connection measurement that plans more
on its defaults is a typing slip, `--network delay=60s`, not an experiment); --max-hours raises it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError

if TYPE_CHECKING:
    from ..inputs.netspec import NetSpec

DEFAULT_HOURS = 10 / 60

# protocol -> (round trips of a full connection, bytes on the wire (both ways), first retransmission timer s,
#              flights that can be lost)
PROFILE = {
    "https": (3, 6000, 1.0, 5), "mqtt": (3, 5000, 1.0, 5), "vpn": (4, 9000, 1.0, 7),
    "coap": (4, 5000, 2.0, 7), "dtls12": (3, 5000, 1.0, 6), "dtls13": (3, 5000, 1.0, 5),
    "quic": (2, 5000, 1.0, 4), "edhoc": (2, 1000, 2.0, 4),
    "tls": (2, 5000, 1.0, 4), "dtls": (3, 5000, 1.0, 6),
}


def link_rtt_s(spec: NetSpec | None) -> float:
    """Worst-case round trip of a link (NetSpec): both delays plus three jitters each way."""
    if spec is None or getattr(spec, "loopback", False):
        return 0.001
    up, down = spec.up, spec.down
    return (up.delay_ms + down.delay_ms + 3 * (up.jitter_ms + down.jitter_ms)) / 1000 + 0.001


def connection_s(protocol: str, spec: NetSpec | None) -> float:
    """Planning time of one connection of `protocol` over `spec` (a NetSpec or None: loopback)."""
    rtts, nbytes, timer, flights = PROFILE.get(protocol, PROFILE["tls"])
    rtt = link_rtt_s(spec)
    t = rtts * rtt + 0.05   # + the endpoints' own work, generously
    if spec is not None and not getattr(spec, "loopback", False):
        rate = min((d.rate_bps for d in (spec.up, spec.down) if d.rate_bps), default=0)
        if rate:
            t += nbytes * 8 / rate
        p = spec.loss
        if p > 0:   # each loss doubles the timer: sum over k of p^k x timer x 2^(k-1) = timer x p / (1 - 2p)
            per_flight = (max(timer, 3 * rtt) * p / (1 - 2 * p)) if p < 0.45 else 60.0
            t += flights * per_flight
    return t


def estimate_s(rows: list[tuple[str, NetSpec | None]], per_row: int) -> float:
    """`rows`: (protocol, NetSpec) of each series; `per_row`: connections each makes (warmup + n)."""
    return sum(connection_s(p, spec) for p, spec in rows) * per_row


def limit_hours(max_hours: float | None) -> float:
    return DEFAULT_HOURS if max_hours is None else max_hours


def check(what: str, rows: list[tuple[str, NetSpec | None]], per_row: int, max_hours: float | None,
          extra_s: float = 0.0) -> dict[str, float]:
    """Refuse a run whose estimate (plus `extra_s`, other rows of the same run) is over the limit; else the
    parameters that record it. The estimate is also said on the reporter (stderr)."""
    from .reporter import reporter
    est = estimate_s(rows, per_row) + extra_s
    lim = limit_hours(max_hours)
    if est > lim * 3600:
        worst = max(rows, key=lambda r: connection_s(r[0], r[1]))
        raise InputError(f"{what}: this run is estimated at {_fmt(est)} ({len(rows)} series x {per_row} connections; "
                         f"the slowest, {worst[0]} over {getattr(worst[1], 'name', 'loopback')}, about "
                         f"{_fmt(connection_s(*worst))} each), over the limit of {_fmt(lim * 3600)}: lower --n, "
                         f"--warmup or the link's delay, or raise the limit with --max-hours")
    if est > 60:
        reporter().note(f"secperf: this run is estimated at {_fmt(est)} (limit {_fmt(lim * 3600)}, --max-hours)")
    return {"estimate_s": round(est, 3), "max_hours": lim}


def rows_of(configs: Iterable[Any], nets: Iterable[NetSpec],
            protocol_of: Callable[[Any], str] = lambda c: c.protocol) -> list[tuple[str, NetSpec | None]]:
    """(protocol, NetSpec) of each config with a `network` name among `nets` (NetSpecs)."""
    by_name: dict[str | None, NetSpec] = {n.name: n for n in nets}
    return [(protocol_of(c), by_name.get(getattr(c, "network", None))) for c in configs]


def _fmt(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"
