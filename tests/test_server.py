"""secperf-loadgen, the probe server's concurrent mode and `secperf server` / `secperf fleet`:
structure, not speed (short loads on loopback; performance claims live in benchmarks/server.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from secperf.core.errors import InputError
from secperf.core.jsonlines import of_type
from secperf.lab.pki import LabPKI
from secperf.lab.services import ProbeServer
from secperf.measure import server as S
from secperf.model.fleet import FleetModel, knee, simulate


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return LabPKI(tmp_path_factory.mktemp("pki")).ensure()


@pytest.fixture(scope="module")
def probe_server(pki, tmp_path_factory):
    srv = ProbeServer(
        pki.server("ecdsa-p256"), args=["--concurrent", "64"], workdir=tmp_path_factory.mktemp("probe")
    ).start()
    yield srv
    srv.stop()


def loadgen(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([str(S.find_loadgen()), *args], capture_output=True, text=True, timeout=timeout)


def test_loadgen_counts_handshakes_and_resumes_at_the_ratio(probe_server):
    r = loadgen(
        "--port",
        str(probe_server.port),
        "--concurrency",
        "4",
        "--duration",
        "1",
        "--warmup",
        "0.2",
        "--resume-ratio",
        "0.5",
        "--app",
        "http",
        "--seed",
        "3",
    )
    assert r.returncode == 0, r.stderr
    end = next(of_type(r.stdout, "end"))
    assert end["handshakes"] > 20 and end["failed"] == 0
    assert end["full"] + end["resumed"] == end["handshakes"]
    # offered = resumed + missed (the server chose a full handshake: counted, never hidden)
    assert end["resumed"] > 0
    assert abs((end["resumed"] + end["resume_missed"]) / end["handshakes"] - 0.5) < 0.15
    ivs = list(of_type(r.stdout, "interval"))
    assert sum(i["handshakes"] for i in ivs) == end["handshakes"]
    assert end["p50_ms"] <= end["p95_ms"] <= end["max_ms"]


def test_loadgen_open_loop_reports_the_achieved_rate_and_several_processes(probe_server):
    r = loadgen("--port", str(probe_server.port), "--rate", "60", "--duration", "1", "--warmup", "0", "--procs", "2")
    assert r.returncode == 0, r.stderr
    ends = list(of_type(r.stdout, "end"))
    assert sorted(e["proc"] for e in ends) == [0, 1]
    assert all(e["target_rate_per_s"] == 30 for e in ends)
    assert 40 <= sum(e["started"] for e in ends) <= 70


def test_loadgen_says_why_connections_failed():
    from secperf.lab.services import free_port

    r = loadgen("--port", str(free_port()), "--concurrency", "1", "--duration", "0.3", "--warmup", "0")
    end = next(of_type(r.stdout, "end"))
    assert end["handshakes"] == 0 and end["failed"] > 0
    assert any("Connection refused" in k for k in end["errors"])


@pytest.mark.parametrize(
    "args,word",
    [
        (["--rate", "0"], "--rate"),
        (["--concurrency", "2", "--rate", "5"], "exclude"),
        (["--resume-ratio", "1.5"], "--resume-ratio"),
        ([], "--port"),
    ],
)
def test_loadgen_rejects_bad_input_with_exit_2(args, word):
    r = loadgen(*(["--port", "1"] if word != "--port" else []), *args)
    assert r.returncode == 2 and word in r.stderr


def test_probe_server_concurrent_mode_summarises_what_it_served(pki):
    from secperf.core.native import find_probe

    cs = pki.server("rsa-2048")
    srv = subprocess.Popen(
        [
            str(find_probe()),
            "server",
            "--port",
            "0",
            "--cert",
            str(cs.chain),
            "--key",
            str(cs.key),
            "--concurrent",
            "8",
            "--max-conns",
            "30",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = json.loads(srv.stdout.readline())["port"]
        loadgen(
            "--port",
            str(port),
            "--concurrency",
            "4",
            "--duration",
            "3",
            "--warmup",
            "0",
            "--max-handshakes",
            "30",
            "--app",
            "http",
        )
        out, _ = srv.communicate(timeout=10)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    summary = next(of_type(out, "server_summary"))
    assert summary["ok"] + summary["failed"] >= 30
    assert summary["requests"] >= 25 and summary["cpu_s"] > 0
    assert next(of_type(out, "end"))["stopped"] == "max-conns"


def test_server_cpu_per_handshake_and_split_on_the_probe_server(pki, tmp_path):
    cfg = S.ServerConfig("probe", "ecdsa-p256")
    p = S.LoadParams(concurrency=[2], duration_s=1.0, warmup_s=0.3, op_n=10, workdir=tmp_path)
    [s] = S.measure_config(cfg, p, pki)
    d = s.derived
    assert s.status == "ok", s.failures
    assert d.handshakes > 10 and d.server_cpu_us_per_handshake > 0
    sp = d.split
    assert sp["key_op_us"] + sp["rest_us"] == pytest.approx(sp["total_us"])
    assert 0 < sp["key_op_us"] < sp["total_us"]
    assert s.labels["pinned_to"] == [0]


def test_resumed_share_matches_the_ratio_and_signs_nothing(pki, tmp_path):
    cfg = S.ServerConfig("probe", "ecdsa-p256", resume_ratio=1.0)
    p = S.LoadParams(concurrency=[2], duration_s=1.0, warmup_s=0.3, op_n=10, workdir=tmp_path)
    [s] = S.measure_config(cfg, p, pki)
    d = s.derived
    # every connection offered a session; a refusal is counted as resume_missed, never as resumed
    assert (d.resumed + d.resume_missed) == d.handshakes
    assert d.resumed_share > 0.5
    assert d.split["signatures_per_handshake"] == pytest.approx(1 - d.resumed_share)


@pytest.mark.parametrize(
    "cfg,word",
    [
        (S.ServerConfig("nginx", "rsa-2048-nocrt"), "probe"),
        (S.ServerConfig("nginx", "rsa-2048", resume_ratio=2), "--resume-ratio"),
        (S.ServerConfig("nginx", "rsa-2048", source="offload:rsa-card-1998:spin"), "--key-source"),
        (S.ServerConfig("apache", "rsa-2048"), "--server"),
    ],
)
def test_bad_server_configurations_are_input_errors(cfg, word):
    with pytest.raises(InputError, match=word.replace("-", "\\-")):
        S.validate(cfg)


def test_an_offloaded_keys_profile_is_resolved_once_by_the_command():
    """--key-source offload:PROFILE:WAIT: the plan resolves the profile (an unknown one names the
    option and the known ones); the measurement takes the object and refuses a config without it."""
    from secperf.app.server_plan import ServerOptions, plan
    from secperf.core.errors import InternalError

    with pytest.raises(InputError, match="--key-source offload:no-such-card:busy: unknown secure-element profile"):
        plan(ServerOptions(servers=["nginx"], keys=["rsa-2048"], sources=["offload:no-such-card:busy"]))
    cfgs = plan(ServerOptions(servers=["nginx"], keys=["rsa-2048"], sources=["software", "offload:atecc608:sleep"]))
    off = [c for c in cfgs if c.offload]
    assert len(off) == 1 and off[0].offloaded()[0].name == "atecc608" and off[0].offloaded()[1] == "sleep"
    assert all(c.profile is None for c in cfgs if not c.offload)
    with pytest.raises(InternalError, match="not resolved"):
        S.ServerConfig("nginx", "rsa-2048", source="offload:atecc608:busy").offloaded()


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def test_fleet_model_recovers_all_devices_and_scales():
    small = simulate(FleetModel(devices=1000, capacity_full_per_s=500))
    assert small["time_all_back_s"] == pytest.approx(2.0, abs=0.2)
    assert small["failed_attempts"] == 0
    # scales: a million devices cost about 15 times what 100 000 do (fastest of three, measured
    # here); a model quadratic in the devices would cost 100 times
    tenth_s = min(
        _timed(lambda: simulate(FleetModel(devices=100_000, capacity_full_per_s=650, policy="exponential")))[0]
        for _ in range(3)
    )
    big_s, big = _timed(lambda: simulate(FleetModel(devices=1_000_000, capacity_full_per_s=650, policy="exponential")))
    assert big_s < 50 * tenth_s, (big_s, tenth_s)
    assert big["devices_back"] == pytest.approx(1_000_000, rel=1e-6)
    assert big["time_all_back_s"] >= 1_000_000 / 650
    # the server's queue holds at most what it serves within the clients' timeout (the listen backlog
    # bounds what it accepts per pass: tests/test_fleet_backlog.py)
    assert big["failed_attempts"] > 0 and big["peak_queue"] <= 650 * 10 + 1


def test_fleet_synchronised_retries_are_worse_than_jittered_backoff():
    fixed = simulate(FleetModel(devices=200_000, capacity_full_per_s=650, policy="fixed"))
    jitter = simulate(FleetModel(devices=200_000, capacity_full_per_s=650, policy="exponential"))
    assert jitter["gave_up"] <= fixed["gave_up"]
    assert jitter["devices_back"] >= fixed["devices_back"]


def test_knee_is_the_first_load_near_the_top():
    assert knee([(1, 300), (4, 640), (16, 655), (64, 650)]) == 4


def test_fleet_cli_with_a_given_capacity(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "secperf",
            "fleet",
            "--devices",
            "1000",
            "--capacity",
            "400",
            "--json",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    [run] = doc["analysis"]["fleet"]["runs"]
    assert run["time_all_back_s"] == pytest.approx(2.5, abs=0.2)


def test_fleet_cli_rejects_an_unknown_policy(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "secperf", "fleet", "--policy", "panic", "--capacity", "400", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "--policy" in r.stderr


# --- reconnect storms, open-loop curves, the capacity matrix ---------------------------------------
def test_loadgen_storm_brings_every_client_back_once(probe_server):
    r = loadgen(
        "--port",
        str(probe_server.port),
        "--storm",
        "20",
        "--backoff",
        "exponential",
        "--backoff-base-ms",
        "50",
        "--timeout-ms",
        "5000",
        "--duration",
        "20",
        "--app",
        "http",
    )
    assert r.returncode == 0, r.stderr
    end = next(of_type(r.stdout, "end"))
    assert end["loop"] == "storm" and end["stopped"] == "all back"
    assert end["back"] == 20 and end["gave_up"] == 0
    assert end["attempts"] == 20 + end["failed_attempts"]
    assert end["wait_p50_s"] <= end["wait_p99_s"] <= end["wait_max_s"]
    # the last client back sets both; waits are kept in whole µs and the time in ns, each printed
    # to 0.1 ms, so the two may differ by one in the last printed digit
    assert end["wait_max_s"] == pytest.approx(end["time_all_back_s"], abs=1.5e-4)


def test_loadgen_storm_retries_each_client_up_to_max_attempts():
    from secperf.lab.services import free_port

    r = loadgen(
        "--port",
        str(free_port()),
        "--storm",
        "5",
        "--backoff",
        "fixed",
        "--backoff-base-ms",
        "10",
        "--max-attempts",
        "3",
        "--duration",
        "10",
    )
    end = next(of_type(r.stdout, "end"))
    assert end["back"] == 0 and end["gave_up"] == 5
    assert end["attempts"] == 15 and end["failed_attempts"] == 15
    assert "time_all_back_s" not in end and "wait_p50_s" not in end
    assert any("refused" in k for k in end["errors"])


@pytest.mark.parametrize(
    "args,word",
    [
        (["--storm", "5", "--rate", "10"], "--storm"),
        (["--storm", "5", "--backoff", "panic"], "--backoff"),
        (["--storm", "0"], "--storm"),
    ],
)
def test_loadgen_storm_rejects_bad_input(args, word):
    r = loadgen("--port", "1", *args)
    assert r.returncode == 2 and word in r.stderr


def test_fleet_model_with_abandoned_work_is_slower_only_when_attempts_time_out():
    kw = dict(
        devices=2000, capacity_full_per_s=400, policy="exponential", base_s=0.5, cap_s=8, backlog=4096, horizon_s=600
    )
    long_drop = simulate(FleetModel(timeout_s=10, **kw))
    long_keep = simulate(FleetModel(timeout_s=10, abandoned_work=True, **kw))
    assert long_drop["time_all_back_s"] == long_keep["time_all_back_s"]
    short_drop = simulate(FleetModel(timeout_s=2, **kw))
    short_keep = simulate(FleetModel(timeout_s=2, abandoned_work=True, **kw))
    assert short_keep["time_all_back_s"] > short_drop["time_all_back_s"]
    assert short_keep["failed_attempts"] > short_drop["failed_attempts"]
    assert short_keep["devices_back"] == pytest.approx(2000, rel=1e-6)


def test_open_loop_knee_follows_its_rule():
    from secperf.model.fleet import open_loop_knee

    # P95 more than doubles at 400/s before the achieved rate falls behind
    assert open_loop_knee([(100, 100, 10), (200, 199, 14), (400, 390, 30), (800, 400, 900)]) == 400
    # the achieved rate falls below 95 % first
    assert open_loop_knee([(100, 100, 10), (200, 180, 12)]) == 200
    assert open_loop_knee([(100, 100, 10), (200, 200, 11)]) is None
    # one noisy level below the knee does not make it the knee: every level from the knee on is past it
    assert open_loop_knee([(50, 41, 13), (100, 100, 27), (200, 200, 9), (300, 300, 66), (600, 318, 977)]) == 300


def test_open_loop_levels_and_the_generator_warning(pki, tmp_path):
    cfg = S.ServerConfig("probe", "ecdsa-p256")
    p = S.LoadParams(rates=[50, 1_000_000], duration_s=0.6, warmup_s=0.1, op_n=5, workdir=tmp_path)
    low, high = S.measure_config(cfg, p, pki)
    assert low.labels["loop"] == high.labels["loop"] == "open"
    assert (low.labels["offered_per_s"], high.labels["offered_per_s"]) == (50, 1_000_000)
    assert low.id != high.id
    assert low.derived.warning is None and low.derived.handshakes > 10
    # no machine starts a million connections a second through one process: said, with what it did
    assert "started" in high.derived.warning and high.derived.started_per_s < 950_000


def test_rsa_1024_server_key_serves_handshakes_and_its_nocrt_variant(pki, tmp_path):
    p = S.LoadParams(concurrency=[2], duration_s=0.6, warmup_s=0.1, op_n=5, workdir=tmp_path)
    for key in ("rsa-1024", "rsa-1024-nocrt"):
        [s] = S.measure_config(S.ServerConfig("probe", key), p, pki)
        assert s.status == "ok", s.failures
        assert s.derived.handshakes > 5 and s.derived.full == s.derived.handshakes


def test_low_security_level_config_extends_the_engine_config():
    from secperf.lab.token import openssl_engine_conf

    plain = S.low_seclevel_conf()
    assert "@SECLEVEL=0" in plain and plain.startswith("openssl_conf = openssl_init")
    both = S.low_seclevel_conf(openssl_engine_conf("/x/shim.so", init=True))
    assert both.count("[openssl_init]") == 1 and "ssl_conf = secperf_ssl" in both and "engines =" in both


def test_matrix_plan_covers_the_capacity_table():
    from secperf.app.server import matrix_plan

    cfgs = matrix_plan()
    keys = {(c.server, c.key, c.source) for c in cfgs}
    for k in ("rsa-1024", "rsa-2048", "rsa-3072", "rsa-4096", "ecdsa-p256", "ecdsa-p384", "ed25519"):
        assert ("nginx", k, "software") in keys
    for k in ("rsa-1024", "rsa-2048", "rsa-3072", "rsa-4096"):
        assert ("probe", k + "-nocrt", "software") in keys and ("probe", k, "software") in keys
    for k in S.TOKEN_KEYS:
        for w in S.WAITS:
            assert ("nginx", k, f"offload:{S.OFFLOAD_PROFILE[k]}:{w}") in keys
    assert any(c.client_auth for c in cfgs) and {1, 2, 3} <= {c.depth for c in cfgs}
    assert {0.0, 0.5, 1.0} <= {c.resume_ratio for c in cfgs}
    assert {c.server for c in cfgs} == {"nginx", "probe", "mosquitto"}
    assert len({c.series_id(1) for c in cfgs}) == len(cfgs)


def test_offload_split_takes_the_emulation_out():
    level = {"server_cpu_us_per_handshake": 2000.0, "handshakes": 10, "full": 10}
    calls = [{"fn": "C_Sign", "duration_ns": 30_000_000, "real_ns": 500_000, "delay_ns": 27_000_000}] * 10
    busy = S.split(level, None, calls, "busy")
    sleep = S.split(level, None, calls, "sleep")
    assert busy["card_host_cpu_us"] == pytest.approx(2000 - 500)
    assert sleep["card_host_cpu_us"] == pytest.approx(2000 - 500 - S.SLEEP_SPIN_TAIL_US)
    assert busy["card_bound_per_s"] == pytest.approx(1e6 / 27_500)
    # SoftHSM2's CPU: the software signature's, at most its wall time in the log
    op = {"cpu_us": 100.0, "alg": "rsa-1024"}
    assert S.split(level, op, calls, "busy")["card_host_cpu_us"] == pytest.approx(2000 - 100)
    assert S.split(level, {"cpu_us": 900.0}, calls, "busy")["card_host_cpu_us"] == pytest.approx(2000 - 500)


@pytest.mark.parametrize(
    "argv,word",
    [
        (["server", "--rates", "0"], "--rates"),
        (["server", "--rates", "x"], "--rates"),
        (["fleet", "--replay", "5"], "--replay"),
        (["fleet", "--replay", "100", "--server", "probe"], "nginx"),
    ],
)
def test_server_and_fleet_bad_options_exit_2(argv, word, tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "secperf", *argv, "--out", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 2 and word in r.stderr, r.stderr


# --- DTLS: the load generator's --dtls mode against libcoap's coap-server -----------------------------
@pytest.fixture(scope="module")
def coap_server(pki, tmp_path_factory):
    from secperf.lab.iot_services import CoapServer

    srv = CoapServer(pki.server("ecdsa-p256"), workdir=tmp_path_factory.mktemp("coap"), verbosity=3).start()
    yield srv
    srv.stop()


def test_loadgen_dtls_handshakes_concurrently_with_cookies(coap_server):
    r = loadgen("--port", str(coap_server.port), "--dtls", "--concurrency", "8", "--duration", "1", "--warmup", "0.2")
    assert r.returncode == 0, r.stderr
    meta, end = next(of_type(r.stdout, "meta")), next(of_type(r.stdout, "end"))
    assert meta["protocol"] == "dtls1.2" and meta["app"] == "none"
    assert end["handshakes"] > 8 and end["failed"] == 0 and end["errors"] == {}
    # coap-server always answers the first ClientHello with a HelloVerifyRequest
    assert end["cookie_exchanges"] == end["handshakes"]
    # eight in flight at once, all served: the server interleaves its clients
    assert max(i["in_flight"] for i in of_type(r.stdout, "interval")) == 8


def test_loadgen_dtls_retransmits_on_its_timer_then_gives_a_reason():
    import socket

    from secperf.lab.services import LOOPBACK

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as mute:  # bound, never answers
        mute.bind((LOOPBACK, 0))
        r = loadgen(
            "--port",
            str(mute.getsockname()[1]),
            "--dtls",
            "--concurrency",
            "1",
            "--duration",
            "2.5",
            "--warmup",
            "0",
            "--timeout-ms",
            "2200",
        )
    end = next(of_type(r.stdout, "end"))
    assert r.returncode == 0 and end["handshakes"] == 0 and end["failed"] == 1
    # OpenSSL's timer: 1 s, then doubled; the ClientHello went out again once before the deadline
    assert end["retransmits"] >= 1
    assert any("timed out" in k for k in end["errors"]), end["errors"]


def test_loadgen_dtls_to_a_closed_port_names_the_error():
    import socket

    from secperf.lab.services import free_port

    r = loadgen(
        "--port",
        str(free_port(socket.SOCK_DGRAM)),
        "--dtls",
        "--concurrency",
        "1",
        "--duration",
        "0.3",
        "--warmup",
        "0",
    )
    end = next(of_type(r.stdout, "end"))
    assert end["handshakes"] == 0 and end["failed"] > 0
    assert any("Connection refused" in k for k in end["errors"]), end["errors"]


@pytest.mark.parametrize(
    "args,word", [(["--app", "http"], "--app none"), (["--tls", "1.3"], "DTLS 1.2"), (["--storm", "5"], "--storm")]
)
def test_loadgen_dtls_rejects_what_it_cannot_do(args, word):
    r = loadgen("--port", "1", "--dtls", *args)
    assert r.returncode == 2 and word in r.stderr, r.stderr


def test_server_dtls_cpu_per_handshake_on_coap_server(pki, tmp_path):
    cfg = S.ServerConfig("coap-server", "ecdsa-p256", tls="1.2", protocol="dtls")
    p = S.LoadParams(concurrency=[4], duration_s=1.0, warmup_s=0.3, op_n=10, workdir=tmp_path)
    [s] = S.measure_config(cfg, p, pki)
    d = s.derived
    assert s.status == "ok", s.failures
    assert s.labels["protocol"] == "dtls" and s.labels["tls"] == "dtls1.2"
    assert d.handshakes > 10 and d.failed == 0 and d.cookie_exchanges == d.handshakes
    assert d.server_cpu_us_per_handshake > 0 and d.split["signatures_per_handshake"] == 1
    assert 0 < d.split["key_op_us"] < d.split["total_us"]


def test_server_dtls_unreachable_target_is_a_failed_sample(monkeypatch, pki, tmp_path):
    """coap-server that cannot start (a port already taken) is a failed sample with its reason."""
    cfg = S.ServerConfig("coap-server", "ecdsa-p256", tls="1.2", protocol="dtls")
    p = S.LoadParams(concurrency=[2], duration_s=0.5, warmup_s=0, op_n=5, workdir=tmp_path)

    def no_server(*a, **k):
        from secperf.lab.services import ServiceError

        raise ServiceError("coap-server: did not answer a CoAP ping on its plain UDP port")

    monkeypatch.setattr(S, "start_server", no_server)
    [s] = S.measure_config(cfg, p, pki)
    assert s.status != "ok" and any("CoAP ping" in f for f in map(str, s.failures))


@pytest.mark.parametrize(
    "cfg,word",
    [
        (S.ServerConfig("nginx", "rsa-2048", protocol="dtls"), "coap-server"),
        (S.ServerConfig("coap-server", "rsa-2048"), "--protocol"),
        (S.ServerConfig("coap-server", "rsa-2048", resume_ratio=0.5, protocol="dtls"), "resumes no DTLS"),
        (S.ServerConfig("coap-server", "rsa-2048", source="offload:rsa-card-1998:busy", protocol="dtls"), "PEM"),
    ],
)
def test_bad_dtls_configurations_are_input_errors(cfg, word):
    with pytest.raises(InputError, match=word.replace("-", "\\-")):
        S.validate(cfg)


def test_dtls_matrix_plan_is_coap_server_only():
    from secperf.app.server import ServerOptions, plan

    cfgs = plan(ServerOptions(matrix=True, protocol="dtls"))
    assert {c.server for c in cfgs} == {"coap-server"} and {c.protocol for c in cfgs} == {"dtls"}
    assert {"rsa-2048", "ecdsa-p256", "ecdsa-p384"} <= {c.key for c in cfgs}


def test_server_cli_dtls_with_a_tls_server_exits_2(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "secperf", "server", "--protocol", "dtls", "--server", "nginx", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "coap-server" in r.stderr, r.stderr


def test_an_empty_server_list_is_a_named_input_error(capsys, tmp_path):
    """`--server ''` fell back to nginx and measured it."""
    from secperf.cli import main

    # the comma-list option type refuses it while parsing (argparse's exit, returned by main)
    assert main(["server", "--server", "", "--out", str(tmp_path)]) == 2
    assert "--server: '' names nothing" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
