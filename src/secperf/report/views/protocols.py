"""The protocol comparison of a what-if: one row per protocol (the asked key, the first network and
handshake of each), with what a device team weighs: bytes and packets each way, round trips, the
device's counted compute, the secure element's time, radio-on time, energy per connection, P50/P95
and what security adds. The terminal table and the HTML section and figure are drawn from these
rows alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.result_schema import Result, Series, WhatifDerived
from ..units import fmt_time_us
from .whatif import whatif_series

COLUMNS = (
    "protocol",
    "network",
    "library",
    "bytes up/down",
    "packets up/down",
    "round trips",
    "device compute",
    "secure element",
    "radio on",
    "energy / connection",
    "P50",
    "P95",
    "security adds (P50)",
)


def _main_rows(doc: Result) -> list[Series]:
    """The rows the user asked for (not the --baseline references), with a prediction."""
    return [s for s in whatif_series(doc) if not s.labels.get("role")]


def comparison_rows(doc: Result) -> list[dict[str, Any]]:
    """Per protocol (in the order asked), the first row of each network: [] for a run of one protocol."""
    rows = _main_rows(doc)
    skipped = (doc.analysis.whatif.not_counted if doc.analysis.whatif is not None else None) or {}
    if len({s.labels.get("protocol") for s in rows} | set(skipped)) < 2:
        return []
    seen: set[tuple[Any, Any]] = set()
    out: list[dict[str, Any]] = []
    for s in rows:
        lb = s.labels
        k = (lb.get("protocol"), lb.get("network"))
        if k in seen:
            continue
        seen.add(k)
        d = s.derived_as(WhatifDerived)
        u = d.usable
        if u is None:  # whatif_series keeps rows with a prediction
            continue
        b = d.breakdown_mean_us or {}
        sec = d.security_cost or {}
        adds = (sec.get("time_p50_us") or {}).get("adds")
        energy = d.energy or {}
        out.append(
            {
                "protocol": lb.get("protocol"),
                "handshake": lb.get("handshake"),
                "key": lb.get("key"),
                "network": lb.get("network"),
                "stack": lb.get("stack"),
                "library": lb.get("library"),
                "bytes_up": d.bytes_up_mean,
                "bytes_down": d.bytes_down_mean,
                "packets_up": d.packets_up_mean,
                "packets_down": d.packets_down_mean,
                "round_trips": d.round_trips,
                "device_compute_us": b.get("client_compute"),
                "secure_element_us": b.get("secure_element"),
                "radio_on_us": (d.radio or {}).get("on_mean_us"),
                "energy_mj": energy.get("total_mj"),
                "energy_note": None if energy.get("total_mj") is not None else energy.get("note"),
                "p50_us": u.p50_us,
                "p95_us": u.p95_us,
                "security_adds_p50_us": adds,
                "security_share": (sec.get("time_p50_us") or {}).get("share"),
                "cost_table": lb.get("cost_table"),
                "not_counted": None,
            }
        )
    for p, why in skipped.items():  # protocols the core runs no stack of: listed with the reason
        out.append(
            {
                "protocol": p,
                "handshake": "",
                "network": rows[0].labels.get("network") if rows else None,
                "stack": None,
                "library": None,
                "cost_table": None,
                "not_counted": why,
            }
        )
    return out


def mixed_libraries(doc: Result) -> str | None:
    """The what-if's note when its rows were costed from different libraries (None when one or none)."""
    a = doc.analysis.whatif
    return a.cost_table.mixed if a is not None and a.cost_table is not None else None


def comparison_cells(r: Mapping[str, Any], network: str) -> list[str]:
    """A comparison row's cells (COLUMNS), for the terminal and the HTML page alike; `network` as
    the caller shows a link's name."""
    if r["not_counted"]:
        return [r["protocol"], network, "not predicted (below)", *("–" for _ in COLUMNS[3:])]
    adds = r["security_adds_p50_us"]
    share = "" if r["security_share"] is None else f" ({r['security_share'] * 100:.0f}\u00a0%)"
    return [
        f"{r['protocol']} {r['handshake']}",
        network,
        (r["library"] or r["cost_table"] or "–").split(" (", 1)[0],
        f"{r['bytes_up']:.0f}/{r['bytes_down']:.0f}",
        f"{r['packets_up']:.1f}/{r['packets_down']:.1f}",
        str(r["round_trips"]),
        fmt_time_us(r["device_compute_us"] or 0.0),
        fmt_time_us(r["secure_element_us"] or 0.0),
        "–" if r["radio_on_us"] is None else fmt_time_us(r["radio_on_us"]),
        "–" if r["energy_mj"] is None else f"{r['energy_mj']:.1f} mJ",
        fmt_time_us(r["p50_us"]),
        fmt_time_us(r["p95_us"]),
        "–" if adds is None else fmt_time_us(adds) + share,
    ]
