"""Terminal tables for `secperf device`: drawn from report/views/device_tables.py (the HTML page
draws the same grids): per-message instruction counts under emulation, with the modelled time."""

from __future__ import annotations

from rich.table import Table

from ..core.result_schema import Result
from . import terminal_grid
from .views import device_tables as V


def tables(doc: Result) -> list[Table]:
    return terminal_grid.tables(list(V.grids(doc)))
