"""The what-if section of the HTML report: predicted set-up time per scenario and link with its
breakdown, P50/P95 against RTT and loss when a sweep varied them, the tornado of P95, the flights
(where a flight crosses the TCP initial window or the MTU), S1's estimate and the cost table with
every figure's source."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..core.errors import ResultError
from ..core.result_schema import Result, Series, WhatifDerived
from .html_env import figure_view
from .plots import Plot
from .terminal_whatif import END_TITLE, components, end_point
from .units import fmt_time_us
from .views.protocols import COLUMNS, comparison_cells, comparison_rows, mixed_libraries
from .views.whatif import cost_rows_by_use, predicted_vs_measured, whatif_series

T = TypeVar("T")


def _d(s: Series) -> WhatifDerived:
    return s.derived_as(WhatifDerived)


def _given(v: T | None, field: str, s: Series) -> T:
    """A derived field every prediction has; a Result without it is malformed."""
    if v is None:
        raise ResultError(
            f"what-if series {s.id!r} has no derived.{field}; was the file changed after secperf wrote it?"
        )
    return v


def _name(s: Series) -> str:
    return s.id.split("/", 1)[1].rsplit(" @ ", 1)[0]


def _table(head: list[str], rows: list[list[Any]], left: int = 2) -> dict[str, Any]:
    return {"head": head, "rows": rows, "left": left}


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x * 100:+.1f}%"


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


def _breakdown(s: Series) -> dict[str, float]:
    """Where the mean set-up time goes (µs per component)."""
    return _given(_d(s).breakdown_mean_us, "breakdown_mean_us", s)


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


def _comparison(doc: Result) -> dict[str, Any] | None:
    rows = comparison_rows(doc)
    if not rows:
        return None
    out = [comparison_cells(r, r["network"] or "") for r in rows]
    return {
        "mixed": mixed_libraries(doc),
        "not_counted": [(r["protocol"], r["not_counted"]) for r in rows if r["not_counted"]],
        "table": _table(list(COLUMNS), out, left=3),
    }


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


def _adds(x: Mapping[str, Any] | None, fmt: Callable[[float], str]) -> str:
    """'12 ms of 340 ms (4 %)': what security adds of the secured total."""
    if not x:
        return "–"
    share = "" if x["share"] is None else f" ({x['share'] * 100:.0f}\u00a0%)"
    return f"{fmt(x['adds'])} of {fmt(x['secured'])}{share}"


def view(doc: Result) -> dict[str, Any] | None:
    """The what-if part: predictions per scenario and link, what security costs, predicted next to
    measured, the plots, the tornado, S1's estimate, the first scenario's flights, the cost table."""
    series = whatif_series(doc)
    if not series:
        return None
    a = doc.analysis.get("whatif", {})
    rows = []
    comps = components(series)
    for s in series:
        d = _d(s)
        u = _given(d.usable, "usable", s)
        crosses = _given(d.crosses, "crosses", s)
        rows.append(
            [
                _name(s),
                s.labels["network"],
                str(_given(d.round_trips, "round_trips", s)),
                *(fmt_time_us(x) for x in (u.p50_us, u.p90_us, u.p95_us, u.p99_us)),
                *(fmt_time_us(_breakdown(s).get(k, 0.0)) for k in comps),
                f"{_given(d.bytes_up_mean, 'bytes_up_mean', s):.0f} / {_given(d.bytes_down_mean, 'bytes_down_mean', s):.0f}",
                ("IW " if crosses["initial_window"] else "") + ("MTU" if crosses["mtu"] else ""),
                f"{_given(d.failed_share, 'failed_share', s) * 100:.2g}%",
            ]
        )
    v: dict[str, Any] = {
        "template": "whatif.html.j2",
        "title": f"What-if: predicted connection set-up {END_TITLE[end_point(series)]}",
        "end": _d(series[0]).end_point_description or "the first application response",
        "main": _table(
            [
                "scenario",
                "network",
                "round trips",
                "P50",
                "P90",
                "P95",
                "P99",
                *(f"{v} (mean)" for v in comps.values()),
                "bytes up / down",
                "crosses",
                "gave up",
            ],
            rows,
        ),
    }
    v["comparison"] = _comparison(doc)
    sec = [s for s in series if _d(s).get("security_cost")]
    v["security"] = None
    if sec:
        mj = lambda x: f"{x:.1f} mJ"  # noqa: E731
        byt = lambda x: f"{x:,.0f} B"  # noqa: E731
        notes = (a.get("security_cost") or {}).get("without_security") or {}
        srows = []
        for s in sec:
            sc = _d(s)["security_cost"]
            srows.append(
                [
                    _name(s),
                    s.labels["network"],
                    fmt_time_us(sc["time_p50_us"]["without"]),
                    _adds(sc["time_p50_us"], fmt_time_us),
                    _adds(sc["bytes"], byt),
                    _adds(sc["radio_on_us"], fmt_time_us),
                    _adds(sc.get("energy_mj"), mj),
                    _adds((sc.get("key_vs_software") or {}).get("time_p50_us"), fmt_time_us)
                    if sc.get("key_vs_software")
                    else "(software key)",
                ]
            )
        v["security"] = {
            "notes": list(notes.items()),
            "table": _table(
                [
                    "scenario",
                    "network",
                    "no security P50",
                    "security adds (P50)",
                    "bytes added",
                    "radio on added (mean)",
                    "energy added / connection",
                    "key vs software (P50)",
                ],
                srows,
            ),
        }
    pvm = [r for r in predicted_vs_measured(doc) if r["measured_p50_us"] is not None]
    v["measured"] = (
        _table(
            [
                "protocol",
                "key",
                "handshake",
                "network",
                "measured P50",
                "predicted P50",
                "error",
                "measured P95",
                "predicted P95",
                "error",
            ],
            [
                [
                    r["protocol"],
                    r["key"],
                    r["handshake"],
                    r["network"],
                    fmt_time_us(r["measured_p50_us"]),
                    fmt_time_us(r["predicted_p50_us"]),
                    _pct(r["p50_error"]),
                    fmt_time_us(r["measured_p95_us"]),
                    fmt_time_us(r["predicted_p95_us"]),
                    _pct(r["p95_error"]),
                ]
                for r in pvm
            ],
            left=4,
        )
        if pvm
        else None
    )
    v["figures"] = [figure_view(p) for p in plots(doc)]
    v["tornado"] = (
        _table(
            ["input", "low", "P95 low", "high", "P95 high", "swing"],
            [
                [
                    r["input"],
                    r["low_value"],
                    fmt_time_us(r["low_us"]),
                    r["high_value"],
                    fmt_time_us(r["high_us"]),
                    fmt_time_us(r["swing_us"]),
                ]
                for r in a["tornado"]
            ],
            left=1,
        )
        if a.get("tornado")
        else None
    )
    v["s1"] = None
    if a.get("s1"):
        s1 = a["s1"]
        v["s1"] = {
            "method": s1["method"],
            "table": _table(
                ["message", "full", "accelerated"],
                [[r["message"], fmt_time_us(r["full_us"]), fmt_time_us(r["accelerated_us"])] for r in s1["rows"]]
                + [["total", fmt_time_us(s1["full_us"]), fmt_time_us(s1["accelerated_us"])]],
                left=1,
            ),
        }
    first = series[0]
    v["flights"] = {
        "name": _name(first),
        "table": _table(
            ["exchange", "sender", "messages", "bytes", "packets", "extra RTT (initial window)", "work before sending"],
            [
                [
                    str(f["exchange"]),
                    f["sender"],
                    f["messages"],
                    str(f["bytes"]),
                    str(f["packets"]),
                    str(f["extra_window_rounds"]),
                    ", ".join(f["ops"]),
                ]
                for f in _given(_d(first).flights, "flights", first)
            ],
            left=3,
        ),
    }
    ct = a.get("cost_table") or {}
    used, rest = cost_rows_by_use(doc)
    v["cost_table"] = (
        {
            "name": ct.get("name"),
            "description": ct.get("description"),
            # the operations these flights use first, with what they price; the rest folded away
            "table": _table(
                ["party", "operation", "used as", "source", "time"],
                [[r["party"], r["op"], ", ".join(r["used_as"]), r["source"], fmt_time_us(r["us"])] for r in used],
                left=4,
            ),
            "rest": _table(
                ["party", "operation", "source", "time"],
                [[r["party"], r["op"], r["source"], fmt_time_us(r["us"])] for r in rest],
                left=3,
            )
            if rest
            else None,
            "rest_n": len(rest),
        }
        if ct
        else None
    )
    return v
