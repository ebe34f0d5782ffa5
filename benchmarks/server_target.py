#!/usr/bin/env python3
"""`secperf server --target` against today's path: the same nginx configuration, its capacity
measured both ways, interleaved.

- today's path: `secperf server --server nginx --key KEY` starts nginx on loopback, pins it to core
  0 and loads it from the other cores;
- --target: this script starts the same nginx (lab/services.Nginx, the same key and certificate) in
  a network namespace of a fabric (lab/netns_fabric.py), pins it to core 0, and runs `secperf server
  --target ADDR:PORT --core 0` inside another namespace of the fabric (its generators keep off core
  0): every packet crosses a veth pair and a bridge on this machine instead of loopback.

Rounds alternate the order, A B, B A, A B, ... (other work on a shared host moves both alike, and
a trend in it favours neither); the ratio target / today's is given per round and as the ratio of
the medians. Target: within 5 % (0.95..1.05).

Usage: python benchmarks/server_target.py [--key rsa-2048] [--concurrency 16] [--duration 3] [--rounds 3]
Exit status: 0 when the ratio of the medians is within 5 %, 1 otherwise; 2 when not root.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def secperf(prefix: list[str], *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    p = subprocess.run(
        [
            *prefix,
            sys.executable,
            "-m",
            "secperf",
            "server",
            *args,
            "--json",
            "--no-report",
            "--out",
            tempfile.mkdtemp(prefix="secperf-bench-"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    if p.returncode != 0:
        raise SystemExit(f"secperf server {' '.join(args)} failed ({p.returncode}): {p.stderr[-1500:]}")
    return json.loads(p.stdout)


def best(doc: dict) -> dict:
    s = max(doc["series"], key=lambda s: s["derived"].get("handshakes_per_s") or 0)
    return s["derived"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--key", default="rsa-2048")
    ap.add_argument("--concurrency", default="16")
    ap.add_argument("--duration", default="3")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="also write the figures as JSON here")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (network namespaces)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT / "src"))
    from secperf.lab.netns_fabric import Fabric
    from secperf.lab.pki import LabPKI
    from secperf.lab.services import Nginx
    from secperf.measure.server import pin

    key_type = args.key.removesuffix("-nocrt")
    certs = LabPKI().ensure().server(key_type, 1)
    load = ["--concurrency", args.concurrency, "--duration", args.duration, "--warmup", "0.5"]
    rates: dict[str, list[float]] = {"today": [], "target": []}
    loads = []
    with Fabric(["gen", "web"]) as fab:
        ng = fab.place(Nginx(certs, workdir=Path(tempfile.mkdtemp(prefix="secperf-bench-nginx-"))), "web").start()
        try:
            pin(ng.proc.pid, 0)
            target = f"{fab.addr('web')}:{ng.port}"
            print(
                f"host: {os.cpu_count()} CPUs; nginx {args.key} pinned to core 0; {args.concurrency} clients, "
                f"{args.duration} s per level; target {target} (namespace {fab.ns('web')})"
            )
            for r in range(args.rounds):
                # A B, B A, ...: a trend in the host's other work (load falling or rising through the run)
                # then favours neither path
                for how in ("today", "target") if r % 2 == 0 else ("target", "today"):
                    la = os.getloadavg()[0]
                    if how == "today":
                        d = best(secperf([], "--server", "nginx", "--key", args.key, "--core", "0", *load))
                    else:
                        d = best(secperf(fab.exec_prefix("gen"), "--target", target, "--core", "0", *load))
                    rates[how].append(d["handshakes_per_s"])
                    loads.append((how, la, os.getloadavg()[0]))
                    print(
                        f"round {r + 1}: {how:6s} {d['handshakes_per_s']:8.1f} handshakes/s (limited by "
                        f"{d.get('limited_by')}); load {la:.2f} -> {os.getloadavg()[0]:.2f}",
                        flush=True,
                    )
        finally:
            ng.stop()
    per_round = [t / o for t, o in zip(rates["target"], rates["today"])]
    ratio = statistics.median(rates["target"]) / statistics.median(rates["today"])
    ok = 0.95 <= ratio <= 1.05
    print(
        f"--target / today's path: {ratio:.3f} of the medians (target 0.95..1.05); per round "
        f"{', '.join(f'{x:.3f}' for x in per_round)}"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"rates": rates, "ratio": ratio, "ratio_per_round": per_round, "load": loads, "key": args.key}, indent=1
            )
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
