"""The what-if section of the HTML report: predicted set-up time per scenario and link with its
breakdown, P50/P95 against RTT and loss when a sweep varied them, the tornado of P95, the flights
(where a flight crosses the TCP initial window or the MTU), S1's estimate and the cost table with
every figure's source."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.analysis_schema import WhatifAnalysis
from ..core.result_schema import Result, Series
from . import html_grid
from .html_env import figure_view
from .plots import Plot
from .units import fmt_time_us
from .views import whatif_tables as V
from .views.protocols import comparison_rows
from .views.whatif import whatif_series

_name, _d, _given, _breakdown, components = V.name, V.d, V.given, V.breakdown, V.components


def _vs_plot(series: Sequence[Series], key: str, label: str) -> Plot | None:
    groups: dict[str, list[tuple[float, float]]] = {}
    for s in series:
        x = s.labels.get("inputs", {}).get(key)
        if x is None:
            continue
        u = _given(_d(s).usable, "usable", s)
        groups.setdefault(_name(s) + " P50", []).append((x, _given(u.p50_us, "usable.p50_us", s) / 1e3))
        groups.setdefault(_name(s) + " P95", []).append((x, _given(u.p95_us, "usable.p95_us", s) / 1e3))
    lines = [(k, sorted(v)) for k, v in groups.items() if len(v) > 1]
    if not lines:
        return None
    return Plot(
        f"whatif-against-{key}",
        "line",
        f"predicted set-up time against {label}",
        lines,
        f"P50 and P95 of {_given(_d(series[0]).usable, 'usable', series[0]).n} simulated connections per point.",
        {"x_label": label, "y_label": "ms"},
    )


def _components_plot(series: Sequence[Series]) -> Plot:
    comps = components(series[:24])
    bars = [
        (f"{_name(s)} @ {s.labels['network']}", [(v, _breakdown(s).get(k, 0.0) / 1e3) for k, v in comps.items()])
        for s in series[:24]
    ]
    return Plot(
        "whatif-components",
        "stacked",
        "mean set-up time by component",
        bars,
        "Means add up to the mean set-up time; the tail (P95, P99) is mostly retransmission waits and "
        "secure-element tails.",
        {"unit": "ms"},
    )


def _protocols_plot(doc: Result) -> Plot | None:
    """Several protocols: where each one's mean set-up time goes (the comparison's figure)."""
    rows = [r for r in comparison_rows(doc) if not r["not_counted"]]
    if not rows:
        return None
    by_id = {
        (s.labels.get("protocol"), s.labels.get("network")): s for s in whatif_series(doc) if not s.labels.get("role")
    }
    series = [by_id[(r["protocol"], r["network"])] for r in rows]
    comps = components(series)
    bars = [
        (
            f"{r['protocol']} {r['handshake']} @ {r['network']}",
            [(v, _breakdown(s).get(k, 0.0) / 1e3) for k, v in comps.items()],
        )
        for r, s in zip(rows, series)
    ]
    facts = "; ".join(
        f"{r['protocol']}: P95 {fmt_time_us(r['p95_us'])}, {r['bytes_up']:.0f}/{r['bytes_down']:.0f} B, "
        + ("–" if r["energy_mj"] is None else f"{r['energy_mj']:.0f} mJ")
        for r in rows
    )
    return Plot(
        "whatif-protocols",
        "stacked",
        "which protocol: mean set-up time by component",
        bars,
        f"One connection of each protocol; bars are means by component ({facts}).",
        {"unit": "ms"},
    )


def plots(doc: Result) -> list[Plot]:
    """The what-if plots in report order (what --figures writes)."""
    series = whatif_series(doc)
    if not series:
        return []
    out = [_components_plot(series)]
    cmp_ = _protocols_plot(doc)
    if cmp_ is not None:
        out.insert(0, cmp_)
    for key, label in (("rtt", "RTT (ms)"), ("loss", "loss (%)"), ("delay", "one-way delay (ms)")):
        p = _vs_plot(series, key, label)
        if p:
            out.append(p)
    return out


def view(doc: Result) -> dict[str, Any] | None:
    """The what-if part: the grids of report/views/whatif_tables.py (the terminal draws the same),
    the plots, the cost table with every figure's source."""
    series = whatif_series(doc)
    if not series:
        return None
    a = doc.analysis.whatif or WhatifAnalysis()
    g = html_grid.view
    cmp_ = V.comparison(doc)
    ct = V.cost_tables(doc)
    return {
        "template": "whatif.html.j2",
        "title": f"What-if: predicted connection set-up {V.END_TITLE[V.end_point(series)]}",
        "end": _d(series[0]).end_point_description or "the first application response",
        "main": g(V.prediction(series)),
        "comparison": g(cmp_),
        "security": g(V.security(series)),
        "security_notes": list((a.security_cost.without_security or {}).items()) if a.security_cost else [],
        "measured": g(V.side_by_side(doc)),
        "figures": [figure_view(p) for p in plots(doc)],
        "tornado": g(V.tornado(a.tornado)) if a.tornado else None,
        "s1": g(V.s1(a.s1)) if a.s1 else None,
        "flights": [g(x) for x in V.flight_grids(series)],
        "cost_table": g(ct[0]) if ct else None,
        "cost_rest": g(ct[1]) if ct else None,
    }
