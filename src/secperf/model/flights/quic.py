"""QUIC flight model (RFC 9000 / RFC 9001 / RFC 9002): TLS 1.3's messages in QUIC packets, the
client's Initial padded to 1200 bytes, the server's anti-amplification limit (3x what it received
before the client's address is validated), the probe timeout that recovers a lost flight, and 0-RTT.

It reproduces what `secperf connect quic` measures of aioquic (measure/quic.py): with the lab's
ECDSA P-256 leaf the wire carries 1200 / 1200 / 1200 / 1173 bytes (full: client Initial, server
Initial + Handshake, client Initial ACK + Handshake Finished + request, server response with
HANDSHAKE_DONE, NewSessionTicket and NEW_CONNECTION_ID frames); 0-RTT sends the request in the first
flight and the response comes coalesced with the server's handshake (1200 + 128). aioquic pads every
datagram that carries an Initial packet to 1200 bytes (client and server), hence the fixed sizes.

Retransmission (montecarlo and sim/recovery.py, transports `quic-initial`, `quic-0rtt` and `quic`): a
lost flight or answer costs one probe timeout, doubling per further loss. Before any RTT sample the PTO
is 2 x kInitialRtt (333 ms, RFC 9002 6.2.2; measure/quic.py sets aioquic to it); after the first
exchange it is smoothed_rtt + 4 x rttvar = 3 x the first sample (rttvar = sample / 2, RFC 9002 5.3),
and that sample is the round trip plus the peer's time to answer: the server's work on its whole
flight for the client, the client's on its Finished for the server, whose PTO also holds
max_ack_delay (25 ms: its handshake is confirmed). 0-RTT's first exchange (`quic-0rtt`) waits for the
server's first datagram only: the response rides in it, and the ACK/ticket datagram after it delays
nothing when lost. Not modelled: a PTO that fires before the answer
could arrive (RTT above 666 ms, e.g. NB-IoT: aioquic then sends spurious probes, which cost bytes and
uplink airtime but do not delay the handshake), and congestion control (flights here are far below
the initial window of 10 x 1200 bytes).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from .. import network as N
from . import base as F

DATAGRAM = 1200  # aioquic's max_datagram_size; RFC 9000 14.1 minimum for Initial datagrams
AMPLIFICATION = 3  # RFC 9000 8.1
INITIAL_RTT_S = 0.333  # RFC 9002 6.2.2 kInitialRtt
MAX_PTO = 8  # probes before the model counts the connection as failed (aioquic: idle timeout)
# QUIC bytes around the TLS messages (measured against aioquic's datagrams, see the module docstring)
TRANSPORT_PARAMS = 70  # quic_transport_parameters extension (ClientHello and EncryptedExtensions)
INITIAL_OVERHEAD = 54  # long header (1+4+1+8+1+8+1+2+2) + CRYPTO and ACK frame headers + AEAD tag
HANDSHAKE_OVERHEAD = 48  # long header without token + CRYPTO frame header + tag, per Handshake packet
SHORT_OVERHEAD = 30  # 1-RTT short header (1 + 8-byte CID + packet number) + STREAM frame + tag
POST_HANDSHAKE = 297  # HANDSHAKE_DONE, NewSessionTicket, NEW_CONNECTION_ID frames with the response
LEGACY_SESSION_ID = 32  # TLS over TCP echoes a 32-byte session ID; QUIC's ClientHello has none (RFC 9001 8.4)
ZERO_RTT_TAIL = 128  # the server's second datagram after a 0-RTT answer (ACKs, ticket)


def pto_s(transport: str, rtt_s: float, answer_s: Any = 0.0, samples: int = 1) -> Any:
    """The probe timeout that recovers a lost flight of this exchange (see the module docstring):
    before any RTT sample 2 x kInitialRtt; after `samples` equal RTT samples of the round trip plus the
    peer's time to answer (`answer_s`, a number or an array per connection), smoothed_rtt + 4 x
    rttvar: the first sets rttvar = sample / 2 (3 x sample), each further equal one takes rttvar to
    3/4 of itself (aioquic's recovery.py: a datagram that acknowledges the Initial and the Handshake
    space gives two; 2.5 x sample). rttvar counts at least the 1 ms granularity."""

    if transport in ("quic-initial", "quic-0rtt"):
        return 2 * INITIAL_RTT_S
    sample = rtt_s + answer_s
    rttvar = sample / 2 * 0.75 ** (max(samples, 1) - 1)
    return sample + np.maximum(4 * rttvar, N.QUIC_GRANULARITY_S)


def _tls_bytes(msgs: F.Msgs | list[tuple[str, int]]) -> int:
    """TLS handshake bytes of a TLS-over-TCP flight without its record framing and without the
    middlebox ChangeCipherSpec (QUIC carries handshake messages in CRYPTO frames, RFC 9001 4)."""
    out = 0
    for name, b in msgs:
        if name == "ChangeCipherSpec" or name == "EndOfEarlyData":
            continue
        out += b - (F.TLS_REC if name in ("ClientHello", "ServerHello") else F.TLS13_ENC)
    return out


def _datagrams(total: int, padded_first: bool) -> list[int]:
    """A flight's bytes cut into datagrams of at most DATAGRAM; the first padded to DATAGRAM when it
    carries an Initial packet."""
    k = max(1, math.ceil(total / DATAGRAM))
    sizes = [DATAGRAM] * (k - 1) + [total - DATAGRAM * (k - 1)]
    if padded_first:
        sizes[0] = DATAGRAM
    return sizes


def flight_model(s: F.Scenario) -> F.FlightModel:
    hs = s.handshake
    # aioquic's server asks for no client certificate (what connect quic measures); the planner's mutual-
    # TLS designs do: CertificateRequest, the client's Certificate and CertificateVerify (signed by its key,
    # a secure element's too) travel in Handshake packets as TLS 1.3 over TCP carries them
    s13 = replace(s, mtls=bool(s.mtls))
    req = (("request", F.HTTP_REQ + F.TLS13_ENC),)
    resp = (("response", F.HTTP_RESP + F.TLS13_ENC),)
    tls = F._tls13(s13, req, resp)  # the TLS 1.3 messages and each side's operations
    ch, server = tls[0].out, tls[0].answer
    ch_tls = _tls_bytes(ch.msgs[:1]) + TRANSPORT_PARAMS - LEGACY_SESSION_ID
    client_dgrams = _datagrams(ch_tls + INITIAL_OVERHEAD + (F.HTTP_REQ + SHORT_OVERHEAD if hs == "0rtt" else 0), True)
    sh = _tls_bytes(server.msgs[:1]) - LEGACY_SESSION_ID
    rest = _tls_bytes([m for m in server.msgs[1:] if m[0] not in ("response",)]) + TRANSPORT_PARAMS
    server_total = sh + INITIAL_OVERHEAD + rest + HANDSHAKE_OVERHEAD
    if hs == "0rtt":
        server_total += F.HTTP_RESP + SHORT_OVERHEAD
    server_dgrams = _datagrams(server_total, True)
    if hs == "0rtt":
        server_dgrams.append(ZERO_RTT_TAIL)
    notes = [f"client Initial padded to {DATAGRAM} bytes (RFC 9000 14.1)"]
    ex: list[F.Exchange] = []
    client_sent = sum(client_dgrams)
    budget = AMPLIFICATION * client_sent
    first: list[int] = []
    later: list[int] = []
    for d in server_dgrams:  # the server sends up to 3x what it received
        (first if sum(first) + d <= budget else later).append(d)
    out0 = F.Flight(
        "client",
        tuple(
            ("Initial: ClientHello" + (" + 0-RTT: request" if hs == "0rtt" else "") if i == 0 else "Initial", b)
            for i, b in enumerate(client_dgrams)
        ),
        ch.ops,
        writes=len(client_dgrams),
    )
    names = ["Initial + Handshake: ServerHello..Finished"] + ["Handshake"] * (len(server_dgrams) - 1)
    if hs == "0rtt":
        names[0] += " + 1-RTT: response"
        names[-1] = "1-RTT: ACK, NewSessionTicket"
    back0 = F.Flight("server", tuple((names[i], b) for i, b in enumerate(first)), server.ops, writes=len(first))
    ex.append(F.Exchange(out0, back0, "quic-0rtt" if hs == "0rtt" else "quic-initial"))
    if later:  # anti-amplification: the rest waits for the client's next datagram
        notes.append(
            f"server flight of {sum(server_dgrams)} bytes exceeds {AMPLIFICATION}x the client's "
            f"{client_sent}: the server waits a round trip for the client's ACK (RFC 9000 8.1)"
        )
        ex.append(
            F.Exchange(
                F.Flight("client", (("Initial: ACK", DATAGRAM),)),
                F.Flight("server", tuple(("Handshake", b) for b in later), writes=len(later)),
                "quic",
            )
        )
    fin = tls[1].out
    if hs == "0rtt":
        # the response came with the server's flight; the client's Finished (its handshake complete)
        # leaves after it: transport quic-final, whose flight the Monte Carlo charges bytes, not time
        out1 = F.Flight(
            "client", (("Initial ACK + Handshake: Finished", DATAGRAM),), fin.ops, fin.se_sign, handshake_done=True
        )
        ex.append(F.Exchange(out1, None, "quic-final"))
        return F.FlightModel(s, "udp", tuple(ex), notes=tuple(notes))
    client_hs = _tls_bytes([m for m in fin.msgs if m[0] != "request"])
    c1 = _datagrams(INITIAL_OVERHEAD + HANDSHAKE_OVERHEAD + client_hs + F.HTTP_REQ + SHORT_OVERHEAD, True)
    out1 = F.Flight(
        "client",
        tuple(
            (
                "Initial ACK + Handshake: "
                + ("Certificate..Finished" if s13.mtls else "Finished")
                + " + 1-RTT: request"
                if i == 0
                else "Handshake",
                b,
            )
            for i, b in enumerate(c1)
        ),
        fin.ops,
        fin.se_sign,
        handshake_done=True,
        writes=len(c1),
    )
    back1 = F.Flight(
        "server",
        (("1-RTT: response + HANDSHAKE_DONE + NewSessionTicket", F.HTTP_RESP + SHORT_OVERHEAD + POST_HANDSHAKE),),
        tls[1].answer.ops,
    )
    ex.append(F.Exchange(out1, back1, "quic"))
    return F.FlightModel(s, "udp", tuple(ex), notes=tuple(notes))
