"""A synchronised storm start (`secperf-mqttload --storm-sync`, measure/storm_sync.py): two generators
against one real mosquitto, each told the same absolute CLOCK_REALTIME instant once both reported
ready; their recorded drop instants lie within a bound of each other and neither drops before it.
Structural: the instants each generator recorded are compared, never the run's wall time. Also the
generator's protocol on stdin (a closed stdin or a bad line: the drop is at once, said in the storm
line) and the coordinator's rules (one instant for all, a generator that ended does not hold the rest)."""

from __future__ import annotations

import json
import subprocess

import pytest

from secperf.lab.iot_services import Mosquitto
from secperf.lab.pki import LabPKI
from secperf.measure import mqtt_load as M
from secperf.measure.storm_sync import StormSync, drop_skew, run_generators

BOUND_MS = 100.0  # each generator sleeps on CLOCK_REALTIME until the instant: scheduling noise only


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    pki = LabPKI().ensure()
    certs, client = pki.server("ecdsa-p256", 1), pki.client("ecdsa-p256")
    with Mosquitto(certs, client.ca, workdir=tmp_path_factory.mktemp("mosq"), connection_messages=False) as mq:
        yield mq, client


def _argv(port: int, client, n: int, prefix: str, seed: int, hold: str) -> list[str]:
    return [
        str(M.find_mqttload()),
        "--port",
        str(port),
        "--clients",
        str(n),
        "--cert",
        str(client.cert),
        "--key",
        str(client.key),
        "--connect-rate",
        "400",
        "--hold",
        hold,
        "--publish-rate",
        "0",
        "--storm",
        "--storm-sync",
        "--backoff",
        "none",
        "--storm-max",
        "60",
        "--client-id-prefix",
        prefix,
        "--seed",
        str(seed),
    ]


def _storm(lines: list[dict]) -> dict:
    return next(m for m in lines if m.get("type") == "phase" and m["phase"] == "storm")


def test_two_generators_drop_their_clients_at_one_instant(broker):
    mq, client = broker
    # different holds: without the sync, the second generator's storm would start 1.5 s after the first's
    argvs = [_argv(mq.port, client, 8, "sync-a", 1, "0.2"), _argv(mq.port, client, 8, "sync-b", 2, "1.7")]
    out = run_generators(argvs, [0, 1], 120)
    assert [r["returncode"] for r in out] == [0, 0], [r["stderr"] for r in out]
    storms = [_storm(r["lines"]) for r in out]
    assert all(any(m.get("type") == "storm_ready" for m in r["lines"]) for r in out)
    instant = out[0]["sync"]["instant_ns"]
    assert instant is not None and all(s["storm_at_ns"] == instant for s in storms)
    assert all(s["storm_sync"] == "storm-at" and s["drop_late_ns"] >= 0 for s in storms)
    assert all(s["drop_realtime_ns"] - s["storm_at_ns"] == s["drop_late_ns"] for s in storms)
    skew = drop_skew(storms)
    assert skew["synchronised"] == 2 and skew["not_synchronised"] == []
    assert skew["drop_skew_ms"] == pytest.approx(
        abs(storms[0]["drop_realtime_ns"] - storms[1]["drop_realtime_ns"]) / 1e6
    )
    assert skew["drop_skew_ms"] < BOUND_MS, skew
    # each storm is complete: every client of each generator back once
    assert [s["connacks"] for s in storms] == [8, 8] and all(s["up_at_end"] == 8 for s in storms)
    # the first generator held on past its own hold until the shared instant (its hold line says how long)
    holds = [next(m for m in r["lines"] if m.get("type") == "phase" and m["phase"] == "hold") for r in out]
    assert holds[0]["elapsed_s"] > 1.0 and all("cpu_s" in h for h in holds)


@pytest.mark.parametrize("stdin, said", [("", "stdin closed before storm-at"), ("go now\n", "bad line on stdin")])
def test_no_instant_means_the_drop_happens_at_once_and_says_why(broker, stdin, said):
    mq, client = broker
    p = subprocess.run(
        _argv(mq.port, client, 4, "sync-c", 3, "0.1"), input=stdin, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    s = _storm(lines)
    assert s["storm_sync"].startswith(said) and s["storm_at_ns"] is None and s["drop_late_ns"] is None
    assert s["drop_realtime_ns"] > 0 and s["connacks"] == 4


def test_storm_sync_without_a_storm_is_refused():
    p = subprocess.run(
        [str(M.find_mqttload()), "--port", "1", "--clients", "1", "--storm-sync"], capture_output=True, text=True
    )
    assert p.returncode == 2 and "--storm-sync" in p.stderr


def test_the_coordinator_hands_one_instant_to_all_and_does_not_wait_for_a_generator_that_ended():
    sent: list[tuple[int, int]] = []
    t = iter(range(1000, 10**6, 1000))
    sync = StormSync(3, lambda i, ns: sent.append((i, ns)), offsets_s=[0.0, 0.5, -0.5], clock_ns=lambda: next(t))
    sync.ready(0)
    sync.ready(0)  # a repeated report counts once
    assert sent == []
    sync.ready(2)
    assert sent == []
    sync.leave(1)  # ended before its ready line: the other two start
    at = sync.instant_ns
    assert at is not None and sorted(sent) == [(0, at), (2, at - 500_000_000)]
    sync.ready(1)  # too late: nothing more is sent
    assert len(sent) == 2 and sync.said()["ready"] == 2 and sync.said()["left_before_ready"] == 1


def test_mqtt_load_asks_for_the_sync_when_the_generator_takes_it():
    exe = str(M.find_mqttload())
    assert M.generator_syncs(exe)  # this tree's generator has the option
    argv = M.mqttload_argv(1883, M.MqttLoadConfig(clients=10, storm=True), None, 1, None)
    assert "--storm" in argv and "--storm-sync" in argv
    assert "--storm-sync" not in M.mqttload_argv(1883, M.MqttLoadConfig(clients=10, storm=False), None, 1, None)
    assert not M.generator_syncs("/bin/echo")  # a program without the option: the storm is not synchronised
