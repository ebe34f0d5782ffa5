"""Whose CPU a `secperf server` level spent: the server process's own accounting (its threads' run
time), pinning it to one core, the load generator's cores, every core's busy share, and which side
limited the rate."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import psutil

from ..core.errors import InputError, MeasurementError

if TYPE_CHECKING:
    from .server_config import LoadParams


def process_cpu_s(pid: int) -> float:
    """CPU time the process has run, all threads: the kernel's per-thread run time (schedstat, ns)
    when it has it, else user + system time (psutil, clock-tick resolution)."""
    gone = MeasurementError(f"the server process {pid} is gone; its CPU time cannot be read")
    try:
        proc = psutil.Process(pid)
        tids = [t.id for t in proc.threads()]
    except psutil.ZombieProcess:
        tids = []
    except psutil.Error:  # stopped by a signal, or it died: a named error, no traceback
        raise gone from None
    run_s = _run_time_s(pid, tids)
    if run_s is not None:
        return run_s
    try:
        t = proc.cpu_times()
    except psutil.Error:
        raise gone from None
    return t.user + t.system


def _run_time_s(pid: int, tids: list[int]) -> float | None:
    """The threads' run time from /proc/PID/task/TID/schedstat (s), None if the kernel keeps none.
    A /proc read on purpose: psutil exposes no per-thread run time finer than its cpu_times' clock
    ticks (10 ms at 100 Hz), too coarse for CPU per handshake over one interval."""
    total, seen = 0.0, False
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0]) / 1e9
                seen = True
        except (OSError, ValueError, IndexError):
            pass
    return total if seen else None


def pin(pid: int, core: int) -> list[int]:
    """Pin every thread of pid to `core`; returns the affinity set."""
    ncpu = os.cpu_count() or 1
    if not 0 <= core < ncpu:
        raise InputError(f"--core {core}: this machine has cores 0..{ncpu - 1}")
    try:
        tids = [t.id for t in psutil.Process(pid).threads()]
    except psutil.Error:
        raise MeasurementError(f"the server process {pid} is gone; it cannot be pinned to core {core}") from None
    for tid in tids:
        os.sched_setaffinity(tid, {core})
    return sorted(os.sched_getaffinity(pid))


BUSY = 0.9  # a side at or above this share of its cores is the one that limits the rate
OTHERS = 0.25  # other processes taking this share of a side's cores disturb the figures
MAX_AUTO_PROCS = 8


def generator_cores(server_core: int) -> list[int]:
    """The cores the load generator runs on: every core secperf may use except the server's, so the
    two never share one (as tls-perf and h2load are run: client and server on separate cores); the
    server's core itself only on a machine with no other."""
    usable = sorted(os.sched_getaffinity(0))
    return [c for c in usable if c != server_core] or usable


def generator_procs(p: LoadParams) -> int:
    """Generator processes: as asked, else one per generator core (at most MAX_AUTO_PROCS)."""
    return p.loadgen_procs or min(MAX_AUTO_PROCS, len(generator_cores(p.core)))


def core_times() -> dict[int, tuple[float, float]]:
    """Per core: (busy, total) seconds since boot (busy: all but idle and iowait), whoever ran there;
    {} when they cannot be read, or when a core is offline (the kernel's list then skips its number,
    and a position would name the wrong core)."""
    if os.sysconf("SC_NPROCESSORS_ONLN") != os.sysconf("SC_NPROCESSORS_CONF"):
        return {}
    try:
        per_cpu = psutil.cpu_times(percpu=True)
    except (OSError, psutil.Error):
        return {}
    out = {}
    for core, c in enumerate(per_cpu):
        total = c.user + c.nice + c.system + c.idle + c.iowait + c.irq + c.softirq + c.steal
        out[core] = (total - c.idle - c.iowait, total)
    return out


CoreTimes = dict[int, tuple[float, float]]  # core -> (busy, total) as core_times() reads them


def cores_busy(before: CoreTimes, after: CoreTimes, cores: Iterable[int]) -> float | None:
    """The share of the time `cores` were busy (any process) between two core_times() readings."""
    busy = total = 0.0
    for c in cores:
        if c in before and c in after:
            busy += after[c][0] - before[c][0]
            total += after[c][1] - before[c][1]
    return busy / total if total > 0 else None


def rate_limit(level: dict[str, Any], open_loop: bool = False) -> dict[str, Any]:
    """Which side limited the rate at one load level, from both sides' CPU in the counting window:
    the server (its core at least BUSY busy), the load generator (its cores at least BUSY busy while
    the server is not: the capacity shown is then the generator's, a lower bound of the server's),
    or neither (closed loop: too few clients in flight; open loop: the offered rate)."""
    srv, gen = level.get("server_utilisation") or 0.0, level.get("loadgen_busy")
    if srv >= BUSY:
        return {"limited_by": "server", "limit_note": None}
    if gen is not None and gen >= BUSY:
        return {
            "limited_by": "load generator",
            "limit_note": (
                f"the load generator limited the rate, not the server: server {srv:.0%} busy, generator {gen:.0%} of "
                f"its {level.get('loadgen_cores_n', 1)} core(s) at {level.get('loadgen_cpu_us_per_handshake') or 0:.0f} µs "
                f"per handshake; the server's capacity is higher (a machine with more cores: the generator uses all but the "
                f"server's)"
            ),
        }
    # other processes on either side's cores: the cores near full while neither process was, or others
    # taking a quarter of them (the run's own loopback softirq work, charged to no process, was ~1% here)
    crowded = []
    for what, busy, own in (
        ("server's core was", level.get("server_core_busy"), srv),
        ("generator's cores were", level.get("loadgen_cores_busy"), level.get("loadgen_share_of_cores", gen) or 0.0),
    ):
        if busy is not None and (busy >= BUSY or busy - own >= OTHERS):
            crowded.append((what, busy, own))
    if crowded:
        what, b, own = max(crowded, key=lambda c: c[1] - c[2])
        return {
            "limited_by": "other work on this machine",
            "limit_note": (
                f"other work on this machine limited the rate: the {what} {b:.0%} busy in all (server {srv:.0%}, "
                f"generator {gen or 0:.0%}); not the server's capacity: rerun on a quiet machine"
            ),
        }
    why = "the offered rate" if open_loop else "too few clients in flight"
    return {"limited_by": "neither", "limit_note": None, "limited_by_why": why}


def alive(pid: int) -> bool:
    try:
        os.sched_getaffinity(pid)
        return True
    except OSError:
        return False
