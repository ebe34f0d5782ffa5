"""How loose the accept-rate probe of a target is (measure/accept_probe.py, issue 45): against a
mosquitto and an nginx started here on loopback, the probe's lower bound (the pace of the server's
answers to bursts of connects, as for a remote target) beside the accept rate read from the listening
socket's own accept queue (measure/accept_rate.py: sock_diag, possible only for a server on this
host), alternating, --rounds times. Prints each pair, the medians and probe / queue (a lower bound
is at most 1 when both hold; the queue-read figure is itself a lower bound when the broker empties
its queue by the next reading).

    PYTHONPATH=src nice .venv/bin/python benchmarks/accept_probe.py --rounds 5 [--storms RUN.json ...]

With --storms (files written by `benchmarks/mqtt_load.py --json`), each saved storm is set beside
fleet's model at mosquitto's two medians (the probe's and the queue's), so whether the bound's
looseness changes a verdict is seen: the model's ratios at both, and how many storms are within
0.8-1.25 on both the time until all are back and the median wait. The load average before and after is
printed: a loaded host stretches both figures."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

from secperf.app.mqtt_load import storm_vs_model
from secperf.lab.iot_services import Mosquitto
from secperf.lab.pki import LabPKI
from secperf.lab.services import Nginx
from secperf.measure.accept_probe import probe_accept_rate
from secperf.measure.accept_rate import measure_accept_rate
from secperf.measure.mqtt_load import MqttLoadConfig


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


def storms(files: list[Path], rates: dict[str, float]) -> dict[str, int]:
    """Each saved storm's model ratios (all back / median wait, late work dropped) at each accept rate;
    the number within the target per rate."""
    within = dict.fromkeys(rates, 0)
    for f in files:
        m = json.loads(f.read_text())["run"]
        c = MqttLoadConfig.from_record(m["config"])
        cells = []
        for name, acc in rates.items():
            v = storm_vs_model(c, {**m, "accept_rate": {"accept_per_s": acc}})["models"]["late work dropped"]
            within[name] += bool(v["within_target"])
            cells.append(f"{name}: {v['ratio_time_all_back_s'] or 0:.2f} / {v['ratio_wait_p50_s'] or 0:.2f}")
        print(f"  {f.name}: " + ";  ".join(cells))
    return within


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=Path, help="write the figures here too")
    ap.add_argument(
        "--storms", type=Path, nargs="*", default=[], help="saved mqtt-load runs (benchmarks/mqtt_load.py --json)"
    )
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
    mq_sum = out[0]
    rates = {k: mq_sum[f"{k}_median_per_s"] for k in ("probe", "queue")}
    if a.storms and all(isinstance(v, float) for v in rates.values()):
        print("saved storms beside fleet's model (ratio all back / median wait) at mosquitto's two medians:")
        within = storms(a.storms, {k: float(v) for k, v in rates.items()})  # type: ignore[arg-type]
        print("  within 0.8-1.25 on both: " + ", ".join(f"{k} {n} of {len(a.storms)}" for k, n in within.items()))
    if a.json:
        a.json.write_text(json.dumps({"servers": out, "load_before": load0, "load_after": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
