"""Speed and memory of the what-if Monte Carlo (issue 13): simulated TLS 1.3 connection set-ups per
second over a lossy, jittery link, and the peak RSS of a 10-million-connection run that streams its
statistics. Target: >= 1,000,000 set-ups per second on this machine.

    .venv/bin/python benchmarks/whatif_speed.py [--n 10000000] [--network 'delay=25ms,jitter=5ms,loss=2%']
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time

from secperf.inputs import netspec as NS
from secperf.model import costs as C
from secperf.model import flights as F
from secperf.model import network as N
from secperf.model import predict as P
from secperf.sim import montecarlo as M


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--network", default="delay=25ms,jitter=5ms,loss=2%")
    ap.add_argument("--protocol", default="tls1.3")
    args = ap.parse_args()
    pl = P.plan(F.Scenario(args.protocol), C.load_table(), N.from_spec(NS.parse(args.network)))
    M.simulate(pl, 10_000, 1)  # warm-up (imports, first allocations)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0, c0 = time.perf_counter(), time.process_time()
    r = M.simulate(pl, args.n, 1)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rate = args.n / wall
    print(
        f"host: {cpu_model()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; Python {platform.python_version()}"
    )
    print(
        f"scenario: {args.protocol} full over {args.network}; n = {args.n:,} (chunks of {M.CHUNK:,}, "
        f"percentiles from {r['usable']['percentiles_from']})"
    )
    print(
        f"set-up P50 {r['usable']['p50_us'] / 1e3:.1f} ms, P95 {r['usable']['p95_us'] / 1e3:.1f} ms, "
        f"P99 {r['usable']['p99_us'] / 1e3:.1f} ms"
    )
    print(
        f"rate: {rate:,.0f} simulated set-ups per second (wall {wall:.2f} s, CPU {cpu:.2f} s; one process, "
        f"numpy single-threaded) -- target >= 1,000,000: {'PASS' if rate >= 1e6 else 'MISS'}"
    )
    print(
        f"per CPU-second: {args.n / cpu:,.0f} set-ups (the wall rate above depends on what else this shared "
        f"machine runs: load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs)"
    )
    print(
        f"peak RSS: {rss / 1024:.0f} MiB (before the run {rss0 / 1024:.0f} MiB; one chunk of arrays, "
        f"never the {args.n:,} samples)"
    )
    return 0 if rate >= 1e6 else 1


if __name__ == "__main__":
    sys.exit(main())
