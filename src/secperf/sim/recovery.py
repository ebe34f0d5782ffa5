"""Loss recovery of the datagram handshakes whose stacks resend less than a whole exchange: DTLS 1.3
as wolfSSL 5.9 runs it (RFC 9147 section 7: ACKs name the records received, the peer resends only
the others) and QUIC's probe timeout as aioquic computes it (RFC 9002 6.2). The Monte Carlo
(sim/montecarlo.py) calls `recover` once per exchange of these transports, vectorised over the
connections of a chunk; the timers and their sources are in model/network.py.

DTLS 1.3 (model/flights/dtls13.py names the exchanges):

- ``dtls13-flight`` (ClientHello with the cookie -> the server's flight, one record per datagram,
  the ServerHello in clear first): the ClientHello or the whole flight lost -> the client's quick
  timeout (it holds the HelloRetryRequest, a handshake record) then its long timer, 1.27 s, doubling
  after; the ServerHello lost but an encrypted record in -> the client cannot read it and answers with
  an empty ACK at once, the server resends its flight (one round trip); an encrypted record lost ->
  the client's quick timeout sends an ACK naming the records it has and the server resends the others
  (0.27 s + a round trip). A resent record lost again waits the server's minimum resend interval (1 s).
- ``dtls13-finished`` (the client's Certificate, CertificateVerify, Finished -> ACK, ticket): the
  whole flight or the server's ACK lost -> the client's timers, 1.27 s; part of the flight lost -> the
  server's quick timeout ACKs what it has and the client resends the rest at once (0.27 s + a round
  trip), unless the client itself resent or ACKed within the last second (then it ignores that ACK
  and resends on its long timer, 1 s after the ACK arrived). A lost ticket costs nothing.
- ``dtls13-app`` (the request and the ticket's ACK -> the response): DTLS does not resend application
  data; the pair's client resends its request on a CoAP-like timer. Only the request's datagram and
  the response's matter.

QUIC ``quic`` (after the first exchange): a lost client flight waits the client's PTO, a lost
answer the server's. Each side's RTT sample is the round trip plus the peer's time to answer
(aioquic acknowledges the client's Initial with the server's whole flight; the server's sample ends
with the client's Finished). The client has one sample: PTO = 3 x sample; the server two (the
Finished's datagram acknowledges its Initial and Handshake packets): 2.5 x sample + max_ack_delay.
A lost Finished + request costs more than its PTO: the request goes again only once the handshake is
confirmed, one round trip and a doubled application PTO later. 0-RTT's first exchange (``quic-0rtt``)
waits the initial PTO and then two round trips: the early request is sent again after the handshake.
Doubling per further loss (measured against aioquic over delay=10ms and 150ms with 5 % loss: a
lost response 0.79 s at 300 ms RTT, a lost Finished + request 1.8-1.9 s, a lost 0-RTT exchange 1.26 s).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from ..model import flights as F
from ..model import network as N
from ..model.flights import dtls13 as F13
from ..model.flights import quic as FQ

if TYPE_CHECKING:
    from ..model.predict import FlightPlan
    from .chains import Chains

TRANSPORTS = ("dtls13-flight", "dtls13-finished", "dtls13-app", "quic", "quic-0rtt")


@dataclass
class State:
    """Per-connection facts one exchange's recovery needs from the ones before: when the client sent
    this exchange's flight (s), the last time it resent or sent an early ACK (s, -inf: never), and
    each party's compute per exchange (s)."""

    n: int
    sent_at: np.ndarray | None = None
    last_rtx: np.ndarray = field(init=False)
    compute: dict[tuple[int, str], np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.last_rtx = np.full(self.n, -np.inf)


@dataclass
class Outcome:
    wait: np.ndarray
    up_pk: np.ndarray
    up_bytes: np.ndarray
    down_pk: np.ndarray
    down_bytes: np.ndarray
    failed: np.ndarray

    @classmethod
    def zeros(cls, n: int) -> Outcome:
        z = np.zeros(n)
        return cls(z, z.copy(), z.copy(), z.copy(), z.copy(), np.zeros(n, dtype=bool))


def _lost_each(
    rng: np.random.Generator, chains: Chains, link: N.LinkModel, fp: FlightPlan, idx: np.ndarray, k: int | None = None
) -> np.ndarray:
    """(k, len(idx)): which of the flight's first k datagrams are lost, one draw per datagram (a
    Gilbert-Elliott chain moves once per datagram)."""
    d = link.direction(fp.sender)
    k = fp.packets if k is None else k
    out = np.zeros((k, idx.size), dtype=bool)
    if d.loss <= 0 and not d.ge:
        return out
    for j in range(k):
        out[j], _ = chains.send(rng, fp.sender, d, 1, idx, idx.size)
    return out


def _again(
    rng: np.random.Generator, chains: Chains, link: N.LinkModel, sender: str, packets: np.ndarray, idx: np.ndarray
) -> np.ndarray:
    """Failed resends of `packets` lost datagrams (per connection) before all got through."""
    d = link.direction(sender)
    g = np.zeros(idx.size)
    for k in np.unique(packets[packets > 0]).astype(int):
        sel = np.nonzero(packets == k)[0]
        g[sel] = chains.retries(rng, sender, d, k, idx[sel], N.DTLS13_MAX_RETRIES)
    return g


def _dtls13_flight(
    rng: np.random.Generator, chains: Chains, link: N.LinkModel, legs: list[FlightPlan], n: int, rtt: float, st: State
) -> Outcome:
    out, back = legs
    o = Outcome.zeros(n)
    quick = N.DTLS13_QUICK_S + N.DTLS13_QUICK_LATE_S
    sent = st.sent_at if st.sent_at is not None else np.zeros(n)
    seg = back.wire_bytes / back.packets
    alive = np.arange(n)
    timer = N.DTLS13_TIMER_S
    for attempt in range(N.DTLS13_MAX_RETRIES + 1):
        if not alive.size:
            break
        ch = _lost_each(rng, chains, link, out, alive)[0]
        recs = np.zeros((back.packets, alive.size), dtype=bool)  # no answer to a lost ClientHello
        recs[:, ~ch] = _lost_each(rng, chains, link, back, alive[~ch])
        if attempt:
            o.up_pk[alive] += 1
            o.up_bytes[alive] += out.wire_bytes
            o.down_pk[alive[~ch]] += back.packets
            o.down_bytes[alive[~ch]] += back.wire_bytes
        whole = ch | recs.all(axis=0)
        sh = ~whole & recs[0]
        enc = ~whole & ~recs[0] & recs[1:].any(axis=0)
        # the ServerHello lost: the client ACKs each unreadable record at once, the server resends all
        i = alive[sh]
        o.wait[i] += rtt
        g = _again(rng, chains, link, "server", np.full(i.size, back.packets), i)
        o.wait[i] += N.DTLS13_MIN_RTX_S * g
        o.down_pk[i] += back.packets * (1 + g)
        o.down_bytes[i] += back.wire_bytes * (1 + g)
        # an encrypted record lost: the client's quick timeout ACKs what it has, the others come again
        i = alive[enc]
        missing = recs[1:, enc].sum(axis=0)
        st.last_rtx[i] = sent[i] + o.wait[i] + rtt + quick
        o.wait[i] += quick + rtt
        g = _again(rng, chains, link, "server", missing, i)
        o.wait[i] += N.DTLS13_MIN_RTX_S * g
        o.up_pk[i] += 1
        o.up_bytes[i] += F.UDP_HDR + F13.ACK_FULL  # the client's ACK record
        o.down_pk[i] += missing * (1 + g)
        o.down_bytes[i] += missing * seg * (1 + g)
        # nothing of the exchange came back: the client's timers, then the whole exchange again
        i = alive[whole]
        o.wait[i] += (quick if attempt == 0 else 0.0) + timer
        st.last_rtx[i] = sent[i] + o.wait[i]
        timer *= 2
        alive = i
    o.failed[alive] = True
    return o


def _dtls13_finished(
    rng: np.random.Generator, chains: Chains, link: N.LinkModel, legs: list[FlightPlan], n: int, rtt: float, st: State
) -> Outcome:
    out, back = legs
    o = Outcome.zeros(n)
    quick = N.DTLS13_QUICK_S + N.DTLS13_QUICK_LATE_S
    sent = st.sent_at if st.sent_at is not None else np.zeros(n)
    seg = out.wire_bytes / out.packets
    ack_bytes = back.wire_bytes / back.packets
    alive = np.arange(n)
    timer = N.DTLS13_TIMER_S
    for attempt in range(N.DTLS13_MAX_RETRIES + 1):
        if not alive.size:
            break
        recs = _lost_each(rng, chains, link, out, alive)
        ack = _lost_each(rng, chains, link, back, alive, 1)[0]  # the ACK; the ticket after it does not matter
        if attempt:
            o.up_pk[alive] += out.packets
            o.up_bytes[alive] += out.wire_bytes
            o.down_pk[alive] += 1
            o.down_bytes[alive] += ack_bytes
        whole = recs.all(axis=0) | (~recs.any(axis=0) & ack)
        part = recs.any(axis=0) & ~recs.all(axis=0)
        i = alive[part]
        missing = recs[:, part].sum(axis=0)
        t_ack = sent[i] + o.wait[i] + rtt + quick  # the server's quick-timeout ACK reaches the client
        ignored = t_ack - st.last_rtx[i] < N.DTLS13_MIN_RTX_S
        o.wait[i] += quick + rtt + np.where(ignored, N.DTLS13_TIMER_S, 0.0)
        # the resent records, and the server's ACK of them, can be lost again: the client's timer
        again = _again(rng, chains, link, "client", missing, i)
        o.wait[i] += N.DTLS13_TIMER_S * (np.exp2(again) - 1.0)
        o.up_pk[i] += missing * (1 + again)
        o.up_bytes[i] += missing * seg * (1 + again)
        o.down_pk[i] += 1
        o.down_bytes[i] += ack_bytes
        i = alive[whole]
        o.wait[i] += (quick if attempt == 0 else 0.0) + timer
        timer *= 2
        alive = i
    o.failed[alive] = True
    return o


def _quic(
    transport: str,
    rng: np.random.Generator,
    chains: Chains,
    link: N.LinkModel,
    legs: list[FlightPlan],
    n: int,
    rtt: float,
    st: State,
    exchange: int,
) -> Outcome:
    out = legs[0]
    back = legs[1] if len(legs) > 1 else None
    o = Outcome.zeros(n)
    idx = np.arange(n)
    lost_out = _lost_each(rng, chains, link, out, idx).any(axis=0)
    lost_back = np.zeros(n, dtype=bool)
    if back is not None:  # the answer leaves only when the flight arrived
        ok = np.nonzero(~lost_out)[0]
        # 0-RTT: the response rides in the server's first datagram; the ACK/ticket one after it delays nothing
        lost_back[ok] = _lost_each(rng, chains, link, back, ok, 1 if transport == "quic-0rtt" else None).any(axis=0)
    zero = np.zeros(n)
    server_first = st.compute.get((0, "server"), zero)  # the server's time to answer the client's Initial
    client_now = st.compute.get((exchange, "client"), zero)  # the client's time to answer the server's flight
    pto_c: np.ndarray | float
    pto_s: np.ndarray | float
    after_c: np.ndarray | float = 0.0
    if transport == "quic-0rtt":
        # no RTT sample on either side: the initial PTO; the early request went with the lost exchange
        # and is sent again after the handshake, with the Finished: two more round trips
        pto_c = pto_s = FQ.pto_s(transport, rtt)
        after_c = after_s = 2 * rtt
    else:
        pto_c = FQ.pto_s("quic", rtt, server_first)  # the client's sample: its Initial acknowledged
        # the server's: the client's Finished datagram acknowledges its Initial and Handshake packets
        pto_s = FQ.pto_s("quic", rtt, client_now, samples=2) + N.QUIC_MAX_ACK_DELAY_S
        after_s = 0.0
        if out.handshake_done:
            # the Finished and the request lost: the PTO resends the Finished; aioquic arms no PTO for
            # application data before the handshake is confirmed, so the request goes again only after
            # HANDSHAKE_DONE (a round trip) and the application PTO, doubled (the count is not reset):
            # 2 x (sample + max_ack_delay)
            after_c = rtt + 2 * (rtt + server_first + N.QUIC_MAX_ACK_DELAY_S)
    for lost, pto, after, fp in ((lost_out, pto_c, after_c, out), (lost_back, pto_s, after_s, back)):
        i = np.nonzero(lost)[0]
        if not i.size or fp is None:
            continue
        g = chains.retries(rng, fp.sender, link.direction(fp.sender), fp.packets, i, FQ.MAX_PTO)
        o.wait[i] += np.broadcast_to(pto, (n,))[i] * (np.exp2(1.0 + g) - 1.0) + np.broadcast_to(after, (n,))[i]
        o.failed[i] |= g > FQ.MAX_PTO
        pk, by = (o.up_pk, o.up_bytes) if fp.sender == "client" else (o.down_pk, o.down_bytes)
        pk[i] += fp.packets * (1 + g)
        by[i] += fp.wire_bytes * (1 + g)
    return o


def recover(
    transport: str,
    rng: np.random.Generator,
    chains: Chains,
    link: N.LinkModel,
    legs: list[FlightPlan],
    n: int,
    rtt: float,
    st: State,
    exchange: int,
) -> Outcome | None:
    """The retransmission waits (s), the resent packets and bytes and the give-ups of one exchange
    of `transport` (TRANSPORTS) for n connections; None when the link loses nothing."""
    if all(link.direction(fp.sender).loss <= 0 for fp in legs):
        return None
    if transport in ("quic", "quic-0rtt"):
        return _quic(transport, rng, chains, link, legs, n, rtt, st, exchange)
    if len(legs) < 2:  # the answer is not simulated (the run stops at the handshake): nothing waits for it
        return None
    if transport == "dtls13-flight":
        return _dtls13_flight(rng, chains, link, legs, n, rtt, st)
    if transport == "dtls13-finished":
        return _dtls13_finished(rng, chains, link, legs, n, rtt, st)
    raise AssertionError(transport)


def app_request_only(fp: FlightPlan) -> FlightPlan:
    """The client's flight of a ``dtls13-app`` exchange as its retransmission sees it: the request's
    datagram alone (the ticket's ACK beside it is not resent, and its loss delays nothing)."""
    per = fp.wire_bytes / fp.packets
    return replace(fp, packets=1, wire_bytes=int(round(per)), retry_packets=1, retry_wire_bytes=int(round(per)))
