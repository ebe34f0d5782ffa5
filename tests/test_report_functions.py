"""The report layer's shape (issue 44): mqtt-load's tables are shared Grids drawn by both renderers
like every other kind's, and no function in src/secperf/report is longer than 80 lines."""

from __future__ import annotations

import ast
from pathlib import Path

from secperf.core.result import validate
from secperf.core.result_schema import Result
from secperf.report import terminal_server
from secperf.report.views import mqtt_load as MQ
from secperf.report.views.grid import Grid
from test_one_view_per_kind import _rows_drawn, _same_on_both, html_tables, server_doc

REPORT = Path(__file__).resolve().parent.parent / "src" / "secperf" / "report"
MAX_LINES = 80


def _phase(name: str, up: int, **kw: object) -> dict:
    return {
        "phase": name,
        "clients": 20,
        "up_at_end": up,
        "time_all_up_s": 0.4,
        "connack_p50_ms": 3.1,
        "connack_p99_ms": 9.0,
        "puback_p50_ms": 1.2,
        "puback_p99_ms": 4.5,
        "pubacks": 100,
        "published_qos1": 100,
        "refused": 0,
        "failed": 0,
        "dropped": 0,
        "broker_utilisation": 0.25,
        **kw,
    }


def mqtt_load_doc() -> Result:
    """A server Result holding an mqtt-load analysis as app/mqtt_load.py writes it."""
    doc = server_doc()
    doc.analysis.mqtt_load = {
        "config": {"clients": 20, "tls": "1.3", "client_auth": True, "key": "ecdsa-p256", "qos": 1},
        "capacity_per_s": 850.0,
        "limits": {"nofile": 1024, "nofile_hard": 4096, "source_addrs": 1, "ephemeral_ports": 28000},
        "phases": [
            _phase("ramp", 20),
            _phase("hold", 20),
            _phase("storm", 19, errors={"connect refused [ECONNREFUSED]": 1}, failed=1),
        ],
        "fleet_model": {
            "measured": {"time_all_back_s": 1.5, "wait_p50_s": 0.3},
            "models": {
                "abandoned work": {"time_all_back_s": 1.4, "ratio_time_all_back_s": 1.07, "wait_p50_s": 0.25},
                "late work dropped": {"time_all_back_s": 1.2, "ratio_time_all_back_s": 1.25, "wait_p50_s": 0.2},
            },
            "note": "the storm's clients reconnect at once",
        },
    }
    return validate(doc)


def test_mqtt_load_tables_are_grids_drawn_by_both_renderers():
    doc = mqtt_load_doc()
    m = MQ.present(doc.analysis)
    grids = [MQ.phases(m), MQ.storm_model(m)]
    assert all(isinstance(g, Grid) for g in grids)
    assert grids[0].column("phase") == ["ramp", "hold", "storm"] and grids[0].rows[2][1] == "19 / 20"
    assert any("ECONNREFUSED" in n for n in grids[0].notes)  # a phase's errors under its table
    terminal = terminal_server.mqtt_load_tables(doc)
    _rows_drawn(grids, terminal)  # the terminal draws the view's grids, cell for cell
    assert str(terminal[0].title).startswith("MQTT load: ")  # the run's facts head the terminal's table
    page = html_tables(doc)
    assert _same_on_both(terminal, page) == 2


def _long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.parent.name}/{path.name}:{n.name} ({n.end_lineno - n.lineno + 1} lines)"
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        and n.end_lineno is not None
        and n.end_lineno - n.lineno + 1 > MAX_LINES
    ]


def test_no_function_in_report_is_over_80_lines():
    long = [f for p in sorted(REPORT.rglob("*.py")) for f in _long_functions(p)]
    assert not long, "split by concern: " + ", ".join(long)


def test_the_length_scan_finds_a_long_function(tmp_path):
    p = tmp_path / "report" / "m.py"
    p.parent.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    p.write_text(f"def short():\n    return 1\n\n\ndef long():\n{body}\n")
    assert _long_functions(p) == ["report/m.py:long (81 lines)"]
