"""Terminal tables for `secperf device`: per-message instruction counts under emulation, with the
derived millisecond range labelled as such."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table

from ..core.result import as_result
from ..core.result_schema import Result
from .views import device as V


def tables(doc: Result | Mapping[str, Any]) -> list[Table]:
    doc = as_result(doc)
    out = []
    for phase, series in V.phases(doc).items():
        varying = V.varying_labels(series)
        t = Table(
            title=f"Guest instructions per handshake message, {phase} "
            f"({series[0].labels['device']}, {series[0].labels['library']}, median)",
            title_justify="left",
            header_style="bold",
            caption=V.profile_note(series),
            caption_justify="left",
        )
        t.add_column("message")
        for s in series:
            t.add_column(V.column_name(s, varying), justify="right")
        order, mat = V.matrix(series)
        for msg, vals in zip(order, mat):
            t.add_row(msg, *[V.fmt_count(v) for v in vals])
        t.add_row(
            "[bold]handshake total[/bold]",
            *[f"[bold]{V.fmt_count(s['derived']['instructions_median'])}[/bold]" for s in series],
        )
        t.add_row("cycles (timing model)", *[V.cycles(s.derived.get("time")) for s in series])
        t.add_row("[bold]time (band)[/bold]", *[V.time_band(s.derived.get("time")) for s in series])
        t.add_row("old CPI range (for comparison)", *[V.ms_range(s) for s in series])
        t.add_row("build", *[V.build_label(s) for s in series])
        t.add_row("application data", *[V.fmt_count(s.derived.get("app_instructions_median")) for s in series])
        t.add_row("library footprint (linked)", *[V.footprint(s) for s in series])
        t.add_row("handshake stack (worst, painted)", *[V.stack(s) for s in series])
        t.add_row("checks", *["; ".join(V.checks(s)) for s in series])
        out.append(t)
    cs = V.crypto_series(doc)
    if cs:
        # the build column holds a short id (stack and config); the libraries' full names go under the
        # table, once each (a full name per row wrapped to five lines at 80 columns)
        builds = {V.build_id(s): V.build_label(s) for s in cs}
        devices = {s.labels["device"] for s in cs}
        one = len(devices) == 1
        legend = "; ".join(f"{k}: {v}" for k, v in builds.items() if k != v)
        t = Table(
            title="Guest instructions and modelled time per primitive operation (warm median; first call as cold)"
            + (f" on {next(iter(devices))}" if one else ""),
            title_justify="left",
            header_style="bold",
            caption=V.profile_note(cs) + (f"\nbuilds: {legend}" if legend else ""),
            caption_justify="left",
        )
        cols = (
            *(() if one else ("device",)),
            "build",
            "operation",
            "instr. cold",
            "instr. warm",
            "cycles",
            "time (band)",
            "old CPI range",
            "stack (painted)",
        )
        for c in cols:
            t.add_column(c, justify="left" if c in ("device", "build", "operation") else "right")
        for s in cs:
            d = s.derived
            dev = () if one else (s.labels["device"],)
            if not d or d.get("instructions_cold") is None:  # failed: at most its footprint was measured
                t.add_row(*dev, V.build_id(s), s.labels["op"], "[red]failed[/red]", *[""] * (len(cols) - 3 - len(dev)))
                continue
            t.add_row(
                *dev,
                V.build_id(s),
                s.labels["op"],
                V.fmt_count(d["instructions_cold"]),
                V.fmt_count(d["instructions_median"]),
                V.cycles(d.get("time")),
                V.time_band(d.get("time")),
                V.ms_range(s),
                V.op_stack(s),
            )
        out.append(t)
    return out
