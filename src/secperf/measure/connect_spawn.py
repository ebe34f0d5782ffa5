"""Timing a protocol's own client as a process: its start-up, the moment a line appears on its
output, its run from spawn to exit with the CLOCK_MONOTONIC bounds the shim's calls are matched to."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from ..core import stats
from ..core.errors import MeasurementError
from ..lab import registry


def _marked(env: dict[str, str] | None) -> dict[str, str]:
    """The child's environment with this run's mark: a killed secperf's watchdog finds it (the
    registry file is not written while a client is timed: that write is an fsync)."""
    return {**(os.environ if env is None else env), registry.ENV: registry.current().mark}


def _bounded(
    argv: list[str], env: dict[str, str] | None, limit_s: float, what: str
) -> subprocess.CompletedProcess[str]:
    """Run argv to its end within limit_s (after $SECPERF_LIMIT_SCALE); past it the client and all it
    started are killed and registry.ChildTimeout is raised."""
    limit = registry.scaled(limit_s) or 0.0
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_marked(env))
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired as exc:
        registry.kill_tree(proc)
        raise registry.ChildTimeout(what, argv, limit, exc.output, exc.stderr) from None
    except BaseException:
        registry.kill_tree(proc)
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def median_startup(argv: list[str], n: int, env: dict[str, str] | None = None) -> float:
    """Median spawn → exit time (µs) of a command that starts the client and exits at once (with
    the same namespace prefix as the measured runs, so entering the namespace is start-up too)."""
    vals = []
    for _ in range(max(3, min(n, 10))):
        t0 = time.perf_counter_ns()
        try:
            _bounded(argv, env, 30, "the client (start-up run)")
        except registry.ChildTimeout as exc:
            raise MeasurementError(f"timing the client's start-up: {exc}") from None
        vals.append((time.perf_counter_ns() - t0) / 1000)
    return stats.median(vals)


def stamp_lines(
    argv: list[str],
    env: dict[str, str],
    marker: str,
    timeout_s: float,
    prefix: tuple[str, ...] = (),
    cwd: Path | None = None,
) -> tuple[float | None, float, int, str]:
    """Spawn argv (under `prefix`, e.g. in a link's device namespace) with line-buffered stdout;
    return (µs from spawn to the first line containing marker or None, µs to exit, exit code, last
    output)."""
    cmd = [*prefix, *(["stdbuf", "-oL"] if shutil.which("stdbuf") else []), *argv]
    t0 = time.perf_counter_ns()
    limit = timeout_s * registry.limit_scale()
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=_marked(env),
        text=True,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
    )
    hit: float | None = None
    tail: list[str] = []
    fired = threading.Event()

    def stop() -> None:
        fired.set()
        registry.kill_tree(proc, reap=False)  # it and all it started: the loop below sees its output end

    timer = threading.Timer(limit, stop)
    timer.start()
    try:
        for line in proc.stdout or ():
            tail = (tail + [line.rstrip()])[-6:]
            if hit is None and marker in line:
                hit = (time.perf_counter_ns() - t0) / 1000
        rc = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            registry.kill_tree(proc)
    if fired.is_set():
        tail = [*tail[-5:], f"stopped after {limit:g} s (its time limit)"]
    return hit, (time.perf_counter_ns() - t0) / 1000, rc, " | ".join(tail)


def timed_run(
    argv: list[str], env: dict[str, str], timeout_s: float, what: str = "the client"
) -> tuple[subprocess.CompletedProcess[str], float, dict[str, Any]]:
    """Run a client process to its end: (result, wall µs spawn → exit, its CLOCK_MONOTONIC bounds
    as t0_ns/t1_ns, to match the shim's calls to the run). A client past timeout_s is stopped with all
    it started: return code -9 and the reason on stderr, which the caller records as a failed sample."""
    m0, t0 = time.monotonic_ns(), time.perf_counter_ns()
    try:
        r = _bounded(argv, env, timeout_s, what)
    except registry.ChildTimeout as exc:  # a failed sample: the caller records the reason
        r = subprocess.CompletedProcess(argv, -9, "", str(exc))
    wall = (time.perf_counter_ns() - t0) / 1000
    return r, wall, {"t0_ns": m0, "t1_ns": time.monotonic_ns()}
