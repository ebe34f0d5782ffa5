"""benchmarks/storm_repeats.py: the same storm's repeats set beside the model, judged on their medians."""

import json
import sys

import pytest

from conftest import load_benchmark


@pytest.fixture(scope="module")
def repeats():
    yield from load_benchmark("storm_repeats.py")


def _record(all_back, p50, model_all_back, model_p50, within=False):
    figs = {"time_all_back_s": all_back, "wait_p50_s": p50, "wait_p90_s": p50 * 1.6, "wait_p99_s": all_back * 0.9}
    measured = {**figs, "syn_retransmits": 100, "ack_path_overflows": 40}
    model = {
        "time_all_back_s": model_all_back,
        "wait_p50_s": model_p50,
        "wait_p90_s": model_p50 * 1.6,
        "wait_p99_s": model_all_back * 0.9,
        "syn_drops": 90.0,
        "ack_overflows": 30.0,
        "within_target": within,
    }
    return {"measured": measured, "models": {"late work dropped": model}}


def test_repeats_are_judged_on_the_ratio_of_their_medians(repeats):
    """Three runs of one storm, two of them on the upper rung: the least, median and most of each figure,
    the ratio of the measured median to the models' median, and the single runs within the target."""
    runs = [_record(18.0, 6.0, 17.0, 6.0, True), _record(31.0, 6.5, 17.5, 6.2), _record(33.0, 7.0, 18.0, 6.4)]
    j = repeats.judge(runs)
    assert j["runs"] == 3
    assert j["measured"]["time_all_back_s"] == {"least": 18.0, "median": 31.0, "most": 33.0}
    v = j["models"]["late work dropped"]
    assert v["time_all_back_s"]["median"] == 17.5 and v["within_single"] == 1
    assert v["ratio_of_medians_time_all_back_s"] == pytest.approx(31.0 / 17.5)
    assert v["ratio_of_medians_wait_p50_s"] == pytest.approx(6.5 / 6.2)
    assert v["within_target_on_medians"] is False  # the time until all are back is 1.77
    close = repeats.judge([_record(18.0, 6.0, 17.0, 6.0, True), _record(19.0, 6.4, 17.5, 6.2, True)])
    assert close["models"]["late work dropped"]["within_target_on_medians"] is True


def test_a_saved_run_without_a_storm_is_left_out_by_name(repeats, tmp_path, capsys, monkeypatch):
    run = {"run": {"config": {"clients": 10, "storm": False}, "phases": [], "capacity_per_s": 100.0}}
    f = tmp_path / "no-storm.json"
    f.write_text(json.dumps(run))
    monkeypatch.setattr(sys, "argv", ["storm_repeats.py", str(f)])
    assert repeats.main() == 0
    assert "no-storm.json: no storm or no capacity, left out" in capsys.readouterr().err


@pytest.mark.parametrize("content", [None, "{}", "not json"])
def test_a_file_that_is_no_saved_run_exits_2_naming_it(repeats, tmp_path, capsys, monkeypatch, content):
    f = tmp_path / "bad.json"
    if content is not None:
        f.write_text(content)
    monkeypatch.setattr(sys, "argv", ["storm_repeats.py", str(f)])
    assert repeats.main() == 2
    assert f"{f}: not a run saved by benchmarks/mqtt_load.py --json" in capsys.readouterr().err
