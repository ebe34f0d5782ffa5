"""`secperf mqtt-load --cluster`: the persistent MQTT clients spread over generators on a Ray cluster's
nodes, so the client count is no longer bounded by one process's open-file limit.

Placement, clock alignment and the orphan rules are app/cluster_generators.py's: one actor per worker
CPU starts one `secperf-mqttload`, pinned to a core of its node (never the broker's core on the broker's
node); every generator gets the same start instant on the driver's clock (shifted by its measured
clock offset); a generator is spawned through its actor's run registry, so it dies with the actor, and
the actors end with the run. With mosquitto started here the generators run on the nodes of this
machine (the broker listens on loopback; nodes on other machines are named and left out); with
`--target` on every node that reaches the broker (app/cluster_target.place_all).

The load is split as the generator would split it over processes: client i of N goes to generator
i mod n's share (the first get one more), each generator's connect and publish rates in proportion to
its clients, so each ramp spans the same time; seeds differ per generator. The phases (ramp, hold,
storm) are merged by name: counts added, histograms merged bin by bin (core/histogram.py) and the
phase's percentiles read from the merged histogram (never averaged), the time until all were up the
latest generator's. The broker's CPU (it runs here) is sampled on the driver through the run and cut
at each phase's last end over the generators."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError, MeasurementError
from ..core.histogram import SCHEME, Histogram
from ..measure.mqtt_load import PHASES, _phase_figures, fd_limits, find_mqttload
from ..measure.server_cpu import process_cpu_s
from ..measure.storm_capacity import busy_between, cores_busy_s
from ..measure.storm_sync import SYNC_OPTION, StormSync, drop_skew
from ..measure.tcp_counters import counters_between
from .cluster import ClusterRunError, connect, ray_module
from .cluster_bounds import busy_around, storm_bounds_cluster
from .cluster_generators import LEAD_S, Generators, _lost, _place, _with, clock_offsets, place, shares
from .cluster_target import place_all

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..measure.mqtt_load import MqttLoadConfig
    from ..measure.server_target import LoadTarget

HISTS = ("connack", "hs", "puback", "wait")  # the phase line's histograms (<name>_hist_us)
QUANTILES = ("p50_ms", "p90_ms", "p99_ms", "max_ms")  # the generator's own keys for them (no p95)
CPU_EVERY_S = 0.2  # the driver samples the broker's CPU this often
SYNC_POLL_S = 0.2  # while generators hold for the storm instant, the driver asks them this often
MERGE_RULE = (
    "counts summed over the generators' phase and end lines; a phase's percentiles from their histograms "
    f"merged bin by bin ({SCHEME}), nearest rank, the bin's highest value; time until all up: the latest "
    "generator's, from its own phase start"
)


def worker_argvs(argv: list[str], n: int) -> list[list[str]]:
    """The generator's command line (all clients) cut over n generators: --clients shared out, the
    connect and publish rates in proportion to each share, distinct seeds and MQTT client IDs (a broker
    drops a connected client when another connects with its ID); empty shares left out."""

    def value(opt: str, default: str) -> str:
        return argv[argv.index(opt) + 1] if opt in argv else default

    total, prefix = int(value("--clients", "1")), value("--client-id-prefix", "secperf-mq")
    rate, pub, seed = (
        float(value("--connect-rate", "100")),
        float(value("--publish-rate", "0")),
        int(value("--seed", "1")),
    )
    out: list[list[str]] = []
    for i, k in enumerate(shares(total, n)):
        if not k:
            continue
        a = _with(argv, "--clients", str(k))
        a = _with(a, "--connect-rate", repr(rate * k / total))
        a = _with(a, "--publish-rate", repr(pub * k / total))
        a = _with(a, "--client-id-prefix", f"{prefix}-g{i}")  # MQTT client IDs distinct over the generators
        out.append(_with(a, "--seed", str(seed + 64 * i)))
    return out


@contextlib.contextmanager
def generators(address: str, c: MqttLoadConfig, lt: LoadTarget | None, quiet: bool) -> Iterator[Generators]:
    """Connected to the cluster and the generators placed for the length of the run (stopped after).
    With --target each generator's share must fit its open-file limit (checked as for one process)."""

    with connect(address, quiet=quiet) as cl:
        if lt is None:
            g = place(cl, c.core)
        else:
            g = place_all(cl, lt, min(10.0, c.timeout_s))
        try:
            if lt is not None:
                fd_limits(max(shares(c.clients, len(g.actors))))
            yield g
        finally:
            g.stop()


def _cpu_at(samples: list[tuple[float, float]], t: float) -> float | None:
    """The broker's CPU seconds at driver time t, interpolated between the samples around it."""
    if not samples:
        return None
    if t <= samples[0][0]:
        return samples[0][1]
    for (t0, c0), (t1, c1) in zip(samples, samples[1:]):
        if t0 <= t <= t1:
            return c0 + (c1 - c0) * ((t - t0) / (t1 - t0) if t1 > t0 else 0.0)
    return samples[-1][1]


def run_load(
    g: Generators, argv: list[str], broker_pid: int | None, timeout_s: float, broker_core: int | None = None
) -> dict[str, Any]:
    """The load on every generator from one start instant; run_mqttload's dict (meta, phases, end,
    intervals) merged over them, plus "cluster" (workers with their own phases, lost workers, the rules)
    and "cluster_storm_bounds" (app/cluster_bounds: per node; `broker_core`: the broker's core here,
    None for a target, whose CPU is not read)."""

    ray = ray_module()
    argvs = worker_argvs(argv, len(g.actors))
    clocks = clock_offsets(g)
    start = time.time() + LEAD_S + max(x["ping_s"] for x in clocks)
    exe = str(find_mqttload())
    refs = {
        g.actors[i].run.remote(
            argvs[i], start + clocks[i]["offset_s"], g.places[i]["core"], timeout_s, exe, "mqttload"
        ): i
        for i in range(len(argvs))
    }
    samples: list[tuple[float, float]] = []
    # (time, the broker's CPU, this machine's cores' busy seconds) read together: its core's share left
    busy: list[tuple[float, float, dict[int, float]]] = []
    stop = threading.Event()

    def sample() -> None:
        while broker_pid and not stop.is_set():
            try:
                cpu = process_cpu_s(broker_pid)
            except MeasurementError:
                return  # the broker is gone: no more readings
            now = time.time()
            samples.append((now, cpu))
            busy.append((now, cpu, cores_busy_s()))
            stop.wait(CPU_EVERY_S)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    results: dict[int, dict[str, Any]] = {}
    lost: list[dict[str, Any]] = []
    pending = list(refs)
    deadline = time.monotonic() + LEAD_S + timeout_s + 30
    # --storm-sync: once every generator wrote storm_ready, all get one instant (each on its own clock)
    offsets = [clocks[i]["offset_s"] for i in range(len(argvs))]
    sync = StormSync(len(argvs), lambda i, ns: g.actors[i].storm_at.remote(ns), offsets_s=offsets)
    waiting = set(range(len(argvs))) if SYNC_OPTION in argv else set()
    try:
        while pending and time.monotonic() < deadline:
            ready, pending = ray.wait(pending, num_returns=len(pending), timeout=SYNC_POLL_S if waiting else 1.0)
            for r in ready:
                waiting.discard(refs[r])
                sync.leave(refs[r])  # ended before its ready line: the others do not wait for it
                try:
                    results[refs[r]] = ray.get(r)
                except Exception as exc:  # noqa: BLE001 (the actor, its process or its node died)
                    lost.append({**_place(g, refs[r]), "reason": _lost(exc)})
            if waiting and sync.instant_ns is None:
                _poll_ready(g, sorted(waiting), sync, waiting)
    finally:
        stop.set()
        th.join(5)
    lost += [{**_place(g, refs[r]), "reason": f"no answer within {timeout_s + 30:.0f} s"} for r in pending]
    bad = [(i, r) for i, r in results.items() if r["returncode"] == 2]
    if bad:  # the generator refused its arguments or its node's limits (as run_mqttload's exit 2 here)
        i, r = bad[0]
        raise InputError(f"secperf-mqttload on {g.places[i]['name']}: {r['stderr'][-400:]}")
    for i in [i for i, r in results.items() if not any(m.get("type") == "end" for m in r["lines"])]:
        r = results.pop(i)  # died before its end line: its phases are incomplete, so it is lost
        why = r["stderr"][-200:] or "no output"
        lost.append({**_place(g, i), "reason": f"no end line (exit {r['returncode']}): {why}"})
    if not results:
        why = "; ".join(f"{x['name']}: {x['reason']}" for x in lost)
        raise ClusterRunError(f"cluster: no generator gave an end line ({why})")
    out = merge(g, results, clocks, lost, samples)
    st = next((p for p in out["phases"] if p.get("phase") == "storm"), None)
    if st is not None:
        window = st.pop("window_s", None)
        around = busy_around(busy, *window) if window else None
        out["cluster_storm_bounds"] = storm_bounds_cluster(st, out["cluster"]["workers"], broker_core, around)
    if SYNC_OPTION in argv:
        out["cluster"]["storm_sync"] = sync.said()
    return out


def _poll_ready(g: Generators, idx: list[int], sync: StormSync, waiting: set[int]) -> None:
    """Asks the waiting generators' actors whether their storm_ready line came; reports those that did."""
    ray = ray_module()
    try:
        flags = ray.get([g.actors[i].storm_ready.remote() for i in idx], timeout=10)
    except Exception:  # noqa: BLE001 (an actor died: its run's result says so)
        return
    for i, f in zip(idx, flags):
        if f:
            waiting.discard(i)
            sync.ready(i)


def merge_phase(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """One phase's lines (one per generator) as one: counts added, histograms merged bin by bin, the
    percentiles read from the merged histograms (None when empty, as the generator writes them)."""
    out: dict[str, Any] = {"type": "phase", "phase": lines[0].get("phase"), "generators": len(lines)}
    for k, v in lines[0].items():
        if isinstance(v, int) and not isinstance(v, bool) and not k.endswith(("_ms", "_s", "_ns")):
            out[k] = sum(int(m.get(k) or 0) for m in lines)
    out["stopped"] = ",".join(sorted({str(m.get("stopped", "?")) for m in lines}))
    out["elapsed_s"] = max(float(m.get("elapsed_s") or 0.0) for m in lines)
    ups = [m.get("time_all_up_s") for m in lines]
    known = [float(u) for u in ups if u is not None]
    out["time_all_up_s"] = max(known) if known and len(known) == len(ups) else None
    errors: dict[str, int] = {}
    for m in lines:
        for r, n in (m.get("errors") or {}).items():
            errors[r] = errors.get(r, 0) + n
    out["errors"] = errors
    for h in HISTS:
        hist = Histogram.merged(Histogram.from_pairs(m.get(f"{h}_hist_us", []), f"{h}_hist_us") for m in lines)
        out[f"{h}_hist_us"] = hist.to_pairs()
        if h != "hs":
            pct = hist.percentiles_ms(f"{h}_")
            out.update({f"{h}_{q}": pct[f"{h}_{q}"] for q in QUANTILES})
    return out


def merge(
    g: Generators,
    results: dict[int, dict[str, Any]],
    clocks: list[dict[str, float]],
    lost: list[dict[str, Any]],
    samples: list[tuple[float, float]],
) -> dict[str, Any]:
    by_phase: dict[str, list[tuple[dict[str, Any], float, float]]] = {}  # (line, start, end on the driver's clock)
    workers: list[dict[str, Any]] = []
    ends: list[dict[str, Any]] = []
    intervals: list[dict[str, Any]] = []
    metas: list[dict[str, Any]] = []
    storm_offsets: list[float] = []  # the clock offset of each generator with a storm line, in order
    for i in sorted(results):
        r, name = results[i], g.places[i]["name"]
        t = r["started_wall_s"] - clocks[i]["offset_s"]  # this generator's start on the driver's clock
        if any(m.get("type") == "phase" and m.get("phase") == "storm" for m in r["lines"]):
            storm_offsets.append(clocks[i]["offset_s"])
        mine: list[dict[str, Any]] = []
        stamps = r.get("phase_stamps") or []  # this node's /proc/stat at the start and each phase line
        for m in r["lines"]:
            if m.get("type") == "phase":
                nth = len(mine) + 1
                if nth < len(stamps):
                    a, b = stamps[nth - 1], stamps[nth]
                    m = {
                        **m,
                        "core_busy_s": busy_between(a["cores_busy_s"], b["cores_busy_s"]).get(g.places[i]["core"]),
                        "node_tcp_counters": counters_between(a["tcp_counters"], b["tcp_counters"]),
                    }
                t1 = t + float(m.get("elapsed_s") or 0.0)
                by_phase.setdefault(str(m.get("phase")), []).append((m, t, t1))
                mine.append(m)
                t = t1
            elif m.get("type") == "end":
                ends.append({**m, "late_s": r["late_s"]})
            elif m.get("type") == "interval":
                intervals.append({**m, "worker": name})
            elif m.get("type") == "meta":
                metas.append(m)
        workers.append(
            {
                **_place(g, i),
                "generator_pid": r["pid"],
                "returncode": r["returncode"],
                "clients": sum(int(m.get("clients") or 0) for m in mine[:1]),
                "clock_offset_ms": clocks[i]["offset_s"] * 1e3,
                "ping_ms": clocks[i]["ping_s"] * 1e3,
                "start_late_ms": r["late_s"] * 1e3,
                "nice": r.get("nice"),
                "stderr": r["stderr"][-300:] or None,
                "phases": [
                    {
                        k: v
                        for k, v in m.items()
                        if k
                        in (
                            *("phase", "attempts", "connacks", "resumed", "failed", "refused", "pubacks", "stopped"),
                            *("cpu_s", "core_busy_s", "node_tcp_counters"),  # per-phase CPU on its node
                        )
                        or k.endswith(("_hist_us", "elapsed_s", "time_all_up_s"))
                    }
                    for m in mine
                ],
            }
        )
    phases: list[dict[str, Any]] = []
    prev = min((s for v in by_phase.values() for _, s, _ in v), default=0.0)
    for name in PHASES:
        if name not in by_phase:
            continue
        items = by_phase[name]
        line = merge_phase([m for m, _, _ in items])
        last = max(e for _, _, e in items)
        starts = [s for _, s, _ in items]
        line["start_skew_ms"] = (max(starts) - min(starts)) * 1e3
        if name == "storm":  # the drop instants each generator recorded, on the driver's clock
            line["drop_sync"] = drop_skew([m for m, _, _ in items], storm_offsets)
            line["window_s"] = (prev, last)  # the storm on the driver's clock (the broker's /proc/stat)
        a, b = _cpu_at(samples, prev), _cpu_at(samples, last)
        phases.append(_phase_figures(line, b - a if a is not None and b is not None else None))
        prev = last
    end = {
        "type": "end",
        "stopped": ",".join(sorted({str(e.get("stopped", "?")) for e in ends})),
        "clients": sum(int(e.get("clients") or 0) for e in ends),
        "peak_up": sum(int(e.get("peak_up") or 0) for e in ends),  # each generator's peak, added
        "elapsed_s": max(float(e.get("elapsed_s") or 0.0) + e["late_s"] for e in ends),
        "cpu_s": sum(float(e.get("cpu_s") or 0.0) for e in ends),
        "generators": len(ends),
    }
    meta = {**(metas[0] if metas else {}), "clients": end["clients"], "generators": len(results)}
    return {
        "meta": meta,
        "phases": phases,
        "end": end,
        "intervals": intervals,
        "cluster": {
            "generators": len(results) + len(lost),
            "workers": workers,
            "lost": lost,
            "merge": MERGE_RULE,
            "clock": "start instant on the driver's wall clock, shifted by each worker's measured offset "
            "(best of 3 pings over Ray); a phase's start_skew_ms is the spread of its starts over the generators",
            "broker_cpu": f"sampled on the driver every {CPU_EVERY_S:g} s, cut at each phase's last end over "
            "the generators (interpolated)",
        },
    }
