"""The capacity a reconnect storm met on a cluster (`mqtt-load --cluster`), from per-phase CPU read on
every node, as measure/storm_capacity.py gives it for the local path: the lower of two bounds.

- the generators: each generator's CONNACKs per second of its own CPU in the storm (its phase line's
  cpu_s), times the share of its core that other processes left it, read from its own node's
  /proc/stat at its phase lines (app/cluster_generators: the worker stamps each phase line); the
  generators' bounds add up (each holds its own clients on its own core);
- the broker (started here): its CONNACKs per second of its own CPU in the storm (sampled by the
  driver), times the share of its core left to it, from this machine's /proc/stat sampled with it
  (the samples around the storm: a slightly longer window, which counts a little of the neighbouring
  phases). A target's broker runs on its own machine: its CPU is not read, so there is no broker
  bound and no capacity, and the record says why; the generators' bound is still given.

A core's share left = 1 - (its busy time - the process's own CPU) / the phase's wall time (at least
MIN_SHARE), as storm_capacity's rule. /proc/stat counts in ticks (10 ms): over a storm of a fraction of a
second the share is coarse, and a bound below the achieved rate is said so."""

from __future__ import annotations

from typing import Any

from ..measure.storm_capacity import SATURATED, busy_between, process_bound, share_left, storm_bounds, versus

TARGET_CPU = "the target's broker runs on its own machine: its CPU is not read, so it has no bound"


def busy_around(samples: list[tuple[float, float, dict[int, float]]], a: float, b: float) -> dict[str, Any] | None:
    """From samples (driver time, the broker's CPU seconds, each core's busy seconds) taken together:
    the busy seconds and the broker's CPU from the last sample at or before `a` to the first at or after
    `b`, with the window's length; None without samples around both."""
    before = [x for x in samples if x[0] <= a]
    after = [x for x in samples if x[0] >= b]
    if not before or not after:
        return None
    (t0, p0, c0), (t1, p1, c1) = before[-1], after[0]
    return {"busy_s": busy_between(c0, c1), "broker_cpu_s": p1 - p0, "window_s": t1 - t0}


def _generator(w: dict[str, Any]) -> dict[str, Any]:
    ph = next((p for p in w.get("phases", []) if p.get("phase") == "storm"), None)
    out: dict[str, Any] = {"name": w.get("name"), "node": w.get("node"), "core": w.get("core")}
    if ph is None:
        return {**out, "why_none": "no storm phase line"}
    n, cpu, wall = ph.get("connacks") or 0, ph.get("cpu_s"), float(ph.get("elapsed_s") or 0.0)
    share = share_left(ph.get("core_busy_s"), cpu, wall)
    if not n or not cpu or share is None:
        why = "no CONNACK in the storm" if not n else "no CPU or /proc/stat reading of the storm on its node"
        return {**out, "why_none": why}
    return {
        **out,
        "connacks": n,
        "cpu_s": cpu,
        "core_share_left": share,
        "rate_on_a_core_per_s": n / cpu,
        "bound_per_s": n / cpu * share,
    }


def storm_bounds_cluster(
    storm: dict[str, Any], workers: list[dict[str, Any]], broker_core: int | None, broker_busy: dict[str, Any] | None
) -> dict[str, Any]:
    """The storm's bounds from the merged storm phase (connacks, elapsed_s, broker_cpu_s), the workers
    (their storm phase with cpu_s and core_busy_s) and the broker core's busy time here; the keys of
    storm_capacity.storm_bounds when both bounds are known, else the generators' and why_none."""
    gens = [_generator(w) for w in workers]
    known = [x for x in gens if "bound_per_s" in x]
    nodes: dict[str, dict[str, Any]] = {}
    for x in known:
        nd = nodes.setdefault(str(x["node"]), {"node": x["node"], "generators": 0, "connacks": 0, "bound_per_s": 0.0})
        nd["generators"] += 1
        nd["connacks"] += x["connacks"]
        nd["bound_per_s"] += x["bound_per_s"]
    out: dict[str, Any] = {"per_generator": gens, "per_node": list(nodes.values()), "rule": __doc__ or ""}
    if not known or len(known) < len(gens):
        out["why_none"] = "a generator has no bound: " + "; ".join(
            f"{x['name']} on {x['node']}: {x['why_none']}" for x in gens if "why_none" in x
        )
        return out
    n_all, cpu_all = sum(x["connacks"] for x in known), sum(x["cpu_s"] for x in known)
    rate = sum(x["rate_on_a_core_per_s"] for x in known)
    bound = sum(x["bound_per_s"] for x in known)
    out["generator"] = {
        "cpu_per_connack_ms": 1e3 * cpu_all / n_all,
        "rate_on_a_core_per_s": rate,  # every generator on a core of its own
        "core_share_left": bound / rate,
        "bound_per_s": bound,
    }
    n, wall, b_cpu = storm.get("connacks") or 0, float(storm.get("elapsed_s") or 0.0), storm.get("broker_cpu_s")
    if broker_core is None:
        out["why_none"] = TARGET_CPU
        return out
    around = broker_busy or {}
    # the share over the samples' window, the broker's CPU and its core's busy time read together
    b_share = share_left(
        around.get("busy_s", {}).get(broker_core), around.get("broker_cpu_s"), around.get("window_s") or 0.0
    )
    if not n or not b_cpu or b_share is None or wall <= 0:
        out["why_none"] = "no broker CPU or /proc/stat reading of the storm here"
        return out
    out["broker"] = {**process_bound(n, float(b_cpu), b_share), "busy_window_s": around.get("window_s")}
    out.update(versus(out["broker"], out["generator"], n, wall))
    if out["capacity_per_s"] < (1 - SATURATED) * n / wall:
        out["note"] = (
            "the bound is below the storm's achieved rate: a share left was read too low (/proc/stat counts "
            "in ticks of 10 ms, coarse over a short storm; other work that ran while a process waited counts "
            "as taking its CPU)"
        )
    elif abs(out["capacity_per_s"] - n / wall) <= SATURATED * n / wall:
        out["note"] = (
            "the cores were saturated: the share-adjusted capacity equals the storm's own achieved rate "
            "(not an independent input); capacity_on_idle_cores_per_s is the independent figure"
        )
    return out


def measured_bounds(m: dict[str, Any], storm: dict[str, Any]) -> dict[str, Any] | None:
    """The storm's measured capacity bounds for the model: a cluster run's (both bounds known: a broker
    started here), else the local path's (storm_capacity.storm_bounds); None when not known."""
    cb = m.get("cluster_storm_bounds")
    if cb is not None:
        return cb if "capacity_per_s" in cb else None
    return storm_bounds(storm, m.get("broker_core"), list(m.get("generator_cores") or []))
