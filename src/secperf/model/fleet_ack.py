"""The accept queue's second gate: a handshake whose final ACK finds the accept queue full (fleet's storm model).

Linux checks the accept queue twice. A SYN is dropped when the queue is full at SYN time (tcp_conn_request);
a SYN that passes gets its SYN-ACK, and the client's final ACK creates the connection only if the queue
has room when that ACK arrives (tcp_v4_syn_recv_sock: sk_acceptq_is_full, ListenOverflows). With
net.ipv4.tcp_abort_on_overflow at its default 0, tcp_check_req marks the request as ACKed and drops the
ACK (net/ipv4/tcp_minisocks.c, label listen_overflow): the client's connect() has already returned, it
sends its first data (the TLS ClientHello) and retransmits it on its own timeout, and the server's
request timer retransmits the SYN-ACK (reqsk_timer_handler: TCP_TIMEOUT_INIT 1 s doubling,
net.ipv4.tcp_synack_retries 5), which the client answers with an ACK. Every such segment reaching the
request retries the promotion and succeeds when the queue has room then. With tcp_abort_on_overflow 1
the server resets the connection at the first overflowing ACK.

Which SYNs pass the first gate and fail the second: those that arrive after the queue's last free
place was taken at SYN time by a SYN whose ACK has not come yet. A SYN's ACK comes one round trip
later (`rtt_s`), so the SYNs arriving within one round trip of the moment the queue fills pass. On one
generator host a second term adds: the client kernel sends its SYN retransmissions from its timer wheel,
whose timers 1 s out fire together in buckets of 8 jiffies (kernel/time/timer.c: LVL_CLK_SHIFT 3, level 1
for 64..511 jiffies; 32 ms at CONFIG_HZ 250), and on loopback the SYNs of one bucket are all queued
(netif_rx inside the timer softirq) before the first of their ACKs is processed, so every SYN of a bucket
that meets a queue with room passes. The first SYNs of a storm come from the generator's connect() calls,
each handled to its ACK before connect() returns (the softirq runs when the transmit path enables bottom
halves again), so only the round trip counts for them.

The client's data retransmission timeout after the handshake: max(TCP_RTO_MIN 200 ms, its RTT
estimate) plus the RTT (tcp_rtt_estimator), doubling (`data_rto_s`). Not modelled: SYN cookies (a SYN
that finds the SYN queue itself full gets a cookie instead of a request, so no SYN-ACK retransmission
retries it, only the client's data), and the request timer's pruning (with more than half the SYN queue
holding requests that have timed out once, tcp_synack_retries is lowered towards 2 and such requests
expire after 7 s; the client's next data then meets no request and is reset)."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

TCP_RTO_MIN_S = 0.2  # include/net/tcp.h TCP_RTO_MIN (HZ / 5)
LVL_CLK_SHIFT = 3  # kernel/time/timer.c: each timer-wheel level is 8 times coarser than the one below
LVL_BITS = 6  # 64 buckets per level


def timer_bucket_s(timeout_s: float, hz: int) -> float:
    """How far apart the kernel's timer wheel fires timers set `timeout_s` ahead at CONFIG_HZ `hz`: the
    granularity of the level that holds them (level n holds up to 64 * 8**n jiffies, in steps of 8**n)."""
    jiffies = timeout_s * hz
    level = 0
    while jiffies >= (2**LVL_BITS) << (LVL_CLK_SHIFT * level) and level < 8:
        level += 1
    return float(1 << (LVL_CLK_SHIFT * level)) / hz


def retry_offsets_s(
    data_rto_s: float, synack_rto_s: float, synack_retries: int, horizon_s: float
) -> list[tuple[float, str]]:
    """Seconds after an overflowing final ACK at which the client's segments reach the request again, each
    with its kind: "data", its data retransmissions (data_rto_s doubling), which carry the ClientHello;
    "synack", its answers to the server's SYN-ACK retransmissions (synack_rto_s doubling, synack_retries of
    them; counted from the SYN-ACK, sent one RTT before the ACK), pure ACKs: a connection they create
    still waits for the client's next data retransmission before its handshake can start."""
    out: dict[float, str] = {}
    t, rto = 0.0, data_rto_s
    while t + rto < horizon_s:
        t += rto
        out[round(t, 6)] = "data"
        rto *= 2
    t, rto = 0.0, synack_rto_s
    for _ in range(synack_retries):
        if t + rto >= horizon_s:
            break
        t += rto
        out.setdefault(round(t, 6), "synack")
        rto *= 2
    return sorted(out.items())


# attempts per attempt number, step of the overflow, index of the next retry, deadline step, schedule
# (0: the server holds a request and retransmits its SYN-ACK; 1: a SYN cookie, the client's data only)
Cohort = tuple[np.ndarray, int, int, int, int]


class AckPath:
    """Attempts whose final ACK overflowed, per attempt number, waiting for their next retry or their
    client's timeout, and those a pure ACK promoted, waiting for their ClientHello's next retransmission.
    At most `syn_queue` of them hold a request (inet_csk_reqsk_queue_is_full: the SYN queue holds as many
    as the accept queue); a SYN that found it full got a cookie (net.ipv4.tcp_syncookies 1), so no SYN-ACK
    is sent again for it and only its client's data retries. Cohorts are kept by the step of their next
    event, so the cost grows with the number of steps that made such attempts, not with the fleet."""

    def __init__(self, offsets_s: list[tuple[float, str]], dt_s: float, timeout_s: float, syn_queue: float) -> None:
        data = [(o, k) for o, k in offsets_s if k == "data"]
        self.offsets = [[max(1, int(round(o / dt_s))) for o, _ in x] for x in (offsets_s, data)]
        self.kinds = [[k for _, k in x] for x in (offsets_s, data)]
        self.dt_s, self.timeout_s, self.syn_queue = dt_s, timeout_s, syn_queue
        self.due: dict[int, list[Cohort]] = defaultdict(list)
        self.ready: dict[int, np.ndarray] = {}  # promoted, their ClientHello arriving at that step
        self.waiting = 0.0
        self.held = 0.0  # requests held by waiting attempts

    def kind(self, c: Cohort) -> str:
        return self.kinds[c[4]][c[2]]

    def add(self, t: int, vec: np.ndarray, elapsed_s: float) -> None:
        """Attempts `vec` overflowed at step t, `elapsed_s` after they began: they retry at the offsets that
        come before their client's timeout, then fail at it."""
        deadline = t + max(1, int(math.ceil((self.timeout_s - elapsed_s) / self.dt_s)))
        n = float(vec.sum())
        self.waiting += n
        req = min(1.0, max(0.0, self.syn_queue - self.held) / n) if n > 0 else 0.0
        self.held += n * req
        for share, sched in ((req, 0), (1 - req, 1)):
            if share > 0:
                self._schedule((vec * share, t, 0, deadline, sched))

    def _schedule(self, c: Cohort) -> None:
        vec, t0, k, deadline, sched = c
        nxt = t0 + self.offsets[sched][k] if k < len(self.offsets[sched]) else deadline
        self.due[min(nxt, deadline)].append(c)

    def _release(self, c: Cohort, amount: float) -> None:
        if c[4] == 0:
            self.held = max(0.0, self.held - amount)

    def pop(self, t: int) -> tuple[list[Cohort], np.ndarray | None, np.ndarray | None]:
        """The cohorts retrying at step t, the attempts whose timeout ends there (or None), and the promoted
        attempts whose ClientHello arrives there (or None)."""
        retry: list[Cohort] = []
        expired = None
        for c in self.due.pop(t, []):
            if t >= c[3]:
                expired = c[0] if expired is None else expired + c[0]
                self._release(c, float(c[0].sum()))
            else:
                retry.append(c)
        if expired is not None:
            self.waiting -= float(expired.sum())
        ready = self.ready.pop(t, None)
        if ready is not None:
            self.waiting -= float(ready.sum())
        return retry, expired, ready

    def retry_failed(self, c: Cohort, share: float) -> None:
        if share > 0:
            self._schedule((c[0] * share, c[1], c[2] + 1, c[3], c[4]))

    def promoted(self, c: Cohort, share: float) -> np.ndarray | None:
        """`share` of cohort c got a place in the accept queue at its retry: returned when its segment was
        the ClientHello (its handshake starts now); after a pure ACK it waits for the client's next data
        retransmission (or its timeout, whichever comes first), and None is returned."""
        vec, t0, k, deadline, sched = c
        got = vec * share
        self._release(c, float(got.sum()))
        if self.kind(c) == "data":
            self.waiting -= float(got.sum())
            return got
        later = zip(self.offsets[sched][k + 1 :], self.kinds[sched][k + 1 :])
        nxt = next((t0 + o for o, kind in later if kind == "data"), deadline)
        if nxt >= deadline:  # its timeout comes first: it fails there (the cookie schedule has no retry left)
            self.due[deadline].append((got, t0, len(self.offsets[1]), deadline, 1))
        else:
            self.ready[nxt] = self.ready[nxt] + got if nxt in self.ready else got
        return None
