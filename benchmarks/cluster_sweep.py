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
(ray.init(num_cpus=K), loopback), and both counts run the same code (whatif_cluster.predict_on): a
fair ratio. The rounds alternate 1, 2, 1, 2, ... (interleaved: other work on a shared host moves both
alike); the ratio is given per round (two workers over the one-worker rounds either side of it), as
the median of the rounds (the figure judged: no round picked) and as the ratio of the medians. A local
run (no Ray, this process) is timed once as the reference the fan-out must reproduce: every worker
count's rows are checked equal to it (the same seed gives the same draws wherever a cell runs).

Each round explains itself: the load average before and after it; CPU per cell of the workers (their
threads' CPU for their chunks), of the driver (process and main thread) and of Ray's own processes
(GCS, raylet, agents: they tick with the wall time); per worker its busy fraction (the share of the
sweep's wall time it ran a chunk), its CPU share while busy (below 1: other work had the core) and
its idle tail (from its last chunk's end to the sweep's end); and the driver's tail (unpacking after
every worker ended).

The sweep workers run in sessions of their own (app/cluster_pool.own_session: the kernel's autogroups
share the CPU by session first); each round says whether they did (/proc/PID/autogroup of each worker
apart from the others' and the driver's).

Target: two workers >= 1.8x one worker's cells per second (the median of the rounds). The work is
CPU-bound, so the ratio needs two free cores; where other work takes them, the CPU-time bound is the
honest figure (cpu_bound): from the workers' CPU per cell w, the two-worker round's driver CPU per
cell d and the share r of a core Ray's own processes used, two free cores allow (2 - r) x w / (w + d).

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


def ray_processes() -> dict[int, float]:
    """CPU seconds so far of every process this driver started (Ray's GCS, raylet, agents, workers)."""
    import psutil

    out = {}
    for p in psutil.Process().children(recursive=True):
        try:
            t = p.cpu_times()
            out[p.pid] = t.user + t.system
        except psutil.Error:
            pass
    return out


def timed_on_ray(k: int, o, table, cells, path: str = "chunks") -> dict:
    """One round on a private Ray with k worker CPUs: wall, the driver's CPU (process and main thread),
    Ray's own processes' CPU, and per worker its busy fraction, CPU share and idle tail."""
    import ray

    from secperf.app import cluster as C
    from secperf.app import whatif as W
    from secperf.app.whatif_cluster import predict_on
    from secperf.sim.whatif_rows import series

    timings: list = []

    def predict_cells(cells, table, o, cl):
        return predict_on(cl, cells, table, o, timings)

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
        timings.clear()
        load = os.getloadavg()[0]
        p0 = ray_processes()
        t0, e0, c0, m0 = time.perf_counter(), time.time(), time.process_time(), time.thread_time()
        out = rows(cells, predict_cells(cells, table, o, cl), table, o)
        # the driver's own CPU for the sweep (receiving rows, and building them when workers do not):
        # what a worker's core loses to the driver on a host with no core to spare. The process's
        # includes Ray's own threads, which tick with the run's wall time, not with its cells; the
        # main thread's is the work per row (unpickling, unpacking)
        wall, e1 = time.perf_counter() - t0, time.time()
        drv, main_thread = time.process_time() - c0, time.thread_time() - m0
        p1 = ray_processes()
        load_after = os.getloadavg()[0]
        sessions = own_sessions(cl)
    finally:
        ray.shutdown()
    workers: dict[str, dict] = {}
    for t in timings:
        w = workers.setdefault(t.worker, {"chunks": 0, "cells": 0, "busy_s": 0.0, "cpu_s": 0.0, "last_end": e0})
        w["chunks"] += 1
        w["cells"] += t.items
        w["busy_s"] += t.end - t.start
        w["cpu_s"] += t.cpu_s
        w["last_end"] = max(w["last_end"], t.end)
    worker_pids = {int(name.rsplit("/", 1)[1]) for name in workers}
    # CPU of Ray's own processes (GCS, raylet, agents, log monitor) in the round: not the workers'
    infra = sum(c - p0.get(pid, 0.0) for pid, c in p1.items() if pid not in worker_pids)
    worker_cpu = sum(w["cpu_s"] for w in workers.values())
    last_end = max((t.end for t in timings), default=e1)
    per_worker = [
        {
            "worker": name,
            "chunks": w["chunks"],
            "cells": w["cells"],
            # the share of the sweep's wall time the worker was running a chunk
            "busy_fraction": w["busy_s"] / wall,
            # the share of a core it had while running one (below 1: other work took the rest)
            "cpu_share": w["cpu_s"] / w["busy_s"] if w["busy_s"] else None,
            # from its last chunk's end to the sweep's end: idle while others (or the driver) finished
            "idle_tail_s": e1 - w["last_end"],
            # from the sweep's start to its first chunk's start, and between its chunks: its result
            # serialised and stored (after a chunk's end), the next chunk handed to it
            "start_delay_s": min(t.start for t in timings if t.worker == name) - e0,
            "between_chunks_s": between(t for t in timings if t.worker == name),
            "cpu_ms_per_cell": w["cpu_s"] * 1e3 / w["cells"] if w["cells"] else None,
        }
        for name, w in sorted(workers.items())
    ]
    n = len(cells)
    return {
        "workers": k,
        "wall_s": wall,
        "cells_per_s": n / wall,
        "load_before": load,
        "load_after": load_after,
        "driver_cpu_ms_per_cell": drv * 1e3 / n,
        "driver_main_thread_cpu_ms_per_cell": main_thread * 1e3 / n,
        "ray_processes_cpu_ms_per_cell": infra * 1e3 / n,
        "worker_cpu_ms_per_cell": worker_cpu * 1e3 / n if timings else None,
        "chunks": len(timings),
        # cores the run's processes had (workers, driver, Ray's): with two free cores near k + a little
        "cores_used": (worker_cpu + drv + infra) / wall,
        "driver_tail_s": e1 - last_end,  # the driver unpacking the last chunk(s) after every worker ended
        "per_worker": per_worker,
        "sessions": sessions,
        "rows": out,
    }


def own_sessions(cl) -> dict:
    """Whether every sweep worker sits in a session (and so an autogroup) of its own, apart from the
    driver's (app/cluster_pool.own_session), read from /proc on this machine."""
    pool = getattr(cl, "pool", None)
    pids = [pid for _, pid, _ in getattr(pool, "runners", [])]

    from secperf.app.cluster_pool import autogroup_of

    groups = [autogroup_of(p) for p in pids]
    mine = autogroup_of(os.getpid())
    return {
        "workers": len(pids),
        "own_session": bool(pids) and all(os.getsid(p) == p for p in pids if os.path.exists(f"/proc/{p}")),
        # None: a process here sits in the kernel's default autogroup, which has no name to compare
        "autogroups_apart": None
        if mine is None or None in groups
        else bool(pids) and len(set(groups)) == len(groups) and mine not in groups,
    }


def between(chunks) -> float:
    """Seconds a worker spent between its chunks (from one's end to the next one's start)."""
    ts = sorted(chunks, key=lambda t: t.start)
    return sum(b.start - a.end for a, b in zip(ts, ts[1:]))


def autogroup() -> bool:
    """Whether the kernel shares the CPU between sessions first (sched_autogroup_enabled)."""
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


def cpu_bound(w: float, two: dict) -> float:
    """Two workers over one on two free cores, from CPU times: a cell is w ms of a worker's CPU (the
    same code in both counts: pooled over the rounds, as other work on the host moves it by +-15 % per
    round through the caches, which is not the scaling's), the two-worker round's driver d ms per cell,
    and Ray's own processes a share r of one core whatever the cells (they tick with the wall time).
    One worker makes 1 / w cells per ms, the driver and Ray using the other core; two make
    (2 - r) / (w + d)."""
    r = two["ray_processes_cpu_ms_per_cell"] * two["cells_per_s"] / 1e3
    return (2 - r) * w / (w + two["driver_cpu_ms_per_cell"])


def show(r: int, x: dict) -> None:
    ws = "; ".join(
        f"busy {w['busy_fraction']:.2f} of the wall, {w['cpu_share']:.2f} of a core while busy, start delay "
        f"{w['start_delay_s'] * 1e3:.0f} ms, {w['between_chunks_s'] * 1e3:.0f} ms between its {w['chunks']} chunks, "
        f"idle tail {w['idle_tail_s'] * 1e3:.0f} ms"
        for w in x["per_worker"]
    )
    print(
        f"round {r + 1}: {x['workers']} worker(s): {x['cells_per_s']:,.0f} cells/s ({x['wall_s']:.1f} s); load "
        f"{x['load_before']:.2f} -> {x['load_after']:.2f}; CPU ms per cell: workers "
        f"{x['worker_cpu_ms_per_cell'] or float('nan'):.3f}, driver {x['driver_cpu_ms_per_cell']:.3f} (main thread "
        f"{x['driver_main_thread_cpu_ms_per_cell']:.3f}), Ray's processes {x['ray_processes_cpu_ms_per_cell']:.3f}; "
        f"driver tail {x['driver_tail_s'] * 1e3:.0f} ms; workers in sessions of their own: "
        f"{x['sessions']['own_session']}, autogroups apart from each other and the driver's: "
        f"{x['sessions']['autogroups_apart']}\n    workers: {ws}"
    )


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
        import psutil  # noqa: F401
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
    print(
        f"local (no Ray, one process): {len(cells) / local_s:,.0f} cells/s ({local_s:.1f} s, "
        f"{local_cpu * 1e3 / len(cells):.2f} ms CPU per cell); load {load0[0]:.2f} -> {os.getloadavg()[0]:.2f}"
    )
    rounds: list[dict] = []
    same = True
    for r in range(args.rounds):
        for k in (1, 2):  # interleaved: other work on a shared host moves both alike
            x = timed_on_ray(k, o, table, cells, args.path)
            same = same and fingerprint(x.pop("rows")) == ref
            x["round"] = r + 1
            rounds.append(x)
            show(r, x)
    ones = [x for x in rounds if x["workers"] == 1]
    twos = [x for x in rounds if x["workers"] == 2]
    rate1, rate2 = [x["cells_per_s"] for x in ones], [x["cells_per_s"] for x in twos]
    ratio = statistics.median(rate2) / statistics.median(rate1)
    # per round: the two-worker rate over the mean of the one-worker rounds either side of it
    per_round = [x["cells_per_s"] / ((rate1[i] + rate1[min(i + 1, len(rate1) - 1)]) / 2) for i, x in enumerate(twos)]
    timed = [x["worker_cpu_ms_per_cell"] for x in rounds if x["worker_cpu_ms_per_cell"]]
    w = statistics.median(timed) if timed else local_cpu * 1e3 / len(cells)
    bounds = [cpu_bound(w, x) for x in twos]
    median_round = statistics.median(per_round)
    ok = median_round >= 1.8 and same
    print(
        f"two workers / one worker: {median_round:.2f}x the median of the rounds' ratios, {ratio:.2f}x the ratio of "
        f"the medians (target >= 1.8x); per round {', '.join(f'{r:.2f}' for r in per_round)}; rows equal to the "
        f"local run at every worker count: {same}"
    )
    d = statistics.median(x["driver_cpu_ms_per_cell"] for x in twos)
    d_main = statistics.median(x["driver_main_thread_cpu_ms_per_cell"] for x in twos)
    infra = statistics.median(x["ray_processes_cpu_ms_per_cell"] for x in twos)
    if bounds:
        print(
            f"CPU-time bound (what two free cores allow, from the CPU times: cpu_bound) per two-worker round: "
            f"{', '.join(f'{b:.2f}' for b in bounds)} (median {statistics.median(bounds):.2f}x)"
        )
    loss = [
        f"round {x['round']}: workers had {min(w['cpu_share'] for w in x['per_worker']):.2f}-"
        f"{max(w['cpu_share'] for w in x['per_worker']):.2f} of a core, idle tails up to "
        f"{max(w['idle_tail_s'] for w in x['per_worker']) * 1e3:.0f} ms of {x['wall_s']:.1f} s"
        for x in twos
        if x["per_worker"]
    ]
    print("two-worker rounds: " + "; ".join(loss))
    used = {k: statistics.median(x["cores_used"] for x in rounds if x["workers"] == k) for k in (1, 2)}
    apart = all(x["sessions"]["own_session"] and x["sessions"]["autogroups_apart"] for x in rounds)
    # whether each process's autogroup could be named (not the kernel's unnamed default group)
    grouped = autogroup() and all(x["sessions"]["autogroups_apart"] is not None for x in rounds)
    print(
        f"cores the run's processes had (median): {used[1]:.2f} with one worker, {used[2]:.2f} with two"
        + (
            f"; the kernel groups processes by session (sched_autogroup): the sweep's are one group, which other "
            f"sessions' work holds to its share of the CPU whatever the worker count: the wall-time ratio follows "
            f"the ratio of those shares ({used[2] / used[1]:.2f}x), not the sweep's scaling"
            if grouped and used[2] < 1.5 and not apart
            else ""
        )
        + (
            "; each worker had a session (an autogroup) of its own: against S >= 1 other sessions that each want "
            "a core, one worker gets about 2/(S+1) of the 2 cores and two get 4/(S+2), at best 2(S+1)/(S+2)x "
            "(1.33x with one such session, 1.5x with two, 1.71x with five, 1.8x from eight): on two cores the "
            "target needs a host with no other busy session (then 2x) or eight and more"
            if grouped and apart
            else ""
        )
    )
    infra_share = statistics.median(x["ray_processes_cpu_ms_per_cell"] * x["cells_per_s"] / 1e3 for x in twos)
    bound = statistics.median(bounds)
    # the pessimistic bound: none of the driver's work overlapped the workers' (two workers, then the driver)
    serial = w / (w / 2 + d + infra_share * w / 2)
    saturates = w / d if d > 0 else float("inf")
    print(
        f"CPU per cell: {w:.2f} ms of work on a worker ({local_cpu * 1e3 / len(cells):.2f} ms in one local process), "
        f"{d:.3f} ms on the driver (main thread {d_main:.3f}); Ray's own processes {infra_share:.3f} of a core "
        f"({infra:.3f} ms per cell at this load): two free cores allow {bound:.2f}x ({serial:.2f}x if none of the "
        f"driver's work overlapped the workers')"
    )
    w_by = {
        k: statistics.median(
            [x["worker_cpu_ms_per_cell"] for x in rounds if x["workers"] == k and x["worker_cpu_ms_per_cell"]]
        )
        for k in (1, 2)
    }
    print(
        f"a cell's CPU on a worker: {w_by[1]:.2f} ms with one worker, {w_by[2]:.2f} ms with two (median of the rounds): "
        f"two workers at most {2 * w_by[1] / w_by[2]:.2f}x on two free cores when each cell costs what it costs then "
        f"(the two CPUs of a virtual machine can be one physical core's two threads: each slows the other)"
    )
    print(
        f"sizing: one worker core makes about {1000 / w:,.0f} cells/s at this --n; the driver takes about "
        f"{1000 / d:,.0f} rows/s per core it has ({d:.3f} ms each), so it saturates at about {saturates:.0f} worker cores"
    )
    busy = max(max(x["load_before"], x["load_after"]) for x in rounds)
    if median_round < 1.8:
        print(
            f"note: the load average reached {busy:.1f} on {os.cpu_count()} CPUs during the rounds: two workers "
            f"had {'no' if busy >= (os.cpu_count() or 1) else 'not'} two free cores; run it on a quiet host"
        )
    out = {
        "cells": len(cells),
        "n": args.n,
        "local_cells_per_s": len(cells) / local_s,
        "one_worker_cells_per_s": rate1,
        "two_workers_cells_per_s": rate2,
        "ratio": ratio,
        "ratio_median_of_rounds": median_round,
        "ratio_per_round": per_round,
        "cpu_time_bound_per_round": bounds,
        "equal_to_local": same,
        "load": [(x["workers"], x["load_before"], x["load_after"]) for x in rounds],
        "rounds": rounds,
        "cpus": os.cpu_count(),
        "driver_cpu_ms_per_cell": {
            k: [x["driver_cpu_ms_per_cell"] for x in rounds if x["workers"] == k] for k in (1, 2)
        },
        "driver_main_thread_cpu_ms_per_cell": {
            k: [x["driver_main_thread_cpu_ms_per_cell"] for x in rounds if x["workers"] == k] for k in (1, 2)
        },
        "local_cpu_ms_per_cell": local_cpu * 1e3 / len(cells),
        "quiet_host_bound": bound,
        "worker_cpu_ms_per_cell_by_workers": w_by,
        "bound_from_each_counts_cell_cpu": 2 * w_by[1] / w_by[2],
        "quiet_host_bound_serial_driver": serial,
        "path": args.path,
        "cores_used_median": used,
        "sched_autogroup": autogroup(),
        "workers_in_own_sessions": apart,
        "sizing": {
            "cell_cpu_ms": w,
            "cells_per_s_per_worker_core": 1000 / w,
            "driver_cpu_ms_per_cell": d,
            "driver_main_thread_cpu_ms_per_cell": d_main,
            "ray_processes_cpu_ms_per_cell": infra,
            "ray_processes_core_share": infra_share,
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
