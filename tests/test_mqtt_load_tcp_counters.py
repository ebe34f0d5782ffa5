"""The kernel's listen-queue counters and SYN timers an mqtt-load storm records, and fleet's storm model
taking the generator's kernel's SYN timers (Linux >= 6.5: tcp_syn_linear_timeouts) from the run."""

from __future__ import annotations

import socket
import time

from secperf.app.mqtt_load import storm_vs_model
from secperf.measure.mqtt_load import MqttLoadConfig
from secperf.measure.tcp_counters import COUNTERS, counters_between, parse_netstat, tcp_counters, tcp_sysctls

NETSTAT = (
    "TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPSynRetrans\n"
    "TcpExt: 0 523 530 270\n"
    "IpExt: InNoRoutes\nIpExt: 0\n"
)


def test_the_tcpext_counters_are_read_by_name():
    assert parse_netstat(NETSTAT) == {"ListenOverflows": 523, "ListenDrops": 530, "TCPSynRetrans": 270}
    assert parse_netstat("IpExt: InNoRoutes\nIpExt: 0\n") == {}
    assert parse_netstat("TcpExt: ListenOverflows ListenDrops\nTcpExt: 1\n") == {}  # a cut line: no figures
    a = parse_netstat(NETSTAT)
    b = {**a, "ListenOverflows": 1000, "TCPSynRetrans": 300}
    assert counters_between(a, b) == {"ListenOverflows": 477, "ListenDrops": 0, "TCPSynRetrans": 30}
    assert counters_between(None, b) is None and counters_between(a, None) is None


def test_an_unreadable_proc_gives_none(tmp_path):
    assert tcp_counters(tmp_path / "absent") is None
    (tmp_path / "net" / "ipv4").mkdir(parents=True)
    (tmp_path / "net" / "ipv4" / "tcp_syn_retries").write_text("6\n")
    # a kernel before 6.5 has no tcp_syn_linear_timeouts: None, which the model reads as doubling at once
    none = {
        "tcp_syn_linear_timeouts": None,
        "somaxconn": None,
        "tcp_synack_retries": None,
        "tcp_abort_on_overflow": None,
    }
    assert tcp_sysctls(tmp_path) == {"tcp_syn_retries": 6, **none}


def test_a_full_accept_queue_is_counted_by_the_kernel():
    # a real listener with backlog 1 that never accepts: the kernel holds backlog + 1 completed
    # connections and drops the SYNs beyond (ListenOverflows), which the storm record reads
    before = tcp_counters()
    assert before is not None and set(before) == set(COUNTERS)
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(1)
    clients = []
    try:
        for _ in range(8):
            c = socket.socket()
            c.setblocking(False)
            c.connect_ex(lst.getsockname())
            clients.append(c)
        time.sleep(0.2)
        got = counters_between(before, tcp_counters())
    finally:
        for c in clients:
            c.close()
        lst.close()
    assert got is not None and got["ListenOverflows"] >= 8 - 2
    s = tcp_sysctls()
    assert s["tcp_syn_retries"] is not None and s["tcp_syn_retries"] >= 1


def _run(sysctls: dict | None, counters: dict | None = None) -> dict:
    c = MqttLoadConfig(clients=2000, policy="exponential", base_s=0.5, cap_s=8.0, timeout_s=30.0, spread_s=0.0)
    storm = {"phase": "storm", "time_all_up_s": 20.0, "wait_p50_ms": 7000.0, "wait_p90_ms": 15000.0}
    storm |= {"wait_p99_ms": 19000.0, "connacks": 2000, "gave_up": 0, "failed": 0, "refused": 0, "attempts": 2000}
    if counters is not None:
        storm["tcp_counters"] = counters
    m = {"capacity_per_s": 130.0, "phases": [storm], **({"tcp_sysctls": sysctls} if sysctls is not None else {})}
    out = storm_vs_model(c, m, horizon_s=200)
    assert out is not None
    return out


def test_the_storm_model_takes_the_generators_syn_timers():
    linear = _run({"tcp_syn_retries": 6, "tcp_syn_linear_timeouts": 4, "somaxconn": 4096})
    older = _run({"tcp_syn_retries": 6, "tcp_syn_linear_timeouts": None, "somaxconn": 4096})
    default = _run(None)
    assert linear["syn_timers"]["syn_linear_timeouts"] == 4 and linear["syn_timers"]["from"].startswith("the gen")
    assert older["syn_timers"]["syn_linear_timeouts"] == 0  # no such sysctl: doubling from the first
    assert default["syn_timers"]["syn_linear_timeouts"] == 4 and default["syn_timers"]["from"].startswith("fleet")
    # 2,000 first SYNs against mosquitto's backlog of 100: drops in both. Their retransmissions come back at
    # 1 s in the generator's timer bucket and all pass the SYN check of the idle broker (what its queue cannot
    # hold overflows at the final ACK and retries on the ACK path), so the later SYN timers change nothing
    # here: never later with the linear ones (the timers' own effect: tests/test_fleet_backlog.py)
    a, b = linear["models"]["late work dropped"], older["models"]["late work dropped"]
    assert a["syn_drops"] > 0 and b["syn_drops"] > 0 and a["ack_overflows"] > 0
    assert a["time_all_back_s"] <= b["time_all_back_s"]
    assert default["models"]["late work dropped"]["time_all_back_s"] == a["time_all_back_s"]


def test_the_kernels_counts_sit_beside_the_models_drops():
    out = _run(None, {"ListenOverflows": 1927, "ListenDrops": 1927, "TCPSynRetrans": 1018})
    assert out["measured"]["listen_overflows"] == 1927 and out["measured"]["syn_retransmits"] == 1018
    bare = _run(None)
    assert bare["measured"]["listen_overflows"] is None and bare["measured"]["syn_retransmits"] is None
