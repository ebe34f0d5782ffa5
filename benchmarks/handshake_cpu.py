#!/usr/bin/env python3
"""Handshake overhead benchmark: client CPU per full TLS 1.3 handshake (X25519, RSA-2048 server
certificate, TLS_AES_128_GCM_SHA256) measured by secperf-probe — with the per-message breakdown
on — against `openssl s_time -new`, both connecting to the same `openssl s_server`, in
alternating rounds of one run. Target: probe / s_time <= 1.05.

What is compared (both sides count the same scope: the whole client loop, user CPU):
- s_time reports "connections/user sec": user CPU of its connect/SSL_new/handshake/shutdown loop.
- the probe's user CPU per connection comes from getrusage(RUSAGE_CHILDREN) around a probe run of
  N connections (no application data, like s_time without -www), divided by all connections it
  made (warm-up included); its start-up is amortised over N.
Also printed: the probe's own figure, lib_cpu_us (user+sys CPU inside SSL_connect only), as a
ratio to s_time — what `secperf handshake` reports per connection.

Usage: python benchmarks/handshake_cpu.py [--rounds 5] [--seconds 3] [--n 400] [--json OUT]
Exit status: 0 when the median whole-loop ratio is <= 1.05, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from secperf.core import host
from secperf.core.native import find_probe
from secperf.lab.pki import LabPKI
from secperf.lab.services import SServer

SUITE = "TLS_AES_128_GCM_SHA256"
TARGET = 1.05


def s_time_user_us(port: int, seconds: int) -> float:
    out = subprocess.run(
        [
            "openssl",
            "s_time",
            "-connect",
            f"127.0.0.1:{port}",
            "-new",
            "-tls1_3",
            "-ciphersuites",
            SUITE,
            "-time",
            str(seconds),
        ],
        capture_output=True,
        text=True,
        timeout=seconds * 4 + 30,
    ).stdout
    m = re.search(r"([\d.]+) connections/user sec", out)
    if not m:
        raise RuntimeError(f"could not read s_time output: {out[-500:]}")
    return 1e6 / float(m.group(1))


def probe_run(port: int, n: int, warmup: int) -> tuple[float, float]:
    """(user CPU µs per connection of the whole probe process, median lib_cpu_us)"""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [
            str(find_probe()),
            "client",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--tls",
            "1.3",
            "--ciphersuites",
            SUITE,
            "--groups",
            "x25519",
            "--no-app",
            "--n",
            str(n),
            "--warmup",
            str(warmup),
            "--timeout-ms",
            "5000",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    conns = [json.loads(x) for x in out.stdout.splitlines() if '"type":"conn"' in x]
    ok = [c for c in conns if c.get("ok")]
    if len(ok) < n * 0.95:
        raise RuntimeError(
            f"probe: only {len(ok)} of {n} connections succeeded: "
            f"{[c.get('reason') for c in conns if not c.get('ok')][:3]} {out.stderr[-300:]}"
        )
    if any(not c.get("messages") for c in ok):
        raise RuntimeError("probe connections carry no per-message breakdown")
    user_us = (after.ru_utime - before.ru_utime) * 1e6 / (n + warmup)
    return user_us, statistics.median(c["lib_cpu_us"] for c in ok)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=3, help="s_time duration per round")
    ap.add_argument("--n", type=int, default=400, help="probe connections per round")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args()

    pki = LabPKI(Path(tempfile.mkdtemp(prefix="secperf-bench-")) / "pki").ensure()
    certs = pki.server("rsa-2048", 1)
    rows = []
    with SServer(certs, ["-tls1_3", "-ciphersuites", SUITE, "-groups", "X25519"]) as srv:
        for r in range(args.rounds):
            st = s_time_user_us(srv.port, args.seconds)
            user, lib = probe_run(srv.port, args.n, 10)
            rows.append(
                {
                    "s_time_user_us": st,
                    "probe_user_us": user,
                    "probe_lib_cpu_p50_us": lib,
                    "ratio_user": user / st,
                    "ratio_lib_cpu": lib / st,
                }
            )
            print(
                f"round {r + 1}/{args.rounds}: s_time {st:.0f} µs/conn, probe {user:.0f} µs/conn "
                f"(ratio {user / st:.3f}), probe lib_cpu P50 {lib:.0f} µs (ratio {lib / st:.3f})",
                file=sys.stderr,
            )
    ratio = statistics.median(x["ratio_user"] for x in rows)
    ratio_lib = statistics.median(x["ratio_lib_cpu"] for x in rows)
    ok = ratio <= TARGET
    print("client CPU per full TLS 1.3 handshake (x25519, RSA-2048), breakdown on:")
    print(
        f"  s_time -new          {statistics.median(x['s_time_user_us'] for x in rows):8.0f} µs user CPU per connection"
    )
    print(
        f"  secperf-probe        {statistics.median(x['probe_user_us'] for x in rows):8.0f} µs user CPU per connection"
    )
    print(
        f"  ratio probe/s_time   {ratio:8.3f}  (target <= {TARGET}: {'ok' if ok else 'OUTSIDE'}); "
        f"per round {', '.join(format(x['ratio_user'], '.3f') for x in rows)}"
    )
    print(
        f"  probe lib_cpu P50    {statistics.median(x['probe_lib_cpu_p50_us'] for x in rows):8.0f} µs "
        f"(ratio to s_time {ratio_lib:.3f}; user+sys inside SSL_connect only)"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "benchmark": "handshake_cpu",
                    "target": TARGET,
                    "ratio": ratio,
                    "ratio_lib_cpu": ratio_lib,
                    "rounds": rows,
                    "host": host.collect(),
                },
                indent=1,
            )
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
