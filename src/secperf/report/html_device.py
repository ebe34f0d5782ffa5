"""The `secperf device` section of the HTML report: per-message instruction tables and stacked
bars per configuration, cold and warm, with derived millisecond ranges labelled as derived."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.result_schema import Result, Series
from . import html_grid
from .html_env import figure_view
from .plots import Plot, slug
from .views import device as V
from .views import device_tables as T


def _phase_plot(phase: str, series: Sequence[Series]) -> Plot:
    varying = V.varying_labels(series)
    rows = [
        (V.column_name(s, varying), [(V.message_label(m), float(m["instructions"])) for m in V.messages(s)])
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
    """Per phase (cold, warm): the instruction grid (report/views/device_tables.py, the terminal draws
    the same) and its stacked bars; then the primitives."""
    ph = V.phases(doc)
    cs = V.crypto_series(doc)
    if not ph and not cs:
        return None
    phases = [
        {"table": html_grid.view(T.handshake(phase, series)), "figure": figure_view(_phase_plot(phase, series))}
        for phase, series in ph.items()
    ]
    return {
        "template": "device.html.j2",
        "title": "Emulated devices: TLS stacks on ARM cores, instructions per handshake message",
        "phases": phases,
        "crypto": html_grid.view(T.crypto(cs)),
    }
