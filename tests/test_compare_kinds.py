"""`secperf compare` means something for every kind: a known shift between two measured Results is
found with its sign and an interval around it; three samples a side with a wide interval say "too
few samples to decide", never "no difference"; Monte Carlo percentiles get a sampling interval and
no significance test; plans, fleets and devices report changed numbers and verdicts; two kinds,
or two Results sharing nothing, exit 2."""

from __future__ import annotations

import copy
import json

import pytest

import result_kinds as K
from secperf.cli import main
from secperf.core import result as R
from secperf.core.compare import TOO_FEW, CompareError, compare


def _write(tmp_path, name, doc):
    f = tmp_path / f"{name}.json"
    f.write_text(R.dumps(R.validate(doc)))
    return str(f)


@pytest.mark.parametrize("build", [K.handshake, K.signer, K.jwt, K.connect])
def test_a_known_slowdown_is_found_with_its_sign_and_interval(build):
    a, b = build("a", n=40), build("b", n=40, shift=1.2, seed=5)
    rows = compare(a, b)["rows"]
    assert rows
    for r in rows:
        assert r["verdict"] == "slower", r
        assert r["change_ci"][0] > 0 and r["change_ci"][0] <= r["change"] <= r["change_ci"][1]
        assert r["change"] == pytest.approx(0.2, abs=0.06)
        assert r["detectable_change"] > 0
    assert all(r["verdict"] == "faster" for r in compare(b, a)["rows"])


def test_no_difference_needs_an_interval_inside_min_change():
    same = compare(K.handshake("a", n=400), K.handshake("b", n=400, seed=7))["rows"]
    assert {r["verdict"] for r in same} == {"no significant difference"}
    assert all(-0.02 <= r["change_ci"][0] and r["change_ci"][1] <= 0.02 for r in same)
    few = compare(K.handshake("a", n=12), K.handshake("b", n=12, seed=7))["rows"]
    for r in few:  # the same data at 12 samples cannot rule out a 2 % change
        assert r["change_ci"][0] < -0.02 or r["change_ci"][1] > 0.02
        assert r["verdict"] in (TOO_FEW, "slower", "faster")
    assert any(r["verdict"] == TOO_FEW for r in few)


def test_server_series_of_three_intervals_give_an_interval_and_too_few_samples_when_it_straddles():
    a = K.server("a", noise=0.1, seed=1)
    b = K.server("b", shift=1.187, noise=0.1, seed=11)
    rows = {r["metric"]: r for r in compare(a, b)["rows"]}
    assert set(rows) == {"server_cpu_per_handshake", "handshakes_per_s", "latency_p95"}
    cpu = rows["server_cpu_per_handshake"]
    assert cpu["n_a"] == cpu["n_b"] == 3 and cpu["method"].startswith("Welch")
    lo, hi = cpu["change_ci"]
    assert lo < 0 < hi and cpu["change"] > 0.1  # a +19 % change that three noisy intervals cannot confirm
    assert cpu["verdict"] == TOO_FEW and cpu["detectable_change"] > cpu["change"]
    # the same change with quiet intervals is decided, with the right sign, on each number
    rows = {r["metric"]: r for r in compare(K.server("a", seed=1), K.server("b", shift=1.187, seed=11))["rows"]}
    assert rows["server_cpu_per_handshake"]["verdict"] == "slower"
    assert rows["handshakes_per_s"]["verdict"] == "lower"
    assert rows["latency_p95"]["verdict"] == "slower"


def test_compare_command_prints_too_few_samples_for_the_server(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    fa = _write(tmp_path, "a", K.server("a", noise=0.1, seed=1))
    fb = _write(tmp_path, "b", K.server("b", shift=1.187, noise=0.1, seed=11))
    assert main(["compare", fa, fb]) == 0
    out = capsys.readouterr().out
    assert out.count(TOO_FEW) >= 3 and "no significant difference" not in out
    assert main(["compare", fa, fb, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {r["verdict"] for r in rows} == {TOO_FEW}


def test_monte_carlo_percentiles_get_a_sampling_interval_and_no_test(tmp_path):
    a = K.cli(K.REAL["whatif"], tmp_path)
    same = compare(R.validate(a), R.validate(K.cli([*K.REAL["whatif"], "--seed", "2"], tmp_path)))
    assert same["predictions"] and not same["rows"]
    for r in same["predictions"]:
        assert "p_value" not in r and r["diff_interval"][0] <= r["diff"] <= r["diff_interval"][1]
    assert {r["statistic"] for r in same["predictions"]} == {"p50", "p95", "p99"}
    b = copy.deepcopy(a)
    for s in b["series"]:  # a model 30 % slower in every draw
        s["values_us"] = [v * 1.3 for v in s["values_us"]]
        s["summary"] = {
            k: (v * 1.3 if k.endswith("_us") and isinstance(v, float) else v) for k, v in s["summary"].items()
        }
    slower = compare(R.validate(a), R.validate(b))["predictions"]
    for r in slower:
        assert r["verdict"] == "B predicts slower" and r["diff_interval"][0] > 0
        assert r["change"] == pytest.approx(0.3)


def test_plans_report_changed_numbers_and_verdicts(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    a = K.cli(K.REAL["plan"], tmp_path)
    b = K.cli([*K.REAL["plan"], "--network", "nb-iot"], tmp_path)
    cmp = compare(R.validate(a), R.validate(b))
    assert cmp["verdicts"] and cmp["changes"]
    assert any(c["metric"] == "latency" and c["statistic"] == "p95" for c in cmp["changes"])
    b2 = copy.deepcopy(a)
    b2["analysis"]["plan"]["patterns"][0]["verdict"] = "hard to reconcile with the real-time requirement"
    [v] = [v for v in compare(R.validate(a), R.validate(b2))["verdicts"] if v["changed"]]
    assert v["a"] == a["analysis"]["plan"]["patterns"][0]["verdict"]
    assert main(["compare", _write(tmp_path, "a", a), _write(tmp_path, "b", b)]) == 0
    out = capsys.readouterr().out
    assert "nothing to compare" not in out and "changed numbers" in out and "verdicts" in out


def test_fleets_report_the_change_of_their_headline_numbers(tmp_path):
    a = K.cli(K.REAL["fleet"], tmp_path)
    b = K.cli(["fleet", "--devices", "100", "--capacity", "50"], tmp_path)
    ch = {(c["id"], c["metric"], c["statistic"]): c for c in compare(R.validate(a), R.validate(b))["changes"]}
    back = ch[("fleet/100/exponential", "time_all_back", "value")]
    assert back["b"] > back["a"] and back["change"] > 0  # half the capacity: later back
    same = compare(R.validate(a), R.validate(a))
    assert not same["changes"] and same["unchanged"] > 0


def test_device_counts_are_compared_exactly():
    cmp = compare(K.device("a"), K.device("b", shift=1.1))
    ch = {(c["metric"], c["statistic"]): c for c in cmp["changes"]}
    assert ch[("instructions", "median")]["change"] == pytest.approx(0.1)
    assert {c["id"] for c in cmp["changes"]} >= {"device-crypto/cortex-m33-128/wolfssl/sign"}
    assert ("flash", "value") not in ch  # unchanged numbers are counted, not listed
    assert cmp["unchanged"] > 0


def test_different_kinds_exit_2_naming_both(tmp_path, capsys):
    with pytest.raises(CompareError, match="handshake .* server"):
        compare(K.handshake("a"), K.server("b"))
    fa, fb = _write(tmp_path, "a", K.device("a")), _write(tmp_path, "b", K.mac("b"))
    assert main(["compare", fa, fb]) == 2
    err = capsys.readouterr().err
    assert "device" in err and "mac" in err


def test_results_sharing_nothing_exit_2(tmp_path, capsys):
    a, b = K.handshake("a"), K.handshake("b")
    for s in b.series:
        s.id += "/other"
    assert main(["compare", _write(tmp_path, "a", a), _write(tmp_path, "b", b)]) == 2
    assert "share no series" in capsys.readouterr().err


@pytest.mark.slow
def test_real_server_and_handshake_runs_export_and_compare(tmp_path):
    """The real measurements (the probe server under the load generator; probe handshakes) go
    through the same exports and comparison as the constructed Results above."""
    from prometheus_client.parser import text_string_to_metric_families

    from secperf.report.export import to_csv
    from secperf.report.export_metrics import exposition

    server = [
        "server",
        "--server",
        "probe",
        "--key",
        "ecdsa-p256",
        "--concurrency",
        "2",
        "--duration",
        "3",
        "--warmup",
        "0.3",
    ]
    for argv in (server, ["handshake", "versions", "--n", "12"]):
        a, b = K.cli(argv, tmp_path / "a"), K.cli(argv, tmp_path / "b")
        csv_text = to_csv(R.validate(a))
        assert csv_text.count("\n") > len(a["series"])
        assert list(text_string_to_metric_families(exposition(R.validate(a))))
        rows = compare(R.validate(a), R.validate(b))["rows"]
        assert rows and all(r.get("diff_ci") for r in rows)
        assert all(
            r["verdict"]
            in ("faster", "slower", "higher", "lower", "negligible difference", "no significant difference", TOO_FEW)
            for r in rows
        )
        if argv[0] == "server":
            assert "handshakes_per_s" in csv_text
            assert {r["metric"] for r in rows} >= {"server_cpu_per_handshake", "handshakes_per_s"}
