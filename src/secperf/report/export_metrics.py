"""A Result in the Prometheus text exposition format (`secperf metrics RESULT`, `--metrics FILE`),
written by the official client library (prometheus_client's collector and exposition), so names,
HELP/TYPE lines, label escaping and number formatting follow the format exactly.

Two parts:
- every kind's headline numbers, from core/observations.py (the same numbers `--csv` writes):
  `secperf_<kind>_<metric>[_<stat>]_<base unit>`. Units are converted to Prometheus base units
  (µs and ms → `_seconds`, mJ → `_joules`, 1/s → `_per_second`, shares → `_ratio`, `_bytes`,
  `_instructions`, `_cycles`); percentiles are one family with a `quantile` label (min is
  quantile 0, max quantile 1), mean and sd have families of their own (`..._mean_seconds`,
  `..._stddev_seconds`); counts of events that only grow (handshakes, failures, samples) are
  counters (`_total`). Labels: `series` (the series or row id) and the kind's identifying columns
  (protocol, handshake, key, network ...). Confidence bounds of the median are left to the CSV.
- study S2's operational metrics (model/opmetrics.py): signing success rate and mean time,
  session reuse, secure-element errors and time-outs, authentication time-outs, a plan's alert
  thresholds; labels run_id, kind, series.

A Result with nothing to export is an error naming why (exit 2), never an empty file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from ..core.errors import OutputError
from ..core.observations import ID_COLUMNS, Observation, observations
from ..core.result_schema import Result
from ..core.writes import atomic_write
from ..model.opmetrics import HELP, metrics
from .export import nothing_to_export

# unit of an observation -> (name suffix, factor to the base unit)
BASE_UNITS = {
    "us": ("seconds", 1e-6),
    "ms": ("seconds", 1e-3),
    "s": ("seconds", 1.0),
    "days": ("seconds", 86400.0),
    "ns/byte": ("seconds_per_byte", 1e-9),
    "mJ": ("joules", 1e-3),
    "J": ("joules", 1.0),
    "bytes": ("bytes", 1.0),
    "bytes/s": ("bytes_per_second", 1.0),
    "1/s": ("per_second", 1.0),
    "1/day": ("per_day", 1.0),
    "bytes/day": ("bytes_per_day", 1.0),
    "ratio": ("ratio", 1.0),
    "instructions": ("instructions", 1.0),
    "cycles": ("cycles", 1.0),
    "count": ("", 1.0),
    "bool": ("", 1.0),
}
QUANTILES = {
    "min": "0",
    "p50": "0.5",
    "median": "0.5",
    "p90": "0.9",
    "p95": "0.95",
    "p99": "0.99",
    "p99_9": "0.999",
    "max": "1",
}
SKIPPED_STATS = ("p50_ci95_lo", "p50_ci95_hi")
# a metric whose name already says its unit: the unit suffix says it once
RENAMED = {"ops_per_s": "ops", "bytes_per_s": "", "ns_per_byte": "time", "bytes_per_day": ""}
_NAME = re.compile(r"[^a-zA-Z0-9_]")


def _clean(name: str) -> str:
    return re.sub("_+", "_", _NAME.sub("_", name)).strip("_")


def family_name(o: Observation) -> tuple[str, str | None]:
    """(metric family name, quantile label or None) of an observation."""
    unit, _ = BASE_UNITS.get(o["unit"], (_clean(o["unit"]), 1.0))
    st, q = o["statistic"], QUANTILES.get(o["statistic"])
    metric = RENAMED.get(o["metric"], o["metric"])
    if unit.startswith(("per_second", "per_day")):
        metric = metric.replace("_per_s", "").replace("_per_day", "")
    parts = ["secperf", o["kind"], metric]
    if q is None and st not in ("value", "n"):
        parts.append({"sd": "stddev"}.get(st, st))
    if st == "n":
        parts.append("samples")
    if unit and not (o["counter"] or st == "n") and metric != unit:
        parts.append(unit)
    return _clean("_".join(parts)), q


class _Collector:
    def __init__(self, doc: Result):
        self.doc = doc

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        fams: dict[str, CounterMetricFamily | GaugeMetricFamily] = {}
        for o in observations(self.doc):
            if o["statistic"] in SKIPPED_STATS:
                continue
            name, q = family_name(o)
            counter = o["counter"] or o["statistic"] == "n"
            labels = ["series", *ID_COLUMNS.get(o["kind"], ())] + (["quantile"] if q is not None else [])
            key = name + ("_total" if counter else "")
            fam = fams.get(key)
            if fam is None:
                help_text = f"{o['kind']} {o['metric']} ({o['statistic']}, from {o['unit']})"
                fam = (CounterMetricFamily if counter else GaugeMetricFamily)(name, help_text, labels=labels)
                fams[key] = fam
            elif len(fam._labelnames) != len(labels):
                continue  # one label set per family (the format's rule); cannot happen within one kind
            _, factor = BASE_UNITS.get(o["unit"], ("", 1.0))
            values = [o["id"], *o["labels"].values()] + ([q] if q is not None else [])
            fam.add_metric(values, o["value"] * factor)
        yield from fams.values()
        yield from _operational(self.doc)


def _operational(doc: Result) -> Iterator[GaugeMetricFamily]:
    fams: dict[str, GaugeMetricFamily] = {}
    for r in metrics(doc):
        names = ["run_id", *sorted(r["labels"])]
        fam = fams.get(r["metric"])
        if fam is None:
            fam = fams[r["metric"]] = GaugeMetricFamily(r["metric"], HELP.get(r["metric"], r["metric"]), labels=names)
        elif list(fam._labelnames) != names:
            continue  # one label set per metric name (the exposition format's rule)
        fam.add_metric([doc.run_id, *(r["labels"][k] for k in sorted(r["labels"]))], r["value"])
    yield from fams.values()


def registry_of(doc: Result) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(_Collector(doc))
    return reg


def exposition(doc: Result) -> str:
    text = generate_latest(registry_of(doc)).decode("utf-8")
    if not text.strip():
        raise OutputError(f"nothing to export as metrics: {nothing_to_export(doc)}")
    return text


def write_metrics(doc: Result, path: str | Path) -> None:
    atomic_write(Path(path), exposition(doc), what="--metrics")
