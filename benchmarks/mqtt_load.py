"""MQTT-level load on mosquitto (issue 45): N persistent MQTT/TLS clients with client certificates held
for --hold seconds on this machine (or the largest number it holds, with the limit named), CONNACK
P50/P99 of the ramp, PUBACK P99 of the hold, and a reconnect storm of all of them beside fleet's model
for the same clients, capacity, back-off and listen backlog (mosquitto's 100: SYNs beyond it wait for TCP's
retransmissions; target: measured / model time until all are back and median wait within 0.8..1.25).
The storms of the backlog check (issue 45), a few minutes each:

    for n in 1000 2000; do for s in 0 2; do PYTHONPATH=src nice .venv/bin/python benchmarks/mqtt_load.py \
        --clients $n --spread $s --hold 3 --connect-rate 200 --timeout 30 --storm-max 300; done; done

    PYTHONPATH=src nice .venv/bin/python benchmarks/mqtt_load.py --clients 10000 --hold 60 --json out.json

A storm that overflows the accept queue is judged over its repeats (benchmarks/storm_repeats.py on the
saved --json files): its time until all are back is bimodal from run to run.

mosquitto is pinned to --core (0), the generator to the other cores. The machine may be shared: the
processes taking CPU when the run starts and the load average before and after are printed with the
figures, so a slow broker can be told from a loaded machine."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import psutil

from secperf.app.mqtt_load import phase, storm_vs_model
from secperf.core.errors import InputError
from secperf.lab.pki import LabPKI
from secperf.measure import mqtt_load as M


def others(top: int = 8) -> list[dict]:
    """The busiest other processes over one second (what else ran on this machine)."""
    procs = list(psutil.process_iter(["pid", "name", "cmdline"]))
    for p in procs:
        try:
            p.cpu_percent(None)
        except psutil.Error:
            pass
    psutil.cpu_percent(1.0)
    rows = []
    for p in procs:
        try:
            cpu = p.cpu_percent(None)
        except psutil.Error:
            continue
        if cpu >= 5 and p.pid != os.getpid():
            rows.append(
                {"pid": p.pid, "cpu_percent": cpu, "command": " ".join(p.info["cmdline"] or [p.info["name"]])[:100]}
            )
    return sorted(rows, key=lambda r: -r["cpu_percent"])[:top]


def largest_held(clients: int) -> tuple[int, str | None]:
    """The clients this machine can hold in one generator and one broker, and the limit that binds
    (None: the asked number fits)."""
    try:
        M.fd_limits(clients)
        return clients, None
    except InputError as exc:
        soft = M.fd_limits(1)["nofile"]
        return int(soft) - M.FD_MARGIN, str(exc)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=10000)
    ap.add_argument("--connect-rate", type=float, default=100.0)
    ap.add_argument("--hold", type=float, default=60.0)
    ap.add_argument("--publish-rate", type=float, default=200.0)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--base", type=float, default=0.5)
    ap.add_argument("--cap", type=float, default=8.0)
    ap.add_argument("--storm-max", type=float, default=900.0)
    ap.add_argument(
        "--spread",
        type=float,
        default=None,
        help="the storm's first attempts spread over this many "
        "seconds (default: clients / 500 /s, so the arrivals stay under mosquitto's accept backlog)",
    )
    ap.add_argument("--key", default="ecdsa-p256")
    ap.add_argument("--json")
    a = ap.parse_args()
    clients, limit = largest_held(a.clients)
    c = M.MqttLoadConfig(
        clients=clients,
        connect_rate=a.connect_rate,
        hold_s=a.hold,
        publish_rate=a.publish_rate,
        qos=1,
        keepalive_s=60,
        timeout_s=a.timeout,
        storm=True,
        policy="exponential",
        base_s=a.base,
        cap_s=a.cap,
        storm_max_s=a.storm_max,
        spread_s=a.spread if a.spread is not None else clients / 500.0,
        key=a.key,
        capacity_s=3.0,
    )
    before = {"loadavg": os.getloadavg(), "busiest_processes": others()}
    work = Path(tempfile.mkdtemp(prefix="secperf-bench-mqtt-"))
    m = M.measure(LabPKI().ensure(), c, work)
    fm = storm_vs_model(c, m)
    ramp, hold, storm = phase(m, "ramp"), phase(m, "hold"), phase(m, "storm")
    out = {
        "clients_asked": a.clients,
        "clients": clients,
        "limit": limit
        or f"none bound: open files {m['limits']['nofile']} (hard {m['limits']['nofile_hard']}), "
        f"{m['limits']['ephemeral_ports']} ephemeral ports x {m['limits']['source_addrs']} source address(es)",
        "held_for_s": hold and hold["elapsed_s"],
        "up_through_hold": hold and hold["up_at_end"],
        "dropped_in_hold": hold and hold["dropped"],
        "ramp": {
            k: ramp and ramp.get(k)
            for k in (
                "time_all_up_s",
                "connack_p50_ms",
                "connack_p99_ms",
                "attempts",
                "refused",
                "failed",
                "errors",
                "broker_utilisation",
            )
        },
        "hold": {
            k: hold and hold.get(k)
            for k in (
                "puback_p50_ms",
                "puback_p99_ms",
                "pubacks",
                "published_qos1",
                "pings",
                "pingresps",
                "broker_utilisation",
            )
        },
        "storm": {
            k: storm and storm.get(k)
            for k in (
                "time_all_up_s",
                "connack_p50_ms",
                "connack_p99_ms",
                "puback_p99_ms",
                "pubacks",
                "attempts",
                "failed",
                "refused",
                "wait_p50_ms",
                "wait_p99_ms",
                "errors",
                "broker_utilisation",
                "tcp_counters",
            )
        },
        "capacity_per_s": m["capacity_per_s"],
        "capacity_before_after_per_s": [
            m["capacity_before"].get("handshakes_per_s"),
            m["capacity_after"].get("handshakes_per_s"),
        ],
        "fleet_model": fm
        and {
            k: fm[k]
            for k in (
                "measured",
                "models",
                "ratio_target",
                "policy",
                "base_s",
                "cap_s",
                "timeout_s",
                "spread_s",
                "backlog",
                "note",
                "measured_bounds",
                "accept_per_s",
                "accept_from",
                "syn_timers",
                "ack_gate",
            )
            if k in fm
        },
        "generator_cpu_s": m["end"].get("cpu_s"),
        "storm_sync": m.get("storm_sync"),
        "accept_rate": m.get("accept_rate") and {k: v for k, v in m["accept_rate"].items() if k != "rounds"},
        "machine": {"before": before, "after": {"loadavg": os.getloadavg(), "busiest_processes": others()}},
        "config": m["config"],
    }
    print(json.dumps(out, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps({**out, "run": m}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
