"""Messages on a kept session: paho-mqtt keeps each MQTT/TLS connection to mosquitto (client
certificate, software key) and publishes several QoS 1 messages on it, one at a time; each message
is timed from client.publish() to its PUBACK (secperf.measure.paho_client --messages). Over an
emulated link the server runs in the link's server namespace and the client in its device
namespace, as in `secperf connect`. This is what the keep-alive measure buys: no handshake, no
signature, one round trip per message. `secperf plan --verify` compares it with the planner's
per-message prediction on the same link.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import result as R
from ..core.jsonlines import parse_lines
from ..core.paths import private_dir
from ..core.result_schema import ConnectDerived, LinkedDerived, Result, Series
from ..lab import registry
from ..lab.netns import LinkPerNetwork
from ..lab.pki import LabPKI
from . import connect as C
from .link_counts import link_counters

if TYPE_CHECKING:
    from ..core.store import Run

TOPIC = "secperf/kept/msg"  # 16 bytes: the planner's MQTT framing assumes a 16-byte topic
TIMER = ("client.publish() called (QoS 1 PUBLISH on a kept MQTT/TLS session)", "PUBACK received (on_publish)")


def kept_series_id(network: str) -> str:
    return f"connect/mqtt/paho/software/kept{'' if network in ('loopback', 'none') else '@' + network}"


def measure_kept_mqtt(
    network: str,
    p: C.ConnectParams,
    doc: Result,
    run: Run | None = None,
    messages: int = 5,
    payload_bytes: int = 64,
    gap_ms: int = 250,
) -> Series:
    """p.n kept connections (after p.warmup warm-up ones), `messages` publishes each: one series of
    per-message latencies, appended to doc.series and returned."""

    cfg = C.ConnectConfig("mqtt", "software", "full", client="paho", network=network)
    s = C.new_series(cfg, TIMER[0], TIMER[1], "time.perf_counter_ns (in-process)")
    s.id = kept_series_id(network)
    s.labels.update(kept_messages=messages, payload_bytes=payload_bytes, gap_ms=gap_ms, topic=TOPIC)
    try:
        import paho.mqtt.client  # noqa: F401 - the worker runs with this interpreter  # reason: guarded: paho-mqtt may be missing
    except ImportError:
        R.add_failure(s, "paho-mqtt is not installed: run scripts/bootstrap")
        doc.series.append(R.finalize_series(s))
        return s
    pki = LabPKI(p.pki_root).ensure()
    if p.workdir is None:
        base = (
            run.dir / "kept"
            if run is not None
            else Path(os.environ.get("TMPDIR", "/tmp")) / f"secperf-kept-{os.getpid()}"
        )
        p = replace(p, workdir=private_dir(base))
    with LinkPerNetwork(p.seed, p.links) as links:  # the link the command resolved (p.links)
        link, err = links.get(network)
        if err:
            R.add_failure(s, f"network {network}: {err}")
            doc.series.append(R.finalize_series(s))
            return s
        ready = C.start_server(cfg, p, pki, s, link)
        if ready is None:
            doc.series.append(R.finalize_series(s))
            return s
        km, server = ready
        dial = C.dial_for(link, p)
        certs = pki.server(cfg.server_cert, 1)
        argv = dial.argv(
            [
                sys.executable,
                "-m",
                "secperf.measure.paho_client",
                "--host",
                dial.host,
                "--port",
                str(server.port),
                "--ca",
                str(certs.ca),
                "--cert",
                str(km.cert),
                "--key",
                str(km.key),
                "--n",
                str(p.n),
                "--warmup",
                str(p.warmup),
                "--timeout-ms",
                str(dial.timeout_ms),
                "--client-id",
                f"secperf-kept-{os.getpid()}",
                "--messages",
                str(messages),
                "--payload-bytes",
                str(payload_bytes),
                "--topic",
                TOPIC,
                "--gap-ms",
                str(gap_ms),
            ]
        )
        budget = (p.n + p.warmup) * (messages + 1) * (dial.timeout_ms / 1000 + gap_ms / 1000 + 1) + 30
        try:
            with link_counters(s.derived_as(LinkedDerived), dial.link):
                r = registry.run(argv, "paho kept worker", capture_output=True, text=True, env=km.env, timeout=budget)
        except subprocess.TimeoutExpired:
            r = None
            R.add_failure(s, f"paho-mqtt kept worker did not finish within {budget:.0f} s")
        finally:
            server.stop()
    if r is not None:
        for line in parse_lines(r.stdout):
            if line.get("type") != "msg" or line.get("warmup"):
                continue
            sample = {k: v for k, v in line.items() if k in ("ok", "reason", "usable_us", "t0_ns", "t1_ns", "k")}
            sample["conn"] = line.get("i")
            s.samples.append(sample)
            if line.get("ok"):
                s.values_us.append(float(line["usable_us"]))
            else:
                R.add_failure(
                    s, f"connection {line.get('i')} message {line.get('k', '-')}: {line.get('reason', 'failed')}"
                )
        if r.returncode != 0:
            R.add_failure(s, f"paho-mqtt kept worker exited {r.returncode}: {r.stderr.strip()[-300:]}")
        # every timed message rides on a session kept from before (the metrics' session reuse counts it)
        d = s.derived_as(ConnectDerived)
        d.resumed = len(s.values_us)
        d.kept_session = True
    C.finish_series(s, server)
    doc.series.append(s)
    return s
