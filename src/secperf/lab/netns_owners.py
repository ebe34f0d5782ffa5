"""Root mode's named link namespaces and their owners: listing them, the processes inside, stopping
processes by PID, and sweeping the namespaces a dead secperf left behind."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from functools import partial

import psutil

from ..core.paths import secperf_home
from ..core.wait import wait_until
from .ip_json import netns_list
from .netns_check import LinkError, rootless

PREFIX = "secperf-ln-"
NAME_RE = re.compile(r"^secperf-ln-(\d+)-(\d+)-(dev|srv)$")


def ip(*args: str, check: bool = True, timeout: float = 10) -> subprocess.CompletedProcess[str]:
    try:
        p = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:  # `ip` forks nothing: the run's kill of it leaves no orphan
        raise LinkError(f"`ip {' '.join(args)}` did not finish within {timeout:g} s") from None
    if check and p.returncode != 0:
        raise LinkError(f"`ip {' '.join(args)}` failed: {p.stderr.strip() or p.returncode}")
    return p


def proc_start(pid: int) -> float | None:
    """The process's start time (s since the epoch, from the kernel's start time in clock ticks since
    boot): with the PID, it names one process even after the PID is reused; None if there is none."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def list_namespaces() -> list[str]:
    """The named network namespaces, as `ip -j netns list` gives them (ip_json.Netns); none when ip fails."""
    return [n.name for n in netns_list()]


def namespace_pids(name: str) -> list[int]:
    """The processes running inside a named network namespace (``ip netns pids``)."""
    p = ip("netns", "pids", name, check=False)
    return [int(x) for x in p.stdout.split() if x.isdigit()]


def _gone(pid: int) -> bool:
    """Exited: no such process, or a zombie (reaped here when it is our own child)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def kill_pids(pids: list[int], timeout_s: float = 3.0) -> None:
    """SIGTERM each PID (never our own), wait for all, bounded, then SIGKILL what is left."""
    pids = [p for p in pids if p != os.getpid()]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout_s
    for pid in pids:
        if not wait_until(partial(_gone, pid), deadline - time.monotonic()):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _gone(pid)


def _owner_alive(name: str) -> bool:
    m = NAME_RE.match(name)
    if not m:
        return True  # not ours: treat as alive, never touch
    pid = int(m.group(1))
    start = proc_start(pid)
    if start is None:
        return False
    state = secperf_home() / "netns" / f"{name}.json"
    try:
        rec = json.loads(state.read_text())
    except (OSError, ValueError):
        return True  # pid alive and no record to say otherwise: leave it
    recorded = rec.get("owner_start")
    if isinstance(recorded, str):  # an older record: the start in clock ticks since boot, as text
        return recorded == str(round((start - psutil.boot_time()) * os.sysconf("SC_CLK_TCK")))
    return bool(recorded == start)


def sweep_stale() -> list[str]:
    """Delete secperf link namespaces whose owner is dead; returns the names removed. Root mode
    only: rootless links have no named namespaces (theirs die with their holders)."""
    removed: list[str] = []
    if rootless():
        return removed
    for name in list_namespaces():
        if not NAME_RE.match(name) or _owner_alive(name):
            continue
        kill_pids(namespace_pids(name))
        if ip("netns", "del", name, check=False).returncode == 0:
            removed.append(name)
        (secperf_home() / "netns" / f"{name}.json").unlink(missing_ok=True)
    return removed
