#!/usr/bin/env python3
"""A what-if sweep on Ray: throughput with two worker CPUs against one, side by side in one run.

The sweep is a real `secperf whatif` grid (tls1.3, rtt 0..999 ms step 1 x loss 0..9 % step 1:
10,000 cells, --n 300 by default), predicted through the same code `whatif --cluster` uses
(app/whatif.predict_cells -> app/whatif_cluster.predict_on -> app/cluster.map_chunks). What is timed
is cells to rows: every cell's row (the Series the Result keeps) in the driver's hands. On Ray each
task predicts a chunk of cells and returns the chunk's rows packed as one payload (the rows' draws in
one array, what the rows share sent once), so the driver only unpickles rows; locally the driver
builds them.

For each worker count a private Ray instance on this machine gets exactly that many CPUs
(ray.init(num_cpus=K), loopback); the rounds alternate 1, 2, 1, 2, ... (interleaved: other work on
a shared host moves both alike) and the ratio is given per round (two workers over the one-worker
rounds next to it) with its spread, and as the ratio of the medians. A local run (no Ray, this
process) is timed once as the reference the fan-out must reproduce: every worker count's rows are
checked equal to it (the same seed gives the same draws wherever a cell runs).

Target: two workers >= 1.8x one worker's cells per second. The work is CPU-bound, so the ratio
needs two free cores: the load average before and after each round is printed next to it (a host
shared with other work cannot show 1.8x, and says so).

The per-worker figures that size a larger cluster are printed and written with --json: one worker
core's cells per second (1000 / the cell's CPU in ms), the driver's CPU per cell, and the worker count
where the driver saturates (the cell's CPU over the driver's per cell); `scripts/docs_figures.py --only
cluster-sweep --sweep-json OUT` draws them for docs/how-to/cluster.md.

Usage: python benchmarks/cluster_sweep.py [--n 300] [--rounds 3] [--cells 10000] [--json OUT]
       [--path chunks|series|predictions]
Exit status: 0 when the target holds, 1 otherwise, 2 when Ray is not installed.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time


def sweep_cells(n: int, cells: int):
    from secperf.app import whatif as W

    loss = max(1, min(10, cells // 1000))
    rtt_hi = max(1, cells // loss) - 1
    o = W.WhatifOptions(
        protocols=["tls1.3"], sweep=f"rtt=0..{rtt_hi}:1,loss=0..{loss - 1}:1", n=n, seed=7, max_cells=max(20_000, cells)
    )
    table = W.cost_table(o)
    cs, _ = W._cells(o, table)
    return o, table, cs


def rows(cells, preds, table, o) -> list:
    """The rows the Result keeps: built here from local predictions, as received from the workers."""
    from secperf.app.whatif import _row

    return [_row(c, p, table, o.until, device=o.device) for c, p in zip(cells, preds)]


def fingerprint(rows_: list) -> list:
    return [r.model_dump_json() for r in rows_]


def timed_on_ray(k: int, o, table, cells, path: str = "chunks") -> tuple[float, float, float, list]:
    import ray

    from secperf.app import cluster as C
    from secperf.app import whatif as W
    from secperf.sim.whatif_rows import series

    predict_cells = W.predict_cells
    if path == "predictions":  # workers send predictions (plan, draws), the driver builds the rows

        def predict_shared(shared, cell):
            return W.predict_cell(cell, *shared)

        def predict_cells(cells, table, o, cl):  # noqa: F811
            return C.map_items(predict_shared, (table, o), cells, cl, "what-if cells")

    elif path == "series":  # workers send each row as its own Series (the path before chunks were packed)

        def row_shared(shared, cell):
            table, o = shared
            return series(cell, W.predict_cell(cell, table, o), table, o.until, device=o.core or o.device)

        def predict_cells(cells, table, o, cl):  # noqa: F811
            return C.map_items(row_shared, (table, o), cells, cl, "what-if cells")

    ray.init(
        address="local",
        num_cpus=k,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        logging_level=logging.WARNING,
        runtime_env=C.runtime_env(),
    )
    try:
        cl = C.Cluster("local", C._alive_nodes(ray))
        predict_cells(cells[: 4 * k], table, o, cl)  # workers started and secperf imported on each
        t0, c0, m0 = time.perf_counter(), time.process_time(), time.thread_time()
        out = rows(cells, predict_cells(cells, table, o, cl), table, o)
        # the driver's own CPU for the sweep (receiving rows, and building them when workers do not):
        # what a worker's core loses to the driver on a host with no core to spare. The process's
        # includes Ray's own threads, which tick with the run's wall time, not with its cells; the
        # main thread's is the work per row (unpickling, unpacking)
        return time.perf_counter() - t0, time.process_time() - c0, time.thread_time() - m0, out
    finally:
        ray.shutdown()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="simulated connections per cell")
    ap.add_argument("--cells", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of (1 worker, 2 workers)")
    ap.add_argument("--json", help="also write the figures as JSON here")
    ap.add_argument(
        "--path",
        choices=("chunks", "series", "predictions"),
        default="chunks",
        help="what the workers send: packed chunks of rows (what `whatif --cluster` does), or, for "
        "comparison, one Series per cell (the path before) or their predictions (the driver builds the rows)",
    )
    args = ap.parse_args()
    try:
        import ray  # noqa: F401
    except ImportError:
        print("Ray is not installed: pip install 'secperf[cluster]'", file=sys.stderr)
        return 2
    from secperf.app.whatif import predict_cells

    o, table, cells = sweep_cells(args.n, args.cells)
    print(f"host: {os.cpu_count()} CPUs; sweep: {len(cells):,} cells x n {args.n} (tls1.3, rtt x loss)")
    load0 = os.getloadavg()
    t0, c0 = time.perf_counter(), time.process_time()
    ref = fingerprint(rows(cells, predict_cells(cells, table, o), table, o))
    local_s, local_cpu = time.perf_counter() - t0, time.process_time() - c0
    driver_ms: dict[int, list[float]] = {}
    thread_ms: dict[int, list[float]] = {}
    print(
        f"local (no Ray, one process): {len(cells) / local_s:,.0f} cells/s ({local_s:.1f} s, "
        f"{local_cpu * 1e3 / len(cells):.2f} ms CPU per cell); load {load0[0]:.2f} -> {os.getloadavg()[0]:.2f}"
    )
    rates: dict[int, list[float]] = {1: [], 2: []}
    loads = []
    same = True
    for r in range(args.rounds):
        for k in (1, 2):
            la = os.getloadavg()[0]
            wall, drv, main_thread, preds = timed_on_ray(k, o, table, cells, args.path)
            driver_ms.setdefault(k, []).append(drv * 1e3 / len(cells))
            thread_ms.setdefault(k, []).append(main_thread * 1e3 / len(cells))
            lb = os.getloadavg()[0]
            same = same and fingerprint(preds) == ref
            rates[k].append(len(cells) / wall)
            loads.append((k, la, lb))
            print(
                f"round {r + 1}: {k} worker(s): {len(cells) / wall:,.0f} cells/s ({wall:.1f} s), driver CPU "
                f"{drv * 1e3 / len(cells):.3f} ms/cell (main thread {main_thread * 1e3 / len(cells):.3f}); load {la:.2f} -> "
                f"{lb:.2f}"
            )
    one, two = statistics.median(rates[1]), statistics.median(rates[2])
    ratio = two / one
    # per round: the two-worker rate over the mean of the one-worker rounds either side of it
    per_round = [
        two_r / ((rates[1][i] + rates[1][min(i + 1, len(rates[1]) - 1)]) / 2) for i, two_r in enumerate(rates[2])
    ]
    ok = ratio >= 1.8 and same
    print(
        f"two workers / one worker: {ratio:.2f}x of the medians (target >= 1.8x); per round "
        f"{', '.join(f'{r:.2f}' for r in per_round)} (min {min(per_round):.2f}, max {max(per_round):.2f}); rows equal "
        f"to the local run at every worker count: {same}"
    )
    # CPU, not wall: what a quiet host with two free cores allows, from the cell's CPU (w, one process)
    # and the driver's per cell (d, two-worker rounds): 1 worker max(w, d) per cell, 2 workers (w + d) / 2
    # when the driver's work overlaps the workers' (it unpacks a chunk while they compute the next), and
    # w / 2 + d if none of it overlapped (the pessimistic bound)
    w, d = local_cpu * 1e3 / len(cells), statistics.median(driver_ms[2])
    d_main = statistics.median(thread_ms[2])
    bound = 2 * max(w, d) / (w + d)
    serial = max(w, d) / (w / 2 + d)
    saturates = w / d if d > 0 else float("inf")
    print(
        f"CPU per cell: {w:.2f} ms of work, {d:.3f} ms on the driver: two free cores allow {bound:.2f}x "
        f"({serial:.2f}x if none of the driver's work overlapped the workers'); the driver's main thread alone "
        f"{d_main:.3f} ms per cell: {2 * w / (w + d_main):.2f}x ({w / (w / 2 + d_main):.2f}x)"
    )
    print(
        f"sizing: one worker core makes about {1000 / w:,.0f} cells/s at this --n; the driver takes about "
        f"{1000 / d:,.0f} rows/s per core it has ({d:.3f} ms each), so it saturates at about {saturates:.0f} worker cores"
    )
    busy = max(la for _, la, _ in loads)
    if ratio < 1.8:
        print(
            f"note: the load average reached {busy:.1f} on {os.cpu_count()} CPUs during the rounds: two workers "
            f"had {'no' if busy >= (os.cpu_count() or 1) else 'not'} two free cores; run it on a quiet host"
        )
    out = {
        "cells": len(cells),
        "n": args.n,
        "local_cells_per_s": len(cells) / local_s,
        "one_worker_cells_per_s": rates[1],
        "two_workers_cells_per_s": rates[2],
        "ratio": ratio,
        "ratio_per_round": per_round,
        "equal_to_local": same,
        "load": loads,
        "cpus": os.cpu_count(),
        "driver_cpu_ms_per_cell": driver_ms,
        "driver_main_thread_cpu_ms_per_cell": thread_ms,
        "local_cpu_ms_per_cell": w,
        "quiet_host_bound": bound,
        "quiet_host_bound_serial_driver": serial,
        "path": args.path,
        "sizing": {
            "cell_cpu_ms": w,
            "cells_per_s_per_worker_core": 1000 / w,
            "driver_cpu_ms_per_cell": d,
            "driver_main_thread_cpu_ms_per_cell": d_main,
            "driver_rows_per_s": 1000 / d if d > 0 else None,
            "driver_saturates_at_workers": saturates,
        },
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
