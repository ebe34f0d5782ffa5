"""Network model of the what-if: a link profile (inputs/netspec.py, the same specs `secperf netem`
emulates) turned into per-flight packets, serialisation, propagation and the retransmission timers
of each transport. Constants carry their source; docs/explanation/whatif-model.md lists them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.errors import InputError
from ..inputs import netspec as NS
from .flights.base import MTU_MIN, TCP_HDR, UDP_HDR, FlightModel

if TYPE_CHECKING:
    import numpy.typing as npt

TCP_INITIAL_WINDOW = 10  # segments (RFC 6928, Linux default initcwnd)
TCP_SYN_RTO_S = 1.0  # initial RTO for SYN / SYN-ACK (RFC 6298 2.1, Linux TCP_TIMEOUT_INIT)
TCP_SYN_RETRIES = 6  # Linux net.ipv4.tcp_syn_retries
TCP_SYN_LINEAR_TIMEOUTS = 4  # Linux >= 6.5 net.ipv4.tcp_syn_linear_timeouts: the first 4 SYN
# retransmissions wait 1 s each, then the timer doubles
TCP_RTO_MIN_S = 0.2  # Linux TCP_RTO_MIN / net.ipv4.tcp_rto_min_us (also added to the
# tail-loss probe with one segment out, for the peer's delayed ACK)
TCP_TLP_MIN_S = 0.002  # Linux TCP_TIMEOUT_MIN_US: added to 2·SRTT with several segments out
TCP_MAX_RETRIES = 15  # Linux net.ipv4.tcp_retries2
DTLS_TIMER_S = 1.0  # RFC 6347 4.2.4.1 initial timer; OpenSSL doubles it per retransmission
DTLS_MAX_RETRIES = 12  # OpenSSL DTLS1_TMO_ALERT_COUNT
COAP_ACK_TIMEOUT_S = 2.0  # RFC 7252 4.8
COAP_ACK_RANDOM_FACTOR = 1.5  # RFC 7252 4.8 (the probe uses 1.0 so its runs repeat)
COAP_MAX_RETRANSMIT = 4  # RFC 7252 4.8
HOST_WAKEUPS_PER_FLIGHT = 1  # over secperf's emulator: the receiving process (nice 0); the relay
# runs at nice -10 (native/netem/relay.c) and preempts normal work
HOST_SPIN_WINDOW_S = 0.010  # the emulator's relay spins (stays awake) 10 ms after any packet
# (native/netem/relay.c): below this RTT neither it nor the receiver
# sleeps long between flights, so no wake-up lateness is drawn
OVPN_TLS_TIMEOUT_S = 2.0  # OpenVPN --tls-timeout default; its reliability layer doubles it

# wolfSSL 5.9's DTLS 1.3 retransmission (RFC 9147 section 7: ACKs and per-record retransmission), read
# from its sources (src/dtls13.c, src/wolfio.c) and seen in the pair's datagram logs over
# delay=10ms,loss=10% (benchmarks/dtls13_loss_study.py). One record per datagram; each side keeps the
# records it sent until they are acknowledged and resends only those.
DTLS13_TIMER_S = 1.0  # DTLS_TIMEOUT_INIT: the long timer (a receive timeout), doubled at each expiry
DTLS13_QUICK_S = 0.25  # dtls13FastTimeout: after a handshake record arrived the receive timeout is a
# quarter of the long one; when it expires only ACKs are sent (Dtls13RtxTimeout), naming the records
# received, and the peer resends at once the ones not named (DoDtls13Ack -> Dtls13RtxSendBuffered)
DTLS13_QUICK_LATE_S = 0.02  # measured: that ACK leaves 253-288 ms (median 270) after the last
# datagram received, not 250 (the kernel rounds SO_RCVTIMEO up to jiffies; the host wakes late)
DTLS13_MIN_RTX_S = 1.0  # DTLS13_MIN_RTX_INTERVAL: a resend within 1 s of the last is skipped. The
# quick timeout that sends ACKs also counts as a resend (Dtls13RtxTimeout falls through to
# Dtls13RtxSendBuffered), so a peer that ACKed early ignores the next ACK's request for a second
DTLS13_MAX_RETRIES = 12  # the model's give-up count (wolfSSL: DTLS_TIMEOUT_MAX 64 s)

# aioquic's loss recovery (quic/recovery.py, RFC 9002)
QUIC_MAX_ACK_DELAY_S = 0.025  # added to the PTO once the handshake is confirmed (RFC 9002 6.2.1)
QUIC_GRANULARITY_S = 0.001  # K_GRANULARITY: the PTO's floor on 4 x rttvar


def syn_wait_s(failures: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Seconds a connection waits for `failures` lost SYN (or SYN-ACK) attempts: 1 s for each of
    the first TCP_SYN_LINEAR_TIMEOUTS, then 2 s, 4 s, ... (Linux tcp_syn_linear_timeouts)."""

    f = np.asarray(failures, dtype=float)
    lin = np.minimum(f, TCP_SYN_LINEAR_TIMEOUTS)
    exp = np.maximum(f - TCP_SYN_LINEAR_TIMEOUTS, 0.0)
    out: npt.NDArray[np.float64] = TCP_SYN_RTO_S * (lin + np.exp2(exp + 1.0) - 2.0)
    return out


def tcp_rto(rtt_s: float) -> float:
    """Linux's RTO after its first RTT sample m (the handshake): srtt = m, rttvar = max(2m, rto_min),
    RTO = m + max(2m, 200 ms) (tcp_rtt_estimator, __tcp_set_rto)."""
    return rtt_s + max(2 * rtt_s, TCP_RTO_MIN_S)


class LinkError(InputError):
    pass


@dataclass(frozen=True)
class Direction:
    delay_s: float
    jitter_s: float
    jitter_dist: str
    loss: float  # mean per-packet loss (Bernoulli, or Gilbert-Elliott's mean)
    rate_bps: float
    ge: tuple[float, float, float, float] | None = None  # Gilbert-Elliott p, r, bad loss, good loss
    reorder: float = 0.0  # P(a packet skips the propagation delay), as the emulator

    @property
    def ge_bad_share(self) -> float:
        """Stationary share of packets sent in the bad state, p / (p + r)."""
        if not self.ge:
            return 0.0
        p, r = self.ge[0], self.ge[1]
        return p / (p + r) if p + r > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "delay_ms": self.delay_s * 1e3,
            "jitter_ms": self.jitter_s * 1e3,
            "loss": self.loss,
            "rate_bps": self.rate_bps,
        }
        if self.ge:
            d["gilbert_elliott"] = {"p": self.ge[0], "r": self.ge[1], "bad_loss": self.ge[2], "good_loss": self.ge[3]}
        if self.reorder:
            d["reorder"] = self.reorder
        return d


@dataclass(frozen=True)
class LinkModel:
    name: str
    up: Direction
    down: Direction
    mtu: int
    coap_random_factor: float = COAP_ACK_RANDOM_FACTOR
    # host scheduling: lateness (ms) of a process waking after a wait, measured on the host that
    # runs the link (empty: none), drawn `wakeups_per_flight` times per flight
    host_wakeup_ms: tuple[float, ...] = ()
    wakeups_per_flight: int = HOST_WAKEUPS_PER_FLIGHT
    # path floor: one-way latency every flight pays on top of the link's delay — the forwarding
    # cost of the path itself when the configured delay is 0 (secperf's emulator: veth pairs, a TUN
    # relay and namespaces, about 0.2 ms one way, measured by the validation bench); 0 for a link
    # whose delay already is the whole path
    path_floor_s: float = 0.0

    @property
    def rtt_s(self) -> float:
        return self.up.delay_s + self.down.delay_s

    @property
    def path_rtt_s(self) -> float:
        """The round trip a transport's timers see: the configured delays plus the path floor."""
        return self.rtt_s + 2 * self.path_floor_s

    def direction(self, sender: str) -> Direction:
        return self.up if sender == "client" else self.down

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "rtt_ms": self.rtt_s * 1e3,
            "mtu": self.mtu,
            "up": self.up.as_dict(),
            "down": self.down.as_dict(),
            "coap_ack_random_factor": self.coap_random_factor,
            **(
                {
                    "host_wakeup": {
                        "samples": len(self.host_wakeup_ms),
                        "mean_ms": sum(self.host_wakeup_ms) / len(self.host_wakeup_ms),
                        "per_flight": self.wakeups_per_flight,
                    }
                }
                if self.host_wakeup_ms
                else {}
            ),
            **({"path_floor_ms": self.path_floor_s * 1e3} if self.path_floor_s else {}),
        }


def _dir(d: NS.Direction, where: str) -> Direction:
    loss = d.mean_loss
    if d.delay_ms < 0 or d.jitter_ms < 0:
        raise LinkError(f"{where}: delay and jitter must not be negative")
    if loss >= 1.0:
        raise LinkError(f"{where}: loss {loss * 100:g}% means nothing arrives; give a loss below 100%")
    if d.ge and d.ge[2] >= 1.0 and d.ge[1] <= 0.0:
        raise LinkError(f"{where}: Gilbert-Elliott r=0 with 100% loss in the bad state never recovers; give r > 0")
    return Direction(d.delay_ms / 1e3, d.jitter_ms / 1e3, d.jitter_dist, loss, d.rate_bps, d.ge or None, d.reorder)


def from_spec(spec: NS.NetSpec, coap_random_factor: float = COAP_ACK_RANDOM_FACTOR) -> LinkModel:
    """The model of a NetSpec: delay, jitter, Bernoulli or Gilbert-Elliott loss (a two-state chain per
    direction advanced once per data packet, as the emulator's), reordering (a packet skips the
    propagation delay), rate and MTU. Duplication is ignored (a duplicate costs bytes, not time)."""
    if spec.loopback:
        z = Direction(0.0, 0.0, "normal", 0.0, 0.0)
        return LinkModel("loopback", z, z, 65536, coap_random_factor)
    return LinkModel(
        spec.name,
        _dir(spec.up, f"--network {spec.name!r} (up)"),
        _dir(spec.down, f"--network {spec.name!r} (down)"),
        spec.mtu,
        coap_random_factor,
    )


def with_host_wakeups(
    link: LinkModel, samples_ms: Iterable[float], per_flight: int = HOST_WAKEUPS_PER_FLIGHT
) -> LinkModel:
    """The link with host scheduling: every flight (RTT >= the relay's spin window) waits `per_flight` draws from the measured
    wake-up lateness of processes on the host that emulates the link (a loaded host wakes a process
    that slept for a flight late; on loopback the calibration already holds the short ping-pong
    wake-ups)."""

    xs = tuple(float(x) for x in samples_ms)
    if any(x < 0 for x in xs) or not 1 <= per_flight <= 10:
        raise LinkError("host wake-up lateness must be >= 0 ms, 1..10 per flight")
    return replace(link, host_wakeup_ms=xs, wakeups_per_flight=per_flight)


PATH_FLOOR_MAX_MS = 1000.0


def with_path_floor(link: LinkModel, floor_ms: float) -> LinkModel:
    """The link with a path floor: every flight, each way, waits `floor_ms` more than the configured
    delay (one traversal of the path's forwarding; per flight, not per packet: the packets of a
    flight are forwarded back to back)."""

    if not 0.0 <= floor_ms <= PATH_FLOOR_MAX_MS:
        raise LinkError(
            f"--path-floor: {floor_ms:g} ms must be between 0 and {PATH_FLOOR_MAX_MS:g} ms "
            f"(the one-way forwarding latency of the path at delay 0)"
        )
    return replace(link, path_floor_s=floor_ms / 1e3)


def check_mtu(model: FlightModel, link: LinkModel) -> None:
    lo, why = MTU_MIN.get(model.scenario.protocol, MTU_MIN[model.transport])  # a protocol's own minimum (quic)
    if link.mtu < lo:
        raise LinkError(
            f"--network: mtu={link.mtu} is below {model.scenario.protocol}'s minimum {lo} ({why}); "
            f"give mtu={lo} or more"
        )


def packets(payload: int, transport: str, mtu: int) -> tuple[int, int]:
    """(packets, wire bytes incl. IP/TCP/UDP headers) of one flight of `payload` bytes."""
    if transport in ("tcp", "tcp-syn"):
        mss = mtu - TCP_HDR
        n = max(1, math.ceil(payload / mss))
        return n, payload + n * TCP_HDR
    room = mtu - UDP_HDR
    n = max(1, math.ceil(payload / room))
    extra = (n - 1) * 25  # DTLS record + fragment headers of each further fragment
    n = max(1, math.ceil((payload + extra) / room))
    return n, payload + extra + n * UDP_HDR


def dtls_resend(msgs: Sequence[tuple[str, int]], mtu: int) -> tuple[int, int]:
    """(datagrams, wire bytes) of a DTLS flight when it is sent again. OpenSSL (the probe's client and
    server, libcoap's OpenSSL build) packs a flight's records into one datagram the first time but
    resends it one message per datagram: a packet capture over `delay=10ms,loss=5%` shows the
    server's 1,367-byte flight (ServerHello, Certificate, ServerKeyExchange, ServerHelloDone) go
    out again as datagrams of 134, 935, 369 and 73 bytes, the client's key-exchange flight as 106,
    62 and 109. A resent flight therefore has more datagrams to lose than the first send."""
    n = wire = 0
    for _, size in msgs:
        pk, w = packets(size, "udp", mtu)
        n += pk
        wire += w
    return n, wire


def extra_window_rounds(segments: int, iw: int = TCP_INITIAL_WINDOW) -> int:
    """Round trips a flight of `segments` waits for ACKs in slow start beyond the first window."""
    rounds, window, sent = 0, iw, 0
    while sent + window < segments:
        sent += window
        window *= 2
        rounds += 1
    return rounds
