"""EDHOC + OSCORE: sizes against RFC 9529's published traces, lakers' real messages against the
model, bad choices exit 2 naming them, a real EDHOC + OSCORE run over loopback UDP."""

from __future__ import annotations

import pytest

from conftest import import_or_skip
from secperf.model import flights as F
from secperf.model.flights import edhoc as FE

lakers = import_or_skip("lakers", "scripts/bootstrap installs the 'protocols' extra")
import_or_skip("aiocoap", "scripts/bootstrap installs the 'protocols' extra")


# RFC 9529 (Traces of EDHOC), the message_N (CBOR Sequence) sizes it prints:
# trace 1 (section 2): method 0, suite 0, x5t credentials, C_I -14 and C_R -8: 37 / 115 / 90 bytes;
# trace 2 (section 3): method 3, suite 2 after negotiation (SUITES_I = [6, 2]), kid credentials: 39 / 45 / 19.
RFC9529_TRACE1 = (37, 115, 90)
RFC9529_TRACE2 = (39, 45, 19)


def _sizes(v):
    m = FE.message_sizes(v)
    return m["message_1"], m["message_2"], m["message_3"]


def test_model_reproduces_rfc9529_trace_1_signature_x5t():
    assert _sizes(FE.Variant(method=0, suite=0, cred="x5t")) == RFC9529_TRACE1


def test_model_reproduces_rfc9529_trace_2_static_dh_kid_with_suite_negotiation():
    assert _sizes(FE.Variant(method=3, suite=2, cred="kid", suites_offered=(6, 2))) == RFC9529_TRACE2


@pytest.mark.parametrize("cred", ["kid", "value"])
def test_lakers_messages_have_the_modelled_sizes(cred):
    from secperf.measure import edhoc as E

    got = E.message_sizes(cred)
    assert (got["message_1"], got["message_2"], got["message_3"]) == _sizes(FE.Variant(cred=cred))


def test_lakers_kid_run_is_rfc9529_trace_2_less_the_negotiated_suite_list():
    # lakers offers suite 2 alone (SUITES_I = 2, one byte), the trace's [6, 2] is three bytes
    from secperf.measure import edhoc as E

    got = E.message_sizes("kid")
    assert (got["message_1"] + 2, got["message_2"], got["message_3"]) == RFC9529_TRACE2


def test_signature_methods_grow_with_the_credential_sent_by_value():
    kid, x5t, chain = (FE.message_sizes(FE.Variant(method=0, suite=0, cred=c)) for c in ("kid", "x5t", "x5chain"))
    assert kid["message_2"] < x5t["message_2"] < chain["message_2"]
    # {33: bstr(DER)} instead of a one-byte kid, and message_3's bstr header grows to 3 bytes (> 255)
    assert chain["message_3"] - kid["message_3"] == (3 + 2 + FE.CERT_DER) - 1 + 1


def test_flight_model_round_trips_separate_and_combined():
    sep = F.build(F.Scenario(protocol="edhoc", handshake="m3-kid", group="p-256"))
    comb = F.build(F.Scenario(protocol="edhoc", handshake="m3-kid-combined", group="p-256"))
    assert sep.round_trips == 3 and comb.round_trips == 2
    # the combined request carries message_3 (19 bytes) and the EDHOC option on top of the OSCORE request
    assert comb.exchanges[1].out.payload == sep.exchanges[2].out.payload + 19 + FE.EDHOC_OPTION


def test_secure_element_takes_the_clients_private_key_operation():
    sw = F.build(F.Scenario(protocol="edhoc", handshake="m0-x5t", group="x25519"))
    se = F.build(F.Scenario(protocol="edhoc", handshake="m0-x5t", group="x25519", key="se:iot-safe-sim"))
    assert "sign:ed25519" in sw.exchanges[1].out.ops and not sw.exchanges[1].out.se_sign
    assert "sign:ed25519" not in se.exchanges[1].out.ops and se.exchanges[1].out.se_sign
    dh = F.build(F.Scenario(protocol="edhoc", handshake="m3-kid", group="p-256", key="se:iot-safe-sim"))
    assert dh.exchanges[1].out.ops.count("derive:ecdh-p256") == 2 and dh.exchanges[1].out.se_sign


def test_whatif_refuses_an_edhoc_variant_it_cannot_model():
    with pytest.raises(F.ModelError, match="group 'ml-kem-768'"):
        F.build(F.Scenario(protocol="edhoc", handshake="m3-kid", group="ml-kem-768"))
    with pytest.raises(F.ModelError, match="no 'm3-x509'"):
        F.build(F.Scenario(protocol="edhoc", handshake="m3-x509", group="p-256"))


@pytest.mark.parametrize(
    "args, named",
    [
        (["--edhoc-method", "0"], "method 0"),
        (["--edhoc-method", "7"], "method 7"),
        (["--edhoc-suite", "0"], "suite 0"),
        (["--edhoc-cred", "x5chain"], "x5chain"),
        (["--key", "se:iot-safe-sim"], "--key se:iot-safe-sim"),
        (["--handshake", "resumed"], "--handshake resumed"),
        (["--edhoc-flow", "twice"], "flow 'twice'"),
    ],
)
def test_connect_edhoc_bad_choices_exit_2_naming_them(args, named, capsys):
    from secperf import cli

    assert cli.main(["connect", "edhoc", *args]) == 2
    assert named in capsys.readouterr().err


def test_edhoc_options_on_another_protocol_exit_2(capsys):
    from secperf import cli

    assert cli.main(["connect", "coap", "--edhoc-method", "3"]) == 2
    assert "--edhoc-method" in capsys.readouterr().err


@pytest.mark.parametrize("flow", ["separate", "combined"])
def test_edhoc_then_oscore_over_loopback_udp(flow, tmp_path, monkeypatch):
    monkeypatch.setenv("SECPERF_HOME", str(tmp_path))
    from secperf.measure import edhoc as E

    cfg = E.EdhocConfig(flow=flow, requests=2)
    keys = E.make_keys(tmp_path / "keys")
    assert (keys / "client.key").stat().st_mode & 0o077 == 0
    s = E.measure(cfg, n=2, warmup=0, keys=keys)
    assert s.status == "ok", s.failures
    plain_get = 4 + 2 + 1 + len("temp")  # the same GET without OSCORE: header, aiocoap's 2-byte token, Uri-Path
    model = FE.coap_datagrams(FE.Variant(combined=flow == "combined"), plain_get, 0)
    for c in s.samples:
        assert c["edhoc_bytes"] == {"message_1": 37, "message_2": 45, "message_3": 19}
        # the model counts aiocoap's usual 2-byte token; its token counter starts at a random value
        # below 65536 and drops leading zero bytes, so one exchange in 256 carries a 1-byte token (and
        # one in 65536 a 3-byte one): the response echoes the request's token, byte for byte
        short = model[0][2] - c["coap_bytes"]["message_1"]
        assert short in (-1, 0, 1), c["coap_bytes"]
        assert c["coap_bytes"]["message_2"] == model[1][2] - short
        if flow == "combined":  # message_3 inside the first OSCORE request: header, token, options, marker, payload
            # (a request of its own: the next token, which may be one byte longer or shorter)
            assert abs(c["coap_bytes"]["message_3+request"] - model[2][2]) <= 1, c["coap_bytes"]
        msgs = {"message_1", "message_2", "message_3"} | ({"message_4"} if flow == "separate" else set())
        assert set(c["cpu_us"]) == msgs
        assert sum(c["cpu_us"].values()) <= c["cpu_total_us"]
        # every request went through OSCORE (protect and unprotect ran on the client)
        assert len(c["requests"]) == 2 and all(q["protect_cpu_us"] and q["unprotect_cpu_us"] for q in c["requests"])
        assert c["usable_us"] > c["edhoc_us"] > 0
    assert s.derived.round_trips_to_first_response == (3 if flow == "separate" else 2)


def test_whatif_calibrated_from_a_connect_edhoc_result_reproduces_its_loopback_row(tmp_path, monkeypatch, capsys):
    import json

    import numpy as np

    from secperf import cli
    from secperf.core import result as R
    from secperf.inputs import netspec as NS
    from secperf.model import costs as C
    from secperf.model import network as N
    from secperf.model import predict as P
    from secperf.sim import montecarlo as M

    monkeypatch.setenv("SECPERF_HOME", str(tmp_path))
    assert cli.main(["connect", "edhoc", "--n", "3", "--warmup", "1", "--json", "--out", str(tmp_path / "r")]) == 0
    doc = R.validate(json.loads(capsys.readouterr().out))
    s = doc.series[0]
    table = C.calibrate(doc)
    assert C.scenario_key("edhoc", "m3-kid", "software") in table.measured
    plan = P.plan(
        F.Scenario(protocol="edhoc", handshake="m3-kid", group="p-256"), table, N.from_spec(NS.parse("loopback"))
    )
    pred = float(np.median(M.simulate_chunk(plan, np.random.default_rng(1), 4000)["usable"])) * 1e6
    # the base: residuals are fitted so that the loopback prediction is the calibration row itself
    assert pred == pytest.approx(s.summary.p50_us, rel=0.15)
