#!/usr/bin/env python3
"""How much of a client's number is the client: the probe's HTTPS establishment against curl's
own `time_appconnect`, and the probe's MQTT CONNACK time against mosquitto_pub's, each pair against
the same server in the same run, in interleaved rounds.

  probe HTTPS:  socket connect started -> TLS handshake complete (tcp_connect_us + handshake_wall_us)
  curl:         time_appconnect (curl's own timer: transfer start -> TLS handshake complete)
  probe MQTT:   socket connect started -> CONNACK received (usable_us)
  mosquitto_pub: spawn -> "received CONNACK" debug line, minus its median process start-up
                 (spawn -> exit of `mosquitto_pub --help`), the start-up reported beside it

Ratios are medians of per-round medians (probe ÷ external tool). This is a reference, not a band:
the exit code is 1 only when a measurement failed.

    python benchmarks/connect_clients.py [--rounds 5] [--n 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from secperf.core import result as R
from secperf.lab.pki import LabPKI
from secperf.measure import connect as C


def _median(s: dict, fn) -> float | None:
    vals = [fn(c) for c in s["samples"] if c.get("ok")]
    return statistics.median(vals) if vals else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=20)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="secperf-bench-connect-"))
    pki = LabPKI(work / "pki").ensure()
    rows = {"https": [], "mqtt": []}
    startup = []
    failed = []
    for rnd in range(a.rounds):
        p = C.ConnectParams(n=a.n, warmup=2, workdir=work / f"r{rnd}", pki_root=work / "pki")
        doc = R.new_result(kind="connect", command=[], params={}, host={}, run_id="bench")
        pairs = [
            (C.ConnectConfig("https"), C.ConnectConfig("https", client="curl")),
            (C.ConnectConfig("mqtt"), C.ConnectConfig("mqtt", client="mosquitto_pub")),
        ]
        for probe_cfg, ext_cfg in pairs:
            order = (probe_cfg, ext_cfg) if rnd % 2 == 0 else (ext_cfg, probe_cfg)
            got = {}
            for cfg in order:
                s = C.measure(cfg, p, pki, doc)[0]
                got[cfg.client] = s
                if s["status"] != "ok":
                    failed.append(
                        f"round {rnd} {cfg.label}: {s['failures'][-1]['reason'] if s['failures'] else s['status']}"
                    )
            if probe_cfg.protocol == "https":
                pv = _median(got["probe"], lambda c: c["tcp_connect_us"] + c["handshake_wall_us"])
                ev = _median(got["curl"], lambda c: c["time_appconnect_us"])
            else:
                pv = _median(got["probe"], lambda c: c["usable_us"])
                ev = _median(got["mosquitto_pub"], lambda c: c["usable_us"])
                startup.append(got["mosquitto_pub"]["derived"].get("startup_p50_us"))
            if pv and ev:
                rows[probe_cfg.protocol].append((pv, ev))
    print(f"{'comparison':58} {'probe P50':>10} {'tool P50':>10} {'probe/tool':>10}  per-round ratios")
    for proto, what in (
        ("https", "HTTPS: probe connect+handshake vs curl time_appconnect"),
        ("mqtt", "MQTT: probe CONNACK vs mosquitto_pub CONNACK - start-up"),
    ):
        r = rows[proto]
        if not r:
            print(f"{what:58} {'failed':>10}")
            continue
        ratios = [p / e for p, e in r]
        print(
            f"{what:58} {statistics.median(p for p, _ in r) / 1000:8.2f}ms {statistics.median(e for _, e in r) / 1000:8.2f}ms "
            f"{statistics.median(ratios):10.3f}  {' '.join(f'{x:.2f}' for x in ratios)}"
        )
    st = [x for x in startup if x]
    if st:
        print(
            f"mosquitto_pub process start-up (subtracted above), P50 of rounds: {statistics.median(st) / 1000:.2f} ms"
        )
    for f in failed:
        print(f"FAILED {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
