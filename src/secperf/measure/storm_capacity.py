"""The capacity a reconnect storm actually meets, measured in the storm itself (issue 45): the lower of
two bounds, each one process's rate on the CPU it could have had.

- the broker: CONNACKs per second of its own CPU in the storm phase (accept, TLS handshake, CONNECT),
  times the share of its core that other processes left it;
- the generator (single-threaded): CONNACKs per second of its own CPU in the storm phase (its side of
  every handshake, failed attempts and its event loop included), times the share of its cores that
  other processes left it (at most one core).

A core's share left to a process = 1 - (the core's busy time over the phase - the process's own CPU)
/ the phase's wall time, read from /proc/stat at the phase's ends; a process pinned to several cores
is given the best of them. This counts other work that ran while the process waited (for the other
side, or the network) as taking its CPU, so the share is a lower estimate on a shared host; on an idle
host it is 1 and the bound is the process's CPU rate. The bound that is lower set the capacity, and
the record says which."""

from __future__ import annotations

import os
from typing import Any

SATURATED = 0.05  # a share-adjusted capacity within this of the achieved rate: the cores were saturated
MIN_SHARE = 0.05  # a share below this is taken as this (a phase too short to read /proc/stat's ticks)


def cores_busy_s() -> dict[int, float]:
    """Busy seconds of every core since boot (user, nice, system, irq, softirq, steal of /proc/stat)."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, float] = {}
    try:
        with open("/proc/stat", encoding="ascii") as f:
            for line in f:
                if line.startswith("cpu") and line[3:4].isdigit():
                    name, *v = line.split()
                    n = [int(x) for x in v]
                    out[int(name[3:])] = (n[0] + n[1] + n[2] + n[5] + n[6] + (n[7] if len(n) > 7 else 0)) / tick
    except (OSError, ValueError, IndexError):
        return {}
    return out


def busy_between(a: dict[int, float], b: dict[int, float]) -> dict[int, float]:
    return {k: b[k] - a[k] for k in b if k in a}


def share_left(core_busy_s: float | None, own_cpu_s: float | None, wall_s: float) -> float | None:
    """The share of one core other work left a process: 1 - (the core's busy time - the process's own
    CPU) / the wall time, within [MIN_SHARE, 1]; None without a reading."""
    if core_busy_s is None or own_cpu_s is None or wall_s <= 0:
        return None
    return min(1.0, max(MIN_SHARE, 1.0 - max(0.0, core_busy_s - own_cpu_s) / wall_s))


def _share(busy: dict[int, float], cores: list[int], own_s: float, wall_s: float) -> float | None:
    known = [busy[k] for k in cores if k in busy]
    if not known or wall_s <= 0:
        return None
    if len(known) == 1:
        return share_left(known[0], own_s, wall_s)
    others = max(0.0, min(known) - own_s / len(known))
    return min(1.0, max(MIN_SHARE, 1.0 - others / wall_s))


def process_bound(n: int, cpu_s: float, share: float) -> dict[str, float]:
    """One process's bound in a storm of n CONNACKs: its rate on a core of its own, times the share of
    its core other work left it."""
    return {
        "cpu_per_connack_ms": 1e3 * cpu_s / n,
        "rate_on_a_core_per_s": n / cpu_s,
        "core_share_left": share,
        "bound_per_s": n / cpu_s * share,
    }


def versus(broker: dict[str, Any], gen: dict[str, Any], n: int, wall_s: float) -> dict[str, Any]:
    """The capacity (the lower bound) and which side set it, loaded and on idle cores, beside the storm's
    achieved rate."""
    return {
        "capacity_per_s": min(broker["bound_per_s"], gen["bound_per_s"]),
        "limited_by": "broker" if broker["bound_per_s"] <= gen["bound_per_s"] else "generator",
        # the same two processes on cores of their own with nothing else running
        "capacity_on_idle_cores_per_s": min(broker["rate_on_a_core_per_s"], gen["rate_on_a_core_per_s"]),
        "limited_by_on_idle_cores": (
            "broker" if broker["rate_on_a_core_per_s"] <= gen["rate_on_a_core_per_s"] else "generator"
        ),
        "achieved_per_s": n / wall_s,
    }


def storm_bounds(storm: dict[str, Any], broker_core: int | None, generator_cores: list[int]) -> dict[str, Any] | None:
    """The two bounds and the capacity (their lower) from a storm phase that carries the broker's CPU
    (broker_cpu_s), the generator's (cpu_s) and the cores' busy time (cores_busy_s); None when any is
    missing (a broker not started here has no CPU reading: its bound is not known)."""
    n, wall = storm.get("connacks") or 0, float(storm.get("elapsed_s") or 0.0)
    b_cpu, g_cpu = storm.get("broker_cpu_s"), storm.get("cpu_s")
    busy = {int(k): float(v) for k, v in (storm.get("cores_busy_s") or {}).items()}
    if not n or wall <= 0 or not b_cpu or not g_cpu or broker_core is None or not busy:
        return None
    b_share = _share(busy, [broker_core], float(b_cpu), wall)
    g_share = _share(busy, generator_cores, float(g_cpu), wall)
    if b_share is None or g_share is None:
        return None
    broker = process_bound(n, float(b_cpu), b_share)
    gen = process_bound(n, float(g_cpu), g_share)
    out = {"broker": broker, "generator": gen, **versus(broker, gen, n, wall)}
    out["rule"] = __doc__.split("\n\n")[1].strip() if __doc__ else ""
    cap = out["capacity_per_s"]
    if abs(cap - n / wall) <= SATURATED * n / wall:
        out["note"] = (
            "the cores were saturated: the share other work left each process is what it got, so the "
            "share-adjusted capacity equals the storm's own achieved rate (not an independent input); "
            "capacity_on_idle_cores_per_s is the independent figure, for a host with nothing else running"
        )
    return out
