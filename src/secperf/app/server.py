"""`secperf server` and `secperf fleet`: server capacity and CPU per handshake into a Result of kind
`server`, and reconnect storms over a measured (or given) capacity (analysis `fleet`)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.analysis_schema import FleetAnalysis
from ..core.errors import InputError, SetupError
from ..core.result import reading
from ..core.result_schema import ServerDerived
from ..lab.pki import LabPKI
from ..measure import server as S
from ..model.fleet import FleetModel, capacity_from_result, server_keys, simulate
from . import bounds
from .cluster_load import run_replay, run_server
from .reading import read_result
from .reporter import reporter
from .runner import Output, Phase, measure_and_write
from .server_plan import FleetOptions as FleetOptions  # handed on: callers name them as server.X
from .server_plan import ServerOptions as ServerOptions
from .server_plan import dtls_matrix_plan as dtls_matrix_plan
from .server_plan import matrix_plan as matrix_plan
from .server_plan import plan as plan
from .server_plan import replay_compare as replay_compare
from .server_target import run_replay as replay_target
from .server_target import run_server as run_target

if TYPE_CHECKING:
    from ..core.result_schema import Result
    from ..core.store import Run
    from ..measure.server_config import ServerConfig
    from .runner import Progress


def estimate(o: ServerOptions, configs: list[ServerConfig] | None = None) -> dict[str, float]:
    """The run's length (app/bounds.py): each configuration's server started, then its load levels'
    warm-up and counted seconds; refused over --max-hours before any server starts. `configs`: the
    run's plan(o), made once by the caller (planned here when not given)."""

    rows = 1 if o.target is not None else len(configs if configs is not None else plan(o))
    levels = len(o.rates) or len(o.concurrency) or 1
    return bounds.check_estimate(
        "server",
        bounds.server_levels_s(rows, levels, o.duration_s, o.warmup_s),
        f"{rows} configurations x {levels} load levels x (--warmup {o.warmup_s:g} s + --duration {o.duration_s:g} s)",
        "lower --duration, the levels (--concurrency, --rates) or the configurations",
        o.max_hours,
    )


def run(o: ServerOptions, output: Output) -> Result:
    configs = None if o.target is not None else plan(o)  # once: its key sources' profiles resolved
    limit = estimate(o, configs)
    if o.target is not None or configs is None:
        return run_target(o, output)
    if o.core is None:
        o = replace(o, core=0)
    if o.cluster:
        return run_server(o, output, configs)
    usable = sorted(os.sched_getaffinity(0))
    if o.core not in usable:  # said before a run directory exists, not when the server is pinned
        raise InputError(f"--core {o.core}: secperf may use cores {', '.join(map(str, usable))} here; name one")
    S.find_loadgen()
    p = S.LoadParams(
        concurrency=o.concurrency,
        rates=o.rates,
        duration_s=o.duration_s,
        warmup_s=o.warmup_s,
        seed=o.seed,
        core=o.core,
        loadgen_procs=o.procs,
    )
    params = {**o.params(), "loadgen_procs": S.generator_procs(p), "loadgen_cores": S.generator_cores(o.core), **limit}

    def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
        S.run_server(items, p, doc, run, progress)

    return measure_and_write("server", params, [Phase(configs, lambda c: c.label(), runner)], output)


MAX_REPLAY = 5000
DEFAULT_FLEET_KEY = "rsa-2048"  # the key measured when --key is not given (the most common TLS server key)


def _fleet_runs(
    o: FleetOptions, full: float, resumed: float, source: str, key: str | None = None, warning: str | None = None
) -> dict[str, Any]:
    runs = []
    for n in o.devices:
        for pol in o.policies:
            m = FleetModel(
                devices=n,
                capacity_full_per_s=full,
                capacity_resumed_per_s=resumed,
                resumed_share=o.resumed_share,
                policy=pol,
                base_s=o.base_s,
                cap_s=o.cap_s,
                timeout_s=o.timeout_s,
                backlog=o.backlog,
                spread_s=o.spread_s,
                device_handshake_s=o.device_handshake_s,
                horizon_s=o.horizon_s,
                abandoned_work=o.abandoned_work,
            )
            m.check()
            r = simulate(m)
            if key is not None:
                r["key"] = key
            if warning:
                r["capacity_warning"] = warning
            runs.append(r)
    out: dict[str, Any] = {"capacity_source": source, "runs": runs}
    if warning:
        out["warnings"] = [warning]
    return out


def _merge_fleets(parts: list[tuple[str, dict[str, Any]]]) -> FleetAnalysis:
    """One fleet analysis of several server keys: their runs one after another (each with its key), the
    sources and warnings per key."""
    if len(parts) == 1:
        return FleetAnalysis.model_validate(parts[0][1])
    return FleetAnalysis.model_validate(
        {
            "capacity_source": "; ".join(f"{k}: {f['capacity_source']}" for k, f in parts),
            "runs": [r for _, f in parts for r in f["runs"]],
            **({"warnings": w} if (w := [x for _, f in parts for x in f.get("warnings", [])]) else {}),
        }
    )


def fleet_keys(key: str | None) -> list[str] | None:
    """--key of fleet as a list (a comma list: one row per key), repeats dropped; None when not given."""
    if key is None:
        return None
    keys = list(dict.fromkeys(k.strip() for k in key.split(",") if k.strip()))
    if not keys:
        raise InputError(f"--key {key!r}: name a server key (rsa-2048, ecdsa-p256, ...), or a comma list of them")
    return keys


def _limited_warning(d: ServerDerived | None, what: str) -> str | None:
    """The warning a capacity row carries when something other than the server limited its rate."""
    if d is None or d.limited_by not in ("load generator", "other work on this machine"):
        return None
    return (
        d.warning or f"{d.limited_by} limited the rate, not the server"
    ) + f" ({what}: a lower bound of the server's capacity)"


def run_fleet(o: FleetOptions, output: Output) -> Result:

    # the model's inputs are checked before anything is measured
    for n in o.devices:
        for pol in o.policies:
            FleetModel(
                devices=n,
                policy=pol,
                base_s=o.base_s,
                cap_s=o.cap_s,
                timeout_s=o.timeout_s,
                resumed_share=o.resumed_share,
                horizon_s=o.horizon_s,
            ).check()
    if o.capacity is not None and o.from_result:
        raise InputError(
            f"--capacity {o.capacity:g} and --from {o.from_result}: both give the server's capacity; give one"
        )
    if o.capacity is not None and o.key is not None:
        raise InputError(
            f"--key {o.key}: picks the server key whose capacity is measured or taken from --from; "
            f"--capacity {o.capacity:g} gives the capacity itself, so the key would change nothing: "
            f"drop --key"
        )
    if o.target is not None and o.replay is None:
        raise InputError(
            f"--target {o.target.name} with fleet: the storm against your own server is a --replay; "
            f"add --replay N (or give its capacity with --capacity)"
        )
    if not o.from_result and o.key is None and o.target is None:
        o = replace(o, key=DEFAULT_FLEET_KEY)
    params = {k: v for k, v in o.__dict__.items() if k != "target"}
    params.update(_fleet_estimate(o))
    if o.replay is not None and len(fleet_keys(o.key) or []) > 1:
        raise InputError(f"--key {o.key} with --replay: a replayed storm runs against one server key; give one")
    if o.replay is not None:
        return _run_replay(o, params, output)
    keys = fleet_keys(o.key)
    if o.capacity is not None or o.from_result:
        given = [_given_capacity(o, k) for k in (keys if keys else [None])]  # every key checked before the model runs

        def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
            progress("start", "model", 0, 1, None)
            doc.analysis.fleet = _merge_fleets(
                [
                    (k or "", _fleet_runs(o, full, resumed, source, k if len(given) > 1 else None, warn))
                    for k, full, resumed, source, warn in given
                ]
            )
            for _, _, _, _, warn in given:
                if warn:
                    reporter().note(f"secperf fleet: warning: {warn}")
            run.save(doc)
            progress("done", "model", 0, 1, None)

        return measure_and_write("fleet", params, [Phase(["model"], lambda _: "reconnect storm model", runner)], output)

    keys = keys or [DEFAULT_FLEET_KEY]
    cfgs = [S.ServerConfig(o.server, k, resume_ratio=r) for k in keys for r in (0.0, 1.0)]
    for c in cfgs:
        S.validate(c)
    p = S.LoadParams(concurrency=[8, 32], duration_s=o.measure_s, warmup_s=0.5, seed=o.seed)

    def measure_runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
        S.run_server(items, p, doc, run, progress)

        parts = []
        for key in keys:
            rows = [
                (s.labels["resume_ratio"], s.derived_as(ServerDerived))
                for s in doc.series
                if s.kind == "server" and s.labels.get("key") == key
            ]
            caps = [max([d.handshakes_per_s or 0 for ratio, d in rows if ratio == r] or [0]) for r in (0.0, 1.0)]
            if not caps[0]:
                raise InputError(
                    f"fleet: the capacity of {o.server} with {key} could not be measured "
                    "(see the failed series); give --capacity instead"
                )
            src = f"measured here: {o.server} {key}, 8 and 32 clients, {o.measure_s:g} s per level (secperf-loadgen)"
            full = [d for ratio, d in rows if ratio == 0.0 and d.handshakes_per_s]
            best = max(full, key=lambda d: d.handshakes_per_s or 0) if full else None
            warn = _limited_warning(best, f"{o.server} {key}")
            if warn and best is not None:  # a warning comes from a best row
                # the model then runs on a lower bound of the server's capacity: said where the capacity is named
                src += f"; a lower bound: {best.limited_by} limited the rate, not the server"
            parts.append((key, _fleet_runs(o, caps[0], caps[1] or caps[0], src, key if len(keys) > 1 else None, warn)))
        doc.analysis.fleet = _merge_fleets(parts)
        run.save(doc)

    return measure_and_write("fleet", params, [Phase(cfgs, lambda c: f"capacity: {c.label()}", measure_runner)], output)


def _fleet_estimate(o: FleetOptions) -> dict[str, float]:
    """The run's length (app/bounds.py): a replay's capacity runs and storm per policy (the storm: its spread,
    the clients at 200/s, two back-off caps and a timeout, at most the horizon or 600 s), or the capacity
    measured with two load levels per key and resumption ratio; the model itself costs seconds."""

    if o.replay is not None:
        storm = min(o.horizon_s, 600.0, o.spread_s + o.replay / 200 + 2 * o.cap_s + o.timeout_s)
        est = len(o.policies) * (bounds.SERVER_START_S + 2 * o.measure_s + storm)
        detail = (
            f"{len(o.policies)} policies x (2 capacity runs of --measure-seconds {o.measure_s:g} + a storm of "
            f"about {storm:.0f} s)"
        )
    elif o.capacity is None and not o.from_result:
        keys = len(fleet_keys(o.key) or [DEFAULT_FLEET_KEY])
        est = bounds.server_levels_s(2 * keys, 2, o.measure_s, 0.5)
        detail = f"{keys} keys x 2 resumption ratios x 2 load levels of --measure-seconds {o.measure_s:g}"
    else:
        est, detail = 5.0, "the model alone"
    return bounds.check_estimate(
        "fleet", est, detail, "lower --replay, --cap, --measure-seconds or the policies", o.max_hours
    )


def _given_capacity(o: FleetOptions, key: str | None) -> tuple[str | None, float, float, str, str | None]:
    """(key, full and resumed handshakes/s, their source, the warning the server run gave the rate)."""
    if o.capacity is not None:
        if o.capacity <= 0:
            raise InputError(f"--capacity {o.capacity}: handshakes per second must be > 0")
        return None, o.capacity, o.resumed_capacity or o.capacity, "given (--capacity)", None

    assert o.from_result is not None  # run_fleet calls this with --capacity or --from

    doc = read_result(Path(o.from_result), "--from", o.allow_partial)
    with reading(f"--from {o.from_result}", "the server rows (series labels and derived rates)"):
        keys = server_keys(doc)
        # a capacity belongs to one server key: never another key's rows in place of the one asked for
        if key is None and len(keys) > 1:
            raise InputError(
                f"--from {o.from_result}: holds the capacity of several server keys ({', '.join(keys)}); "
                f"name the one to use with --key"
            )
        if key is None and keys:
            key = keys[0]
            reporter().note(
                f"note: --from {o.from_result}: the capacity of its only server key, {key} (--key to name it)"
            )
        elif key is not None and keys and key not in keys:
            raise InputError(
                f"--key {key}: --from {o.from_result} holds no capacity for it; it holds "
                f"{', '.join(keys)}: give one of those with --key, or measure {key} "
                f"(`secperf server --key {key}`, or fleet without --from)"
            )
        caps = capacity_from_result(doc, key)
        warn = _limited_warning(_best_full_row(doc, key), f"--from {o.from_result}, {key}")
    full = [v for k, v in caps.items() if k.endswith("/0.0")]
    res = [v for k, v in caps.items() if k.endswith("/1.0")]
    if not full:
        raise InputError(
            f"--from {o.from_result}: no `secperf server` rows with full handshakes "
            f"(resume ratio 0){f' for --key {key}' if key else ''} in it"
        )
    source = f"from {o.from_result} ({key})" + (
        "; a lower bound: the server run says something else limited the rate" if warn else ""
    )
    return key, max(full), max(res) if res else max(full), source, warn


def _best_full_row(doc: Result, key: str | None) -> ServerDerived | None:
    """The derived numbers of the full-handshake row whose rate is the capacity taken (the highest)."""

    rows = [
        s.derived_as(ServerDerived)
        for s in doc.series
        if s.kind == "server"
        and (key is None or s.labels.get("key") == key)
        and float(s.labels.get("resume_ratio", 0.0)) == 0.0
    ]
    rows = [d for d in rows if d.handshakes_per_s]
    return max(rows, key=lambda d: d.handshakes_per_s or 0) if rows else None


def _run_replay(o: FleetOptions, params: dict[str, Any], output: Output) -> Result:
    replay, key = o.replay, o.key
    if replay is None or not 10 <= replay <= MAX_REPLAY:
        raise InputError(f"--replay {o.replay}: give 10..{MAX_REPLAY} clients (one process, one socket each)")
    if o.target is not None:
        if o.spread_s or o.resumed_share or o.device_handshake_s:
            raise InputError(
                "--replay replays a storm of full handshakes all starting at once: leave --spread, "
                "--resumed-share and --device-handshake at 0"
            )
        if o.key is not None:
            raise InputError(f"--key {o.key} with --target: the target has its own key; drop --key")
        return replay_target(o, params, output)
    if o.server != "nginx":
        raise InputError(f"--replay runs against nginx (--server {o.server} given)")
    if o.spread_s or o.resumed_share or o.device_handshake_s:
        raise InputError(
            "--replay replays a storm of full handshakes all starting at once: leave --spread, "
            "--resumed-share and --device-handshake at 0"
        )
    if key is None:  # run_fleet picks the default key unless --from gave the capacity ("--key None" was said)
        raise InputError(
            f"--from {o.from_result} with --replay: the replay measures nginx's capacity itself, just "
            f"before and after the storm; drop --from (the server key is --key, default "
            f"{DEFAULT_FLEET_KEY})"
        )
    S.validate(S.ServerConfig("nginx", key))
    S.find_loadgen()
    if o.cluster:
        return run_replay(o, params, output)

    def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
        pki = LabPKI().ensure()
        replays = []
        for i, pol in enumerate(items):
            progress("start", pol, i, len(items), None)
            try:
                m = S.replay_storm(
                    pki,
                    replay,
                    pol,
                    o.base_s,
                    o.cap_s,
                    o.timeout_s,
                    key=key,
                    capacity_s=o.measure_s,
                    duration_s=min(o.horizon_s, 600.0),
                    workdir=run.dir / "replay",
                    seed=o.seed,
                )
                replays.append(replay_compare(o, pol, m))
            except (S.ServerMeasureError, SetupError) as exc:
                replays.append({"clients": replay, "policy": pol, "failed": str(exc)})
            doc.analysis.fleet = FleetAnalysis.model_validate(
                {
                    "capacity_source": "measured just before and after each replay (mean): nginx, 32 clients",
                    "runs": [],
                    "replays": replays,
                }
            )
            run.save(doc)
            progress("done", pol, i, len(items), None)

    return measure_and_write("fleet", params, [Phase(o.policies, lambda p: f"storm replay: {p}", runner)], output)
