"""`secperf mqtt-load --cluster` (app/cluster_mqtt.py): the clients split over the cluster's generators
without losing or adding one, distinct MQTT client IDs and seeds, the phases merged (counts added,
histograms merged bin by bin, percentiles from the merged histogram), and a real run on a private Ray
cluster on this machine (test_cluster's head and two one-CPU worker nodes) against mosquitto started
here: the merged counts are the sum of the nodes', the merged percentiles those of a local merge."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import pids_marked, run_cli
from secperf.app.cluster_mqtt import merge_phase, worker_argvs
from secperf.core.histogram import Histogram
from test_cluster import ray_cluster  # noqa: F401 (the module's Ray cluster fixture)


def _opt(argv: list[str], opt: str) -> str:
    return argv[argv.index(opt) + 1]


@pytest.mark.parametrize("clients,n", [(10, 3), (2, 3), (19_999, 2), (7, 1)])
def test_the_clients_and_rates_are_split_without_losing_or_adding_any(clients, n):
    argv = ["secperf-mqttload", "--port", "1", "--clients", str(clients), "--connect-rate", "300"]
    argv += ["--publish-rate", "50", "--seed", "5"]
    parts = worker_argvs(argv, n)
    assert len(parts) == min(n, clients)  # a generator whose share is empty is left out
    assert sum(int(_opt(a, "--clients")) for a in parts) == clients
    assert sum(float(_opt(a, "--connect-rate")) for a in parts) == pytest.approx(300)
    assert sum(float(_opt(a, "--publish-rate")) for a in parts) == pytest.approx(50)
    # each ramp spans the same time: clients / rate alike on every generator
    spans = {round(int(_opt(a, "--clients")) / float(_opt(a, "--connect-rate")), 9) for a in parts}
    assert len(spans) == 1
    assert len({_opt(a, "--client-id-prefix") for a in parts}) == len(parts)
    assert len({_opt(a, "--seed") for a in parts}) == len(parts)
    assert all(_opt(a, "--port") == "1" for a in parts)


def _phase_line(values_us: list[int], up: float | None, connacks: int) -> dict:
    h = Histogram.of(values_us)
    return {
        "type": "phase",
        "phase": "storm",
        "stopped": "all up",
        "elapsed_s": 1.5,
        "clients": connacks,
        "attempts": connacks + 1,
        "connacks": connacks,
        "failed": 1,
        "time_all_up_s": up,
        "connack_p50_ms": 99.0,  # the generator's own: replaced by the merged histogram's
        "connack_hist_us": h.to_pairs(),
        "hs_hist_us": h.to_pairs(),
        "puback_hist_us": [],
        "wait_hist_us": [],
        "errors": {"timeout": 1},
    }


def test_phases_merge_counts_and_histograms_exactly():
    a, b = [120, 150, 900, 4000], [130, 131, 20_000]
    m = merge_phase([_phase_line(a, 1.2, 4), _phase_line(b, 2.5, 3)])
    assert (m["connacks"], m["attempts"], m["failed"], m["clients"], m["generators"]) == (7, 9, 2, 7, 2)
    assert m["errors"] == {"timeout": 2} and m["time_all_up_s"] == 2.5
    local = Histogram.of(a + b)
    assert Histogram.from_pairs(m["connack_hist_us"]) == local
    pct = local.percentiles_ms()
    assert (m["connack_p50_ms"], m["connack_max_ms"]) == (pct["p50_ms"], pct["max_ms"]) != (99.0, None)
    assert m["puback_p50_ms"] is None  # an empty histogram: no percentile, as the generator writes it
    # a generator whose clients were not all back: the merged phase has no time until all were up
    assert merge_phase([_phase_line(a, 1.2, 4), _phase_line(b, None, 3)])["time_all_up_s"] is None


def test_a_malformed_cluster_address_exits_2_before_anything_runs(tmp_path):
    p = run_cli("mqtt-load", "--cluster", "no-port", "--out", str(tmp_path / "res"), timeout=60)
    assert p.returncode == 2 and "--cluster" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "res").exists()


@pytest.mark.slow
def test_mqtt_load_on_the_cluster_counts_the_sum_of_the_nodes_and_merges_exactly(ray_cluster, tmp_path):  # noqa: F811
    n = 30
    argv = [sys.executable, "-m", "secperf", "mqtt-load", "--clients", str(n), "--connect-rate", "100"]
    argv += ["--hold", "1", "--publish-rate", "20", "--spread", "0.3", "--capacity-seconds", "0.5"]
    argv += ["--cluster", ray_cluster["address"], "--json", "--no-report", "--out", str(tmp_path)]
    proc = subprocess.Popen(argv, env=ray_cluster["env"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    # no generator outlives the run (each was spawned through its actor's registry, marked with the driver)
    assert not [p for p in pids_marked(f"SECPERF_CLUSTER_DRIVER={proc.pid}\0") if b"secperf-mqttload" in _cmdline(p)]
    doc = json.loads(out)
    assert doc["params"]["cluster"] == ray_cluster["address"]
    m = doc["analysis"]["mqtt_load"]
    workers = m["cluster"]["workers"]
    assert len(workers) == 2 and not m["cluster"]["lost"] and "partial" not in m
    assert len({w["node"] for w in workers}) == 2  # one generator on each worker node
    assert sum(w["clients"] for w in workers) == n == m["end"]["clients"]
    for ph in m["phases"]:
        mine = [next(p for p in w["phases"] if p["phase"] == ph["phase"]) for w in workers]
        for k in ("attempts", "connacks", "resumed", "failed", "refused", "pubacks"):
            assert ph[k] == sum(p[k] for p in mine), (ph["phase"], k)
        for h in ("connack", "puback", "wait"):
            local = Histogram.merged(Histogram.from_pairs(p[f"{h}_hist_us"]) for p in mine)
            assert Histogram.from_pairs(ph[f"{h}_hist_us"]) == local
            pct = local.percentiles_ms()
            assert [ph[f"{h}_{q}"] for q in ("p50_ms", "p99_ms", "max_ms")] == [
                pct[q] for q in ("p50_ms", "p99_ms", "max_ms")
            ]
        assert ph["broker_cpu_s"] is not None
    # the series (app/mqtt_load_series): each holds its phase's merged histogram and reads its percentiles
    series = {s["id"]: s for s in doc["series"]}
    for ph in m["phases"]:
        for h in ("connack", "puback"):
            hist = Histogram.from_pairs(ph[f"{h}_hist_us"])
            if hist.n:
                d = series[f"{h} {ph['phase']}"]["derived"]
                assert Histogram.from_pairs(d["hist_us"]) == hist and d["p99_ms"] == ph[f"{h}_p99_ms"]
                assert "merged" in d["percentiles_from"]
    by = {ph["phase"]: ph for ph in m["phases"]}
    assert by["ramp"]["connacks"] == n and by["storm"]["connacks"] == n  # every client up, and back
    assert by["hold"]["pubacks"] > 0 and m["capacity_per_s"] > 0
    # one storm instant for both generators, handed out after both reported ready; the drop instants
    # they recorded (each shifted to the driver's clock) lie within a bound of each other
    sync = m["cluster"]["storm_sync"]
    assert sync["instant_ns"] is not None and sync["ready"] == 2 and sync["left_before_ready"] == 0
    drop = by["storm"]["drop_sync"]
    assert drop["generators"] == drop["synchronised"] == 2 and drop["not_synchronised"] == []
    assert drop["drop_skew_ms"] is not None and drop["drop_skew_ms"] < 250.0, drop
    assert drop["drop_late_ms_max"] is not None and drop["drop_late_ms_max"] >= 0
    from secperf.report.views import mqtt_load as V

    assert any("2 generator(s) on 2 cluster node(s)" in x and "lost" not in x for x in V.facts(m))
    # per-phase CPU on each node: every generator's phases carry its own CPU and its core's busy time there
    for w in workers:
        assert all(p["cpu_s"] is not None and p["core_busy_s"] is not None for p in w["phases"]), w["phases"]
    b = m["cluster_storm_bounds"]
    assert sorted(x["name"] for x in b["per_generator"]) == sorted(w["name"] for w in workers)
    assert len(b["per_node"]) == 2 and sum(x["connacks"] for x in b["per_node"]) == by["storm"]["connacks"]
    assert b["generator"]["bound_per_s"] == pytest.approx(sum(x["bound_per_s"] for x in b["per_node"]))
    if "capacity_per_s" in b:  # the broker here: its core's share from this machine's /proc/stat
        assert b["capacity_per_s"] == min(b["broker"]["bound_per_s"], b["generator"]["bound_per_s"])
        assert m["fleet_model"]["measured_bounds"] == b
    else:
        assert b["why_none"] and m["fleet_model"]["measured_bounds"] is None


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


@pytest.mark.slow
def test_a_generator_killed_mid_run_is_lost_and_the_others_still_merge(ray_cluster, tmp_path):  # noqa: F811
    import os
    import signal
    import time

    argv = [sys.executable, "-m", "secperf", "mqtt-load", "--clients", "20", "--connect-rate", "100"]
    argv += ["--hold", "6", "--publish-rate", "10", "--storm", "off", "--capacity-seconds", "0.5"]
    argv += ["--cluster", ray_cluster["address"], "--json", "--no-report", "--out", str(tmp_path)]
    proc = subprocess.Popen(argv, env=ray_cluster["env"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    mark = f"SECPERF_CLUSTER_DRIVER={proc.pid}\0"
    deadline, gens = time.time() + 240, []
    while time.time() < deadline and len(gens) < 2 and proc.poll() is None:
        gens = [p for p in pids_marked(mark) if b"secperf-mqttload" in _cmdline(p)]
        time.sleep(0.1)
    assert len(gens) == 2, "both generators running"
    time.sleep(2.0)  # in the hold
    os.kill(gens[0], signal.SIGKILL)  # a generator this test's run started
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    m = json.loads(out)["analysis"]["mqtt_load"]
    [lost] = m["cluster"]["lost"]
    assert "no end line" in lost["reason"] and lost["name"] in m["partial"]
    [w] = m["cluster"]["workers"]  # the survivor's counts are the run's
    assert m["end"]["clients"] == w["clients"] == 10
    for ph in m["phases"]:
        mine = next(p for p in w["phases"] if p["phase"] == ph["phase"])
        assert ph["connacks"] == mine["connacks"] and ph["generators"] == 1


@pytest.mark.slow
def test_a_target_broker_is_loaded_from_every_node_that_reaches_it(ray_cluster, tmp_path):  # noqa: F811
    from secperf.lab.iot_services import Mosquitto
    from secperf.lab.pki import LabPKI

    pki = LabPKI().ensure()
    certs, client = pki.server("ecdsa-p256", 1), pki.client("ecdsa-p256")
    with Mosquitto(certs, client.ca, workdir=tmp_path / "broker", connection_messages=False) as mq:
        p = subprocess.run(
            [sys.executable, "-m", "secperf", "mqtt-load", "--target", f"127.0.0.1:{mq.port}"]
            + ["--client-cert", str(client.cert), "--client-key", str(client.key), "--clients", "21"]
            + ["--connect-rate", "100", "--hold", "0.5", "--publish-rate", "10", "--spread", "0.3"]
            + ["--capacity-seconds", "0.5", "--cluster", ray_cluster["address"], "--json", "--no-report"]
            + ["--out", str(tmp_path / "res")],
            env=ray_cluster["env"],
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads(p.stdout)
    m = doc["analysis"]["mqtt_load"]
    assert m["target"]["target"] == f"127.0.0.1:{mq.port}" and not doc["analysis"]["cluster"]["nodes_left_out"]
    workers = m["cluster"]["workers"]
    assert len({w["node"] for w in workers}) == 2 and sorted(w["clients"] for w in workers) == [10, 11]
    by = {ph["phase"]: ph for ph in m["phases"]}
    assert by["ramp"]["connacks"] == by["storm"]["connacks"] == 21
    assert all(ph["broker_cpu_s"] is None for ph in m["phases"])  # the target's CPU is not read
    b = m["cluster_storm_bounds"]  # the generators' bound per node; no broker bound, and why
    assert len(b["per_node"]) == 2 and b["generator"]["bound_per_s"] > 0
    assert "broker" not in b and "not read" in b["why_none"] and m["fleet_model"]["measured_bounds"] is None
    # the storm model's accept rate: the target probed from here before the load
    assert m["accept_rate"]["connections"] > 0 and m["fleet_model"]["accept_from"].startswith("measured from here")
