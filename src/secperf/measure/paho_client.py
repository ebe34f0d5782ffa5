"""paho-mqtt as `secperf connect`'s MQTT cross-check client, in a process of its own:

    python -m secperf.measure.paho_client --host H --port P --ca CA --cert CERT --key KEY \\
        --n N --warmup W --timeout-ms T --client-id ID

makes W warm-up and N timed connections one after another (MQTT 3.1.1 over TLS with a client
certificate, software key) and prints one JSON line per connection (warm-up ones included, marked)
on stdout: ok, usable_us (client.connect() called → on_connect with CONNACK), the part inside
connect() (TCP connect + TLS handshake) and the protocol step, the return code, or the reason it
failed; t0_ns/t1_ns are its CLOCK_MONOTONIC bounds.

With --messages K (K >= 1) each connection is kept and carries K QoS 1 PUBLISH messages of
--payload-bytes bytes on topic --topic, one at a time with --gap-ms between them; a "msg" line per
message gives usable_us = client.publish() called -> PUBACK received (on_publish): the per-message
latency on a kept session (`secperf plan --verify`'s keep-alive rows).

Why a process: paho creates its own socket inside connect() (no public way to hand it one made in
another network namespace), so over an emulated link it runs whole inside the link's device
namespace (`ip netns exec` / nsenter in front of this command), and over loopback it runs the same
way without the prefix: one code path for both. The timer stays inside the process, so Python's
start-up is never part of a connection's time.
"""

from __future__ import annotations

import argparse
import json
import socket
import ssl
import sys
import time
from collections.abc import Callable
from functools import partial
from types import ModuleType
from typing import Any

from secperf.core.wait import wait_until


def _drive(c: Any, done: Callable[[], bool], timeout_ms: int, step_s: float) -> bool:  # c: paho's Client
    """Run paho's network loop (`step_s` at most per call, waiting on the socket) until done()
    holds or timeout_ms pass; whether it holds."""

    def step() -> bool:
        if done():
            return True
        c.loop(timeout=step_s)
        return done()

    return bool(wait_until(step, timeout_ms / 1000, interval_s=0))


def _one(mqtt: ModuleType, a: argparse.Namespace, i: int) -> dict[str, Any]:
    got: dict[str, Any] = {}
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"{a.client_id}-{i}")
    c.tls_set(ca_certs=a.ca, certfile=a.cert, keyfile=a.key, tls_version=ssl.PROTOCOL_TLS_CLIENT)
    c.tls_insecure_set(True)  # the lab certificate names localhost; we dial an address

    def on_connect(_c: object, _u: object, _f: object, rc: Any, _props: object = None) -> None:
        got["t1"] = time.perf_counter_ns()
        got["rc"] = int(rc.value if hasattr(rc, "value") else rc)

    c.on_connect = on_connect
    m0 = time.monotonic_ns()
    t0 = time.perf_counter_ns()
    try:
        c.connect(a.host, a.port, keepalive=60)
        t_hs = time.perf_counter_ns()
        _drive(c, lambda: "t1" in got, a.timeout_ms, 0.05)
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
    return {
        "ok": True,
        "usable_us": (got["t1"] - t0) / 1000,
        "connect_us": (t_hs - t0) / 1000,
        "step_us": (got["t1"] - t_hs) / 1000,
        "rc": got["rc"],
        **bracket,
    }


def _acked(got: dict[str, Any], mid: int) -> bool:
    """Whether the PUBACK of message `mid` came (on_publish noted it)."""
    return mid in got.get("acked", {})


def _kept(mqtt: ModuleType, a: argparse.Namespace, i: int) -> list[dict[str, Any]]:
    """One connection kept for a.messages QoS 1 publishes; a line per message (or one failure)."""

    got: dict[str, Any] = {}
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"{a.client_id}-k{i}")
    c.tls_set(ca_certs=a.ca, certfile=a.cert, keyfile=a.key, tls_version=ssl.PROTOCOL_TLS_CLIENT)
    c.tls_insecure_set(True)
    c.on_connect = lambda _c, _u, _f, rc, _p=None: got.update(rc=int(rc.value if hasattr(rc, "value") else rc))
    c.on_publish = lambda _c, _u, mid, *_r: got.setdefault("acked", {}).__setitem__(mid, time.perf_counter_ns())
    out: list[dict[str, Any]] = []
    try:
        c.connect(a.host, a.port, keepalive=60)
        sock = c.socket()
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        _drive(c, lambda: "rc" in got, a.timeout_ms, 0.05)
        if got.get("rc") != 0:
            return [{"ok": False, "reason": f"no CONNACK accepted within {a.timeout_ms} ms (rc={got.get('rc')})"}]
        payload = b"m" * a.payload_bytes
        for k in range(a.messages):
            time.sleep(a.gap_ms / 1000)
            m0 = time.monotonic_ns()
            t0 = time.perf_counter_ns()
            info = c.publish(a.topic, payload, qos=1)
            _drive(c, partial(_acked, got, info.mid), a.timeout_ms, 0.01)
            t1 = got.get("acked", {}).get(info.mid)
            if t1 is None:
                out.append({"ok": False, "k": k, "reason": f"no PUBACK within {a.timeout_ms} ms"})
                continue
            out.append({"ok": True, "k": k, "usable_us": (t1 - t0) / 1000, "t0_ns": m0, "t1_ns": time.monotonic_ns()})
    except (OSError, ssl.SSLError) as exc:
        out.append({"ok": False, "reason": f"paho: {exc}"})
    finally:
        try:
            c.disconnect()
        except Exception:  # noqa: BLE001 - closing a broken client must not end the run
            pass
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m secperf.measure.paho_client")
    for name in ("--host", "--ca", "--cert", "--key", "--client-id"):
        ap.add_argument(name, required=True)
    for name in ("--port", "--n", "--warmup", "--timeout-ms"):
        ap.add_argument(name, type=int, required=True)
    ap.add_argument("--messages", type=int, default=0, help="keep each connection for this many QoS 1 publishes")
    ap.add_argument("--payload-bytes", type=int, default=64)
    ap.add_argument("--topic", default="secperf/kept/msg")
    ap.add_argument("--gap-ms", type=int, default=250)
    a = ap.parse_args(argv)
    try:
        import paho.mqtt.client as mqtt  # reason: guarded: paho-mqtt may be missing
    except ImportError:
        print(json.dumps({"type": "error", "reason": "paho-mqtt is not installed: run scripts/bootstrap"}), flush=True)
        return 1
    if a.messages > 0:  # n kept connections after the warm-up ones, K messages each
        for i in range(a.warmup + a.n):
            for line in _kept(mqtt, a, i):
                print(json.dumps({"type": "msg", "i": i - a.warmup, "warmup": i < a.warmup, **line}), flush=True)
        return 0
    for i in range(a.warmup + a.n):
        line = {"type": "conn", "i": i - a.warmup, "warmup": i < a.warmup, **_one(mqtt, a, i)}
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
