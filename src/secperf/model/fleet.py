"""Reconnect storms: N devices reconnecting to one server after an outage, as a fluid queueing model.

Assumptions (all in FleetModel, with units):
- every device starts its first attempt at t = 0 (an outage ends) or spread over `spread_s`
  (a synchronised schedule with some jitter);
- the server handles `capacity_per_s` handshakes per second (measured: `secperf server`), FIFO,
  for a mix of full and resumed handshakes (`resumed_share`, each kind at its own capacity);
- an attempt that would wait longer than the client's `timeout_s` in the server's queue (or finds
  the accept backlog full) fails: the device notices after `timeout_s` and retries after its
  policy's delay (none: at once; fixed; exponential back-off with full jitter; decorrelated
  jitter, taken at its mean growth), at most `max_attempts` attempts;
- a served device is back `device_handshake_s` later (its own handshake cost: the what-if model);
- with `abandoned_work` the server still does the handshake of an attempt whose client gave up
  (nginx does: it reads the ClientHello that waited in its queue and signs before it notices the
  closed socket); such work takes capacity but brings no device back. Without it, work beyond the
  timeout is dropped at once, which is optimistic: `secperf-loadgen --storm` against nginx shows
  storms that never recover once the timeout is below N / capacity (benchmarks/server.py).
The state is a histogram of attempts per time step and attempt number, so the cost does not grow
with N: 10 million devices take the same time as 1,000."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..core.result import as_result
from ..core.result_schema import Result, Series, ServerDerived

POLICIES = ("none", "fixed", "exponential", "decorrelated")


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
    backlog: int = 4096  # accept queue beyond which attempts fail at once
    max_attempts: int = 100
    abandoned_work: bool = False  # the server also serves attempts whose client gave up
    spread_s: float = 0.0
    device_handshake_s: float = 0.0
    dt_s: float = 0.05
    horizon_s: float = 7200.0

    def check(self) -> None:
        from ..core.errors import InputError

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
        if self.horizon_s / self.dt_s > 2_000_000:
            raise InputError(f"--horizon {self.horizon_s}: at most 2,000,000 steps of {self.dt_s} s")

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
    q_limit = min(float(m.backlog), m.capacity_per_s * m.timeout_s)
    q = 0.0
    from collections import deque

    fifo: deque[list[float]] = deque()  # [amount, useful amount] per admitting step (abandoned_work)
    q_timeout = m.capacity_per_s * m.timeout_s
    queue = np.zeros(steps)
    served = np.zeros(steps)
    work = np.zeros(steps)
    failed = np.zeros(steps)
    gave_up = 0.0
    pending = float(m.devices)  # attempts scheduled but not yet arrived
    timeout_steps = int(round(m.timeout_s / m.dt_s))
    att = np.arange(1, A + 1)
    lo_hi = np.array([_delay_spread(m, int(a)) for a in att])
    lo_steps = timeout_steps + (lo_hi[:, 0] / m.dt_s).astype(int)
    hi_steps = timeout_steps + (lo_hi[:, 1] / m.dt_s).astype(int)
    for t in range(steps):
        rate += diff[:, t]
        a_now = np.maximum(rate[1 : A + 1], 0.0)
        total = float(a_now.sum())
        pending -= total
        if total > 0:
            if m.abandoned_work:
                # everything the backlog holds is queued; only what starts within the timeout is useful
                queued = min(total, max(0.0, m.backlog - q))
                admitted = min(queued, max(0.0, q_timeout - q))
                fifo.append([queued, admitted])
                q += queued
            else:
                admitted = min(total, max(0.0, q_limit - q))
                q += admitted
            rejected = total - admitted
            if rejected > 0:
                failed[t] = rejected
                r = a_now * (rejected / total)
                gave_up += float(r[-1])
                r = r[:-1]
                start = np.minimum(t + lo_steps[:-1], steps)
                stop = np.minimum(t + hi_steps[:-1], steps) + 1
                per = r / (stop - start)
                np.add.at(diff, (att[:-1] + 1, start), per)
                np.add.at(diff, (att[:-1] + 1, stop), -per)
                pending += float(r.sum())
        s_ = min(q, cap_step)
        q -= s_
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
        "wait_s": {"p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99), "max": all_back},
        "peak_queue": float(queue.max()),
        "series": {
            "t_s": [round(float(x), 4) for x in t_axis[idx]],
            "queue": [float(x) for x in queue[idx]],
            "utilisation": [float(min(1.0, x / cap_step)) for x in work[idx]],
            "abandoned_per_s": [float((w - x) / m.dt_s) for w, x in zip(work[idx], served[idx])],
            "back_share": [float(x / n) for x in back[idx]],
            "failed_per_s": [float(x / m.dt_s) for x in failed[idx]],
        },
    }


def _rate(s: Series) -> float | None:
    """A capacity row's measured handshakes/s (None for a row of another kind or without a rate)."""
    return s.derived_as(ServerDerived).handshakes_per_s if s.kind == "server" else None


def server_keys(doc: Result | Mapping[str, Any]) -> list[str]:
    """The server keys of the capacity rows (with a measured rate) of a `secperf server` Result."""
    return list(dict.fromkeys(s.labels["key"] for s in as_result(doc).series if _rate(s)))


# "server/key/key source/resume ratio" -> the highest handshakes/s a `secperf server` Result measured
Capacities = dict[str, float]


def capacity_from_result(doc: Result | Mapping[str, Any], key: str | None = None) -> Capacities:
    """The highest handshakes/s per (server, key, source, resume ratio) in a `secperf server` Result;
    with `key`, only that key's rows (a capacity is a property of the key: an RSA-2048 server signs
    several times slower than an ECDSA P-256 one)."""
    best: dict[tuple[Any, ...], float] = {}
    for s in as_result(doc).series:
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
