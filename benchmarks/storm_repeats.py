"""The same reconnect storm measured several times, beside fleet's model (issue 45).

A storm that overflows mosquitto's accept queue is not one number: the same configuration run twice on
an idle host can take 18 s or 36 s until all are back, depending on how many clients' final ACKs find the
queue full (those clients believe they are connected and wait for their ClientHello's retransmissions,
some until their handshake timeout). So the model is judged against the storm's repeats: per
configuration, the measured time until all are back and median wait (least, median, most), the model's
(each run modelled at its own measured capacity), the ratio of the medians, and how many single runs are
within the target. Input: runs saved by `benchmarks/mqtt_load.py --json`, e.g.

    for r in 1 2 3 4 5 6; do PYTHONPATH=src nice .venv/bin/python benchmarks/mqtt_load.py --clients 10000 \\
        --connect-rate 400 --hold 10 --timeout 30 --spread 5 --storm-max 300 --json s5-$r.json; done
    PYTHONPATH=src .venv/bin/python benchmarks/storm_repeats.py s5-*.json [--json out.json]

Each run is modelled again with this secperf's model (app/mqtt_load.storm_vs_model), so saved runs can be
judged by a newer model."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from secperf.app.mqtt_load import RATIO_TARGET, TARGET_FIGURES, storm_vs_model
from secperf.measure.mqtt_load import MqttLoadConfig

SHOWN = (*TARGET_FIGURES, "wait_p90_s", "wait_p99_s")
# what makes two runs the same storm
SAME = ("clients", "spread_s", "timeout_s", "policy", "base_s", "cap_s", "key", "resume_ratio", "se_profile")


def modelled(path: Path) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """(the storm's configuration key, storm_vs_model's record) of one saved run; None without a storm."""
    m = json.loads(path.read_text())["run"]
    c = MqttLoadConfig.from_record(m["config"])
    fm = storm_vs_model(c, m)
    if fm is None:
        return None
    return tuple(m["config"].get(k) for k in SAME), fm


def spread(xs: list[float]) -> dict[str, float]:
    return {"least": min(xs), "median": statistics.median(xs), "most": max(xs)}


def judge(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One configuration's repeats: measured and modelled figures, per model variant."""
    out: dict[str, Any] = {"runs": len(runs), "measured": {}, "models": {}}
    for k in SHOWN:
        out["measured"][k] = spread([r["measured"][k] for r in runs])
    out["kernel"] = {
        "syn_retransmits": spread([r["measured"]["syn_retransmits"] or 0 for r in runs]),
        "ack_path_overflows": spread([r["measured"]["ack_path_overflows"] or 0 for r in runs]),
    }
    names = [n for n in runs[0]["models"] if all(n in r["models"] for r in runs)]
    for name in names:
        mods = [r["models"][name] for r in runs]
        v: dict[str, Any] = {"within_single": sum(bool(x["within_target"]) for x in mods)}
        for k in SHOWN:
            mv = [x[k] for x in mods if x[k] is not None]
            v[k] = spread(mv) if mv else None
            meas = out["measured"][k]["median"]
            v[f"ratio_of_medians_{k}"] = meas / v[k]["median"] if v[k] else None
        v["syn_drops"] = statistics.median(x["syn_drops"] for x in mods)
        v["ack_overflows"] = statistics.median(x["ack_overflows"] for x in mods)
        v["within_target_on_medians"] = all(
            (x := v[f"ratio_of_medians_{k}"]) is not None and RATIO_TARGET[0] <= x <= RATIO_TARGET[1]
            for k in TARGET_FIGURES
        )
        out["models"][name] = v
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("runs", type=Path, nargs="+", help="runs saved by benchmarks/mqtt_load.py --json")
    ap.add_argument("--json", type=Path, help="write the judgement here too")
    a = ap.parse_args()
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for p in a.runs:
        try:
            got = modelled(p)
        except (OSError, ValueError, KeyError, TypeError) as exc:  # not a run benchmarks/mqtt_load.py saved
            print(
                f"{p}: not a run saved by benchmarks/mqtt_load.py --json ({type(exc).__name__}: {exc})", file=sys.stderr
            )
            return 2
        if got is None:
            print(f"{p}: no storm or no capacity, left out", file=sys.stderr)
            continue
        groups[got[0]].append(got[1])
    report = []
    for key, runs in groups.items():
        j = {"storm": dict(zip(SAME, key)), **judge(runs)}
        report.append(j)
        ms = j["measured"]
        print(
            f"{j['storm']['clients']} clients, spread {j['storm']['spread_s']:g} s, timeout {j['storm']['timeout_s']:g} s:"
            f" {j['runs']} runs; measured all back {ms['time_all_back_s']['least']:.1f}"
            f"..{ms['time_all_back_s']['most']:.1f} s (median {ms['time_all_back_s']['median']:.1f}), median wait"
            f" {ms['wait_p50_s']['least']:.2f}..{ms['wait_p50_s']['most']:.2f} s"
            f" (median {ms['wait_p50_s']['median']:.2f}); SYN retransmissions median"
            f" {j['kernel']['syn_retransmits']['median']:,.0f}, ACK-path overflows {j['kernel']['ack_path_overflows']['median']:,.0f}"
        )
        for name, v in j["models"].items():
            r_all, r_p50 = v["ratio_of_medians_time_all_back_s"], v["ratio_of_medians_wait_p50_s"]
            print(
                f"  {name}: all back {v['time_all_back_s']['median']:.1f} s, median wait {v['wait_p50_s']['median']:.2f} s;"
                f" ratio of medians {r_all or 0:.2f} / {r_p50 or 0:.2f}"
                f" {'within' if v['within_target_on_medians'] else 'outside'};"
                f" P90 {v['ratio_of_medians_wait_p90_s'] or 0:.2f}, P99 {v['ratio_of_medians_wait_p99_s'] or 0:.2f};"
                f" single runs within {v['within_single']} of {j['runs']}; SYN drops {v['syn_drops']:,.0f},"
                f" ACK overflows {v['ack_overflows']:,.0f}"
            )
    if a.json:
        a.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
