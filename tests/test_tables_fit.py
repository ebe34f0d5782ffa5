"""Terminal output that fits and answers first: every table kind, rendered at 80 and 160 columns
from real Results (made here by the real commands, the cheap ones), never cuts a number or a header
(no ellipsis in a table line, no line wider than the terminal), states one unit per column, and the
output starts with "At a glance", printed exactly once, for every Result kind."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

import secperf
from secperf.app.runner import result_tables
from secperf.core import result as R
from secperf.report import fit, terminal
from secperf.report.units import QUANTITY, UNIT_FAMILIES
from secperf.report.views.answers import key_findings

SRC = str(Path(secperf.__file__).resolve().parents[1])
WIDTHS = (80, 160)
BOX = re.compile(r"[│┃]")

# cheap commands, one per table kind they produce (the measuring kinds are in the slow test below)
COMMANDS = {
    "whatif-sweep": ["whatif", "mqtt", "--sweep", "rtt=200..1600:350,handshake=full,resumed", "--n", "2000"],
    "whatif-baseline": ["whatif", "mqtt,coap", "--network", "lte-m,nb-iot", "--baseline", "--n", "2000"],
    "plan": ["plan", "--pattern", "periodic-collection,real-time-control", "--n", "2000"],
    "can": ["can"],
    "fleet": ["fleet", "--capacity", "500", "--devices", "1000,10000"],
    "crypto": ["crypto", "--alg", "ed25519,ecdsa-p256,x25519", "--n", "3", "--duration", "0.05"],
}


def secperf_cmd(args: list[str], out: Path, columns: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": str(columns), "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-m", "secperf", *args, "--out", str(out), "--no-report"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{name: (stdout at 80 columns, the Result)} for every cheap command."""
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": SRC}
    procs = {}
    for name, args in COMMANDS.items():  # side by side: each is mostly interpreter start-up
        out = tmp_path_factory.mktemp(name)
        procs[name] = (
            out,
            subprocess.Popen(
                [sys.executable, "-m", "secperf", *args, "--out", str(out), "--no-report"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            ),
        )
    got = {}
    for name, (out, p) in procs.items():
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, f"{name}: {stderr[-2000:]}"
        res = next(d for d in out.iterdir() if d.name != "latest") / "result.json"
        got[name] = (stdout, R.load(res))
    return got


def render(doc: R.Result, width: int) -> str:
    """What a command prints for this Result at this width (the same function the commands call)."""
    buf = io.StringIO()
    con = Console(file=buf, width=width, force_terminal=False, color_system=None)
    terminal.print_result(con, doc, result_tables(doc, doc.params or {}))
    return buf.getvalue()


def check_fits(text: str, width: int, what: str) -> None:
    lines = text.splitlines()
    from rich.cells import cell_len

    wide = [ln for ln in lines if cell_len(ln.rstrip()) > width]
    assert not wide, f"{what}: {len(wide)} lines wider than {width}: {wide[0]!r}"
    cut = [ln for ln in lines if BOX.search(ln) and "…" in ln]
    assert not cut, f"{what}: a cell or header cut with an ellipsis at {width} columns: {cut[0]!r}"


def check_glance_first_once(text: str, what: str) -> None:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert lines and lines[0].strip() == terminal.GLANCE_TITLE, f"{what}: output does not start with At a glance"
    assert sum(ln.strip() == terminal.GLANCE_TITLE for ln in lines) == 1, f"{what}: At a glance more than once"


def units_per_column(table: Table) -> list[tuple[str, set[str]]]:
    """(header, units of one family) for every column of the table as it prints (after the fitter)."""
    out = []
    t = fit.normalise(table)
    for col in t.columns:
        by: dict[str, set[str]] = {}
        for cell in col._cells:
            for m in QUANTITY.finditer(fit.cell_text(cell)):
                u = "µs" if m.group("unit") in ("us", "μs") else m.group("unit")
                by.setdefault(UNIT_FAMILIES[u][0], set()).add(u)
        out += [(str(col.header), units) for units in by.values()]
    return out


@pytest.mark.parametrize("name", list(COMMANDS))
def test_command_output_fits_80_columns_and_starts_with_its_answer(runs, name):
    stdout, doc = runs[name]
    check_fits(stdout, 80, name)
    check_glance_first_once(stdout, name)
    assert key_findings(doc), f"{name}: no finding computed from its rows"


@pytest.mark.parametrize("name", list(COMMANDS))
@pytest.mark.parametrize("width", WIDTHS)
def test_every_table_fits_with_one_unit_per_column(runs, name, width):
    doc = runs[name][1]
    text = render(doc, width)
    check_fits(text, width, f"{name} at {width}")
    check_glance_first_once(text, f"{name} at {width}")
    tables = result_tables(doc, doc.params or {})
    assert tables, f"{name}: no tables"
    for t in tables:
        for header, units in units_per_column(t):
            assert len(units) == 1, f"{name}: column {header!r} of {t.title!r} mixes {sorted(units)}"


def test_the_issue_sweep_shows_whole_numbers_units_in_headers_and_axis_units(runs):
    """The issue's example: at 160 columns every P50/P95 cell was `3.…`; now whole, in one unit."""
    doc = runs["whatif-sweep"][1]
    from secperf.report.terminal_whatif import _whatif, prediction_table

    t = fit.normalise(prediction_table(_whatif(doc)))
    heads = [c.header for c in t.columns]
    assert "P50 (ms)" in heads and "P95 (ms)" in heads
    p95 = [fit.cell_text(c) for c in t.columns[heads.index("P95 (ms)")]._cells]
    assert all(re.fullmatch(r"\d+(\.\d+)?", v) for v in p95), p95  # whole numbers, no unit, no ellipsis
    text = render(doc, 160)
    assert "rtt=1600ms" in text and "rtt=200ms" in text  # the swept axis carries its unit
    row = next(ln for ln in text.splitlines() if "rtt=1600ms" in ln and "│" in ln)
    assert "4800" in row


def test_plan_matrix_states_latency_in_one_unit(runs):
    """A plan column mixed `P95 10.25 s` and `P95 8621 ms`: every latency of a column now in one unit."""
    doc = runs["plan"][1]
    from secperf.report.terminal_plan import matrix_table, plans

    t = fit.normalise(matrix_table(plans(doc)))
    for col in t.columns[2:]:
        units = {
            m.group("unit")
            for c in col._cells
            for m in QUANTITY.finditer(fit.cell_text(c))
            if UNIT_FAMILIES[m.group("unit")][0] == "time"
        }
        assert len(units) <= 1, (col.header, units)


def test_units_move_to_the_header_and_convert_exactly():
    t = Table(title="t")
    t.add_column("name")
    t.add_column("P50")
    for n, v in (("a", "602 ms"), ("b", "4.8 s"), ("c", "[red]1.65 s[/red]"), ("d", "–")):
        t.add_row(n, v)
    n = fit.normalise(t)
    assert n.columns[1].header == "P50 (ms)"
    assert [fit.cell_text(c) for c in n.columns[1]._cells] == ["602", "4800", "1650", "–"]
    assert n.columns[1]._cells[2] == "[red]1650[/red]"  # markup kept


def test_a_wide_table_splits_into_groups_repeating_the_key_and_long_labels_get_keys():
    t = Table(title="wide")
    t.add_column("scenario")
    for i in range(14):
        t.add_column(f"measurement number {i}", justify="right")
    labels = [f"mqtt {h} x25519 cert ecdsa-p256 key software" for h in ("full", "resumed")]
    for lab in labels:
        t.add_row(lab, *[f"{123456.789 * (i + 1):.3f} ms" for i in range(14)])
    buf = io.StringIO()
    con = Console(file=buf, width=80, color_system=None)
    fit.print_table(con, t)
    text = buf.getvalue()
    check_fits(text, 80, "wide")
    assert "(part 1 of" in text and "(part 2 of" in text
    parts = text.count("(part ")
    assert text.count("│ full") == parts and text.count("│ resumed") == parts  # the key in every group
    assert "every row: mqtt x25519 cert ecdsa-p256 key software" in text  # the legend
    for v in ("123.456789", "1728.395046"):  # every digit kept (ms -> s would drop none either)
        assert v in text or v.replace(".", "") in text.replace(".", "")


def test_too_narrow_for_any_group_stacks_rows():
    t = Table(title="narrow")
    t.add_column("key")
    t.add_column("a very long header", justify="right")
    t.add_column("b", justify="right")
    t.add_row("row-one-with-a-long-name", "12345678901234567890 B", "1 B")
    buf = io.StringIO()
    con = Console(file=buf, width=24, color_system=None)
    fit.print_table(con, t)
    text = buf.getvalue()
    assert "…" not in text
    assert "12345678901.23456789" in text  # whole, on a line of its own (converted to GB exactly)


@pytest.mark.slow
def test_every_measuring_kind_fits_and_answers_first(tmp_path):
    """`secperf run` (the quick scenario: crypto, handshakes, signer, JWT, connect, device, what-if)
    and `secperf mac`, `secperf handshake`, `secperf server`: "At a glance" first and once, nothing
    cut, at 80 and 160."""
    for args in (
        ["run", "--n", "3"],
        ["mac", "--n", "3", "--duration", "0.05", "--cortexm", "none"],
        ["handshake", "versions", "--n", "3"],
        ["server", "--key", "ecdsa-p256", "--concurrency", "2", "--duration", "0.5", "--warmup", "0.1"],
    ):
        out = tmp_path / args[0]
        p = secperf_cmd(args, out, 80)
        assert p.returncode in (0, 1), p.stderr[-2000:]
        check_fits(p.stdout, 80, args[0])
        check_glance_first_once(p.stdout, args[0])
        doc = R.load(next(d for d in out.iterdir() if d.name != "latest") / "result.json")
        kinds = {s.kind for s in doc.series}
        sections = {f["section"] for f in key_findings(doc)}
        for k in kinds & {"crypto", "handshake", "signer", "jwt", "connect", "device", "whatif"}:
            if any(
                s.summary is not None or getattr(s.derived, "usable", None) is not None
                for s in doc.series
                if s.kind == k
            ):
                assert k in sections or (k == "crypto" and "mac" in sections), f"{args[0]}: no finding for {k}"
        if args[0] == "server":
            assert "server" in sections, "server: no capacity finding"
        text = render(doc, 160)
        check_fits(text, 160, args[0])
        check_glance_first_once(text, args[0])
