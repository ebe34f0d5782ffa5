"""The what-if model's structure: round trips per flight model against protocol facts, bytes against
the probe's transcripts and real key objects, network rules (no loss -> no retransmission wait, a
flight above the initial window costs a round trip, MTU fragments), secure-element key modes,
calibration, seeds. No timing: everything asserted is model arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from secperf.core.result_schema import DeviceCryptoDerived, DeviceDerived
from secperf.inputs import netspec as NS
from secperf.inputs import se_profiles as SE
from secperf.model import costs as C
from secperf.model import flights as F
from secperf.model import network as N
from secperf.model import predict as P
from secperf.model import s1 as S1
from secperf.sim import montecarlo as M
from secperf.sim import sweep as SW


def rt(protocol, handshake="full", **kw):
    return F.build(F.Scenario(protocol, handshake, **kw))


@pytest.mark.parametrize(
    "protocol,handshake,usable,to_done",
    [
        ("tls1.3", "full", 3, 2),  # TCP, TLS 1.3 (1-RTT), GET -> response; handshake done after 1 RTT of TLS
        ("tls1.3", "hrr", 4, 3),  # HelloRetryRequest costs one more round trip
        ("tls1.3", "resumed", 3, 2),  # resumption saves computation, not round trips
        ("tls1.3", "psk", 3, 2),
        ("tls1.3", "0rtt", 2, 2),  # early data rides on the ClientHello: usable after TCP + 1 RTT
        ("tls1.2", "full", 4, 3),  # TCP + 2-RTT handshake + GET
        ("tls1.2", "resumed", 3, 2),  # abbreviated handshake: 1 RTT
        ("dtls1.2", "full", 4, 3),  # cookie exchange + 2-RTT handshake + request
        ("dtls1.2", "nocookie", 3, 2),
        ("https", "full", 3, 2),
        ("mqtt", "full", 3, 2),  # README: probe HTTPS/MQTT 3 round trips over a link
        ("coap", "full", 4, 3),  # README: probe CoAP 4 round trips
        ("openvpn", "full", 4, 3),  # README: reset, two TLS round trips, PUSH_REQUEST/REPLY
        ("jwt", "fresh", 3, 2),
    ],
)
def test_round_trips_per_flight_model(protocol, handshake, usable, to_done):
    m = rt(protocol, handshake)
    assert m.round_trips == usable
    assert m.round_trips_to_handshake_done() == to_done


def test_tls_bytes_match_the_probe_transcript():
    # secperf handshake versions on this host: TLS 1.3 221 / 1396 / 64 bytes, TLS 1.2 146 / 1255 / 93 / 242
    m = rt("tls1.3")
    ch, sf, cf = m.exchanges[1].out, m.exchanges[1].back, m.exchanges[2].out
    assert ch.payload == 221
    assert sf.payload == 1396
    assert cf.payload - (F.HTTP_REQ + F.TLS13_ENC) == 64
    m12 = rt("tls1.2")
    assert [
        m12.exchanges[1].out.payload,
        m12.exchanges[1].back.payload,
        m12.exchanges[2].out.payload,
        m12.exchanges[2].back.payload,
    ] == [146, 1255, 93, 242]


def test_sizes_match_real_objects_from_cryptography():
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, x25519

    raw = ser.Encoding.Raw, ser.PublicFormat.Raw
    assert len(x25519.X25519PrivateKey.generate().public_key().public_bytes(*raw)) == F.groups()["x25519"]["client"]
    p256 = ec.generate_private_key(ec.SECP256R1()).public_key()
    assert (
        len(p256.public_bytes(ser.Encoding.X962, ser.PublicFormat.UncompressedPoint)) == F.groups()["p-256"]["client"]
    )
    der = ser.Encoding.DER, ser.PublicFormat.SubjectPublicKeyInfo
    assert len(p256.public_bytes(*der)) == F.key_types()["ecdsa-p256"]["spki"]
    assert len(ed25519.Ed25519PrivateKey.generate().public_key().public_bytes(*der)) == F.key_types()["ed25519"]["spki"]
    try:
        from cryptography.hazmat.primitives.asymmetric import mlkem
    except ImportError:
        mlkem = None
    if mlkem is not None and hasattr(mlkem, "MLKEM768PrivateKey"):
        k = mlkem.MLKEM768PrivateKey.generate()
        assert len(k.public_key().public_bytes(*raw)) == F.groups()["ml-kem-768"]["client"]


def test_post_quantum_certificates_cross_the_initial_window_and_the_mtu():
    table = C.load_table()
    link = N.from_spec(NS.parse("delay=25ms"))
    small = P.plan(F.Scenario("https", cert="ecdsa-p256"), table, link)
    big = P.plan(F.Scenario("https", cert="slh-dsa-128f", depth=2), table, link)
    server = lambda p: p.flights[3]
    assert server(small).packets == 1 and server(small).extra_rounds == 0
    assert server(big).packets > N.TCP_INITIAL_WINDOW and server(big).extra_rounds >= 1
    rs = M.simulate(small, 2000, 1)
    rb = M.simulate(big, 2000, 1)
    # one extra round trip of 50 ms (plus the extra bytes' compute): at least 50 ms more at the median
    assert rb["usable"]["p50_us"] - rs["usable"]["p50_us"] >= 50_000 * server(big).extra_rounds


def test_a_flight_above_the_initial_window_costs_an_extra_round_trip():
    assert N.extra_window_rounds(10) == 0
    assert N.extra_window_rounds(11) == 1
    assert N.extra_window_rounds(30) == 1  # 10 + 20
    assert N.extra_window_rounds(31) == 2


def test_no_loss_means_no_retransmission_wait():
    table = C.load_table()
    for proto in ("tls1.3", "tls1.2", "dtls1.2", "mqtt", "coap", "openvpn"):
        r = M.simulate(P.plan(F.Scenario(proto), table, N.from_spec(NS.parse("delay=20ms,jitter=2ms"))), 5000, 3)
        assert r["breakdown_mean_us"]["retransmission_wait"] == 0.0
        assert r["failed_share"] == 0.0


def test_loss_adds_whole_timer_periods_to_the_dtls_tail():
    table = C.load_table()
    r = M.simulate(P.plan(F.Scenario("dtls1.2"), table, N.from_spec(NS.parse("delay=25ms,loss=5%"))), 50_000, 1)
    assert r["breakdown_mean_us"]["retransmission_wait"] > 0
    # the P99 has at least one DTLS timer period (1 s) in it; the median has none
    assert r["usable"]["p99_us"] > 1e6
    assert r["usable"]["p50_us"] < 1e6


def test_a_resent_dtls_flight_has_one_datagram_per_message():
    table = C.load_table()
    p = P.plan(F.Scenario("dtls1.2"), table, N.from_spec(NS.parse("delay=25ms,loss=5%")))
    server = next(f for f in p.flights if f and f.sender == "server" and f.name.startswith("ServerHello"))
    assert (server.packets, server.resend_packets) == (1, 4)  # ServerHello, Certificate, ServerKeyExchange, Done
    assert server.resend_wire_bytes > server.wire_bytes  # three more UDP/IP headers
    tcp = next(
        f
        for f in P.plan(F.Scenario("tls1.2"), table, N.from_spec(NS.parse("delay=25ms,loss=5%"))).flights
        if f and f.sender == "server" and f.name.startswith("ServerHello")
    )
    assert tcp.resend_packets == tcp.packets  # TCP resends segments, not messages
    # the exchange of ClientHello and that flight: 2 datagrams the first time, 5 each time after;
    # so a second failure is (1 - 0.95^5) / (1 - 0.95^2) = 2.3x likelier than the first
    legs = [f for f in p.flights if f and f.exchange == server.exchange]
    f = M._exchange_failures(
        np.random.default_rng(4), M.Chains(np.random.default_rng(5), p.link, 200_000), p.link, legs, 200_000, "dtls"
    )
    first, second = float(np.mean(f >= 1)), float(np.mean(f >= 2)) / float(np.mean(f >= 1))
    assert abs(first - (1 - 0.95**2)) < 0.005
    assert abs(second - (1 - 0.95**5)) < 0.01


def test_propagation_is_round_trips_times_rtt_without_jitter():
    table = C.load_table()
    m = F.build(F.Scenario("tls1.3"))
    r = M.simulate(P.plan(F.Scenario("tls1.3"), table, N.from_spec(NS.parse("delay=50ms"))), 1000, 1)
    assert r["breakdown_mean_us"]["propagation"] == pytest.approx(m.round_trips * 100_000)
    # the handshake timer starts when TCP is connected: one RTT of TLS 1.3
    assert 100_000 < r["handshake"]["p50_us"] < 110_000


def test_serialisation_follows_the_rate():
    table = C.load_table()
    pl = P.plan(F.Scenario("tls1.3"), table, N.from_spec(NS.parse("delay=0,rate=100kbit")))
    r = M.simulate(pl, 100, 1)
    wire = sum(f.wire_bytes for f in pl.flights if f is not None)
    assert r["breakdown_mean_us"]["serialisation"] == pytest.approx(wire * 8 / 100e3 * 1e6)


def test_seeds_reproduce_and_differ():
    table = C.load_table()
    pl = P.plan(
        F.Scenario("mqtt", key="se:iot-safe-sim"),
        table,
        N.from_spec(NS.parse("delay=10ms,jitter=3ms,loss=2%")),
        se=SE.profile_of_key("se:iot-safe-sim"),
    )
    a, b, c = M.simulate(pl, 20_000, 7), M.simulate(pl, 20_000, 7), M.simulate(pl, 20_000, 8)
    assert a["usable"] == b["usable"] and a["reservoir_us"] == b["reservoir_us"]
    assert a["usable"]["p50_us"] != c["usable"]["p50_us"]


def test_streaming_statistics_agree_with_exact_ones():
    table = C.load_table()
    pl = P.plan(F.Scenario("tls1.3"), table, N.from_spec(NS.parse("delay=20ms,jitter=5ms,loss=1%")))
    exact = M.simulate(pl, 200_000, 5)
    streamed = M.simulate(pl, 200_000, 5, chunk=50_000)
    assert exact["usable"]["percentiles_from"] == "exact"
    assert streamed["usable"]["percentiles_from"].startswith("histogram")
    for q in ("p50_us", "p95_us"):
        assert streamed["usable"][q] == pytest.approx(exact["usable"][q], rel=0.01)


def test_cold_secure_element_key_adds_session_login_and_search():
    table = C.load_table()
    link = N.from_spec(NS.parse("loopback"))
    warm = M.simulate(
        P.plan(F.Scenario("https", key="se:iot-safe-sim"), table, link, se=SE.profile_of_key("se:iot-safe-sim")),
        20_000,
        1,
    )
    cold = M.simulate(
        P.plan(
            F.Scenario("https", key="se:iot-safe-sim:cold"), table, link, se=SE.profile_of_key("se:iot-safe-sim:cold")
        ),
        20_000,
        1,
    )
    # S2: sign_only P50 475.1 ms, total 642.2 ms
    assert 440_000 < warm["breakdown_mean_us"]["secure_element"] < 510_000
    assert cold["usable"]["p50_us"] - warm["usable"]["p50_us"] > 140_000
    # resumption avoids the signature
    res = M.simulate(
        P.plan(
            F.Scenario("https", "resumed", key="se:iot-safe-sim"), table, link, se=SE.profile_of_key("se:iot-safe-sim")
        ),
        2000,
        1,
    )
    assert res["breakdown_mean_us"]["secure_element"] == 0.0


def test_a_missing_cost_is_named_not_zero():
    table = C.load_table()
    del table.ops["sign:ecdsa-p384"]
    with pytest.raises(C.MissingCost, match="sign:ecdsa-p384"):
        P.plan(F.Scenario("tls1.3", cert="ecdsa-p384"), table, N.from_spec(NS.parse("loopback")))


def test_mtu_below_the_protocol_minimum_is_refused():
    with pytest.raises(N.LinkError, match="mtu=200"):
        P.plan(F.Scenario("tls1.3"), C.load_table(), N.from_spec(NS.parse("delay=1ms,mtu=200")))
    P.plan(F.Scenario("coap"), C.load_table(), N.from_spec(NS.parse("delay=1ms,mtu=300")))  # DTLS allows 256+


def _handshake_result(client_us=1000.0, total_us=2200.0, values=None):
    from secperf.core import result as R

    doc = R.new_result(kind="handshake", command=["test"], params={}, host={}, run_id="cal")
    s = R.new_series(
        "handshake/probe/tls1.3 aes128gcm x25519 rsa2048",
        kind="handshake",
        labels={
            "proto": "tls",
            "tls": "1.3",
            "mode": "full",
            "server": "probe",
            "groups": "x25519",
            "cert_type": "rsa-2048",
            "depth": 1,
            "mtls": False,
            "network": "loopback",
        },
        timer={"name": "h", "start": "a", "end": "b"},
    )
    s.values_us = list(values) if values else [total_us] * 5
    s.cpu_values_us = [client_us] * len(s.values_us)
    R.finalize_series(s)
    doc.series.append(s)
    return doc


def test_calibration_reproduces_the_loopback_row_and_moves_only_named_costs():
    table = C.calibrate(_handshake_result())
    r = M.simulate(P.plan(F.Scenario("tls1.3"), table, N.from_spec(NS.parse("loopback"))), 20_000, 1)
    assert r["handshake"]["p50_us"] == pytest.approx(2200.0, rel=0.02)
    # over a 100 ms RTT link: the loopback time plus one round trip of TLS 1.3
    r = M.simulate(P.plan(F.Scenario("tls1.3"), table, N.from_spec(NS.parse("delay=50ms"))), 20_000, 1)
    assert r["handshake"]["p50_us"] == pytest.approx(100_000 + 2200.0, rel=0.02)
    # a slower group changes only its named operations
    p384 = M.simulate(P.plan(F.Scenario("tls1.3", group="p-384"), table, N.from_spec(NS.parse("loopback"))), 20_000, 1)
    extra = sum(
        table.get("client", o).us
        for o in ("keygen:ecdh-p384", "derive:ecdh-p384", "keygen:ecdh-p384", "derive:ecdh-p384")
    ) - sum(table.get("client", o).us for o in ("keygen:x25519", "derive:x25519", "keygen:x25519", "derive:x25519"))
    assert p384["handshake"]["p50_us"] - 2200.0 == pytest.approx(extra, rel=0.05)


def test_a_calibration_rows_own_spread_is_drawn_not_a_lognormal():
    # a bimodal row: 70% of handshakes at 1.5 ms, 30% at 2.5 ms (a slow scheduling mode)
    vals = [1500.0] * 28 + [2500.0] * 12
    table = C.calibrate(_handshake_result(client_us=600.0, values=vals))
    pl = P.plan(F.Scenario("tls1.3"), table, N.from_spec(NS.parse("loopback")))
    assert pl.spread is not None and len(pl.spread) == len(vals)
    r = M.simulate(pl, 20_000, 1)
    assert r["handshake"]["p50_us"] == pytest.approx(1500.0, rel=0.02)
    assert r["handshake"]["p90_us"] == pytest.approx(2500.0, rel=0.03)  # a lognormal from P50/P90 smears it
    # the row measured the server faster than the table's operations add up to: they are scaled to it
    server_named = sum(C.load_table().get("server", o).us for o in ("keygen:x25519", "derive:x25519", "sign:rsa-2048"))
    assert server_named > 900.0
    srv = [f for f in pl.flights if f is not None and f.sender == "server" and f.compute_us > 0]
    assert sum(f.compute_us for f in srv) == pytest.approx(1500.0 - 600.0, rel=0.01)
    assert "faster than the table" in dict((o[0], o[2]) for o in srv[0].ops)["sign:rsa-2048"]


def test_calibration_refuses_a_result_without_usable_rows():
    from secperf.core import result as R

    doc = R.new_result(kind="signer", command=["x"], params={}, host={}, run_id="r")
    with pytest.raises(C.CalibrationError, match="no rows the model can use"):
        C.calibrate(doc)
    doc.kind = "whatif"
    with pytest.raises(C.CalibrationError, match="prediction"):
        C.calibrate(doc)


def test_s1_acceleration_zeroes_clienthello_certificate_and_certificateverify():
    table = C.calibrate(_handshake_result())
    est = S1.per_message(table)
    assert est["accelerated_us"] < est["full_us"]
    zero = {r["message"]: r["accelerated_us"] for r in est["rows"]}
    assert all(zero[m] == 0.0 for m in S1.ZEROED if m in zero)
    full, acc, _ = (sc for _, sc in S1.scenarios(table))
    link = N.from_spec(NS.parse("delay=10ms"))
    a = M.simulate(P.plan(acc, table, link), 5000, 1)
    f = M.simulate(P.plan(full, table, link), 5000, 1)
    assert a["breakdown_mean_us"]["client_compute"] < f["breakdown_mean_us"]["client_compute"]


def test_sweep_grammar_and_tornado():
    sw = SW.parse("rtt=0..100:50,loss=0,5,group=x25519,ml-kem-768")
    assert sw == {"rtt": [0.0, 50.0, 100.0], "loss": [0.0, 5.0], "group": ["x25519", "ml-kem-768"]}
    with pytest.raises(SW.SweepError, match="unknown input 'rttt'"):
        SW.parse("rttt=1")
    with pytest.raises(SW.SweepError, match="negative"):
        SW.parse("rtt=-5")
    from secperf.inputs import netspec as NS

    cells = SW.expand([F.Scenario("tls1.3")], [NS.parse("loopback")], sw)
    assert len(cells) == 12
    rows = []
    for c in cells:
        r = M.simulate(P.plan(c.scenario, C.load_table(), N.from_spec(c.network)), 3000, 1)
        rows.append({"inputs": c.inputs, "usable": r["usable"]})
    tor = SW.tornado(rows, sw)
    assert tor[0]["input"] in ("rtt", "loss")


def test_gilbert_elliott_loss_is_bursty_with_the_same_mean():
    """Same mean loss (5%): bursts (GE, mean burst 1/r = 4 packets) put the losses of a connection
    together, so fewer connections lose anything but those that do lose more (retries lost again)."""
    table = C.load_table()
    ge = N.from_spec(NS.parse("delay=25ms,ge=1.3158%/25%"))
    assert ge.up.loss == pytest.approx(0.05, rel=1e-3) and ge.up.ge is not None
    bern = N.from_spec(NS.parse("delay=25ms,loss=5%"))
    sc = F.Scenario("dtls1.2")
    rg = M.simulate(P.plan(sc, table, ge), 100_000, 1)
    rb = M.simulate(P.plan(sc, table, bern), 100_000, 1)
    hit = lambda r: sum(1 for v in r["reservoir_us"] if v > 900_000) / len(r["reservoir_us"])
    assert hit(rg) < hit(rb)
    # a connection that lost a flight in the bad state often loses the retransmission too: among
    # connections that waited, the mean wait is longer under bursts
    assert rg["usable"]["max_us"] > 2e6
    assert rg["breakdown_mean_us"]["retransmission_wait"] / hit(rg) > rb["breakdown_mean_us"][
        "retransmission_wait"
    ] / hit(rb)


def test_gilbert_elliott_chain_is_per_packet_and_seeded():
    import numpy as np

    link = N.from_spec(NS.parse("delay=10ms,ge=10%/50%/100%/0%"))
    rng = np.random.default_rng(3)
    ch = M.Chains(rng, link, 200_000)
    assert ch.bad["client"].mean() == pytest.approx(10 / 60, abs=0.01)  # stationary start
    lost, pos = ch.send(rng, "client", link.up, 1, None, 200_000)
    assert lost.mean() == pytest.approx(10 / 60, abs=0.01)  # mean loss p/(p+r)
    assert set(np.unique(pos)) <= {-1, 0}


def test_reordering_lets_a_whole_flight_skip_the_delay():
    table = C.load_table()
    m = F.build(F.Scenario("tls1.3"))
    r0 = M.simulate(P.plan(F.Scenario("tls1.3"), table, N.from_spec(NS.parse("delay=50ms"))), 20_000, 1)
    r = M.simulate(P.plan(F.Scenario("tls1.3"), table, N.from_spec(NS.parse("delay=50ms,reorder=50%"))), 20_000, 1)
    # every single-packet flight skips its 50 ms with probability 1/2
    assert r["breakdown_mean_us"]["propagation"] < r0["breakdown_mean_us"]["propagation"] * 0.75
    assert r["breakdown_mean_us"]["retransmission_wait"] == 0.0
    assert r0["breakdown_mean_us"]["propagation"] == pytest.approx(m.round_trips * 100_000)


def test_tcp_recovery_follows_linux_timers():
    import numpy as np

    # one segment out: tail-loss probe 2·SRTT + 200 ms, capped by the RTO SRTT + max(2·SRTT, 200 ms)
    assert M.tcp_first_wait(0.300, 1, np.array([0]))[0] == pytest.approx(0.800)
    assert M.tcp_first_wait(0.100, 1, np.array([0]))[0] == pytest.approx(0.300)
    assert M.tcp_first_wait(0.0, 1, np.array([0]))[0] == pytest.approx(0.200)
    # several out: 3+ later segments -> one RTT; 1-2 later -> RACK 1.25 RTT; the last -> TLP 2 RTT + 2 ms
    w = M.tcp_first_wait(0.100, 5, np.array([0, 2, 4]))
    assert list(w) == pytest.approx([0.100, 0.125, 0.202])
    assert N.tcp_rto(0.300) == pytest.approx(0.900) and N.tcp_rto(0.02) == pytest.approx(0.220)


def _device_doc(with_handshake: bool):
    from secperf.core import host
    from secperf.core import result as R

    doc = R.new_result(kind="device", command=["secperf", "device"], params={}, host=host.collect(), run_id="dev-test")
    for op, ins in (("x25519-keygen", 1_200_000), ("x25519-derive", 1_100_000), ("ecdsa-p256-sign", 1_900_000)):
        s = R.new_series(
            f"device-crypto/cortex-a9-400/wolfssl/{op}",
            kind="device_crypto",
            labels={"device": "cortex-a9-400", "stack": "wolfssl", "op": op},
            timer={"name": "instructions", "start": "a", "end": "b"},
        )
        s.derived = DeviceCryptoDerived(instructions_median=ins)
        s.status = "ok"
        doc.series.append(s)
    if with_handshake:
        s = R.new_series(
            "device/cortex-a9-400/wolfssl/tls1.3/x25519/aes128gcm/full/rsa-2048/warm",
            kind="device",
            labels={
                "device": "cortex-a9-400",
                "stack": "wolfssl",
                "tls": "1.3",
                "group": "x25519",
                "suite": "aes128gcm",
                "mode": "full",
                "server_cert": "rsa-2048",
                "phase": "warm",
            },
            timer={"name": "instructions", "start": "a", "end": "b"},
        )
        s.derived = DeviceDerived(instructions_median=7_000_000)
        s.status = "ok"
        doc.series.append(s)
    return R.finish(doc)


def test_device_costs_are_instructions_times_cpi_over_clock():
    from secperf.inputs import devices as D

    core = D.core("cortex-a9-400")
    cpi = sum(core.cpi) / 2
    t = C.from_device(_device_doc(False), core, C.load_table())
    f = t.get("client", "keygen:x25519")
    assert f.us == pytest.approx(1_200_000 * cpi / core.clock_mhz) and "instructions" in f.source
    assert t.get("server", "keygen:x25519").us == C.load_table().get("server", "keygen:x25519").us  # server: host
    # an operation the device did not count is named, never taken from the host table
    with pytest.raises(C.MissingCost, match="parse_cert"):
        P.plan(F.Scenario("tls1.3"), t, N.from_spec(NS.parse("delay=10ms")))
    # with a handshake row, the client's total is the row's; what it did not count sits in the residual
    t = C.from_device(_device_doc(True), core, C.load_table())
    pl = P.plan(F.Scenario("tls1.3"), t, N.from_spec(NS.parse("delay=10ms")))
    client = sum(fp.compute_us for fp in pl.flights[2:] if fp is not None and fp.sender == "client")
    assert client == pytest.approx(7_000_000 * cpi / core.clock_mhz, rel=1e-6)


def test_a_device_psk_handshake_takes_the_full_handshakes_residual():
    """With only a full handshake row, a PSK (psk_dhe_ke) prediction on the device keeps the key
    exchange and the full row's unnamed residual, and drops the named certificate work."""
    from secperf.inputs import devices as D

    core = D.core("cortex-a9-400")
    cpi = sum(core.cpi) / 2
    doc = _device_doc(True)
    for op, ins in (("rsa-2048-verify", 1_500_000), ("x509-parse", 50_000)):
        s = [x for x in doc.series if x.kind == "device_crypto"][0].model_copy(deep=True)
        s.id, s.labels["op"], s.derived.instructions_median = s.id.rsplit("/", 1)[0] + "/" + op, op, ins
        doc.series.append(s)
    t = C.from_device(doc, core, C.load_table())
    us = lambda ins: ins * cpi / core.clock_mhz
    pl = P.plan(F.Scenario("tls1.3", "psk-dhe"), t, N.from_spec(NS.parse("delay=10ms")))
    client = sum(fp.compute_us for fp in pl.flights if fp is not None and fp.sender == "client")
    # full = keygen + derive + parse + 2 RSA verifications + residual; PSK = keygen + derive + residual
    residual = 7_000_000 - 1_200_000 - 1_100_000 - 50_000 - 2 * 1_500_000
    assert client == pytest.approx(us(1_200_000 + 1_100_000 + residual), rel=1e-6)
    from secperf.model.predict import _residual_from_full

    f = _residual_from_full(t, F.Scenario("tls1.3", "psk-dhe")).get("client", "base:tls1.3:psk-dhe:software:client")
    assert f.us == pytest.approx(us(residual), rel=1e-6) and "full handshake's client residual" in f.source


def test_a_device_table_takes_one_stacks_counts():
    from secperf.inputs import devices as D

    core = D.core("cortex-a9-400")
    cpi = sum(core.cpi) / 2
    doc = _device_doc(True)
    # the same Result also counted Mbed TLS, whose X25519 is ten times slower
    for s in list(doc.series):
        if s.kind == "device_crypto":
            m = s.model_copy(deep=True)
            m.id = m.id.replace("wolfssl", "mbedtls3")
            m.labels["stack"] = "mbedtls3"
            m.derived.instructions_median *= 10
            doc.series.append(m)
    with pytest.raises(C.CalibrationError, match="--stack"):
        C.device_stack(
            [doc.model_copy(update={"series": [s for s in doc.series if s.kind == "device_crypto"]})], None, core.name
        )
    stack = C.device_stack([doc], None, core.name)  # the handshake rows name the stack
    assert stack == "wolfssl"
    t = C.from_device(doc, core, C.load_table(), stack=stack)
    assert t.get("client", "keygen:x25519").us == pytest.approx(1_200_000 * cpi / core.clock_mhz)
    t = C.from_device(doc, core, C.load_table(), stack=C.device_stack([doc], "mbedtls3", core.name))
    assert t.get("client", "keygen:x25519").us == pytest.approx(12_000_000 * cpi / core.clock_mhz)
    with pytest.raises(C.CalibrationError, match="not 'openssl'"):
        C.device_stack([doc], "openssl", core.name)


def test_host_scheduling_adds_wakeups_per_flight():
    table = C.load_table()
    link = N.from_spec(NS.parse("delay=10ms"))
    pl0 = P.plan(F.Scenario("tls1.3"), table, link)
    pl = P.plan(F.Scenario("tls1.3"), table, N.with_host_wakeups(link, [1.0, 1.0, 1.0]))
    r0, r = M.simulate(pl0, 2000, 1), M.simulate(pl, 2000, 1)
    flights = sum(1 for f in pl.flights if f is not None)
    assert r["breakdown_mean_us"]["host_scheduling"] == pytest.approx(flights * N.HOST_WAKEUPS_PER_FLIGHT * 1000.0)
    assert r0["breakdown_mean_us"]["host_scheduling"] == 0.0
    with pytest.raises(N.LinkError):
        N.with_host_wakeups(link, [-1.0])
    # below the relay's spin window (RTT < 10 ms) nobody sleeps long between flights: no lateness
    fast = N.with_host_wakeups(N.from_spec(NS.parse("delay=2ms")), [1.0])
    assert M.simulate(P.plan(F.Scenario("tls1.3"), table, fast), 500, 1)["breakdown_mean_us"]["host_scheduling"] == 0.0


def test_path_floor_adds_one_floor_per_one_way_traversal():
    table = C.load_table()
    link = N.from_spec(NS.parse("delay=0ms"))
    sc = F.Scenario("tls1.3")
    pl0 = P.plan(sc, table, link)
    pl = P.plan(sc, table, N.with_path_floor(link, 0.25))
    r0, r = M.simulate(pl0, 2000, 3), M.simulate(pl, 2000, 3)
    traversals = sum(1 for f in pl.flights if f is not None)
    assert traversals == 2 * F.build(sc).round_trips  # one each way per round trip
    # the same seed draws the same compute: the floor adds exactly k x floor and nothing else
    assert r["breakdown_mean_us"]["path_floor"] == pytest.approx(traversals * 250.0)
    assert r0["breakdown_mean_us"]["path_floor"] == 0.0
    assert r["usable"]["mean_us"] - r0["usable"]["mean_us"] == pytest.approx(traversals * 250.0, rel=1e-6)
    # the transports' timers see the floor in their round trip
    assert N.with_path_floor(link, 0.25).path_rtt_s == pytest.approx(0.0005)
    assert N.with_path_floor(link, 0.25).as_dict()["path_floor_ms"] == pytest.approx(0.25)
    for bad in (-0.1, 1e6):
        with pytest.raises(N.LinkError, match="--path-floor"):
            N.with_path_floor(link, bad)


def test_syn_retries_are_linear_then_doubling():
    # Linux tcp_syn_linear_timeouts = 4: 1, 1, 1, 1 s, then 2, 4 s
    assert list(N.syn_wait_s([0, 1, 2, 4, 5, 6])) == pytest.approx([0, 1, 2, 4, 6, 10])


def test_a_flight_of_several_packets_waits_for_its_slowest_jitter_draw():
    # the emulator releases packets in order, so a k-packet flight arrives at the largest of k
    # delay draws: its mean jitter is the k-th order statistic's (normal: E[max of 3] = 0.8463 sd)
    rng = np.random.default_rng(7)
    d = N.Direction(delay_s=0.1, jitter_s=0.01, jitter_dist="normal", loss=0.0, rate_bps=0.0)
    n = 200_000
    one = M._propagation(rng, d, n, 0, 0.2, packets=1)
    three = M._propagation(rng, d, n, 0, 0.2, packets=3)
    assert one.mean() == pytest.approx(0.1, abs=0.0002)
    assert three.mean() - 0.1 == pytest.approx(0.8463 * 0.01, abs=0.0002)
    # and against the emulator's rule itself: in-order release of three independent draws
    draws = np.maximum(0.1 + 0.01 * rng.standard_normal((n, 3)), 0.0)
    assert three.mean() == pytest.approx(np.maximum.accumulate(draws, axis=1)[:, -1].mean(), abs=0.0002)
    p = N.Direction(delay_s=0.1, jitter_s=0.01, jitter_dist="pareto", loss=0.0, rate_bps=0.0)
    p1, p3 = M._propagation(rng, p, n, 0, 0.2, packets=1), M._propagation(rng, p, n, 0, 0.2, packets=3)
    assert p1.mean() == pytest.approx(0.1, abs=0.0003) and p3.mean() > p1.mean() + 0.005


def test_a_ticket_carries_the_client_certificate_under_mutual_tls():
    # OpenSSL's ticket is the encrypted session, which holds the peer certificate: with a client
    # certificate the resumed ClientHello (and each NewSessionTicket) grows by its DER
    def ch(mtls):
        m = F.build(F.Scenario("mqtt", handshake="resumed", mtls=mtls))
        return dict(m.exchanges[1].out.msgs)["ClientHello"]

    grow = F.cert_der("ecdsa-p256") + F.TICKET_PEER_CERT_PREFIX
    assert ch(True) - ch(False) == grow
    assert ch(True) + F.TCP_HDR == pytest.approx(994, rel=0.05)  # the probe's resumed MQTT ClientHello
