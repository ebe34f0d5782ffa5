"""The series of an mqtt-load Result: one per phase and latency that holds samples, so `secperf
metrics` and `secperf compare` read an MQTT load as they read any measured run.

Names: "<latency> <phase>", e.g. "connack ramp", "puback hold", "connack storm", "wait storm". The
phase is the word the run's own table shows (ramp: clients connecting at --connect-rate; hold: every
client up, publishing; storm: all dropped and coming back), so a series id leads to its table row; the
latency goes first because that is what a user compares ("connack" across phases reads as one
family). The latencies:
  connack    TCP connect started → CONNACK received (the whole MQTT/TLS connection set-up)
  handshake  TCP connect started → TLS handshake done (the part of it before CONNECT)
  puback     PUBLISH handed to TLS → its acknowledgement (PUBACK at QoS 1, PUBCOMP at QoS 2)
  wait       the client dropped (or the phase started) → CONNACK (the storm's recovery per client)
A latency a phase did not sample (no connects while holding, no QoS 1/2 publishes) makes no series;
"wait" is kept for the storm only (in the ramp it is the time since the ramp began: the connect
rate's schedule, not a latency).

Values: the phase keeps a histogram, not its samples (the generator writes bins; a cluster's phases
are merged bin by bin, core/histogram.py). `values_us` holds every sample as its bin's highest value
(at most 1.6 % above the sample, never below), so the histogram is recovered exactly from them
(`Histogram.of(values_us)`) and the comparison's tests run on them. The percentiles a reader shows are
the phase's own (derived p50_ms ... max_ms: the generator's nearest rank over its exact samples, or
the merged histogram's); the summary is computed from the binned values and is labelled so in the
timer."""

from __future__ import annotations

from typing import Any

from ..core.histogram import SCHEME, Histogram, bin_lower, bin_width
from ..core.result import finalize_series, new_series
from ..core.result_schema import Series

__all__ = ["LATENCIES", "mqtt_series", "series_id"]

# (the phase line's histogram prefix, the series' latency word, the timer's start and end)
LATENCIES = (
    ("connack", "connack", "TCP connect started", "CONNACK received"),
    ("hs", "handshake", "TCP connect started", "TLS handshake done"),
    ("puback", "puback", "PUBLISH handed to TLS", "PUBACK (QoS 1) or PUBCOMP (QoS 2) received"),
    ("wait", "wait", "client dropped (or the phase started)", "CONNACK received"),
)
CONNECT_COUNTS = ("attempts", "connacks", "failed", "refused", "dropped", "gave_up", "time_all_up_s")
VALUES_RULE = (
    "each sample as its histogram bin's highest value (at most 1.6 % above it); the summary is computed "
    "from these values, derived p50_ms ... max_ms are the phase's own percentiles"
)


def series_id(latency: str, phase: str) -> str:
    return f"{latency} {phase}"


def _labels(cfg: dict[str, Any], phase: str, latency: str, broker: str) -> dict[str, Any]:
    return {
        "phase": phase,
        "latency": latency,
        "broker": broker,
        "tls": cfg.get("tls"),
        "qos": cfg.get("qos"),
        "clients": cfg.get("clients"),
        "key": cfg.get("key"),
        "client_auth": cfg.get("client_auth"),
    }


def _values(h: Histogram) -> list[float]:
    return [float(bin_lower(i) + bin_width(i) - 1) for i in sorted(h.counts) for _ in range(h.counts[i])]


def mqtt_series(m: dict[str, Any], broker: str = "mosquitto") -> list[Series]:
    """The series of an mqtt-load measurement (`m`: what measure/mqtt_load returns, its phases with
    their histograms), in phase order, latency within a phase."""

    cfg = m.get("config") or {}
    cluster = bool(m.get("cluster"))
    out: list[Series] = []
    for ph in m.get("phases") or []:
        name = str(ph.get("phase"))
        for key, latency, start, end in LATENCIES:
            h = Histogram.from_pairs(ph.get(f"{key}_hist_us") or [], f"phase {name} {key}_hist_us")
            if h.n == 0 or (key == "wait" and name != "storm"):  # outside a storm a wait is the ramp's schedule
                continue
            s = new_series(
                series_id(latency, name),
                kind="mqtt",
                labels=_labels(cfg, name, latency, broker),
                timer={
                    "name": latency,
                    "start": start,
                    "end": end,
                    "unit": "us",
                    "value": VALUES_RULE,
                    "tool": "secperf-mqttload",
                    "clock": "CLOCK_MONOTONIC",
                },
            )
            s.values_us = _values(h)
            d: dict[str, Any] = {
                "phase": name,
                "latency": latency,
                "n": h.n,
                "hist_us": h.to_pairs(),
                "bins": SCHEME,
                "percentiles_from": "the merged histograms' nearest rank (the bin's highest value)"
                if cluster
                else "the generator's nearest rank over its samples",
            }
            if key != "hs":  # the generator writes no percentiles of the handshake part: read from its bins
                d.update({f"{q}_ms": ph.get(f"{key}_{q}_ms") for q in ("p50", "p90", "p99", "max")})
            else:
                pct = h.percentiles_ms()
                d.update({k: pct[k] for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms")})
                d["percentiles_from"] = "the histogram's nearest rank (the bin's highest value)"
            if key == "connack":
                d.update({k: ph.get(k) for k in CONNECT_COUNTS})
                d["failed_connections"] = (ph.get("failed") or 0) + (ph.get("refused") or 0)
                d["errors"] = ph.get("errors") or None
                d["broker_cpu_s"] = ph.get("broker_cpu_s")
                d["broker_utilisation"] = ph.get("broker_utilisation")
            if key == "puback":
                d["published"] = sum(ph.get(f"published_qos{q}") or 0 for q in (1, 2))
                d["pubacks"] = ph.get("pubacks")
                d["pubacks_outstanding_at_end"] = ph.get("pubacks_outstanding_at_end")
            s.derived = {k: v for k, v in d.items() if v is not None}
            out.append(finalize_series(s))
    return out
