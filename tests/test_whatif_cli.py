"""`secperf whatif` as a user runs it (the installed console script): a Result of kind whatif, the
same numbers for the same seed, and bad input exiting 2 with the field named."""

from __future__ import annotations

import json
import os

import pytest

from conftest import run_cli


def _whatif(tmp_path, *args):
    return run_cli("whatif", *args, "--out", str(tmp_path / "results"), cwd=tmp_path)


def test_whatif_writes_a_whatif_result_with_breakdown_and_report(tmp_path):
    p = _whatif(tmp_path, "mqtt", "--network", "lte-m", "--key", "software,se:iot-safe-sim", "--n", "5000", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["kind"] == "whatif" and doc["status"] == "complete"
    assert len(doc["series"]) == 2
    for s in doc["series"]:
        d = s["derived"]
        assert set(d["breakdown_mean_us"]) == {
            "client_compute",
            "server_compute",
            "secure_element",
            "propagation",
            "serialisation",
            "retransmission_wait",
            "host_scheduling",
            "path_floor",
        }
        assert s["summary"]["p50_us"] <= s["summary"]["p95_us"] <= s["summary"]["p99_us"]
        assert d["round_trips"] == 3
        assert d["bytes_up_mean"] > 0 and d["radio"]["airtime_tx_mean_us"] > 0
    se = [s for s in doc["series"] if s["labels"]["key"].startswith("se:")][0]
    assert se["derived"]["breakdown_mean_us"]["secure_element"] > 400_000
    runs = [d for d in (tmp_path / "results").iterdir() if d.name != "latest"]
    html = (runs[0] / "report.html").read_text()
    assert "What-if: predicted connection set-up" in html


def test_same_seed_same_prediction(tmp_path):
    args = (
        "tls1.3",
        "--network",
        "delay=20ms,jitter=5ms,loss=2%",
        "--n",
        "3000",
        "--seed",
        "5",
        "--json",
        "--no-report",
    )
    a, b = _whatif(tmp_path, *args), _whatif(tmp_path, *args)
    assert a.returncode == 0 and b.returncode == 0
    sa, sb = json.loads(a.stdout)["series"][0], json.loads(b.stdout)["series"][0]
    assert sa["summary"] == sb["summary"] and sa["values_us"] == sb["values_us"]


def test_sweep_tornado_and_s1(tmp_path):
    p = _whatif(tmp_path, "tls1.3", "--sweep", "rtt=0,100,loss=0,5", "--n", "2000", "--json", "--no-report")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert len(doc["series"]) == 4
    assert {r["input"] for r in doc["analysis"]["whatif"]["tornado"]} == {"rtt", "loss"}
    p = _whatif(tmp_path, "tls1.3", "--s1", "--n", "2000", "--json", "--no-report")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["analysis"]["whatif"]["s1"]["accelerated_us"] < doc["analysis"]["whatif"]["s1"]["full_us"]


@pytest.mark.parametrize(
    "args,field",
    [
        (("tls9",), "PROTOCOL"),
        (("mqtt", "--key", "se:nosuchchip"), "--key"),
        (("mqtt", "--group", "p-999"), "--group"),
        (("mqtt", "--cert", "dsa-1024"), "--cert"),
        (("mqtt", "--handshake", "0rtt-ish"), "--handshake"),
        (("mqtt", "--network", "delay=-5ms"), "delay"),
        (("mqtt", "--network", "delay=5ms,loss=100%"), "loss"),
        (("mqtt", "--network", "delay=5ms,mtu=300"), "mtu=300"),
        (("coap", "--network", "delay=5ms,mtu=200"), "mtu=200"),
        (("mqtt", "--sweep", "rtt=1..0:5"), "--sweep"),
        (("mqtt", "--device", "pdp-11"), "--device"),
        (("tls1.3", "--device", "cortex-a9-400", "--stack", "pqclean"), "--stack"),  # no TLS in that stack
        (("mqtt", "--network", "delay=5ms,ge=1%/0%"), "ge"),  # a bad state it never leaves
        # the device counts no P-384 verify: a named missing client cost, never the server's or a zero
        (("tls1.3", "--device", "cortex-m4-120mhz", "--cert", "ecdsa-p384"), "verify:ecdsa-p384"),
    ],
)
def test_bad_input_exits_2_naming_the_field(tmp_path, args, field):
    p = _whatif(tmp_path, *args, "--n", "100")
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert field in p.stderr
    assert not (tmp_path / "results").exists() or not any(d.name != "latest" for d in (tmp_path / "results").iterdir())


def test_path_floor_and_host_scheduling_options_show_as_components(tmp_path):
    base = ("tls1.3", "--network", "delay=10ms", "--n", "2000", "--seed", "4")
    p0 = _whatif(tmp_path, *base, "--json")
    p = _whatif(tmp_path, *base, "--path-floor", "0.2", "--host-scheduling", "1.5", "--json")
    assert p0.returncode == 0 and p.returncode == 0, p.stderr
    s0, s = json.loads(p0.stdout)["series"][0], json.loads(p.stdout)["series"][0]
    flights = sum(1 for f in s["derived"]["flights"])
    b0, b = s0["derived"]["breakdown_mean_us"], s["derived"]["breakdown_mean_us"]
    assert b0["path_floor"] == 0.0 and b0["host_scheduling"] == 0.0
    assert b["path_floor"] == pytest.approx(flights * 200.0)
    assert b["host_scheduling"] == pytest.approx(flights * 1500.0)
    assert s["labels"]["link"]["path_floor_ms"] == pytest.approx(0.2)
    # the terminal table grows the two columns only when they hold time
    wide = dict(os.environ, COLUMNS="300")
    out = ("--out", str(tmp_path / "results"))
    t = run_cli(
        "whatif", *base, "--path-floor", "0.2", "--host-scheduling", "1.5", "--no-report", *out, cwd=tmp_path, env=wide
    )
    t0 = run_cli("whatif", *base, "--no-report", *out, cwd=tmp_path, env=wide)
    assert "path floor" in t.stdout and "host sched" in t.stdout
    assert "path floor" not in t0.stdout and "host sched" not in t0.stdout


@pytest.mark.parametrize(
    "args,field",
    [
        (("--path-floor", "-1"), "--path-floor"),
        (("--path-floor", "nan"), "--path-floor"),
        (("--host-scheduling", "sometimes"), "--host-scheduling"),
        (("--host-scheduling", "5000"), "--host-scheduling"),
    ],
)
def test_bad_path_floor_or_host_scheduling_exits_2(tmp_path, args, field):
    p = _whatif(tmp_path, "tls1.3", *args, "--n", "100")
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert field in p.stderr


def test_calibration_result_of_the_wrong_kind_or_without_rows_exits_2(tmp_path):
    from secperf.core import result as R

    doc = R.finish(R.new_result(kind="signer", command=["x"], params={}, host={}, run_id="r1"))
    f = tmp_path / "signer.json"
    f.write_text(R.dumps(doc))
    p = _whatif(tmp_path, "mqtt", "--calibrate", str(f), "--n", "100")
    assert p.returncode == 2 and "--calibrate" in p.stderr and "no rows" in p.stderr
    p = _whatif(tmp_path, "mqtt", "--calibrate", str(tmp_path / "missing.json"), "--n", "100")
    assert p.returncode == 2 and "missing.json" in p.stderr


def test_scenario_whatif_block_predicts_next_to_its_measured_rows(tmp_path):
    """A scenario's [whatif] block is calibrated on the run's own loopback rows and matched with the
    measured series of the same protocol, key, handshake and network."""
    import json

    scn = tmp_path / "wi.toml"
    scn.write_text(
        'name = "wi"\n[connect]\nprotocols = ["mqtt"]\nkeys = ["software"]\nhandshakes = ["full"]\n'
        'n = 3\nwarmup = 1\n[whatif]\nprotocols = ["mqtt"]\nkeys = ["software"]\nhandshakes = ["full"]\n'
        'networks = ["loopback", "nb-iot"]\nn = 2000\n'
    )
    p = run_cli("run", "--scenario", str(scn), "--out", str(tmp_path / "r"), "--json", "--no-report")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    from secperf.core.result import validate
    from secperf.report.views.whatif import predicted_vs_measured

    rows = predicted_vs_measured(validate(doc))
    assert [(r["network"], r["measured_p50_us"] is not None) for r in rows] == [("loopback", True), ("nb-iot", False)]
    loop = rows[0]
    # calibrated on the same loopback rows: the prediction lands on the measurement
    assert abs(loop["p50_error"]) < 0.25
    assert rows[1]["predicted_p50_us"] > 10 * loop["predicted_p50_us"]  # NB-IoT's 1.6 s round trips


def test_a_value_given_twice_is_one_row_and_the_result_reads_back(tmp_path):
    """`tls1.3,tls1.3`, a network, key or group given twice: one row each, never two series of the
    same id (a Result the readers refuse); `secperf report` reads it back."""
    p = _whatif(
        tmp_path,
        "tls1.3,tls1.3,mqtt",
        "--network",
        "lte-m,lte-m",
        "--key",
        "software,software",
        "--group",
        "x25519,x25519",
        "--n",
        "2000",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    ids = [s["id"] for s in json.loads(p.stdout)["series"]]
    assert len(ids) == len(set(ids)) == 2
    r = run_cli("report", str(tmp_path / "results" / "latest"), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 0, r.stderr
