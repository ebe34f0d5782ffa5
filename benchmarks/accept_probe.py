"""How loose the accept-rate probe of a target is (measure/accept_probe.py, issue 45): against a
mosquitto and an nginx started here on loopback, the probe's lower bound (the pace of the server's
answers to bursts of connects, as for a remote target) beside the accept rate read from the listening
socket's own accept queue (measure/accept_rate.py: sock_diag, possible only for a server on this
host), alternating, --rounds times. Prints each pair, the medians and probe / queue (a lower bound
is at most 1 when both hold; the queue-read figure is itself a lower bound when the broker empties
its queue by the next reading).

    PYTHONPATH=src nice .venv/bin/python benchmarks/accept_probe.py --rounds 5

The load average before and after is printed: a loaded host stretches both figures."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

from secperf.lab.iot_services import Mosquitto
from secperf.lab.pki import LabPKI
from secperf.lab.services import Nginx
from secperf.measure.accept_probe import probe_accept_rate
from secperf.measure.accept_rate import measure_accept_rate


def pairs(port: int, rounds: int) -> list[dict[str, float | None]]:
    out: list[dict[str, float | None]] = []
    for i in range(rounds):
        first = ("probe", "queue") if i % 2 == 0 else ("queue", "probe")
        row: dict[str, float | None] = {}
        for k in first:
            if k == "probe":
                row[k] = probe_accept_rate("127.0.0.1", port, f"127.0.0.1:{port}")["accept_per_s"]
            else:
                row[k] = measure_accept_rate(port)["accept_per_s"]
        out.append(row)
    return out


def summary(name: str, rows: list[dict[str, float | None]]) -> dict[str, object]:
    probe = [r["probe"] for r in rows if r["probe"]]
    queue = [r["queue"] for r in rows if r["queue"]]
    mp = statistics.median(probe) if probe else None
    mq = statistics.median(queue) if queue else None
    return {
        "server": name,
        "rounds": rows,
        "probe_median_per_s": mp,
        "queue_median_per_s": mq,
        "probe_over_queue": mp / mq if mp and mq else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=Path, help="write the figures here too")
    a = ap.parse_args()
    if not 1 <= a.rounds <= 50:
        raise SystemExit("--rounds: give 1..50")
    load0 = os.getloadavg()
    pki = LabPKI().ensure()
    certs, client = pki.server("ecdsa-p256", 1), pki.client("ecdsa-p256")
    out = []
    with tempfile.TemporaryDirectory() as d:
        with Mosquitto(certs, client.ca, workdir=Path(d) / "mq", connection_messages=False) as mq:
            assert mq.port is not None
            out.append(summary("mosquitto", pairs(mq.port, a.rounds)))
        with Nginx(certs, workdir=Path(d) / "ng") as ng:
            assert ng.port is not None
            out.append(summary("nginx", pairs(ng.port, a.rounds)))
    for s in out:
        print(f"{s['server']}:")
        for r in s["rounds"]:  # type: ignore[attr-defined]
            print(f"  probe {r['probe'] or 0:>10,.0f}/s   queue {r['queue'] or 0:>10,.0f}/s")
        ratio = s["probe_over_queue"]
        print(
            f"  medians: probe {s['probe_median_per_s'] or 0:,.0f}/s, queue {s['queue_median_per_s'] or 0:,.0f}/s, "
            f"probe / queue {ratio:.3f}"
            if isinstance(ratio, float)
            else "  no ratio (a figure is missing)"
        )
    print(f"load average before {load0[0]:.1f}, after {os.getloadavg()[0]:.1f}")
    if a.json:
        a.json.write_text(json.dumps({"servers": out, "load_before": load0, "load_after": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
