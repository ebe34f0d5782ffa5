"""Secperf's own servers loaded from a Ray cluster (`secperf server --cluster`, `secperf fleet --replay --cluster`).

The server starts here, pinned to its core, as on the local path; each load level, each capacity run
and each storm runs on the cluster's generators (app/cluster_generators.py: placement, clock
alignment, the merge of counts and histograms) and becomes the same series or replay row the local
path writes, plus what the cluster adds (workers, lost workers, the merge rule).

The servers secperf starts listen on loopback, so generators run on the cluster's nodes on the
server's machine only; nodes on other machines are left out and named (analysis.cluster), rather
than sent to a port they cannot reach.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import result as R
from ..core.analysis_schema import FleetAnalysis
from ..core.errors import InputError, MeasurementError, SetupError
from ..core.paths import private_dir
from ..lab.pki import LabPKI
from ..measure import server as S
from ..measure.server import process_cpu_s
from ..measure.server_start import pid_port
from ..measure.server_storm import idle_accept, storm_record
from .cluster import ClusterRunError, connect
from .cluster_generators import Generators, cluster_level, lost_failures, merge_storm, place, run_level
from .reporter import reporter
from .runner import Phase, measure_and_write
from .server_plan import plan, replay_compare

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..core.result_schema import Result, Series
    from ..core.store import Run
    from ..measure.server import LoadParams, ServerConfig
    from .runner import Output, Progress
    from .server_plan import FleetOptions, ServerOptions


def check_options(o: ServerOptions) -> None:
    """What --cluster cannot do with the server options given (exit 2)."""
    if getattr(o, "procs", None) not in (None, 1):
        raise InputError(
            f"--procs {o.procs} with --cluster: the cluster runs one generator process per worker CPU; drop --procs"
        )


# --- secperf server --cluster ------------------------------------------------------------------------
def measure_config(
    cfg: ServerConfig, p: LoadParams, pki: LabPKI, g: Generators, on_series: Callable[[Series], None] | None = None
) -> list[Series]:
    """measure.server.measure_config with the load levels on the cluster's generators: the same
    server set-up (started here, pinned to p.core), one series per level."""

    workdir = private_dir(
        (p.workdir or Path("/tmp")) / "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in cfg.series_id(0))
    )
    off: Any = None  # measure.server.Offload when the key is offloaded
    op = None
    out: list[Series] = []
    first_level = (None, p.rates[0]) if p.rates else (p.concurrency[0], None)
    try:
        if cfg.offload:
            off = S.Offload(*cfg.offloaded(), cfg.key_type, workdir, p.seed)
        op = S.private_op_us(cfg.key, p.op_n, p.seed)
    except (MeasurementError, SetupError, subprocess.TimeoutExpired, OSError) as exc:
        s = S._series(cfg, first_level[0], p, None, first_level[1])
        R.add_failure(s, f"set-up: {exc}")
        return [R.finalize_series(s)]
    client_pair = None
    if cfg.client_auth or cfg.server == "mosquitto":
        cs = pki.client("ecdsa-p256")
        client_pair = (cs.cert, cs.key)
    srv = None
    try:
        srv = S.start_server(cfg, pki, workdir, p.seed, off)
        pid, port = pid_port(srv)
        affinity = S.pin(pid, p.core)
        levels = [(None, r) for r in p.rates] if p.rates else [(c, None) for c in p.concurrency]
        for conc, rate in levels:
            s = S._series(cfg, conc, p, off, rate)
            s.labels.update(
                server_pid=pid,
                pinned_to=affinity,
                cluster=g.cluster.address,
                generators=len(g.actors),
                generator_nodes=sorted({x["ip"] for x in g.places}),
                nodes_left_out=g.left_out,
            )
            t0_ns = time.monotonic_ns()
            try:
                argv = S.loadgen_argv(port, cfg, conc or 1, p, client_pair, rate=rate)
                run = run_level(g, argv, pid, p.warmup_s, p.duration_s, p.warmup_s + p.duration_s + 30)
                level = S.summarize_level(run)
            except (S.ServerMeasureError, ClusterRunError) as exc:
                R.add_failure(s, str(exc))
                out.append(R.finalize_series(s))
                continue
            level.update(cluster_level(run))
            S.fill_level(s, level, run, op, off.calls(t0_ns) if off else None, off, rate)
            lost_failures(s, level)
            S.level_failures(s, level)
            out.append(R.finalize_series(s))
            if on_series:
                on_series(out[-1])
    except MeasurementError as exc:
        s = S._series(cfg, first_level[0], p, off, first_level[1])
        R.add_failure(s, str(exc))
        out.append(R.finalize_series(s))
    finally:
        if srv is not None:
            srv.stop()
    return out


def run_server(o: ServerOptions, output: Output, configs: list[ServerConfig] | None = None) -> Result:
    """`secperf server --cluster`: app/server.run's plan and Result, the levels on the cluster.
    `configs`: the plan app/server.run made (its key sources resolved), planned here when not given."""

    check_options(o)
    assert o.cluster is not None and o.core is not None  # server.run comes here with --cluster, the core set
    configs = configs if configs is not None else plan(o)
    S.find_loadgen()
    p = S.LoadParams(
        concurrency=o.concurrency,
        rates=o.rates,
        duration_s=o.duration_s,
        warmup_s=o.warmup_s,
        seed=o.seed,
        core=o.core,
        loadgen_procs=1,
    )
    params = {**o.params(), "cluster": o.cluster}
    with connect(o.cluster, quiet=output.json) as cl:
        g = place(cl, o.core)
        try:

            def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
                pki = LabPKI().ensure()
                if p.workdir is None and run is not None:
                    p.workdir = private_dir(run.dir / "server")
                doc.analysis.cluster = {**cl.as_dict(), "generators": g.places, "nodes_left_out": g.left_out}
                if g.left_out:
                    reporter().note(
                        f"note: --cluster: node(s) {', '.join(g.left_out)} run on other machines and "
                        f"cannot reach the server started here (loopback): no generator there"
                    )
                for i, cfg in enumerate(items):
                    progress("start", cfg, i, len(items), None)
                    doc.series += measure_config(cfg, p, pki, g)
                    run.save(doc)
                    progress("done", cfg, i, len(items), None)

            return measure_and_write("server", params, [Phase(configs, lambda c: c.label(), runner)], output)
        finally:
            g.stop()


def replay_storm(
    pki: LabPKI,
    g: Generators,
    clients: int,
    policy: str,
    base_s: float,
    cap_s: float,
    timeout_s: float,
    key: str,
    core: int,
    capacity_s: float,
    duration_s: float,
    workdir: Path,
    seed: int,
) -> dict[str, Any]:
    """measure.server.replay_storm with the capacity runs and the storm on the cluster's generators:
    nginx here (pinned to `core`), capacity at 32 clients before and after, the storm's clients
    spread over the generators, all starting at the same instant."""

    wd = private_dir(workdir / f"storm-{clients}")
    cfg = S.ServerConfig("nginx", key)
    srv = S.start_server(cfg, pki, wd, seed, backlog=max(512, clients + 64))
    try:
        pid, port = pid_port(srv)
        S.pin(pid, core)
        accept = idle_accept(port, "nginx")  # read here, beside nginx: the queue is this machine's
        p = S.LoadParams(concurrency=[32], duration_s=capacity_s, warmup_s=0.3, seed=seed, core=core, loadgen_procs=1)
        cap_argv = S.loadgen_argv(port, cfg, 32, p)
        before = S.summarize_level(run_level(g, cap_argv, pid, 0.3, capacity_s, capacity_s + 30))
        time.sleep(1.0)

        cpu0 = process_cpu_s(pid)
        argv = S.storm_argv(port, clients, policy, base_s, cap_s, timeout_s, duration_s, seed=seed)
        run = run_level(g, argv, None, 0.0, 0.0, duration_s + 60)
        cpu = process_cpu_s(pid) - cpu0
        time.sleep(1.0)
        after = S.summarize_level(run_level(g, cap_argv, pid, 0.3, capacity_s, capacity_s + 30))
    finally:
        srv.stop()
    end = merge_storm(run)
    return storm_record(
        "nginx",
        key,
        (clients, policy, base_s, cap_s, timeout_s),
        before,
        after,
        end,
        before["server_cpu_us_per_handshake"],
        cpu,
        intervals=[m for m in run["lines"] if m.get("type") == "interval"],
        cluster={
            "workers": [{k: v for k, v in w.items() if k != "hist_us"} for w in run["cluster"]["workers"]],
            "lost": run["cluster"]["lost"],
        },
        accept_rate=accept,
    )


def run_replay(o: FleetOptions, params: dict[str, Any], output: Output) -> Result:
    """`secperf fleet --replay N --cluster`: app/server._run_replay with the storm on the cluster."""

    params = {**params, "cluster": o.cluster}
    replay, key = o.replay, o.key
    assert o.cluster is not None and replay is not None and key is not None  # server._run_replay checked them
    with connect(o.cluster, quiet=output.json) as cl:
        g = place(cl, 0)
        try:

            def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
                pki = LabPKI().ensure()
                replays: list[dict[str, Any]] = []
                doc.analysis.cluster = {**cl.as_dict(), "generators": g.places, "nodes_left_out": g.left_out}
                for i, pol in enumerate(items):
                    progress("start", pol, i, len(items), None)
                    try:
                        m = replay_storm(
                            pki,
                            g,
                            replay,
                            pol,
                            o.base_s,
                            o.cap_s,
                            o.timeout_s,
                            key,
                            0,
                            o.measure_s,
                            min(o.horizon_s, 600.0),
                            run.dir / "replay",
                            o.seed,
                        )
                        r = replay_compare(o, pol, m)
                        r["cluster"] = m["cluster"]
                        replays.append(r)
                    except (S.ServerMeasureError, SetupError, ClusterRunError) as exc:
                        replays.append({"clients": replay, "policy": pol, "failed": str(exc)})
                    doc.analysis.fleet = FleetAnalysis.model_validate(
                        {
                            "capacity_source": "measured just before and after each replay "
                            "(mean): nginx, 32 clients over the cluster's "
                            "generators",
                            "runs": [],
                            "replays": replays,
                        }
                    )
                    run.save(doc)
                    progress("done", pol, i, len(items), None)

            return measure_and_write(
                "fleet", params, [Phase(o.policies, lambda p: f"storm replay: {p}", runner)], output
            )
        finally:
            g.stop()
