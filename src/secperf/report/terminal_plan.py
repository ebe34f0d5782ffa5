"""Terminal tables of a `plan` Result: drawn from report/views/plan.py (the HTML page draws the
same grids), and `plan --list`."""

from __future__ import annotations

from rich import box
from rich.table import Table

from ..core.analysis_schema import PlanPattern
from ..core.result_schema import Result
from ..inputs import patterns as PS
from ..model import energy as E
from ..plan.measures import CATALOGUE
from . import terminal_grid
from .fit import print_table
from .terminal import out_console
from .views import plan as V
from .views.plan import MARK, SHORT, fmt_bytes, fmt_j, fmt_ms, plans

__all__ = ["MARK", "SHORT", "fmt_bytes", "fmt_j", "fmt_ms", "listing", "matrix_table", "plans", "tables"]


def matrix_table(ps: list[PlanPattern]) -> Table:
    """The suitability matrix, compact: ruled rows, no side padding (six patterns fit at 80 columns)."""
    return terminal_grid.table(V.matrix(ps), show_lines=True, box=box.SIMPLE_HEAD, padding=(0, 0, 0, 1), pad_edge=False)


def tables(doc: Result) -> list[Table]:
    grids = V.grids(doc)
    if not grids:
        return []
    return [matrix_table(plans(doc))] + terminal_grid.tables(list(grids[1:]))


def listing() -> None:
    con = out_console()
    t = Table(title="built-in patterns (secperf plan --pattern NAME)", title_justify="left")
    for c in ("pattern", "protocol", "schedule", "description"):
        t.add_column(c)
    for n in PS.builtin_names():
        p = PS.load_pattern(n)
        t.add_row(n, f"{p.stack.protocol}/{p.stack.auth}", p.traffic.schedule, p.description)
    print_table(con, t)
    m = Table(title="design measures", title_justify="left")
    m.add_column("measure")
    m.add_column("what it changes in the what-if inputs")
    for name, x in CATALOGUE.items():
        m.add_row(name, x.transforms)
    print_table(con, m)
    con.print("radio energy profiles: " + ", ".join(E.radio_names()))
