"""A device in every prediction (issue 29): the client's costs from a device's counts (mutual TLS
included), the server's from the host, the application exchange costed from a counted primitive,
and the emulated counts run or reused by `whatif --device CORE` itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from secperf.core import result as R
from secperf.core.result_schema import DeviceCryptoDerived, DeviceDerived
from secperf.inputs import devices as D
from secperf.inputs import netspec as NS
from secperf.inputs import se_profiles as SE
from secperf.model import costs as C
from secperf.model import flights as F
from secperf.model import network as N
from secperf.model import predict as P

CORE = "cortex-m4-80"
SECPERF = str(Path(sys.executable).with_name("secperf"))


def _crypto(op: str, cycles: float) -> R.Series:
    s = R.new_series(
        f"device-crypto/{CORE}/wolfssl/{op}",
        kind="device_crypto",
        labels={"device": CORE, "stack": "wolfssl", "library": "wolfSSL", "op": op},
        timer={"name": "guest instructions per operation", "start": "a", "end": "b"},
    )
    s.derived = DeviceCryptoDerived.model_validate(
        {
            "instructions_median": cycles / 2,
            "time": {"cycles": cycles, "cycles_low": cycles * 0.9, "cycles_high": cycles * 1.1, "model": "cortex-m4"},
        }
    )
    s.status = "ok"
    return s


def _handshake(
    tls: str, client_cert: str, cycles: float, server_cert: str = "ecdsa-p256", mode: str = "full"
) -> R.Series:
    s = R.new_series(
        f"device/{CORE}/wolfssl/{tls}/{client_cert}/{mode}/warm",
        kind="device",
        labels={
            "device": CORE,
            "stack": "wolfssl",
            "tls": tls,
            "group": "x25519",
            "suite": "aes128gcm",
            "mode": mode,
            "server_cert": server_cert,
            "client_cert": client_cert,
            "phase": "warm",
        },
        timer={"name": "guest instructions per handshake", "start": "a", "end": "b"},
    )
    s.derived = DeviceDerived.model_validate(
        {
            "instructions_median": cycles / 2,
            "time": {"cycles": cycles, "cycles_low": cycles * 0.9, "cycles_high": cycles * 1.1, "model": "cortex-m4"},
        }
    )
    s.status = "ok"
    return s


OPS = {
    "x25519-keygen": 2.3e6,
    "x25519-derive": 2.3e6,
    "ecdsa-p256-sign": 3.0e6,
    "ecdsa-p256-verify": 5.0e6,
    "rsa-2048-verify": 1.5e6,
    "x509-parse": 2.3e4,
    "aes-128-gcm-1024": 2.1e5,
}


def _doc(*hs: R.Series, ops=OPS) -> R.Result:
    doc = R.new_result(kind="device", command=["test"], params={}, host={}, run_id="dev")
    doc.series = [_crypto(op, c) for op, c in ops.items()] + list(hs)
    return doc


def _client_us(pl: P.Plan) -> float:
    return sum(fp.compute_us for fp in pl.flights if fp is not None and fp.sender == "client")


def test_a_mutual_tls_row_prices_mqtt_https_and_keeps_the_server_on_the_host():
    core = D.core(CORE)
    row = 19.1e6
    t = C.from_device(_doc(_handshake("1.3", "ecdsa-p256", row)), core)
    host = C.load_table()
    for proto in ("mqtt", "https"):
        pl = P.plan(F.Scenario(proto), t, N.from_spec(NS.parse("loopback")))
        # the client's handshake work is the row's cycles over the clock (the residual fitted from it)
        hs_client = sum(us for fp in pl.flights if fp is not None and fp.sender == "client" for op, us, _ in fp.ops)
        assert hs_client == pytest.approx(row / core.clock_mhz, rel=1e-6)
        # every server operation is the host table's, never a device figure
        for fp in pl.flights:
            if fp is not None and fp.sender == "server":
                for op, us, src in fp.ops:
                    if not op.startswith("base:"):
                        assert us == host.get("server", op).us, op
                        assert "device" not in src
    # a server-authenticated row is no protocol with a client certificate
    t2 = C.from_device(_doc(_handshake("1.3", "none", 12e6)), core)
    with pytest.raises(C.MissingCost, match="base:mqtt"):
        P.plan(F.Scenario("mqtt"), t2, N.from_spec(NS.parse("loopback")))
    P.plan(F.Scenario("tls1.3"), t2, N.from_spec(NS.parse("loopback")))


def test_a_secure_element_key_replaces_the_counted_signature_with_the_profile():
    core = D.core(CORE)
    t = C.from_device(_doc(_handshake("1.3", "ecdsa-p256", 19.1e6)), core)
    soft = P.plan(F.Scenario("mqtt"), t, N.from_spec(NS.parse("loopback")))
    se = P.plan(
        F.Scenario("mqtt", key="se:iot-safe-sim:cold"),
        t,
        N.from_spec(NS.parse("loopback")),
        se=SE.profile_of_key("se:iot-safe-sim:cold"),
    )
    sign_us = OPS["ecdsa-p256-sign"] / core.clock_mhz
    assert _client_us(soft) - _client_us(se) == pytest.approx(sign_us, rel=1e-6)
    assert any(fp.se for fp in se.flights if fp is not None) and se.se_profile.name == "iot-safe-sim"
    assert not any(fp.se for fp in soft.flights if fp is not None)


def test_the_application_exchange_is_costed_from_the_counted_aead():
    core = D.core(CORE)
    t = C.from_device(_doc(_handshake("1.3", "ecdsa-p256", 19.1e6)), core)
    per_kb = OPS["aes-128-gcm-1024"] / core.clock_mhz
    mqtt = P.plan(F.Scenario("mqtt"), t, N.from_spec(NS.parse("loopback")))
    https = P.plan(F.Scenario("https"), t, N.from_spec(NS.parse("loopback")))
    app = {op: us for op, us, _ in mqtt.final_ops}
    assert app["app:mqtt"] == pytest.approx(per_kb * (F.MQTT_CONNECT + F.MQTT_CONNACK + 2 * F.NST13) / 1024)
    assert https.final_us > mqtt.final_us  # an HTTP response is bigger than a CONNACK
    # without the AEAD row there is no application figure, and no silent one either
    ops = {k: v for k, v in OPS.items() if k != "aes-128-gcm-1024"}
    t3 = C.from_device(_doc(_handshake("1.3", "ecdsa-p256", 19.1e6), ops=ops), core)
    assert not P.plan(F.Scenario("mqtt"), t3, N.from_spec(NS.parse("loopback"))).final_ops


def test_a_host_row_of_the_same_scenario_keeps_the_servers_measured_residual():
    from test_whatif_model import _handshake_result

    core = D.core(CORE)
    host = C.calibrate(_handshake_result(client_us=1000.0, total_us=2200.0))
    host_pl = P.plan(F.Scenario("tls1.3"), host, N.from_spec(NS.parse("loopback")))
    t = C.from_device(_doc(_handshake("1.3", "none", 12e6, server_cert="rsa-2048")), core, host)
    dev_pl = P.plan(F.Scenario("tls1.3"), t, N.from_spec(NS.parse("loopback")))
    server = lambda pl: sum(fp.compute_us for fp in pl.flights if fp is not None and fp.sender == "server")  # noqa: E731
    assert server(dev_pl) == pytest.approx(server(host_pl), rel=1e-9)
    assert _client_us(dev_pl) > 10 * _client_us(host_pl)


def test_a_missing_client_cost_is_named_not_taken_from_the_server_table():
    t = C.from_device(_doc(_handshake("1.3", "none", 12e6, server_cert="rsa-2048")), D.core(CORE))
    with pytest.raises(C.MissingCost, match="verify:ecdsa-p384"):
        P.plan(F.Scenario("tls1.3", cert="ecdsa-p384"), t, N.from_spec(NS.parse("loopback")))


def test_the_old_device_table_name_is_the_emulated_core():
    assert D.resolve_device("cortex-m4-120mhz") == "cortex-m4-120"
    assert "cortex-m4-120mhz" not in C.table_names()


def _whatif(tmp_path, *args):
    return subprocess.run(
        [SECPERF, "whatif", *args, "--n", "2000", "--no-report", "--json", "--out", str(tmp_path / "results")],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_whatif_device_counts_once_then_reuses_and_agrees_with_device_handshake(tmp_path):
    """`whatif mqtt --device CORE` runs its own counts (or reuses them) and says which; the second
    run reuses them; the client's predicted handshake work equals `secperf device handshake`'s row
    of the same configuration."""
    args = ("mqtt", "--device", CORE, "--key", "se:iot-safe-sim:cold", "--network", "nb-iot")
    first = _whatif(tmp_path, *args)
    assert first.returncode == 0, first.stderr[-800:]
    second = _whatif(tmp_path, *args)
    assert second.returncode == 0, second.stderr[-800:]
    assert "taken from the cache" in second.stderr
    d1, d2 = json.loads(first.stdout), json.loads(second.stdout)
    assert d1["series"][0]["summary"]["p50_us"] == d2["series"][0]["summary"]["p50_us"]
    costs = d2["series"][0]["derived"]["costs"]
    assert any(c["party"] == "secure element" for c in costs)
    assert not any(c["party"] == "client" and c["op"].startswith("sign:") for c in costs)
    assert any(c["op"] == "app:mqtt" and "counted primitive" in c["source"] for c in costs)
    for c in costs:
        if c["party"] == "server":
            assert "device" not in c["source"], c
    # the same configuration counted directly
    p = subprocess.run(
        [
            SECPERF,
            "device",
            "handshake",
            "--device",
            CORE,
            "--tls",
            "1.3",
            "--group",
            "x25519",
            "--suite",
            "aes128gcm",
            "--server-cert",
            "ecdsa-p256",
            "--client-cert",
            "ecdsa-p256",
            "--n",
            "1",
            "--warmup",
            "1",
            "--json",
            "--no-report",
            "--out",
            str(tmp_path / "results"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-800:]
    warm = [s for s in json.loads(p.stdout)["series"] if s["labels"]["phase"] == "warm"][0]
    row_us = warm["derived"]["time"]["cycles"] / D.core(CORE).clock_mhz
    sw = _whatif(tmp_path, "mqtt", "--device", CORE)
    hs_client = sum(
        c["us"]
        for c in json.loads(sw.stdout)["series"][0]["derived"]["costs"]
        if c["party"] == "client" and not c["op"].startswith("app:")
    )
    assert hs_client == pytest.approx(row_us, rel=0.05)


@pytest.mark.parametrize(
    "args,named",
    [
        (("whatif", "mqtt", "--device", ""), "--device"),  # empty: would silently be the host table
        (("plan", "--device", ""), "--device"),
        (("whatif", "mqtt", "--device", "cortex-m4-80,cortex-a9-400"), "one name"),
        (("plan", "--device", "pdp-11"), "emulated cores"),  # the error lists the cores, not only tables
        (("plan", "--stack", "wolfssl"), "--device CORE"),  # a library choice with no device acts on nothing
        (("whatif", "mqtt", "--config", "sp-c"), "--device CORE"),
        (("whatif", "openvpn", "--device", "cortex-m4-80"), "application core"),
    ],
)
def test_bad_device_choices_exit_2_naming_them(tmp_path, args, named):
    p = subprocess.run(
        [SECPERF, *args, "--n", "100", "--no-report", "--out", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 2, (p.returncode, p.stderr[-400:])
    assert named in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "r").exists()
