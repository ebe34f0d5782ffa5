"""One view per kind, two renderers: for what-if, plan, device and server Results, every table the
terminal prints is also on the HTML page, with the same column names, the same row labels and the
same figures in every cell, and both come from the kind's view in report/views (no second table)."""

from __future__ import annotations

import copy
import io
from html.parser import HTMLParser

import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text

import result_kinds as K
from secperf.core.result import validate
from secperf.core.result_schema import Result
from secperf.report import terminal_device, terminal_grid, terminal_plan, terminal_server, terminal_whatif
from secperf.report.html import render
from secperf.report.html_env import DRAW_PLOTS
from secperf.report.views import device_tables, plan, server, whatif_tables
from secperf.report.views.grid import Grid


class _Tables(HTMLParser):
    """Every <table> of a page as rows of cell texts (a <br> inside a cell as a line break)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def html_tables(doc) -> list[list[list[str]]]:
    token = DRAW_PLOTS.set(False)  # the tables are the point; the plots' drawing takes seconds
    try:
        page = render(doc)
    finally:
        DRAW_PLOTS.reset(token)
    p = _Tables()
    p.feed(page)
    return p.tables


def _plain(cell: object) -> str:
    return Text.from_markup(cell).plain if isinstance(cell, str) else cell.plain if isinstance(cell, Text) else ""


def terminal_rows(t: Table) -> list[list[str]]:
    """The header and the rows of a rich Table as plain text."""
    head = [_plain(c.header) for c in t.columns]
    cols = [[_plain(c) for c in col._cells] for col in t.columns]
    return [head, *[list(r) for r in zip(*cols)]]


def _same_on_both(terminal: list[Table], page: list[list[list[str]]]) -> int:
    """Each terminal table is on the page with the same header and cells; the number compared."""
    for t in terminal:
        rows = terminal_rows(t)
        match = [x for x in page if x and x[0] == rows[0]]
        assert match, f"no HTML table with the columns {rows[0]} (table {t.title!r})"
        assert any(x == rows for x in match), (t.title, rows, match)
    return len(terminal)


def _rows_drawn(grids: list[Grid], terminal: list[Table]) -> None:
    """The terminal draws the view's grids, cell for cell (nothing computed a second time)."""
    assert len(grids) == len(terminal)
    for g, t in zip(grids, terminal):
        assert terminal_rows(t) == [g.head, *g.rows]


@pytest.fixture(scope="module")
def whatif_doc(tmp_path_factory):
    return validate(
        K.cli(
            ["whatif", "mqtt,coap", "--network", "lte-m", "--baseline", "--n", "200", "--host-costs", "shipped"],
            tmp_path_factory.mktemp("wi"),
        )
    )


@pytest.fixture(scope="module")
def plan_doc(tmp_path_factory):
    return validate(K.cli(K.REAL["plan"], tmp_path_factory.mktemp("plan")))


def device_doc() -> Result:
    """A device Result with a handshake series holding its per-message counts, as measure/device.py
    writes them, and a primitive's series (tests/result_kinds.py)."""
    doc = K.device()
    s = next(x for x in doc.series if x.kind == "device")
    s.labels["library"] = "wolfSSL 5.9.4"
    parts = [
        ("sent", "ClientHello", 1_200_000),
        ("received", "ServerHello", 1_300_000),
        ("received", "Certificate", 20_000_000),
        ("sent", "Finished", 7_500_000),
    ]
    t = s.derived.time
    t.model, t.clock_mhz, t.banded = "cortex-m33", 128.0, {"alu": [1, 1]}
    s.derived.messages = [{"dir": d, "message": m, "instructions": n, "n": 3} for d, m, n in parts]
    s.derived.spread = 0.0
    s.derived.parts_sum_max_error = 0.0
    s.derived.derived_ms = {
        "ms_low": 234.0,
        "ms_high": 468.0,
        "clock_mhz": 128.0,
        "cpi": [1.0, 2.0],
        "cpi_estimate": True,
    }
    c = next(x for x in doc.series if x.kind == "device_crypto")
    c.derived.derived_ms = {"ms_low": 62.5, "ms_high": 125.0, "clock_mhz": 128.0, "cpi": [1.0, 2.0]}
    cold = copy.deepcopy(s)
    cold.id = s.id.replace("/warm", "/cold")
    cold.labels["phase"] = "cold"
    doc.series.insert(0, cold)
    return doc


def test_whatif_terminal_and_page_show_the_same_tables(whatif_doc):
    terminal = terminal_whatif.tables(whatif_doc)
    _rows_drawn(whatif_tables.grids(whatif_doc), terminal)
    titles = [str(t.title) for t in terminal]
    assert any(x.startswith("what security costs") for x in titles)  # --baseline's table
    assert any(x.startswith("which protocol") for x in titles)  # two protocols side by side
    assert _same_on_both(terminal, html_tables(whatif_doc)) >= 4


def test_plan_terminal_and_page_show_the_same_tables(plan_doc):
    terminal = terminal_plan.tables(plan_doc)
    _rows_drawn(plan.grids(plan_doc), terminal)
    n = len(plan.plans(plan_doc))
    assert len(terminal) >= 1 + 2 * n + 1  # the matrix, per pattern designs and ranking, alerts
    assert _same_on_both(terminal, html_tables(plan_doc)) == len(terminal)
    detail = plan.detail(plan.plans(plan_doc)[0])
    assert "per msg" in detail.head and detail.column("design")[0] == "as written"


def test_device_terminal_and_page_show_the_same_tables():
    doc = device_doc()
    terminal = terminal_device.tables(doc)
    _rows_drawn(device_tables.grids(doc), terminal)
    assert len(terminal) == 3  # cold, warm, the primitives
    assert terminal_rows(terminal[0])[1][0] == "ClientHello"
    assert _same_on_both(terminal, html_tables(doc)) == 3


def server_doc() -> Result:
    """A server Result (tests/result_kinds.py) with the configuration label measure/server.py writes."""
    doc = K.server()
    doc.series[0].labels.update(config="nginx, rsa-2048, software", server_software={"server": "nginx"})
    return doc


def test_server_terminal_and_page_show_the_same_tables(tmp_path):
    doc = server_doc()
    terminal = terminal_server.tables(doc)
    _rows_drawn(server.grids(doc), terminal)
    titles = [str(t.title) for t in terminal]
    assert titles[0].startswith("Server capacity") and any(x.startswith("Capacity curve") for x in titles)
    assert _same_on_both(terminal, html_tables(doc)) == len(terminal)
    fleet = validate(K.cli(K.REAL["fleet"], tmp_path))
    storm = terminal_server.tables(fleet)
    assert [str(t.title) for t in storm] == ["Reconnect storm (fluid queueing model over the measured capacity)"]
    assert _same_on_both(storm, html_tables(fleet)) == 1


def test_a_cell_in_brackets_prints_as_written():
    """rich took '[handshake done]' for markup and printed nothing; a grid's cells are text."""
    g = Grid("t", ["message", "bytes"])
    g.add(["Finished [handshake done]", "52"])
    buf = io.StringIO()
    Console(file=buf, width=80, color_system=None).print(terminal_grid.table(g))
    assert "Finished [handshake done]" in buf.getvalue()
