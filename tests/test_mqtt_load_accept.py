"""The idle broker's accept rate, measured (measure/accept_rate.py) against a real mosquitto: the
listening socket's accept queue read from /proc/net/tcp, bursts of two sizes, each round's figures,
the rate from their drains (or why there is none); `fleet`'s model takes it instead of its 20,000/s."""

from __future__ import annotations

import socket

import pytest

from secperf.app.mqtt_load import storm_vs_model
from secperf.core.errors import InputError
from secperf.lab.iot_services import Mosquitto
from secperf.lab.pki import LabPKI
from secperf.measure.accept_rate import accept_queue, measure_accept_rate
from secperf.measure.mqtt_load import MqttLoadConfig
from secperf.model.fleet import FleetModel


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    pki = LabPKI().ensure()
    certs, client = pki.server("ecdsa-p256", 1), pki.client("ecdsa-p256")
    with Mosquitto(certs, client.ca, workdir=tmp_path_factory.mktemp("mosq"), connection_messages=False) as mq:
        yield mq


def test_the_accept_queue_of_a_listening_port_is_read_and_an_unused_port_has_none(broker):
    assert accept_queue(broker.port) == 0  # idle: nothing waits
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    assert accept_queue(free) is None


def test_the_accept_rate_rounds_are_recorded_and_the_rate_is_their_drains_median_or_says_why_not(broker):
    r = measure_accept_rate(broker.port, sizes=(8, 48), rounds=3)
    assert sorted(r["rounds"]) == ["48", "8"] and all(len(v) == 3 for v in r["rounds"].values())
    drains = []
    for n, rounds in r["rounds"].items():
        for x in rounds:
            assert "failed" in x or (x["connections"] == int(n) and 0 <= x["peak_queue"] <= int(n))
            assert "failed" in x or 0 <= x["start_delay_s"] <= x["seconds"]
            drains += [x["drain_per_s"]] if "drain_per_s" in x else []
    assert r["rounds_with_a_drain"] == len(drains)
    if r["accept_per_s"] is None:
        assert not drains and r["why_none"]
    else:
        assert min(drains) <= r["accept_per_s"] <= max(drains)
    assert accept_queue(broker.port) == 0  # every connection of the bursts was reset and accepted


def test_bad_burst_sizes_are_refused():
    with pytest.raises(InputError, match="accept rate"):
        measure_accept_rate(1, sizes=(0, 10))


def test_the_model_takes_the_measured_accept_rate_and_says_where_it_came_from():
    c = MqttLoadConfig(clients=500, policy="exponential", base_s=0.5, cap_s=8.0, timeout_s=30.0)
    st = {"phase": "storm", "connacks": 500, "elapsed_s": 4.0, "time_all_up_s": 4.0, "wait_p50_ms": 2000.0}
    m = {"capacity_per_s": 150.0, "phases": [st]}
    measured = storm_vs_model(c, {**m, "accept_rate": {"accept_per_s": 2500.0}}, horizon_s=60)
    assumed = storm_vs_model(c, m, horizon_s=60)
    assert measured["accept_per_s"] == 2500.0 and measured["accept_from"].startswith("measured")
    assert assumed["accept_per_s"] == FleetModel.accept_per_s and assumed["accept_from"].startswith("assumed")
    # 500 first SYNs meet the broker closing the reset connections: both keep only the backlog of 100.
    # The 400 come back 1 s later to an idle broker: at 20,000/s it takes them all, at 2,500/s only its
    # backlog plus 125 in the step, so the queue turns clients away again (their SYNs, or, for the SYNs of
    # the generator's timer bucket that passed the SYN check, their final ACKs)
    a, b = assumed["models"]["late work dropped"], measured["models"]["late work dropped"]
    assert a["syn_drops"] == pytest.approx(400) and a["ack_overflows"] == 0
    assert b["syn_drops"] + b["ack_overflows"] > 400
