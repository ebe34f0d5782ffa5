"""Terminal tables of a `whatif` Result: drawn from report/views/whatif_tables.py (the HTML page
draws the same grids), and `whatif --list`."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from ..core.result_schema import Result, Series
from ..model import costs as C
from ..model import flights as F
from . import terminal_grid
from .fit import print_table
from .terminal import out_console
from .views import whatif_tables as V
from .views.whatif import whatif_series


def _whatif(doc: Result) -> list[Series]:
    return whatif_series(doc)


def prediction_table(series: Sequence[Series]) -> Table:
    return terminal_grid.table(V.prediction(series))


def tables(doc: Result) -> list[Table]:
    return terminal_grid.tables(list(V.grids(doc)))


def listing() -> None:
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
