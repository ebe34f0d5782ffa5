"""Reconnect storms: N devices reconnecting to one server after an outage, as a fluid queueing model.

Assumptions (all in FleetModel, with units):
- every device starts its first attempt at t = 0 (an outage ends) or spread over `spread_s`
  (a synchronised schedule with some jitter);
- the server handles `capacity_per_s` handshakes per second (measured: `secperf server`), FIFO,
  for a mix of full and resumed handshakes (`resumed_share`, each kind at its own capacity);
- an attempt that would wait longer than the client's `timeout_s` in the server's queue fails: the
  device notices after `timeout_s` and retries after its policy's delay (none: at once; fixed;
  exponential back-off with full jitter; decorrelated jitter, taken at its mean growth), at most
  `max_attempts` attempts;
- the listen backlog: the kernel holds at most L = min(`backlog`, `somaxconn`) connections the
  server has not accepted yet (listen(2); Linux caps the backlog at net.core.somaxconn, 4096 since
  5.4, 128 before). An event-loop server (mosquitto, nginx) accepts once per loop pass and a pass
  lasts as long as the handshake work it found (`server_s_per_handshake` each: the server's own CPU,
  which is 1 / capacity when the server is what limits the rate, and less when the clients or the
  network do), so at most L attempts get in per pass; an idle server takes them as they come, up
  to `accept_per_s` (an assumption, not measured: accept(2) and registering the socket take tens of
  microseconds; SYNs within one time step count as spread over it). A SYN that finds the accept
  queue full is dropped (Linux tcp_conn_request: ListenOverflows; SYN cookies do
  not help, they stand in for the SYN queue only, and the full accept queue is checked after them).
  The client's kernel sends the SYN again after its retransmission timeout: TCP_TIMEOUT_INIT 1 s
  (`syn_rto_s`, RFC 6298). Since Linux 6.5 the timeout stays 1 s for the first
  `syn_linear_timeouts` retransmissions (net.ipv4.tcp_syn_linear_timeouts, 4; ip-sysctl: RTOs
  1, 1, 1, 1, 1, 2, 4 ...) and doubles after; a dropped attempt arrives again 1, 2, 3, 4, 5, 7, 11,
  19 ... s after its first SYN (0: RFC 6298's doubling from the first, 1, 3, 7, 15 ... s, kernels
  before 6.5), `syn_retries` + `syn_linear_timeouts` times (net.ipv4.tcp_syn_retries, 6; the kernel's
  tcp_write_timeout adds the linear ones); connect() then fails after 131 s (127 s before 6.5: the
  last wait is the next timeout), or the client's `timeout_s` ends the attempt first. Such
  an attempt fails as above (the back-off starts when the client notices). An attempt accepted
  after a retransmission still gets the full `timeout_s` in the server's queue (optimistic by at
  most the seconds it spent on SYNs);
- `start_pass_s`: the server may be in a pass already when the storm begins: mosquitto's epoll loop takes
  the events of the connections the outage reset (read error, then the client's disconnect work) in the
  same passes as its listener (mux_epoll.c: each event of one epoll_wait in order, the listener's
  accept loop when its event comes), so SYNs arriving meanwhile get only the accept queue. 0: the
  server saw the outage earlier and is idle at t = 0;
- the second gate (model/fleet_ack.py): a SYN passes while the accept queue has room, but its final ACK
  must find room too (tcp_v4_syn_recv_sock). The SYNs arriving within `rtt_s` of the queue's filling (and,
  for SYN retransmissions sent by one generator's kernel, within its timer bucket `syn_batch_s`) pass and
  overflow at their ACK: with tcp_abort_on_overflow 0 (`abort_on_overflow`) the client, connected in its
  own view, retries with its data retransmissions (200 ms doubling) and its answers to the server's
  SYN-ACK retransmissions (1 s doubling, `synack_retries`), each promoted when the queue has room then (a
  pure ACK's connection still waits for the next data retransmission); one that finds no room before its
  client's timeout fails there. With abort_on_overflow the server resets it at once. 0 and 0: no such SYNs;
- a served device is back `device_handshake_s` later (its own handshake cost: the what-if model);
- with `abandoned_work` the server still does the handshake of an attempt whose client gave up
  (nginx does: it reads the ClientHello that waited in its queue and signs before it notices the
  closed socket); such work takes capacity but brings no device back. Without it, work beyond the
  timeout is dropped at once, which is optimistic: `secperf-loadgen --storm` against nginx shows
  storms that never recover once the timeout is below N / capacity (benchmarks/server.py).
The state is a histogram of attempts per time step and attempt number, so the cost does not grow
with N: 10 million devices take the same time as 1,000. SYNs waiting for their retransmission sit
in one delay line per retransmission (keyed by time step modulo the line's length, a vector over
attempt numbers per step): the lines hold sum of 2**r * syn_rto_s / dt_s steps for the
retransmissions that fit in `timeout_s` (at most 67 s with the defaults: 1,340 steps of 0.05 s),
times max_attempts + 1 float64s, about 1 MB for max_attempts 100 whatever N is (100k devices or
100 million); a model whose lines would pass SYN_LINE_BYTES is refused."""

from __future__ import annotations

import math
import numbers
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.result_schema import Result, Series, ServerDerived
from .fleet_ack import TCP_RTO_MIN_S, AckPath, retry_offsets_s

POLICIES = ("none", "fixed", "exponential", "decorrelated")
MAX_BACKLOG = 10_000_000
SYN_LINE_BYTES = 256 * 2**20  # the SYN retransmission delay lines may take at most this much memory


@dataclass(frozen=True)
class FleetModel:
    devices: int = 100_000
    capacity_full_per_s: float = 600.0  # full handshakes/s at saturation
    capacity_resumed_per_s: float = 1500.0  # resumed handshakes/s at saturation
    resumed_share: float = 0.0
    policy: str = "exponential"
    base_s: float = 1.0  # fixed delay, or back-off base
    cap_s: float = 60.0  # back-off cap
    timeout_s: float = 10.0
    backlog: int = 4096  # the server's listen(2) backlog (mosquitto: 100, nginx: 511)
    somaxconn: int = 4096  # net.core.somaxconn: the kernel's cap on the backlog
    syn_retries: int = 6  # net.ipv4.tcp_syn_retries of the clients
    syn_rto_s: float = 1.0  # the first SYN retransmission timeout (TCP_TIMEOUT_INIT)
    syn_linear_timeouts: int = 4  # net.ipv4.tcp_syn_linear_timeouts (Linux >= 6.5; 0: doubling at once)
    accept_per_s: float = 20_000.0  # connections an idle server takes off its accept queue per second
    server_s_per_handshake: float | None = None  # the server's own work per handshake (None: 1 / capacity)
    start_pass_s: float = 0.0  # seconds of a pass the server is in at t = 0 (closing the reset connections)
    # the second gate (model/fleet_ack.py): SYNs that pass while their ACKs would overflow the accept queue
    rtt_s: float = 0.0  # round trip between the clients and the server
    syn_batch_s: float = 0.0  # SYN retransmissions sent together by one client kernel (its timer bucket); 0: none
    abort_on_overflow: bool = False  # net.ipv4.tcp_abort_on_overflow of the server: reset instead of retrying
    synack_retries: int = 5  # net.ipv4.tcp_synack_retries of the server
    synack_rto_s: float = 1.0  # the server's first SYN-ACK retransmission timeout (TCP_TIMEOUT_INIT)
    max_attempts: int = 100
    abandoned_work: bool = False  # the server also serves attempts whose client gave up
    spread_s: float = 0.0
    device_handshake_s: float = 0.0
    dt_s: float = 0.05
    horizon_s: float = 7200.0

    def check(self) -> None:
        if not 1 <= self.devices <= 100_000_000:
            raise InputError(f"--devices {self.devices}: give 1..100,000,000")
        if self.policy not in POLICIES:
            raise InputError(f"--policy {self.policy!r}: known: {', '.join(POLICIES)}")
        if self.capacity_full_per_s <= 0 or self.capacity_resumed_per_s <= 0:
            raise InputError("--capacity: handshakes per second must be > 0")
        if not 0 <= self.resumed_share <= 1:
            raise InputError(f"--resumed-share {self.resumed_share}: give a share between 0 and 1")
        for name, v in (("--timeout", self.timeout_s), ("--base", self.base_s), ("--cap", self.cap_s)):
            if not v > 0:
                raise InputError(f"{name} {v}: must be > 0")
        if self.cap_s < self.base_s and self.policy in ("exponential", "decorrelated"):
            raise InputError(
                f"--cap {self.cap_s:g} s is below --base {self.base_s:g} s: {self.policy} back-off would "
                f"never grow past the cap; give --cap at least --base"
            )
        whole: list[tuple[str, object, int]] = [  # object: a caller may hand a float or a bool
            ("--backlog", self.backlog, MAX_BACKLOG),
            ("somaxconn", self.somaxconn, MAX_BACKLOG),
            ("tcp_syn_retries", self.syn_retries, 127),
        ]
        for name, n, hi in whole:
            if isinstance(n, bool) or not isinstance(n, numbers.Integral) or not 1 <= int(n) <= hi:
                raise InputError(f"{name} {n!r}: give a whole number 1..{hi:,}")
        lin: object = self.syn_linear_timeouts  # object: a caller may hand a float or a bool
        if isinstance(lin, bool) or not isinstance(lin, numbers.Integral) or not 0 <= int(lin) <= 127:
            raise InputError(f"tcp_syn_linear_timeouts {lin!r}: give a whole number 0..127")
        if self.server_s_per_handshake is not None and not 0 < self.server_s_per_handshake <= 60:
            raise InputError(f"server seconds per handshake {self.server_s_per_handshake}: give (0, 60]")
        if not 0 <= self.start_pass_s <= 60:
            raise InputError(f"server pass at the storm's start {self.start_pass_s}: give seconds in [0, 60]")
        if not 0 <= self.rtt_s <= 60 or not 0 <= self.syn_batch_s <= 10:
            raise InputError(f"rtt {self.rtt_s} / SYN batch {self.syn_batch_s}: give seconds in [0, 60] / [0, 10]")
        sa: object = self.synack_retries  # object: a caller may hand a float or a bool
        if isinstance(sa, bool) or not isinstance(sa, numbers.Integral) or not 0 <= int(sa) <= 127:
            raise InputError(f"tcp_synack_retries {sa!r}: give a whole number 0..127")
        if not 0 < self.synack_rto_s <= 60:
            raise InputError(f"SYN-ACK retransmission timeout {self.synack_rto_s}: give seconds in (0, 60]")
        if not self.accept_per_s > 0:
            raise InputError(f"accept rate {self.accept_per_s}: must be > 0 connections/s")
        if not 0 < self.syn_rto_s <= 60:
            raise InputError(f"SYN retransmission timeout {self.syn_rto_s}: give seconds in (0, 60]")
        if not 0 < self.dt_s <= 10:
            raise InputError(f"time step {self.dt_s}: give seconds in (0, 10]")
        if (b := self.syn_line_floats * 8) > SYN_LINE_BYTES:
            raise InputError(
                f"time step {self.dt_s:g} s: the SYN retransmission lines would take {b / 2**20:.0f} MiB "
                f"(at most {SYN_LINE_BYTES // 2**20}); give a longer step or fewer --max-attempts"
            )
        if self.horizon_s / self.dt_s > 2_000_000:
            raise InputError(f"--horizon {self.horizon_s}: at most 2,000,000 steps of {self.dt_s} s")

    @property
    def accept_queue(self) -> int:
        """Connections the kernel holds for the server before it accepts them (listen(2))."""
        return min(self.backlog, self.somaxconn)

    @property
    def syn_rtos_s(self) -> list[float]:
        """The client kernel's SYN retransmission timeouts in order: the wait before each of its
        syn_retries + syn_linear_timeouts retransmissions, then the wait after the last one before
        connect() fails (Linux tcp_retransmit_timer: the timeout doubles only once more than
        syn_linear_timeouts retransmissions went out; tcp_write_timeout counts the linear ones extra)."""
        lin = int(self.syn_linear_timeouts)
        n = int(self.syn_retries) + lin + 1
        return [self.syn_rto_s * (1.0 if k <= lin else 2.0 ** (k - lin)) for k in range(n)]

    @property
    def syn_gaps_s(self) -> list[float]:
        """Seconds from a dropped SYN number r (0: the first) to its retransmission, for every
        retransmission the client sends before its timeout ends the attempt."""
        gaps: list[float] = []
        for rto in self.syn_rtos_s[:-1]:
            if sum(gaps) + rto >= self.timeout_s:
                break
            gaps.append(rto)
        return gaps

    @property
    def syn_gaps_steps(self) -> list[int]:
        return [max(1, int(round(g / self.dt_s))) for g in self.syn_gaps_s]

    @property
    def syn_line_floats(self) -> int:
        return sum(self.syn_gaps_steps) * (self.max_attempts + 1)

    @property
    def data_rto_s(self) -> float:
        """The client's first data retransmission timeout once connected: its RTT plus the larger of twice
        the RTT and TCP_RTO_MIN (tcp_set_rto after the handshake's one RTT sample), doubling after."""
        return self.rtt_s + max(2 * self.rtt_s, TCP_RTO_MIN_S)

    @property
    def capacity_per_s(self) -> float:
        f = self.resumed_share
        return 1.0 / ((1 - f) / self.capacity_full_per_s + f / self.capacity_resumed_per_s)


def _delay_spread(m: FleetModel, attempt: int) -> tuple[float, float]:
    """Retry delay after failed attempt number `attempt` (1-based): uniform in [lo, hi] seconds."""
    if m.policy == "none":
        return 0.0, 0.0
    if m.policy == "fixed":
        return m.base_s, m.base_s
    if m.policy == "exponential":  # full jitter (AWS architecture blog, 2015)
        return 0.0, min(m.cap_s, m.base_s * 2 ** (attempt - 1))
    # decorrelated jitter: sleep = min(cap, uniform(base, 3 * previous)); previous at its mean growth
    prev = m.base_s * 2 ** (attempt - 1)
    return m.base_s, min(m.cap_s, max(m.base_s, 3 * prev))


def simulate(m: FleetModel, points: int = 400) -> dict[str, Any]:
    """Recovery of the fleet: time until every device is back, queue and utilisation over time,
    device wait percentiles, failed attempts."""
    m.check()
    steps = int(math.ceil(m.horizon_s / m.dt_s))
    A = m.max_attempts
    # arrivals per step and attempt number as a difference array: a retry spread uniformly over
    # [start, end] adds its rate at start and removes it after end (no per-device state)
    diff = np.zeros((A + 2, steps + 2))
    k = max(1, int(m.spread_s / m.dt_s)) if m.spread_s > 0 else 1
    diff[1, 0] += m.devices / k
    diff[1, k] -= m.devices / k
    rate = np.zeros(A + 2)
    cap_step = m.capacity_per_s * m.dt_s
    q = 0.0

    fifo: deque[list[float]] = deque()  # [amount, useful amount] per admitting step (abandoned_work)
    q_timeout = m.capacity_per_s * m.timeout_s
    queue = np.zeros(steps)
    served = np.zeros(steps)
    work = np.zeros(steps)
    failed = np.zeros(steps)
    syn_drops = np.zeros(steps)
    ack_over = np.zeros(steps)  # final ACKs (and retries) that found the accept queue full
    ack_lost = {"timed_out": 0.0, "reset": 0.0}  # attempts the second gate ended: client's timeout, server's reset
    ack = AckPath(
        retry_offsets_s(m.data_rto_s, m.synack_rto_s, int(m.synack_retries), m.timeout_s),
        m.dt_s,
        m.timeout_s,
        m.accept_queue,
    )
    gave_up = 0.0
    pending = float(m.devices)  # attempts scheduled (or waiting for a SYN retransmission), not yet arrived
    timeout_steps = int(round(m.timeout_s / m.dt_s))
    att = np.arange(1, A + 1)
    lo_hi = np.array([_delay_spread(m, int(a)) for a in att])
    lo_delay = (lo_hi[:, 0] / m.dt_s).astype(int)
    hi_delay = (lo_hi[:, 1] / m.dt_s).astype(int)
    # SYN retransmissions: line r holds, per step modulo its length, the attempts (a vector over attempt
    # numbers) whose SYN number r (0: the first) was dropped and that arrive again gap_r steps later
    gaps = m.syn_gaps_steps
    lines = [np.zeros((g, A)) for g in gaps]
    # an attempt whose last SYN was dropped fails when connect() gives up (after the last retransmission
    # waited as long again) or the client's timeout ends it, whichever comes first; counted from SYN k
    give_up_s = sum(m.syn_rtos_s)
    syn_fail_steps = int(round((min(m.timeout_s, give_up_s) - sum(m.syn_gaps_s)) / m.dt_s))
    L = float(m.accept_queue)
    accept_step = m.accept_per_s * m.dt_s
    acc = 0.0  # connections accepted by the kernel during the server's current pass
    pass_left = m.start_pass_s  # seconds left in the server's current pass
    cost_s = m.server_s_per_handshake or 1.0 / m.capacity_per_s

    def fail(t: int, r: np.ndarray, notice_steps: int) -> None:
        """Attempts `r` (per attempt number) failed at step t; their clients notice `notice_steps` later
        and retry after the policy's delay (the last attempt gives up)."""
        nonlocal gave_up, pending
        gave_up += float(r[-1])
        r = r[:-1]
        start = np.minimum(t + notice_steps + lo_delay[:-1], steps)
        stop = np.minimum(t + notice_steps + hi_delay[:-1], steps) + 1
        per = r / (stop - start)
        np.add.at(diff, (att[:-1] + 1, start), per)
        np.add.at(diff, (att[:-1] + 1, stop), -per)
        pending += float(r.sum())

    for t in range(steps):
        rate += diff[:, t]
        by_syn = [np.maximum(rate[1 : A + 1], 0.0)]  # first SYNs of new attempts, then retransmissions
        for r, g in enumerate(gaps):
            by_syn.append(lines[r][t % g].copy())
            lines[r][t % g] = 0.0
        arrived = [float(v.sum()) for v in by_syn]
        total = sum(arrived)
        pending -= total
        if pass_left <= 1e-12:  # the last pass is over: the server accepts what waits and starts a new one
            acc, pass_left = 0.0, q * cost_s
        retry, expired, ready = ack.pop(t)
        if expired is not None:  # the client's handshake timeout ended them while their requests waited
            failed[t] += float(expired.sum())
            ack_lost["timed_out"] += float(expired.sum())
            fail(t, expired, 1)  # this step's arrivals are counted already: the retries start from the next
        r_total = float(sum(float(c[0].sum()) for c in retry))
        got = np.zeros(A) if ready is None else ready  # promoted earlier: their ClientHello arrives now
        if total > 0 or r_total > 0 or ready is not None:
            # an idle server accepts SYNs as they come; a busy one takes what waits once per pass and the
            # kernel holds at most L meanwhile: SYNs beyond are dropped and sent again by the client
            if pass_left <= 1e-12:
                room = L + accept_step
            elif pass_left < m.dt_s:  # several short passes within this step, each accepting up to L
                room = min(L * m.dt_s / pass_left, L + accept_step) - acc
            else:
                room = L - acc
            room = max(0.0, room)
            # requests whose ACK overflowed retry (their client's data, or its answer to a SYN-ACK): they
            # share the step's places with the SYNs in proportion
            share = min(1.0, room / (total + r_total)) if r_total > 0 else 0.0
            r_taken = r_total * share
            for c in retry:
                if (promoted := ack.promoted(c, share)) is not None:
                    got = got + promoted
                ack.retry_failed(c, 1 - share)
            ack_over[t] += r_total - r_taken
            room = max(0.0, room - r_taken)
            taken = min(total, room)
            acc += taken + r_taken
            if taken < total:
                # the SYNs that came within one round trip (plus the client kernel's timer bucket for its
                # retransmissions) of the queue's filling pass it and overflow at their final ACK
                keep, stuck, to_lines = taken / total, 0.0, 0.0
                for k, v in enumerate(by_syn):
                    d = v * (1 - keep)
                    by_syn[k] = v * keep
                    window = (m.rtt_s + (m.syn_batch_s if k else 0.0)) / m.dt_s  # share of the step
                    share = min(1.0, arrived[k] * window / max(float(d.sum()), 1e-300)) if room > 0 else 0.0
                    if share > 0:
                        sv, d = d * share, d * (1 - share)
                        stuck += float(sv.sum())
                        if m.abort_on_overflow:  # tcp_check_req resets it: the client notices at once
                            failed[t] += float(sv.sum())
                            ack_lost["reset"] += float(sv.sum())
                            fail(t, sv, 1)
                        else:
                            ack.add(t, sv, sum(m.syn_gaps_s[:k]))
                    if k < len(gaps):
                        lines[k][t % gaps[k]] += d
                        to_lines += float(d.sum())
                    else:
                        fail(t, d, syn_fail_steps)
                        failed[t] += float(d.sum())
                syn_drops[t] = total - taken - stuck
                ack_over[t] += stuck
                pending += to_lines
            a_now = np.sum(by_syn, axis=0) + got
            taken += float(got.sum())
            if taken <= 0:
                a_now = np.zeros(A)
            elif m.abandoned_work:
                # everything accepted is queued; only what starts within the timeout is useful
                queued = taken
                admitted = min(queued, max(0.0, q_timeout - q))
                fifo.append([queued, admitted])
                q += queued
            else:
                admitted = min(taken, max(0.0, q_timeout - q))
                q += admitted
            late = taken - admitted if taken > 0 else 0.0
            if late > 0:
                failed[t] += late
                fail(t, a_now * (late / taken), timeout_steps)
        s_ = min(q, cap_step)
        q -= s_
        pass_left -= m.dt_s
        work[t] = s_
        if m.abandoned_work:
            left, useful = s_, 0.0
            while left > 1e-12 and fifo:
                amt, use = fifo[0]
                take = min(left, amt)
                part = use * take / amt if amt > 0 else 0.0
                useful += part
                left -= take
                if take >= amt - 1e-12:
                    fifo.popleft()
                else:
                    fifo[0] = [amt - take, use - part]
            s_ = useful
        served[t] = s_
        queue[t] = q
        if q <= 1e-9 and pending <= 1e-6 and ack.waiting <= 1e-6:
            steps = t + 1
            break
    served, queue, failed, work = served[:steps], queue[:steps], failed[:steps], work[:steps]
    syn_drops, ack_over = syn_drops[:steps], ack_over[:steps]
    t_axis = (np.arange(steps) + 1) * m.dt_s + m.device_handshake_s
    back = np.cumsum(served)
    n = float(m.devices)
    all_back = float(t_axis[np.searchsorted(back, n - 0.5)]) if back[-1] >= n - 0.5 else None

    def pct(p: float) -> float | None:
        i = np.searchsorted(back, p * n)
        return float(t_axis[i]) if i < steps else None

    stride = max(1, steps // points)
    idx = np.arange(0, steps, stride)
    return {
        "model": {**asdict(m), "capacity_per_s": m.capacity_per_s},
        "assumptions": __doc__.split("Assumptions (all in FleetModel, with units):")[1].strip(),
        "time_all_back_s": all_back,
        "devices_back": float(back[-1]),
        "gave_up": gave_up,
        "failed_attempts": float(failed.sum()),
        "syn_drops": float(syn_drops.sum()),
        "ack_overflows": float(ack_over.sum()),
        "ack_timed_out": ack_lost["timed_out"],
        "ack_reset": ack_lost["reset"],
        "accept_queue": m.accept_queue,
        "wait_s": {"p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99), "max": all_back},
        "peak_queue": float(queue.max()),
        "series": {
            "t_s": [round(float(x), 4) for x in t_axis[idx]],
            "queue": [float(x) for x in queue[idx]],
            "utilisation": [float(min(1.0, x / cap_step)) for x in work[idx]],
            "abandoned_per_s": [float((w - x) / m.dt_s) for w, x in zip(work[idx], served[idx])],
            "back_share": [float(x / n) for x in back[idx]],
            "failed_per_s": [float(x / m.dt_s) for x in failed[idx]],
            "syn_drops_per_s": [float(x / m.dt_s) for x in syn_drops[idx]],
            "ack_overflows_per_s": [float(x / m.dt_s) for x in ack_over[idx]],
        },
    }


def _rate(s: Series) -> float | None:
    """A capacity row's measured handshakes/s (None for a row of another kind or without a rate)."""
    return s.derived_as(ServerDerived).handshakes_per_s if s.kind == "server" else None


def server_keys(doc: Result) -> list[str]:
    """The server keys of the capacity rows (with a measured rate) of a `secperf server` Result."""
    return list(dict.fromkeys(s.labels["key"] for s in doc.series if _rate(s)))


# "server/key/key source/resume ratio" -> the highest handshakes/s a `secperf server` Result measured
Capacities = dict[str, float]


def capacity_from_result(doc: Result, key: str | None = None) -> Capacities:
    """The highest handshakes/s per (server, key, source, resume ratio) in a `secperf server` Result;
    with `key`, only that key's rows (a capacity is a property of the key: an RSA-2048 server signs
    several times slower than an ECDSA P-256 one)."""
    best: dict[tuple[Any, ...], float] = {}
    for s in doc.series:
        rate = _rate(s)
        if not rate:
            continue
        lb = s.labels
        if key is not None and lb["key"] != key:
            continue
        k = (lb["server"], lb["key"], lb["key_source"], float(lb["resume_ratio"]))
        best[k] = max(best.get(k, 0.0), rate)
    return {"/".join(str(x) for x in k): v for k, v in best.items()}


def knee(points: list[tuple[float, float]], share: float = 0.95) -> float | None:
    """The capacity curve's knee: the lowest offered load (concurrency) whose throughput reaches
    `share` of the highest measured; beyond it more load only adds latency."""
    pts = sorted((x, y) for x, y in points if y is not None)
    if not pts:
        return None
    top = max(y for _, y in pts)
    return next(x for x, y in pts if y >= share * top)


KNEE_RULE = (
    "the knee is the lowest offered rate from which on every level is past it: its P95 latency exceeds "
    "twice the lowest P95 of the curve, or its achieved rate falls below 95 % of the offered rate "
    "(\"from which on\": one noisy level below the knee does not count)"
)


def open_loop_knee(
    points: list[tuple[float, float | None, float | None]], p95_factor: float = 2.0, share: float = 0.95
) -> float | None:
    """The knee of an open-loop capacity curve of (offered/s, achieved/s, P95 ms) points: see
    KNEE_RULE. None when the highest offered rate is not past it (the curve has not bent yet)."""
    pts = sorted((o, a, p) for o, a, p in points if o)
    lows = [p for _, _, p in pts if p]
    if not pts:
        return None
    low = min(lows) if lows else None

    def past(o: float, a: float | None, p: float | None) -> bool:
        return (a or 0) < share * o or bool(low and p and p > p95_factor * low)

    knee: float | None = None
    for o, a, p in reversed(pts):
        if not past(o, a, p):
            break
        knee = o
    return knee
