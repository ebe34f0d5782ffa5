"""Every Result kind exports its real numbers: `--csv` in one tidy long format (kind, id, the kind's
identifying columns, metric, statistic, value, unit) and `secperf metrics` as Prometheus text that
the official parser reads back, in base units. A Result with nothing to export exits 2."""

from __future__ import annotations

import csv
import io
import math

import pytest
from prometheus_client.parser import text_string_to_metric_families

import result_kinds as K
from secperf.cli import main
from secperf.core import result as R
from secperf.core.observations import ID_COLUMNS
from secperf.report.export import to_csv
from secperf.report.export_metrics import exposition

UNITS = {
    "us",
    "ms",
    "s",
    "1/s",
    "bytes",
    "bytes/s",
    "ns/byte",
    "J",
    "mJ",
    "ratio",
    "count",
    "instructions",
    "cycles",
    "bool",
    "1/day",
    "bytes/day",
    "days",
}


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    out = tmp_path_factory.mktemp("kinds")
    got = {k: R.validate(K.cli(argv, out)) for k, argv in K.REAL.items()}
    got.update({k: f() for k, f in K.BUILT.items()})
    return got


def _csv_rows(doc) -> tuple[list[str], list[dict]]:
    r = csv.DictReader(io.StringIO(to_csv(R.validate(doc))))
    return r.fieldnames, list(r)


def _pick(rows, metric, statistic, **labels):
    got = [
        r
        for r in rows
        if r["metric"] == metric and r["statistic"] == statistic and all(r[k] == v for k, v in labels.items())
    ]
    assert got, f"no row {metric}/{statistic} {labels}"
    return got


@pytest.mark.parametrize("kind", K.KINDS)
def test_csv_is_tidy_with_numbers_and_units_for_every_kind(docs, kind):
    head, rows = _csv_rows(docs[kind])
    assert head[:2] == ["kind", "id"] and head[-4:] == ["metric", "statistic", "value", "unit"]
    assert rows, "no rows"
    for r in rows:
        v = float(r["value"])  # never empty
        assert math.isfinite(v)
        assert r["unit"] in UNITS, r
        assert r["metric"] and r["statistic"]
        for c in ID_COLUMNS[r["kind"]]:
            assert c in head  # the row's kind's own identifying columns are columns
        if r["statistic"] == "n":
            assert v > 0, r  # no n=0 rows
    keys = [(r["id"], r["metric"], r["statistic"]) for r in rows]
    assert len(keys) == len(set(keys)), "one row per observation"


def test_csv_holds_each_kinds_headline_numbers_under_its_own_names(docs):
    _, rows = _csv_rows(docs["server"])
    d = docs["server"].series[0].derived
    [r] = _pick(rows, "handshakes_per_s", "value")
    assert float(r["value"]) == pytest.approx(d.handshakes_per_s) and r["unit"] == "1/s"
    assert r["server"] == "nginx" and r["key"] == "rsa-2048" and r["concurrency"] == "4"
    [r] = _pick(rows, "latency", "p95")
    assert float(r["value"]) == pytest.approx(d.latency_ms.p95_ms) and r["unit"] == "ms"
    [r] = _pick(rows, "server_cpu_per_handshake", "value")
    assert float(r["value"]) == pytest.approx(d.server_cpu_us_per_handshake) and r["unit"] == "us"

    _, rows = _csv_rows(docs["whatif"])
    s = docs["whatif"].series[0]
    [r] = _pick(rows, "connection_setup", "p95")
    assert float(r["value"]) == pytest.approx(s.summary.p95_us) and r["protocol"] == "https"
    [r] = _pick(rows, "connection_setup", "n")
    assert int(r["value"]) == 300
    [r] = _pick(rows, "handshake", "p50")  # the typed handshake percentiles (derived.handshake) are exported
    assert float(r["value"]) == pytest.approx(s.derived.handshake.p50_us) and r["unit"] == "us"

    _, rows = _csv_rows(docs["device"])
    [r] = _pick(rows, "instructions", "median", kind="device")
    assert int(r["value"]) == 30_000_000 and r["unit"] == "instructions" and r["stack"] == "wolfssl"

    _, rows = _csv_rows(docs["plan"])
    p = docs["plan"].analysis.plan.patterns[0]
    [r] = _pick(rows, "latency", "p95", design="before", pattern=p.pattern)
    assert float(r["value"]) == pytest.approx(p.before["numbers"]["latency_pq_ms"])
    assert r["verdict"] == p.verdict

    _, rows = _csv_rows(docs["fleet"])
    [r] = _pick(rows, "time_all_back", "value")
    assert float(r["value"]) == pytest.approx(docs["fleet"].analysis.fleet.runs[0].time_all_back_s)
    assert r["unit"] == "s" and r["policy"] == "exponential" and r["devices"] == "100"

    _, rows = _csv_rows(docs["crypto"])
    [r] = _pick(rows, "time_per_op", "p50", alg="sha256")
    assert float(r["value"]) == pytest.approx(docs["crypto"].series[0].summary.p50_us)

    _, rows = _csv_rows(docs["can"])
    assert {r["k"] for r in rows if r["metric"] == "cpu_load"} == {str(k) for k in range(1, 9)}


def _families(doc) -> dict:
    return {f.name: f for f in text_string_to_metric_families(exposition(R.validate(doc)))}


@pytest.mark.parametrize("kind", K.KINDS)
def test_prometheus_text_parses_back_for_every_kind(docs, kind):
    fams = _families(docs[kind])
    assert fams
    own = [f for f in fams.values() if f.name.startswith("secperf_") and f.samples]
    assert own
    for f in own:
        assert f.name.startswith("secperf_")
        assert f.type in ("gauge", "counter")
        for s in f.samples:
            assert math.isfinite(s.value)
    series_kinds = {s.kind for s in docs[kind].series} | docs[kind].analysis.model_fields_set & {"can", "fleet", "plan"}
    for sk in series_kinds - {"whatif"} if kind == "plan" else series_kinds:
        assert any(n.startswith(f"secperf_{sk}_") for n in fams), (sk, sorted(fams))


def _sample(fams, name, **labels):
    got = [
        s
        for s in fams[name].samples
        if all(s.labels.get(k) == v for k, v in labels.items()) and not s.name.endswith("_created")
    ]
    assert got, (name, labels)
    return got[0].value


def test_prometheus_names_follow_the_conventions_and_use_base_units(docs):
    fams = _families(docs["whatif"])
    p95 = docs["whatif"].series[0].summary.p95_us
    assert _sample(fams, "secperf_whatif_connection_setup_seconds", quantile="0.95") == pytest.approx(p95 / 1e6)
    assert fams["secperf_whatif_connection_setup_samples"].type == "counter"

    fams = _families(docs["server"])
    d = docs["server"].series[0].derived
    assert _sample(fams, "secperf_server_handshakes_per_second", key="rsa-2048") == pytest.approx(d.handshakes_per_s)
    assert _sample(fams, "secperf_server_latency_seconds", quantile="0.95") == pytest.approx(20e-3)
    assert _sample(fams, "secperf_server_server_cpu_per_handshake_seconds") == pytest.approx(2.5e-3)
    assert fams["secperf_server_handshakes"].type == "counter"
    assert "secperf_server_handshakes_total{" in exposition(R.validate(docs["server"]))

    fams = _families(docs["fleet"])
    assert _sample(fams, "secperf_fleet_time_all_back_seconds", policy="exponential") == pytest.approx(
        docs["fleet"].analysis.fleet.runs[0].time_all_back_s
    )

    fams = _families(docs["plan"])
    p = docs["plan"].analysis.plan.patterns[0]
    assert _sample(fams, "secperf_plan_latency_seconds", design="before", quantile="0.95") == pytest.approx(
        p.before["numbers"]["latency_pq_ms"] / 1e3
    )
    assert _sample(fams, "secperf_plan_energy_per_day_joules", design="before") == pytest.approx(
        p.before["numbers"]["energy_per_day_j"]
    )

    fams = _families(docs["device"])
    assert _sample(fams, "secperf_device_instructions", quantile="0.5") == 30_000_000
    assert _sample(fams, "secperf_device_flash_bytes") == 322_995

    fams = _families(docs["signer"])  # S2's operational metrics stay next to the kind's numbers
    assert "secperf_signing_success_ratio" in fams and "secperf_signer_sign_time_seconds" in fams


@pytest.mark.parametrize("kind", ["server", "fleet", "device", "whatif"])
def test_metrics_command_writes_every_kind(docs, kind, tmp_path):
    f = tmp_path / "r.json"
    f.write_text(R.dumps(R.validate(docs[kind])))
    out = tmp_path / "m.prom"
    assert main(["metrics", str(f), "-o", str(out)]) == 0
    text = out.read_text()
    assert text.strip() and list(text_string_to_metric_families(text))


def test_a_result_with_nothing_to_export_exits_2_naming_why(tmp_path, capsys):
    doc = R.finish(R.new_result(kind="server", command=["secperf"], params={}, host={}, run_id="empty"))
    f = tmp_path / "r.json"
    f.write_text(R.dumps(doc))
    assert main(["metrics", str(f)]) == 2
    err = capsys.readouterr()
    assert "nothing to export" in err.err and "no series" in err.err and not err.out


def test_a_failed_series_exports_its_failure_count_not_empty_numbers():
    doc = R.new_result(kind="signer", command=["secperf"], params={}, host={}, run_id="f")
    s = R.new_series("signer/x/ecdsa-p256/sign_only", kind="signer", labels={"profile": "x"}, timer=K.TIMER)
    R.add_failure(s, "CKR_DEVICE_ERROR")
    doc.series.append(R.finalize_series(s))
    _, rows = _csv_rows(doc)
    assert [(r["metric"], r["value"]) for r in rows] == [("failures", "1")]


def test_csv_option_on_model_commands_writes_and_refuses_an_input(tmp_path, docs):
    for argv in (K.REAL["fleet"], K.REAL["can"]):
        dest = tmp_path / f"{argv[0]}.csv"
        assert main([*argv, "--no-report", "--out", str(tmp_path / "r"), "--csv", str(dest)]) == 0
        head, rows = dest.read_text().splitlines()[0], dest.read_text().splitlines()[1:]
        assert head.startswith("kind,id,") and rows
    res = tmp_path / "kept.json"
    res.write_text(R.dumps(R.validate(docs["fleet"])))
    before = res.read_text()
    assert main([*K.REAL["fleet"], "--no-report", "--out", str(tmp_path / "r"), "--csv", str(res)]) == 2
    assert res.read_text() == before  # a Result is never overwritten by an export


def test_a_fleet_replay_exports_the_measured_storm_beside_the_model():
    """`fleet --replay` holds no model runs, only replays (app/server.replay_compare's shape)."""
    doc = R.new_result(kind="fleet", command=["secperf"], params={}, host={}, run_id="r")
    doc.analysis.fleet = {
        "runs": [],
        "replays": [
            {
                "clients": 50,
                "policy": "none",
                "capacity_per_s": 300.0,
                "timeout_s": 10.0,
                "measured": {
                    "time_all_back_s": 0.4,
                    "wait_p50_s": 0.1,
                    "wait_p90_s": 0.2,
                    "wait_p99_s": 0.3,
                    "back": 50,
                },
                "models": {"abandoned work": {"time_all_back_s": 0.35, "ratio_time_all_back_s": 0.4 / 0.35}},
            }
        ],
    }
    _, rows = _csv_rows(doc)
    back = {r["source"]: float(r["value"]) for r in rows if r["metric"] == "time_all_back"}
    assert back == {"measured": 0.4, "model: abandoned work": 0.35}
    assert _sample(_families(doc), "secperf_fleet_time_all_back_seconds", source="measured") == 0.4
