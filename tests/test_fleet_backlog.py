"""fleet's model of the listen backlog: SYNs beyond the accept queue are dropped and come back on
the client kernel's retransmission schedule (Linux >= 6.5: 1, 2, 3, 4, 5, 7, 11 ... s after the first
SYN, tcp_syn_linear_timeouts; before: 1 s, 3 s, 7 s ...); a backlog larger than the storm changes
nothing; the retransmission lines stay bounded for a large fleet; bad values exit 2."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from secperf.core.errors import InputError
from secperf.model.fleet import SYN_LINE_BYTES, FleetModel, simulate

# a storm that outruns the server: 2,000 clients within 1 s against 200 handshakes/s
STORM = dict(
    devices=2000, capacity_full_per_s=200, policy="exponential", base_s=0.5, cap_s=8, timeout_s=60, spread_s=1.0
)


def _back_between(r: dict, lo: float, hi: float) -> float:
    """Share of the fleet that came back between lo and hi seconds (from the model's series)."""
    t, b = np.array(r["series"]["t_s"]), np.array(r["series"]["back_share"])
    return float(np.interp(hi, t, b) - np.interp(lo, t, b))


def test_a_backlog_smaller_than_the_storm_drops_syns_that_return_on_the_retransmission_schedule():
    small = simulate(FleetModel(backlog=100, horizon_s=600, **STORM))
    assert small["accept_queue"] == 100 and small["syn_drops"] > 0
    assert small["devices_back"] == pytest.approx(2000, rel=1e-6)
    # the drops happen while the storm arrives and come back 1 s, 2 s, 4 s ... later: drops and
    # their returns appear at the steps of the schedule, never before the first retransmission
    drops = np.array(small["series"]["syn_drops_per_s"])
    t = np.array(small["series"]["t_s"])
    assert drops[t <= 1.05].sum() > 0
    # the last clients wait for later retransmissions: all back later than the FIFO model's N / capacity
    assert small["time_all_back_s"] > 2000 / 200 + 1.0
    big = simulate(FleetModel(backlog=4096, horizon_s=600, **STORM))
    assert big["syn_drops"] == 0
    assert small["time_all_back_s"] > big["time_all_back_s"]
    # the waits gain mass after the first retransmissions compared with the FIFO model
    assert small["wait_s"]["p99"] > big["wait_s"]["p99"]


def test_a_syn_dropped_at_once_comes_back_exactly_one_rto_later_then_two_more():
    # a pass of the server's work outlasts the storm: beyond the accept queue every SYN is dropped once
    # and comes back 1 s later (then 2 s after that if dropped again); nothing comes back in between
    # (a kernel before 6.5: doubling from the first retransmission)
    m = FleetModel(
        syn_linear_timeouts=0,
        devices=500,
        capacity_full_per_s=50,
        backlog=20,
        accept_per_s=20,
        spread_s=0.5,
        timeout_s=600,
        policy="none",
        dt_s=0.05,
        horizon_s=600,
    )
    r = simulate(m, points=100_000)
    t, drops = np.array(r["series"]["t_s"]), np.array(r["series"]["syn_drops_per_s"])
    busy = t[drops > 0]
    assert busy.size and busy.min() < 0.6
    # the drops come in groups one RTO apart (the first SYNs, then the first and second retransmissions)
    assert np.any((busy > 1.0) & (busy < 1.65)) and np.any((busy > 3.0) & (busy < 3.65))
    assert not np.any((busy > 0.65) & (busy < 1.0)) and not np.any((busy > 1.7) & (busy < 3.0))
    assert r["devices_back"] == pytest.approx(500, rel=1e-6)


def _rounds(linear: int) -> tuple[dict, list[float]]:
    """A fast server, a small backlog and a slow idle accept: each round takes what the accept queue holds
    (100 + 2,000/s x 0.05 s) and the rest wait for the next retransmission."""
    m = FleetModel(
        devices=1000,
        capacity_full_per_s=2000,
        backlog=100,
        accept_per_s=2000,
        timeout_s=60,
        policy="none",
        syn_linear_timeouts=linear,
        horizon_s=120,
    )
    r = simulate(m, points=100_000)
    t, back = np.array(r["series"]["t_s"]), np.array(r["series"]["back_share"])
    return r, [float(x) for x in t[np.diff(np.concatenate([[0.0], back])) > 1e-9]]


def test_the_waits_come_in_steps_at_the_retransmissions_1_3_7_15_s():
    # a kernel before 6.5 (RFC 6298 doubling): the fleet comes back only just after 0, 1, 3, 7, 15 s
    r, came = _rounds(0)
    rounds = sorted({int(x) for x in came})
    assert rounds == [0, 1, 3, 7, 15]
    assert all(x - int(x) <= 0.15 for x in came)  # just after each retransmission, nothing in between
    assert r["devices_back"] == pytest.approx(1000, rel=1e-6) and r["gave_up"] == 0
    # 800 first SYNs beyond what the server took, then 600, 400 and 200 dropped again: every drop counted
    assert r["syn_drops"] == pytest.approx(800 + 600 + 400 + 200, rel=1e-6)


def test_linux_linear_syn_timeouts_bring_the_rounds_back_one_second_apart():
    # Linux >= 6.5 (tcp_syn_linear_timeouts 4, this model's default): the same storm comes back just after
    # 0, 1, 2, 3, 4 s, each round taking what the accept queue holds; the same drops, counted once each
    r, came = _rounds(4)
    assert sorted({int(x) for x in came}) == [0, 1, 2, 3, 4]
    assert all(x - int(x) <= 0.15 for x in came)
    assert r["devices_back"] == pytest.approx(1000, rel=1e-6) and r["gave_up"] == 0
    assert r["syn_drops"] == pytest.approx(800 + 600 + 400 + 200, rel=1e-6)
    old, _ = _rounds(0)
    assert r["time_all_back_s"] < old["time_all_back_s"] - 10  # 4 s instead of 15 s for the last round


def test_the_syn_timeouts_follow_the_kernels_schedule():
    # ip-sysctl tcp_syn_linear_timeouts: RTOs 1, 1, 1, 1, 1, 2, 4 ... s; tcp_write_timeout counts the
    # linear ones on top of tcp_syn_retries, so connect() fails after 131 s (127 s with doubling at once)
    lin, old = FleetModel(), FleetModel(syn_linear_timeouts=0)
    assert lin.syn_rtos_s[:7] == [1, 1, 1, 1, 1, 2, 4] and len(lin.syn_rtos_s) == 6 + 4 + 1
    assert sum(lin.syn_rtos_s) == 131 and sum(old.syn_rtos_s) == 127
    assert old.syn_rtos_s == [2.0**k for k in range(7)]
    # only the retransmissions sent before the client's timeout ends the attempt are kept
    assert FleetModel(timeout_s=30).syn_gaps_s == [1, 1, 1, 1, 1, 2, 4, 8]  # sent at 1, 2, 3, 4, 5, 7, 11, 19 s
    assert FleetModel(timeout_s=30, syn_linear_timeouts=0).syn_gaps_s == [1, 2, 4, 8]  # 1, 3, 7, 15 s
    assert FleetModel(timeout_s=30, syn_rto_s=0.5).syn_gaps_s[:6] == [0.5] * 5 + [1.0]


def _first_step_drops(**kw) -> float:
    m = FleetModel(devices=1000, capacity_full_per_s=500, backlog=100, accept_per_s=4000, timeout_s=30, **kw)
    r = simulate(m, points=100_000)
    return float(r["series"]["syn_drops_per_s"][0]) * m.dt_s


def test_a_server_in_a_pass_at_the_start_admits_only_its_accept_queue_in_the_first_step():
    # idle at t = 0: the first step admits the accept queue plus what the idle server takes meanwhile
    # (100 + 4,000/s x 0.05 s); in a pass of at least the step (closing the reset connections): the
    # accept queue only; in a shorter pass: one queue per pass within the step, never more than idle
    assert _first_step_drops() == pytest.approx(1000 - 100 - 200)
    assert _first_step_drops(start_pass_s=0.05) == pytest.approx(1000 - 100)
    assert _first_step_drops(start_pass_s=2.0) == pytest.approx(1000 - 100)
    assert _first_step_drops(start_pass_s=0.025) == pytest.approx(1000 - 200)  # two queues in the step
    # the first step's drops come back on the retransmission schedule: all back, later than from idle
    kw = dict(devices=1000, capacity_full_per_s=500, backlog=100, accept_per_s=4000, timeout_s=30)
    busy, idle = simulate(FleetModel(start_pass_s=0.05, **kw)), simulate(FleetModel(**kw))
    assert busy["devices_back"] == pytest.approx(1000, rel=1e-6)
    assert busy["syn_drops"] > idle["syn_drops"] and busy["wait_s"]["p50"] >= idle["wait_s"]["p50"]


def test_a_backlog_larger_than_the_storm_is_the_fifo_model():
    for ab in (False, True):
        kw = dict(devices=1000, capacity_full_per_s=400, policy="exponential", base_s=0.5, cap_s=8, timeout_s=30)
        a = simulate(FleetModel(backlog=1064, abandoned_work=ab, **kw))
        b = simulate(FleetModel(backlog=10_000_000, somaxconn=10_000_000, abandoned_work=ab, **kw))
        assert a["syn_drops"] == b["syn_drops"] == 0
        for k in ("time_all_back_s", "wait_s", "failed_attempts", "peak_queue"):
            assert a[k] == b[k], k
        # FIFO at capacity: half back after N/2/cap, all after N/cap (to the model's step)
        assert a["wait_s"]["p50"] == pytest.approx(500 / 400, abs=0.06)
        assert a["time_all_back_s"] == pytest.approx(1000 / 400, abs=0.06)


def test_a_server_that_is_not_the_bottleneck_accepts_more_often_and_drops_fewer_syns():
    # the same end-to-end rate, but the server's own work per handshake a fifth of 1 / capacity (the
    # clients limit the rate): its passes are shorter, so it empties the accept queue more often
    kw = dict(backlog=100, horizon_s=600, **STORM)
    bound = simulate(FleetModel(**kw))
    light = simulate(FleetModel(server_s_per_handshake=1 / 1000, **kw))
    assert 0 < light["syn_drops"] < bound["syn_drops"]
    assert light["time_all_back_s"] <= bound["time_all_back_s"]
    # 1 / capacity is what the model takes without it
    same = simulate(FleetModel(server_s_per_handshake=1 / 200, **kw))
    assert same["syn_drops"] == bound["syn_drops"] and same["time_all_back_s"] == bound["time_all_back_s"]


def test_somaxconn_caps_the_backlog():
    assert FleetModel(backlog=511, somaxconn=128).accept_queue == 128
    assert FleetModel(backlog=100).accept_queue == 100


def test_the_retransmission_lines_stay_bounded_for_a_large_fleet():
    m = FleetModel(devices=100_000, capacity_full_per_s=650, backlog=100, timeout_s=300, horizon_s=7200)
    # the lines do not grow with N: 67 s of 0.05 s steps (five of 1 s, then 2 s + ... + 32 s) times the
    # attempts (63 s with doubling from the first)
    assert m.syn_line_floats == sum(m.syn_gaps_steps) * (m.max_attempts + 1)
    assert sum(m.syn_gaps_steps) == 67 * 20
    assert sum(FleetModel(backlog=100, timeout_s=300, syn_linear_timeouts=0).syn_gaps_steps) == 63 * 20
    assert m.syn_line_floats * 8 < 2 * 2**20
    assert FleetModel(devices=100_000_000, backlog=100, timeout_s=300).syn_line_floats == m.syn_line_floats
    # a short timeout keeps only the retransmissions that fit in it: 1, 2, 3, 4 s before 5 s (1 s and
    # 3 s with doubling from the first)
    assert FleetModel(timeout_s=5).syn_gaps_steps == [20, 20, 20, 20]
    assert FleetModel(timeout_s=5, syn_linear_timeouts=0).syn_gaps_steps == [20, 40]
    r = simulate(FleetModel(devices=100_000, capacity_full_per_s=650, backlog=100, spread_s=10, horizon_s=3600))
    assert r["devices_back"] == pytest.approx(100_000, rel=1e-6) and r["syn_drops"] > 0
    with pytest.raises(InputError, match="SYN retransmission lines"):
        FleetModel(dt_s=0.0001, timeout_s=300, horizon_s=100).check()
    assert SYN_LINE_BYTES >= 2**20


@pytest.mark.parametrize(
    "kw,needle",
    [
        (dict(backlog=0), "--backlog"),
        (dict(backlog=10_000_001), "--backlog"),
        (dict(backlog=1.5), "--backlog"),
        (dict(backlog=True), "--backlog"),
        (dict(somaxconn=0), "somaxconn"),
        (dict(syn_retries=0), "tcp_syn_retries"),
        (dict(syn_rto_s=0.0), "SYN retransmission timeout"),
        (dict(syn_linear_timeouts=-1), "tcp_syn_linear_timeouts"),
        (dict(syn_linear_timeouts=1.5), "tcp_syn_linear_timeouts"),
        (dict(syn_linear_timeouts=True), "tcp_syn_linear_timeouts"),
        (dict(accept_per_s=0.0), "accept rate"),
        (dict(server_s_per_handshake=0.0), "server seconds per handshake"),
        (dict(start_pass_s=-0.1), "pass at the storm's start"),
        (dict(start_pass_s=61.0), "pass at the storm's start"),
    ],
)
def test_bad_backlog_values_are_named(kw, needle):
    with pytest.raises(InputError, match=needle):
        FleetModel(**kw).check()


@pytest.mark.parametrize("value", ["0", "-3", "1.5", "lots", "10000001"])
def test_fleet_bad_backlog_exits_2(value, tmp_path):
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "secperf",
            "fleet",
            "--capacity",
            "100",
            "--backlog",
            value,
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2, p.stderr[-500:]
    assert "--backlog" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_fleet_cli_models_the_backlog_it_is_given(tmp_path):
    import json

    runs = {}
    for b in ("100", "100000"):
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "secperf",
                "fleet",
                "--devices",
                "5000",
                "--capacity",
                "500",
                "--spread",
                "2",
                "--backlog",
                b,
                "--out",
                str(tmp_path / b),
                "--json",
                "--no-report",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 0, p.stderr[-800:]
        (run,) = json.loads(p.stdout)["analysis"]["fleet"]["runs"]
        runs[b] = run
    assert runs["100"]["model"]["backlog"] == 100 and runs["100"]["accept_queue"] == 100
    assert runs["100"]["syn_drops"] > 0 and runs["100000"]["syn_drops"] == 0
    assert runs["100000"]["accept_queue"] == 4096  # somaxconn's default caps it


def test_the_mqtt_storm_is_compared_with_the_model_at_mosquittos_backlog():
    from secperf.app.mqtt_load import MOSQUITTO_BACKLOG, storm_vs_model
    from secperf.measure.mqtt_load import MqttLoadConfig

    c = MqttLoadConfig(clients=2000, policy="exponential", base_s=0.5, cap_s=8.0, timeout_s=30.0, spread_s=2.0)
    storm = {"phase": "storm", "time_all_up_s": 8.0, "wait_p50_ms": 4000.0, "wait_p90_ms": 7000.0}
    storm |= {"wait_p99_ms": 7900.0, "connacks": 2000, "gave_up": 0, "failed": 0, "refused": 0, "attempts": 2000}
    m = {"capacity_per_s": 250.0, "phases": [storm]}
    fm = storm_vs_model(c, m, horizon_s=120)
    assert fm["backlog"] == MOSQUITTO_BACKLOG == 100
    assert fm["start_pass_s"] == FleetModel.dt_s  # the generator's resets: the first SYNs meet a pass
    assert fm["server_s_per_handshake"] is None  # no capacity record here: the model takes 1 / capacity
    cpu = {"server_cpu_us_per_handshake": 1300.0}
    light = storm_vs_model(c, {**m, "capacity_before": cpu, "capacity_after": cpu}, horizon_s=120)
    assert light["server_s_per_handshake"] == pytest.approx(0.0013)
    assert light["models"]["late work dropped"]["syn_drops"] < fm["models"]["late work dropped"]["syn_drops"]
    for mod in fm["models"].values():
        assert mod["syn_drops"] > 0  # 1,000 clients/s against 250 handshakes/s and 100 in the accept queue
        assert mod["ratio_wait_p90_s"] == pytest.approx(7.0 / mod["wait_p90_s"])
        ok = [0.8 <= mod[f"ratio_{k}"] <= 1.25 for k in ("time_all_back_s", "wait_p50_s")]
        assert mod["within_target"] == all(ok)
    # the user's broker (--target): its backlog is not known, so the model holds every client
    tfm = storm_vs_model(c, {**m, "target": "10.0.0.1:8883"}, horizon_s=120)
    assert tfm["backlog"] == 2064 and all(x["syn_drops"] == 0 for x in tfm["models"].values())


def test_a_burst_is_set_between_the_two_ends_of_its_first_wave():
    """1,000 clients dropped at once against mosquitto's backlog of 100: the model with the first SYNs
    meeting the broker's close pass (only the backlog gets in, 900 wait for the 1-s retransmission) and the
    one with an idle broker taking them all are both run; the second is faster, and the burst band says
    where the measured figures fall. A storm spread out enough is no burst and has neither."""
    from secperf.app.mqtt_load import FIRST_SYNS_TAKEN, storm_vs_model
    from secperf.measure.mqtt_load import MqttLoadConfig
    from secperf.report.views import mqtt_load as V

    c = MqttLoadConfig(clients=1000, policy="exponential", base_s=0.5, cap_s=8.0, timeout_s=30.0, spread_s=0.0)
    storm = {"phase": "storm", "time_all_up_s": 1.4, "wait_p50_ms": 800.0, "wait_p90_ms": 1300.0}
    storm |= {"wait_p99_ms": 1390.0, "connacks": 1000, "gave_up": 0, "failed": 0, "refused": 0, "attempts": 1000}
    m = {"capacity_per_s": 760.0, "phases": [storm], "accept_rate": {"accept_per_s": 500_000.0}}
    fm = storm_vs_model(c, m, horizon_s=60)
    busy, idle = fm["models"]["late work dropped"], fm["models"][FIRST_SYNS_TAKEN]
    assert busy["syn_drops"] == pytest.approx(900) and idle["syn_drops"] == pytest.approx(0)
    assert idle["wait_p50_s"] < busy["wait_p50_s"] and idle["time_all_back_s"] < busy["time_all_back_s"]
    band = fm["burst_band"]
    for k in ("time_all_back_s", "wait_p50_s"):
        assert band[k]["backlog_only"] == busy[k] and band[k]["first_syns_taken"] == idle[k]
        assert band[k]["where"] == "inside"  # 1.4 s and 0.8 s lie between the two ends
    (note,) = [n for n in V.storm_model({"fleet_model": fm}).notes if n.startswith("burst band")]
    assert "time until all back inside" in note and "median wait inside" in note
    slow = {**storm, "time_all_up_s": 9.0, "wait_p50_ms": 6000.0}
    assert storm_vs_model(c, {**m, "phases": [slow]}, horizon_s=60)["burst_band"]["wait_p50_s"]["where"] == "above"
    spread = storm_vs_model(replace(c, spread_s=4.0), m, horizon_s=60)  # 250 first attempts/s: no burst
    assert FIRST_SYNS_TAKEN not in spread["models"] and "burst_band" not in spread


def test_the_storm_model_reports_its_sensitivity_and_names_a_knife_edge():
    """The headline model is run again at 0.9 and 1.1 times the capacity. A time until all are back that
    jumps while the median wait follows the capacity smoothly is a knife edge (the last clients on a rung of
    TCP's doubling retransmissions), said in the record and the report; one that moves with it is not."""
    from secperf.app.mqtt_load import CAPACITY_FACTORS, sensitivity, storm_vs_model
    from secperf.measure.mqtt_load import MqttLoadConfig
    from secperf.report.views import mqtt_load as V

    def fig(all_back, p50):
        return {"time_all_back_s": all_back, "wait_p50_s": p50}

    jump = sensitivity({0.9: fig(30.0, 6.6), 1.0: fig(16.8, 6.0), 1.1: fig(15.4, 5.4)})
    assert jump["knife_edge"] and jump["time_all_back_s_range"] == [15.4, 30.0] and "rung" in jump["why"]
    smooth = sensitivity({0.9: fig(20.1, 7.2), 1.0: fig(18.5, 6.5), 1.1: fig(16.4, 5.9)})
    assert not smooth["knife_edge"] and "why" not in smooth
    c = MqttLoadConfig(clients=2000, policy="exponential", base_s=0.5, cap_s=8.0, timeout_s=30.0, spread_s=2.0)
    storm = {"phase": "storm", "time_all_up_s": 8.0, "wait_p50_ms": 4000.0, "wait_p90_ms": 7000.0}
    storm |= {"wait_p99_ms": 7900.0, "connacks": 2000, "gave_up": 0, "failed": 0, "refused": 0, "attempts": 2000}
    fm = storm_vs_model(c, {"capacity_per_s": 250.0, "phases": [storm]}, horizon_s=120)
    sens = fm["sensitivity"]
    assert sens["capacity_factors"] == list(CAPACITY_FACTORS) == [0.9, 1.0, 1.1]
    assert sens["time_all_back_s"][1] == fm["models"]["late work dropped"]["time_all_back_s"]
    assert sens["wait_p50_s"][0] > sens["wait_p50_s"][2]  # less capacity, longer waits
    notes = V.storm_model({"fleet_model": {**fm, "sensitivity": jump}}).notes
    assert any(n.startswith("time until all back on a knife edge: 15.4 to 30.0 s") for n in notes)
    assert not any("knife edge" in n for n in V.storm_model({"fleet_model": {**fm, "sensitivity": smooth}}).notes)
