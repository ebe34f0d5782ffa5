"""What a `secperf mqtt-load` Result says (analysis.mqtt_load), built once as plain data for the
terminal and the HTML report: the run's facts (broker, clients, capacity, the limits that bound the
client count), one row per phase (ramp, hold, storm) and the storm beside fleet's model, each table
a Grid (report/views/grid.py) that report/terminal_grid.py and report/html_grid.py draw."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.result_schema import Analysis
from ..units import fmt_time_us
from .grid import Grid

PHASES_TITLE = "Per phase"
MODEL_TITLE = "The storm beside fleet's model (ratios measured / modelled)"

PHASE_HEAD = [
    "phase",
    "up",
    "all up after",
    "CONNACK P50 / P99",
    "PUBACK P50 / P99",
    "acked / QoS 1 sent",
    "refused / failed / dropped",
    "broker CPU",
]
MODEL_HEAD = ["fleet model", "all back: measured", "modelled", "ratio", "wait P50: measured", "modelled", "ratio"]


def _ms(v: Any) -> str:
    return "-" if not isinstance(v, (int, float)) else fmt_time_us(float(v) * 1000.0)


def _s(v: Any) -> str:
    return "never (within the horizon)" if not isinstance(v, (int, float)) else fmt_time_us(float(v) * 1e6)


def _ratio(v: Any) -> str:
    return "-" if not isinstance(v, (int, float)) else f"{float(v):.2f}"


def present(doc_analysis: Analysis) -> Mapping[str, Any] | None:
    """The run's mqtt_load analysis when it holds phases (a failed run holds only its reason)."""
    m = doc_analysis.mqtt_load
    return m if isinstance(m, Mapping) and m.get("phases") else None


def facts(m: Mapping[str, Any]) -> list[str]:
    """One line each: who was loaded, how, and what bounded the number of clients."""
    c, lim = m.get("config", {}), m.get("limits", {})
    tgt = m.get("target")
    who = tgt["target"] if isinstance(tgt, Mapping) and tgt.get("target") else "mosquitto started by secperf"
    auth = "client certificates" if c.get("client_auth", True) else "no client certificates"
    out = [
        f"{who}: {c.get('clients')} persistent MQTT/TLS {c.get('tls', '1.3')} clients with {auth}, "
        f"server key {c.get('key')}, ramp {c.get('connect_rate')}/s, hold {c.get('hold_s')} s, "
        f"PUBLISH {c.get('publish_rate')}/s at QoS {c.get('qos')}, keep-alive {c.get('keepalive_s')} s"
    ]
    cap = m.get("capacity_per_s")
    if isinstance(cap, (int, float)):
        out.append(f"broker capacity {cap:.0f} connections/s (measured just before and after the load)")
    if lim:
        out.append(
            f"open files {lim.get('nofile')} (hard {lim.get('nofile_hard')}), "
            f"{lim.get('source_addrs')} source address(es) x {lim.get('ephemeral_ports')} ports"
        )
    bk = m.get("broker_key")
    if isinstance(bk, Mapping) and bk.get("profile"):
        signs = bk.get("token_signs") or {}
        full = sum(int(p.get("connacks") or 0) - int(p.get("resumed") or 0) for p in m.get("phases", []))
        out.append(
            f"broker key on the token, profile {bk['profile']} ({bk.get('wait')}): {signs.get('load')} "
            f"signatures on it for {full} full handshakes in the load (the shim's count)"
        )
    cl = m.get("cluster")
    if isinstance(cl, Mapping) and cl.get("workers") is not None:
        nodes = {w.get("node") for w in cl["workers"]}
        lost = cl.get("lost") or []
        out.append(
            f"clients spread over {len(cl['workers'])} generator(s) on {len(nodes)} cluster node(s)"
            + (f", {len(lost)} lost mid-run (the counts are the others')" if lost else "")
            + "; phases merged: counts added, histograms bin by bin"
        )
    se = m.get("se")
    if isinstance(se, Mapping) and se.get("profile"):
        out.append(f"client signing in secure element {se['profile']} ({se.get('source', 'its profile')})")
    return out


def phases(m: Mapping[str, Any]) -> Grid:
    """One row per phase: clients up, CONNACK and PUBACK (QoS 2: PUBCOMP) percentiles, refusals, failures,
    broker CPU."""
    qos = m.get("config", {}).get("qos")
    q = 2 if qos == 2 else 1
    ack = "PUBCOMP" if q == 2 else "PUBACK"
    head = [*PHASE_HEAD[:4], f"{ack} P50 / P99", f"acked / QoS {q} sent", *PHASE_HEAD[6:]]
    g = Grid(PHASES_TITLE, head)
    for p in m.get("phases", []):
        cpu = p.get("broker_utilisation")
        up_after = p.get("time_all_up_s") if p.get("phase") != "hold" else None
        g.add(
            [
                str(p.get("phase")),
                f"{p.get('up_at_end')} / {p.get('clients')}",
                _s(up_after) if up_after is not None or p.get("phase") != "hold" else "-",
                f"{_ms(p.get('connack_p50_ms'))} / {_ms(p.get('connack_p99_ms'))}",
                f"{_ms(p.get('puback_p50_ms'))} / {_ms(p.get('puback_p99_ms'))}",
                f"{p.get('pubacks', 0)} / {p.get(f'published_qos{q}', 0)}",
                f"{p.get('refused', 0)} / {p.get('failed', 0)} / {p.get('dropped', 0)}",
                "-" if not isinstance(cpu, (int, float)) else f"{cpu:.0%}",
            ]
        )
        errs = p.get("errors") or {}
        if errs:
            top = sorted(errs.items(), key=lambda kv: -kv[1])[:3]
            g.notes.append(f"{p.get('phase')}: " + "; ".join(f"{n} x {why}" for why, n in top))
    g.notes.append(
        f"CONNACK from the TCP connect's start; {ack} from the PUBLISH handed to TLS"
        + (" (PUBREC answered with PUBREL on the way)" if q == 2 else "")
    )
    return g


def storm_model(m: Mapping[str, Any]) -> Grid | None:
    """The storm beside fleet's model, both variants (ratios measured / modelled)."""
    fm = m.get("fleet_model")
    if not isinstance(fm, Mapping) or not fm.get("models"):
        return None
    meas = fm.get("measured", {})
    rows = [
        [
            str(name),
            _s(meas.get("time_all_back_s")),
            _s(mod.get("time_all_back_s")),
            _ratio(mod.get("ratio_time_all_back_s")),
            _s(meas.get("wait_p50_s")),
            _s(mod.get("wait_p50_s")),
            _ratio(mod.get("ratio_wait_p50_s")),
        ]
        for name, mod in fm["models"].items()
    ]
    notes = [str(fm["note"])] if fm.get("note") else []
    band = fm.get("burst_band")
    if isinstance(band, Mapping):  # a burst: where the measured figures fall between the first wave's two ends
        parts = [
            f"{what} {band[k].get('where')}"
            for k, what in (("time_all_back_s", "time until all back"), ("wait_p50_s", "median wait"))
            if isinstance(band.get(k), Mapping) and band[k].get("where")
        ]
        if parts:
            notes.append(
                "burst band (only the backlog gets in .. an idle broker takes every first SYN): " + ", ".join(parts)
            )
    sens = fm.get("sensitivity")
    if isinstance(sens, Mapping) and sens.get("knife_edge") and sens.get("time_all_back_s_range"):
        lo, hi = sens["time_all_back_s_range"]
        notes.append(
            f"time until all back on a knife edge: {lo:.1f} to {hi:.1f} s within +-10 % of the capacity (the last "
            "clients return on a rung of TCP's doubling retransmissions); judge the wait percentiles or repeats"
        )
    acc = fm.get("accept_per_s")
    if fm.get("backlog") is not None and isinstance(acc, (int, float)):  # the model's inputs, with their source
        notes.append(
            f"listen backlog {fm['backlog']} ({fm.get('backlog_from') or 'mosquitto started here'}); accept rate "
            f"{acc:,.0f}/s ({fm.get('accept_from')})"
        )
    return Grid(MODEL_TITLE, list(MODEL_HEAD), rows, notes)


def clients_over_time(m: Mapping[str, Any]) -> list[tuple[str, list[tuple[float, float]]]]:
    """Clients up and connecting per second of the run (the generator's one-second intervals)."""
    iv = [x for x in m.get("intervals", []) if isinstance(x, Mapping)]
    return [
        (name, [(float(x.get("t_s", 0.0)), float(x.get(key, 0))) for x in iv])
        for name, key in (("up", "up"), ("connecting", "connecting"))
    ]
