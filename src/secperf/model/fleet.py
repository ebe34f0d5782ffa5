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
        if total > 0:
            # an idle server accepts SYNs as they come; a busy one takes what waits once per pass and the
            # kernel holds at most L meanwhile: SYNs beyond are dropped and sent again by the client
            if pass_left <= 1e-12:
                room = L + accept_step
            elif pass_left < m.dt_s:  # several short passes within this step, each accepting up to L
                room = min(L * m.dt_s / pass_left, L + accept_step) - acc
            else:
                room = L - acc
            taken = min(total, max(0.0, room))
            acc += taken
            if taken < total:
                keep = taken / total
                syn_drops[t] = total - taken
                for k, v in enumerate(by_syn):
                    d = v * (1 - keep)
                    by_syn[k] = v * keep
                    if k < len(gaps):
                        lines[k][t % gaps[k]] += d
                    else:
                        fail(t, d, syn_fail_steps)
                        failed[t] += float(d.sum())
                pending += float(syn_drops[t]) - failed[t]
            a_now = np.sum(by_syn, axis=0)
            if m.abandoned_work:
                # everything accepted is queued; only what starts within the timeout is useful
                queued = taken
                admitted = min(queued, max(0.0, q_timeout - q))
                fifo.append([queued, admitted])
                q += queued
            else:
                admitted = min(taken, max(0.0, q_timeout - q))
                q += admitted
            late = taken - admitted
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
        if q <= 1e-9 and pending <= 1e-6:
            steps = t + 1
            break
    served, queue, failed, work = served[:steps], queue[:steps], failed[:steps], work[:steps]
    syn_drops = syn_drops[:steps]
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
