"""MQTT-level load (`secperf mqtt-load`, secperf-mqttload) against a real mosquitto on loopback: structure
only (every CONNECT answered, PUBACKs against QoS 1 publishes, histogram counts, the storm phase, a
refused client certificate counted as refused with its reason), and bad input exiting 2."""

from __future__ import annotations

import dataclasses
import json
import subprocess

import pytest

from conftest import run_cli
from secperf.app.mqtt_load import FIRST_SYNS_TAKEN, phase, storm_vs_model
from secperf.core.errors import InputError
from secperf.core.histogram import Histogram
from secperf.inputs.se_profiles import get_profile
from secperf.lab.iot_services import Mosquitto
from secperf.lab.pki import LabPKI
from secperf.measure import mqtt_load as M


@pytest.fixture(scope="module")
def pki():
    return LabPKI().ensure()


@pytest.fixture(scope="module")
def broker(pki, tmp_path_factory):
    certs, client = pki.server("ecdsa-p256", 1), pki.client("ecdsa-p256")
    with Mosquitto(certs, client.ca, workdir=tmp_path_factory.mktemp("mosq"), connection_messages=False) as mq:
        yield mq, client


def _run(port: int, *args: str) -> dict:
    p = subprocess.run(
        [str(M.find_mqttload()), "--port", str(port), *args], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    return {
        "phases": {m["phase"]: m for m in lines if m["type"] == "phase"},
        "end": next(m for m in lines if m["type"] == "end"),
        "meta": lines[0],
    }


def test_every_connect_answered_pubacks_match_publishes_and_the_storm_is_a_phase(broker):
    mq, client = broker
    n = 30
    r = _run(
        mq.port,
        "--clients",
        str(n),
        "--cert",
        str(client.cert),
        "--key",
        str(client.key),
        "--connect-rate",
        "300",
        "--hold",
        "1",
        "--publish-rate",
        "60",
        "--qos",
        "1",
        "--storm",
        "--backoff-base-ms",
        "100",
        "--storm-max",
        "60",
    )
    ph = r["phases"]
    assert list(ph) == ["ramp", "hold", "storm"]
    for p in ph.values():
        # every attempt ends in a CONNACK, a refusal or a failure; the histograms hold every sample
        assert p["attempts"] == p["connacks"] + p["refused"] + p["failed"] + p["connecting_at_end"]
        assert Histogram.from_pairs(p["connack_hist_us"]).n == p["connacks"]
        assert Histogram.from_pairs(p["hs_hist_us"]).n == p["connacks"]
        assert Histogram.from_pairs(p["puback_hist_us"]).n == p["pubacks"]
        assert p["dropped"] == 0 and p["refused"] == 0
    assert ph["ramp"]["connacks"] == n and ph["ramp"]["up_at_end"] == n
    assert ph["storm"]["connacks"] == n and ph["storm"]["up_at_end"] == n
    assert ph["storm"]["time_all_up_s"] is not None
    assert Histogram.from_pairs(ph["storm"]["wait_hist_us"]).n == n  # each client's wait until it was back
    # a QoS 1 PUBLISH is answered by one PUBACK, in its phase or the next, unless the storm's reset or the
    # end closed its connection first
    published = sum(p["published_qos1"] for p in ph.values())
    acked = sum(p["pubacks"] for p in ph.values())
    assert published > 0
    assert acked + ph["hold"]["pubacks_outstanding_at_end"] + ph["storm"]["pubacks_outstanding_at_end"] == published
    assert r["end"]["peak_up"] == n


def test_qos_2_completes_each_publish_with_pubrec_pubrel_pubcomp(broker):
    """QoS 2: every PUBLISH's exchange (PUBREC answered with PUBREL, then PUBCOMP) ends in one completion
    counted as the ack, its latency in the ack histogram; nothing is counted as QoS 1."""
    mq, client = broker
    r = _run(
        mq.port,
        "--clients",
        "10",
        "--cert",
        str(client.cert),
        "--key",
        str(client.key),
        "--connect-rate",
        "200",
        "--hold",
        "1",
        "--publish-rate",
        "40",
        "--qos",
        "2",
    )
    ph = r["phases"]
    hold = ph["hold"]
    published = sum(p["published_qos2"] for p in ph.values())
    assert published > 0 and all(p["published_qos1"] == 0 == p["published_qos0"] for p in ph.values())
    # each PUBLISH is completed once (in its phase or the next), or still in its exchange when the run ended
    assert sum(p["pubacks"] for p in ph.values()) + hold["pubacks_outstanding_at_end"] == published
    assert hold["pubacks"] > 0 and Histogram.from_pairs(hold["puback_hist_us"]).n == hold["pubacks"]
    assert hold["failed"] == 0 and hold["dropped"] == 0


def test_a_refused_client_certificate_is_counted_as_refused_with_its_reason(broker, tmp_path):
    mq, _client = broker
    other = LabPKI(tmp_path / "other-pki").ensure().client("ecdsa-p256")  # a CA mosquitto does not trust
    r = _run(
        mq.port,
        "--clients",
        "4",
        "--cert",
        str(other.cert),
        "--key",
        str(other.key),
        "--hold",
        "0",
        "--max-attempts",
        "2",
        "--backoff",
        "fixed",
        "--backoff-base-ms",
        "20",
        "--ramp-max",
        "5",
    )
    ramp = r["phases"]["ramp"]
    assert ramp["connacks"] == 0 and ramp["refused"] == 8 and ramp["failed"] == 0 and ramp["gave_up"] == 4
    assert sum(ramp["errors"].values()) == 8
    assert all(reason.startswith("refused: ") for reason in ramp["errors"])


def test_a_secure_element_pauses_each_full_handshake_and_a_resumed_one_skips_it(broker, tmp_path):
    mq, client = broker
    prof = get_profile("atecc608")  # the command resolves it (app/mqtt_load.resolved); measure takes the object
    se = M.se_samples_file(prof, tmp_path / "se.txt", 1)
    assert len(se.read_text().split()) == M.SE_SAMPLES and (se.stat().st_mode & 0o777) == 0o600
    r = _run(
        mq.port,
        "--clients",
        "6",
        "--cert",
        str(client.cert),
        "--key",
        str(client.key),
        "--connect-rate",
        "50",
        "--hold",
        "0.5",
        "--se-samples",
        str(se),
        "--storm",
        "--resume-ratio",
        "1",
    )
    ramp, storm = r["phases"]["ramp"], r["phases"]["storm"]
    assert ramp["se_waits"] == ramp["connacks"] - ramp["resumed"]
    assert storm["offered_session"] == 6 and storm["se_waits"] == storm["connacks"] - storm["resumed"]
    assert r["meta"]["se_samples"] == M.SE_SAMPLES
    said = M.se_said(prof, se)
    assert said["profile"] == "atecc608" and said["drawn"] == M.SE_SAMPLES and said["mean_ms"] > 0 and said["source"]
    assert M.se_said(None, None) is None


def test_the_storm_beside_fleets_model_gives_both_variants_with_ratios():
    c = M.MqttLoadConfig(clients=200, policy="exponential", base_s=0.5, cap_s=8.0, timeout_s=10.0)
    m = {
        "capacity_per_s": 100.0,
        "phases": [
            {
                "phase": "storm",
                "time_all_up_s": 2.5,
                "wait_p50_ms": 1000.0,
                "wait_p99_ms": 2400.0,
                "connacks": 200,
                "gave_up": 0,
                "failed": 0,
                "refused": 0,
                "attempts": 200,
            }
        ],
    }
    fm = storm_vs_model(c, m, horizon_s=60)
    # 200 at once beyond the backlog of 100: a burst, so the first wave's idle end is modelled too
    assert set(fm["models"]) == {"abandoned work", "late work dropped", FIRST_SYNS_TAKEN}
    for mod in fm["models"].values():
        assert mod["ratio_time_all_back_s"] == pytest.approx(2.5 / mod["time_all_back_s"])
        assert isinstance(mod["within_target"], bool)
    assert storm_vs_model(c, {"capacity_per_s": 100.0, "phases": []}) is None and phase(m, "hold") is None
    # all at once beyond mosquitto's listen backlog: the comparison says what the model lacks; spread, it does not
    assert "backlog" in fm["note"]
    spread = storm_vs_model(dataclasses.replace(c, spread_s=1.0), m, horizon_s=60)
    assert "note" not in spread and set(spread["models"]) == {"abandoned work", "late work dropped"}


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--clients", "0"], "--clients"),
        (["--key", "rsa-2048-nocrt"], "mosquitto"),
        (["--key", "nosuch"], "--key"),
        (["--se", "nosuch-profile"], "nosuch-profile"),
        (["--se", "atecc608", "--client-auth", "off"], "--client-auth"),
        (["--qos", "3"], "--qos"),
        (["--policy", "sometimes"], "--policy"),
        (["--clients", "999999"], "RLIMIT_NOFILE"),
        (["--ca", "x.pem"], "--target"),
        (["--target", "127.0.0.1:1", "--key", "rsa-2048"], "--key"),
    ],
)
def test_bad_input_exits_2_naming_it(args, needle, tmp_path):
    p = run_cli("mqtt-load", *args, "--out", str(tmp_path / "res"), timeout=60)
    assert p.returncode == 2, p.stderr[-800:]
    assert needle in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "res").exists()  # refused before a run directory is made


def test_the_generator_names_the_limit_that_binds_and_refuses_bad_arguments(tmp_path):
    exe = str(M.find_mqttload())
    lim = M.fd_limits(1)
    p = subprocess.run(
        [exe, "--port", "1", "--clients", str(int(lim["nofile_hard"]) + 1)], capture_output=True, text=True, timeout=30
    )
    assert p.returncode == 2 and "RLIMIT_NOFILE" in p.stderr
    with pytest.raises(InputError, match="RLIMIT_NOFILE"):
        M.fd_limits(int(lim["nofile_hard"]) + 1)
    bad = tmp_path / "se.txt"
    bad.write_text("12\nfast\n")
    for args, needle in (
        (["--clients", "3"], "--port"),
        (["--port", "1"], "--clients"),
        (["--port", "1", "--clients", "2", "--qos", "3"], "--qos"),
        (["--port", "1", "--clients", "2", "--se-samples", str(bad)], "line 2"),
        (["--port", "1", "--clients", "2", "--cert", "x.pem"], "--key"),
    ):
        p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and needle in p.stderr, (args, p.stderr)


@pytest.mark.slow
def test_mqtt_load_command_writes_a_result_with_phases_capacity_and_the_model(tmp_path):
    p = run_cli(
        "mqtt-load",
        "--clients",
        "20",
        "--connect-rate",
        "100",
        "--hold",
        "1",
        "--publish-rate",
        "20",
        "--capacity-seconds",
        "0.5",
        "--json",
        "--out",
        str(tmp_path / "res"),
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert doc["kind"] == "server" and doc["params"]["mqtt_load"] is True
    m = doc["analysis"]["mqtt_load"]
    assert [x["phase"] for x in m["phases"]] == ["ramp", "hold", "storm"]
    assert all(x["broker_cpu_s"] is not None for x in m["phases"])
    assert m["capacity_per_s"] > 0 and m["limits"]["nofile"] >= 20 + M.FD_MARGIN
    assert m["broker"]["require_certificate"] is True
    # the two base models, and beside them their variants at the storm's measured capacity bounds
    models, base = set(m["fleet_model"]["models"]), {"abandoned work", "late work dropped"}
    assert base <= models and all(any(x.endswith(f"), {b}") for b in base) for x in models - base), models
    # the kernel's listen-queue counters at each phase line, and its SYN timers for the model
    assert all(set(x["tcp_counters"]) == {"ListenOverflows", "ListenDrops", "TCPSynRetrans"} for x in m["phases"])
    assert m["fleet_model"]["syn_timers"]["from"].startswith("the generator's kernel")
    # the report and the terminal draw the same view of it: one row per phase, both model variants
    from secperf.app.reading import read_result
    from secperf.report.terminal_server import mqtt_load_tables
    from secperf.report.views import mqtt_load as V

    res = read_result(tmp_path / "res" / doc["run_id"])
    rows = V.phases(V.present(res.analysis)).rows
    assert [r[0] for r in rows] == ["ramp", "hold", "storm"] and rows[0][1] == "20 / 20"
    assert [t.row_count for t in mqtt_load_tables(res)] == [3, len(models)]  # a row per model variant
    html = (tmp_path / "res" / doc["run_id"] / "report.html").read_text()
    assert "MQTT load: persistent clients" in html and "The storm beside fleet" in html and "<svg" in html


def test_a_failed_mqtt_load_has_no_tables_and_reads_back(tmp_path):
    """A run that failed holds only its reason under analysis.mqtt_load: no tables, no crash."""
    from secperf.core.result import new_result
    from secperf.report.html import render
    from secperf.report.terminal_server import mqtt_load_tables

    doc = new_result(kind="server", command=["secperf", "mqtt-load"], params={"mqtt_load": True}, host={}, run_id="r")
    doc.analysis.mqtt_load = {"config": {"clients": 5}, "failed": "mosquitto did not start"}
    assert mqtt_load_tables(doc) == []
    assert "MQTT load: persistent clients" not in render(doc)


@pytest.mark.parametrize("client_auth", [False, True])
def test_server_mosquitto_honours_client_auth(pki, tmp_path, client_auth):
    from secperf.measure.server_config import ServerConfig
    from secperf.measure.server_start import start_server

    srv = start_server(ServerConfig("mosquitto", "ecdsa-p256", client_auth=client_auth), pki, tmp_path / "srv", 1)
    try:
        assert (
            f"require_certificate {'true' if client_auth else 'false'}"
            in (tmp_path / "srv" / "mosquitto.conf").read_text()
        )
        r = _run(srv.port, "--clients", "3", "--hold", "0", "--max-attempts", "1", "--ramp-max", "5")  # no certificate
    finally:
        srv.stop()
    ramp = r["phases"]["ramp"]
    assert (ramp["connacks"], ramp["refused"]) == ((0, 3) if client_auth else (3, 0))


def test_keep_alive_pings_are_answered_while_the_clients_are_idle(broker):
    mq, client = broker
    r = _run(
        mq.port,
        "--clients",
        "10",
        "--cert",
        str(client.cert),
        "--key",
        str(client.key),
        "--hold",
        "2.5",
        "--keepalive",
        "2",
        "--publish-rate",
        "0",
    )
    hold = r["phases"]["hold"]
    assert hold["pings"] > 0 and hold["pingresps"] + hold["pings_outstanding_at_end"] == hold["pings"]
    assert hold["dropped"] == 0
    assert hold["published_qos0"] == hold["published_qos1"] == 0


def test_a_target_broker_that_wants_a_client_certificate_is_bad_input_naming_it(broker, tmp_path):
    mq, _client = broker
    p = run_cli(
        "mqtt-load", "--target", f"127.0.0.1:{mq.port}", "--clients", "5", "--out", str(tmp_path / "res"), timeout=120
    )
    assert p.returncode == 2 and "--client-cert" in p.stderr, p.stderr[-800:]
    assert not (tmp_path / "res").exists()


def test_the_command_resolves_the_secure_element_profiles_once():
    """--se and --key-source offload:PROFILE:WAIT resolved by app/mqtt_load.resolved (one read of the
    catalogue); the measurement takes the objects and refuses a configuration without them; the
    Result says the names."""
    from secperf.app.mqtt_load import resolved
    from secperf.core.errors import InternalError

    c = resolved(M.MqttLoadConfig(se_profile="atecc608", key_source="offload:atecc608:busy"))
    assert c.client_se() is not None and c.client_se().name == "atecc608" and c.broker_se() is c.client_se()
    said = c.as_dict()
    assert said["se_profile"] == "atecc608" and "se" not in said and "offload_profile" not in said
    json.dumps(said)
    assert resolved(M.MqttLoadConfig()).client_se() is None and M.MqttLoadConfig().broker_se() is None
    with pytest.raises(InternalError, match="not resolved"):
        M.MqttLoadConfig(se_profile="atecc608").client_se()
    with pytest.raises(InternalError, match="not resolved"):
        M.capacity_clients(M.MqttLoadConfig(key_source="offload:atecc608:busy"))
    with pytest.raises(InputError, match="--se nosuch: unknown secure-element profile 'nosuch'; known: .*atecc608"):
        resolved(M.MqttLoadConfig(se_profile="nosuch"))
