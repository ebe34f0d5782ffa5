"""The `secperf device` section of the HTML report: per-message instruction tables and stacked
bars per configuration, cold and warm, with derived millisecond ranges labelled as derived."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.result_schema import DeviceDerived, Result, Series
from .html_env import cell, figure_view
from .plots import Plot, slug
from .views import device as V


def _derived(s: Series) -> DeviceDerived:
    return s.derived_as(DeviceDerived)


def _table(series: Sequence[Series]) -> dict[str, Any]:
    """Instructions per handshake message, one column per configuration, and what follows from them."""
    varying = V.varying_labels(series)
    order, mat = V.matrix(series)
    rows: list[list[Any]] = [[msg, *(V.fmt_count(v) for v in vals)] for msg, vals in zip(order, mat)]
    rows.append(
        [cell("handshake total", b=True), *(cell(V.fmt_count(_derived(s).instructions_median), b=True) for s in series)]
    )
    rows.append(["cycles (timing model)", *(V.cycles(_derived(s).time) for s in series)])
    rows.append([cell("time (band)", b=True), *(cell(V.time_band(_derived(s).time), b=True) for s in series)])
    for name, value in (
        ("old CPI range (for comparison)", V.ms_range),
        ("build", V.build_label),
        ("library footprint (linked)", V.footprint),
        ("handshake stack (worst, painted)", V.stack),
    ):
        rows.append([name, *(cell(value(s), cls="muted") for s in series)])
    rows.append(["checks", *(cell("; ".join(V.checks(s)), cls="l muted") for s in series)])
    return {"head": ["message", *(V.column_name(s, varying) for s in series)], "rows": rows}


def _crypto_table(series: Sequence[Series]) -> dict[str, Any] | None:
    """The primitive operations (device_crypto series)."""
    if not series:
        return None
    rows = []
    for s in series:
        d, lab = s.derived, s.labels
        cells = (
            [
                V.fmt_count(d["instructions_cold"]),
                V.fmt_count(d["instructions_median"]),
                V.cycles(d.get("time")),
                cell(V.time_band(d.get("time")), b=True),
                cell(V.ms_range(s), cls="muted"),
                V.op_stack(s),
            ]
            if d and d.get("instructions_cold") is not None  # failed: at most its footprint was measured
            else [cell("failed", cls="fail", colspan=6)]
        )
        rows.append([lab["device"], V.build_label(s), lab["op"], *cells])
    return {
        "note": V.profile_note(series),
        "rows": rows,
        "head": [
            "device",
            "build",
            "operation",
            "instr. cold",
            "instr. warm",
            "cycles",
            "time (band)",
            "old CPI range",
            "stack (painted)",
        ],
    }


def _phase_plot(phase: str, series: Sequence[Series]) -> Plot:
    varying = V.varying_labels(series)
    rows = [
        (V.column_name(s, varying), [(V.message_label(m), float(m["instructions"])) for m in s.derived["messages"]])
        for s in series
    ]
    return Plot(
        slug("device-instructions", phase),
        "stacked",
        f"Instructions per handshake message ({phase})",
        rows,
        "Instructions counted under QEMU per message; the bar is the whole handshake.",
        {"unit": "instructions"},
    )


def plots(doc: Result) -> list[Plot]:
    """The per-message stacked bars, one per phase (cold, warm)."""
    return [_phase_plot(phase, series) for phase, series in V.phases(doc).items()]


def view(doc: Result) -> dict[str, Any] | None:
    """Per phase (cold, warm): the instruction table and its stacked bars; then the primitives."""
    ph = V.phases(doc)
    cs = V.crypto_series(doc)
    if not ph and not cs:
        return None
    phases = [
        {
            "title": f"{phase.capitalize()} handshakes — {series[0].labels['device']}, {series[0].labels['library']}",
            "note": V.profile_note(series),
            "table": _table(series),
            "figure": figure_view(_phase_plot(phase, series)),
        }
        for phase, series in ph.items()
    ]
    return {
        "template": "device.html.j2",
        "title": "Emulated devices: TLS stacks on ARM cores, instructions per handshake message",
        "phases": phases,
        "crypto": _crypto_table(cs),
    }
