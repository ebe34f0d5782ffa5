"""A Design of a pattern -> the numbers its verdict needs: per-message latency (P50, the required
percentile, P99.9, the worst regular message), energy per day split radio / CPU / secure element,
bytes per day, set-ups, signatures and keep-alive pings per day.

Everything is drawn from the what-if: connection set-ups are `model.predict` plans simulated by
`sim.montecarlo`; a message on an established session is a one-exchange flight model on the same
link (same simulator: propagation, jitter, serialisation, loss recovery). The day is counted as
activities (a message, or a batch) separated by the pattern's gaps; docs/explanation/planner.md
states every rule used here.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict, TypeVar

import numpy as np

from ..inputs import se_profiles as SE
from ..inputs.patterns import Pattern
from ..model import costs as C
from ..model import energy as E
from ..model import flights as F
from ..model import network as N
from ..model import predict as P
from ..model.flights.edhoc import oscore_overhead
from ..sim import montecarlo as M
from .design import Design

DAY_S = E.DAY_S
TLS13_ENC = F.TLS13_ENC
DTLS_ENC = F.DTLS_ENC
# application framing on an established session (bytes beyond the payload; estimates from the
# protocols' headers: MQTT 3.1.1 PUBLISH QoS 1 with a 16-byte topic, HTTP/1.1 request/response
# headers of a small REST client, CoAP header + token + options, OpenVPN data channel + inner TCP/IP)
FRAMING = {
    "mqtt": (22 + TLS13_ENC, 4 + TLS13_ENC),
    "https": (150 + TLS13_ENC, 120 + TLS13_ENC),
    "jwt": (F.JWT_REQ + 110 + TLS13_ENC, 120 + TLS13_ENC),
    "coap": (12 + DTLS_ENC, 6 + DTLS_ENC),
    "openvpn": (52 + 41, 52 + 41),
}
PING = {
    "mqtt": (2 + TLS13_ENC, 2 + TLS13_ENC),
    "https": (0, 0),
    "jwt": (0, 0),
    "coap": (4 + DTLS_ENC, 4 + DTLS_ENC),
    "openvpn": (57, 57),
}
PING_WHAT = {
    "mqtt": "MQTT PINGREQ/PINGRESP",
    "https": "TCP keep-alive probe and its ACK",
    "jwt": "TCP keep-alive probe and its ACK",
    "coap": "CoAP ping (empty CON) and RST",
    "openvpn": "OpenVPN ping",
}
# the same framing and pings without security (Design.security False): no TLS/DTLS record expansion,
# no token in the request (JWT: a plain HTTPS-less REST request), no OpenVPN data-channel header (the
# inner TCP/IP headers of a tunnel remain; an OpenVPN ping is its 16-byte magic)
FRAMING_PLAIN = {"mqtt": (22, 4), "https": (150, 120), "jwt": (150, 120), "coap": (12, 6), "openvpn": (52, 52)}
PING_PLAIN = {"mqtt": (2, 2), "https": (0, 0), "jwt": (0, 0), "coap": (4, 4), "openvpn": (16, 16)}
COAP_BLOCK = 1024
KEEPALIVE_NAT_SHARE = 0.9


@dataclass
class Context:
    """What every evaluation of one pattern shares: costs, link, power figures, draws."""

    pattern: Pattern
    table: C.CostTable
    link: N.LinkModel
    radio: E.Radio
    cpu: E.Power
    se: E.Power
    n: int = 20_000
    seed: int = 1
    key_profile: SE.Profile | None = None  # the key's secure-element profile, resolved by the command
    cache: dict[tuple[Any, ...], Draws] = field(default_factory=dict)  # draws per kind of exchange
    # requirements the pattern breaks with no security at all (planner: judged apart, never as a
    # security verdict); checks_of marks them `judged: False`
    broken: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Draws:
    """n simulated values of one kind of exchange, and their means."""

    usable_s: np.ndarray
    on_s: float
    tx_s: float
    rx_s: float
    cpu_s: float
    se_s: float
    bytes: float
    failed: float
    signs: int  # client signatures per occurrence (software or secure element)

    def activity(self, times: float) -> E.Activity:
        return E.Activity(
            on_s=self.on_s * times,
            tx_s=self.tx_s * times,
            rx_s=self.rx_s * times,
            cpu_s=self.cpu_s * times,
            se_s=self.se_s * times,
            bytes=self.bytes * times,
        )


def _draws(ctx: Context, pl: P.Plan, key: tuple[Any, ...], signs: int, n: int | None = None) -> Draws:
    if key in ctx.cache:
        return ctx.cache[key]
    n = n or ctx.n
    r = M.simulate_chunk(pl, np.random.default_rng([ctx.seed, zlib.crc32(repr(key).encode())]), n)
    d = Draws(
        usable_s=r["usable"],
        on_s=float(r["usable"].mean()),
        tx_s=float(np.mean(r["airtime_tx"])),
        rx_s=float(np.mean(r["airtime_rx"])),
        cpu_s=float(r["client_compute"].mean()),
        se_s=float(r["secure_element"].mean()),
        bytes=float((r["bytes_up"] + r["bytes_down"]).mean()),
        failed=float(r["failed"].mean()),
        signs=signs,
    )
    ctx.cache[key] = d
    return d


def setup_scenario(d: Design, handshake: str) -> F.Scenario:
    if d.edhoc:  # EDHOC + OSCORE instead of DTLS: suite 2 (P-256, ES256), the algorithms of an IoT SAFE key
        return F.Scenario(protocol="edhoc", handshake=handshake, group="p-256", key=d.key)
    if d.quic:  # QUIC with TLS 1.3 (model/flights/quic.py), the device's certificate as in the design
        return F.Scenario(
            protocol="quic",
            handshake=handshake,
            key=d.key,
            mtls=d.auth == "mtls",
            precomputed_keyshare=d.precomputed_keyshare,
        )
    if d.dtls13_cid:
        return F.Scenario(protocol="dtls1.3", handshake=handshake, key=d.key)
    return F.Scenario(
        protocol=d.whatif_protocol, handshake=handshake, key=d.key, precomputed_keyshare=d.precomputed_keyshare
    )


def jwt_resumed_plan(ctx: Context, d: Design, fresh: bool) -> P.Plan:
    """A JWT request on a resumed TLS 1.3 session: the what-if has no such scenario, so it is
    composed from two what-if plans on the same link and cost table: the `https` `resumed` plan's
    handshake flights (abbreviated handshake, no certificate, no client signature), with the JWT
    plan's first flight (for a fresh token: the token's signature before connecting, on the secure
    element when the key is there), its request bytes (GET + JWT instead of a plain GET) and its
    response flight (the server verifies the token)."""
    base = plan_of(ctx, F.Scenario(protocol="https", handshake="resumed", key=d.key, mtls=False))
    jwt = plan_of(ctx, F.Scenario(protocol="jwt", handshake="fresh" if fresh else "cached", key=d.key))
    fl = list(base.flights)
    req = fl[-2]
    assert req is not None, "a resumed HTTPS plan ends with its request and its response"
    wire = req.wire_bytes + (F.JWT_REQ - F.HTTP_REQ)
    fl[-2] = replace(
        req,
        name=req.name.replace("GET request", "GET + JWT"),
        wire_bytes=wire,
        packets=max(req.packets, math.ceil(wire / ctx.link.mtu)),
    )
    fl[0], fl[-1] = jwt.flights[0], jwt.flights[-1]
    return replace(
        base,
        flights=tuple(fl),
        se_profile=jwt.se_profile,
        se_calls=jwt.se_calls,
        se_host_us=jwt.se_host_us,
        se_host_source=jwt.se_host_source,
    )


def plan_of(ctx: Context, sc: F.Scenario) -> P.Plan:
    """The flights of `sc` on the context's costs and link; a secure-element key charged from the
    profile the context holds."""
    return P.plan(sc, ctx.table, ctx.link, se=ctx.key_profile if sc.se_profile else None)


def setup_draws(ctx: Context, d: Design, handshake: str) -> Draws:
    key: tuple[Any, ...]
    if not d.security:  # the plain connection set-up (flights.no_security)
        sc = F.no_security(F.Scenario(protocol=d.whatif_protocol))
        key = ("setup", sc)
        if key in ctx.cache:
            return ctx.cache[key]
        return _draws(ctx, plan_of(ctx, sc), key, 0)
    if handshake.startswith("resumed+"):  # JWT on a resumed session (jwt_resumed_plan)
        key = ("setup", d.whatif_protocol, handshake, d.key)
        if key in ctx.cache:
            return ctx.cache[key]
        pl = jwt_resumed_plan(ctx, d, handshake.endswith("fresh"))
    else:
        sc = setup_scenario(d, handshake)
        key = ("setup", sc)
        if key in ctx.cache:
            return ctx.cache[key]
        pl = plan_of(ctx, sc)
    signs = sum(
        1
        for fp in pl.flights
        if fp is not None and fp.sender == "client" and (fp.se or any(op.startswith("sign:") for op, _, _ in fp.ops))
    )
    return _draws(ctx, pl, key, signs)


def _exchange_plan(ctx: Context, d: Design, legs: list[tuple[int, int]], what: str) -> P.Plan:
    """A plan of request/response exchanges on an established session (no handshake work)."""
    proto = d.whatif_protocol
    transport, tr = ("udp", "coap") if proto == "coap" else ("tcp", "tcp")
    sc = setup_scenario(d, F.HANDSHAKES[proto][0])
    ex = tuple(
        F.Exchange(
            F.Flight("client", ((f"{what} (request)", up),)), F.Flight("server", ((f"{what} (answer)", down),)), tr
        )
        for up, down in legs
    )
    model = F.FlightModel(sc, transport, ex, start_mark=("out_start", 0))
    fps = []
    for i, e in enumerate(ex):
        for f in (e.out, e.answer):
            pk, wire = N.packets(f.payload, transport, ctx.link.mtu)
            extra = N.extra_window_rounds(pk) if tr == "tcp" else 0
            fps.append(P.FlightPlan(i, tr, f.sender, f.names(), 0.0, (), False, pk, wire, extra, False))
    return P.Plan(model, ctx.link, tuple(fps), 0.0, (), ctx.table.sigma, ctx.table.sigma, None, (), 0.0, "", None)


def message_draws(ctx: Context, d: Design) -> Draws:
    t = ctx.pattern.traffic
    proto = d.whatif_protocol
    fu, fd = (FRAMING if d.security else FRAMING_PLAIN)[proto]
    if d.edhoc:  # OSCORE's option, inner code and tag instead of a DTLS record (model/flights/edhoc.py)
        ov = oscore_overhead(2)
        fu, fd = FRAMING_PLAIN[proto][0] + ov["request"], FRAMING_PLAIN[proto][1] + ov["response"]
    enc = DTLS_ENC if d.security else 0
    if t.schedule == "bulk" and proto == "coap":
        blocks = max(1, math.ceil(t.payload_down_bytes / COAP_BLOCK))
        legs = [(fu + 4, 4 + 8 + min(COAP_BLOCK, t.payload_down_bytes - i * COAP_BLOCK) + enc) for i in range(blocks)]
        return _draws(
            ctx, _exchange_plan(ctx, d, legs, "CoAP block"), ("msg", proto, "bulk", d.security), 0, n=min(ctx.n, 4000)
        )
    down = t.payload_down_bytes + fd
    if t.schedule == "bulk" and proto in ("https", "jwt", "mqtt") and d.security:
        down += math.ceil(t.payload_down_bytes / 16384) * TLS13_ENC  # one TLS record per 16 KiB
    return _draws(
        ctx,
        _exchange_plan(ctx, d, [(t.payload_up_bytes + fu, down)], "message"),
        ("msg", proto, t.schedule, d.security),
        0,
    )


def ping_draws(ctx: Context, d: Design) -> Draws:
    up, down = (PING if d.security else PING_PLAIN)[d.whatif_protocol]
    return _draws(
        ctx,
        _exchange_plan(ctx, d, [(up, down)], PING_WHAT[d.whatif_protocol]),
        ("ping", d.whatif_protocol, d.security),
        0,
    )


# --- the day -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Day:
    activities: float  # message activities a day (a message, a batch, a transfer)
    per_activity: int  # messages per activity
    gap_s: float  # mean time between activities
    random: bool  # exponential gaps (events) or fixed


T = TypeVar("T")


def _given(v: T | None, what: str) -> T:
    """A traffic field the pattern's schedule needs (inputs/patterns.Traffic checks it is there)."""
    if v is None:
        raise AssertionError(f"traffic.{what} is missing: the pattern was not validated")
    return v


def day_of(p: Pattern) -> Day:
    t = p.traffic
    if t.schedule == "periodic":
        interval = _given(t.interval_s, "interval_s")
        return Day(DAY_S / interval, 1, interval, False)
    if t.schedule == "events":
        events = _given(t.events_per_day, "events_per_day")
        return Day(events, 1, DAY_S / events, True)
    if t.schedule == "batch":
        batches = _given(t.batches_per_day, "batches_per_day")
        return Day(batches, _given(t.messages_per_batch, "messages_per_batch"), DAY_S / batches, False)
    transfers = _given(t.transfers_per_day, "transfers_per_day")
    return Day(transfers, 1, DAY_S / transfers, False)


def _p_beyond(day: Day, x: float | None) -> float:
    """P(gap >= x) for the day's gaps."""
    if x is None:
        return 0.0
    if day.random:
        return math.exp(-x / day.gap_s)
    return 1.0 if day.gap_s >= x else 0.0


def keepalive_interval(p: Pattern) -> float | None:
    c = p.connection
    if c.keepalive_s is not None:
        return c.keepalive_s
    if c.nat_timeout_s is not None:
        return KEEPALIVE_NAT_SHARE * c.nat_timeout_s
    return None


class ConnectionCounts(TypedDict):
    setups_per_activity: float
    resumed_share: float
    pings_per_day: float
    keepalive_s: float | None
    drops_per_activity: float


def connection_counts(p: Pattern, d: Design, day: Day) -> ConnectionCounts:
    """Set-ups per activity, the share of them that can resume, and pings per day."""
    c = p.connection
    k = day.per_activity
    per_message = c.mode == "per-message" and not d.keepalive
    if per_message and not d.pooling:
        between = 1.0
        within = float(k - 1)  # back-to-back reconnections inside a batch
    elif per_message:
        between, within = 1.0, 0.0
    else:
        # a DTLS 1.3 session with connection IDs survives a NAT rebinding (RFC 9146/9147): no NAT limit
        limits = (
            []
            if d.keepalive
            else [
                x
                for x in (c.sleep_s if c.mode == "after-sleep" else None, None if d.dtls13_cid else c.nat_timeout_s)
                if x is not None
            ]
        )
        between = _p_beyond(day, min(limits)) if limits else 0.0
        within = 0.0
    drops = min(c.drops_per_day / day.activities, 1.0 - between) if day.activities else 0.0
    resumable_between = 1.0 - _p_beyond(day, c.ticket_lifetime_s)
    setups = between + within + drops
    resumed = (between * resumable_between + within + drops) / setups if setups else 0.0
    ka = keepalive_interval(p) if d.keepalive else None
    pings = 0.0
    if ka is not None:
        if day.random:
            pings = day.activities / math.expm1(ka / day.gap_s)
        else:
            pings = day.activities * math.floor(day.gap_s / ka)
    return ConnectionCounts(
        setups_per_activity=setups, resumed_share=resumed, pings_per_day=pings, keepalive_s=ka, drops_per_activity=drops
    )


def token_fresh_share(p: Pattern, d: Design, day: Day, setups_per_day: float) -> float:
    """Share of JWT set-ups that sign a new token."""
    if not d.token_cache or setups_per_day <= 0:
        return 1.0
    life = p.stack.jwt_lifetime_s
    beyond = _p_beyond(day, life)
    tokens = day.activities * beyond + (DAY_S / life) * (1.0 - beyond)
    return min(1.0, max(tokens, 1.0) / setups_per_day)


@dataclass
class Outcome:
    design: Design
    numbers: dict[str, Any]
    checks: list[dict[str, Any]]

    @property
    def passes(self) -> bool:
        """Every judged requirement holds (one the pattern breaks without security is not judged)."""
        return all(c["ok"] for c in self.checks if c.get("judged", True))

    def as_dict(self) -> dict[str, Any]:
        return {
            "measures": list(self.design.measures),
            "numbers": self.numbers,
            "checks": self.checks,
            "passes": self.passes,
        }


def evaluate(ctx: Context, d: Design) -> Outcome:
    p = ctx.pattern
    day = day_of(p)
    cc = connection_counts(p, d, day)
    s_act = cc["setups_per_activity"]
    setups_day = s_act * day.activities
    msgs_day = day.activities * day.per_activity
    # the set-up kinds and their shares
    if not d.security:
        mix = [("none", 1.0)]
    elif d.whatif_protocol == "jwt":
        f = token_fresh_share(p, d, day, setups_day)
        r = cc["resumed_share"] if d.resumption else 0.0
        # a token expires after an idle spell, when the session has usually expired too: fresh
        # tokens fall on full set-ups first, then on resumed ones
        full_fresh = min(f, 1.0 - r)
        mix = [
            (d.handshake(False, True), full_fresh),
            (d.handshake(False, False), 1.0 - r - full_fresh),
            (d.handshake(True, True), f - full_fresh),
            (d.handshake(True, False), r - (f - full_fresh)),
        ]
    else:
        r = cc["resumed_share"] if d.resumption else 0.0
        mix = [(d.handshake(True), r), (d.handshake(False), 1.0 - r)]
    mix = [(h, w) for h, w in mix if w > 0] or [(mix[-1][0], 1.0)]
    merged: dict[str, float] = {}
    for h, w in mix:
        merged[h] = merged.get(h, 0.0) + w
    setups = {h: setup_draws(ctx, d, h) for h in merged}
    msg = message_draws(ctx, d)
    # the set-up's own request carries the message for HTTPS, JWT and CoAP (not for a bulk download)
    separate = not (d.whatif_protocol in ("https", "jwt", "coap") and p.traffic.schedule != "bulk")
    onpath = 0.0 if d.preauth else min(1.0, setups_day / msgs_day) if msgs_day else 0.0

    # latency per message: a mixture of messages that pay a set-up and messages on a kept session
    rng = np.random.default_rng(ctx.seed + 7)
    n = ctx.n
    lat = msg.usable_s[rng.integers(0, msg.usable_s.size, n)].copy()
    pays = rng.random(n) < onpath
    m = int(pays.sum())
    setup_lat = np.zeros(0)
    if m:
        kinds = list(merged)
        pick = rng.choice(len(kinds), size=m, p=np.array([merged[h] for h in kinds]) / sum(merged.values()))
        setup_lat = np.empty(m)
        for i, h in enumerate(kinds):
            sel = pick == i
            arr = setups[h].usable_s
            setup_lat[sel] = arr[rng.integers(0, arr.size, int(sel.sum()))]
        lat[pays] = setup_lat + (lat[pays] if separate else 0.0)
    q = p.requirements.latency_percentile
    p50, pq, p999 = (float(v) for v in np.percentile(lat, [50.0, q, 99.9]))
    setup_p50 = float(np.median(np.concatenate([setups[h].usable_s for h in merged]))) + (
        float(np.median(msg.usable_s)) if separate else 0.0
    )
    # a set-up on the request path at least once a day is a regular message too
    worst = max(p999, setup_p50 if onpath > 0 and setups_day >= 1.0 else 0.0)

    # energy per day
    per_setup = {h: setups[h].activity(w) for h, w in merged.items()}
    x_per_act = day.per_activity - (0.0 if separate else min(s_act, day.per_activity))
    parts = [a for a in per_setup.values()]
    act = E.Activity(
        on_s=s_act * sum(a.on_s for a in parts) + x_per_act * msg.on_s,
        tx_s=s_act * sum(a.tx_s for a in parts) + x_per_act * msg.tx_s,
        rx_s=s_act * sum(a.rx_s for a in parts) + x_per_act * msg.rx_s,
        cpu_s=s_act * sum(a.cpu_s for a in parts) + x_per_act * msg.cpu_s,
        se_s=s_act * sum(a.se_s for a in parts) + x_per_act * msg.se_s,
        bytes=s_act * sum(a.bytes for a in parts) + x_per_act * msg.bytes,
    )
    ka = cc["keepalive_s"]
    gap = min(day.gap_s, ka) if ka else day.gap_s
    ea = E.activity_energy(act, ctx.radio, ctx.cpu, ctx.se, gap, day.random and not ka)
    pings = cc["pings_per_day"]
    ping = ping_draws(ctx, d) if pings else None
    ep = E.activity_energy(ping.activity(1.0), ctx.radio, ctx.cpu, ctx.se, ka) if ping else None
    busy = day.activities * ea.radio_s + (pings * ep.radio_s if ep else 0.0)
    reachable = p.traffic.reachable or (d.keepalive and ka is None)
    floor_j = E.floor_energy_j(ctx.radio, min(busy, DAY_S), reachable)
    radio_j = day.activities * ea.radio_j + (pings * ep.radio_j if ep else 0.0) + floor_j
    cpu_j = day.activities * ea.cpu_j + (pings * ep.cpu_j if ep else 0.0)
    se_j = day.activities * ea.se_j
    total = radio_j + cpu_j + se_j
    bytes_day = day.activities * act.bytes + (pings * ping.bytes if ping else 0.0)
    signs_day = setups_day * sum(setups[h].signs * w for h, w in merged.items())
    full_share = sum(w for h, w in merged.items() if h in ("full", "fresh", "resumed+fresh"))
    battery = None
    if p.battery_mah:
        battery = E.battery_days(E.battery_j(p.battery_mah, p.stack.battery_voltage_v), total)
    gave_up = onpath * sum(setups[h].failed * w for h, w in merged.items())
    numbers = {
        "latency_p50_ms": p50 * 1e3,
        "latency_pq_ms": pq * 1e3,
        "latency_percentile": q,
        "latency_p999_ms": p999 * 1e3,
        "worst_regular_ms": worst * 1e3,
        "spread_ms": (worst - p50) * 1e3,
        "setup_p50_ms": setup_p50 * 1e3,
        "setup_on_path_share": onpath,
        "kept_message_p50_ms": float(np.median(msg.usable_s)) * 1e3,
        "messages_per_day": msgs_day,
        "setups_per_day": setups_day,
        "setup_mix": {h: w for h, w in merged.items()},
        "signatures_per_day": signs_day,
        "session_reuse_share": 1.0 - (setups_day * full_share) / msgs_day if msgs_day else 0.0,
        "keepalives_per_day": pings,
        "keepalive_s": ka,
        "energy_per_day_j": total,
        "energy_radio_j": radio_j,
        "energy_radio_floor_j": floor_j,
        "energy_cpu_j": cpu_j,
        "energy_se_j": se_j,
        "energy_per_message_mj": total / msgs_day * 1e3 if msgs_day else 0.0,
        "battery_days": battery,
        "bytes_per_day": bytes_day,
        "auth_gave_up_share": gave_up,
        "se_sign_mean_ms": (
            sum(setups[h].se_s * w for h, w in merged.items())
            / max(1e-12, sum(w for h, w in merged.items() if setups[h].se_s > 0))
        )
        * 1e3,
    }
    return Outcome(d, numbers, checks_of(p, numbers, ctx.broken))


def checks_of(p: Pattern, x: dict[str, Any], broken: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """The pattern's requirements against the numbers (what the verdict rule reads). A requirement
    in `broken` fails without any security (the planner's plain reference): it is kept, with its
    value, but marked `judged: False` — the security verdict does not read it (Outcome.passes)."""
    q = p.requirements.latency_percentile
    out = [
        {
            "check": "latency",
            "what": f"P{q:g} latency",
            "value": x["latency_pq_ms"],
            "limit": p.latency_s * 1e3,
            "unit": "ms",
            "ok": x["latency_pq_ms"] <= p.latency_s * 1e3,
        }
    ]
    if p.determinism_s is not None:
        out.append(
            {
                "check": "determinism",
                "what": "worst regular message - P50",
                "value": x["spread_ms"],
                "limit": p.determinism_s * 1e3,
                "unit": "ms",
                "ok": x["spread_ms"] <= p.determinism_s * 1e3,
            }
        )
    if p.energy_budget_j is not None:
        out.append(
            {
                "check": "energy",
                "what": "energy per day",
                "value": x["energy_per_day_j"],
                "limit": p.energy_budget_j,
                "unit": "J",
                "ok": x["energy_per_day_j"] <= p.energy_budget_j,
            }
        )
    for c in out:
        c["judged"] = c["check"] not in broken
    return out
