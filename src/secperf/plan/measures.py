"""Design measures (study S2): each a transformation of a Design — what-if inputs and connection
behaviour — with the rule that says whether it applies to a pattern. No measure carries a verdict
or a number: the evaluator computes what it buys.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..core.errors import InputError
from ..inputs.patterns import MEASURES, Pattern
from .design import Design


@dataclass(frozen=True)
class Measure:
    name: str
    title: str
    transforms: str  # what it changes in the what-if inputs
    not_applicable: Callable[[Pattern, Design], str | None]  # why it does not apply, or None
    apply: Callable[[Design], Design]


def _resumption_na(p: Pattern, d: Design) -> str | None:
    if d.protocol == "vpn":
        return "OpenVPN does not resume sessions (its TLS context disables it)"
    if d.auth == "psk":
        return "the handshake is already PSK (no certificate or signature to save)"
    return None


# The NAT/firewall idle time-out. Decision: a pattern states its own ([connection].nat_timeout_s)
# and the planner does not invent one per network: NAT time-outs are set by whoever runs the path
# (the operator's carrier-grade NAT, a site firewall), not by the radio technology, and they differ
# by transport. What the planner does instead is say, wherever it matters, that it assumed none:
# in the keep-alive measure's reason for not applying, in what it transforms, and it refuses to
# cost a keep-alive that has no ping interval (it would keep the session for free).
NAT_TYPICAL = (
    "real paths drop idle mappings (estimate): UDP after about 30-120 s on carrier-grade NATs and home gateways "
    "(RFC 4787 REQ-5 asks at least 2 min, many use less), TCP after minutes to tens of minutes on mobile "
    "networks (RFC 5382 REQ-5 asks at least 2 h 4 min for established connections; cellular middleboxes "
    "use far less: Wang et al., 'An Untold Story of Middleboxes in Cellular Networks', SIGCOMM 2011)"
)
NO_NAT_ASSUMPTION = (
    "assumes no NAT or firewall idle time-out: the pattern gives no [connection].nat_timeout_s, so "
    "an idle session survives; " + NAT_TYPICAL + "; give nat_timeout_s to model it"
)


def nat_assumption(p: Pattern) -> str | None:
    """What the plan assumes about NAT/firewall idle time-outs for this pattern (None: it states one)."""
    return NO_NAT_ASSUMPTION if p.connection.nat_timeout_s is None else None


def _keepalive_na(p: Pattern, d: Design) -> str | None:
    c = p.connection
    if c.mode == "always-on" and c.nat_timeout_s is None:
        return "the session already survives idle periods (always-on); this " + NO_NAT_ASSUMPTION
    if p.traffic.schedule == "bulk":
        return "a monthly transfer gains nothing from keeping a session for weeks"
    if c.keepalive_s is None and c.nat_timeout_s is None:
        return (
            "no ping interval to cost: the pattern gives neither [connection].keepalive_s nor nat_timeout_s "
            "(the keep-alive would keep the session for free); " + NAT_TYPICAL
        )
    return None


def _pooling_na(p: Pattern, d: Design) -> str | None:
    if p.traffic.schedule != "batch" or (p.traffic.messages_per_batch or 1) < 2:
        return "only the messages of a batch can share one connection"
    if p.connection.mode != "per-message":
        return "the batch already shares one connection"
    return None


def _token_na(p: Pattern, d: Design) -> str | None:
    return None if d.auth == "jwt" else f"authentication is {d.auth}, not a JWT"


def _preauth_na(p: Pattern, d: Design) -> str | None:
    if p.traffic.schedule == "events" and p.connection.mode != "always-on":
        return "event times are unpredictable: a session ready before the event means keeping one (keepalive)"
    return None


def _psk_na(p: Pattern, d: Design) -> str | None:
    if d.protocol == "vpn":
        return "OpenVPN's TLS mode has no PSK handshake (static-key mode is another protocol)"
    if d.auth == "psk":
        return "the pattern already uses PSK"
    if d.auth == "jwt":
        return "PSK would replace the JWT as the device's credential: set [stack].auth = \"psk\" to judge that"
    return None


def _keyshare_na(p: Pattern, d: Design) -> str | None:
    if d.protocol == "coap":
        return "the DTLS 1.2 flight model computes the client's ECDHE share after ServerKeyExchange (no precomputed variant)"
    if d.auth == "psk":
        return "psk_ke has no key exchange"
    return None


def _edhoc_na(p: Pattern, d: Design) -> str | None:
    if d.protocol != "coap":
        return (
            f"EDHOC + OSCORE protect CoAP; {d.protocol} would have to become CoAP first (judge a CoAP "
            "pattern to see that)"
        )
    return None


def _quic_na(p: Pattern, d: Design) -> str | None:
    if d.protocol not in ("https", "mqtt") or d.auth == "jwt":
        return (
            f"QUIC carries HTTP/3 and MQTT-over-QUIC; a {d.protocol} design with {d.auth} is not modelled over QUIC"
            if d.protocol in ("https", "mqtt")
            else f"{d.protocol} does not run over QUIC"
        )
    return None


def _dtls13_cid_na(p: Pattern, d: Design) -> str | None:
    if d.protocol != "coap":
        return f"DTLS 1.3 replaces CoAP's DTLS 1.2; {d.protocol} runs over TCP (see quic-0rtt)"
    return None


def _never(p: Pattern, d: Design) -> str | None:
    return None


CATALOGUE: dict[str, Measure] = {
    m.name: m
    for m in (
        Measure(
            "resumption",
            "session resumption",
            "reconnections within the ticket lifetime run the `resumed` "
            "handshake (TLS 1.3 tickets, DTLS session IDs): no certificate, no client signature; for a JWT, the "
            "request with its token rides on the resumed session (with token-cache: token cached + session resumed)",
            _resumption_na,
            lambda d: d.with_measure("resumption", resumption=True),
        ),
        Measure(
            "keepalive",
            "keep-alive",
            "the session is kept across idle periods by a ping every keepalive_s "
            "(default 0.9 x the pattern's NAT time-out, nat_timeout_s): no reconnection, but a radio wake-up per "
            "ping",
            _keepalive_na,
            lambda d: d.with_measure("keepalive", keepalive=True),
        ),
        Measure(
            "pooling",
            "connection pooling",
            "the messages of a batch share one connection (one set-up per batch)",
            _pooling_na,
            lambda d: d.with_measure("pooling", pooling=True),
        ),
        Measure(
            "token-cache",
            "JWT caching",
            "the token is signed once per lifetime and reused (`cached` instead of `fresh`)",
            _token_na,
            lambda d: d.with_measure("token-cache", token_cache=True),
        ),
        Measure(
            "preauth",
            "asynchronous pre-authentication",
            "set-ups (handshake and signature) happen off the "
            "request path, before the message is due: latency loses the set-up, energy does not",
            _preauth_na,
            lambda d: d.with_measure("preauth", preauth=True),
        ),
        Measure(
            "psk",
            "pre-shared key",
            "handshake `psk` (TLS 1.3 psk_ke / DTLS PSK): no certificates, no secure-element signature",
            _psk_na,
            lambda d: d.with_measure("psk", psk=True),
        ),
        Measure(
            "precomputed-keyshare",
            "precomputed key share",
            "the client's ECDHE key share is generated ahead of time (S1's premise 3)",
            _keyshare_na,
            lambda d: d.with_measure("precomputed-keyshare", precomputed_keyshare=True),
        ),
        Measure(
            "backoff",
            "exponential back-off",
            "retries after SE or network errors wait 1, 2, 4... s instead of "
            "retrying at once: no change in one device's latency or energy at the modelled error rates (it "
            "protects servers from reconnect storms)",
            _never,
            lambda d: d.with_measure("backoff", backoff=True),
        ),
        Measure(
            "edhoc-oscore",
            "EDHOC + OSCORE instead of DTLS",
            "the CoAP session is set up by EDHOC (RFC 9528; "
            "m0-x5t: signatures, certificates known to the peer, the device's signature on its secure element; "
            "m3-kid for a PSK design) and messages are protected by OSCORE (RFC 8613) instead of DTLS 1.2 records; "
            "no resumption exists (a kept OSCORE context is what keep-alive keeps)",
            _edhoc_na,
            lambda d: d.with_measure("edhoc-oscore", edhoc=True),
        ),
        Measure(
            "quic-0rtt",
            "QUIC with 0-RTT",
            "the connection runs QUIC with TLS 1.3 (model/flights/quic.py: padded "
            "Initials, anti-amplification, probe timeouts) instead of TCP + TLS 1.3: one round trip less for a full "
            "set-up, and a reconnection with a ticket (with resumption) sends its request as 0-RTT data; the "
            "NAT limit still applies (QUIC's own idle timeout closes a silent connection too)",
            _quic_na,
            lambda d: d.with_measure("quic-0rtt", quic=True),
        ),
        Measure(
            "dtls13-cid",
            "DTLS 1.3 with connection IDs",
            "CoAP runs over DTLS 1.3 with connection IDs "
            "(model/flights/dtls13.py, as wolfSSL 5.9 runs it: cookie, ACKs) instead of DTLS 1.2: the session "
            "survives a NAT rebinding, so an idle gap longer than the NAT time-out needs no new handshake; with "
            "psk the PSK handshake is modelled by the resumed flights",
            _dtls13_cid_na,
            lambda d: d.with_measure("dtls13-cid", dtls13_cid=True),
        ),
    )
}
assert tuple(CATALOGUE) == MEASURES


def applicable(p: Pattern, d: Design) -> tuple[list[Measure], dict[str, str]]:
    """The measures to consider for a pattern (its [stack].measures, or all), and why the others do
    not apply. A measure the pattern names that does not apply is an input error."""
    wanted = p.stack.measures
    out, why = [], {}
    for name, m in CATALOGUE.items():
        reason = m.not_applicable(p, d)
        if wanted is not None and name not in wanted:
            why[name] = "not among the pattern's [stack].measures"
            continue
        if reason:
            if wanted is not None:
                ok = [n for n, x in CATALOGUE.items() if x.not_applicable(p, d) is None]
                raise InputError(
                    f"[stack].measures: {name!r} does not apply to {p.name} ({d.protocol}, "
                    f"{d.auth}): {reason}; allowed here: {', '.join(ok)}"
                )
            why[name] = reason
            continue
        if name == "keepalive" and p.connection.nat_timeout_s is None:  # pings at keepalive_s, no NAT: say so
            m = replace(m, transforms=f"{m.transforms}; this pattern {NO_NAT_ASSUMPTION}")
        out.append(m)
    return out, why
