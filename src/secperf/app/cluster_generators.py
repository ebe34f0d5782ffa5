"""The load generators on a Ray cluster: placed, clock-aligned, run one level at a time, merged.

One `secperf-loadgen` per worker CPU: a Ray actor holding one CPU starts it, pinned to one core of
its node (never the server's core on the server's node), and returns its JSON lines. The driver
splits the level's load over the generators (concurrency, rate or storm clients, as the generator
splits over its own processes), aligns their clocks and merges what they report:

- Clock: before a level the driver pings each actor over Ray (3 pings, the shortest kept) and takes
  offset = worker wall clock - the midpoint of the driver's send and receive. Every generator gets
  the same start instant on the driver's clock (converted with its offset), so their warm-up and
  counting windows line up; each worker's offset, ping and how late it really started are kept.
- Counts add up: the end lines of every generator are summed (measure.server.summarize_level);
  the latencies merge as histograms, bin by bin (core/histogram.py), never as averaged percentiles.
- The server's CPU is read by the driver at the window's start, every interval and its end, on the
  server's node, as the local path does.
- A worker lost mid-run (its actor or node dead) is named in the series (derived.cluster.lost) and
  the series marked partial; the others still merge.
- Nothing outlives the run: each generator is spawned through the run registry of the actor's
  process (parent-death signal and a watchdog on that node, lab/registry.py), so it dies with the
  actor; Ray ends the actors with the run, or with the driver however it died.

What runs the levels (secperf's own servers: app/cluster_load.py; a --target: app/cluster_target.py)
sits above this module.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core import result as R
from ..core.histogram import SCHEME, Histogram
from ..core.jsonlines import parse_line
from ..core.wait import wait_until
from ..lab import registry
from ..lab.services import stop_process
from ..measure.mqtt_load import find_mqttload
from ..measure.server import find_loadgen, process_cpu_s
from ..measure.server_config import ServerMeasureError
from ..measure.storm_capacity import cores_busy_s
from ..measure.tcp_counters import tcp_counters
from .cluster import Cluster, ClusterError, ClusterRunError, ray_module

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..core.result_schema import Series


LEAD_S = 1.5  # the start instant lies this far ahead of the last ping (each worker's spawn fits in it)


PINGS = 3


class LoadgenWorker:
    """The actor's body (made a Ray actor with one CPU in `place`): starts one generator at a time."""

    def __init__(self, name: str):
        self.name = name
        self._proc: subprocess.Popen[str] | None = None  # a --storm-sync generator waiting for its instant
        self._ready = False
        self._stamps: list[dict[str, Any]] = []

    def where(self) -> dict[str, Any]:
        registry.current()  # this worker's registry and watchdog, before the first generator
        ray = ray_module()
        return {
            "name": self.name,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "node_id": ray.get_runtime_context().get_node_id(),
            "ip": ray.util.get_node_ip_address(),
            "cores": sorted(os.sched_getaffinity(0)),
            "main_thread": threading.current_thread() is threading.main_thread(),
        }

    def now(self) -> float:
        return time.time()

    def storm_ready(self) -> bool:
        """Has the running generator written its storm_ready line (--storm-sync)?"""
        return self._ready

    def storm_at(self, ns: int) -> bool:
        """Hands the running generator its storm instant (CLOCK_REALTIME ns on this node's clock)."""
        p = self._proc
        if p is None or p.poll() is not None or p.stdin is None:
            return False
        try:
            p.stdin.write(f"storm-at {int(ns)}\n")
            p.stdin.flush()
            return True
        except (OSError, ValueError):
            return False

    def reach(self, addr: str, port: int, timeout_s: float) -> str | None:
        """Can this node reach a target (a TCP connect bounded by timeout_s)? None, or why not."""

        try:
            with socket.create_connection((addr, port), timeout=timeout_s):
                return None
        except TimeoutError:
            return f"no TCP answer from {addr}:{port} within {timeout_s:g} s"
        except OSError as exc:
            return f"{addr}:{port}: {exc.strerror or exc}"

    def run(
        self,
        argv: list[str],
        start_wall_s: float,
        core: int,
        timeout_s: float,
        exe_hint: str | None,
        tool: str = "loadgen",
    ) -> dict[str, Any]:
        """Wait for the start instant, run the generator pinned to `core`, return its lines. `tool`:
        loadgen (secperf-loadgen) or mqttload (secperf-mqttload), found on this node when the
        driver's path (exe_hint) is not there."""

        find = find_mqttload if tool == "mqttload" else find_loadgen
        exe = exe_hint if exe_hint and os.path.isfile(exe_hint) and os.access(exe_hint, os.X_OK) else str(find())
        delay = start_wall_s - time.time()
        if delay > 0:
            time.sleep(delay)
        started = time.time()

        def pin_and_unnice() -> None:
            os.sched_setaffinity(0, {core})
            try:  # Ray runs its workers at nice 15; a generator at that priority loses its core to anything
                os.setpriority(os.PRIO_PROCESS, 0, 0)
            except OSError:
                pass  # not allowed to raise the priority (no CAP_SYS_NICE): the Result shows the niceness

        synced = tool == "mqttload" and "--storm-sync" in argv
        self._ready = False
        # secperf-mqttload: this node's cores' busy time and TCP counters at its start and at each phase
        # line (app/cluster_bounds.py turns them into the storm's capacity bounds per node)
        self._stamps = [_node_stamp()] if tool == "mqttload" else []
        proc = registry.spawn(
            [exe, *argv[1:]],
            f"secperf-{tool} ({self.name})",
            stdin=subprocess.PIPE if synced else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=pin_and_unnice,
        )
        try:
            nice = os.getpriority(os.PRIO_PROCESS, proc.pid)
        except OSError:
            nice = None
        try:
            out, err = self._relay(proc, timeout_s) if tool == "mqttload" else proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            stop_process(proc)
            out, err = "", f"did not finish within {timeout_s:.0f} s"
        finally:
            self._proc = None
        registry.forget(proc)
        lines = [m for m in map(parse_line, out.splitlines()) if m]
        return {
            "lines": lines,
            "stderr": err.strip(),
            "returncode": proc.returncode,
            "pid": proc.pid,
            "started_wall_s": started,
            "late_s": started - start_wall_s,
            "core": core,
            "nice": nice,
            **({"phase_stamps": self._stamps} if tool == "mqttload" else {}),
        }

    def _relay(self, proc: subprocess.Popen[str], timeout_s: float) -> tuple[str, str]:
        """A --storm-sync generator's output read as it comes (its storm_ready line noted for the
        driver, which hands the instant through storm_at, a call this threaded actor takes meanwhile)."""
        self._proc = proc
        out: list[str] = []
        err: list[str] = []

        def read_out() -> None:
            assert proc.stdout is not None
            for raw in proc.stdout:
                out.append(raw)
                if '"storm_ready"' in raw:
                    self._ready = True
                elif '"phase"' in raw and (parse_line(raw) or {}).get("type") == "phase":
                    self._stamps.append(_node_stamp())

        def read_err() -> None:
            assert proc.stderr is not None
            err.append(proc.stderr.read())

        threads = [threading.Thread(target=f, daemon=True) for f in (read_out, read_err)]
        for t in threads:
            t.start()
        proc.wait(timeout=timeout_s)
        for t in threads:
            t.join(10)
        return "".join(out), "".join(err)


def _node_stamp() -> dict[str, Any]:
    """This node's cores' busy seconds (/proc/stat) and TCP counters now, on its wall clock."""
    return {"wall_s": time.time(), "cores_busy_s": cores_busy_s(), "tcp_counters": tcp_counters()}


ACTOR_CONCURRENCY = 4  # threaded actors: storm_ready / storm_at are answered while run() waits


@dataclass
class Generators:
    """The placed actors, their places, cores and clock offsets."""

    cluster: Cluster
    actors: list[Any] = field(default_factory=list)  # Ray actor handles (LoadgenWorker)
    places: list[dict[str, Any]] = field(default_factory=list)  # where() of each actor, plus "core"
    exe_hint: str | None = None
    left_out: list[str] = field(default_factory=list)  # nodes on other machines (cannot reach a loopback server)

    def names(self) -> list[str]:
        return [p["name"] for p in self.places]

    def stop(self) -> None:
        ray = ray_module()
        for a in self.actors:
            try:
                ray.kill(a, no_restart=True)
            except Exception:  # noqa: BLE001 (already gone)
                pass
        self.actors = []


def place(
    cl: Cluster,
    server_core: int | None,
    max_generators: int | None = None,
    on_placed: Callable[[Generators], object] | None = None,
) -> Generators:
    """One actor per CPU of the cluster's nodes on the server's machine (at most max_generators),
    each with a core of its machine. The server secperf starts listens on loopback, so nodes on
    other machines cannot reach it: they are left out, named in Generators.left_out; a cluster with
    no node on this machine is an input error."""
    ray = ray_module()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # reason: optional 'cluster' extra (Ray)

    here = ray.util.get_node_ip_address()  # the server's machine (several Ray nodes may share it)
    local = [n for n in cl.nodes if n["ip"] == here]
    if not local:
        raise ClusterError(
            f"--cluster {cl.address}: no node of the cluster runs on this machine ({here}), and the "
            f"server secperf starts here listens on loopback; run secperf on a cluster node, or use "
            f"the cluster for sweeps (docs/how-to/cluster.md)"
        )
    slots = [n for n in local for _ in range(n["cpus"])]
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
    g.left_out = [n["name"] for n in cl.nodes if n["ip"] != here]
    try:
        places = ray.get([a.where.remote() for a in actors], timeout=120)
    except Exception as exc:  # noqa: BLE001
        g.stop()
        raise ClusterRunError(f"cluster: the generators could not be placed: {exc}") from None
    by_machine: dict[str, int] = {}
    for p in places:
        cores = [c for c in p["cores"] if c != server_core] or p["cores"]
        rank = by_machine.get(p["ip"], 0)
        by_machine[p["ip"]] = rank + 1
        p["core"] = cores[rank % len(cores)]
    g.places = places
    g.exe_hint = str(find_loadgen())
    if on_placed:
        on_placed(g)
    return g


def clock_offsets(g: Generators) -> list[dict[str, float]]:
    """Per actor: offset (worker wall clock - driver's) and the round trip of the best of PINGS pings."""
    ray = ray_module()
    out: list[dict[str, float]] = []
    for a in g.actors:
        best: tuple[float, float] | None = None
        for _ in range(PINGS):
            t0 = time.time()
            w = ray.get(a.now.remote(), timeout=60)
            t1 = time.time()
            if best is None or t1 - t0 < best[1]:
                best = (w - (t0 + t1) / 2, t1 - t0)
        assert best is not None  # PINGS >= 1
        out.append({"offset_s": best[0], "ping_s": best[1]})
    return out


def shares(total: int, parts: int) -> list[int]:
    """`total` split over `parts` as the generator splits over its processes (the first get one more)."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _with(argv: list[str], opt: str, value: str) -> list[str]:
    a = list(argv)
    if opt in a:
        a[a.index(opt) + 1] = value
    else:
        a += [opt, value]
    return a


def worker_argvs(argv: list[str], n: int) -> list[list[str]]:
    """The generator's command line cut over n generators: --concurrency, --rate or --storm shared
    out, one process each, distinct seeds. Generators whose share would be empty are left out."""
    seed = int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 1
    total: float  # an int for --storm and --concurrency
    kind: type[float]  # int or float: the option's own type
    if "--storm" in argv:
        key, total, kind = "--storm", int(argv[argv.index("--storm") + 1]), int
    elif "--rate" in argv:
        key, total, kind = "--rate", float(argv[argv.index("--rate") + 1]), float
    else:
        key, total, kind = "--concurrency", int(argv[argv.index("--concurrency") + 1]), int
    parts = [total / n] * n if kind is float else shares(int(total), n)
    out: list[list[str]] = []
    for i, part in enumerate(parts):
        if not part:
            continue
        a = _with(argv, key, f"{part:g}" if kind is float else str(part))
        if "--procs" in a:
            a = _with(a, "--procs", "1")
        out.append(_with(a, "--seed", str(seed + 64 * i)))  # a generator's processes take seed + proc
    return out


def _lost(exc: BaseException) -> str:
    text = str(getattr(exc, "cause", None) or exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip()


def run_level(
    g: Generators,
    argv: list[str],
    server_pid: int | None,
    warmup_s: float,
    duration_s: float,
    timeout_s: float,
    interval_s: float = 1.0,
) -> dict[str, Any]:
    """One load level on every generator; returns the local path's run dict (lines of every generator
    with distinct proc numbers, the server's CPU at the window's start, each interval and its end)
    plus "cluster": workers, lost workers, merged histograms."""

    ray = ray_module()
    argvs = worker_argvs(argv, len(g.actors))
    use = list(range(len(argvs)))
    clocks = clock_offsets(g)
    start = time.time() + LEAD_S + max(c["ping_s"] for c in clocks)
    refs = {
        g.actors[i].run.remote(argvs[i], start + clocks[i]["offset_s"], g.places[i]["core"], timeout_s, g.exe_hint): i
        for i in use
    }
    # the server's CPU on the driver's clock, over the window the generators count in
    readings: list[tuple[float, float]] = []
    cpu: Callable[[], float] = (lambda: process_cpu_s(server_pid)) if server_pid else (lambda: 0.0)
    t_measure = start + warmup_s
    time.sleep(max(0.0, t_measure - time.time()))
    first = (time.monotonic(), cpu())
    k = 1
    while k * interval_s < duration_s - 1e-9:
        time.sleep(max(0.0, t_measure + k * interval_s - time.time()))
        readings.append((time.monotonic(), cpu()))
        k += 1
    time.sleep(max(0.0, t_measure + duration_s - time.time()))
    last = (time.monotonic(), cpu())
    results: dict[int, dict[str, Any]] = {}
    lost: list[dict[str, Any]] = []
    pending = list(refs)

    def all_answered() -> bool:
        nonlocal pending
        if pending:  # each call returns as soon as every generator answered, or after a second
            ready, pending = ray.wait(pending, num_returns=len(pending), timeout=1.0)
            for r in ready:
                i = refs[r]
                try:
                    results[i] = ray.get(r)
                except Exception as exc:  # noqa: BLE001 (the actor, its process or its node died)
                    lost.append({**_place(g, i), "reason": _lost(exc)})
        return not pending

    wait_until(all_answered, timeout_s + 30, interval_s=0)
    for r in pending:
        lost.append({**_place(g, refs[r]), "reason": f"no answer within {timeout_s + 30:.0f} s"})
    if not results:
        why = "; ".join(f"{x['name']}: {x['reason']}" for x in lost)
        raise ClusterRunError(f"cluster: every generator was lost ({why})")
    return _merge(g, results, clocks, lost, first, last, readings, start)


def _place(g: Generators, i: int) -> dict[str, Any]:
    p = g.places[i]
    return {
        "name": p["name"],
        "node": f"{p['ip']} ({p['node_id'][:8]})",
        "host": p["host"],
        "actor_pid": p["pid"],
        "core": p["core"],
    }


def _merge(
    g: Generators,
    results: dict[int, dict[str, Any]],
    clocks: list[dict[str, float]],
    lost: list[dict[str, Any]],
    first: tuple[float, float],
    last: tuple[float, float],
    readings: list[tuple[float, float]],
    start: float,
) -> dict[str, Any]:
    lines: list[dict[str, Any]] = []
    workers: list[dict[str, Any]] = []
    stderr: list[str] = []
    hists: list[Histogram] = []
    hs_hists: list[Histogram] = []
    for i in sorted(results):
        r = results[i]
        ends = [m for m in r["lines"] if m.get("type") == "end"]
        for m in r["lines"]:
            m = {**m, "worker": g.places[i]["name"]}
            if "proc" in m:
                m["proc"] = i * 64 + m["proc"]  # distinct over the generators (each numbers its own from 0)
            lines.append(m)
        if r["stderr"]:
            stderr.append(f"{g.places[i]['name']}: {r['stderr']}")
        h = Histogram.merged(Histogram.from_pairs(e.get("hist_us", []), f"{g.places[i]['name']} hist_us") for e in ends)
        hh = Histogram.merged(
            Histogram.from_pairs(e.get("hs_hist_us", []), f"{g.places[i]['name']} hs_hist_us") for e in ends
        )
        hists.append(h)
        hs_hists.append(hh)
        hs = sum(e.get("handshakes", 0) for e in ends)
        cpu_s = sum(e.get("cpu_s", 0.0) for e in ends)
        workers.append(
            {
                **_place(g, i),
                "generator_pid": r["pid"],
                "returncode": r["returncode"],
                "handshakes": hs,
                "failed": sum(e.get("failed", 0) for e in ends),
                "cpu_s": cpu_s,
                "cpu_us_per_handshake": cpu_s * 1e6 / hs if hs else None,
                "clock_offset_ms": clocks[i]["offset_s"] * 1e3,
                "ping_ms": clocks[i]["ping_s"] * 1e3,
                "start_late_ms": r["late_s"] * 1e3,
                "nice": r.get("nice"),
                "latency_ms": h.percentiles_ms(),
                "hist_us": h.to_pairs(),
            }
        )
    merged, merged_hs = Histogram.merged(hists), Histogram.merged(hs_hists)
    return {
        "lines": lines,
        "start": first,
        "end": last,
        "readings": readings,
        "stderr": "\n".join(stderr),
        "returncode": max((r["returncode"] or 0) for r in results.values()),
        "cluster": {"workers": workers, "lost": lost, "hist": merged, "hs_hist": merged_hs, "start_wall_s": start},
    }


def lost_failures(s: Series, level: dict[str, Any]) -> None:
    """A failure on the series for each generator lost mid-run (the counts are the others')."""

    for x in level["cluster"]["lost"]:
        R.add_failure(
            s,
            f"generator {x['name']} (node {x['node']}, core {x['core']}) lost mid-run: "
            f"{x['reason']}; the counts are the other generators'",
        )


def cluster_level(run: dict[str, Any]) -> dict[str, Any]:
    """What a cluster level adds to the local summary: merged latency percentiles (replacing the
    busiest process's), the per-worker figures, the lost workers and the merge rule."""
    c = run["cluster"]
    hs = c["hs_hist"].percentiles_ms()
    out = {
        "latency_ms": c["hist"].percentiles_ms(),
        "handshake_ms": {k: hs[k] for k in ("p50_ms", "p95_ms", "p99_ms")},
        "latency_hist_us": c["hist"].to_pairs(),
        "cluster": {
            "generators": len(c["workers"]) + len(c["lost"]),
            "workers": c["workers"],
            "lost": c["lost"],
            "merge": "counts summed over the generators' end lines; latency percentiles from their "
            f"histograms merged bin by bin ({SCHEME}), nearest rank, the bin's highest value",
            "clock": "start instant on the driver's wall clock, shifted by each worker's measured offset "
            "(best of 3 pings over Ray)",
        },
    }
    return out


# --- secperf fleet --replay --cluster ----------------------------------------------------------------
def merge_storm(run: dict[str, Any]) -> dict[str, Any]:
    """The storm's end line over every generator: clients, returns, attempts and failures added; the
    time until all are back is the latest generator's (all started at the same instant, each one's
    lateness added); wait percentiles from the merged wait histograms, ranked over all clients (one
    that never came back counts as not yet back, as the generator does). No end line on any generator
    is a failed storm (ServerMeasureError), named with the generators' last words."""
    ends = [m for m in run["lines"] if m.get("type") == "end"]
    if not ends:
        raise ServerMeasureError(f"secperf-loadgen --storm gave no end line on any generator: {run['stderr'][-300:]}")
    late = {w["name"]: w["start_late_ms"] / 1e3 for w in run["cluster"]["workers"]}
    out: dict[str, Any] = {"loop": "storm", "generators": len(ends)}
    for k in ("clients", "back", "gave_up", "attempts", "failed_attempts"):
        out[k] = sum(e.get(k, 0) for e in ends)
    out["elapsed_s"] = max(e.get("elapsed_s", 0.0) + late.get(e.get("worker"), 0.0) for e in ends)
    out["stopped"] = ",".join(sorted({e.get("stopped", "?") for e in ends}))
    if out["back"] == out["clients"] and all("time_all_back_s" in e for e in ends):
        out["time_all_back_s"] = max(e["time_all_back_s"] + late.get(e.get("worker"), 0.0) for e in ends)
    waits = Histogram.merged(
        Histogram.from_pairs(e.get("wait_hist_us", []), f"{e.get('worker')} wait_hist_us") for e in ends
    )
    for k, q in (("wait_p50_s", 0.5), ("wait_p90_s", 0.9), ("wait_p99_s", 0.99), ("wait_max_s", 1.0)):
        rank = q * out["clients"]
        if waits.n and rank <= waits.n and (us := waits.quantile_us(rank / waits.n)) is not None:  # None: empty
            out[k] = us / 1e6
    out["wait_hist_us"] = waits.to_pairs()
    out["cpu_s"] = sum(e.get("cpu_s", 0.0) for e in ends)
    errors: dict[str, int] = {}
    for e in ends:
        for r, c in (e.get("errors") or {}).items():
            errors[r] = errors.get(r, 0) + c
    out["errors"] = errors
    return out
