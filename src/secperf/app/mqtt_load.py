"""`secperf mqtt-load`: MQTT-level load on mosquitto (measure/mqtt_load) into a Result of kind `server`
whose analysis `mqtt_load` holds the phases (ramp, hold, storm) with their CONNACK / PUBACK / wait
histograms, the broker's capacity and CPU, the limits that bound the client count, and the storm beside
`fleet`'s model for the same clients, capacity, back-off and listen backlog (mosquitto's 100): the ratios of
the time until all are back and of the wait percentiles."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError, MeasurementError, SetupError
from ..lab.pki import LabPKI
from ..measure import mqtt_load as M
from ..measure.mqtt_load import MqttLoadConfig
from ..measure.server_config import ServerMeasureError, find_loadgen
from ..measure.server_target import parse_load_target, probe
from ..model.fleet import FleetModel, simulate
from ..model.fleet_ack import timer_bucket_s
from . import bounds, cluster_mqtt
from .cluster_bounds import measured_bounds
from .cluster_generators import shares
from .mqtt_load_series import mqtt_series
from .mqtt_target import accept_from, model_backlog, target_inputs
from .runner import Output, Phase, measure_and_write
from .se_keys import offload_name, profiles_named

if TYPE_CHECKING:
    from ..core.result_schema import Result
    from ..core.store import Run
    from .runner import Progress

__all__ = ["MqttLoadConfig", "phase", "resolved", "run", "storm_vs_model"]
RATIO_TARGET = (0.8, 1.25)
TARGET_FIGURES = ("time_all_back_s", "wait_p50_s")  # the storm's figures the ratio target holds for
MOSQUITTO_BACKLOG = 100  # listen(2) backlog in mosquitto's code (ss -ltn shows it); not configurable
MAX_BURST_PER_S = 500  # first attempts per second a storm here spreads to (the benchmark's default)
CAPACITY_FACTORS = (0.9, 1.0, 1.1)  # the headline model's capacity, scaled: its sensitivity
FIRST_SYNS_TAKEN = "first SYNs taken (idle broker at the drop)"
GENERATOR_HZ = 250  # CONFIG_HZ of Debian's kernels (this host's /boot/config): the generator's timer wheel


def phase(m: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((p for p in m.get("phases", []) if p.get("phase") == name), None)


def storm_vs_model(c: MqttLoadConfig, m: dict[str, Any], horizon_s: float | None = None) -> dict[str, Any] | None:
    """The measured storm beside the fleet model at the broker's measured capacity (mean of the runs just
    before and after): the model with the broker's abandoned work and without, and measured / model for
    the time until all clients are back and the wait percentiles. None without a storm or a capacity."""

    st, cap = phase(m, "storm"), m.get("capacity_per_s")
    if st is None or not cap:
        return None
    device_s = 0.0
    prof = c.client_se()  # the client's signing wait: part of each device's own handshake (not the broker's)
    if prof is not None:
        device_s = sum((d.mean() if (d := prof.dist(fn)) else 0.0) for fn in ("C_SignInit", "C_Sign")) / 1000
    measured = {
        "time_all_back_s": st.get("time_all_up_s"),
        "wait_p50_s": _s(st.get("wait_p50_ms")),
        "wait_p90_s": _s(st.get("wait_p90_ms")),
        "wait_p99_s": _s(st.get("wait_p99_ms")),
        "back": st.get("connacks"),
        "gave_up": st.get("gave_up"),
        "failed_attempts": (st.get("failed") or 0) + (st.get("refused") or 0),
        "attempts": st.get("attempts"),
        # the kernel's counts in the storm (the namespace's: other connections on the host count too):
        # SYNs and handshake ACKs that found the accept queue full, SYNs sent again
        "listen_overflows": (st.get("tcp_counters") or {}).get("ListenOverflows"),
        "syn_retransmits": (st.get("tcp_counters") or {}).get("TCPSynRetrans"),
    }
    # overflows that were no SYN's drop: final ACKs and the client's retries on the ACK path (a dropped SYN is
    # sent again unless its client gave up, so the retransmissions stand for the SYN drops)
    ov, rx = measured["listen_overflows"], measured["syn_retransmits"]
    measured["ack_path_overflows"] = ov - rx if ov is not None and rx is not None else None
    out: dict[str, Any] = {
        "clients": c.clients,
        "policy": c.policy,
        "base_s": c.base_s,
        "cap_s": c.cap_s,
        "timeout_s": c.timeout_s,
        "spread_s": c.spread_s,
        "capacity_per_s": cap,
        "device_handshake_s": device_s,
        "resumed_share": c.resume_ratio,
        "measured": measured,
        "models": {},
        "ratio_target": list(RATIO_TARGET),
        "capacity_from": f"secperf-loadgen --app mqtt, {(m.get('capacity_before') or {}).get('clients', 32)} "
        "clients closed loop, just before and after the load (mean)",
    }
    # mosquitto's listen backlog is known; a target's from its system file, else every client held
    backlog, out["backlog_from"] = model_backlog(c, m, MOSQUITTO_BACKLOG)
    out["backlog"] = backlog
    # how long the broker's event-loop pass lasts: its own CPU per handshake in the capacity runs (it is
    # below 1 / capacity when the generator, not the broker, limits the rate)
    cpus = [
        x for k in ("capacity_before", "capacity_after") if (x := (m.get(k) or {}).get("server_cpu_us_per_handshake"))
    ]
    server_s = sum(cpus) / len(cpus) / 1e6 if cpus else None
    out["server_s_per_handshake"] = server_s
    # first attempts faster than a storm here spreads them, beyond mosquitto's backlog: a burst
    burst = c.clients > MOSQUITTO_BACKLOG and c.spread_s * MAX_BURST_PER_S < c.clients and not m.get("target")
    if burst:
        out["note"] = (
            f"{c.clients} first attempts within {c.spread_s:g} s: beyond mosquitto's listen backlog of "
            f"{MOSQUITTO_BACKLOG} the kernel drops SYNs the broker has not accepted and those clients wait "
            "for TCP's SYN retransmission (1, 2, 3, 4, 5, 7, 11 s ... on Linux 6.5+). The model has both ends of "
            "the first wave: the first SYNs meet the broker in the pass that closes the reset connections (only the "
            "backlog gets in), or an idle broker taking them at accept_per_s ('first SYNs taken'); later SYNs meet "
            "an idle broker or a busy one taking a backlog per pass"
        )
    # the idle broker's accept rate, measured before the load (measure/accept_rate.py); without it the
    # model's assumption (20,000/s)
    acc = (m.get("accept_rate") or {}).get("accept_per_s")
    accept_per_s = float(acc) if acc else FleetModel.accept_per_s
    out["accept_per_s"] = accept_per_s
    # the generator's kernel's SYN timers, read at the run (measure/tcp_counters); without them the
    # model's defaults (Linux >= 6.5). A kernel without tcp_syn_linear_timeouts doubles from the first
    ks = m.get("tcp_sysctls") or {}
    syn = {"syn_retries": ks.get("tcp_syn_retries") or FleetModel.syn_retries}
    syn["syn_linear_timeouts"] = (ks.get("tcp_syn_linear_timeouts") or 0) if ks else FleetModel.syn_linear_timeouts
    out["syn_timers"] = {**syn, "from": "the generator's kernel (sysctl)" if ks else "fleet's defaults (Linux 6.5+)"}
    # the second gate (model/fleet_ack.py): the generator's kernel sends the SYN retransmissions due in one
    # bucket of its timer wheel together, so a bucket meeting an accept queue with room passes whole and
    # what the queue cannot hold overflows at the final ACK; the broker's kernel then retries on its
    # SYN-ACK timer and the client's data retransmissions. Loopback: no round trip to add
    # SYN-ACK timers and the overflow rule are the broker's kernel's: this host's for the local broker
    bk = {} if m.get("target") else ks
    sa, ab = bk.get("tcp_synack_retries"), bk.get("tcp_abort_on_overflow")
    ack = {
        "rtt_s": 0.0,
        "syn_batch_s": timer_bucket_s(FleetModel.syn_rto_s, GENERATOR_HZ),
        "synack_retries": FleetModel.synack_retries if sa is None else sa,
        "abort_on_overflow": bool(ab),
    }
    out["ack_gate"] = {
        **ack,
        "from": f"the generator's timer bucket for 1 s at CONFIG_HZ {GENERATOR_HZ} (assumed, not recorded); "
        + (
            "the broker kernel's tcp_synack_retries and tcp_abort_on_overflow"
            if sa is not None
            else "Linux's defaults for tcp_synack_retries (5) and tcp_abort_on_overflow (0)"
        ),
    }
    # the generator resets every connection at the storm's instant and sends its first SYNs right after: the
    # broker takes the resets in the passes that also hold its listener, so the first SYNs meet a pass and
    # get only the accept queue. How long the close work lasts is not measured: the model's step, the time
    # it takes the first SYNs of a storm without spread to arrive in
    out["start_pass_s"] = start_pass_s = FleetModel.dt_s
    out["accept_from"] = accept_from(m)
    # the capacity the storm met, measured in it: the lower of the broker's and the generator's bounds
    # (measure/storm_capacity.py); the model is run at it beside the closed-loop capacity

    bounds = measured_bounds(m, st)  # a cluster run's per node (app/cluster_bounds), else the local path's
    out["measured_bounds"] = bounds
    variants = [
        (("abandoned work" if ab else "late work dropped"), cap, server_s, ab, start_pass_s) for ab in (True, False)
    ]
    # a burst beyond the listen backlog: how many first SYNs get in depends on whether the broker is still in
    # the pass that closes the reset connections when they arrive (a race: 101 to 890 of 1,000-2,000 here).
    # The model above takes the pessimistic end (only the backlog); this variant the other end (an idle
    # broker takes them at its accept rate), so the two bound the first wave (burst_band)
    if burst:
        variants.append((FIRST_SYNS_TAKEN, cap, server_s, False, 0.0))
    if bounds is not None:
        b_server_s = bounds["broker"]["cpu_per_connack_ms"] / 1e3 / bounds["broker"]["core_share_left"]
        variants += [
            (
                f"measured bounds ({bounds['limited_by']}), {'abandoned work' if ab else 'late work dropped'}",
                bounds["capacity_per_s"],
                min(b_server_s, 1.0 / bounds["capacity_per_s"]),  # a pass never outlasts a handshake's slot
                ab,
                start_pass_s,
            )
            for ab in (True, False)
        ]
        idle = bounds["capacity_on_idle_cores_per_s"]
        variants += [
            (
                f"idle-core bounds ({bounds['limited_by_on_idle_cores']}), late work dropped",
                idle,
                min(bounds["broker"]["cpu_per_connack_ms"] / 1e3, 1.0 / idle),
                False,
                start_pass_s,
            )
        ]

    def model_at(capacity: float, srv_s: float | None, ab: bool, first_pass_s: float) -> dict[str, Any]:
        r = simulate(
            FleetModel(
                devices=c.clients,
                capacity_full_per_s=capacity,
                capacity_resumed_per_s=capacity,
                resumed_share=0.0,
                policy=c.policy,
                base_s=c.base_s,
                cap_s=c.cap_s,
                timeout_s=c.timeout_s,
                backlog=backlog,
                accept_per_s=accept_per_s,
                start_pass_s=first_pass_s,
                syn_retries=int(syn["syn_retries"]),
                syn_linear_timeouts=int(syn["syn_linear_timeouts"]),
                rtt_s=float(ack["rtt_s"]),
                syn_batch_s=float(ack["syn_batch_s"]),
                synack_retries=int(ack["synack_retries"]),
                abort_on_overflow=bool(ack["abort_on_overflow"]),
                server_s_per_handshake=srv_s,
                abandoned_work=ab,
                max_attempts=c.max_attempts,
                device_handshake_s=device_s,
                spread_s=c.spread_s,
                horizon_s=horizon_s or max(600.0, 2 * c.storm_max_s),
            )
        )
        mod = {
            "time_all_back_s": r["time_all_back_s"],
            "wait_p50_s": r["wait_s"]["p50"],
            "wait_p90_s": r["wait_s"]["p90"],
            "wait_p99_s": r["wait_s"]["p99"],
            "failed_attempts": r["failed_attempts"],
            "syn_drops": r["syn_drops"],
            "ack_overflows": r["ack_overflows"],
            "ack_timed_out": r["ack_timed_out"],
        }
        for k in ("time_all_back_s", "wait_p50_s", "wait_p90_s", "wait_p99_s"):
            mv, pv = measured.get(k), mod[k]
            mod[f"ratio_{k}"] = mv / pv if mv and pv else None
        mod["within_target"] = all(
            (x := mod[f"ratio_{k}"]) is not None and RATIO_TARGET[0] <= x <= RATIO_TARGET[1] for k in TARGET_FIGURES
        )
        mod["capacity_per_s"] = capacity
        return mod

    for name, capacity, srv_s, ab, first_pass_s in variants:
        out["models"][name] = model_at(capacity, srv_s, ab, first_pass_s)
    # the headline model again at the capacity +-10 % (the before / after runs differ by that much and more):
    # where the last clients come back on a retransmission ladder, a small change moves them a rung
    out["sensitivity"] = sensitivity(
        {
            f: out["models"]["late work dropped"] if f == 1.0 else model_at(cap * f, server_s, False, start_pass_s)
            for f in CAPACITY_FACTORS
        }
    )
    if burst:
        out["burst_band"] = burst_band(measured, out["models"]["late work dropped"], out["models"][FIRST_SYNS_TAKEN])
    return out


def sensitivity(by_factor: dict[float, dict[str, Any]]) -> dict[str, Any]:
    """The headline model's figures at the capacity times each factor: their range, and whether the time
    until all are back jumps (knife_edge: its highest over its lowest moves more than 1.25 times as much as
    the median wait's, which follows the capacity smoothly), as where the last clients return on TCP's
    doubling retransmissions."""
    out: dict[str, Any] = {"capacity_factors": list(by_factor)}
    for k in TARGET_FIGURES:
        vs = [m[k] for m in by_factor.values()]
        out[k] = vs
        ok = [v for v in vs if v]
        out[f"{k}_range"] = [min(ok), max(ok)] if ok else None
    rng, mid = out["time_all_back_s_range"], out["wait_p50_s_range"]
    out["knife_edge"] = bool(rng and mid and rng[1] / rng[0] > RATIO_TARGET[1] * mid[1] / mid[0])
    if out["knife_edge"]:
        out["why"] = (
            "the time until all are back jumps within +-10 % of the capacity: the last clients come back on a "
            "rung of TCP's doubling retransmissions (their SYN's or, past the accept queue's second gate, their "
            "ClientHello's), and a little more or less capacity moves them to the next rung; judge the wait "
            "percentiles, or the storm's repeats (benchmarks/storm_repeats.py)"
        )
    return out


def burst_band(measured: dict[str, Any], busy: dict[str, Any], idle: dict[str, Any]) -> dict[str, Any]:
    """A burst's measured time until all are back and median wait beside the band the two first-wave ends
    give (`busy`: only the backlog gets in; `idle`: the broker takes the first SYNs at its accept rate):
    below, inside or above it, per figure."""

    def where(k: str) -> str | None:
        v, lo, hi = measured.get(k), idle.get(k), busy.get(k)
        if v is None or lo is None or hi is None:
            return None
        lo, hi = min(lo, hi), max(lo, hi)
        return "inside" if lo * RATIO_TARGET[0] <= v <= hi * RATIO_TARGET[1] else ("below" if v < lo else "above")

    return {
        k: {
            "measured": measured.get(k),
            "first_syns_taken": idle.get(k),
            "backlog_only": busy.get(k),
            "where": where(k),
        }
        for k in TARGET_FIGURES
    } | {"rule": "inside: within the two ends widened by the ratio target (0.8 x the lower, 1.25 x the higher)"}


def resolved(c: MqttLoadConfig) -> MqttLoadConfig:
    """`c` with the secure-element profiles its --se and --key-source offload:PROFILE:WAIT name
    resolved, once for both (app/se_keys): the measurement and the storm's model take the objects."""

    off = offload_name(c.key_source)
    wanted = {n: o for n, o in ((off, f"--key-source {c.key_source}"), (c.se_profile, f"--se {c.se_profile}")) if n}
    profiles = profiles_named(wanted)
    return replace(
        c, se=profiles[c.se_profile] if c.se_profile else None, offload_profile=profiles[off] if off else None
    )


def _s(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000.0


def run(
    c: MqttLoadConfig,
    output: Output,
    target: dict[str, Any] | None = None,
    max_hours: float | None = None,
    cluster: str | None = None,
) -> Result:
    """`target`: the user's broker (--target HOST:PORT with ca, servername, client_cert, client_key):
    probed first (unreachable, not TLS, a refused certificate: exit 2), then loaded as mosquitto is here.
    `cluster`: the load on a Ray cluster's generators (app/cluster_mqtt.py), the broker's capacity
    runs from here."""

    M.validate(c)
    c = resolved(c)
    M.find_mqttload()  # a missing tool is said before the run directory is made

    find_loadgen()
    # the open-file limit named before a run directory is made: the broker's here (it holds every
    # client), one generator's otherwise (on a cluster each holds its share: checked once placed)
    limits = M.fd_limits(c.clients if target is None or cluster is None else 1)

    limit = bounds.check_estimate(
        "mqtt-load",
        bounds.mqtt_load_s(c.clients, c.connect_rate, c.hold_s, c.capacity_s, c.storm, c.storm_max_s, c.spread_s),
        f"{c.clients} clients at --connect-rate {c.connect_rate:g}/s, --hold {c.hold_s:g} s, "
        f"capacity runs and {'a storm' if c.storm else 'no storm'}",
        "lower --clients, --hold or raise --connect-rate",
        max_hours,
    )
    lt = None
    inputs: dict[str, Any] = {}  # a target's backlog and accept rate (app/mqtt_target)
    if target is not None:
        if c.se_profile and not target.get("client_cert"):
            raise InputError(
                f"--se {c.se_profile} with --target and no --client-cert: the client signs only "
                "with a certificate to show"
            )
        lt = parse_load_target(
            target["target"],
            "tls",
            "mqtt",
            target.get("ca"),
            target.get("servername"),
            target.get("client_cert"),
            target.get("client_key"),
        )
        if c.clients > limits["ephemeral_ports"] and not lt.addr.startswith("127.") and cluster is None:
            raise InputError(
                f"--clients {c.clients}: the ephemeral ports bind: {limits['ephemeral_ports']} to one "
                f"remote address from one source address; run several generators or fewer clients"
            )
        try:
            negotiated = probe(lt, c.tls)
        except InputError as exc:
            if "the step after it failed" not in str(exc):
                raise
            # an MQTT broker that closes after the handshake, before CONNACK: it refused the client
            cert = (
                "it may require a client certificate: give --client-cert and --client-key"
                if not target.get("client_cert")
                else "it may refuse --client-cert (its CA) or the client"
            )
            raise InputError(
                f"--target {lt.name}: the TLS handshake worked but no CONNACK came "
                f"({str(exc).split('(', 1)[-1].split(')')[0]}); {cert}, or it does not speak "
                "MQTT on that port"
            ) from None
        # the storm model's backlog and accept rate: the --system file's, or probed here (exit 2 on refusal)
        inputs = target_inputs(lt, target)

    load = None  # the load's runner: None here, the cluster's generators with --cluster
    fd_clients = None  # the most clients one generator process holds (--target on a cluster)

    def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
        pki = LabPKI().ensure()
        progress("start", items[0], 0, 1, None)
        try:
            if lt is None:
                m = M.measure(pki, c, run.dir / "mqtt", load=load)
            else:
                m = M.measure_target(lt, c, run.dir / "mqtt", load=load, fd_clients=fd_clients)
                m["negotiated"] = negotiated
                m["target_inputs"] = {"backlog": inputs["backlog"]}
                m["accept_rate"] = inputs["accept_rate"]
            if m.get("cluster", {}).get("lost"):
                m["partial"] = "generator(s) lost mid-run: " + "; ".join(
                    f"{x['name']} ({x['reason']})" for x in m["cluster"]["lost"]
                )
            m["fleet_model"] = storm_vs_model(c, m)
        except (ServerMeasureError, SetupError) as exc:
            doc.analysis.mqtt_load = {"config": c.as_dict(), "failed": str(exc)}
            run.save(doc)
            raise MeasurementError(f"mqtt-load: {exc}") from exc
        doc.analysis.mqtt_load = m
        # a series per phase and latency (app/mqtt_load_series): what metrics and compare read
        doc.series.extend(mqtt_series(m, "mosquitto" if lt is None else f"target {lt.name}"))
        run.save(doc)
        progress("done", items[0], 0, 1, None)  # the tables: report/views/mqtt_load.py, after the run

    params = {"mqtt_load": True, **c.as_dict(), **({"target": lt.name} if lt is not None else {}), **limit}
    phases = [Phase([c], lambda x: f"mqtt load: {x.clients} clients", runner)]
    if cluster is None:
        return measure_and_write("server", params, phases, output)

    with cluster_mqtt.generators(cluster, c, lt, output.json) as g:
        # the broker's core here (its /proc/stat share for the storm's bound); a target's CPU is not read
        load = functools.partial(cluster_mqtt.run_load, g, broker_core=c.core if lt is None else None)
        fd_clients = max(shares(c.clients, len(g.actors)))
        params["cluster"] = cluster
        placed = {**g.cluster.as_dict(), "generators": g.places, "nodes_left_out": g.left_out}

        def on_cluster(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
            doc.analysis.cluster = placed
            runner(items, doc, run, progress)

        return measure_and_write("server", params, [Phase([c], phases[0].label, on_cluster)], output)
