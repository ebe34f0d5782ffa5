"""The capacity a storm meets, measured in the storm (measure/storm_capacity.py): the broker's and the
generator's bounds from their own CPU per CONNACK and the share of their cores other work left them,
the lower one named; `fleet`'s model run at it beside the closed-loop capacity (app/mqtt_load)."""

from __future__ import annotations

import pytest

from secperf.app.mqtt_load import FIRST_SYNS_TAKEN, storm_vs_model
from secperf.measure.mqtt_load import MqttLoadConfig
from secperf.measure.storm_capacity import busy_between, cores_busy_s, storm_bounds


def _storm(**kw) -> dict:
    st = {"phase": "storm", "connacks": 1000, "elapsed_s": 5.0, "time_all_up_s": 5.0, "attempts": 1000}
    st |= {"wait_p50_ms": 2500.0, "wait_p90_ms": 4500.0, "wait_p99_ms": 4950.0, "gave_up": 0, "failed": 0}
    st |= {"refused": 0, "broker_cpu_s": 1.0, "cpu_s": 2.0, "cores_busy_s": {"0": 1.0, "1": 2.0}}
    return st | kw


def test_on_idle_cores_the_slower_process_sets_the_capacity():
    b = storm_bounds(_storm(), 0, [1])
    assert b is not None
    assert b["broker"]["rate_on_a_core_per_s"] == pytest.approx(1000.0)
    assert b["generator"]["rate_on_a_core_per_s"] == pytest.approx(500.0)
    assert b["broker"]["core_share_left"] == 1.0 and b["generator"]["core_share_left"] == 1.0
    assert b["limited_by"] == "generator" and b["capacity_per_s"] == pytest.approx(500.0)
    assert b["achieved_per_s"] == pytest.approx(200.0) and "note" not in b
    assert b["capacity_on_idle_cores_per_s"] == pytest.approx(500.0) and b["limited_by_on_idle_cores"] == "generator"


def test_on_saturated_cores_the_share_adjusted_bound_is_the_achieved_rate_and_says_so():
    # both cores busy the whole 5 s: each process's share is what it got, its bound n / wall
    b = storm_bounds(_storm(cores_busy_s={"0": 5.0, "1": 5.0}), 0, [1])
    assert b["capacity_per_s"] == pytest.approx(b["achieved_per_s"]) and "saturated" in b["note"]
    assert b["capacity_on_idle_cores_per_s"] == pytest.approx(500.0)


def test_other_work_on_the_brokers_core_lowers_its_bound_and_can_make_it_the_limit():
    # the broker's core busy 4.5 s of 5 s, 1 s of it the broker's own: 0.3 of the core left to it
    b = storm_bounds(_storm(cores_busy_s={"0": 4.5, "1": 2.0}), 0, [1])
    assert b["broker"]["core_share_left"] == pytest.approx(0.3)
    assert b["broker"]["bound_per_s"] == pytest.approx(300.0)
    assert b["limited_by"] == "broker" and b["capacity_per_s"] == pytest.approx(300.0)


@pytest.mark.parametrize("missing", ["broker_cpu_s", "cpu_s", "cores_busy_s", "connacks"])
def test_a_missing_reading_gives_no_bounds(missing):
    assert storm_bounds(_storm(**{missing: None}), 0, [1]) is None
    assert storm_bounds(_storm(), None, [1]) is None


def test_the_cores_busy_time_is_read_and_grows():
    a = cores_busy_s()
    assert a and all(v >= 0 for v in a.values())
    sum(i * i for i in range(200_000))
    d = busy_between(a, cores_busy_s())
    assert set(d) == set(a) and all(v >= 0 for v in d.values())


def test_the_model_runs_at_the_measured_capacity_beside_the_closed_loop_one():
    c = MqttLoadConfig(clients=1000, policy="exponential", base_s=0.5, cap_s=8.0, timeout_s=30.0)
    m = {"capacity_per_s": 300.0, "phases": [_storm()], "broker_core": 0, "generator_cores": [1]}
    fm = storm_vs_model(c, m, horizon_s=120)
    assert fm["measured_bounds"]["limited_by"] == "generator"
    names = sorted(fm["models"])
    assert names == sorted(
        [
            "abandoned work",
            "late work dropped",
            FIRST_SYNS_TAKEN,  # 1,000 at once: a burst beyond the backlog, modelled at the first wave's idle end too
            "measured bounds (generator), abandoned work",
            "measured bounds (generator), late work dropped",
            "idle-core bounds (generator), late work dropped",
        ]
    )
    assert fm["models"]["idle-core bounds (generator), late work dropped"]["capacity_per_s"] == pytest.approx(500.0)
    old, new = fm["models"]["late work dropped"], fm["models"]["measured bounds (generator), late work dropped"]
    assert old["capacity_per_s"] == 300.0 and new["capacity_per_s"] == pytest.approx(500.0)
    # 1,000 at once, all queued: the last is back after about N / capacity
    assert new["time_all_back_s"] < old["time_all_back_s"]
    assert new["ratio_time_all_back_s"] == pytest.approx(5.0 / new["time_all_back_s"])
    # without the readings only the closed-loop variants are run
    bare = storm_vs_model(c, {"capacity_per_s": 300.0, "phases": [_storm(cpu_s=None)]}, horizon_s=120)
    assert bare["measured_bounds"] is None
    assert sorted(bare["models"]) == sorted(["abandoned work", "late work dropped", FIRST_SYNS_TAKEN])
