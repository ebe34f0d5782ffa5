"""Undeclared keys: a Result of this release's schema version holding a key no model declares is
refused with the key's path and what it is not a field of (a ResultError: `secperf report` exits 2,
no traceback); a Result written by an older release keeps its keys and writes back the same; a
Result this release writes reads back unchanged; a record refuses an undeclared attribute."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import import_or_skip
from secperf.cli import main
from secperf.core import result as R
from secperf.core.result_schema import DERIVED_BY_KIND, ServerDerived

OLD = Path(__file__).parent / "data" / "old_results"


def _raw(name: str) -> dict:
    """A fixture's JSON as this release would write it (the current schema version)."""
    raw = json.loads((OLD / f"{name}.json").read_text())
    raw["schema_version"] = R.SCHEMA_VERSION
    return raw


def _first(raw: dict, kind: str) -> int:
    return next(i for i, s in enumerate(raw["series"]) if s["kind"] == kind)


def _top(raw):
    raw["speed"] = 1
    return "the top level: 'speed' is not a field of a Result"


def _series(raw):
    raw["series"][1]["colour"] = "red"
    return "series[1]: 'colour' is not a field of a series"


def _timer(raw):
    raw["series"][0]["timer"]["stop"] = "later"
    return "series[0].timer: 'stop' is not a field of a series' timer"


def _handshake_derived(raw):
    i = _first(raw, "handshake")
    raw["series"][i]["derived"]["foo"] = 3
    return f"series[{i}].derived: 'foo' is not a field of a handshake series' derived figures"


def _server_derived(raw):
    i = _first(raw, "server")
    raw["series"][i]["derived"]["handshakes_per_minute"] = 60.0
    return f"series[{i}].derived: 'handshakes_per_minute' is not a field of a server series' derived figures"


def _link_counts(raw):
    i = next(i for i, s in enumerate(raw["series"]) if s["derived"].get("link"))
    raw["series"][i]["derived"]["link"]["drops"] = 0
    return f"series[{i}].derived.link: 'drops' is not a field of an emulated link's counters"


def _analysis(raw):
    raw["analysis"]["verdict"] = {"ok": True}
    return "analysis: 'verdict' is not a field of a Result's analysis"


def _plan_pattern(raw):
    raw["analysis"]["plan"]["patterns"][0]["grade"] = "A"
    return "analysis.plan.patterns[0]: 'grade' is not a field of a plan's pattern row"


def _plan_table(raw):
    raw["analysis"]["plan"]["rules"] = "typo"
    return "analysis.plan: 'rules' is not a field of a plan's analysis"


def _fleet_run(raw):
    raw["analysis"]["fleet"]["runs"][0]["all_back_s"] = 1.0
    return "analysis.fleet.runs[0]: 'all_back_s' is not a field of a fleet's storm run"


def _whatif_cost_table(raw):
    raw["analysis"]["whatif"]["cost_table"]["owner"] = "me"
    return "analysis.whatif.cost_table: 'owner' is not a field of a what-if's cost table"


def _whatif_table(raw):
    raw["analysis"]["whatif"]["end"] = "connack"
    return "analysis.whatif: 'end' is not a field of a what-if's analysis"


LEVELS = {
    "top": ("handshake", _top),
    "series": ("handshake", _series),
    "timer": ("crypto", _timer),
    "handshake derived": ("handshake", _handshake_derived),
    "server derived": ("server", _server_derived),
    "link counts": ("netem", _link_counts),
    "analysis": ("whatif", _analysis),
    "plan pattern row": ("plan", _plan_pattern),
    "plan table": ("plan", _plan_table),
    "fleet storm run": ("fleet", _fleet_run),
    "what-if cost table": ("whatif", _whatif_cost_table),
    "what-if table": ("whatif", _whatif_table),
}
ANALYSIS_TABLES = ["plan pattern row", "plan table", "fleet storm run", "what-if cost table", "what-if table"]


@pytest.mark.parametrize("level", LEVELS)
def test_an_undeclared_key_is_refused_naming_its_path(level):
    name, plant = LEVELS[level]
    raw = _raw(name)
    R.validate(json.loads(json.dumps(raw)))  # the fixture itself reads at this version
    said = plant(raw)
    with pytest.raises(R.ResultError) as exc:
        R.validate(raw, "r.json")
    assert f"r.json: {said}" in str(exc.value)


@pytest.mark.parametrize("level", ["top", "handshake derived", "server derived", "analysis"])
def test_report_exits_2_naming_the_key(level, tmp_path, capsys):
    name, plant = LEVELS[level]
    raw = _raw(name)
    said = plant(raw)
    f = tmp_path / "result.json"
    f.write_text(json.dumps(raw))
    assert main(["report", str(f)]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    assert not (tmp_path / "report.html").exists()


@pytest.mark.parametrize("level", ANALYSIS_TABLES)
@pytest.mark.parametrize("command", ["report", "compare", "metrics"])
def test_an_undeclared_key_in_an_analysis_table_exits_2(level, command, tmp_path, capsys):
    """A key no model declares inside a plan's, a fleet's or a what-if's tables (a row included) is
    refused by every reader of the file, naming its path; nothing is written."""
    name, plant = LEVELS[level]
    raw = _raw(name)
    said = plant(raw)
    f = tmp_path / "result.json"
    f.write_text(json.dumps(raw))
    good = tmp_path / "good.json"
    good.write_text((OLD / f"{name}.json").read_text())
    argv = {
        "report": ["report", str(f)],
        "compare": ["compare", str(good), str(f)],
        "metrics": ["metrics", str(f), "-o", str(tmp_path / "m.prom")],
    }[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    assert not (tmp_path / "report.html").exists() and not (tmp_path / "m.prom").exists()


def test_analysis_tables_read_as_models():
    """The plan's, the fleet's and the what-if's tables and their rows are records read by attribute."""
    from secperf.core.analysis_schema import CostTableAnalysis, FleetRun, PlanPattern

    plan = R.validate(_raw("plan")).analysis.plan
    assert plan is not None and plan.patterns and all(isinstance(p, PlanPattern) and p.verdict for p in plan.patterns)
    fleet = R.validate(_raw("fleet")).analysis.fleet
    assert fleet is not None and fleet.runs and all(isinstance(r, FleetRun) for r in fleet.runs)
    assert all(r.time_all_back_s is None or r.time_all_back_s > 0 for r in fleet.runs)
    wi = R.validate(_raw("whatif")).analysis.whatif
    assert wi is not None and isinstance(wi.cost_table, CostTableAnalysis) and wi.cost_table.rows
    with pytest.raises(R.ResultError, match="'grade' is not a declared field"):
        plan.patterns[0].grade = "A"  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", ["compare", "metrics", "fleet --from"])
def test_other_readers_exit_2_naming_the_key(command, tmp_path, capsys):
    raw = _raw("server")
    said = _server_derived(raw)
    f = tmp_path / "result.json"
    f.write_text(json.dumps(raw))
    good = tmp_path / "good.json"
    good.write_text((OLD / "server.json").read_text())
    argv = {
        "compare": ["compare", str(good), str(f)],
        "metrics": ["metrics", str(f), "-o", str(tmp_path / "m.prom")],
        "fleet --from": ["fleet", "--from", str(f), "--devices", "100"],
    }[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


def test_a_kind_without_a_derived_model_declares_no_derived_field():
    raw = _raw("crypto")
    raw["series"][0]["kind"] = "sensor"
    assert "sensor" not in DERIVED_BY_KIND
    with pytest.raises(R.ResultError, match=r"series\[0\]\.derived: 'ops_per_s' is not a field of a sensor series"):
        R.validate(raw)


@pytest.mark.parametrize("path", sorted(OLD.glob("*.json")), ids=lambda p: p.stem)
def test_an_older_release_keeps_its_undeclared_keys_and_writes_them_back(path):
    raw = json.loads(path.read_text())
    assert raw["schema_version"] < R.SCHEMA_VERSION
    raw["written_by_an_old_release"] = {"x": 1}
    if raw["series"]:
        raw["series"][0]["derived"]["old_figure"] = 2.5
    else:
        raw["analysis"]["old_table"] = []
    f = path.name
    doc = R.validate(json.loads(json.dumps(raw)), f)
    assert doc.schema_version == raw["schema_version"]  # read as the release wrote it, not upgraded
    assert json.dumps(R.to_json(doc), sort_keys=True) == json.dumps(raw, sort_keys=True)


@pytest.mark.parametrize("level", ANALYSIS_TABLES)
def test_an_older_release_keeps_an_undeclared_key_in_its_analysis_tables(level):
    """A version-2 plan, fleet or what-if Result with a key the analysis models do not declare (in a
    table or a row) reads, keeps it where it was and writes it back in the same order."""
    name, plant = LEVELS[level]
    text = (OLD / f"{name}.json").read_text()
    raw = json.loads(text)
    plant(raw)
    doc = R.validate(json.loads(json.dumps(raw)))
    assert doc.schema_version < R.SCHEMA_VERSION
    assert json.dumps(R.to_json(doc)["analysis"]) == json.dumps(raw["analysis"])  # same keys, same order


def test_an_older_result_is_reported(tmp_path, capsys):
    raw = json.loads((OLD / "server.json").read_text())
    raw["series"][0]["derived"]["old_figure"] = 2.5
    f = tmp_path / "result.json"
    f.write_text(json.dumps(raw))
    assert main(["report", str(f)]) == 0
    assert (tmp_path / "report.html").stat().st_size > 0


def test_a_result_this_release_writes_reads_back_the_same():
    doc = R.new_result(kind="crypto", command=["secperf", "crypto"], params={"n": 3}, host={}, run_id="r")
    s = R.new_series(
        "crypto/x25519/derive",
        kind="crypto",
        labels={"alg": "x25519", "op": "derive"},
        timer={"name": "per operation", "start": "before", "end": "after", "cpu": "the thread's CPU"},
    )
    s.values_us = [10.0, 11.0, 12.0]
    s.cpu_values_us = [9.0, 10.0, 11.0]
    s.samples = [{"wall_ns": 10_000, "cpu_ns": 9_000, "ops": 1}] * 3
    doc.series.append(R.finalize_series(s))
    text = R.dumps(R.finish(doc))
    back = R.validate(json.loads(text))
    assert back.schema_version == R.SCHEMA_VERSION and R.dumps(back) == text
    assert back.series[0].timer.cpu == "the thread's CPU"


def test_an_undeclared_attribute_is_refused_as_it_is_set():
    doc = R.validate(_raw("server"))
    d = doc.series[0].derived_as(ServerDerived)
    with pytest.raises(R.ResultError, match="'handshakes_per_minute' is not a declared field"):
        d.handshakes_per_minute = 60.0  # type: ignore[attr-defined]
    with pytest.raises(R.ResultError, match="'colour' is not a declared field"):
        doc.series[0].colour = "red"  # type: ignore[attr-defined]
    assert "handshakes_per_minute" not in (d.model_extra or {})


def test_a_cached_device_count_with_an_undeclared_key_is_counted_again(tmp_path):
    from secperf.app import device_counts

    row = next(s for s in json.loads((OLD / "device.json").read_text())["series"] if s["status"] == "ok")
    cache = tmp_path / "counts.json"
    cache.write_text(json.dumps({"fingerprint": "f", "rows": {"a": [row]}}))
    assert [s.id for s in device_counts._load(cache, "f")["a"]] == [row["id"]]
    row["derived"]["old_figure"] = 1.0  # an older secperf's key
    cache.write_text(json.dumps({"fingerprint": "f", "rows": {"a": [row]}}))
    assert device_counts._load(cache, "f") == {}


def test_the_published_schema_refuses_what_the_reader_refuses():
    jsonschema = import_or_skip("jsonschema", "scripts/bootstrap installs the 'cluster' extra, whose Ray brings it")
    from secperf.core.result_schema import json_schema

    check = jsonschema.Draft202012Validator(json_schema())
    for name in ("handshake", "server", "whatif", "plan", "fleet"):
        raw = _raw(name)
        assert not list(check.iter_errors(raw)), name
        for level in ("top", "series", "analysis", *(t for t in ANALYSIS_TABLES if LEVELS[t][0] == name)):
            if level == "series" and len(raw["series"]) < 2:
                continue
            bad = json.loads(json.dumps(raw))
            LEVELS[level][1](bad)
            assert list(check.iter_errors(bad)), (name, level)


def test_public_entry_points_take_a_result_not_its_json():
    """No signature or alias in secperf says `Result | Mapping` or `Series | Mapping` (a dict converted
    inside): a JSON object becomes a Result once, where it enters (core.result.load / validate)."""
    import ast
    import re

    src = Path(__file__).parent.parent / "src" / "secperf"
    union = re.compile(
        r"\b(Result|Series)\s*\|\s*(Mapping|dict)\b|\b(Mapping|dict)\[str, Any\]\s*\|\s*(Result|Series)\b"
    )
    found = []
    for p in sorted(src.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            notes = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                notes = [x.annotation for x in [*a.posonlyargs, *a.args, *a.kwonlyargs] if x.annotation]
            elif isinstance(node, ast.Assign):
                notes = [node.value]
            found += [f"{p.relative_to(src)}:{n.lineno}" for n in notes if union.search(ast.unparse(n))]
    assert not found, found
