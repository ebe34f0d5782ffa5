"""From a scenario, a cost table and a link to the numbers the simulator draws from: per flight the
sender's compute (median µs, from named operations plus the fitted per-handshake residual), its
packets and wire bytes, and the secure element's calls. Pure and deterministic; the Monte Carlo
in secperf.sim draws around these.

Calibration rule: a loopback row of the same protocol and handshake (a `secperf handshake` or
`secperf connect` row) fixes the residual `base:` cost of each party as measured − named operations
of that row's own configuration (its group, certificate, depth), inside the row's own timer window.
A what-if that changes the group, certificate or key then changes only the named operations.

No security (Scenario.security == "none", flights.PLAIN): the flights carry no operation, so both
parties' compute is 0 — the application's own work (parsing a 30-byte CONNECT, building an HTTP
response) is not charged. Why zero and not a small figure: the loopback rows measure a party's whole
handshake and application step as one residual (`base:`), which cannot be split into TLS and
application work, and the application step of these tiny messages is microseconds next to the
milliseconds of the handshake. So "security adds X" is slightly overstated by that application work
(it sits in the secured row's residual), never understated. No residual is fitted, no secure element
is called, and the plan carries no calibration row.

End points (`until`): "response" (the default) stops the clock when the protocol's answer is
processed (HTTP response, CONNACK, CoAP ACK, PUSH_REPLY + tun set-up); "handshake" stops it when the
client's handshake completes — the flight marked `handshake_done` is built (its compute done,
nothing of it sent): TLS 1.3 after the client's Finished, TLS 1.2/DTLS 1.2 after the server's
Finished is verified, OpenVPN after the control channel's key exchange. Both start at the client's
first packet, so TCP connect is inside, as in `openssl s_time`; the probe's own window (`secperf
handshake`: TCP connected -> handshake complete) is the simulator's `handshake` figure either way.
Flights after the end point, their bytes and their loss recovery are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..core.errors import InternalError
from ..inputs import se_profiles as SE
from . import flights as F
from . import network as N
from .costs import CostTable, scenario_key
from .figure import Figure

SE_WARM_CALLS = SE.SIGN_ONLY_CALLS
SE_COLD_CALLS = SE.TOTAL_CALLS
UNTIL = {
    "response": "the first application response processed (HTTP response, CONNACK, CoAP ACK, PUSH_REPLY + tun set-up)",
    "handshake": "the client's handshake complete (its Finished built; TLS 1.2/DTLS: the server's Finished "
    "verified; OpenVPN: the control channel's key exchange done), as `secperf handshake` and "
    "`openssl s_time` stop",
}


class EndPointError(F.ModelError):
    pass


def check_until(until: str, opt: str = "--until") -> str:
    if until not in UNTIL:
        raise EndPointError(f"{opt}: {until!r} is not an end point; known: {', '.join(UNTIL)}")
    return until


@dataclass(frozen=True)
class FlightPlan:
    exchange: int
    transport: str  # the exchange's transport
    sender: str
    name: str
    compute_us: float  # sender's median compute before sending
    ops: tuple[tuple[str, float, str], ...]  # (op, µs, source)
    se: bool
    packets: int
    wire_bytes: int
    extra_rounds: int  # slow-start rounds beyond the initial window
    handshake_done: bool
    retry_packets: int = 0  # a resent DTLS flight (0: as the first send)
    retry_wire_bytes: int = 0

    @property
    def resend_packets(self) -> int:
        return self.retry_packets or self.packets

    @property
    def resend_wire_bytes(self) -> int:
        return self.retry_wire_bytes or self.wire_bytes


@dataclass(frozen=True)
class Plan:
    model: F.FlightModel
    link: N.LinkModel
    flights: tuple[FlightPlan | None, ...]  # per exchange: out, back (None when no answer)
    final_us: float
    final_ops: tuple[tuple[str, float, str], ...]
    sigma_client: float
    sigma_server: float
    se_profile: SE.Profile | None
    se_calls: tuple[str, ...]
    se_host_us: float
    se_host_source: str
    calibration: dict[str, Any] | None
    # the calibration row's own spread (values over its P50): one draw per connection scales both
    # parties' compute; None: independent lognormals with sigma_client / sigma_server
    spread: tuple[float, ...] | None = None
    until: str = "response"  # the end point: response | handshake (UNTIL)

    @property
    def exchanges(self) -> int:
        return len(self.model.exchanges)


def _norm_group(g: str | None) -> str:
    g = (g or "x25519").lower()
    return {"secp256r1": "p-256", "prime256v1": "p-256", "secp384r1": "p-384"}.get(g, g)


def _named(table: CostTable, party: str, ops: tuple[str, ...]) -> float:
    """The named operations a measured row ran (a replaced op counts as the figure the row ran)."""
    figs = [table.get(party, op) for op in ops if not op.startswith("base:")]
    return sum(f.us if f.as_measured_us is None else f.as_measured_us for f in figs)


def _window(model: F.FlightModel, metric: str) -> list[tuple[int, str]]:
    """Flights (exchange, 'out'|'back') inside a metric's timer window."""
    start = 0
    if metric == "handshake" and model.start_mark[0] == "back_recv":
        start = model.start_mark[1] + 1
    inside: list[tuple[int, str]] = []
    for i, e in enumerate(model.exchanges):
        if i < start:
            continue
        inside.append((i, "out"))
        if metric == "handshake" and e.out.handshake_done:
            return inside
        if e.back is not None:
            inside.append((i, "back"))
    return inside


def fit_residuals(table: CostTable, sc: F.Scenario) -> tuple[CostTable, dict[str, Any] | None]:
    """The table with this scenario's `base:` costs fitted to a matching calibration row, if any."""
    hs = _fit_handshake(sc)
    key = scenario_key(sc.protocol, hs, sc.key)
    meas = table.measured.get(key)
    if meas is None and not key.endswith(":software"):
        meas = table.measured.get(key.rsplit(":", 1)[0] + ":software")
    for alt in _tls13_stand_ins(sc, hs) if meas is None else ():
        # QUIC and DTLS 1.3 run TLS 1.3's handshake: on a table with no row of their own (a device's),
        # a measured TLS 1.3 row of the same kind gives the residual, fitted against their own flights
        alt_key = scenario_key(alt, _STAND_IN_HS.get(hs, hs), sc.key)
        meas = table.measured.get(alt_key) or table.measured.get(alt_key.rsplit(":", 1)[0] + ":software")
        if meas is not None:
            meas = {
                **meas,
                "source": f"{meas.get('source') or ''} TLS 1.3 row ({alt}) standing in for {sc.protocol}".strip(),
            }
            break
    if meas is None:
        return _residual_from_full(table, sc), None
    if meas.get("alternatives"):
        meas = _closest_row(meas, sc)
    cal_sc = replace(
        sc,
        group=_norm_group(meas.get("group")),
        cert=meas.get("cert") or sc.cert,
        depth=int(meas.get("depth") or 1),
        precomputed_keyshare=False,
        key=sc.key if meas["se_us"] > 0 else "software",
    )
    if meas.get("client_key") in F.key_types():  # the row's own client key (a device's mutual-TLS row)
        cal_sc = replace(cal_sc, client_key_type=meas["client_key"])
    model = F.build(cal_sc)
    t = replace(table, party_ops=dict(table.party_ops))
    client_only = bool(meas.get("client_only"))
    if client_only:
        # a device row: operations its Result did not count separately are inside its measured total
        for i, side in _window(model, meas["metric"]):
            f = getattr(model.exchanges[i], side)
            if f is not None and f.sender == "client":
                for op in f.ops:
                    if not op.startswith("base:") and not t.has("client", op):
                        t.party_ops[("client", op)] = Figure(
                            0.0,
                            f"not counted separately: inside {meas['series']}'s "
                            f"measured handshake (the client's base: residual)",
                        )
    client_named = server_named = 0.0
    for i, side in _window(model, meas["metric"]):
        f = getattr(model.exchanges[i], side)
        if f is None:
            continue
        if f.sender == "client":
            client_named += _named(t, "client", f.ops)
        elif not client_only:
            server_named += _named(t, "server", f.ops)
    src = (
        f"residual of {meas['series']} ({'device' if client_only else 'loopback'} P50 {meas['metric']}) after the "
        f"named operations" + (f"; {meas['source']}" if meas.get("source") else "")
    )
    kind = _fit_kind(sc)
    if client_only and meas.get("server_row"):
        # a device row over a host calibration: the server's residual from the host's own row
        host_t, _ = fit_residuals(replace(table, measured={**table.measured, key: meas["server_row"]}), sc)
        sb = f"base:{sc.protocol}:{hs}:{kind}:server"
        if (("server", sb)) in host_t.party_ops:
            t.party_ops[("server", sb)] = host_t.party_ops[("server", sb)]
    sides = (("client", meas["client_us"], client_named),) + (
        () if client_only else (("server", meas["server_us"], server_named),)
    )
    for party, measured, named in sides:
        if named > measured > 0:
            _scale_party(t, party, measured / named, meas["series"])
            named = measured
        t.party_ops[(party, f"base:{sc.protocol}:{hs}:{kind}:{party}")] = Figure(max(0.0, measured - named), src)
    return t, meas


_STAND_IN_HS = {"0rtt": "resumed", "full-cid": "full", "resumed-cid": "resumed"}


def _tls13_stand_ins(sc: F.Scenario, hs: str) -> tuple[str, ...]:
    """Protocols whose measured TLS 1.3 handshake stands in for a QUIC or DTLS 1.3 row (none for others)."""
    if sc.protocol not in ("quic", "dtls1.3"):
        return ()
    return ("https", "mqtt") if sc.resolved().mtls else ("tls1.3", "jwt", "https")


def _closest_row(meas: dict[str, Any], sc: F.Scenario) -> dict[str, Any]:
    """A device table holds every warm row it counted for a protocol and handshake: the residual is
    fitted on the row of the scenario's own group, server certificate and client key when the device
    ran it (then the prediction is that count), else on the nearest one (group first, then the
    certificate), and the differences are the named primitives. Decision: a primitive counted apart
    can differ from the same work inside the handshake (Debian's armhf wolfSSL verifies ECDSA P-256
    about 20x slower in its primitive client than in the handshake), so a counted handshake always
    beats a swapped primitive."""

    def score(r: dict[str, Any]) -> tuple[bool, bool, bool, bool]:
        return (
            _norm_group(r.get("group")) == _norm_group(sc.group),
            r.get("cert") == sc.cert,
            (r.get("client_key") or None) == (sc.client_key_type if sc.mtls else None),
            r.get("suite") == "aes128gcm",
        )

    best = max(meas["alternatives"], key=score)
    return {
        **meas,
        **{k: best[k] for k in ("group", "cert", "client_us", "total_us", "series", "source")},
        **({"client_key": best["client_key"]} if best.get("client_key") else {}),
    }


def _fit_handshake(sc: F.Scenario) -> str:
    """The handshake whose residual a scenario uses: a JWT request rides a full TLS 1.3 handshake
    (its fresh/cached is about the token), as flights.build names its base: costs."""
    return "full" if sc.protocol == "jwt" else sc.handshake


def _fit_kind(sc: F.Scenario) -> str:
    """software | se, as flights._base names it (the JWT's TLS client has no client key)."""
    return "se" if sc.key.startswith("se:") and sc.protocol != "jwt" else "software"


def _residual_from_full(table: CostTable, sc: F.Scenario) -> CostTable:
    """A device table with no row of this abbreviated handshake (resumed, PSK) takes the client's
    residual of its FULL handshake row: with the certificate work named (parse_cert and the
    signature checks, counted by `secperf device crypto`), what is left of a full handshake is the
    transcript, key-schedule and record work an abbreviated handshake also does. The source says so;
    a host table, or a device table without a full row, is returned unchanged (its own figures, or a
    named missing cost)."""
    if sc.protocol == "edhoc":
        return _edhoc_from_counted(table, sc)
    if sc.handshake.endswith("-cid"):  # DTLS 1.3 with a connection ID: the same handshake's row without it
        plain = replace(sc, handshake=sc.handshake.removesuffix("-cid"))
        t, _ = fit_residuals(table, plain)
        if not t.has("client", f"base:{sc.protocol}:{plain.handshake}:{_fit_kind(sc)}:client"):
            return table
        return _residual_as(
            t,
            sc,
            plain.handshake,
            f"the {plain.handshake} handshake's client residual, for "
            f"{sc.handshake} (a connection ID adds an extension and a few record bytes, no operation)",
        )
    if sc.handshake not in ("resumed", "psk", "psk-dhe", "0rtt", "nocookie", "hrr"):
        return table
    full = replace(sc, handshake="full")
    fkey = scenario_key(sc.protocol, "full", sc.key)
    fm = table.measured.get(fkey) or table.measured.get(fkey.rsplit(":", 1)[0] + ":software")
    for alt in _tls13_stand_ins(sc, "full") if not fm else ():  # QUIC / DTLS 1.3: a TLS 1.3 full row
        akey = scenario_key(alt, "full", sc.key)
        fm = table.measured.get(akey) or table.measured.get(akey.rsplit(":", 1)[0] + ":software")
        if fm:
            break
    if not fm or not fm.get("client_only"):
        return table
    t, _ = fit_residuals(table, replace(full, group=_norm_group(fm.get("group")), cert=fm.get("cert") or sc.cert))
    return _residual_as(
        t,
        sc,
        "full",
        f"the full handshake's client residual, for a {sc.handshake} handshake (same "
        f"transcript, key schedule and record work; the certificate operations are named)",
    )


def _residual_as(t: CostTable, sc: F.Scenario, counted_hs: str, why: str) -> CostTable:
    """t with the client's residual of `counted_hs` standing as sc's own handshake's, its source said."""
    kind = _fit_kind(sc)
    f = t.get("client", f"base:{sc.protocol}:{counted_hs}:{kind}:client")
    t.party_ops[("client", f"base:{sc.protocol}:{sc.handshake}:{kind}:client")] = Figure(f.us, f"{why}: {f.source}")
    return t


def _edhoc_from_counted(table: CostTable, sc: F.Scenario) -> CostTable:
    """An EDHOC variant a device did not run (another method, credential or suite) takes the client's
    residual of the variant it counted (the device's initiator: method 3 by kid or by value, suite 2):
    with each variant's public-key operations named, what is left is the CBOR, transcript hashing,
    key derivation and AEAD work every variant does. A host table, or one without a counted EDHOC row,
    is returned unchanged."""
    for hs in ("m3-kid", "m3-value"):
        key = scenario_key("edhoc", hs, sc.key)
        fm = table.measured.get(key) or table.measured.get(key.rsplit(":", 1)[0] + ":software")
        if fm and fm.get("client_only"):
            break
    else:
        return table
    t, _ = fit_residuals(table, replace(sc, handshake=hs, group=_norm_group(fm.get("group"))))
    return _residual_as(
        t,
        sc,
        hs,
        f"the counted EDHOC {hs} initiator's client residual, for {sc.handshake} (its "
        f"own public-key operations named; CBOR, transcript hashes, key derivation and AEAD alike)",
    )


def _scale_party(t: CostTable, party: str, f: float, series: str) -> None:
    """Scale every named operation of `party` by f < 1: the calibration row measured the party's whole
    handshake faster than the table's operations add up to (the table was measured on another run or
    under other load), so this host, now, runs that party's operations f times the table's time — a
    ratio, applied alike to every operation so a what-if that swaps one (another certificate or
    group) keeps the row's speed. The residual is then 0."""
    names = set(t.ops) | {op for (p, op) in t.party_ops if p == party}
    for op in names:
        if op.startswith("base:") or not t.has(party, op):
            continue
        g = t.get(party, op)
        t.party_ops[(party, op)] = Figure(
            g.us * f,
            f"{g.source}; x {f:.3f}: {series} measured the {party}'s "
            f"handshake faster than the table's operations add up to",
        )


def plan(
    sc: F.Scenario, table: CostTable, link: N.LinkModel, until: str = "response", se: SE.Profile | None = None
) -> Plan:
    """The flights of `sc` over `link` with the costs of `table`. A key in a secure element
    (`se:PROFILE[:cold]`) is charged from `se`, the profile the command resolved from its --key or
    pattern (the model never looks a profile up by its name)."""
    check_until(until)
    table = table.for_protocol(sc.protocol)
    model = F.build(sc)
    N.check_mtu(model, link)
    sc = model.scenario
    if sc.security == "none":  # no base: residual to fit (module docstring)
        meas = None
    else:
        table, meas = fit_residuals(table, sc)
    prof = None
    calls: tuple[str, ...] = ()
    se_host = Figure(0.0, "no calibration row for this key source: the profile's figures only")
    if sc.se_profile:
        if se is None or se.name != sc.se_profile:
            raise InternalError(
                f"key {sc.key}: the model takes the secure-element profile the command resolved, "
                f"got {se.name if se else None!r}"
            )
        prof = se
        calls = SE_COLD_CALLS if sc.se_cold else SE_WARM_CALLS
        if sc.key.rsplit(":cold", 1)[0] in table.se_host:
            se_host = table.se_host[sc.key.rsplit(":cold", 1)[0]]
    out: list[FlightPlan | None] = []
    for i, e in enumerate(model.exchanges):
        for f in (e.out, e.back):
            if f is None:
                out.append(None)
                continue
            ops = tuple((op, table.get(f.sender, op).us, table.get(f.sender, op).source) for op in f.ops)
            tr = "tcp" if e.transport in ("tcp", "tcp-syn") else "udp"
            pk, wire = N.packets(f.payload, tr, link.mtu)
            if f.writes > pk:  # each write its own segment (TCP_NODELAY) or datagram (a record each)
                wire += (f.writes - pk) * (F.TCP_HDR if tr == "tcp" else F.UDP_HDR)
                pk = f.writes
            extra = N.extra_window_rounds(pk) if e.transport == "tcp" else 0
            rpk, rwire = N.dtls_resend(f.msgs, link.mtu) if e.transport == "dtls" else (0, 0)
            out.append(
                FlightPlan(
                    i,
                    e.transport,
                    f.sender,
                    f.names(),
                    sum(o[1] for o in ops),
                    ops,
                    f.se_sign,
                    pk,
                    wire,
                    extra,
                    f.handshake_done,
                    rpk,
                    rwire,
                )
            )
    # a device table's application exchange (app:PROTOCOL, costed from its counted AEAD) after the last answer
    app = (
        (f"app:{sc.protocol}",) if ("client", f"app:{sc.protocol}") in table.party_ops and sc.security != "none" else ()
    )
    fin = tuple((op, table.get("client", op).us, table.get("client", op).source) for op in model.final_ops + app)
    sig_c = sig_s = table.sigma
    if meas is not None:
        sig_c = float(meas.get("sigma", table.sigma))
        sig_s = table.sigma if meas.get("client_only") else sig_c
    spread = None
    if meas is not None and not meas.get("client_only") and not meas.get("se_us") and meas.get("ratios"):
        spread = tuple(meas["ratios"])
    return Plan(
        model,
        link,
        tuple(out),
        sum(o[1] for o in fin),
        fin,
        sig_c,
        sig_s,
        prof,
        calls,
        se_host.us,
        se_host.source,
        meas,
        spread,
        until,
    )


def compute_breakdown(p: Plan) -> list[dict[str, Any]]:
    """Every operation the plan charges, per flight and party, with its source (the cost table);
    with the handshake end point only up to the client's completing flight (whose work is done
    before the clock stops)."""
    rows = []
    done = False
    for fp in p.flights:
        if fp is None or done:
            continue
        done = p.until == "handshake" and fp.handshake_done
        for op, us, src in fp.ops:
            rows.append(
                {"exchange": fp.exchange, "flight": fp.name, "party": fp.sender, "op": op, "us": us, "source": src}
            )
        if fp.se:
            prof = p.se_profile
            assert prof is not None, "only a plan with a secure-element profile has a flight that signs in one"
            rows.append(
                {
                    "exchange": fp.exchange,
                    "flight": fp.name,
                    "party": "secure element",
                    "op": " + ".join(p.se_calls),
                    "us": sum(d.mean() if (d := prof.dist(c)) else 0.0 for c in p.se_calls) * 1e3,
                    "source": f"profile {prof.name} (mean): {prof.source}",
                }
            )
    for op, us, src in () if done else p.final_ops:
        rows.append(
            {
                "exchange": None,
                "flight": "(after the last answer)",
                "party": "client",
                "op": op,
                "us": us,
                "source": src,
            }
        )
    return rows
