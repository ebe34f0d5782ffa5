"""Bounded runs: a measuring command of connections estimates how long it will take from the link (delay,
jitter, rate, loss), the protocol's round trips and retransmission timers, --n and --warmup, BEFORE it
starts; shows the estimate, records it in the Result's parameters, and refuses (exit 2, naming the estimate
and --max-hours) a run over the limit.

Decisions. The estimate is a planning figure, not a prediction: per connection, the protocol's round trips
at the link's worst-case round trip (2 x (delay + 3 jitter) per direction pair), its flight bytes through
the rate, and for loss the expected retransmissions, each costing the protocol's first retransmission timer
(TCP's initial RTO 1 s, DTLS 1 s, QUIC's initial PTO about 1 s, CoAP's ACK_TIMEOUT 2 s, at least 3 round
trips), doubled per repeated loss (a loss of 45 % or more is costed at 60 s a flight). The
limit is --max-hours when given, else DEFAULT_HOURS (one hour: the longest documented example, `crypto
--library all --strength 128`, plans 28 minutes and a sweep of four protocols over rtt-sweep 18; a run that
plans hours is a typing slip, `--network delay=60s`, not an experiment); --max-hours raises it. Every other
measuring command is held to the same limit by check_estimate, each with its own planning figures below."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError
from ..measure.link_counts import link_timeout_ms
from .reporter import reporter

if TYPE_CHECKING:
    from ..inputs.netspec import NetSpec
    from ..inputs.se_profiles import Profile as SEProfile

DEFAULT_HOURS = 1.0

# protocol -> (round trips of a full connection, bytes on the wire (both ways), first retransmission timer s,
#              flights that can be lost)
PROFILE = {
    "https": (3, 6000, 1.0, 5),
    "mqtt": (3, 5000, 1.0, 5),
    "vpn": (4, 9000, 1.0, 7),
    "coap": (4, 5000, 2.0, 7),
    "dtls12": (3, 5000, 1.0, 6),
    "dtls13": (3, 5000, 1.0, 5),
    "quic": (2, 5000, 1.0, 4),
    "edhoc": (2, 1000, 2.0, 4),
    "tls": (2, 5000, 1.0, 4),
    "dtls": (3, 5000, 1.0, 6),
}

DATAGRAM = {"coap", "dtls12", "dtls13", "quic", "edhoc", "dtls"}  # retransmitted by the protocol's own timer
STUCK_RTT_TIMERS = 8  # a round trip over 8 first timers (three doublings) outlasts the resends
DEFAULT_TIMEOUT_MS = 5000  # connect's --timeout-ms default


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
    t = rtts * rtt + 0.05  # + the endpoints' own work, generously
    if spec is not None and not getattr(spec, "loopback", False):
        rate = min((d.rate_bps for d in (spec.up, spec.down) if d.rate_bps), default=0)
        if rate:
            t += nbytes * 8 / rate
        p = spec.loss
        if p > 0:  # each loss doubles the timer: sum over k of p^k x timer x 2^(k-1) = timer x p / (1 - 2p)
            per_flight = (max(timer, 3 * rtt) * p / (1 - 2 * p)) if p < 0.45 else 60.0
            t += flights * per_flight
        if protocol in DATAGRAM and (spec.up.delay_ms + spec.down.delay_ms) / 1000 > STUCK_RTT_TIMERS * timer:
            # both sides resend every flight several times before its answer can come: such a handshake runs on
            # until its timeout (the measurers' own, measure/link_counts.link_timeout_ms), the planning figure then

            t = max(t, link_timeout_ms(DEFAULT_TIMEOUT_MS, spec) / 1000)
    return t


def estimate_s(rows: list[tuple[str, NetSpec | None]], per_row: int) -> float:
    """`rows`: (protocol, NetSpec) of each series; `per_row`: connections each makes (warmup + n)."""
    return sum(connection_s(p, spec) for p, spec in rows) * per_row


def limit_hours(max_hours: float | None) -> float:
    return DEFAULT_HOURS if max_hours is None else max_hours


def check(
    what: str,
    rows: list[tuple[str, NetSpec | None]],
    per_row: int,
    max_hours: float | None,
    extra_s: float = 0.0,
    lower: str = "lower --n, --warmup or the link's delay",
) -> dict[str, float]:
    """Refuse a run of connections whose estimate (plus `extra_s`, other rows of the same run) is over the
    limit; else the parameters that record it. The estimate is also said on the reporter (stderr)."""
    est = estimate_s(rows, per_row) + extra_s
    if not rows:
        return check_estimate(what, est, "other rows", lower, max_hours)
    worst = max(rows, key=lambda r: connection_s(r[0], r[1]))
    return check_estimate(
        what,
        est,
        f"{len(rows)} series x {per_row} connections; the slowest, {worst[0]} over "
        f"{getattr(worst[1], 'name', 'loopback')}, about {_fmt(connection_s(*worst))} each",
        lower,
        max_hours,
    )


def check_estimate(
    what: str, est_s: float, detail: str, lower: str, max_hours: float | None, default_hours: float = DEFAULT_HOURS
) -> dict[str, float]:
    """The one refusal of every measuring command: `est_s` (what `detail` says it is made of) over the limit
    (--max-hours, else `default_hours`) is an input error naming the estimate, what to lower (`lower`) and
    --max-hours; else the parameters that record it ({"estimate_s", "max_hours"}), said when over a minute."""

    lim = default_hours if max_hours is None else max_hours
    if est_s > lim * 3600:
        raise InputError(
            f"{what}: this run is estimated at {_fmt(est_s)} ({detail}), over the limit of "
            f"{_fmt(lim * 3600)}: {lower}, or raise the limit with --max-hours"
        )
    if est_s > 60:
        reporter().note(f"secperf: this run is estimated at {_fmt(est_s)} (limit {_fmt(lim * 3600)}, --max-hours)")
    return {"estimate_s": round(est_s, 3), "max_hours": lim}


def rows_of(
    configs: Iterable[Any], nets: Iterable[NetSpec], protocol_of: Callable[[Any], str] = lambda c: c.protocol
) -> list[tuple[str, NetSpec | None]]:
    """(protocol, NetSpec) of each config with a `network` name among `nets` (NetSpecs)."""
    by_name: dict[str | None, NetSpec] = {n.name: n for n in nets}
    return [(protocol_of(c), by_name.get(getattr(c, "network", None))) for c in configs]


def fmt_s(s: float) -> str:
    """A planning time as the refusals say it: 45 s, 12 min, 2.0 h."""
    return _fmt(s)


def _fmt(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


# --- every other measuring command: the same refusal (check_estimate), each its own planning figure ---------

# planning figures of the emulated device (qemu-arm with the counting plugin, CPU s on a 2-core host; the
# timing model about doubles them: benchmarks/device_timing_cost.py measured 0.71 s for three TLS 1.3
# handshakes and 0.21 s for three primitives x 3, timing on): a guest process's start and translation, one
# handshake, one primitive operation, each rounded up
DEVICE_ROW_S = 1.5
DEVICE_HANDSHAKE_S = 0.5
DEVICE_OP_S = 0.2
DEVICE_OPS_PER_STACK = 20  # `device crypto` without --op: about what a stack counts
# one operation's own time when it is longer than a sample (--min-sample-us): key generation of RSA,
# anything of the JVM's or Go's first call; else an operation is batched up to the sample length
SLOW_OP_S = {"keygen": 0.5}
SAMPLE_OVERHEAD_S = 0.001
JVM_ROW_S = 8.0  # a JMH row: forked JVMs starting and warming their JIT
SERVER_START_S = 3.0  # a server (nginx, the probe, mosquitto) started, checked and stopped


def crypto_rows_s(rows: Iterable[Any], n: int, warmup: int, duration_s: float, min_sample_us: float) -> float:
    """`crypto`/`mac` rows: each the least of --duration and (--n + --warmup) samples of at least
    --min-sample-us (or one operation when that is longer), never less than one sample."""
    total = 0.0
    for r in rows:
        op = SLOW_OP_S.get(r.op, 0.0) if getattr(r.alg, "family", "") == "rsa" else 0.0
        # a sample overshoots --min-sample-us by up to a batch, plus the harness's own work per sample (measured
        # here: ecdsa-p256 sign, 1 ms samples, about 3 ms each)
        sample = max(2 * min_sample_us / 1e6 + SAMPLE_OVERHEAD_S, op)
        row = max(min(duration_s, (n + warmup) * sample), sample) + 0.02
        if getattr(r, "library", None) in ("jce", "bouncycastle"):
            row += JVM_ROW_S
        total += row
    return total


def se_sign_s(profile: SEProfile) -> float:
    """One signature's wait on a secure-element profile (its C_SignInit + C_Sign means), in s: the
    profile the command resolved."""
    return sum((d.mean() if (d := profile.dist(fn)) else 0.0) for fn in ("C_SignInit", "C_Sign")) / 1000


def device_handshakes_s(rows: int, n: int, warmup: int) -> float:
    """`device handshake`: every configuration's guest process and its warm-up + n handshakes."""
    return rows * (DEVICE_ROW_S + (n + warmup + 1) * DEVICE_HANDSHAKE_S)


def device_ops_s(rows: int, ops: int | None, n: int) -> float:
    """`device crypto` (and user code): per stack and build, per operation, n runs under the emulator."""
    return rows * (DEVICE_ROW_S + (ops or DEVICE_OPS_PER_STACK) * n * DEVICE_OP_S)


def server_levels_s(configs: int, levels: int, duration_s: float, warmup_s: float) -> float:
    """`server`: each configuration's server started, then each load level's warm-up and counted time."""
    return configs * (SERVER_START_S + levels * (duration_s + warmup_s + 0.5))


def mqtt_load_s(
    clients: int,
    connect_rate: float,
    hold_s: float,
    capacity_s: float,
    storm: bool,
    storm_max_s: float,
    spread_s: float,
) -> float:
    """`mqtt-load`: capacity runs before and after, the ramp at --connect-rate, the hold, and the storm
    (its spread plus the clients at a slow broker's 100/s, at most --storm-max)."""
    t = SERVER_START_S + 2 * capacity_s + clients / max(connect_rate, 1e-9) + hold_s
    if storm:
        t += min(storm_max_s, spread_s + clients / 100 + 30)
    return t


# what every command of the parser does about its length: "estimate" (app code calls check_estimate or
# check before any work), or why it needs none. tests/test_bounds_commands.py walks the parser and holds
# each command to this table.
COMMANDS: dict[str, str] = {
    "run": "estimate",
    "crypto": "estimate",
    "handshake": "estimate",
    "signer": "estimate",
    "jwt": "estimate",
    "connect": "estimate",
    "mac": "estimate",
    "server": "estimate",
    "fleet": "estimate",
    "mqtt-load": "estimate",
    "plan": "estimate",
    "device handshake": "estimate",
    "device crypto": "estimate",
    "whatif": "bounded by --max-cells and --max-hours (computed, not measured)",
    "can": "a model computed at once: no measurement",
    "report": "reads a Result",
    "compare": "reads Results",
    "metrics": "reads a Result",
    "schema": "prints a schema",
    "clean": "housekeeping of result directories: no measurement",
    "netem list": "a listing: no measurement",
    "netem check": "checks the host once (a relay start, bounded by its own timeout)",
    "netem sweep": "deletes leftover namespaces: no measurement",
    "netem run": "runs the user's own command for as long as it runs: its length is the user's",
    "device calibrate": "fits a board log already measured: no emulator run",
    "device list": "a listing: no measurement",
    "device show": "a listing: no measurement",
    "device build": "builds the guest libraries (bounded by the build's own timeouts); measures nothing",
}
