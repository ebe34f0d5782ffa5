"""Terminal tables for `secperf server` (capacity and server CPU per handshake, with the
private-key split), `secperf fleet` (reconnect storm recovery) and `secperf mqtt-load`: drawn from
report/views/server.py and report/views/mqtt_load.py (the HTML page draws the same grids)."""

from __future__ import annotations

from rich.table import Table

from ..core.result_schema import Result
from . import terminal_grid
from .views import mqtt_load as MQ
from .views import server as V
from .views.server import capacity_row, configs, limit_warnings, open_curve, pivot, pivot_cell, server_series

__all__ = [
    "capacity_row",
    "configs",
    "limit_warnings",
    "mqtt_load_tables",
    "open_curve",
    "pivot",
    "pivot_cell",
    "server_series",
    "tables",
]


def tables(doc: Result) -> list[Table]:
    return terminal_grid.tables(list(V.grids(doc))) + mqtt_load_tables(doc)


def mqtt_load_tables(doc: Result) -> list[Table]:
    """secperf mqtt-load's tables (report/views/mqtt_load.py, the HTML report draws the same)."""
    m = MQ.present(doc.analysis)
    if m is None:
        return []
    phases = MQ.phases(m)
    phases.title = "MQTT load: " + "; ".join(MQ.facts(m))  # the run's facts head its first table here
    return terminal_grid.tables([phases, MQ.storm_model(m)])
