"""QUIC through aioquic over real kernel UDP (measure/quic.py) and `secperf connect quic`: the
handshake kinds' round trips and flights, the client's padded Initial and the server's
anti-amplification bound, 0-RTT, loss of an Initial, and the input errors."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import check_results_written, needs_links
from secperf.lab.pki import LabPKI
from secperf.measure import quic as Q

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pki():
    return LabPKI().ensure()  # the lab's own (cached) PKI, as `secperf connect` uses


def _cli(*args, timeout=300):
    """secperf from this source tree, as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    p = subprocess.run(
        [sys.executable, "-m", "secperf", *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env
    )
    check_results_written(args, p)
    return p


def _ok(series):
    assert series.status == "ok", series.failures
    return [c for c in series.samples if c["ok"]]


def test_full_handshake_takes_two_round_trips_with_padded_initial_and_amplification_bound(pki):
    s = Q.measure(Q.QuicConfig("full"), 2, 0, pki)
    for c in _ok(s):
        assert c["round_trips"] == 2 and not c["resumed"]
        first, answer = c["flights"][0], c["flights"][1]
        assert first["dir"] == "c2s" and first["packets"].get("Initial") == 1
        assert first["bytes"] >= Q.CLIENT_INITIAL_MIN * first["datagrams"]
        # before the client's address is validated the server sends at most 3x what it received
        assert answer["dir"] == "s2c" and answer["bytes"] <= Q.AMPLIFICATION_FACTOR * first["bytes"]
        assert answer["packets"].get("Handshake", 0) >= 1
        assert c["bytes_c2s"] == sum(f["bytes"] for f in c["flights"] if f["dir"] == "c2s")
        assert sum(x["cpu_us"] for x in c["cpu_segments"]) == pytest.approx(c["lib_cpu_us"], rel=1e-6, abs=0.01)


def test_resumed_handshake_is_verified_resumed_per_connection(pki):
    s = Q.measure(Q.QuicConfig("resumed"), 2, 0, pki)
    assert all(c["resumed"] and c["zero_rtt_packets"] == 0 and c["round_trips"] == 2 for c in _ok(s))
    assert s.derived.resumed == 2


def test_0rtt_sends_the_request_in_the_first_flight_and_answers_in_one_round_trip(pki):
    s = Q.measure(Q.QuicConfig("0rtt"), 2, 0, pki)
    for c in _ok(s):
        assert c["early_data_accepted"] and c["round_trips"] == 1 and c["request_sent_us"] == 0.0
        assert c["flights"][0]["packets"].get("0-RTT") == 1


def test_lost_client_initial_is_recovered_by_the_probe_timeout(pki):
    s = Q.measure(Q.QuicConfig("full", lost="client-initial"), 1, 0, pki)
    c = _ok(s)[0]
    assert c["dropped"] == 1
    first = c["flights"][0]
    assert first["datagrams"] == 2 and first["packets"]["Initial"] == 2 and first["dropped"] == 1
    # the retransmission waits one PTO: 2 x the initial RTT before any RTT sample (RFC 9002 6.2.2)
    assert c["usable_us"] >= 2 * Q.INITIAL_RTT_S * 1e6


def test_packet_types_reads_coalesced_long_headers_and_padding():
    # an Initial (type 0) with a 2-byte payload, then a Handshake (type 2) with 1 byte, then zeros
    initial = bytes([0xC0]) + (1).to_bytes(4, "big") + b"\x01a" + b"\x01b" + b"\x00" + b"\x02" + b"xx"
    handshake = bytes([0xE0]) + (1).to_bytes(4, "big") + b"\x00" + b"\x00" + b"\x01" + b"y"
    assert Q.packet_types(initial + handshake + bytes(10)) == ["Initial", "Handshake", "padding"]
    assert Q.packet_types(b"\x40" + bytes(20)) == ["1-RTT"]


@pytest.mark.slow
def test_connect_quic_cli_writes_one_series_per_handshake_kind(tmp_path):
    p = _cli(
        "connect",
        "quic",
        "--handshake",
        "full,0rtt",
        "--key",
        "software",
        "--n",
        "2",
        "--warmup",
        "0",
        "--json",
        "--out",
        tmp_path,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    ids = [s["id"] for s in doc["series"]]
    assert ids == ["connect/quic/aioquic/full", "connect/quic/aioquic/0rtt"]
    assert [s["derived"]["round_trips_p50"] for s in doc["series"]] == [2, 1]


@pytest.mark.parametrize(
    "args, words",
    [
        (("quic", "--key", "se:iot-safe-sim"), "software key only"),
        (("quic", "--handshake", "1rtt"), "unknown --handshake '1rtt'"),
        (("quic", "--lost", "server-handshake"), "--lost 'server-handshake'"),
        (("https", "--lost", "client-initial"), "--lost client-initial: acts on protocol quic"),
        (("quic", "--client", "curl"), "drop --client"),
        (("quic", "--connect", "127.0.0.1:4433"), "protocol quic has nothing it changes: drop --connect"),
    ],
)
def test_connect_quic_bad_inputs_exit_2_naming_them(args, words, capsys):
    from secperf.cli import main

    assert main(["connect", *args, "--n", "1"]) == 2  # the exit status of `secperf connect ...`
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


@needs_links
@pytest.mark.slow
def test_quic_over_an_emulated_link_pays_its_round_trips(pki):
    from secperf.lab.netns import Link

    with Link("delay=20ms", seed=1) as link:
        s = Q.measure(Q.QuicConfig("full", network="delay=20ms"), 2, 0, pki, link)
    for c in _ok(s):
        assert c["round_trips"] == 2 and c["usable_us"] >= 2 * 40_000
    assert s.labels["network_rtt_ms"] == 40.0 and s.derived.link.up


# --- the flight model (model/flights/quic.py) and the planner's measure "QUIC 0-RTT" ------------------


def test_flight_model_bytes_match_aioquic_on_the_wire(pki):
    from secperf.model import flights as F

    for hs in ("full", "resumed", "0rtt"):
        c = _ok(Q.measure(Q.QuicConfig(hs), 1, 0, pki))[0]
        m = F.build(F.Scenario("quic", hs))
        assert m.round_trips == c["round_trips"]
        # up to the response (0-RTT's Finished leaves after it: transport quic-final)
        up = sum(e.out.payload for e in m.exchanges if e.transport != "quic-final")
        assert abs(up - c["bytes_c2s"]) <= 0.03 * c["bytes_c2s"]
        assert abs(m.bytes("server") - c["bytes_s2c"]) <= 0.03 * c["bytes_s2c"]


def test_anti_amplification_limit_costs_a_round_trip_for_a_large_certificate_chain():
    from secperf.model import flights as F

    small = F.build(F.Scenario("quic", "full"))
    big = F.build(F.Scenario("quic", "full", cert="ml-dsa-44", depth=2))
    first_out, first_back = big.exchanges[0].out, big.exchanges[0].back
    assert first_back.payload <= Q.AMPLIFICATION_FACTOR * first_out.payload
    assert big.round_trips == small.round_trips + 1 and any("3x" in n for n in big.notes)


def test_pto_recovers_a_lost_initial_after_twice_the_initial_rtt():
    import numpy as np

    from secperf.inputs import netspec as NS
    from secperf.model import costs as C
    from secperf.model import flights as F
    from secperf.model import network as N
    from secperf.model import predict as P
    from secperf.model.flights import quic as FQ
    from secperf.sim import montecarlo as M

    assert FQ.pto_s("quic-initial", 0.05) == pytest.approx(2 * Q.INITIAL_RTT_S)
    assert FQ.pto_s("quic", 0.05) == pytest.approx(0.15)
    pl = P.plan(F.Scenario("quic", "full"), C.load_table(), N.from_spec(NS.parse("delay=25ms,loss=10%")))
    r = M.simulate_chunk(pl, np.random.default_rng(1), 20000)["usable"]
    # a connection whose first exchange lost a datagram waits a whole initial PTO
    slow = r[r > 0.1 + 2 * Q.INITIAL_RTT_S - 0.01]
    assert 0.1 < slow.size / r.size < 0.5
    assert np.percentile(r, 50) < 0.2


def test_quic_mtu_below_1228_is_refused_naming_rfc_9000():
    from secperf.inputs import netspec as NS
    from secperf.model import costs as C
    from secperf.model import flights as F
    from secperf.model import network as N
    from secperf.model import predict as P

    with pytest.raises(Exception, match="RFC 9000"):
        P.plan(F.Scenario("quic", "full"), C.load_table(), N.from_spec(NS.parse("delay=10ms,mtu=1200")))


def test_quic_0rtt_measure_reconnects_in_one_round_trip():
    import tomllib
    from importlib import resources

    from secperf.inputs import patterns as PS
    from secperf.model import flights as F
    from secperf.plan import design as DS
    from secperf.plan import measures as MS
    from secperf.plan.evaluate import setup_scenario

    d = tomllib.loads(resources.files("secperf.data").joinpath("patterns", "remote-management.toml").read_text())
    p = PS.validate_pattern(d)
    base = DS.baseline(p)
    assert MS.CATALOGUE["quic-0rtt"].not_applicable(p, base) is None
    q = MS.CATALOGUE["resumption"].apply(MS.CATALOGUE["quic-0rtt"].apply(base))
    assert q.handshake(resumed=True) == "0rtt" and q.handshake(resumed=False) == "full"
    sc = setup_scenario(q, q.handshake(resumed=True))
    assert sc.protocol == "quic" and F.build(sc).round_trips == 1
    tls = setup_scenario(base, "resumed")
    assert F.build(tls).round_trips == 3  # TCP + TLS 1.3 resumed + request


def test_a_table_without_quic_rows_fits_quic_on_a_measured_tls13_row():
    """A device table counts TLS 1.3 handshakes, not QUIC: the TLS 1.3 row of the same kind gives QUIC's
    base: residual (fitted against QUIC's own flights), and the figure's source says so."""
    from dataclasses import replace

    from secperf.inputs import netspec as NS
    from secperf.model import costs as C
    from secperf.model import flights as F
    from secperf.model import network as N
    from secperf.model import predict as P

    t = C.load_table()
    row = {
        "metric": "usable",
        "total_us": 9000.0,
        "client_us": 4000.0,
        "se_us": 0.0,
        "server_us": 5000.0,
        "sigma": 0.05,
        "series": "connect/https/probe/software/full",
        "group": "x25519",
        "cert": "ecdsa-p256",
        "depth": 1,
    }
    t = replace(t, measured={C.scenario_key("https", "full", "software"): row})
    pl = P.plan(F.Scenario("quic", "full", mtls=True), t, N.from_spec(NS.parse("delay=10ms")))
    base = [(op, src) for fp in pl.flights if fp for op, _, src in fp.ops if op.startswith("base:quic:full")]
    assert base and all("standing in for quic" in src for _, src in base)
