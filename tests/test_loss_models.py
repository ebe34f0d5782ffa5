"""The loss models of the datagram handshakes, one lost datagram at a time: which datagram is lost
decides what is resent and after which timer (DTLS 1.3 as wolfSSL 5.9 runs it, QUIC's probe timeout,
EDHOC over CoAP). The Monte Carlo runs as it does for a prediction; only its loss draw is scripted:
the k-th datagram a side sends in a connection is lost when the script names it (counting every
send, first ones and resends). No timing: the asserted waits are the model's arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from secperf.inputs import netspec as NS
from secperf.model import costs as C
from secperf.model import flights as F
from secperf.model import network as N
from secperf.model import predict as P
from secperf.model.flights import quic as FQ
from secperf.sim import montecarlo as M

LINK = "delay=10ms,ge=1%/50%"  # a lossy link (its draw is replaced by the script), no jitter
RTT = 0.02
QUICK = N.DTLS13_QUICK_S + N.DTLS13_QUICK_LATE_S


class ScriptedLoss(M.Chains):
    """The datagrams named per side are lost, every other one arrives (for every connection alike)."""

    def __init__(self, lost: dict[str, set[int]]):
        self.lost = lost
        self.sent = {"client": 0, "server": 0}
        self.bad = {}

    def send(self, rng, sender, d, packets, idx, m):
        if m == 0:
            return np.zeros(0, dtype=bool), np.zeros(0, dtype=int)
        first = self.sent[sender]
        self.sent[sender] += packets
        hit = [k for k in range(packets) if first + k in self.lost.get(sender, set())]
        return np.full(m, bool(hit)), np.full(m, hit[0] if hit else -1)


def run(monkeypatch, scenario, client=(), server=(), n=4, factor=1.0):
    """One chunk with the script: (retransmission wait s, packets up, packets down, the chains)."""
    made = []

    def chains(rng, link, m):
        made.append(ScriptedLoss({"client": set(client), "server": set(server)}))
        return made[-1]

    monkeypatch.setattr(M, "Chains", chains)
    pl = P.plan(scenario, C.load_table(), N.from_spec(NS.parse(LINK), coap_random_factor=factor))
    r = M.simulate_chunk(pl, np.random.default_rng(3), n)
    return r["retransmission_wait"], r["packets_up"], r["packets_down"], made[0]


DTLS13 = F.Scenario("dtls1.3", "full")
# the datagrams of a full DTLS 1.3 handshake, as each side counts them
C_HELLO, C_HELLO_COOKIE, C_CERT, C_CV, C_FIN, C_REQUEST = range(6)
S_HRR, S_SH, S_EE, S_CR, S_CERT, S_CV, S_FIN, S_ACK, S_RESPONSE = range(9)


def test_nothing_lost_nothing_waits(monkeypatch):
    w, up, down, _ = run(monkeypatch, DTLS13)
    assert np.all(w == 0)
    _, up1, _, _ = run(monkeypatch, DTLS13, client=[C_REQUEST])
    assert np.all(up1 == up + 1)  # only the request went again, not the ticket's ACK beside it


def test_lost_client_hello_costs_the_initial_timer_and_doubles(monkeypatch):
    w, *_ = run(monkeypatch, DTLS13, client=[C_HELLO])
    assert w == pytest.approx(np.full(4, N.DTLS13_TIMER_S))
    w, *_ = run(monkeypatch, DTLS13, client=[C_HELLO, C_HELLO + 1])  # the resent one lost too: 1 s + 2 s
    assert w == pytest.approx(np.full(4, 3 * N.DTLS13_TIMER_S))
    w, *_ = run(monkeypatch, DTLS13, server=[S_HRR])  # the stateless server's answer lost: the same timer
    assert w == pytest.approx(np.full(4, N.DTLS13_TIMER_S))


def test_one_lost_record_of_the_server_flight_is_resent_alone_after_the_quick_ack(monkeypatch):
    _, up0, down0, _ = run(monkeypatch, DTLS13)
    for lost in (S_EE, S_CERT, S_FIN):
        w, up, down, _ = run(monkeypatch, DTLS13, server=[lost])
        assert w == pytest.approx(np.full(4, QUICK + RTT))  # an ACK gap, then one round trip, not a 1 s timer
        assert np.all(down == down0 + 1)  # one record again, not the flight of six
        assert np.all(up == up0 + 1)  # the client's ACK naming the records it has


def test_lost_server_hello_brings_the_whole_flight_again_a_round_trip_later(monkeypatch):
    _, _, down0, _ = run(monkeypatch, DTLS13)
    w, _, down, _ = run(monkeypatch, DTLS13, server=[S_SH])
    assert w == pytest.approx(np.full(4, RTT))
    assert np.all(down == down0 + 6)


def test_nothing_of_the_flight_back_waits_the_quick_and_the_long_timer(monkeypatch):
    w, *_ = run(monkeypatch, DTLS13, client=[C_HELLO_COOKIE])
    assert w == pytest.approx(np.full(4, QUICK + N.DTLS13_TIMER_S))
    w, *_ = run(monkeypatch, DTLS13, server=range(S_SH, S_FIN + 1))
    assert w == pytest.approx(np.full(4, QUICK + N.DTLS13_TIMER_S))


def test_client_flight_partly_lost_is_asked_for_by_the_servers_ack_unless_the_client_just_resent(monkeypatch):
    _, up0, _, _ = run(monkeypatch, DTLS13)
    w, up, _, _ = run(monkeypatch, DTLS13, client=[C_CV])
    assert w == pytest.approx(np.full(4, QUICK + RTT)) and np.all(up == up0 + 1)
    # the client sent an early ACK for a lost server record a moment ago: it ignores the server's ACK
    # (a resend within DTLS13_MIN_RTX_S) and resends on its long timer after that ACK
    w, *_ = run(monkeypatch, DTLS13, client=[C_CV], server=[S_CERT])
    assert w == pytest.approx(np.full(4, (QUICK + RTT) + (QUICK + RTT + N.DTLS13_TIMER_S)))
    # all of it lost, or the server's ACK lost: the client's own timers
    for script in ({"client": [C_CERT, C_CV, C_FIN]}, {"server": [S_ACK]}):
        w, *_ = run(monkeypatch, DTLS13, **script)
        assert w == pytest.approx(np.full(4, QUICK + N.DTLS13_TIMER_S))


def test_lost_request_or_response_waits_the_application_timer(monkeypatch):
    for script in ({"client": [C_REQUEST]}, {"server": [S_RESPONSE]}):
        w, *_ = run(monkeypatch, DTLS13, **script)
        assert w == pytest.approx(np.full(4, N.COAP_ACK_TIMEOUT_S))


def test_resumed_dtls13_counts_three_server_records():
    m = F.build(F.Scenario("dtls1.3", "resumed"))
    assert [e.transport for e in m.exchanges] == ["dtls", "dtls13-flight", "dtls13-finished", "dtls13-app"]
    assert len(m.exchanges[1].back.msgs) == 3 and len(m.exchanges[2].out.msgs) == 1


QUIC = F.Scenario("quic", "full")


def test_quic_pto_doubles_and_counts_the_peers_time_to_answer(monkeypatch):
    w0, *_ = run(monkeypatch, QUIC, client=[0])  # the Initial: 2 x kInitialRtt before any RTT sample
    assert w0 == pytest.approx(np.full(4, 2 * FQ.INITIAL_RTT_S))
    w0b, *_ = run(monkeypatch, QUIC, client=[0, 1])  # and its resend: PTO, then 2 x PTO
    assert w0b == pytest.approx(3 * w0)
    w1, *_ = run(monkeypatch, QUIC, client=[1])  # the Finished + request: the client's PTO, ...
    w2, *_ = run(monkeypatch, QUIC, client=[1, 2])
    pto = (w2 - w1) / 2  # ... doubling when its resend is lost too
    sample = pto / 3  # one sample: 3 x (round trip + the server's work)
    assert np.all(sample > RTT)
    # then HANDSHAKE_DONE (a round trip) and the doubled application PTO before the request goes again
    assert w1 == pytest.approx(pto + RTT + 2 * (sample + N.QUIC_MAX_ACK_DELAY_S))
    ws, *_ = run(monkeypatch, QUIC, server=[1])  # the response: the server's PTO after two samples
    assert np.all(ws > 2.5 * RTT + N.QUIC_MAX_ACK_DELAY_S) and np.all(ws < w1)


def test_quic_pto_of_a_sample_without_work_is_three_round_trips():
    assert FQ.pto_s("quic", 0.05) == pytest.approx(0.15)
    assert FQ.pto_s("quic", 0.05, 0.01) == pytest.approx(0.18)
    assert FQ.pto_s("quic", 0.05, 0.01, samples=2) == pytest.approx(0.15)  # rttvar 3/4 of sample / 2
    assert FQ.pto_s("quic-initial", 0.05, 0.01) == pytest.approx(2 * FQ.INITIAL_RTT_S)


EDHOC = F.Scenario("edhoc", "m3-kid", group="p-256")


def test_edhoc_over_coap_retransmits_on_coaps_randomised_doubling_timer(monkeypatch):
    w, *_ = run(monkeypatch, EDHOC, client=[0], n=200, factor=1.5)  # message_1 lost
    assert np.all(w >= N.COAP_ACK_TIMEOUT_S) and np.all(w <= 1.5 * N.COAP_ACK_TIMEOUT_S)
    assert w.std() > 0  # ACK_RANDOM_FACTOR: each connection's timer is its own draw
    w, *_ = run(monkeypatch, EDHOC, client=[0, 1], n=200, factor=1.5)  # and its first resend: t + 2t
    assert np.all(w >= 3 * N.COAP_ACK_TIMEOUT_S) and np.all(w <= 4.5 * N.COAP_ACK_TIMEOUT_S)
    w, *_ = run(monkeypatch, EDHOC, server=[0], n=200, factor=1.0)  # message_2 lost: the same timer
    assert w == pytest.approx(np.full(200, N.COAP_ACK_TIMEOUT_S))


def test_quic_0rtt_waits_for_the_datagram_with_the_response_not_the_ticket_after_it(monkeypatch):
    zero_rtt = F.Scenario("quic", "0rtt")
    assert F.build(zero_rtt).exchanges[0].transport == "quic-0rtt"
    w, *_ = run(monkeypatch, zero_rtt, server=[1])  # the ACK/ticket datagram
    assert np.all(w == 0)
    w, *_ = run(monkeypatch, zero_rtt, server=[0])  # the one carrying the response: the initial PTO, and
    assert w == pytest.approx(np.full(4, 2 * FQ.INITIAL_RTT_S + 2 * RTT))  # the request again after the handshake
