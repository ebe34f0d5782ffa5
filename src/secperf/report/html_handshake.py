"""Handshake sections of the HTML report: wall and CPU distributions per configuration (box plots
like study S1's figures), the per-message client CPU as stacked bars and as a table, and a summary
table with resumption / early-data verification and the server's CPU."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..core.result_schema import HandshakeDerived, Series
from .html_env import cell, figure_view, hcell
from .plots import Plot
from .units import fmt_time_us
from .views.handshake import breakdown, message_matrix, verifications
from .views.series import cpu_p50_us, failure_reason


def _name(s: Series) -> str:
    lab = s.labels
    net = lab.get("network", "loopback")
    return f"{lab['label']} @ {lab['server']}" + ("" if net == "loopback" else f" / {net}")


def table_view(series: Sequence[Series]) -> dict[str, Any]:
    head = [
        "configuration",
        "server",
        "n ok",
        "failed",
        "handshake P50",
        "P90",
        "P99",
        "client CPU P50",
        "waiting P50",
        "TCP connect P50",
        "server CPU P50",
        "app write P50",
        "app read P50",
        hcell("negotiated"),
        hcell("verified"),
    ]
    rows: list[list[Any]] = []
    for s in series:
        lab, sm, d = s.labels, s.summary, s.derived_as(HandshakeDerived)
        nfail = len(s.failures)
        neg = d.negotiated or {}
        checks = verifications(s)
        server = _name(s).split(" @ ", 1)[1]
        if sm is None:
            rows.append([lab["label"], server, 0, nfail, cell(failure_reason(s), cls="l fail", colspan=11)])
            continue
        rows.append(
            [
                lab["label"],
                server,
                sm.n,
                nfail,
                fmt_time_us(sm.p50_us),
                fmt_time_us(sm.p90_us),
                fmt_time_us(sm.p99_us),
                fmt_time_us(cpu_p50_us(s)),
                fmt_time_us(d.wait_p50_us),
                fmt_time_us(d.tcp_connect_p50_us),
                fmt_time_us(d.server_cpu_p50_us),
                fmt_time_us(d.app_write_p50_us),
                fmt_time_us(d.app_read_p50_us),
                cell(" ".join(str(v) for v in neg.values() if v), cls="l muted"),
                cell("; ".join(checks), cls="l"),
            ]
        )
    return {"head": head, "rows": rows}


def message_view(series: Sequence[Series]) -> dict[str, Any] | None:
    """Client CPU per handshake message (P50), one column per configuration."""
    cols, order, matrix = message_matrix(series)
    if not cols:
        return None
    rows: list[list[Any]] = [
        [msg, *(fmt_time_us(v) if v is not None else "–" for v in vals)] for msg, vals in zip(order, matrix)
    ]
    rows.append(
        [cell("client CPU in the library (P50)", b=True), *(cell(fmt_time_us(cpu_p50_us(s)), b=True) for s in cols)]
    )
    return {"head": ["message", *(_name(s) for s in cols)], "rows": rows}


def plots(series: Sequence[Series]) -> list[Plot]:
    """Wall and client-CPU distributions per configuration and the per-message CPU as stacked bars."""
    out = []
    ok = [s for s in series if s.values_us]
    boxes: list[tuple[str, str, Callable[[Series], list[float]], str]] = [
        (
            "handshake-wall-time",
            "Handshake wall time per connection",
            lambda s: s.values_us,
            "Box: P25–P75, line: median, dots: connections.",
        ),
        ("handshake-client-cpu", "Client CPU per handshake (inside the TLS library)", lambda s: s.cpu_values_us, ""),
    ]
    for name, title, values, note in boxes if ok else []:
        out.append(Plot(name, "box", title, [(_name(s), values(s)) for s in ok], note, {"unit": "µs", "log": False}))
    stacked = [
        (_name(s), [(m["message"], m["p50_cpu_us"]) for m in bd["messages"]]) for s in series if (bd := breakdown(s))
    ]
    if stacked:
        out.append(
            Plot(
                "handshake-cpu-per-message",
                "stacked",
                "Client CPU per message (P50 per message)",
                stacked,
                "Medians per message, so a bar's length can differ slightly from the median total.",
                {"unit": "µs"},
            )
        )
    return out


def _by_name(plots: list[Plot]) -> dict[str, Plot]:
    return {p.name: p for p in plots}


def view(series: Sequence[Series]) -> dict[str, Any] | None:
    """The handshake part: the summary table, the wall and CPU distributions, the CPU per message."""
    if not series:
        return None
    by = _by_name(plots(series))
    wall, cpu, stacked = (
        by.get(k) for k in ("handshake-wall-time", "handshake-client-cpu", "handshake-cpu-per-message")
    )
    return {
        "template": "handshake.html.j2",
        "title": "TLS/DTLS handshakes",
        "summary": table_view(series),
        "figures": [figure_view(p) for p in (wall, cpu) if p],
        "stacked": figure_view(stacked) if stacked else None,
        "messages": message_view(series) if stacked else None,
    }
