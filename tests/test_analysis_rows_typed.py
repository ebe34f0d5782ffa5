"""A what-if's cost-table rows and its security-cost table are records (core/analysis_schema.CostRow,
SecurityCostTable, SecurityCostLine), no longer open mappings: they read as attributes, a version-3
Result with an undeclared key in one is refused naming its path, and a saved Result (the release
fixture) and a --baseline what-if made now write back the very JSON they were read from."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import run_cli
from secperf.core import result as R
from secperf.core.analysis_schema import CostRow, SecurityCostLine, SecurityCostTable, TornadoRow, VerifyRow
from secperf.core.errors import ResultError

OLD = Path(__file__).parent / "data" / "old_results"


def _same_json(a: object, b: object) -> None:
    """Equal, with every object's keys in the same order (what a file written back shows)."""
    assert json.dumps(a) == json.dumps(b)


def test_the_saved_whatif_result_reads_typed_rows_and_writes_back_the_same():
    text = (OLD / "whatif.json").read_text()
    raw = json.loads(text)
    doc = R.validate(json.loads(text))
    rows = doc.analysis.whatif.cost_table.rows
    assert len(rows) == len(raw["analysis"]["whatif"]["cost_table"]["rows"]) > 10
    assert all(isinstance(r, CostRow) for r in rows)
    first = raw["analysis"]["whatif"]["cost_table"]["rows"][0]
    assert (rows[0].party, rows[0].op, rows[0].us, rows[0].source) == (
        first["party"],
        first["op"],
        first["us"],
        first["source"],
    )
    _same_json(R.to_json(doc)["analysis"], raw["analysis"])  # the analysis in its very key order
    assert json.dumps(R.to_json(doc), sort_keys=True) == json.dumps(raw, sort_keys=True)  # the rest: same keys


def test_a_whole_number_figure_stays_one():
    raw = json.loads((OLD / "whatif.json").read_text())
    raw["analysis"]["whatif"]["cost_table"]["rows"][0]["us"] = 400
    doc = R.validate(json.loads(json.dumps(raw)))
    assert doc.analysis.whatif.cost_table.rows[0].us == 400
    _same_json(R.to_json(doc)["analysis"], raw["analysis"])  # `400`, not `400.0`


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """A --baseline what-if made now (the security-cost table is written only with --baseline)."""
    out = tmp_path_factory.mktemp("baseline")
    p = run_cli("whatif", "tls1.3,mqtt", "--n", "200", "--baseline", "--json", "--out", str(out), cwd=out)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def test_a_baseline_whatif_writes_a_typed_security_cost_and_reads_back_the_same(baseline):
    raw = json.loads(baseline)
    doc = R.validate(json.loads(baseline))
    sec = doc.analysis.whatif.security_cost
    assert isinstance(sec, SecurityCostTable) and sec.rule
    assert all(isinstance(x, SecurityCostLine) for x in sec.rows)
    ids = {s.id for s in doc.series}
    assert sec.rows and {x.series for x in sec.rows} <= ids  # each line names a row of the Result
    assert all(x.line.startswith("security adds") for x in sec.rows)
    assert set(sec.without_security) == {"tls1.3", "mqtt"}
    _same_json(R.to_json(doc)["analysis"], raw["analysis"])


@pytest.mark.parametrize(
    "where, plant, path",
    [
        ("cost row", lambda w: w["cost_table"]["rows"][2].update(cycles=5), "cost_table.rows[2]: 'cycles'"),
        ("security line", lambda w: w["security_cost"]["rows"][0].update(extra=1), "security_cost.rows[0]: 'extra'"),
        ("security table", lambda w: w["security_cost"].update(note="x"), "security_cost: 'note'"),
    ],
)
def test_an_undeclared_key_in_a_row_is_refused_with_its_path(baseline, where, plant, path):
    raw = json.loads(baseline)
    assert raw["schema_version"] == R.SCHEMA_VERSION
    plant(raw["analysis"]["whatif"])
    with pytest.raises(ResultError, match=re.escape(f"analysis.whatif.{path} is not a field")):
        R.validate(raw)


def test_a_row_missing_its_figure_is_refused(baseline):
    raw = json.loads(baseline)
    del raw["analysis"]["whatif"]["cost_table"]["rows"][0]["us"]
    with pytest.raises(ResultError, match=r"analysis\.whatif\.cost_table\.rows\.0\.us: Field required"):
        R.validate(raw)


def test_a_swept_whatif_writes_typed_tornado_rows_and_reads_back_the_same(tmp_path):
    p = run_cli(
        "whatif",
        "mqtt",
        "--sweep",
        "rtt=0,200,group=x25519,p-256",
        "--n",
        "300",
        "--json",
        "--out",
        str(tmp_path),
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    raw = json.loads(p.stdout)
    doc = R.validate(json.loads(p.stdout))
    tor = doc.analysis.whatif.tornado
    assert tor and all(isinstance(r, TornadoRow) for r in tor)
    by = {r.input: r for r in tor}
    assert set(by) <= {"rtt", "group"} and "rtt" in by
    assert by["rtt"].high_us - by["rtt"].low_us == pytest.approx(by["rtt"].swing_us)
    assert {by["rtt"].low_value, by["rtt"].high_value} == {0, 200}
    if "group" in by:
        assert {by["group"].low_value, by["group"].high_value} <= {"x25519", "p-256"}  # a name stays a name
    assert [r.swing_us for r in tor] == sorted((r.swing_us for r in tor), reverse=True)
    _same_json(R.to_json(doc)["analysis"], raw["analysis"])
    raw["analysis"]["whatif"]["tornado"][0]["median_us"] = 1.0
    with pytest.raises(ResultError, match=re.escape("analysis.whatif.tornado[0]: 'median_us' is not a field")):
        R.validate(raw)


def _verify_doc() -> dict:
    """The saved plan Result (this release's version) with a --verify table: a measured row and a note-only one."""
    raw = json.loads((OLD / "plan.json").read_text())
    raw["schema_version"] = R.SCHEMA_VERSION
    raw["analysis"]["plan"]["verify"] = [
        {
            "pattern": "periodic-collection",
            "measure": "keepalive",
            "row": "kept msg",
            "network": "nb-iot",
            "key": "software",
            "series": None,
            "predicted_p50_ms": 812.5,
            "measured_p50_ms": 790.0,
            "error_share": 0.028,
            "n": 15,
            "note": "",
        },
        {
            "pattern": "event-driven",
            "measure": "keepalive",
            "row": "–",
            "network": "nb-iot",
            "note": "CoAP: no kept session",
        },
    ]
    return raw


def test_plan_verify_rows_are_records_and_write_back_as_written():
    raw = _verify_doc()
    doc = R.validate(json.loads(json.dumps(raw)))
    measured, note_only = doc.analysis.plan.verify
    assert isinstance(measured, VerifyRow) and measured.n == 15 and measured.error_share == pytest.approx(0.028)
    assert note_only.n is None and note_only.key is None and note_only.note.startswith("CoAP")
    _same_json(R.to_json(doc)["analysis"], raw["analysis"])  # the note-only row gains no keys
    raw["analysis"]["plan"]["verify"][1]["grade"] = "A"
    with pytest.raises(
        ResultError, match=re.escape("analysis.plan.verify[1]: 'grade' is not a field of a plan --verify row")
    ):
        R.validate(raw)


def test_the_plan_report_draws_the_verify_rows(tmp_path):
    f = tmp_path / "result.json"
    f.write_text(json.dumps(_verify_doc()))
    p = run_cli("report", str(f), cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    html = (tmp_path / "report.html").read_text()
    assert "Measured cross-check (--verify)" in html and "+2.8%" in html and "CoAP: no kept session" in html
