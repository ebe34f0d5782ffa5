"""The HTML section of a `secperf mqtt-load` Result: its tables from report/views/mqtt_load.py and
the clients-over-time figure."""

from __future__ import annotations

from typing import Any

from ..core.result_schema import Result
from . import html_grid as GV
from .html_env import figure_view
from .plots import Plot, slug
from .views import mqtt_load as V


def plots(doc: Result) -> list[Plot]:
    """The clients-over-time figure of an mqtt-load Result (none for other Results)."""
    m = V.present(doc.analysis)
    over_time = V.clients_over_time(m) if m is not None else []
    if not any(pts for _, pts in over_time):
        return []
    return [
        Plot(
            slug("mqtt-load-clients"),
            "line",
            "Clients up and connecting through the run",
            over_time,
            "",
            {"x_label": "seconds since the start", "y_label": "clients"},
        )
    ]


def view(doc: Result) -> dict[str, Any] | None:
    m = V.present(doc.analysis)
    if m is None:
        return None
    figures = [(p.title, figure_view(p)) for p in plots(doc)]
    return {
        "template": "mqtt_load.html.j2",
        "title": "MQTT load: persistent clients, PUBLISH latency, a reconnect storm",
        "facts": V.facts(m),
        "phases": GV.view(V.phases(m)),
        "model": GV.view(V.storm_model(m)),
        "figures": figures,
    }
