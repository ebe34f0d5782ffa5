"""A local `fleet --replay` reads its own nginx's accept rate while idle (measure/server_storm.idle_accept)
and the storm's model takes it instead of the assumed 20,000/s, saying where it came from."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from conftest import run_cli
from secperf.app.server_plan import replay_accept
from secperf.measure.server_storm import idle_accept
from secperf.model.fleet import FleetModel


def _slow_server(pause_s: float):
    """A listener that takes one connection off its queue every `pause_s` (and closes it)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(512)
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            c.close()
            time.sleep(pause_s)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return srv, stop, t


def test_the_idle_servers_accept_rate_is_read_from_its_queue_and_follows_its_pace():
    srv, stop, t = _slow_server(0.001)  # at most about 1,000 accepts a second, whatever the host
    try:
        acc = idle_accept(srv.getsockname()[1], "test server")
    finally:
        stop.set()
        t.join(5)
        srv.close()
    assert acc["accept_per_s"] is not None, acc.get("why_none")
    assert 0 < acc["accept_per_s"] < 2_000  # the server's own pace, far below the assumed figure
    assert acc["from"].startswith("measured: bursts of TCP connects into the idle test server's accept queue")
    per_s, said = replay_accept({"accept_rate": acc})
    assert per_s == acc["accept_per_s"] and said == acc["from"]


def test_a_port_with_no_listener_gives_no_rate_and_the_model_says_it_assumed_its_default():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: nothing there to read
    acc = idle_accept(port, "nginx")
    assert acc["accept_per_s"] is None and "no listening socket" in acc["why_none"]
    per_s, said = replay_accept({"accept_rate": acc})
    assert per_s == FleetModel.accept_per_s
    assert said.startswith("assumed") and "no listening socket" in said


@pytest.mark.slow
def test_a_local_replay_models_the_storm_with_nginxs_measured_accept_rate(tmp_path):
    # a quiet host's nginx may take every connection of a burst as it comes: then there is no reading,
    # and the model must say it assumed its default and why (a reading, when there is one, is taken)
    out = tmp_path / "out"
    p = run_cli(
        "fleet", "--replay", "20", "--policy", "exponential", "--timeout", "10", "--measure-seconds", "1",
        "--no-report", "--json", "--out", str(out),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(next(out.rglob("result.json")).read_text()) if out.is_dir() else json.loads(out.read_text())
    replays = doc["analysis"]["fleet"]["replays"]
    assert replays
    for r in replays:
        acc = r["accept_rate"]
        rounds = [x for rs in acc["rounds"].values() for x in rs]
        assert rounds and all("connections" in x or "failed" in x for x in rounds)  # nginx's queue was read
        if acc["accept_per_s"]:  # a burst waited in the queue: the model takes the reading
            assert r["accept_per_s"] == acc["accept_per_s"]
            assert r["accept_from"].startswith("measured: bursts of TCP connects into the idle nginx's accept queue")
        else:  # a quiet host's nginx took every connection as it came: no reading, and the model says so
            assert acc["why_none"] and r["accept_per_s"] == FleetModel.accept_per_s
            assert r["accept_from"].startswith("assumed") and acc["why_none"] in r["accept_from"]
