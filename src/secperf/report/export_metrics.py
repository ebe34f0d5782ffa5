"""The operational metrics of a Result (model/opmetrics.py) in the Prometheus text exposition
format, written by the official client library (prometheus_client's registry and exposition), so
names, HELP/TYPE lines, label escaping and number formatting follow the format exactly."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry, Gauge, generate_latest

from ..model.opmetrics import HELP, metrics


def registry_of(doc: dict) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=True)
    rows = metrics(doc)
    gauges: dict[str, Gauge] = {}
    for r in rows:
        names = ("run_id", *sorted(r["labels"]))
        key = r["metric"] + "|" + ",".join(names)
        if key not in gauges:
            if any(k.startswith(r["metric"] + "|") for k in gauges):
                continue  # one label set per metric name (the exposition format's rule)
            gauges[key] = Gauge(r["metric"], HELP.get(r["metric"], r["metric"]), names, registry=reg)
        gauges[key].labels(run_id=doc.get("run_id", ""), **r["labels"]).set(r["value"])
    return reg


def exposition(doc: dict) -> str:
    return generate_latest(registry_of(doc)).decode("utf-8")


def write_metrics(doc: dict, path: str | Path) -> None:
    from ..core.store import atomic_write
    atomic_write(Path(path), exposition(doc), what="--metrics")
