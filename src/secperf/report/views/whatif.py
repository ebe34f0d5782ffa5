"""Prediction next to measurement: each what-if series matched with the measured connection
series of the same protocol, key source, handshake and network in the same Result (a scenario's
[whatif] block predicts next to the rows it measured)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.result_schema import Result, Series, WhatifDerived

Cell = tuple[Any, Any, Any, Any]  # (protocol, key source, handshake, network) as the labels state them


def whatif_series(doc: Result) -> list[Series]:
    """The what-if series that hold a prediction (a failed prediction is listed with the failures)."""
    return [s for s in doc.series if s.kind == "whatif" and s.derived_as(WhatifDerived).usable is not None]


def _measured(doc: Result) -> dict[Cell, Series]:
    out: dict[Cell, Series] = {}
    for s in doc.series:
        if s.kind != "connect" or s.summary is None:
            continue
        lb = s.labels
        if lb.get("client", "probe") != "probe" or lb.get("auth", "mtls") != "mtls":
            continue
        out[(lb["protocol"], lb["key_source"], lb["handshake"], lb.get("network") or "loopback")] = s
    return out


def _err(pred: float | None, meas: float | None) -> float | None:
    return None if pred is None or not meas else (pred - meas) / meas


def predicted_vs_measured(doc: Result) -> list[dict[str, Any]]:
    """Rows of (protocol, key, handshake, network, measured P50/P95, predicted P50/P95, errors);
    measured values are None where the run did not measure that cell."""
    measured = _measured(doc)
    rows: list[dict[str, Any]] = []
    for s in whatif_series(doc):
        lb, u = s.labels, s.derived_as(WhatifDerived).usable
        assert u is not None  # whatif_series keeps the series with a prediction
        if lb.get("security") == "none" or lb.get("until", "response") != "response":
            continue  # measured connect rows have security and stop at the response
        key: Cell = (lb.get("protocol"), lb.get("key"), lb.get("handshake"), lb.get("network"))
        m = measured.get(key)
        p50 = m.p50_us if m is not None else None
        p95 = None
        if m is not None and m.values_us:
            p95 = float(np.percentile(m.values_us, 95))
        rows.append(
            {
                "protocol": key[0],
                "key": key[1],
                "handshake": key[2],
                "network": key[3],
                "measured_p50_us": p50,
                "measured_p95_us": p95,
                "measured_n": m.summary.n if m is not None and m.summary is not None else None,
                "predicted_p50_us": u.p50_us,
                "predicted_p95_us": u.p95_us,
                "p50_error": _err(u.p50_us, p50),
                "p95_error": _err(u.p95_us, p95),
            }
        )
    return rows


# --- the cost table: what the flights use first ----------------------------------------------------
def _cost_row(index: dict[tuple[str, str], dict[str, Any]], party: str, op: str) -> dict[str, Any] | None:
    """The cost-table row a flight's (party, op) is priced from, resolved as the model resolves it
    (model/costs.py CostTable.get): the party's own row, the row for both parties, and for a
    base:PROTO:HS:KEYKIND:PARTY op the same with a software key, then the generic base:PARTY."""
    for p in (party, "both"):
        if (p, op) in index:
            return index[(p, op)]
    parts = op.split(":")
    if op.startswith("base:") and len(parts) == 5:
        if parts[3] != "software":
            alt = ":".join(parts[:3] + ["software", parts[4]])
            for p in (party, "both"):
                if (p, alt) in index:
                    return index[(p, alt)]
        return index.get(("both", f"base:{party}"))
    return None


def cost_rows_by_use(doc: Result) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The what-if cost table split in two: the rows the scenarios' flights use, in the order the
    flights first use them, each with `used_as` (the flights' op names priced by it); and the rest."""
    a = doc.analysis.whatif
    table = a.cost_table.rows if a is not None and a.cost_table is not None else []
    rows: list[dict[str, Any]] = [{"party": r.party, "op": r.op, "us": r.us, "source": r.source} for r in table]
    index = {(r["party"], r["op"]): r for r in rows}
    used: dict[int, dict[str, Any]] = {}
    for s in whatif_series(doc):
        for f in s.derived_as(WhatifDerived).flights or []:
            for op in f.get("ops", ()):
                r = _cost_row(index, f["sender"], op)
                if r is None:
                    continue
                u = used.setdefault(id(r), {**r, "used_as": []})
                name = f"{f['sender']} {op}"
                if name not in u["used_as"]:
                    u["used_as"].append(name)
    seen = set(used)
    return list(used.values()), [r for r in rows if id(r) not in seen]
