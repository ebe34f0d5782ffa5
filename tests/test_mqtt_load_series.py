"""An mqtt-load Result's series (app/mqtt_load_series.py): one per phase and latency with its exact
histogram, read by `secperf metrics` and `secperf compare` with the phase's own figures; an mqtt-load
run against another kind is a named refusal; an mqtt-load Result written before series were kept
(schema version 3) still reads in `report`, and metrics/compare refuse it naming why.

The real runs (mosquitto started here, two small loads) are slow; the rest reads saved Results:
tests/data/saved_results/mqtt_load_v3.json (written by the release before this one: no series) and
tests/data/saved_results/mqtt_load.json (written by this release)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import run_cli
from secperf.app.mqtt_load_series import mqtt_series
from secperf.core import result as R
from secperf.core.compare import CompareError, compare
from secperf.core.histogram import Histogram, HistogramError
from secperf.core.result_schema import MqttDerived

DATA = Path(__file__).parent / "data"
OLD_MQTT = DATA / "saved_results" / "mqtt_load_v3.json"
NEW_MQTT = DATA / "saved_results" / "mqtt_load.json"


def _phase(m, name):
    return next(p for p in m["phases"] if p["phase"] == name)


def _expected_ids(m):
    """Every latency a phase sampled, named '<latency> <phase>' (wait: the storm's only)."""
    out = set()
    for p in m["phases"]:
        for key, word in (("connack", "connack"), ("hs", "handshake"), ("puback", "puback"), ("wait", "wait")):
            if Histogram.from_pairs(p[f"{key}_hist_us"]).n and (key != "wait" or p["phase"] == "storm"):
                out.add(f"{word} {p['phase']}")
    return out


def _check_series_against_phases(doc, raw):
    """Each series holds its phase's histogram exactly and states the phase's own percentiles."""
    m = raw["analysis"]["mqtt_load"]
    assert {s.id for s in doc.series} == _expected_ids(m)
    for s in doc.series:
        d = s.derived_as(MqttDerived)
        assert s.kind == "mqtt" and s.id == f"{d.latency} {d.phase}" and s.status == "ok"
        ph = _phase(m, d.phase)
        key = "hs" if d.latency == "handshake" else d.latency
        hist = Histogram.from_pairs(ph[f"{key}_hist_us"])
        assert Histogram.of(s.values_us) == hist and Histogram.from_pairs(d.hist_us) == hist
        assert s.summary.n == d.n == hist.n
        if key != "hs":
            assert (d.p50_ms, d.p99_ms) == (ph[f"{key}_p50_ms"], ph[f"{key}_p99_ms"])
        if key == "connack":
            assert (d.failed, d.refused, d.time_all_up_s) == (ph["failed"], ph["refused"], ph["time_all_up_s"])


def _metric(text, family, series, quantile=None):
    q = "" if quantile is None else f'quantile="{quantile}",'
    pat = rf'^{family}{{[^}}]*{q}series="{re.escape(series)}"[^}}]*}} (\S+)$'
    found = [float(x) for x in re.findall(pat, text, re.M)]
    assert len(found) == 1, (family, series, quantile)
    return found[0]


def test_the_series_hold_each_phase_histogram_exactly_and_its_own_percentiles():
    raw = json.loads(NEW_MQTT.read_text())
    doc = R.load(NEW_MQTT)
    assert doc.schema_version == R.SCHEMA_VERSION
    _check_series_against_phases(doc, raw)
    # built again from the analysis alone: the same series
    again = mqtt_series(raw["analysis"]["mqtt_load"])
    assert [(s.id, s.values_us, s.derived) for s in again] == [(s.id, s.values_us, s.derived) for s in doc.series]


def test_a_phase_without_samples_makes_no_series_and_the_ramp_has_no_wait_series():
    raw = json.loads(NEW_MQTT.read_text())
    m = raw["analysis"]["mqtt_load"]
    hold = _phase(m, "hold")
    assert not hold["connack_hist_us"]  # nobody connects while holding
    ids = {s.id for s in mqtt_series(m)}
    assert "connack hold" not in ids and "wait ramp" not in ids and "wait storm" in ids
    # a phase whose histogram is malformed is a named measurement error, not a traceback
    bad = json.loads(json.dumps(m))
    _phase(bad, "storm")["connack_hist_us"] = [[3, "x"]]
    with pytest.raises(HistogramError, match="phase storm connack_hist_us"):
        mqtt_series(bad)


def test_metrics_of_an_mqtt_load_result_names_the_series_with_the_phase_figures(tmp_path):
    raw = json.loads(NEW_MQTT.read_text())
    m = raw["analysis"]["mqtt_load"]
    p = run_cli("metrics", str(NEW_MQTT))
    assert p.returncode == 0, p.stderr
    ramp, hold = _phase(m, "ramp"), _phase(m, "hold")
    assert _metric(p.stdout, "secperf_mqtt_connack_seconds", "connack ramp", "0.5") == pytest.approx(
        ramp["connack_p50_ms"] / 1000
    )
    assert _metric(p.stdout, "secperf_mqtt_connack_seconds", "connack ramp", "0.99") == pytest.approx(
        ramp["connack_p99_ms"] / 1000
    )
    assert _metric(p.stdout, "secperf_mqtt_puback_seconds", "puback hold", "0.99") == pytest.approx(
        hold["puback_p99_ms"] / 1000
    )
    assert _metric(p.stdout, "secperf_mqtt_connack_samples_total", "connack ramp") == ramp["connacks"]
    assert _metric(p.stdout, "secperf_mqtt_failed_connections_total", "connack storm") == (
        _phase(m, "storm")["failed"] + _phase(m, "storm")["refused"]
    )


def test_an_older_mqtt_load_result_reads_in_report_and_metrics_compare_name_why(tmp_path):
    raw = json.loads(OLD_MQTT.read_text())
    assert raw["schema_version"] < R.SCHEMA_VERSION and raw["series"] == []
    out = tmp_path / "old.html"
    p = run_cli("report", str(OLD_MQTT), "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "MQTT load: persistent clients" in out.read_text()
    p = run_cli("metrics", str(OLD_MQTT))
    assert p.returncode == 2 and "mqtt-load Result (schema version 3) holds no series" in p.stderr, p.stderr
    p = run_cli("compare", str(OLD_MQTT), str(NEW_MQTT))
    assert p.returncode == 2 and "holds no series (written before mqtt-load kept them)" in p.stderr, p.stderr


@pytest.mark.parametrize("other", ["handshake", "server"])
def test_compare_of_an_mqtt_load_run_with_another_kind_is_refused_naming_it(other):
    p = run_cli("compare", str(NEW_MQTT), str(DATA / "old_results" / f"{other}.json"))
    assert p.returncode == 2, p.stderr
    assert "A is an mqtt-load Result" in p.stderr and "their series do not correspond" in p.stderr
    assert "Traceback" not in p.stderr
    with pytest.raises(CompareError, match="B is an mqtt-load Result|and B an mqtt-load Result"):
        compare(R.load(DATA / "old_results" / f"{other}.json"), R.load(NEW_MQTT))


def _load(tmp_path, name):
    p = run_cli(
        "mqtt-load",
        "--clients",
        "12",
        "--connect-rate",
        "100",
        "--hold",
        "1",
        "--publish-rate",
        "24",
        "--capacity-seconds",
        "0.3",
        "--json",
        "--no-report",
        "--out",
        str(tmp_path / name),
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    raw = json.loads(p.stdout)
    return tmp_path / name / raw["run_id"], raw


@pytest.mark.slow
def test_two_real_mqtt_load_runs_export_metrics_and_compare_with_the_phase_figures(tmp_path):
    (da, ra), (db, rb) = _load(tmp_path, "a"), _load(tmp_path, "b")
    a, b = R.load(da / "result.json"), R.load(db / "result.json")
    _check_series_against_phases(a, ra)
    _check_series_against_phases(b, rb)
    assert {"connack ramp", "puback hold", "connack storm", "wait storm"} <= {s.id for s in a.series}

    p = run_cli("metrics", str(da))
    assert p.returncode == 0, p.stderr
    ramp = _phase(ra["analysis"]["mqtt_load"], "ramp")
    assert _metric(p.stdout, "secperf_mqtt_connack_seconds", "connack ramp", "0.99") == pytest.approx(
        ramp["connack_p99_ms"] / 1000
    )

    p = run_cli("compare", str(da), str(db), "--json")
    assert p.returncode == 0, p.stderr
    cmp = json.loads(p.stdout)
    ids = {s.id for s in a.series} & {s.id for s in b.series}
    rows = {(r["id"], r["metric"]): r for r in cmp["rows"]}
    for sid in ids:  # per common series: the shift (the handshake rows' statistics), then P50 and P99
        lat = sid.split()[0]
        assert {(sid, f"{lat} latency"), (sid, f"{lat} P50"), (sid, f"{lat} P99")} <= set(rows)
        assert rows[(sid, f"{lat} latency")]["method"].startswith(("Hodges-Lehmann", "Welch"))
    for sid, lat, ph in (("connack ramp", "connack", "ramp"), ("puback hold", "puback", "hold")):
        r = rows[(sid, f"{lat} P99")]
        pa, pb = _phase(ra["analysis"]["mqtt_load"], ph), _phase(rb["analysis"]["mqtt_load"], ph)
        assert (r["a"], r["b"]) == (pa[f"{lat}_p99_ms"], pb[f"{lat}_p99_ms"])
        assert r["diff_ci"][0] <= r["diff"] <= r["diff_ci"][1] or r["verdict"] != "too few samples to decide"
        assert (r["n_a"], r["n_b"]) == (pa[f"{lat}_n"], pb[f"{lat}_n"])
    # the phases' counts: listed as changed, or counted among the identical numbers
    counted = {(c["id"], c["metric"]) for c in cmp["changes"]}
    assert cmp["unchanged"] + len(counted) >= 2 * len([s for s in a.series if s.id.startswith("connack")])

    p = run_cli("compare", str(da), str(db))  # the terminal tables
    assert p.returncode == 0 and "connack ramp" in p.stdout and "P99" in p.stdout, p.stderr


def _doc_with(series, run_id):
    return R.new_result(
        kind="server",
        command=["secperf", "mqtt-load"],
        params={"mqtt_load": True},
        host={},
        run_id=run_id,
        series=series,
        status="complete",
    )


def test_a_slower_puback_of_thousands_of_samples_is_judged_slower_with_a_subsampled_bootstrap():
    """5,000 PUBACKs a side (beyond the bootstrap's 2,000 a side): B's latencies 1.5 times A's make every
    row of the series 'slower', each interval around B − A, the P99 row stating the phases' P99s."""
    m = json.loads(NEW_MQTT.read_text())["analysis"]["mqtt_load"]
    hold = _phase(m, "hold")
    base = Histogram.from_pairs(hold["puback_hist_us"])
    a_vals = [v for v in mqtt_series(m) if v.id == "puback hold"][0].values_us
    a_vals = [v + 7 * (i % 50) for i in range(200) for v in a_vals][:5000]  # 5,000 spread samples
    sides = []
    for factor in (1.0, 1.5):
        h = Histogram.of(v * factor for v in a_vals)
        ph = {**hold, "puback_hist_us": h.to_pairs(), **h.percentiles_ms("puback_")}
        sides.append({**m, "phases": [ph]})
    assert base.n < 5000 == Histogram.from_pairs(sides[0]["phases"][0]["puback_hist_us"]).n
    a = _doc_with(mqtt_series(sides[0]), "a")
    b = _doc_with(mqtt_series(sides[1]), "b")
    cmp = compare(a, b)
    rows = {r["metric"]: r for r in cmp["rows"] if r["id"] == "puback hold"}
    assert set(rows) == {"puback latency", "puback P50", "puback P99"}
    for r in rows.values():
        assert r["verdict"] == "slower", r
        assert r["diff_ci"][0] <= r["diff"] <= r["diff_ci"][1] and r["diff_ci"][0] > 0
    p99 = rows["puback P99"]
    assert (p99["a"], p99["b"]) == (sides[0]["phases"][0]["puback_p99_ms"], sides[1]["phases"][0]["puback_p99_ms"])
    # the same run against itself: no row says slower or faster
    same = compare(a, _doc_with(mqtt_series(sides[0]), "a2"))
    assert not {r["verdict"] for r in same["rows"]} & {"slower", "faster"}
    assert all(r["diff"] == 0 and r["diff_ci"][0] <= 0 <= r["diff_ci"][1] for r in same["rows"])
