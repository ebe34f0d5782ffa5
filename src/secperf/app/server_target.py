"""`secperf server --target HOST:PORT` and `secperf fleet --replay N --target HOST:PORT`: the load
generators aimed at the user's own server instead of one secperf starts.

The target is probed once before a run directory exists (reachable within a bounded connect, speaks
TLS or DTLS, takes the client certificate, verifies with --ca): bad input is exit 2 naming it.
Each level records what the server negotiated; the server's CPU is not measured (it is not on this
machine, or not secperf's to read), and every row says so. With --cluster the generators run on
every node that reaches the target (app/cluster_target.py)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..core.analysis_schema import FleetAnalysis
from ..core.errors import InputError, SetupError
from ..measure import server as S
from ..measure import server_target as T
from .cluster_target import run_replay as cluster_replay
from .cluster_target import run_server as cluster_run
from .mqtt_target import target_accept
from .runner import Output, Phase, measure_and_write
from .server_plan import check_levels, params_of, replay_compare

if TYPE_CHECKING:
    from ..core.result_schema import Result
    from ..core.store import Run
    from .runner import Progress
    from .server_plan import FleetOptions, ServerOptions

# ServerOptions fields that describe a server secperf starts: with --target they would change nothing
LOCAL_ONLY = {
    "servers": ["nginx"],
    "keys": ["rsa-2048"],
    "sources": ["software"],
    "client_auth": [False],
    "depths": [1],
    "matrix": False,
}
OPTION_OF = {
    "servers": "--server",
    "keys": "--key",
    "sources": "--key-source",
    "client_auth": "--client-auth",
    "depths": "--chain-depth",
    "matrix": "--matrix",
}


def check(o: ServerOptions) -> None:
    """What --target cannot take (exit 2, naming the option)."""
    for k, default in LOCAL_ONLY.items():
        v = getattr(o, k)
        if v != default and not (k == "servers" and v == ["coap-server"] and o.protocol == "dtls"):
            why = (
                "the target presents its client-certificate request itself: give --client-cert and --client-key"
                if k == "client_auth"
                else "it describes a server secperf starts; the target has its own"
            )
            raise InputError(f"{OPTION_OF[k]} with --target: {why}; drop {OPTION_OF[k]}")
    check_levels(o)
    if o.rates and any(not 1 <= r <= 1e6 for r in o.rates):
        raise InputError(f"--rates {o.rates}: give offered rates of 1..1,000,000 connections/s")
    for r in o.resume_ratios:
        if not 0 <= r <= 1:
            raise InputError(f"--resume-ratio {r}: give a share between 0 and 1")
        if r and o.target.protocol == "dtls":
            raise InputError(f"--resume-ratio {r:g} with --protocol dtls: the DTLS load makes full handshakes only")
    if o.core is not None and o.core not in os.sched_getaffinity(0):
        raise InputError(f"--core {o.core}: secperf may use cores {sorted(os.sched_getaffinity(0))}; name one")


def generator_cores(o: ServerOptions) -> list[int]:
    """Every core here, but --core when given (a target on this machine pinned there)."""
    usable = sorted(os.sched_getaffinity(0))
    return [c for c in usable if c != o.core] or usable if o.core is not None else usable


def run_server(o: ServerOptions, output: Output) -> Result:
    check(o)
    if o.cluster:
        return cluster_run(o, output)
    S.find_loadgen()
    negotiated = T.probe(o.target, o.tls)  # exit 2 before a run directory when the target is unusable
    cores = generator_cores(o)
    p = S.LoadParams(
        concurrency=o.concurrency,
        rates=o.rates,
        duration_s=o.duration_s,
        warmup_s=o.warmup_s,
        seed=o.seed,
        core=-1,
        loadgen_procs=o.procs or len(cores),
    )
    params = {**params_of(o), "loadgen_procs": p.loadgen_procs, "loadgen_cores": cores}

    def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
        doc.analysis.target = {**o.target.labels(), "negotiated": negotiated, "server_cpu": T.SERVER_CPU_NOT_MEASURED}
        for i, r in enumerate(items):
            progress("start", r, i, len(items), None)
            doc.series += T.measure_target(o.target, o.tls, r, p, negotiated, cores)
            run.save(doc)
            progress("done", r, i, len(items), None)

    return measure_and_write(
        "server", params, [Phase(list(dict.fromkeys(o.resume_ratios)), lambda r: T.label(o.target, r), runner)], output
    )


def run_replay(o: FleetOptions, params: dict[str, Any], output: Output) -> Result:
    """`fleet --replay N --target`: the storm against the user's server, the model beside it at the
    capacity measured against the same target just before and after."""

    S.find_loadgen()
    replay = o.replay
    assert replay is not None  # server._run_replay checked it (10..MAX_REPLAY)
    lt = o.target
    if lt.protocol != "tls":
        raise InputError("--replay --target: the storm replays TLS connections; the target must be TLS")
    T.probe(lt, "1.3")
    accept = target_accept(lt, o.target_accept_per_s, o.target_backlog)  # the model's accept rate
    params = {**params, "target": lt.labels()}
    if o.cluster:
        return cluster_replay(o, params, output, accept)

    def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
        replays = []
        for i, pol in enumerate(items):
            progress("start", pol, i, len(items), None)
            try:
                m = T.replay_storm(
                    lt,
                    replay,
                    pol,
                    o.base_s,
                    o.cap_s,
                    o.timeout_s,
                    capacity_s=o.measure_s,
                    duration_s=min(o.horizon_s, 600.0),
                    seed=o.seed,
                )
                replays.append(replay_compare(o, pol, {**m, "accept_rate": accept}))
            except (S.ServerMeasureError, SetupError) as exc:
                replays.append({"clients": replay, "policy": pol, "failed": str(exc)})
            doc.analysis.fleet = FleetAnalysis.model_validate(
                {
                    "capacity_source": f"measured against --target {lt.name} just before and after "
                    f"each replay (mean): 32 clients",
                    "runs": [],
                    "replays": replays,
                }
            )
            run.save(doc)
            progress("done", pol, i, len(items), None)

    return measure_and_write(
        "fleet", params, [Phase(o.policies, lambda p: f"storm replay: {p} against {lt.name}", runner)], output
    )
