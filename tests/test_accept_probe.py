"""The accept-rate probe of a server secperf did not start (measure/accept_probe.py), against a real
mosquitto on loopback: bursts of connects, each answered (a TLS alert to a record it cannot parse), a
rate per round and their median as a lower bound; a port that refuses is an input error naming the
target; a listener that never accepts gives no figure and says why; bursts stay below a known backlog."""

from __future__ import annotations

import socket

import pytest

from secperf.core.errors import InputError
from secperf.lab.iot_services import Mosquitto
from secperf.lab.pki import LabPKI
from secperf.measure.accept_probe import probe_accept_rate


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    pki = LabPKI().ensure()
    certs, client = pki.server("ecdsa-p256", 1), pki.client("ecdsa-p256")
    with Mosquitto(certs, client.ca, workdir=tmp_path_factory.mktemp("mosq"), connection_messages=False) as mq:
        yield mq


def test_every_connection_of_each_burst_is_answered_and_the_rate_is_a_lower_bound_from_the_rounds(broker):
    r = probe_accept_rate("127.0.0.1", broker.port, "mq", sizes=(8, 24), rounds=2)
    assert sorted(r["rounds"]) == ["24", "8"] and all(len(v) == 2 for v in r["rounds"].values())
    assert r["connections"] == 2 * (8 + 24) and r["lower_bound"] is True and r["stopped"] == "done"
    rates = []
    for n, rounds in r["rounds"].items():
        for x in rounds:
            assert x["connections"] == int(n) and x["refused"] == 0
            if "rate_per_s" in x:
                assert x["answered"] == int(n) and x["no_answer"] == 0
                assert 0 < x["first_answer_s"] <= x["last_answer_s"]
                rates.append(x["rate_per_s"])
    assert r["rounds_with_a_rate"] == len(rates) > 0
    assert min(rates) <= r["accept_per_s"] <= r["best_round_per_s"] == max(rates)
    assert "cannot be read from here" in r["why_lower_bound"]


def test_a_port_that_refuses_is_an_input_error_naming_the_target():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connects are refused
        with pytest.raises(InputError, match=rf"--target gw:{port}: refused .*accept_per_s"):
            probe_accept_rate("127.0.0.1", port, f"gw:{port}", sizes=(4,), rounds=1)


def test_a_listener_that_never_accepts_gives_no_figure_and_says_why_within_its_bound():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(64)  # the kernel completes the handshakes; nobody accepts or answers
        r = probe_accept_rate("127.0.0.1", s.getsockname()[1], "x", sizes=(4,), rounds=2, round_timeout_s=0.2)
    assert r["accept_per_s"] is None and r["rounds_with_a_rate"] == 0
    assert "no answer within 0.2 s" in r["why_none"]
    assert [x["no_answer"] for x in r["rounds"]["4"]] == [4, 4]


def test_a_known_backlog_keeps_the_bursts_below_it(broker):
    r = probe_accept_rate("127.0.0.1", broker.port, "mq", sizes=(16, 48), rounds=1, backlog=10)
    assert sorted(r["rounds"]) == ["10"]


@pytest.mark.parametrize("kw", [{"sizes": (0,)}, {"rounds": 0}, {"round_timeout_s": 0}, {"budget_s": 1e6}])
def test_bad_probe_bounds_are_refused(kw):
    with pytest.raises(InputError, match="accept-rate probe"):
        probe_accept_rate("127.0.0.1", 1, "x", **kw)
