"""Timing a protocol's own client as a process: its start-up, the moment a line appears on its
output, its run from spawn to exit with the CLOCK_MONOTONIC bounds the shim's calls are matched to."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from ..core import stats


def median_startup(argv: list[str], n: int, env: dict[str, str] | None = None) -> float:
    """Median spawn → exit time (µs) of a command that starts the client and exits at once (with
    the same namespace prefix as the measured runs, so entering the namespace is start-up too)."""
    vals = []
    for _ in range(max(3, min(n, 10))):
        t0 = time.perf_counter_ns()
        subprocess.run(argv, capture_output=True, env=env, timeout=30)
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
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True, stdin=subprocess.DEVNULL, cwd=cwd
    )
    hit: float | None = None
    tail: list[str] = []
    timer = threading.Timer(timeout_s, proc.kill)
    timer.start()
    try:
        for line in proc.stdout or ():
            tail = (tail + [line.rstrip()])[-6:]
            if hit is None and marker in line:
                hit = (time.perf_counter_ns() - t0) / 1000
        rc = proc.wait()
    finally:
        timer.cancel()
    return hit, (time.perf_counter_ns() - t0) / 1000, rc, " | ".join(tail)


def timed_run(
    argv: list[str], env: dict[str, str], timeout_s: float
) -> tuple[subprocess.CompletedProcess[str], float, dict[str, Any]]:
    """Run a client process to its end: (result, wall µs spawn → exit, its CLOCK_MONOTONIC bounds
    as t0_ns/t1_ns, to match the shim's calls to the run)."""
    m0, t0 = time.monotonic_ns(), time.perf_counter_ns()
    r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout_s)
    wall = (time.perf_counter_ns() - t0) / 1000
    return r, wall, {"t0_ns": m0, "t1_ns": time.monotonic_ns()}
