"""The tables of a `whatif` Result, built once as Grids (report/views/grid.py) for the terminal and
the HTML page alike: the predictions per scenario and link with their breakdown, the protocols side
by side, what security costs, predicted next to measured, the flights, the tornado of P95, study
S1's estimate and the cost table the flights are priced from."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ...core.analysis_schema import TornadoRow
from ...core.errors import ResultError
from ...core.result_schema import Result, Series, WhatifDerived
from ...sim.sweep import NETWORK_INPUTS
from ..units import axis_label, fmt_time_us
from .grid import Grid
from .protocols import COLUMNS, comparison_cells, comparison_rows, mixed_libraries
from .whatif import cost_rows_by_use, predicted_vs_measured, whatif_series

T = TypeVar("T")

COMPONENT_LABELS = {
    "client_compute": "client",
    "server_compute": "server",
    "secure_element": "SE",
    "propagation": "propagation",
    "serialisation": "serialisation",
    "retransmission_wait": "retx wait",
    "host_scheduling": "host sched",
    "path_floor": "path floor",
}
OPTIONAL_COMPONENTS = ("host_scheduling", "path_floor")  # shown when a series has them

END_TITLE = {
    "response": "until the first application response",
    "handshake": "until the client's handshake completes (TCP connect included, as openssl s_time)",
}
FLIGHT_TABLES = 3  # the flights of this many scenarios are shown (the first of each)


def d(s: Series) -> WhatifDerived:
    return s.derived_as(WhatifDerived)


def given(v: T | None, field: str, s: Series) -> T:
    """A derived field every prediction has; a Result without it is malformed."""
    if v is None:
        raise ResultError(
            f"what-if series {s.id!r} has no derived.{field}; was the file changed after secperf wrote it?"
        )
    return v


def name(s: Series) -> str:
    """The scenario's name: the series id without its kind and its link."""
    return s.id.split("/", 1)[1].rsplit(" @ ", 1)[0]


def breakdown(s: Series) -> dict[str, float]:
    """Where the mean set-up time goes (µs per component)."""
    return given(d(s).breakdown_mean_us, "breakdown_mean_us", s)


def components(series: Sequence[Series]) -> dict[str, str]:
    """The breakdown columns of these series: every core component, and host scheduling and the
    path floor when any series spent time on them (older Results lack the keys: 0)."""
    return {
        k: v
        for k, v in COMPONENT_LABELS.items()
        if k not in OPTIONAL_COMPONENTS or any(breakdown(s).get(k, 0) > 0 for s in series)
    }


def end_point(series: Sequence[Series]) -> str:
    """The end point of these rows (older Results: response)."""
    ends = {s.labels.get("until", "response") for s in series}
    return ends.pop() if len(ends) == 1 else "response"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x * 100:+.1f}%"


def prediction(series: Sequence[Series]) -> Grid:
    comps = components(series)
    g = Grid(
        f"what-if: predicted connection set-up {END_TITLE[end_point(series)]} (Monte Carlo; components are means)",
        [
            "scenario",
            "network",
            "round trips",
            "P50",
            "P90",
            "P95",
            "P99",
            "handshake P50",
            *comps.values(),
            "bytes up/down",
            "crosses",
            "failed",
        ],
        left=2,
        no_wrap=("scenario", "network"),
    )
    for s in series:
        x = d(s)
        u = given(x.usable, "usable", s)
        hs = x.handshake
        crosses = x.crosses or {}
        g.add(
            [
                name(s),
                axis_label(s.labels["network"]),
                str(given(x.round_trips, "round_trips", s)),
                *(fmt_time_us(v) for v in (u.p50_us, u.p90_us, u.p95_us, u.p99_us)),
                fmt_time_us(hs.p50_us) if hs is not None else "–",
                *(fmt_time_us(breakdown(s).get(k, 0.0)) for k in comps),
                f"{given(x.bytes_up_mean, 'bytes_up_mean', s):.0f}/{given(x.bytes_down_mean, 'bytes_down_mean', s):.0f}",
                " ".join(w for w, k in (("IW", "initial_window"), ("MTU", "mtu")) if crosses.get(k)),
                f"{given(x.failed_share, 'failed_share', s) * 100:.2g}%",
            ]
        )
    return g


def comparison(doc: Result) -> Grid | None:
    """Several protocols: one row each (report/views/protocols.py), the library that costs it named."""
    rows = comparison_rows(doc)
    if not rows:
        return None
    mixed = mixed_libraries(doc)
    notes = [mixed or ("one library costs every row" if rows[0]["stack"] else "")]
    notes += [f"{r['protocol']}: not predicted: {r['not_counted']}" for r in rows if r["not_counted"]]
    g = Grid(
        "which protocol: one connection each (means; P50/P95 of the set-up time)",
        list(COLUMNS),
        notes=[x for x in notes if x],
        left=3,
    )
    for r in rows:
        g.add(list(comparison_cells(r, axis_label(r["network"]) if r["network"] else "")))
    return g


def _adds(x: Mapping[str, Any] | None, fmt: Callable[[float], str]) -> str:
    """'12 ms of 340 ms (4%)': what security adds of the secured total."""
    if not x:
        return "–"
    share = "" if x["share"] is None else f" ({x['share'] * 100:.0f}%)"
    return f"{fmt(x['adds'])} of {fmt(x['secured'])}{share}"


def security(series: Sequence[Series]) -> Grid | None:
    """--baseline: per row, what security adds against the same exchange without it (and what the key
    source adds against a software key): P50 time, mean bytes, mean radio-on time, energy per connection."""
    rows = [s for s in series if d(s).security_cost]
    if not rows:
        return None
    g = Grid(
        f"what security costs, {END_TITLE[end_point(series)]}: each row against the same exchange "
        f"without security (plain TCP/UDP, same application messages)",
        [
            "scenario",
            "network",
            "no security P50",
            "security adds (P50)",
            "bytes added",
            "radio on added (mean)",
            "energy added / connection",
            "key vs software key (P50)",
        ],
        notes=[str((d(s).security_cost or {}).get("line", "")) for s in rows[:6]],
        left=2,
        no_wrap=("network",),
    )
    for s in rows:
        x = given(d(s).security_cost, "security_cost", s)
        kv = (x.get("key_vs_software") or {}).get("time_p50_us")
        g.add(
            [
                name(s),
                axis_label(s.labels["network"]),
                fmt_time_us(x["time_p50_us"]["without"]),
                _adds(x["time_p50_us"], fmt_time_us),
                _adds(x["bytes"], lambda v: f"{v:,.0f} B"),
                _adds(x["radio_on_us"], fmt_time_us),
                _adds(x["energy_mj"], lambda v: f"{v:.1f} mJ") if x.get("energy_mj") else "– (no radio profile)",
                _adds(kv, fmt_time_us) if kv else "(software key)",
            ]
        )
    return g


def side_by_side(doc: Result) -> Grid | None:
    """Predicted next to measured, for the cells this run measured too."""
    rows = [r for r in predicted_vs_measured(doc) if r["measured_p50_us"] is not None]
    if not rows:
        return None
    g = Grid(
        "what-if: predicted next to measured (calibrated on this run's loopback rows)",
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
        left=4,
    )
    for r in rows:
        g.add(
            [
                r["protocol"],
                r["key"],
                r["handshake"],
                axis_label(r["network"]),
                fmt_time_us(r["measured_p50_us"]),
                fmt_time_us(r["predicted_p50_us"]),
                _pct(r["p50_error"]),
                fmt_time_us(r["measured_p95_us"]),
                fmt_time_us(r["predicted_p95_us"]),
                _pct(r["p95_error"]),
            ]
        )
    return g


def flights(s: Series) -> Grid:
    g = Grid(
        f"flights: {name(s)} (mtu {s.labels['link']['mtu']})",
        ["#", "transport", "sender", "messages", "bytes", "packets", "extra RTT (IW)", "work before sending"],
        text=("transport", "sender", "messages", "work before sending"),
    )
    for f in given(d(s).flights, "flights", s):
        g.add(
            [
                str(f["exchange"]),
                f["transport"],
                f["sender"],
                f["messages"] + (" [handshake done]" if f["handshake_done"] else ""),
                str(f["bytes"]),
                str(f["packets"]),
                str(f["extra_window_rounds"] or ""),
                ", ".join(f["ops"]),
            ]
        )
    return g


def flight_grids(series: Sequence[Series]) -> list[Grid]:
    """The flights of the first FLIGHT_TABLES scenarios (one link each: the flights do not change with it)."""
    seen: dict[str, Series] = {}
    for s in series:
        key = s.id.rsplit(" @ ", 1)[0]
        if key not in seen and len(seen) < FLIGHT_TABLES:
            seen[key] = s
    return [flights(s) for s in seen.values()]


BAR = 20  # the tornado's longest bar, in characters (fits beside the numbers at 80 columns)


def sweep_value(axis: str, v: object) -> str:
    """A swept input's value with its unit (rtt 200 ms, loss 1 %, rate 64 kbit/s); names as given."""

    if isinstance(v, (int, float)) and not isinstance(v, bool):
        unit = NETWORK_INPUTS.get(axis)
        return f"{v:g} {unit}" if unit else f"{v:g}"
    return str(v)


def tornado(rows: list[TornadoRow]) -> Grid:
    g = Grid(
        "sensitivity: which input moves P95 most (others at their first value)",
        ["input", "low", "P95 low", "high", "P95 high", "swing", ""],
    )
    top = max((r.swing_us for r in rows), default=0) or 1
    for r in rows:
        g.add(
            [
                r.input,
                sweep_value(r.input, r.low_value),
                fmt_time_us(r.low_us),
                sweep_value(r.input, r.high_value),
                fmt_time_us(r.high_us),
                fmt_time_us(r.swing_us),
                "█" * max(1, round(BAR * r.swing_us / top)),
            ]
        )
    return g


def s1(x: Mapping[str, Any]) -> Grid:
    g = Grid(
        f"study S1's acceleration estimate: client CPU per message ({x['method']})", ["message", "full", "accelerated"]
    )
    for r in x["rows"]:
        g.add([r["message"], fmt_time_us(r["full_us"]), fmt_time_us(r["accelerated_us"])])
    g.add(
        ["total", fmt_time_us(x["full_us"]), fmt_time_us(x["accelerated_us"]) + f" (-{x['saving'] * 100:.0f}%)"],
        strong=True,
    )
    return g


def cost_tables(doc: Result) -> tuple[Grid, Grid | None] | None:
    """The cost table: the operations the flights use first (with what they price), then the rest."""
    ct = doc.analysis.whatif.cost_table if doc.analysis.whatif is not None else None
    if ct is None:
        return None
    used, rest = cost_rows_by_use(doc)
    g = Grid(
        f"Cost table {ct.name}",
        ["party", "operation", "used as", "source", "time"],
        notes=[ct.description or ""],
        left=4,
    )
    for r in used:
        g.add([r["party"], r["op"], ", ".join(r["used_as"]), r["source"], fmt_time_us(r["us"])])
    if not rest:
        return g, None
    other = Grid(
        f"The table's other {len(rest)} operations (not used by these flights)",
        ["party", "operation", "source", "time"],
        left=3,
    )
    for r in rest:
        other.add([r["party"], r["op"], r["source"], fmt_time_us(r["us"])])
    return g, other


def grids(doc: Result) -> list[Grid]:
    """Every what-if table in report order (the cost table apart: cost_tables)."""
    series = whatif_series(doc)
    if not series:
        return []
    a = doc.analysis.whatif
    out: list[Grid | None] = [prediction(series), comparison(doc), security(series), side_by_side(doc)]
    out += flight_grids(series)
    if a is not None:
        out += [tornado(a.tornado) if a.tornado else None, s1(a.s1) if a.s1 else None]
    return [g for g in out if g is not None]
