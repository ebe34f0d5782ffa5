"""fleet's second accept-queue gate: a SYN that passed while the accept queue had room, whose final ACK
finds it full (Linux tcp_check_req, tcp_abort_on_overflow 0): the client retries with its data
retransmissions and its answers to the server's SYN-ACK retransmissions, is promoted when the queue has
room then, and fails at its handshake timeout otherwise; with tcp_abort_on_overflow 1 it is reset."""

from __future__ import annotations

import numpy as np
import pytest

from secperf.core.errors import InputError
from secperf.model.fleet import FleetModel, simulate
from secperf.model.fleet_ack import AckPath, retry_offsets_s, timer_bucket_s


def test_the_retry_times_are_the_clients_data_and_the_servers_syn_ack_retransmissions():
    off = retry_offsets_s(0.2, 1.0, 5, 30.0)
    data = [t for t, k in off if k == "data"]
    synack = [t for t, k in off if k == "synack"]
    assert data == pytest.approx([0.2, 0.6, 1.4, 3.0, 6.2, 12.6, 25.4])  # 200 ms doubling, before 30 s
    assert synack == pytest.approx([1.0, 3.0 + 0.0, 7.0, 15.0][:0] + [1.0, 7.0, 15.0])  # 3 s is a data retry too
    assert [t for t, _ in off] == sorted(t for t, _ in off)
    assert len(retry_offsets_s(0.2, 1.0, 0, 30.0)) == len(data)  # tcp_synack_retries 0: the client's data only
    # the kernel's timer wheel: a timer 1 s out at CONFIG_HZ 250 sits in level 1, buckets of 8 jiffies
    assert timer_bucket_s(1.0, 250) == pytest.approx(0.032)
    assert timer_bucket_s(0.1, 250) == pytest.approx(0.004)  # 25 jiffies: level 0, one jiffy
    assert timer_bucket_s(1.0, 1000) == pytest.approx(0.064)  # 1,000 jiffies: level 2


def test_a_cohort_retries_at_its_offsets_is_promoted_by_data_or_waits_for_it_and_times_out_at_its_deadline():
    dt = 0.05
    path = AckPath(retry_offsets_s(0.2, 1.0, 5, 3.0), dt, 3.0, 100)
    path.add(0, np.array([10.0, 0.0]), 0.0)
    events: list[tuple[int, str]] = []
    for t in range(1, 80):
        retry, expired, ready = path.pop(t)
        for c in retry:
            events.append((t, path.kind(c)))
            path.retry_failed(c, 1.0)  # the queue is full at every retry
        if expired is not None:
            events.append((t, f"expired {expired.sum():g}"))
    # 0.2, 0.6, 1.0 (SYN-ACK), 1.4, 3.0 is the deadline: the client's timeout ends it there
    assert events == [(4, "data"), (12, "data"), (20, "synack"), (28, "data"), (60, "expired 10")]
    assert path.waiting == pytest.approx(0.0)
    # promoted by its data: it comes back at once; by a pure ACK: its ClientHello waits for the next data retry
    path = AckPath(retry_offsets_s(0.2, 1.0, 5, 30.0), dt, 30.0, 100)
    path.add(0, np.array([4.0]), 0.0)
    (c,) = path.pop(4)[0]
    assert path.promoted(c, 0.5) is not None and path.waiting == pytest.approx(2.0)
    path.retry_failed(c, 0.5)
    (c,) = path.pop(12)[0]
    path.retry_failed(c, 1.0)
    (c,) = path.pop(20)[0]
    assert path.kind(c) == "synack" and path.promoted(c, 1.0) is None
    assert path.pop(28)[2] == pytest.approx(np.array([2.0]))  # its ClientHello at 1.4 s
    assert path.waiting == pytest.approx(0.0)


def _batch_storm(**kw) -> dict:
    """900 first SYNs dropped in a pass (start_pass_s), back at 1 s as one retransmission batch meeting an idle
    server that takes 100 + 100 of them; the rest pass the SYN check (syn_batch_s: the whole step's batch)."""
    m = FleetModel(
        devices=1000,
        capacity_full_per_s=500,
        server_s_per_handshake=0.002,
        backlog=100,
        accept_per_s=2000,
        timeout_s=30,
        policy="none",
        start_pass_s=0.05,
        horizon_s=60,
        **kw,
    )
    return simulate(m, points=100_000)


def test_a_full_queue_at_the_final_ack_brings_the_client_back_at_its_retransmission_times():
    r = _batch_storm(syn_batch_s=0.05)
    t = np.array(r["series"]["t_s"]) - 0.05  # the series stamps the end of each step
    over = np.array(r["series"]["ack_overflows_per_s"]) * 0.05
    at = {round(float(x), 2): float(y) for x, y in zip(t, over) if y > 1e-9}
    # 700 overflow at the batch's ACKs (1 s); they retry 0.2 s, 0.6 s (data) and 1 s (SYN-ACK) later, and
    # nowhere else: each retry that finds the queue full is one more overflow
    assert at[1.0] == pytest.approx(700)
    assert set(at) <= {1.0, 1.2, 1.6, 2.0, 2.4, 3.0, 4.0, 5.0}
    assert r["ack_overflows"] == pytest.approx(sum(at.values()))
    assert r["devices_back"] == pytest.approx(1000, rel=1e-6) and r["ack_timed_out"] == 0
    # the same storm without the batch: the 700 are SYN drops instead (at least, each SYN wave after meets
    # the queue again), back with the SYN waves from 2 s on
    r0 = _batch_storm()
    assert r0["ack_overflows"] == 0 and r0["syn_drops"] >= r["syn_drops"] + 700 - 1e-6
    assert r0["devices_back"] == pytest.approx(1000, rel=1e-6)


def _stuck(**kw) -> dict:
    """1,000 first SYNs within one round trip (rtt = the step): 200 get places, 800 pass the SYN check and
    overflow at their ACK; the server then spends 3 s on its handshakes, longer than the clients wait."""
    base = dict(devices=1000, capacity_full_per_s=10, backlog=100, accept_per_s=2000, timeout_s=3, policy="none")
    m = FleetModel(**{**base, "rtt_s": 0.05, "max_attempts": 1, "horizon_s": 60, **kw})
    return simulate(m, points=100_000)


def test_clients_whose_ack_never_finds_room_fail_at_their_timeout_and_are_reset_with_abort_on_overflow():
    r = _stuck()
    t = np.array(r["series"]["t_s"]) - 0.05
    failed = np.array(r["series"]["failed_per_s"]) * 0.05
    assert 0 < r["ack_timed_out"] <= 800
    assert failed[np.isclose(t, 3.0)].sum() == pytest.approx(r["ack_timed_out"])  # at the 3-s timeout
    assert r["failed_attempts"] >= r["ack_timed_out"] and r["gave_up"] == pytest.approx(r["failed_attempts"])
    assert r["ack_reset"] == 0
    # with attempts left they try again after their back-off: none is lost, each is back or gave up
    again = _stuck(max_attempts=20, policy="exponential", base_s=0.5, cap_s=4.0, horizon_s=600)
    assert again["ack_timed_out"] > r["ack_timed_out"] and again["devices_back"] > r["devices_back"]
    assert again["devices_back"] + again["gave_up"] == pytest.approx(1000, rel=1e-6)
    # tcp_abort_on_overflow 1: the server resets each at its first overflowing ACK, so they fail at once
    a = _stuck(abort_on_overflow=True)
    assert a["ack_reset"] == pytest.approx(800) and a["ack_timed_out"] == 0
    assert a["ack_overflows"] == pytest.approx(800)  # no retries
    ta = np.array(a["series"]["t_s"]) - 0.05
    fa = np.array(a["series"]["failed_per_s"]) * 0.05
    assert fa[ta < 0.01].sum() >= 800
    # without the round trip (loopback, connect() to the ACK at once) the same SYNs are dropped instead
    z = _stuck(rtt_s=0.0)
    assert z["ack_overflows"] == 0 and z["syn_drops"] > 0


@pytest.mark.parametrize(
    "kw,needle",
    [
        (dict(rtt_s=-0.1), "rtt"),
        (dict(syn_batch_s=11.0), "SYN batch"),
        (dict(synack_retries=-1), "tcp_synack_retries"),
        (dict(synack_retries=2.5), "tcp_synack_retries"),
        (dict(synack_retries=True), "tcp_synack_retries"),
        (dict(synack_rto_s=0.0), "SYN-ACK retransmission timeout"),
    ],
)
def test_bad_ack_gate_values_are_named(kw, needle):
    with pytest.raises(InputError, match=needle):
        FleetModel(**kw).check()


def test_the_mqtt_storm_model_opens_the_ack_gate_with_the_generators_timer_bucket_and_the_brokers_settings():
    from secperf.app.mqtt_load import storm_vs_model
    from secperf.measure.mqtt_load import MqttLoadConfig

    c = MqttLoadConfig(clients=1000, policy="exponential", base_s=0.5, cap_s=8.0, timeout_s=30.0, spread_s=0.0)
    storm = {"phase": "storm", "time_all_up_s": 5.0, "wait_p50_ms": 2000.0, "connacks": 1000, "attempts": 1000}
    storm["tcp_counters"] = {"ListenOverflows": 3223, "ListenDrops": 3223, "TCPSynRetrans": 899}
    ks = {"tcp_syn_retries": 6, "tcp_syn_linear_timeouts": 4, "somaxconn": 4096}
    m = {"capacity_per_s": 300.0, "phases": [storm], "tcp_sysctls": {**ks, "tcp_synack_retries": 2}}
    fm = storm_vs_model(c, m, horizon_s=120)
    assert fm["ack_gate"]["syn_batch_s"] == pytest.approx(0.032) and fm["ack_gate"]["rtt_s"] == 0
    assert fm["ack_gate"]["synack_retries"] == 2 and fm["ack_gate"]["abort_on_overflow"] is False
    assert fm["measured"]["ack_path_overflows"] == 3223 - 899
    assert all("ack_overflows" in x and "ack_timed_out" in x for x in fm["models"].values())
    # a run without the broker's settings (older records) takes Linux's defaults and says so
    old = storm_vs_model(c, {**m, "tcp_sysctls": ks}, horizon_s=120)
    assert old["ack_gate"]["synack_retries"] == 5 and "defaults" in old["ack_gate"]["from"]
    # the user's broker (--target): its kernel is not this one, so this host's settings are not taken
    ab = storm_vs_model(c, {**m, "tcp_sysctls": {**ks, "tcp_abort_on_overflow": 1}}, horizon_s=120)
    assert ab["ack_gate"]["abort_on_overflow"] is True
    tgt = storm_vs_model(c, {**m, "target": "10.0.0.1:8883", "tcp_sysctls": {**ks, "tcp_abort_on_overflow": 1}})
    assert tgt["ack_gate"]["abort_on_overflow"] is False and tgt["ack_gate"]["synack_retries"] == 5
    bare = storm_vs_model(c, {**m, "phases": [{**storm, "tcp_counters": None}]}, horizon_s=120)
    assert bare["measured"]["ack_path_overflows"] is None
