#!/usr/bin/env python3
"""What the cluster path costs a load generator: one Ray worker against the local path, side by side.

Same target, same machine: nginx (worker_processes 1, pinned to core 0, ECDSA P-256, TLS 1.3,
HTTP GET) driven in closed loop by one `secperf-loadgen` process pinned to core 1, started either
by secperf itself (measure.server.run_level, the local path) or by a Ray actor holding the one CPU
of a private Ray instance (app/cluster_generators.run_level, the `--cluster` path: the actor spawns the
generator, aligns its start and merges its end line). Rounds alternate local, cluster, local, ...;
medians are compared.

Two figures, both as cluster / local:
- generator capacity: 1e6 / the generator's own CPU per handshake (getrusage inside its counting
  window) -- what one generator core can make, independent of how busy the rest of the machine is;
  target: the cluster path costs at most 5 % of it (ratio >= 0.95);
- achieved handshakes/s (reported: it moves with the machine's other load and with which side
  saturates).
A third check: the cluster path's merged latency percentiles equal a local merge of the same
generator's histogram (exactly; they are the same samples).

Usage: python benchmarks/cluster_overhead.py [--seconds 3] [--clients 16] [--rounds 3] [--json OUT]
Exit status: 0 when the targets hold, 1 otherwise, 2 when Ray is not installed.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="also write the figures as JSON here")
    args = ap.parse_args()
    try:
        import ray
    except ImportError:
        print("Ray is not installed: pip install 'secperf[cluster]'", file=sys.stderr)
        return 2
    from secperf.app import cluster as C
    from secperf.app import cluster_generators as CL
    from secperf.core.histogram import Histogram
    from secperf.lab.pki import LabPKI
    from secperf.measure import server as S

    cores = sorted(os.sched_getaffinity(0))
    server_core, gen_core = cores[0], cores[-1]
    work = Path(tempfile.mkdtemp(prefix="secperf-cluster-bench-"))
    pki = LabPKI(work / "pki").ensure()
    cfg = S.ServerConfig("nginx", "ecdsa-p256")
    srv = S.start_server(cfg, pki, work / "nginx", 1)
    ray.init(
        address="local",
        num_cpus=1,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        logging_level=logging.WARNING,
        runtime_env=C.runtime_env(),
    )
    rows: dict[str, list[dict]] = {"local": [], "cluster": []}
    exact = True
    try:
        S.pin(srv.proc.pid, server_core)
        cl = C.Cluster("local", C._alive_nodes(ray))
        g = CL.place(cl, server_core)
        g.places[0]["core"] = gen_core
        p = S.LoadParams(
            concurrency=[args.clients], duration_s=args.seconds, warmup_s=0.5, seed=1, core=server_core, loadgen_procs=1
        )
        argv = S.loadgen_argv(srv.port, cfg, args.clients, p)
        timeout = args.seconds + 40
        exe = str(S.find_loadgen())
        print(
            f"host: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; nginx on core {server_core}, the generator "
            f"on core {gen_core}; {args.clients} clients, {args.seconds:g} s per run; generator {exe}"
        )
        if "/asan/" in exe:
            print("note: that is the AddressSanitizer build (slow); set SECPERF_LOADGEN to a release build")
        for r in range(args.rounds):
            local_run = S.run_level(argv, srv.proc.pid, timeout, [gen_core])
            cluster_run = CL.run_level(g, argv, srv.proc.pid, p.warmup_s, p.duration_s, timeout)
            for name, run in (("local", local_run), ("cluster", cluster_run)):
                lv = S.summarize_level(run)
                rows[name].append(
                    {
                        "handshakes_per_s": lv["handshakes_per_s"],
                        "gen_cpu_us": lv["loadgen_cpu_us_per_handshake"],
                        "server_utilisation": lv["server_utilisation"],
                    }
                )
            merged = CL.cluster_level(cluster_run)["latency_ms"]
            ends = [m for m in cluster_run["lines"] if m.get("type") == "end"]
            exact = exact and merged == Histogram.merged(Histogram.from_pairs(e["hist_us"]) for e in ends).summary_ms()
            print(
                f"round {r + 1}: "
                + "; ".join(
                    f"{k}: {rows[k][-1]['handshakes_per_s']:,.0f} hs/s, generator {rows[k][-1]['gen_cpu_us']:.0f} µs CPU/hs, "
                    f"server {rows[k][-1]['server_utilisation']:.0%} busy"
                    for k in rows
                )
                + f"; load {os.getloadavg()[0]:.2f}"
            )
        g.stop()
    finally:
        ray.shutdown()
        srv.stop()
    med = {
        k: {m: statistics.median(x[m] for x in v) for m in ("handshakes_per_s", "gen_cpu_us")} for k, v in rows.items()
    }
    cap = {k: 1e6 / v["gen_cpu_us"] for k, v in med.items()}
    cap_ratio = cap["cluster"] / cap["local"]
    paired = sorted(lo["gen_cpu_us"] / cu["gen_cpu_us"] for lo, cu in zip(rows["local"], rows["cluster"]))
    rate_ratio = med["cluster"]["handshakes_per_s"] / med["local"]["handshakes_per_s"]
    print(
        f"generator capacity (1e6 / CPU per handshake): local {cap['local']:,.0f}/s, cluster {cap['cluster']:,.0f}/s: "
        f"cluster / local {cap_ratio:.3f} (target >= 0.95)"
    )
    print(
        f"  per round (cluster / local, paired): min {paired[0]:.3f}, median {statistics.median(paired):.3f}, "
        f"max {paired[-1]:.3f} -- the spread is the machine's other load, not either path"
    )
    print(f"achieved handshakes/s: cluster / local {rate_ratio:.3f} (reported)")
    print(f"merged percentiles equal a local merge of the same histograms: {exact}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"rows": rows, "capacity_ratio": cap_ratio, "rate_ratio": rate_ratio, "exact_merge": exact}, f, indent=1
            )
    return 0 if cap_ratio >= 0.95 and exact else 1


if __name__ == "__main__":
    sys.exit(main())
