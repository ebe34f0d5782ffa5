"""`secperf server --target HOST:PORT --cluster ADDRESS`: generators on every node of a Ray cluster
that reaches the user's server (app/cluster_generators.py does the clock alignment, the start instant, the
exact histogram merge and the lost-worker rule; this module places the generators and judges the
nodes).

Placement: one generator per CPU of every node (not only the driver's machine: the target is not on
loopback). Before the first level each generator's node is asked to reach the target (a TCP connect
bounded by the probe's time-out, from the node itself); a node that cannot is named with the reason
and left out (analysis.cluster.nodes_left_out), the others load. Cores: generators of nodes on the
same machine (same host name, e.g. nodes in network namespaces of one host) take distinct cores.

Each level's series carries the per-node figures next to the merged ones: handshakes and failures
per node (their sum is the level's count) and each node's latency percentiles from its own merged
histogram; the level's percentiles come from all generators' histograms merged bin by bin."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..core import result as R
from ..core.analysis_schema import FleetAnalysis
from ..core.errors import SetupError
from ..core.histogram import Histogram
from ..measure import server as S
from ..measure import server_target as T
from ..measure.server import find_loadgen
from ..measure.server_storm import storm_record
from .cluster import ClusterError, ClusterRunError, connect, ray_module
from .cluster_generators import (
    ACTOR_CONCURRENCY,
    Generators,
    LoadgenWorker,
    cluster_level,
    lost_failures,
    merge_storm,
    run_level,
)
from .cluster_load import check_options
from .reporter import reporter
from .runner import Phase, measure_and_write
from .server_plan import label_of, params_of, replay_compare

if TYPE_CHECKING:
    from ..core.result_schema import Result, Series
    from ..core.store import Run
    from ..measure.server import LoadParams
    from ..measure.server_target import LoadTarget
    from .cluster import Cluster
    from .runner import Output, Progress
    from .server_plan import FleetOptions, ServerOptions


def place_all(cl: Cluster, lt: LoadTarget, timeout_s: float, max_generators: int | None = None) -> Generators:
    """One actor per CPU of every node; the nodes that cannot reach the target left out, named."""
    ray = ray_module()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # reason: optional 'cluster' extra (Ray)

    slots = [n for n in cl.nodes for _ in range(n["cpus"])]
    if max_generators is not None:
        slots = slots[: max(1, max_generators)]
    Actor = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0, max_concurrency=ACTOR_CONCURRENCY)(LoadgenWorker)
    actors = [
        Actor.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["node_id"], soft=False)).remote(
            f"generator-{i}"
        )
        for i, n in enumerate(slots)
    ]
    g = Generators(cl, actors)
    try:
        places = ray.get([a.where.remote() for a in actors], timeout=120)
        # UDP (DTLS) has no connect to judge by: every node is kept and a failed handshake is a failure
        why = (
            ray.get([a.reach.remote(lt.addr, lt.port, timeout_s) for a in actors], timeout=timeout_s + 60)
            if lt.protocol == "tls"
            else [None] * len(actors)
        )
    except Exception as exc:  # noqa: BLE001 (Ray wraps whatever failed on a node)
        g.stop()
        raise ClusterRunError(f"cluster: the generators could not be placed: {exc}") from None
    keep = [i for i, w in enumerate(why) if w is None]
    left: dict[str, str] = {}
    for i, w in enumerate(why):
        if w is not None:
            left.setdefault(f"{places[i]['ip']} ({places[i]['node_id'][:8]})", w)
            ray.kill(actors[i], no_restart=True)
    g.left_out = [f"{n}: cannot reach the target ({w})" for n, w in left.items()]
    if not keep:
        raise ClusterError(f"--target {lt.name}: no node of the cluster reaches it ({'; '.join(g.left_out)})")
    g.actors = [actors[i] for i in keep]
    by_host: dict[str, int] = {}
    for i in keep:
        p = places[i]
        rank = by_host.get(p["host"], 0)
        by_host[p["host"]] = rank + 1
        p["core"] = p["cores"][rank % len(p["cores"])]
    g.places = [places[i] for i in keep]
    g.exe_hint = str(find_loadgen())
    return g


def per_node(workers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The level's figures per node: counts added over its generators, latency from their merged
    histograms (exact: the same bins)."""
    out: dict[str, dict[str, Any]] = {}
    hists: dict[str, list[Histogram]] = {}
    for w in workers:
        n = out.setdefault(w["node"], {"node": w["node"], "generators": 0, "handshakes": 0, "failed": 0})
        n["generators"] += 1
        n["handshakes"] += w["handshakes"]
        n["failed"] += w["failed"]
        hists.setdefault(w["node"], []).append(Histogram.from_pairs(w.get("hist_us", []), f"{w['name']} hist_us"))
    for node, n in out.items():
        h = Histogram.merged(hists[node])
        n["latency_ms"] = h.percentiles_ms()
        n["hist_us"] = h.to_pairs()
    return list(out.values())


def measure_levels(
    lt: LoadTarget, tls: str, resume_ratio: float, p: LoadParams, g: Generators, negotiated: dict[str, Any]
) -> list[Series]:
    out: list[Series] = []
    levels = [(None, r) for r in p.rates] if p.rates else [(c, None) for c in p.concurrency]
    for conc, rate in levels:
        s = T.new_series(lt, tls, resume_ratio, conc, p, rate)
        s.labels.update(
            cluster=g.cluster.address,
            generators=len(g.actors),
            generator_nodes=sorted({x["ip"] for x in g.places}),
            nodes_left_out=g.left_out,
        )
        try:
            argv = T.loadgen_argv(lt, tls, resume_ratio, conc or 1, p, rate)
            run = run_level(g, argv, None, p.warmup_s, p.duration_s, p.warmup_s + p.duration_s + 30)
            level = S.summarize_level(run)
        except (S.ServerMeasureError, ClusterRunError) as exc:
            R.add_failure(s, str(exc))
            out.append(R.finalize_series(s))
            continue
        level.update(cluster_level(run))
        level["cluster"]["nodes"] = per_node(level["cluster"]["workers"])
        T.fill_level(s, level, run, rate, negotiated)
        lost_failures(s, level)
        S.level_failures(s, level)
        out.append(R.finalize_series(s))
    return out


def run_server(o: ServerOptions, output: Output) -> Result:
    check_options(o)
    S.find_loadgen()
    negotiated = T.probe(o.target, o.tls)
    p = S.LoadParams(
        concurrency=o.concurrency,
        rates=o.rates,
        duration_s=o.duration_s,
        warmup_s=o.warmup_s,
        seed=o.seed,
        core=-1,
        loadgen_procs=1,
    )
    params = {**params_of(o), "cluster": o.cluster}
    assert o.cluster is not None  # server_target.run_server comes here with --cluster
    with connect(o.cluster, quiet=output.json) as cl:
        g = place_all(cl, o.target, T.PROBE_TIMEOUT_S)
        try:

            def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
                doc.analysis.target = {
                    **o.target.labels(),
                    "negotiated": negotiated,
                    "server_cpu": T.SERVER_CPU_NOT_MEASURED,
                }
                doc.analysis.cluster = {**cl.as_dict(), "generators": g.places, "nodes_left_out": g.left_out}
                if g.left_out:
                    reporter().note(f"note: --cluster: left out: {'; '.join(g.left_out)}")
                for i, r in enumerate(items):
                    progress("start", r, i, len(items), None)
                    doc.series += measure_levels(o.target, o.tls, r, p, g, negotiated)
                    run.save(doc)
                    progress("done", r, i, len(items), None)

            return measure_and_write(
                "server",
                params,
                [Phase(list(dict.fromkeys(o.resume_ratios)), lambda r: label_of(o, r), runner)],
                output,
            )
        finally:
            g.stop()


# --- secperf fleet --replay N --target HOST:PORT --cluster C -------------------------------------------
def replay_storm(
    lt: LoadTarget,
    g: Generators,
    clients: int,
    policy: str,
    base_s: float,
    cap_s: float,
    timeout_s: float,
    capacity_s: float,
    duration_s: float,
    seed: int,
    tls: str = "1.3",
) -> dict[str, Any]:
    """measure.server_target.replay_storm on the cluster's generators: the target's capacity at 32
    clients before and after, the storm's clients spread over every generator, one start instant."""

    p = S.LoadParams(concurrency=[32], duration_s=capacity_s, warmup_s=0.3, seed=seed, core=-1, loadgen_procs=1)
    cap = T.loadgen_argv(lt, tls, 0.0, 32, p)
    before = S.summarize_level(run_level(g, cap, None, 0.3, capacity_s, capacity_s + 30))
    time.sleep(1.0)
    argv = T.retarget(
        S.storm_argv(lt.port, clients, policy, base_s, cap_s, timeout_s, duration_s, tls=tls, app=lt.app, seed=seed), lt
    )
    run = run_level(g, argv, None, 0.0, 0.0, duration_s + 60)
    time.sleep(1.0)
    after = S.summarize_level(run_level(g, cap, None, 0.3, capacity_s, capacity_s + 30))
    return storm_record(
        f"target {lt.name}",
        "the target's own",
        (clients, policy, base_s, cap_s, timeout_s),
        before,
        after,
        merge_storm(run),
        None,
        None,
        server_cpu=T.SERVER_CPU_NOT_MEASURED,
        intervals=[m for m in run["lines"] if m.get("type") == "interval"],
        cluster={
            "workers": [{k: v for k, v in w.items() if k != "hist_us"} for w in run["cluster"]["workers"]],
            "lost": run["cluster"]["lost"],
            "nodes_left_out": g.left_out,
        },
    )


def run_replay(o: FleetOptions, params: dict[str, Any], output: Output, accept: dict[str, Any] | None = None) -> Result:
    """`fleet --replay N --target HOST:PORT --cluster C`: the storm from every node reaching the target.
    `accept`: the target's accept rate for the model (app/mqtt_target.target_accept), taken before."""

    lt = o.target
    params = {**params, "cluster": o.cluster}
    replay = o.replay
    assert o.cluster is not None and replay is not None  # server_target.run_replay comes here with both
    with connect(o.cluster, quiet=output.json) as cl:
        g = place_all(cl, lt, T.PROBE_TIMEOUT_S)
        try:

            def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
                replays: list[dict[str, Any]] = []
                doc.analysis.cluster = {**cl.as_dict(), "generators": g.places, "nodes_left_out": g.left_out}
                for i, pol in enumerate(items):
                    progress("start", pol, i, len(items), None)
                    try:
                        m = replay_storm(
                            lt,
                            g,
                            replay,
                            pol,
                            o.base_s,
                            o.cap_s,
                            o.timeout_s,
                            o.measure_s,
                            min(o.horizon_s, 600.0),
                            o.seed,
                        )
                        r = replay_compare(o, pol, {**m, "accept_rate": accept} if accept else m)
                        r["cluster"] = m["cluster"]
                        replays.append(r)
                    except (S.ServerMeasureError, SetupError, ClusterRunError) as exc:
                        replays.append({"clients": replay, "policy": pol, "failed": str(exc)})
                    doc.analysis.fleet = FleetAnalysis.model_validate(
                        {
                            "capacity_source": f"measured against --target {lt.name} just before "
                            f"and after each replay (mean): 32 clients over the "
                            f"cluster's generators",
                            "runs": [],
                            "replays": replays,
                        }
                    )
                    run.save(doc)
                    progress("done", pol, i, len(items), None)

            return measure_and_write(
                "fleet", params, [Phase(o.policies, lambda p: f"storm replay: {p} against {lt.name}", runner)], output
            )
        finally:
            g.stop()
