"""The connection-establishment section of the HTML report (`secperf connect`): study S2's
summary (software vs secure element per protocol, resumed and JWT rows), where the time went per
configuration (stacked phases), the distributions, and the secure element's calls per connection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.result_schema import ConnectDerived, Result
from . import html_netem
from .html_env import cell, figure_view, frag
from .plots import Plot
from .units import fmt_time_us
from .views.connect import ConnectRow, series_label, series_rows, summary


def _t(v: float | None) -> str:
    return fmt_time_us(v) if v is not None else "–"


def _calls(v: float | None) -> str:
    return f"{v:.1f}" if v is not None else "–"


def _resumed(r: dict[str, Any]) -> str:
    return f"{r['resumed']}/{r['n']}" if r.get("resumed") is not None and r.get("n") else "–"


def s2_view(doc: Result) -> dict[str, Any] | None:
    """Study S2's summary: software vs token vs secure element per protocol and handshake."""
    sm = summary(doc)
    if not sm["rows"]:
        return None
    by_net = len(sm["networks"]) > 1
    head = [
        *(["network"] if by_net else []),
        "protocol",
        "handshake / auth",
        "software",
        "token",
        f"secure element ({sm['se_source'] or '–'})",
        "difference",
        "SE signing",
        "SE session, login, key search",
        "token calls / connection",
        "resumed",
    ]
    rows = []
    for r in sm["rows"]:
        parts = r["se_parts_us"]
        rest = parts["session set-up"] + parts["login"] + parts["key search"] if parts else None
        auth = (r["handshake"] if r["auth"] == "mtls" else r["auth"]) + (
            ", cold key session" if r.get("key_session") == "cold" else ""
        )
        rows.append(
            [
                *([r["network"]] if by_net else []),
                r["protocol"],
                auth,
                *(_t(r[k]) for k in ("software_p50_us", "token_p50_us", "se_p50_us", "difference_us")),
                _t(parts["signing"] if parts else None),
                _t(rest),
                _calls(r["se_calls_per_conn"]),
                _resumed(r),
            ]
        )
    return {"head": head, "rows": rows, "left": 3 if by_net else 2}


def configurations_view(rows: Sequence[ConnectRow]) -> dict[str, Any]:
    """Per configuration: what was timed, the percentiles, resumption, token calls, start-up."""
    out: list[list[Any]] = []
    for r in rows:
        timer = f"{r['timer'].start} → {r['timer'].end}"
        if not r["n"]:
            out.append(
                [r["label"], cell(timer, cls="muted"), cell(r["failure"] or r["status"], cls="l fail", colspan=8)]
            )
            continue
        label: list[Any] = [r["label"]]
        if r["status"] != "ok":
            label.append(frag(f" ({r['status']}: {r['failure'] if r['failure'] is not None else ''})", span="fail"))
        if r.get("note"):
            label.append(frag(r["note"], span="muted", br=True))
        out.append(
            [
                cell(parts=label),
                cell(timer, cls="muted"),
                r["n"],
                _t(r["p50_us"]),
                _t(r["p90_us"]),
                _t(r["p99_us"]),
                r["over_1s"] or 0,
                r["resumed"] if r["resumed"] is not None else "–",
                _calls(r["token_calls"]),
                _t(r["startup_p50_us"]),
            ]
        )
    return {
        "head": [
            "configuration",
            "timed from → to",
            "n",
            "P50",
            "P90",
            "P99",
            "runs > 1 s",
            "resumed",
            "token calls",
            "process start-up",
        ],
        "rows": out,
    }


def se_call_view(doc: Result) -> dict[str, Any] | None:
    """The secure element's PKCS#11 calls per connection, from the shim's log."""
    rows = []
    for s in doc.series:
        per = s.derived.se_calls if isinstance(s.derived, ConnectDerived) else None
        if not per or not per.get("calls"):
            continue
        for c in per["calls"]:
            rows.append(
                [
                    series_label(s),
                    c["fn"],
                    f"{c['calls_per_op']:.2f}",
                    _t(c["p50_ms"] * 1000 if c["p50_ms"] is not None else None),
                    _t(c["delay_p50_ms"] * 1000 if c["delay_p50_ms"] is not None else None),
                ]
            )
    if not rows:
        return None
    return {
        "head": [
            "configuration",
            "PKCS#11 function",
            "calls / connection",
            "time / connection P50",
            "injected delay P50",
        ],
        "rows": rows,
    }


def _own_plots(doc: Result, rows: Sequence[ConnectRow]) -> list[Plot]:
    out = []
    stacked = [(r["label"], [(p["phase"], p["p50_us"]) for p in r["phases"]]) for r in rows if r["phases"]]
    if stacked:
        out.append(
            Plot(
                "connect-phases",
                "stacked",
                "Where the establishment time went (phase medians)",
                stacked,
                "Medians per phase; they need not add up to the median total.",
                {"unit": "µs"},
            )
        )
    dist = [
        (r["label"], s.values_us) for r, s in zip(rows, [x for x in doc.series if x.kind == "connect"]) if s.values_us
    ]
    if dist:
        out.append(
            Plot(
                "connect-time-per-connection",
                "box",
                "Establishment time per connection",
                dist,
                "Log scale; dots are connections.",
                {"unit": "µs"},
            )
        )
    return out


def plots(doc: Result) -> list[Plot]:
    """Phases as stacked bars, the distribution per configuration, the time against the link."""
    rows = series_rows(doc)
    if not rows:
        return []
    return _own_plots(doc, rows) + html_netem.sweep_plots(doc.series, kind="connect")


def view(doc: Result) -> dict[str, Any] | None:
    """The connection-establishment part."""
    rows = series_rows(doc)
    if not rows:
        return None
    return {
        "template": "connect.html.j2",
        "title": "Connection establishment on real servers",
        "summary": s2_view(doc),
        "figures": [figure_view(p) for p in _own_plots(doc, rows)],
        "sweep": html_netem.sweep_figures(doc.series, kind="connect"),
        "series": configurations_view(rows),
        "se_calls": se_call_view(doc),
    }
