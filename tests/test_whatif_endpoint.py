"""End points (issue 29): the what-if clock stops at the first application response (default) or
at the client's handshake completion (`--until handshake`, as `secperf handshake` and openssl
s_time stop); the table title and the Result's timer say which."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

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


def test_tls13_get_stops_exactly_one_round_trip_earlier():
    m = F.build(F.Scenario("tls1.3"))
    assert m.round_trips == 3 and m.round_trips_to_handshake_done() == 2


@pytest.mark.parametrize("protocol", list(F.PROTOCOLS))
def test_the_handshake_end_point_never_has_more_round_trips(protocol):
    for hs in F.HANDSHAKES[protocol]:
        m = F.build(F.Scenario(protocol, hs))
        assert m.round_trips_to_handshake_done() <= m.round_trips
        assert sum(1 for e in m.exchanges if e.out.handshake_done) == 1


def test_on_a_fixed_link_the_response_costs_one_more_rtt_than_the_handshake():
    table, link = C.load_table(), _link("delay=50ms")
    sc = F.Scenario("tls1.3")
    resp = M.simulate(P.plan(sc, table, link), 400, 1)
    hs = M.simulate(P.plan(sc, table, link, until="handshake"), 400, 1)
    # after the client's Finished: its flight out, the server's response back (no server work on a
    # GET without client authentication), nothing else
    assert resp["usable"]["p50_us"] - hs["usable"]["p50_us"] == pytest.approx(100_000, abs=50)
    assert hs["bytes_up_mean"] < resp["bytes_up_mean"] and hs["bytes_down_mean"] < resp["bytes_down_mean"]
    # the probe's own window (TCP connected -> handshake complete) is the same figure either way
    assert hs["handshake"]["p50_us"] == pytest.approx(resp["handshake"]["p50_us"], rel=1e-6)
    # ... and the handshake end point is that window plus TCP connect
    assert hs["usable"]["p50_us"] == pytest.approx(hs["handshake"]["p50_us"] + 100_000, abs=50)


def test_the_handshake_end_point_charges_no_work_after_the_handshake():
    table, link = C.load_table(), _link("delay=10ms")
    full = P.compute_breakdown(P.plan(F.Scenario("mqtt"), table, link))
    until = P.compute_breakdown(P.plan(F.Scenario("mqtt"), table, link, until="handshake"))
    last = max(r["exchange"] for r in full if r["exchange"] is not None)
    # the server's check of the client certificate happens after the client's Finished
    assert any(r["exchange"] == last and r["party"] == "server" for r in full)
    assert not any(r["exchange"] == last and r["party"] == "server" for r in until)
    assert len(until) < len(full)


def test_openvpn_handshake_end_leaves_out_the_push_exchange_and_tun_setup():
    table, link = C.load_table(), _link("delay=5ms")
    pl = P.plan(F.Scenario("openvpn"), table, link, until="handshake")
    r = M.simulate_chunk(pl, __import__("numpy").random.default_rng(1), 200)
    resp = M.simulate_chunk(P.plan(F.Scenario("openvpn"), table, link), __import__("numpy").random.default_rng(1), 200)
    assert (resp["usable"] - r["usable"]).min() >= 0.010  # PUSH_REQUEST/REPLY round trip + tun set-up
    assert not any(row["op"] == "tun_setup" for row in P.compute_breakdown(pl))


def test_an_unknown_end_point_is_an_input_error():
    with pytest.raises(InputError, match="--until"):
        P.plan(F.Scenario("tls1.3"), C.load_table(), _link("delay=1ms"), until="connect")


def test_cli_until_handshake_names_the_end_point(tmp_path):
    p = run_cli(
        "whatif",
        "tls1.3",
        "--network",
        "delay=50ms",
        "--n",
        "1000",
        "--until",
        "handshake",
        "--json",
        "--no-report",
        "--out",
        str(tmp_path / "r"),
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)["series"][0]
    assert s["labels"]["until"] == "handshake" and s["derived"]["end_point"] == "handshake"
    assert "handshake complete" in s["timer"]["end"]
    assert s["derived"]["round_trips"] == 2 and s["derived"]["round_trips_to_response"] == 3
    p2 = run_cli(
        "whatif",
        "tls1.3",
        "--network",
        "delay=50ms",
        "--n",
        "1000",
        "--json",
        "--no-report",
        "--out",
        str(tmp_path / "r"),
        cwd=tmp_path,
    )
    s2 = json.loads(p2.stdout)["series"][0]
    assert s2["labels"]["until"] == "response" and s2["derived"]["round_trips"] == 3
    assert s2["summary"]["p50_us"] - s["summary"]["p50_us"] == pytest.approx(100_000, abs=100)


def test_the_table_title_says_which_end_point(tmp_path):
    env = {"COLUMNS": "250", "PATH": "/usr/bin:/bin"}
    for until, words in (
        ("handshake", "until the client's handshake completes"),
        ("response", "until the first application response"),
    ):
        p = run_cli(
            "whatif",
            "mqtt",
            "--n",
            "500",
            "--until",
            until,
            "--no-report",
            "--out",
            str(tmp_path / "r"),
            cwd=tmp_path,
            env=env,
        )
        assert p.returncode == 0, p.stderr
        assert words in p.stdout + p.stderr


def test_a_bad_until_exits_2_naming_the_option(tmp_path):
    p = run_cli("whatif", "tls1.3", "--until", "connect", "--out", str(tmp_path / "r"), cwd=tmp_path)
    assert p.returncode == 2 and "--until" in p.stderr and "Traceback" not in p.stderr


def _bench():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "whatif_validation.py"
    spec = importlib.util.spec_from_file_location("whatif_validation", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_validation_bench_compares_the_handshake_end_point():
    b = _bench()
    rows = b.rows_for(["tls1.3", "dtls1.2", "mqtt"], ["software"])
    ends = [r for r in rows if r[3] == b.UNTIL_HS]
    assert [r[0] for r in ends] == ["TLS 1.3 full -> hs end", "DTLS 1.2 cookie -> hs end"]
    s = {
        "values_us": [5.0],
        "samples": [
            {"ok": True, "tcp_connect_us": 100.0, "handshake_wall_us": 900.0},
            {"ok": False, "tcp_connect_us": 100.0},
            {"ok": True, "handshake_wall_us": 700.0},
        ],
    }
    assert b.measured_values(s, b.UNTIL_HS) == [1000.0, 700.0]
    assert b.measured_values(s, "handshake") == [5.0]
    assert b.plan_for(F.Scenario("tls1.3"), C.load_table(), _link("delay=1ms"), b.UNTIL_HS).until == "handshake"
