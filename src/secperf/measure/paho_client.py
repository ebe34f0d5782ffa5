"""paho-mqtt as `secperf connect`'s MQTT cross-check client, in a process of its own:

    python -m secperf.measure.paho_client --host H --port P --ca CA --cert CERT --key KEY \\
        --n N --warmup W --timeout-ms T --client-id ID

makes W warm-up and N timed connections one after another (MQTT 3.1.1 over TLS with a client
certificate, software key) and prints one JSON line per connection (warm-up ones included, marked)
on stdout: ok, usable_us (client.connect() called → on_connect with CONNACK), the part inside
connect() (TCP connect + TLS handshake) and the protocol step, the return code, or the reason it
failed; t0_ns/t1_ns are its CLOCK_MONOTONIC bounds.

Why a process: paho creates its own socket inside connect() (no public way to hand it one made in
another network namespace), so over an emulated link it runs whole inside the link's device
namespace (`ip netns exec` / nsenter in front of this command), and over loopback it runs the same
way without the prefix: one code path for both. The timer stays inside the process, so Python's
start-up is never part of a connection's time.
"""

from __future__ import annotations

import argparse
import json
import ssl
import sys
import time


def _one(mqtt, a, i: int) -> dict:
    got: dict = {}
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"{a.client_id}-{i}")
    c.tls_set(ca_certs=a.ca, certfile=a.cert, keyfile=a.key, tls_version=ssl.PROTOCOL_TLS_CLIENT)
    c.tls_insecure_set(True)  # the lab certificate names localhost; we dial an address

    def on_connect(_c, _u, _f, rc, _props=None):
        got["t1"] = time.perf_counter_ns()
        got["rc"] = int(rc.value if hasattr(rc, "value") else rc)
    c.on_connect = on_connect
    m0 = time.monotonic_ns()
    t0 = time.perf_counter_ns()
    try:
        c.connect(a.host, a.port, keepalive=60)
        t_hs = time.perf_counter_ns()
        deadline = time.monotonic() + a.timeout_ms / 1000
        while "t1" not in got and time.monotonic() < deadline:
            c.loop(timeout=0.05)
    except (OSError, ssl.SSLError) as exc:
        return {"ok": False, "reason": f"paho connect: {exc}", "t0_ns": m0, "t1_ns": time.monotonic_ns()}
    finally:
        try:
            c.disconnect()
        except Exception:  # noqa: BLE001 - closing a broken client must not end the run
            pass
    bracket = {"t0_ns": m0, "t1_ns": time.monotonic_ns()}
    if "t1" not in got or got.get("rc") != 0:
        return {"ok": False, "reason": f"no CONNACK accepted within {a.timeout_ms} ms (rc={got.get('rc')})", **bracket}
    return {"ok": True, "usable_us": (got["t1"] - t0) / 1000, "connect_us": (t_hs - t0) / 1000,
            "step_us": (got["t1"] - t_hs) / 1000, "rc": got["rc"], **bracket}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m secperf.measure.paho_client")
    for name in ("--host", "--ca", "--cert", "--key", "--client-id"):
        ap.add_argument(name, required=True)
    for name in ("--port", "--n", "--warmup", "--timeout-ms"):
        ap.add_argument(name, type=int, required=True)
    a = ap.parse_args(argv)
    try:
        import paho.mqtt.client as mqtt
    except ImportError:
        print(json.dumps({"type": "error", "reason": "paho-mqtt is not installed: run scripts/bootstrap"}), flush=True)
        return 1
    for i in range(a.warmup + a.n):
        line = {"type": "conn", "i": i - a.warmup, "warmup": i < a.warmup, **_one(mqtt, a, i)}
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
