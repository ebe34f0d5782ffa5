"""The storm's capacity bounds on a cluster (app/cluster_bounds.py, app/cluster_mqtt.merge): each
generator's phases carry its node's /proc/stat reading between its phase lines and its own CPU, the
generators' bounds add up (per node and in all), the broker's bound comes from this machine's busy
time around the storm, and a target (whose CPU is not read) has the generators' bound only, saying why."""

from __future__ import annotations

import pytest

from secperf.app.cluster_bounds import TARGET_CPU, busy_around, measured_bounds, storm_bounds_cluster
from secperf.app.cluster_generators import Generators
from secperf.app.cluster_mqtt import merge


def _worker(name: str, node: str, core: int, connacks: int, cpu_s: float, busy: float | None) -> dict:
    ph = {"phase": "storm", "connacks": connacks, "cpu_s": cpu_s, "elapsed_s": 2.0, "core_busy_s": busy}
    return {"name": name, "node": node, "core": core, "phases": [{"phase": "hold"}, ph]}


STORM = {"phase": "storm", "connacks": 300, "elapsed_s": 2.0, "broker_cpu_s": 1.0}
WORKERS = [
    _worker("g0", "n1", 0, 100, 0.5, 1.5),
    _worker("g1", "n1", 1, 100, 0.5, 0.5),
    _worker("g2", "n2", 0, 100, 0.25, 0.25),
]


def test_the_generators_bounds_add_up_per_node_and_in_all_and_the_lower_bound_is_the_capacity():
    b = storm_bounds_cluster(STORM, WORKERS, 1, {"busy_s": {1: 1.5}, "broker_cpu_s": 1.0, "window_s": 2.0})
    per = {x["name"]: x for x in b["per_generator"]}
    # g0: 100 / 0.5 s on a core with 1.0 s of other work in 2 s: 200/s x 0.5; g1, g2: their cores their own
    assert [per[n]["bound_per_s"] for n in ("g0", "g1", "g2")] == pytest.approx([100.0, 200.0, 400.0])
    nodes = {x["node"]: x for x in b["per_node"]}
    assert nodes["n1"]["bound_per_s"] == pytest.approx(300.0) and nodes["n1"]["generators"] == 2
    assert nodes["n2"]["bound_per_s"] == pytest.approx(400.0) and nodes["n2"]["connacks"] == 100
    assert b["generator"]["bound_per_s"] == pytest.approx(700.0) == sum(x["bound_per_s"] for x in b["per_node"])
    # the broker: 300 CONNACKs / 1 s of CPU on a core with 0.5 s of other work in 2 s
    assert b["broker"]["bound_per_s"] == pytest.approx(225.0)
    assert b["capacity_per_s"] == pytest.approx(225.0) and b["limited_by"] == "broker"
    assert "below the storm's achieved rate" not in b.get("note", "")  # 225/s against 150/s achieved
    low = storm_bounds_cluster(STORM, WORKERS, 1, {"busy_s": {1: 2.0}, "broker_cpu_s": 0.1, "window_s": 2.0})
    assert low["capacity_per_s"] < 150.0 and "below the storm's achieved rate" in low["note"]
    assert measured_bounds({"cluster_storm_bounds": b}, STORM) is b


def test_a_target_has_the_generators_bound_only_and_says_why():
    b = storm_bounds_cluster(STORM, WORKERS, None, None)
    assert b["generator"]["bound_per_s"] == pytest.approx(700.0)
    assert "broker" not in b and "capacity_per_s" not in b and b["why_none"] == TARGET_CPU
    assert measured_bounds({"cluster_storm_bounds": b}, STORM) is None  # the model takes no bound then


def test_a_generator_without_its_nodes_reading_is_named():
    b = storm_bounds_cluster(STORM, [*WORKERS[:2], _worker("g2", "n2", 0, 100, 0.25, None)], 1, None)
    assert "capacity_per_s" not in b and "g2 on n2" in b["why_none"]


def test_the_brokers_busy_time_is_taken_from_the_samples_around_the_storm():
    samples = [(0.0, 0.5, {0: 1.0}), (1.0, 0.75, {0: 1.5}), (2.0, 1.5, {0: 2.5}), (3.0, 1.5, {0: 2.7})]
    assert busy_around(samples, 1.2, 1.8) == {"busy_s": {0: 1.0}, "broker_cpu_s": 0.75, "window_s": 1.0}
    assert busy_around(samples, 0.5, 2.5)["busy_s"] == {0: pytest.approx(1.7)}
    assert busy_around(samples, -1.0, 2.0) is None and busy_around(samples, 1.0, 9.0) is None


def test_merge_gives_each_generators_phases_its_nodes_busy_time_and_its_own_cpu():
    places = [
        {"name": f"g{i}", "ip": "10.0.0.1", "node_id": f"node{i}xxxxxxxx", "host": "h", "pid": 1, "core": i}
        for i in range(2)
    ]
    g = Generators(cluster=None, places=places)  # type: ignore[arg-type]

    def stamp(t: float, c0: float, c1: float) -> dict:
        return {"wall_s": t, "cores_busy_s": {0: c0, 1: c1}, "tcp_counters": {"ListenOverflows": int(t)}}

    def result(i: int) -> dict:
        lines = [
            {"type": "phase", "phase": "ramp", "elapsed_s": 1.0, "connacks": 5, "cpu_s": 0.1},
            {"type": "phase", "phase": "storm", "elapsed_s": 2.0, "connacks": 5, "cpu_s": 0.2},
            {"type": "end", "clients": 5},
        ]
        stamps = [stamp(0, 0, 0), stamp(1, 0.5, 0.25), stamp(3, 1.5, 1.0)]
        return {"lines": lines, "phase_stamps": stamps, "started_wall_s": 0.0, "late_s": 0.0, "pid": 9,
                "returncode": 0, "stderr": ""}  # fmt: skip

    clocks = [{"offset_s": 0.0, "ping_s": 0.001}] * 2
    out = merge(g, {0: result(0), 1: result(1)}, clocks, [], [])
    w0, w1 = out["cluster"]["workers"]
    assert [p["core_busy_s"] for p in w0["phases"]] == [0.5, 1.0]  # core 0's busy time in each phase
    assert [p["core_busy_s"] for p in w1["phases"]] == [0.25, 0.75]  # core 1's
    assert [p["cpu_s"] for p in w0["phases"]] == [0.1, 0.2]
    assert w0["phases"][1]["node_tcp_counters"] == {"ListenOverflows": 2}
    storm = next(p for p in out["phases"] if p["phase"] == "storm")
    assert storm["window_s"] == (1.0, 3.0)  # the storm on the driver's clock, for the broker's reading
