"""Vectorised Monte Carlo of connection set-up over a plan (model/predict.py): each of N connections
walks the exchanges; per flight it draws the sender's compute (one lognormal factor per party and
connection: a slow connection is slow throughout), the secure element's calls, propagation with
jitter, serialisation at the link rate, and the transport's retransmission waits when a packet is
lost. Work happens in chunks of numpy arrays, and statistics stream: percentiles from a
log-spaced histogram (0.115% bins) once N exceeds one chunk, exact below; the component sums,
bytes and packets as running totals. So 10 million connections need no more memory than one chunk.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np
from scipy.special import ndtri

from ..core.errors import InputError
from ..inputs import se_profiles as SE
from ..model import network as N
from ..model.flights import quic as FQ
from ..model.predict import FlightPlan, Plan
from . import recovery as RC
from .chains import Chains, geometric_failures

CHUNK = 1 << 18
COMPONENTS = (
    "client_compute",
    "server_compute",
    "secure_element",
    "propagation",
    "serialisation",
    "retransmission_wait",
    "host_scheduling",
    "path_floor",
)
PERCENTILES = (50.0, 90.0, 95.0, 99.0)
BINS_PER_DECADE = 2000
DECADES = 10  # 1 µs .. 10^10 µs
NBINS = BINS_PER_DECADE * DECADES
RESERVOIR = 2000


class Histogram:
    """Log-spaced histogram of positive values in µs; percentiles at the bin's geometric centre."""

    def __init__(self) -> None:
        self.counts = np.zeros(NBINS, dtype=np.int64)
        self.n = 0

    def add(self, x_us: np.ndarray) -> None:
        idx = np.log10(np.maximum(x_us, 1.0))
        idx *= BINS_PER_DECADE
        np.clip(idx, 0, NBINS - 1, out=idx)
        self.counts += np.bincount(idx.astype(np.int32), minlength=NBINS)
        self.n += x_us.size

    def percentile(self, q: float) -> float:
        cum = np.cumsum(self.counts)
        k = int(np.searchsorted(cum, math.ceil(q / 100.0 * self.n)))
        return 10 ** ((k + 0.5) / BINS_PER_DECADE)


class DrawSummary(TypedDict):
    """A Stream's summary of simulated draws (µs), as a what-if series' derived percentiles."""

    n: int
    mean_us: float
    min_us: float
    max_us: float
    percentiles_from: str
    p50_us: float
    p90_us: float
    p95_us: float
    p99_us: float
    sd_us: float
    median_ci95_us: list[float]


@dataclass
class Stream:
    """Running statistics of one metric."""

    hist: Histogram = field(default_factory=Histogram)
    exact: list[np.ndarray] = field(default_factory=list)
    total: float = 0.0
    total_sq: float = 0.0
    n: int = 0
    vmin: float = math.inf
    vmax: float = 0.0

    def add(self, x: np.ndarray, keep_exact: bool) -> None:
        self.hist.add(x)
        if keep_exact:
            self.exact.append(x.copy())
        self.total += float(x.sum())
        self.total_sq += float(np.square(x).sum())
        self.n += x.size
        self.vmin = min(self.vmin, float(x.min()))
        self.vmax = max(self.vmax, float(x.max()))

    def summary(self, exact: bool) -> DrawSummary:
        # the median's 95% interval from order statistics (normal approximation of the binomial
        # rank): ranks n/2 ± 1.96·sqrt(n)/2, i.e. the 50 ± 98/sqrt(n) percentiles
        half = min(49.0, 98.0 / math.sqrt(self.n))
        if exact:
            xs = np.concatenate(self.exact)
            vals = [float(v) for v in np.percentile(xs, PERCENTILES)]
            lo, hi = np.percentile(xs, [50 - half, 50 + half])
        else:
            vals = [self.hist.percentile(q) for q in PERCENTILES]
            lo, hi = self.hist.percentile(50 - half), self.hist.percentile(50 + half)
        p50, p90, p95, p99 = vals  # PERCENTILES' order
        mean = self.total / self.n
        return DrawSummary(
            n=self.n,
            mean_us=mean,
            min_us=self.vmin,
            max_us=self.vmax,
            percentiles_from="exact" if exact else f"histogram ({BINS_PER_DECADE} log bins per decade)",
            p50_us=p50,
            p90_us=p90,
            p95_us=p95,
            p99_us=p99,
            sd_us=math.sqrt(max(0.0, (self.total_sq - self.n * mean * mean) / max(1, self.n - 1))),
            median_ci95_us=[float(lo), float(hi)],
        )


# --- samplers --------------------------------------------------------------------------------
def se_delays_ms(profile: SE.Profile, calls: tuple[str, ...], rng: np.random.Generator, n: int) -> np.ndarray:
    """Total delay (ms) of `calls` on the profile, n draws each by the one delay sampler
    (inputs/se_profiles.py Dist.sample_ms: body or tail per call, truncation, clamp, as the shim)."""
    tot = np.zeros(n)
    for fn in calls:
        tot += profile.sample_ms(fn, rng, n)
    return tot


def _propagation(
    rng: np.random.Generator, d: N.Direction, n: int, extra_rounds: int, rtt: float, packets: int = 1
) -> np.ndarray | float:
    base = d.delay_s + extra_rounds * rtt
    prop: np.ndarray | float
    if d.jitter_s <= 0:
        prop = base
    else:
        # The emulator (and a real link that delivers in order) draws the delay of every packet
        # and never releases a packet before the one ahead of it, so a flight of k back-to-back
        # packets has arrived at the largest of k draws: sampled directly as the k-th order
        # statistic, F^-1(V^(1/k)). Packets of an earlier flight are an RTT ahead and do not hold
        # a flight back; a pure ACK sent just before a flight is not counted (an assumption).
        k = max(int(packets), 1)
        if d.jitter_dist == "pareto":  # shape 3, mean 1.5 xm, sd 0.866 xm: shifted to mean 0
            xm = d.jitter_s / math.sqrt(0.75)
            u = rng.random(n) if k == 1 else 1.0 - rng.random(n) ** (1.0 / k)
            j = xm * (np.maximum(u, 1e-300) ** (-1.0 / 3.0)) - 1.5 * xm
        elif k == 1:
            j = d.jitter_s * rng.standard_normal(n)
        else:
            j = d.jitter_s * ndtri(rng.random(n) ** (1.0 / k))
        prop = np.maximum(base + j, 0.0)
    if d.reorder > 0 and d.delay_s > 0:
        # the emulator releases a reordered packet without its propagation delay; a flight has
        # arrived when its last packet has, so it skips the delay only if every packet was reordered
        skip = rng.random(n) < d.reorder**packets
        prop = np.where(skip, extra_rounds * rtt, prop)
    return prop


# --- one chunk -------------------------------------------------------------------------------
def tcp_first_wait(rtt: float, packets: int, pos: np.ndarray) -> np.ndarray:
    """Seconds from sending a TCP flight to resending its first lost segment (Linux 6.x, SACK and
    RACK-TLP on, net.ipv4.tcp_early_retrans=3): three or more later segments of the flight SACKed ->
    retransmitted at once, one RTT after sending (the duplicate-ACK threshold); one or two later
    segments -> RACK's reordering window (min RTT / 4) after that; the last segment -> the tail-loss
    probe, 2·SRTT + 2 ms with several segments out, 2·SRTT + 200 ms (TCP_RTO_MIN, for a delayed ACK)
    with one; every one of them at most the RTO, SRTT + max(2·SRTT, 200 ms) on the first sample."""
    rto = N.tcp_rto(rtt)
    if packets == 1:
        return np.full(pos.shape, min(rto, 2 * rtt + N.TCP_RTO_MIN_S))
    tlp = min(rto, 2 * rtt + N.TCP_TLP_MIN_S)
    later = packets - 1 - pos
    return np.where(later >= 3, rtt, np.where(later >= 1, min(rto, rtt * 1.25), tlp))


def _tcp_wait(
    rng: np.random.Generator, chains: Chains, sender: str, d: N.Direction, n: int, packets: int, rtt: float, syn: bool
) -> tuple[np.ndarray, np.ndarray] | None:
    """Retransmission wait of one TCP flight (seconds) and the extra segments sent; None on a
    link that loses nothing."""
    if d.loss <= 0:
        return None
    if syn:
        # SYN or SYN-ACK: the client's SYN timer, 1 s for the first four retries, then doubling
        # (a lost SYN-ACK is answered by the client's retransmitted SYN at the same moment)
        lost, _ = chains.send(rng, sender, d, 1, None, n)
        f = np.zeros(n)
        idx = np.nonzero(lost)[0]
        if idx.size:
            f[idx] = 1.0 + chains.retries(rng, sender, d, 1, idx, N.TCP_SYN_RETRIES)
        return N.syn_wait_s(f), f
    lost, pos = chains.send(rng, sender, d, packets, None, n)
    wait = np.zeros(n)
    extra = np.zeros(n)
    idx = np.nonzero(lost)[0]
    if not idx.size:
        return wait, extra
    first = tcp_first_wait(rtt, packets, pos[idx])
    g = chains.retries(rng, sender, d, 1, idx, N.TCP_MAX_RETRIES)  # the retransmission lost again
    wait[idx] = first + N.tcp_rto(rtt) * (np.exp2(g) - 1.0)
    extra[idx] = 1.0 + g
    return wait, extra


def simulate_chunk(p: Plan, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    link = p.link
    rtt = link.path_rtt_s  # what the transports' timers and slow start see
    floor = link.path_floor_s
    if p.spread:
        # the calibration row's measured spread: one factor per connection for both parties, as
        # the row measured them together (a slow moment of the host slows both)
        zc = zs = np.asarray(p.spread)[rng.integers(0, len(p.spread), n)]
    else:
        zc = np.exp(p.sigma_client * rng.standard_normal(n)) if p.sigma_client > 0 else np.ones(n)
        zs = np.exp(p.sigma_server * rng.standard_normal(n)) if p.sigma_server > 0 else np.ones(n)
    t = np.zeros(n)
    comp = {c: np.zeros(n) for c in COMPONENTS}
    up_bytes = np.zeros(n)
    down_bytes = np.zeros(n)
    up_pk = np.zeros(n)
    down_pk = np.zeros(n)
    failed = np.zeros(n, dtype=bool)
    t_start = None
    t_done = None
    se_ms = None
    if p.se_profile is not None:
        se_ms = se_delays_ms(p.se_profile, p.se_calls, rng, n) + p.se_host_us / 1e3
    fl = p.flights
    chains = Chains(rng, link, n)
    state = RC.State(n)  # what a DTLS 1.3 or QUIC exchange's recovery needs from the ones before (sim/recovery.py)
    wake = (
        np.asarray(link.host_wakeup_ms) * 1e-3 if link.host_wakeup_ms and link.rtt_s >= N.HOST_SPIN_WINDOW_S else None
    )
    stop = False
    for i, e in enumerate(p.model.exchanges):
        if stop:
            break
        out, back = fl[2 * i], fl[2 * i + 1]
        if p.model.start_mark in (("out_start", i), ("back_recv", i - 1)):
            t_start = t.copy()
        legs = []
        for fp in (out, back):
            if fp is None:
                continue
            party_z = zc if fp.sender == "client" else zs
            c = fp.compute_us * 1e-6 * party_z
            comp["client_compute" if fp.sender == "client" else "server_compute"] += c
            t += c
            state.compute[(i, fp.sender)] = c
            if fp.se and se_ms is not None:
                s = se_ms * 1e-3
                comp["secure_element"] += s
                t += s
            if fp.sender == "client":
                state.sent_at = t.copy()
            if fp.handshake_done:
                t_done = t.copy()
                if p.until == "handshake":  # the end point: nothing of this flight is sent
                    stop = True
                    break
            if e.transport == "quic-final":  # QUIC 0-RTT's Finished: sent after the answer, nothing waits for it
                up_bytes += fp.wire_bytes
                up_pk += fp.packets
                break
            d = link.direction(fp.sender)
            prop = _propagation(rng, d, n, fp.extra_rounds, rtt, fp.packets)
            ser = fp.wire_bytes * 8.0 / d.rate_bps if d.rate_bps > 0 else 0.0
            comp["propagation"] += prop
            comp["serialisation"] += ser
            if floor:
                comp["path_floor"] += floor
                t += floor
            if wake is not None:
                w = wake[rng.integers(0, wake.size, (link.wakeups_per_flight, n))].sum(axis=0)
                comp["host_scheduling"] += w
                t += w
            t += prop
            t += ser
            (up_bytes if fp.sender == "client" else down_bytes).__iadd__(fp.wire_bytes)
            (up_pk if fp.sender == "client" else down_pk).__iadd__(fp.packets)
            if e.transport in ("tcp", "tcp-syn"):
                waited = _tcp_wait(rng, chains, fp.sender, d, n, fp.packets, rtt, e.transport == "tcp-syn")
                if waited is not None:
                    w, extra = waited
                    comp["retransmission_wait"] += w
                    t += w
                    seg = fp.wire_bytes / fp.packets
                    (up_bytes if fp.sender == "client" else down_bytes).__iadd__(extra * seg)
                    (up_pk if fp.sender == "client" else down_pk).__iadd__(extra)
                    if e.transport == "tcp-syn":
                        failed |= extra > N.TCP_SYN_RETRIES
            legs.append(fp)
        if stop:
            break
        if e.transport in RC.TRANSPORTS and e.transport != "dtls13-app":
            # per-record ACKs (DTLS 1.3) and probe timeouts from each side's RTT sample (QUIC)
            rec = RC.recover(e.transport, rng, chains, link, legs, n, rtt, state, i)
            if rec is not None:
                comp["retransmission_wait"] += rec.wait
                t += rec.wait
                up_bytes += rec.up_bytes
                up_pk += rec.up_pk
                down_bytes += rec.down_bytes
                down_pk += rec.down_pk
                failed |= rec.failed
        elif e.transport in ("dtls", "coap", "dtls13-app", "ovpn", "quic-initial"):
            # the client's timer covers its flight and the answer: any loss costs one timer period
            if e.transport == "dtls13-app":  # only the request is resent (sim/recovery.py)
                legs[0] = RC.app_request_only(legs[0])
            f = _exchange_failures(rng, chains, link, legs, n, e.transport)
            if f is not None:
                t0: np.ndarray | float
                if e.transport in ("coap", "dtls13-app"):
                    t0 = N.COAP_ACK_TIMEOUT_S * (1.0 + (link.coap_random_factor - 1.0) * rng.random(n))
                    failed |= f > N.COAP_MAX_RETRANSMIT
                elif e.transport == "dtls":
                    t0 = N.DTLS_TIMER_S
                    failed |= f > N.DTLS_MAX_RETRIES
                elif e.transport.startswith("quic"):  # QUIC's probe timeout (model/flights/quic.py)
                    t0 = FQ.pto_s(e.transport, rtt)
                    failed |= f > FQ.MAX_PTO
                else:
                    t0 = N.OVPN_TLS_TIMEOUT_S
                w = t0 * (np.exp2(np.minimum(f, 20)) - 1.0)
                comp["retransmission_wait"] += w
                t += w
                up_bytes += f * legs[0].resend_wire_bytes
                up_pk += f * legs[0].resend_packets
                if len(legs) > 1:
                    down_bytes += f * legs[1].resend_wire_bytes
                    down_pk += f * legs[1].resend_packets
    if p.final_us and not stop:
        c = p.final_us * 1e-6 * zc
        comp["client_compute"] += c
        t += c
    if t_start is None:
        raise AssertionError(f"{p.model.scenario.protocol}: the handshake timer's start mark was never reached")
    if t_done is None:
        t_done = t
    up_air = up_bytes * 8.0 / link.up.rate_bps if link.up.rate_bps > 0 else np.zeros(n)
    down_air = down_bytes * 8.0 / link.down.rate_bps if link.down.rate_bps > 0 else np.zeros(n)
    return {
        "usable": t,
        "handshake": t_done - t_start,
        **comp,
        "bytes_up": up_bytes,
        "bytes_down": down_bytes,
        "packets_up": up_pk,
        "packets_down": down_pk,
        "airtime_tx": up_air,
        "airtime_rx": down_air,
        "failed": failed,
    }


_RETRY_LIMIT = {
    "dtls": N.DTLS_MAX_RETRIES,
    "coap": N.COAP_MAX_RETRANSMIT,
    "dtls13-app": N.COAP_MAX_RETRANSMIT,
    "ovpn": N.DTLS_MAX_RETRIES,
    "quic-initial": 8,
    "quic-0rtt": 8,
    "quic": 8,
}  # flights/quic.py MAX_PTO


def _exchange_failures(
    rng: np.random.Generator, chains: Chains, link: N.LinkModel, legs: list[FlightPlan], n: int, transport: str
) -> np.ndarray | None:
    """Failed attempts of a datagram exchange (the client's flight and the answer, resent together
    on the client's timer) before one gets through; None when nothing can be lost."""
    dirs = [link.direction(fp.sender) for fp in legs]
    if all(d.loss <= 0 for d in dirs):
        return None
    if not any(d.ge for d in dirs):
        ok = ok_again = 1.0
        for fp, d in zip(legs, dirs):
            ok *= (1.0 - d.loss) ** fp.packets
            ok_again *= (1.0 - d.loss) ** fp.resend_packets  # a resent DTLS flight: one datagram per message
        again = geometric_failures(rng, n, 1.0 - ok_again)
        first = rng.random(n) < 1.0 - ok
        return first * (1.0 + (again if again is not None else 0.0))
    f = np.zeros(n)
    alive = np.arange(n)
    for attempt in range(_RETRY_LIMIT[transport] + 2):
        if not alive.size:
            break
        lost = np.zeros(alive.size, dtype=bool)
        for fp, d in zip(legs, dirs):
            todo = np.nonzero(~lost)[0]  # the answer is sent only if the flight arrived
            if not todo.size:
                break
            lk, _ = chains.send(
                rng, fp.sender, d, fp.packets if attempt == 0 else fp.resend_packets, alive[todo], todo.size
            )
            lost[todo[lk]] = True
        f[alive[lost]] += 1
        alive = alive[lost]
    return f


# --- the run ---------------------------------------------------------------------------------
def simulate(p: Plan, n: int, seed: int = 1, chunk: int = CHUNK) -> dict[str, Any]:
    """n simulated connections: summaries of the set-up time ('usable': from the first packet to
    the plan's end point — the protocol answer, or with Plan.until == "handshake" the client's
    handshake complete) and of the handshake timer window, the mean breakdown, bytes, packets,
    radio time and the share of connections that gave up; a reservoir of raw samples for plots."""
    if n < 1:
        raise InputError("n must be at least 1")
    rng = np.random.default_rng(seed)
    usable, hs = Stream(), Stream()
    sums = {
        k: 0.0
        for k in COMPONENTS + ("bytes_up", "bytes_down", "packets_up", "packets_down", "airtime_tx", "airtime_rx")
    }
    failed = 0
    exact = n <= chunk
    reservoir = None
    done = 0
    while done < n:
        m = min(chunk, n - done)
        r = simulate_chunk(p, rng, m)
        u_us = r["usable"] * 1e6
        usable.add(u_us, exact)
        hs.add(r["handshake"] * 1e6, exact)
        for k in sums:
            sums[k] += float(r[k].sum()) if isinstance(r[k], np.ndarray) else float(r[k]) * m
        failed += int(r["failed"].sum())
        if reservoir is None:
            reservoir = u_us[:RESERVOIR].round(1).tolist()
        done += m
    su = usable.summary(exact)
    out = {
        "n": n,
        "seed": seed,
        "usable": su,
        "handshake": hs.summary(exact),
        "breakdown_mean_us": {k: sums[k] / n * 1e6 for k in COMPONENTS},
        "bytes_up_mean": sums["bytes_up"] / n,
        "bytes_down_mean": sums["bytes_down"] / n,
        "packets_up_mean": sums["packets_up"] / n,
        "packets_down_mean": sums["packets_down"] / n,
        "radio": {
            "on_mean_us": su["mean_us"],
            "airtime_tx_mean_us": sums["airtime_tx"] / n * 1e6,
            "airtime_rx_mean_us": sums["airtime_rx"] / n * 1e6,
            "assumption": "the radio stays on from the first packet to the answer (no sleep between "
            "flights); airtime = wire bytes / link rate per direction",
        },
        "failed_share": failed / n,
        "reservoir_us": reservoir,
    }
    return out
