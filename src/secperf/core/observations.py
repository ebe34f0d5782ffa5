"""Every number of a Result as tidy observations: one record per (series or analysis row, metric,
statistic), in the vocabulary of the Result's kind. The CSV export, the Prometheus export and
`secperf compare` all read Results through this one module, so the three never disagree on what a
kind's numbers are or what they are called.

A record is an `Observation` (a TypedDict: a plain dict with these keys):
  kind       the series kind (crypto, handshake, signer, jwt, connect, server, whatif, device,
             device_crypto, cortexm) or the analysis it comes from (can, fleet, plan)
  id         the series id, or a stable id of the analysis row (fleet/100/exponential, plan/PATTERN/best)
  labels     the identifying columns of that kind (ID_COLUMNS[kind]), in that order; a value the
             Result does not state is ""
  metric     what was measured or predicted, in the kind's words (handshake_wall, server_cpu_per_handshake)
  statistic  n, mean, sd, min, p50, p90, p95, p99, max, p50_ci95_lo, p50_ci95_hi, value (a single
             number), median (of deterministic counts), low/high (a model's band)
  value      a finite float, never None: a number the Result does not hold gives no record
  unit       us, ms, s, 1/s, bytes, bytes/s, ns/byte, J, mJ, ratio, count, instructions, cycles, bool
  counter    True for counts of events that only grow during a run (handshakes, failures, samples)

Units stay the Result's own (µs for measured times, ms for the plan's numbers, s for a fleet);
the Prometheus export converts to base units. "netem" is not a kind of its own: handshake,
connect and jwt series over an emulated link carry the link in their `network` column.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, TypedDict

from .analysis_schema import FleetAnalysis, PlanAnalysis
from .result_schema import (
    ConnectDerived,
    CortexmDerived,
    CountedDerived,
    CryptoDerived,
    DeviceCryptoDerived,
    DeviceDerived,
    HandshakeDerived,
    JwtDerived,
    MqttDerived,
    Percentiles,
    Result,
    Series,
    ServerDerived,
    Summary,
    WhatifDerived,
)


class Observation(TypedDict):
    """One number of a Result (the fields of the module's docstring)."""

    kind: str
    id: str
    labels: dict[str, str]
    metric: str
    statistic: str
    value: float
    unit: str
    counter: bool


# what `_Rows.summary` reads: a series' Summary, a what-if Percentiles, or an analysis' plain summary
SummaryLike = Summary | Percentiles | Mapping[str, Any]

ID_COLUMNS: dict[str, tuple[str, ...]] = {
    "crypto": ("alg", "op", "size_bytes", "library"),
    "handshake": ("server", "tls", "proto", "mode", "ciphersuites", "groups", "cert_type", "mtls", "network"),
    "signer": ("profile", "key_type", "mode"),
    "jwt": ("profile", "key_type", "mode", "key_session", "network"),
    "connect": ("protocol", "client", "key_source", "handshake", "auth", "tls", "server", "network"),
    "server": (
        "server",
        "protocol",
        "tls",
        "key",
        "key_source",
        "client_auth",
        "resume_ratio",
        "chain_depth",
        "concurrency",
        "offered_per_s",
    ),
    "mqtt": ("phase", "latency", "broker", "tls", "qos", "clients"),
    "whatif": ("protocol", "handshake", "group", "cert", "key", "network", "until"),
    "device": ("device", "stack", "tls", "group", "suite", "mode", "server_cert", "client_cert", "phase", "config"),
    "device_crypto": ("device", "stack", "op", "config"),
    "cortexm": ("target", "mac", "op", "size_bytes"),
    "can": ("device", "mac", "fd", "k"),
    "fleet": ("devices", "policy", "capacity_per_s", "resumed_share", "timeout_s", "source"),
    "plan": ("pattern", "design", "measures", "verdict"),
}
# the name of the timed quantity of a measured series, per kind (its timer in the Result)
TIMED = {
    "crypto": "time_per_op",
    "handshake": "handshake_wall",
    "signer": "sign_time",
    "jwt": "request_time",
    "connect": "establishment",
    "server": "server_cpu_per_handshake",
    "whatif": "connection_setup",
}
CPU = {"crypto": "cpu_per_op", "handshake": "client_cpu", "connect": "client_cpu", "jwt": "cpu"}
SUMMARY_STATS = ("n", "mean", "sd", "min", "p50", "p90", "p95", "p99", "max")
MEASURED = ("crypto", "handshake", "signer", "jwt", "connect", "server")


def _num(v: object) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)) and math.isfinite(v):
        return float(v)
    return None


def _labels(kind: str, lab: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for c in ID_COLUMNS.get(kind, ()):
        v = lab.get(c)
        out[c] = "" if v is None else ("true" if v is True else "false" if v is False else str(v))
    return out


class _Rows:
    def __init__(self, kind: str, sid: str, labels: dict[str, str]):
        self.kind, self.sid, self.labels = kind, sid, labels
        self.out: list[Observation] = []

    def add(self, metric: str, statistic: str, value: object, unit: str, counter: bool = False) -> None:
        v = _num(value)
        if v is not None:
            self.out.append(
                {
                    "kind": self.kind,
                    "id": self.sid,
                    "labels": self.labels,
                    "metric": metric,
                    "statistic": statistic,
                    "value": v,
                    "unit": unit,
                    "counter": counter,
                }
            )

    def summary(self, metric: str, sm: SummaryLike | None, unit_key: str = "us") -> None:
        if sm is None or (isinstance(sm, Mapping) and not sm):
            return

        def field(name: str) -> Any:  # a declared field or an extra one (a what-if's P95), as set
            return sm.get(name) if isinstance(sm, Mapping) else getattr(sm, name, None)

        self.add(metric, "n", field("n"), "count", counter=True)
        for st in SUMMARY_STATS[1:]:
            self.add(metric, st, field(f"{st}_{unit_key}"), unit_key)
        ci = field(f"median_ci95_{unit_key}") or [None, None]
        if isinstance(ci, list) and len(ci) == 2:
            self.add(metric, "p50_ci95_lo", ci[0], unit_key)
            self.add(metric, "p50_ci95_hi", ci[1], unit_key)


def _measured(s: Series, r: _Rows) -> None:
    kind = s.kind
    r.summary(TIMED.get(kind, "time"), s.summary)
    if kind in CPU:
        r.summary(CPU[kind], s.cpu_summary)
    d = s.derived
    if isinstance(d, CryptoDerived):
        r.add("ops_per_s", "value", d.ops_per_s, "1/s")
        r.add("bytes_per_s", "value", d.bytes_per_s, "bytes/s")
        r.add("ns_per_byte", "value", d.ns_per_byte, "ns/byte")
    if isinstance(d, HandshakeDerived):
        r.add("tcp_connect", "p50", d.tcp_connect_p50_us, "us")
        r.add("wait", "p50", d.wait_p50_us, "us")
        r.add("server_cpu", "p50", d.server_cpu_p50_us, "us")
    if isinstance(d, ConnectDerived):
        for ph in d.phases_p50_us or []:
            if isinstance(ph, dict):
                name = re.sub("[^a-z0-9]+", "_", str(ph.get("phase", "")).lower()).strip("_")
                r.add("phase_" + name, "p50", ph.get("p50_us"), "us")
        r.add("resumed", "value", d.resumed, "count", counter=True)
    if isinstance(d, JwtDerived):
        r.add("sign", "p50", d.sign_p50_us, "us")
        r.add("request", "p50", d.request_p50_us, "us")
    r.add("failures", "value", len(s.failures), "count", counter=True)


def _server(s: Series, r: _Rows) -> None:
    d = s.derived_as(ServerDerived)
    r.add("handshakes_per_s", "value", d.handshakes_per_s, "1/s")
    r.add("started_per_s", "value", d.started_per_s, "1/s")
    r.add("handshakes", "value", d.handshakes, "count", counter=True)
    r.add("resumed", "value", d.resumed, "count", counter=True)
    r.add("failed", "value", d.failed, "count", counter=True)
    r.add("resumed_share", "value", d.resumed_share, "ratio")
    r.add("server_utilisation", "value", d.server_utilisation, "ratio")
    r.add("server_cpu_per_handshake", "value", d.server_cpu_us_per_handshake, "us")
    r.add("loadgen_cpu_per_handshake", "value", d.loadgen_cpu_us_per_handshake, "us")
    for metric, src in (("latency", d.latency_ms), ("handshake_latency", d.handshake_ms)):
        if src is not None:
            for k in ("p50_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms"):
                if k in src.model_fields_set:
                    r.add(metric, k.removesuffix("_ms"), getattr(src, k), "ms")
    sp = d.split or {}
    for k in ("key_op_us", "rest_us"):
        r.add("server_cpu_" + k.removesuffix("_us"), "value", sp.get(k), "us")
    # per counting interval (the sample a comparison uses): CPU per handshake and the rate
    r.summary("server_cpu_per_handshake_interval", s.summary)
    rates = interval_rates(s)
    if rates:
        r.add("handshakes_per_s_interval", "n", len(rates), "count", counter=True)
        r.add("handshakes_per_s_interval", "mean", sum(rates) / len(rates), "1/s")
        r.add("handshakes_per_s_interval", "min", min(rates), "1/s")
        r.add("handshakes_per_s_interval", "max", max(rates), "1/s")
    r.add("failures", "value", len(s.failures), "count", counter=True)


# an mqtt-load phase's counts (app/mqtt_load_series.py), each a single number of the run
MQTT_COUNTS = (
    ("attempts", "count", True),
    ("connacks", "count", True),
    ("failed", "count", True),
    ("refused", "count", True),
    ("failed_connections", "count", True),
    ("dropped", "count", True),
    ("gave_up", "count", True),
    ("time_all_up_s", "s", False),
    ("published", "count", True),
    ("pubacks", "count", True),
    ("pubacks_outstanding_at_end", "count", True),
    ("broker_utilisation", "ratio", False),
)


def _mqtt(s: Series, r: _Rows) -> None:
    """One latency of one mqtt-load phase: its percentiles as the phase states them (ms), its n and
    mean (the mean of the binned values), the phase's counts."""
    d = s.derived_as(MqttDerived)
    metric = d.latency or "latency"
    r.add(metric, "n", d.n, "count", counter=True)
    if s.summary is not None:
        r.add(metric, "mean", s.summary.mean_us / 1000.0, "ms")
    for q in ("p50", "p90", "p99", "max"):
        r.add(metric, q, getattr(d, f"{q}_ms"), "ms")
    for key, unit, counter in MQTT_COUNTS:
        name = "all_up_after" if key == "time_all_up_s" else key
        r.add(name, "value", getattr(d, key), unit, counter=counter)


def interval_rates(s: Series) -> list[float]:
    """Handshakes per second in each of a server series' counting intervals (all generator
    processes' counts added per interval; the interval length from consecutive interval times)."""
    per: dict[int, float] = {}
    for m in s.samples:
        t_s, count = _num(m.get("t_s")), _num(m.get("handshakes"))
        if m.get("type") == "interval" and t_s is not None and count is not None:
            t = round(t_s)  # the interval rule of measure/server.py (interval_cpu_per_hs)
            per[t] = per.get(t, 0) + count
    out: list[float] = []
    prev = 0.0
    for t in sorted(per):
        if t > prev:
            out.append(per[t] / (t - prev))
        prev = t
    return out


def _whatif(s: Series, r: _Rows) -> None:
    r.summary("connection_setup", s.summary)
    d = s.derived_as(WhatifDerived)
    if d.handshake is not None:
        r.summary("handshake", d.handshake)
    for k, v in (d.breakdown_mean_us or {}).items():
        r.add(f"breakdown_{k}", "mean", v, "us")
    r.add("bytes_up", "mean", d.bytes_up_mean, "bytes")
    r.add("bytes_down", "mean", d.bytes_down_mean, "bytes")
    r.add("packets_up", "mean", d.packets_up_mean, "count")
    r.add("packets_down", "mean", d.packets_down_mean, "count")
    r.add("round_trips", "value", d.round_trips, "count")
    r.add("failed_share", "value", d.failed_share, "ratio")
    en = d.energy or {}
    for k in ("total_mj", "radio_mj", "cpu_mj", "se_mj"):
        r.add("energy_" + k.removesuffix("_mj"), "mean", en.get(k), "mJ")
    # --baseline: what security adds to this row (secured − the same exchange without security)
    sec = d.security_cost or {}
    for key, metric, st, unit in (
        ("time_p50_us", "security_adds_time", "p50", "us"),
        ("time_p95_us", "security_adds_time", "p95", "us"),
        ("time_mean_us", "security_adds_time", "mean", "us"),
        ("bytes", "security_adds_bytes", "mean", "bytes"),
        ("radio_on_us", "security_adds_radio_on", "mean", "us"),
        ("energy_mj", "security_adds_energy", "mean", "mJ"),
    ):
        a = sec.get(key)
        if isinstance(a, dict):
            r.add(metric, st, a.get("adds"), unit)


def _device(s: Series, r: _Rows) -> None:
    d = s.derived_as(CountedDerived)
    r.add("handshakes_counted", "value", len(s.samples), "count", counter=True)
    r.add("instructions", "median", d.instructions_median, "instructions")
    r.add("instructions", "min", d.instructions_min, "instructions")
    r.add("instructions", "max", d.instructions_max, "instructions")
    r.add("instructions", "cold", d.instructions_cold if isinstance(d, DeviceCryptoDerived) else None, "instructions")
    r.add(
        "app_instructions",
        "median",
        d.app_instructions_median if isinstance(d, DeviceDerived) else None,
        "instructions",
    )
    t = d.time
    if t is not None:
        r.add("cycles", "value", t.cycles, "cycles")
        r.add("cycles", "low", t.cycles_low, "cycles")
        r.add("cycles", "high", t.cycles_high, "cycles")
        r.add("handshake_time", "value", t.ms, "ms")
        r.add("handshake_time", "low", t.ms_low, "ms")
        r.add("handshake_time", "high", t.ms_high, "ms")
    r.add("stack", "max", d.stack_bytes_max, "bytes")
    fp = d.footprint or {}
    for k in ("flash", "ram_static"):
        r.add(k, "value", fp.get(k), "bytes")
    r.add("failures", "value", len(s.failures), "count", counter=True)


def _cortexm(s: Series, r: _Rows) -> None:
    d = s.derived_as(CortexmDerived)
    r.add("instructions", "value", d.instructions, "instructions")
    r.add("instructions_per_byte", "value", d.instructions_per_byte, "instructions")
    r.add("stack", "max", d.stack_bytes, "bytes")


def series_observations(s: Series) -> list[Observation]:
    kind = s.kind
    r = _Rows(kind, s.id, _labels(kind, s.labels))
    if kind == "server":
        _server(s, r)
    elif kind in MEASURED:
        _measured(s, r)
    elif kind == "mqtt":
        _mqtt(s, r)
    elif kind == "whatif":
        _whatif(s, r)
    elif kind in ("device", "device_crypto"):  # instruction counts under QEMU: a handshake, or one primitive
        _device(s, r)
    elif kind == "cortexm":
        _cortexm(s, r)
    else:  # a kind this module does not know yet: its timed summary, if any
        r.summary("time", s.summary)
    return r.out


def _can(can: dict[str, Any]) -> list[Observation]:
    out: list[Observation] = []
    for an in (can, can.get("fd") or {}):
        for sw in an.get("sweeps") or []:
            for row in sw.get("rows") or []:
                lab = {"device": row.get("device"), "mac": row.get("mac"), "fd": row.get("fd"), "k": row.get("k")}
                r = _Rows(
                    "can",
                    f"can/{lab['device']}/{lab['mac']}/{'fd' if lab['fd'] else 'classic'}/k{lab['k']}",
                    _labels("can", lab),
                )
                r.add("cpu_load", "value", row.get("cpu_load"), "ratio")
                r.add("bus_load", "value", row.get("bus_load"), "ratio")
                r.add("extra_bus_load", "value", row.get("extra_bus_load"), "ratio")
                r.add("mac_cycles_per_period", "value", row.get("mac_cycles_per_period"), "cycles")
                r.add("frames_per_period", "value", row.get("frames_per_period"), "count")
                r.add("fits_period", "value", row.get("fits_period"), "bool")
                r.add("fits_bus", "value", row.get("fits_bus"), "bool")
                r.add("within_cpu_budget", "value", row.get("within_cpu_budget"), "bool")
                out += r.out
            lab = {"device": sw.get("device"), "mac": sw.get("mac"), "fd": sw.get("fd"), "k": ""}
            sid = f"can/{lab['device']}/{lab['mac']}/{'fd' if lab['fd'] else 'classic'}"
            r = _Rows("can", sid, _labels("can", lab))
            r.add("best_k", "value", sw.get("best_k"), "count")
            out += r.out
    return out


def _fleet(fleet: FleetAnalysis) -> list[Observation]:
    out: list[Observation] = []
    for run in fleet.runs:
        m = run.model or {}
        key = run.key  # `fleet --key a,b`: one set of runs per server key, each its own rows
        r = _Rows(
            "fleet",
            f"fleet/{m.get('devices')}/{m.get('policy')}" + (f"/{key}" if key else ""),
            _labels("fleet", {**m, "source": "model"}),
        )
        r.add("time_all_back", "value", run.time_all_back_s, "s")
        r.add("devices_back", "value", run.devices_back, "count")
        r.add("gave_up", "value", run.gave_up, "count")
        r.add("failed_attempts", "value", run.failed_attempts, "count")
        r.add("peak_queue", "value", run.peak_queue, "count")
        for st, v in (run.wait_s or {}).items():
            r.add("wait", st, v, "s")
        out += r.out
    for rep in fleet.replays or []:  # `fleet --replay`: a real storm beside the model at its capacity
        lab = {
            "devices": rep.get("clients"),
            "policy": rep.get("policy"),
            "capacity_per_s": rep.get("capacity_per_s"),
            "timeout_s": rep.get("timeout_s"),
        }
        base = f"fleet-replay/{rep.get('clients')}/{rep.get('policy')}"
        sources: list[tuple[str, dict[str, Any]]] = [("measured", rep.get("measured") or {})] + [
            (f"model: {k}", v) for k, v in (rep.get("models") or {}).items()
        ]
        for source, nums in sources:
            r = _Rows("fleet", f"{base}/{source}", _labels("fleet", {**lab, "source": source}))
            r.add("time_all_back", "value", nums.get("time_all_back_s"), "s")
            for st in ("p50", "p90", "p99"):
                r.add("wait", st, nums.get(f"wait_{st}_s"), "s")
            r.add("devices_back", "value", nums.get("back"), "count")
            r.add("gave_up", "value", nums.get("gave_up"), "count")
            r.add("failed_attempts", "value", nums.get("failed_attempts"), "count")
            r.add("time_all_back_measured_over_model", "value", nums.get("ratio_time_all_back_s"), "ratio")
            out += r.out
        if rep.get("failed"):
            r = _Rows("fleet", f"{base}/measured", _labels("fleet", {**lab, "source": "measured"}))
            r.add("failures", "value", 1, "count", counter=True)
            out += r.out
    return out


_PLAN_UNITS = (
    ("bytes_per_day", "bytes/day"),
    ("_per_day", "1/day"),
    ("_ms", "ms"),
    ("_j", "J"),
    ("_mj", "mJ"),
    ("_share", "ratio"),
    ("_bytes", "bytes"),
    ("_days", "days"),
    ("_s", "s"),
)
_PCT = re.compile(r"^(.+)_p(\d+)_ms$")


def _plan(plan: PlanAnalysis) -> list[Observation]:
    out: list[Observation] = []
    for p in plan.patterns:
        for design in ("before", "best", "without_security"):
            d = getattr(p, design)
            if not isinstance(d, dict):
                continue
            lab = {
                "pattern": p.pattern,
                "design": design,
                "measures": "+".join(d.get("measures") or []),
                "verdict": p.verdict if design != "without_security" else "",
            }
            r = _Rows("plan", f"plan/{p.pattern}/{design}", _labels("plan", lab))
            nums = d.get("numbers") or {}
            for k, v in nums.items():
                if k == "latency_pq_ms":  # the requirement's percentile: latency / p<q>
                    q = nums.get("latency_percentile")
                    qn = _num(q)
                    r.add("latency", f"p{qn:g}".replace(".", "_") if qn is not None else "pq", v, "ms")
                    continue
                m = _PCT.match(k)
                if m:  # latency_p50_ms -> latency / p50; p999 -> p99_9
                    digits = m.group(2)
                    r.add(m.group(1), "p" + (digits[:2] + "_" + digits[2:] if len(digits) > 2 else digits), v, "ms")
                    continue
                for suffix, unit in _PLAN_UNITS:
                    if k.endswith(suffix):
                        r.add(k if "per_day" in suffix else k[: -len(suffix)], "value", v, unit)
                        break
            r.add("passes", "value", d.get("passes"), "bool")
            out += r.out
    return out


def observations(doc: Result) -> list[Observation]:
    """Every number of the Result, series first, then its analyses (can, fleet, plan)."""
    out: list[Observation] = []
    for s in doc.series:
        out += series_observations(s)
    an = doc.analysis
    if an.can is not None:
        out += _can(an.can)
    if an.fleet is not None:
        out += _fleet(an.fleet)
    if an.plan is not None:
        out += _plan(an.plan)
    return out


def verdicts(doc: Result) -> dict[str, str]:
    """The judgements a Result states in words: a plan's verdict per pattern."""
    plan = doc.analysis.plan
    if plan is None:
        return {}
    return {p.pattern: p.verdict for p in plan.patterns if p.verdict}
