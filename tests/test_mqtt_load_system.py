"""`mqtt-load --system FILE` and the storm model's inputs for the user's own broker: the [server] table
gives the target, its listen backlog and its accept rate; without [server].accept_per_s the target is
probed before the load (a lower bound); each figure is recorded with where it came from; a bad file or
key exits 2 naming it. The end-to-end runs load a real mosquitto on loopback as the target."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from secperf.app.mqtt_load import storm_vs_model
from secperf.app.server_plan import replay_accept
from secperf.cli import build_parser
from secperf.lab.iot_services import Mosquitto
from secperf.lab.pki import LabPKI
from secperf.measure.mqtt_load import MqttLoadConfig
from secperf.model.fleet import FleetModel
from secperf.report.views import mqtt_load as V

HEAD = """name = "gw"
[device]
core = "host-default"
[network]
link = "lte-m"
[protocol]
name = "mqtt"
"""
STORM = {"phase": "storm", "connacks": 200, "elapsed_s": 3.0, "time_all_up_s": 3.0, "wait_p50_ms": 900.0}


def _model(**m):
    c = MqttLoadConfig(clients=200, policy="exponential", base_s=0.5, cap_s=8.0, timeout_s=30.0)
    return storm_vs_model(c, {"capacity_per_s": 150.0, "phases": [STORM], **m}, horizon_s=60)


def test_the_models_backlog_is_the_files_else_assumed_for_a_target_and_mosquittos_here():
    given = _model(target={"name": "gw:8883"}, target_inputs={"backlog": 50})
    assumed = _model(target={"name": "gw:8883"}, target_inputs={"backlog": None})
    here = _model()
    assert (given["backlog"], given["backlog_from"]) == (50, "[server].backlog of the --system file")
    assert assumed["backlog"] == 264 and assumed["backlog_from"].startswith("assumed")
    assert here["backlog"] == 100 and here["backlog_from"].startswith("mosquitto started here")
    # the backlog reaches the model: 200 first SYNs against 50 places drop more than against 264
    assert given["models"]["late work dropped"]["syn_drops"] > assumed["models"]["late work dropped"]["syn_drops"]


def test_the_models_accept_rate_says_whether_it_was_probed_given_or_assumed():
    probed = _model(accept_rate={"accept_per_s": 30_000.0, "from": "measured from here before the load: a lower bound"})
    none = _model(accept_rate={"accept_per_s": None, "why_none": "4 of 4 connections had no answer within 2 s"})
    assert probed["accept_per_s"] == 30_000.0 and probed["accept_from"].startswith("measured from here")
    assert none["accept_per_s"] == FleetModel.accept_per_s and none["accept_from"].startswith("assumed")
    assert "no answer within 2 s" in none["accept_from"]
    # the storm's table says which inputs the model took and where they came from
    (note,) = [x for x in V.storm_model({"fleet_model": probed}).notes if x.startswith("listen backlog")]
    assert "listen backlog 100 (mosquitto started here" in note and "accept rate 30,000/s (measured from here" in note
    assert replay_accept({"accept_rate": {"accept_per_s": 5000.0, "from": "[server].accept_per_s"}}) == (
        5000.0,
        "[server].accept_per_s",
    )
    assert replay_accept({})[0] == FleetModel.accept_per_s
    assert replay_accept({"accept_rate": {"accept_per_s": 9000.0}}) == (9000.0, "measured (accept_rate)")


def test_the_file_carries_the_accept_rate_and_backlog_to_the_options(tmp_path):
    from secperf.subcommands.server import _from_system

    f = tmp_path / "sys.toml"
    f.write_text(HEAD + '[server]\ntarget = "127.0.0.1:1"\nbacklog = 64\naccept_per_s = 5000\n')
    for cmd in (["mqtt-load"], ["fleet", "--replay", "100"]):
        args = build_parser().parse_args([*cmd, "--system", str(f)])
        _from_system(args)
        assert (args.target, args.target_backlog, args.target_accept_per_s) == ("127.0.0.1:1", 64, 5000.0)


@pytest.mark.parametrize(
    "table,needle",
    [
        ('[server]\ntarget = "127.0.0.1:1"\naccept_per_s = 0\n', "[server].accept_per_s"),
        ('[server]\ntarget = "127.0.0.1:1"\naccept_per_s = "fast"\n', "[server].accept_per_s"),
        ('[server]\ntarget = "127.0.0.1:1"\nbacklog = 0\n', "[server].backlog"),
        ("", "has no [server] table"),
        ('[server]\ntarget = "127.0.0.1:1"\n', "[server].target"),  # nothing listens there
    ],
)
def test_mqtt_load_with_a_bad_system_file_exits_2_naming_it(table, needle, tmp_path):
    f = tmp_path / "sys.toml"
    f.write_text(HEAD + table)
    p = run_cli("mqtt-load", "--system", str(f), "--clients", "5", "--out", str(tmp_path / "o"), timeout=120)
    assert p.returncode == 2, p.stderr[-800:]
    assert needle in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "o").exists()


def test_mqtt_load_with_a_missing_system_file_exits_2_naming_it(tmp_path):
    p = run_cli("mqtt-load", "--system", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "o"), timeout=120)
    assert p.returncode == 2 and "nope.toml" in p.stderr and "Traceback" not in p.stderr


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    pki = LabPKI().ensure()
    certs, client = pki.server("ecdsa-p256", 1), pki.client("ecdsa-p256")
    with Mosquitto(certs, client.ca, workdir=tmp_path_factory.mktemp("mosq"), connection_messages=False) as mq:
        yield mq, client


def _run_system(broker, tmp_path, extra: str) -> dict:
    mq, client = broker
    f = tmp_path / "sys.toml"
    f.write_text(
        HEAD + f'[server]\ntarget = "127.0.0.1:{mq.port}"\nclient_cert = "{client.cert}"\n'
        f'client_key = "{client.key}"\n{extra}'
    )
    p = run_cli(
        "mqtt-load",
        "--system",
        str(f),
        "--clients",
        "20",
        "--hold",
        "1",
        "--capacity-seconds",
        "0.5",
        "--json",
        "--no-report",
        "--out",
        str(tmp_path / "o"),
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout)["analysis"]["mqtt_load"]


@pytest.mark.slow
def test_mqtt_load_system_file_backlog_and_a_probed_accept_rate_reach_the_storm_model(broker, tmp_path):
    m = _run_system(broker, tmp_path, "backlog = 100\n")
    fm, acc = m["fleet_model"], m["accept_rate"]
    assert m["target"]["target"] == f"127.0.0.1:{broker[0].port}"
    assert (fm["backlog"], fm["backlog_from"]) == (100, "[server].backlog of the --system file")
    # probed before the load: every burst's rounds recorded, the figure a lower bound the model takes
    assert acc["lower_bound"] is True and acc["connections"] == sum(
        x["connections"] for rs in acc["rounds"].values() for x in rs
    )
    assert acc["accept_per_s"] > 0 and fm["accept_per_s"] == acc["accept_per_s"]
    assert fm["accept_from"].startswith("measured from here")


@pytest.mark.slow
def test_mqtt_load_system_file_accept_rate_replaces_the_probe(broker, tmp_path):
    m = _run_system(broker, tmp_path, "accept_per_s = 5000\n")
    fm = m["fleet_model"]
    assert m["accept_rate"] == {"accept_per_s": 5000.0, "from": "[server].accept_per_s of the --system file"}
    assert fm["accept_per_s"] == 5000.0 and fm["accept_from"] == "[server].accept_per_s of the --system file"
    assert fm["backlog"] == 20 + 64 and fm["backlog_from"].startswith("assumed")
