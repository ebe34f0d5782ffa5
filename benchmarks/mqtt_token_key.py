"""The broker's key on the token (issue 45): the same MQTT load on mosquitto with its key in a PEM file and
on the lab token behind the secure-element shim (OpenSSL's pkcs11 engine), side by side: the token's
signatures counted by the shim against the full handshakes (one each), CONNACK P50/P99 of the ramp and
of the storm, and the broker's capacity against the profile's one-signature-at-a-time bound.

    PYTHONPATH=src nice .venv/bin/python benchmarks/mqtt_token_key.py --clients 20 --source offload:atecc608:busy

The machine may be shared: the load average before and after is printed with the figures."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from secperf.app.mqtt_load import phase, resolved
from secperf.lab.pki import LabPKI
from secperf.measure import mqtt_load as M


def one(c: M.MqttLoadConfig, pki: LabPKI) -> dict:
    m = M.measure(pki, c, Path(tempfile.mkdtemp(prefix="secperf-bench-mqtt-key-")))
    phases = [p for p in (phase(m, n) for n in ("ramp", "storm")) if p]
    full = sum(p["connacks"] - p["resumed"] for p in m["phases"])
    bk = m["broker_key"]
    return {
        "key_source": c.key_source,
        "full_handshakes_in_load": full,
        "token_signs_in_load": (bk.get("token_signs") or {}).get("load"),
        "card_bound_per_s": bk.get("card_bound_per_s"),
        "sign_wall_ms_p50": bk.get("sign_wall_ms_p50"),
        "capacity_per_s": m["capacity_per_s"],
        "capacity_clients": m["capacity_before"].get("clients"),
        **{f"{p['phase']}_connack_{q}": p.get(f"connack_{q}") for p in phases for q in ("p50_ms", "p99_ms")},
        "failed_or_refused": sum(p["failed"] + p["refused"] for p in m["phases"]),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--connect-rate", type=float, default=50.0)
    ap.add_argument("--key", default="ecdsa-p256", help="rsa-1024, rsa-2048 or ecdsa-p256 (the token's keys)")
    ap.add_argument("--source", default="offload:atecc608:busy", help="offload:PROFILE:busy|sleep")
    ap.add_argument("--json")
    a = ap.parse_args()
    base = M.MqttLoadConfig(
        clients=a.clients,
        connect_rate=a.connect_rate,
        hold_s=1.0,
        publish_rate=10.0,
        timeout_s=60.0,
        spread_s=0.5,
        key=a.key,
        capacity_s=2.0,
    )
    pki = LabPKI().ensure()
    load0 = os.getloadavg()
    # the offloaded key's profile resolved as the command resolves it (app/mqtt_load.resolved)
    rows = [one(base, pki), one(resolved(M.MqttLoadConfig(**{**base.as_dict(), "key_source": a.source})), pki)]
    out = {"clients": a.clients, "loadavg_before": load0, "loadavg_after": os.getloadavg(), "rows": rows}
    for r in rows:
        print(
            f"{r['key_source']:28} capacity {r['capacity_per_s'] or 0:7.1f}/s ({r['capacity_clients']} clients)  "
            f"ramp CONNACK P50 {r.get('ramp_connack_p50_ms') or 0:8.1f} ms P99 {r.get('ramp_connack_p99_ms') or 0:8.1f} ms  "
            f"token signs {r['token_signs_in_load']} / full handshakes {r['full_handshakes_in_load']}"
            + (f"  bound {r['card_bound_per_s']:.1f}/s" if r["card_bound_per_s"] else "")
        )
    print(f"load average {load0[0]:.1f} before, {out['loadavg_after'][0]:.1f} after", file=sys.stderr)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    ok = rows[1]["token_signs_in_load"] == rows[1]["full_handshakes_in_load"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
