"""What security costs (issue 29): every what-if row next to the same exchange without security
(plain TCP/UDP carrying the same application messages, no crypto) and with a software key."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from secperf.core.errors import InputError
from secperf.inputs import netspec as NS
from secperf.model import costs as C
from secperf.model import flights as F
from secperf.model import network as N
from secperf.model import predict as P
from secperf.sim import montecarlo as M


def _link(spec: str) -> N.LinkModel:
    return N.from_spec(NS.parse_networks([spec])[0])


def _ops(model: F.FlightModel) -> list[str]:
    return [op for e in model.exchanges for f in (e.out, e.back) if f is not None for op in f.ops]


@pytest.mark.parametrize("protocol", list(F.PROTOCOLS))
def test_the_baseline_has_no_crypto_fewer_bytes_and_fewer_round_trips(protocol):
    sc = F.Scenario(protocol, F.HANDSHAKES[protocol][0], key="se:iot-safe-sim")
    secured, plain = F.build(sc), F.baseline(sc)
    assert plain.scenario.security == "none" and plain.scenario.key == "software"
    assert _ops(plain) == [] and not any(f.se_sign for e in plain.exchanges for f in (e.out, e.back) if f)
    assert set(plain.final_ops) <= {"tun_setup"}  # OpenVPN's tun set-up is not security
    assert _ops(secured)  # the secured model does run operations
    assert plain.transport == secured.transport
    for side in ("client", "server"):
        assert plain.bytes(side) < secured.bytes(side)
    assert plain.round_trips < secured.round_trips
    assert plain.round_trips_to_handshake_done() == plain.round_trips - 1


def test_the_baseline_carries_the_application_messages_at_their_plaintext_sizes():
    m = F.baseline(F.Scenario("mqtt"))
    assert [f.names() for e in m.exchanges for f in (e.out, e.back)] == ["SYN", "SYN-ACK", "CONNECT", "CONNACK"]
    assert m.exchanges[1].out.payload == F.MQTT_CONNECT and m.exchanges[1].back.payload == F.MQTT_CONNACK
    secured = F.build(F.Scenario("mqtt"))
    # the secured CONNECT is the same message inside a TLS record
    assert any(n == "CONNECT" and b == F.MQTT_CONNECT + F.TLS13_ENC for e in secured.exchanges for n, b in e.out.msgs)
    coap = F.baseline(F.Scenario("coap"))
    assert [(e.transport, e.out.payload, e.back.payload) for e in coap.exchanges] == [("coap", F.COAP_REQ, F.COAP_RESP)]
    jwt = F.baseline(F.Scenario("jwt"))
    assert jwt.exchanges[-1].out.payload == F.HTTP_REQ  # no token without security


def test_one_baseline_per_protocol_whatever_secures_it():
    a = F.no_security(F.Scenario("mqtt", "resumed", "p-256", "rsa-2048", 2, "se:iot-safe-sim:cold"))
    b = F.no_security(F.Scenario("mqtt"))
    assert a == b and a.label() == "mqtt without security (plain TCP)"


def test_an_unknown_security_value_is_an_input_error():
    with pytest.raises(InputError, match="security"):
        F.build(F.Scenario("mqtt", security="maybe"))


def test_the_baseline_plan_charges_nothing_and_fits_no_residual():
    table = C.load_table()
    link = _link("delay=50ms")
    pl = P.plan(F.no_security(F.Scenario("https", key="se:iot-safe-sim")), table, link)
    assert all(fp.compute_us == 0 and not fp.ops for fp in pl.flights if fp is not None)
    assert pl.calibration is None and pl.se_profile is None and P.compute_breakdown(pl) == []
    # a lossless link without jitter or rate: two round trips exactly (SYN, GET -> response)
    r = M.simulate(pl, 500, 1)
    assert r["usable"]["p50_us"] == pytest.approx(200_000, abs=1)
    secured = M.simulate(P.plan(F.Scenario("https"), table, link), 500, 1)
    assert secured["usable"]["p50_us"] > r["usable"]["p50_us"] + 99_000  # one more round trip at least


def _whatif(tmp_path, *args):
    p = run_cli("whatif", *args, "--out", str(tmp_path / "results"), "--json", "--no-report", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_baseline_rows_and_the_security_adds_line(tmp_path):
    doc = _whatif(
        tmp_path, "mqtt", "--network", "nb-iot", "--key", "software,se:iot-safe-sim", "--n", "3000", "--baseline"
    )
    roles = [s["labels"].get("role") for s in doc["series"]]
    # two rows, one shared baseline, and the software-key row is a row of the run already
    assert roles == [None, "without security", None]
    by_key = {s["labels"]["key"]: s for s in doc["series"] if not s["labels"].get("role")}
    base = next(s for s in doc["series"] if s["labels"].get("role"))
    assert base["labels"]["security"] == "none" and base["derived"]["costs"] == []
    for key, s in by_key.items():
        x = s["derived"]["security_cost"]
        assert x["baseline_series"] == base["id"]
        assert x["crypto_ops"]["without"] == 0 < x["crypto_ops"]["secured"]
        assert x["time_p50_us"]["adds"] == pytest.approx(s["summary"]["p50_us"] - base["summary"]["p50_us"])
        assert x["bytes"]["without"] < x["bytes"]["secured"]
        assert x["energy_mj"]["without"] < x["energy_mj"]["secured"]  # nb-iot has a radio profile
        assert x["line"].startswith("security adds ")
        assert (x["software_key_series"] is None) == (key == "software")
    se = by_key["se:iot-safe-sim"]["derived"]["security_cost"]
    assert se["software_key_series"] == by_key["software"]["id"]
    assert se["key_vs_software"]["time_p50_us"]["adds"] > 0
    assert [r["series"] for r in doc["analysis"]["whatif"]["security_cost"]["rows"]] == list(
        s["id"] for s in by_key.values()
    )


def test_a_secure_element_row_alone_gets_its_software_key_reference(tmp_path):
    doc = _whatif(
        tmp_path, "coap", "--network", "delay=10ms", "--key", "se:iot-safe-sim:cold", "--n", "2000", "--baseline"
    )
    assert [s["labels"].get("role") for s in doc["series"]] == [None, "without security", "software key"]
    x = doc["series"][0]["derived"]["security_cost"]
    assert x["energy_mj"] is None and "no radio energy profile" in x["energy_note"]  # a spec link
    assert x["software_key_series"] == doc["series"][2]["id"]


def test_without_baseline_nothing_is_added(tmp_path):
    doc = _whatif(tmp_path, "mqtt", "--n", "2000")
    assert len(doc["series"]) == 1 and "security_cost" not in doc["series"][0]["derived"]


def test_the_terminal_shows_what_security_costs(tmp_path):
    p = run_cli(
        "whatif",
        "tls1.3",
        "--network",
        "lte-m",
        "--n",
        "2000",
        "--baseline",
        "--no-report",
        "--out",
        str(tmp_path / "r"),
        cwd=tmp_path,
        env={"COLUMNS": "250", "PATH": "/usr/bin:/bin"},
    )
    assert p.returncode == 0, p.stderr
    text = p.stdout + p.stderr
    assert "what security costs" in text and "security adds" in text
    assert "tls1.3 without security (plain TCP)" in text


def test_a_device_counts_the_software_key_twin_of_a_secure_element_row_under_baseline():
    """--baseline compares a secure-element row with the same scenario signing in software on the device:
    the device's counts must hold that signature too (a fresh home once refused the reference row)."""
    from secperf.app.whatif_options import WhatifOptions, count_scenarios

    o = WhatifOptions(["jwt"], keys=["se:iot-safe-sim"], baseline=True)
    keys = {sc.key for sc in count_scenarios(o)}
    assert "software" in keys and any(k.startswith("se:") for k in keys)
    assert {sc.key for sc in count_scenarios(WhatifOptions(["jwt"], keys=["se:iot-safe-sim"]))} == {"se:iot-safe-sim"}
