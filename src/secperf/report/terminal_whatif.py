"""Terminal tables of a `whatif` Result: predicted set-up time per scenario and link with its
breakdown, the flights of each protocol, the sensitivity (tornado) of P95, S1's estimate."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.table import Table

from ..core.result import as_result
from ..core.result_schema import Result, Series
from .units import axis_label, fmt_time_us

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


def components(series: Sequence[Series]) -> dict[str, str]:
    """The breakdown columns of these series: every core component, and host scheduling and the
    path floor when any series spent time on them (older Results lack the keys: 0)."""
    return {
        k: v
        for k, v in COMPONENT_LABELS.items()
        if k not in OPTIONAL_COMPONENTS or any(s.derived["breakdown_mean_us"].get(k, 0) > 0 for s in series)
    }


def _whatif(doc: Result | Mapping[str, Any]) -> list[Series]:
    from .views.whatif import whatif_series

    return whatif_series(doc)


END_TITLE = {
    "response": "until the first application response",
    "handshake": "until the client's handshake completes (TCP connect included, as openssl s_time)",
}


def end_point(series: Sequence[Series]) -> str:
    """The end point of these rows (older Results: response)."""
    ends = {s.labels.get("until", "response") for s in series}
    return ends.pop() if len(ends) == 1 else "response"


def prediction_table(series: Sequence[Series]) -> Table:
    t = Table(
        title=f"what-if: predicted connection set-up {END_TITLE[end_point(series)]} (Monte Carlo; "
        f"components are means)",
        title_justify="left",
    )
    for c in ("scenario", "network", "RTT", "P50", "P95", "P99", "handshake P50"):
        t.add_column(
            c, justify="left" if c in ("scenario", "network") else "right", no_wrap=c in ("scenario", "network")
        )
    comps = components(series)
    for c in comps.values():
        t.add_column(c, justify="right")
    t.add_column("bytes up/down", justify="right")
    t.add_column("failed", justify="right")
    for s in series:
        d = s.derived
        u = d["usable"]
        lab = s.labels
        name = s.id.split("/", 1)[1].rsplit(" @ ", 1)[0]
        t.add_row(
            name,
            axis_label(lab["network"]),
            f"{d['round_trips']}",
            *(fmt_time_us(u[k]) for k in ("p50_us", "p95_us", "p99_us")),
            fmt_time_us(d["handshake"]["p50_us"]),
            *(fmt_time_us(d["breakdown_mean_us"].get(k, 0.0)) for k in comps),
            f"{d['bytes_up_mean']:.0f}/{d['bytes_down_mean']:.0f}",
            f"{d['failed_share'] * 100:.2g}%",
        )
    return t


def comparison_table(doc: Result | Mapping[str, Any]) -> Table | None:
    """Several protocols: one row each (report/views/protocols.py), the library that costs it named."""
    from .views.protocols import comparison_cells, comparison_rows, mixed_libraries

    rows = comparison_rows(doc)
    if not rows:
        return None
    mixed = mixed_libraries(doc)
    lines = [mixed or ("one library costs every row" if rows[0]["stack"] else "")]
    lines += [f"{r['protocol']}: not predicted: {r['not_counted']}" for r in rows if r["not_counted"]]
    t = Table(
        title="which protocol: one connection each (means; P50/P95 of the set-up time)",
        title_justify="left",
        caption="\n".join(x for x in lines if x) or None,
        caption_justify="left",
    )
    cols = (
        "protocol",
        "network",
        "library",
        "bytes up/down",
        "packets up/down",
        "RTT",
        "device compute",
        "SE",
        "radio on",
        "energy",
        "P50",
        "P95",
        "security adds (P50)",
    )
    for c in cols:  # the view's COLUMNS, shorter where a terminal is narrow
        t.add_column(c, justify="left" if c in ("protocol", "network", "library") else "right")
    for r in rows:
        t.add_row(*comparison_cells(r, axis_label(r["network"]) if r["network"] else ""))
    return t


def _pct(x: Mapping[str, Any] | None, fmt: Callable[[float], str]) -> str:
    if x is None:
        return "–"
    share = "" if x["share"] is None else f" ({x['share'] * 100:.0f}%)"  # no space: the share never wraps away
    return f"{fmt(x['adds'])} of {fmt(x['secured'])}{share}"


def security_table(series: Sequence[Series]) -> Table | None:
    """--baseline: per row, what security adds against the same exchange without it (and what the key
    source adds against a software key): P50 time, mean bytes, mean radio-on time, energy per connection."""
    rows = [s for s in series if (s.derived.get("security_cost"))]
    if not rows:
        return None
    lines = [x.derived["security_cost"]["line"] for x in rows[:6]]
    t = Table(
        title=f"what security costs, {END_TITLE[end_point(series)]}: each row against the same exchange "
        f"without security (plain TCP/UDP, same application messages)",
        title_justify="left",
        caption="\n".join(lines),
        caption_justify="left",
    )
    for c in (
        "scenario",
        "network",
        "no security P50",
        "security adds (P50)",
        "bytes added",
        "radio on added (mean)",
        "energy added / connection",
        "key vs software key (P50)",
    ):
        t.add_column(c, justify="left" if c in ("scenario", "network") else "right", no_wrap=c == "network")
    mj = lambda v: f"{v:.1f} mJ"  # noqa: E731
    for s in rows:
        x = s.derived["security_cost"]
        kv = (x.get("key_vs_software") or {}).get("time_p50_us")
        t.add_row(
            s.id.split("/", 1)[1].rsplit(" @ ", 1)[0],
            axis_label(s.labels["network"]),
            fmt_time_us(x["time_p50_us"]["without"]),
            _pct(x["time_p50_us"], fmt_time_us),
            _pct(x["bytes"], lambda v: f"{v:,.0f} B"),
            _pct(x["radio_on_us"], fmt_time_us),
            _pct(x["energy_mj"], mj) if x.get("energy_mj") else "– (no radio profile)",
            _pct(kv, fmt_time_us) if kv else "(software key)",
        )
    return t


def flights_table(s: Series) -> Table:
    t = Table(
        title=f"flights: {s.id.split('/', 1)[1].rsplit(' @ ', 1)[0]} (mtu {s.labels['link']['mtu']})",
        title_justify="left",
    )
    for c in ("#", "transport", "sender", "messages", "bytes", "packets", "extra RTT (IW)", "work before sending"):
        t.add_column(c, justify="left" if c in ("messages", "work before sending", "sender", "transport") else "right")
    for f in s.derived["flights"]:
        t.add_row(
            str(f["exchange"]),
            f["transport"],
            f["sender"],
            f["messages"] + (" [handshake done]" if f["handshake_done"] else ""),
            str(f["bytes"]),
            str(f["packets"]),
            str(f["extra_window_rounds"] or ""),
            ", ".join(f["ops"]),
        )
    return t


BAR = 20  # the tornado's longest bar, in characters (fits beside the numbers at 80 columns)


def sweep_value(axis: str, v: object) -> str:
    """A swept input's value with its unit (rtt 200 ms, loss 1 %, rate 64 kbit/s); names as given."""
    from ..sim.sweep import NETWORK_INPUTS

    if isinstance(v, (int, float)) and not isinstance(v, bool):
        unit = NETWORK_INPUTS.get(axis)
        return f"{v:g} {unit}" if unit else f"{v:g}"
    return str(v)


def tornado_table(rows: list[dict[str, Any]]) -> Table:
    t = Table(title="sensitivity: which input moves P95 most (others at their first value)", title_justify="left")
    for c in ("input", "low", "P95 low", "high", "P95 high", "swing", ""):
        t.add_column(c, justify="left" if c in ("input", "") else "right")
    top = max((r["swing_us"] for r in rows), default=0) or 1
    for r in rows:
        t.add_row(
            r["input"],
            sweep_value(r["input"], r["low_value"]),
            fmt_time_us(r["low_us"]),
            sweep_value(r["input"], r["high_value"]),
            fmt_time_us(r["high_us"]),
            fmt_time_us(r["swing_us"]),
            "█" * max(1, round(BAR * r["swing_us"] / top)),
        )
    return t


def s1_table(s1: Mapping[str, Any]) -> Table:
    t = Table(title=f"study S1's acceleration estimate: client CPU per message ({s1['method']})", title_justify="left")
    for c in ("message", "full", "accelerated"):
        t.add_column(c, justify="left" if c == "message" else "right")
    for r in s1["rows"]:
        t.add_row(r["message"], fmt_time_us(r["full_us"]), fmt_time_us(r["accelerated_us"]))
    t.add_row("total", fmt_time_us(s1["full_us"]), fmt_time_us(s1["accelerated_us"]) + f" (-{s1['saving'] * 100:.0f}%)")
    return t


def side_by_side_table(doc: Result | Mapping[str, Any]) -> Table | None:
    """Predicted next to measured, for the cells this run measured too."""
    from .views.whatif import predicted_vs_measured

    rows = [r for r in predicted_vs_measured(doc) if r["measured_p50_us"] is not None]
    if not rows:
        return None
    t = Table(
        title="what-if: predicted next to measured (calibrated on this run's loopback rows)",
        title_justify="left",
        header_style="bold",
    )
    for c in (
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
    ):
        t.add_column(c, justify="left" if c in ("protocol", "key", "handshake", "network") else "right")

    def pct(x: float | None) -> str:
        return "–" if x is None else f"{x * 100:+.1f}%"

    for r in rows:
        t.add_row(
            r["protocol"],
            r["key"],
            r["handshake"],
            axis_label(r["network"]),
            fmt_time_us(r["measured_p50_us"]),
            fmt_time_us(r["predicted_p50_us"]),
            pct(r["p50_error"]),
            fmt_time_us(r["measured_p95_us"]),
            fmt_time_us(r["predicted_p95_us"]),
            pct(r["p95_error"]),
        )
    return t


def tables(doc: Result | Mapping[str, Any]) -> list[Table]:
    doc = as_result(doc)
    series = _whatif(doc)
    if not series:
        return []
    out = [prediction_table(series)]
    cmp_ = comparison_table(doc)
    if cmp_ is not None:
        out.append(cmp_)
    sec = security_table(series)
    if sec is not None:
        out.append(sec)
    pvm = side_by_side_table(doc)
    if pvm is not None:
        out.append(pvm)
    seen: set[str] = set()
    for s in series:
        key = s.id.rsplit(" @ ", 1)[0]
        if key not in seen and len(seen) < 3:
            seen.add(key)
            out.append(flights_table(s))
    a = doc.analysis.get("whatif", {})
    if a.get("tornado"):
        out.append(tornado_table(a["tornado"]))
    if a.get("s1"):
        out.append(s1_table(a["s1"]))
    return out


def listing() -> None:
    from ..model import costs as C
    from ..model import flights as F
    from .fit import print_table
    from .terminal import out_console

    con = out_console()
    t = Table(title="what-if protocols", title_justify="left")
    t.add_column("protocol", justify="left")
    t.add_column("handshakes", justify="left")
    t.add_column("what", justify="left")
    for p, what in F.PROTOCOLS.items():
        t.add_row(p, ", ".join(F.HANDSHAKES[p]), what)
    print_table(con, t)
    g = Table(title="groups (key share bytes client/server)", title_justify="left")
    for c in ("group", "client", "server", "source"):
        g.add_column(c, justify="left")
    for name, v in F.groups().items():
        g.add_row(name, str(v["client"]), str(v["server"]), v["source"])
    print_table(con, g)
    k = Table(title="certificate key types (bytes)", title_justify="left")
    for c in ("type", "SPKI", "signature", "certificate", "source"):
        k.add_column(c, justify="left")
    for name, v in F.key_types().items():
        k.add_row(name, str(v["spki"]), str(v["sig"]), str(F.cert_der(name)), v["source"])
    print_table(con, k)
    con.print("cost tables (--device): " + ", ".join(C.table_names()))
