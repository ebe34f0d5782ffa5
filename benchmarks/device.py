#!/usr/bin/env python3
"""Emulated-device handshakes (`secperf device`): are the counts trustworthy and fast enough?

Four targets, each printed with its figure and band:
1. Determinism: two runs of the same configuration agree within 0.5% on the mean handshake
   count (the medians' difference is printed too), cold (first handshake in a process) and warm
   separately; a run is --procs guest processes (cold: their first handshakes and --cold extra
   one-handshake processes). The spread inside a run is printed: wolfSSL's counts repeat to about
   0.1%, but Mbed TLS's bignum code is not constant-count (random blinding, value-dependent
   reductions), so its single handshakes vary by a few % and only averages over many agree.
2. Sum rule: the per-message parts add up to the handshake count within 1% on every handshake,
   AND the instrumented handshake (record-at-a-time I/O, markers) costs within 1% of a plain one
   (library's own-size reads, markers only around the handshake; medians over all warm handshakes)
   — the attribution does not change what it measures.
3. Speed: at least 5 emulated handshakes per second on this machine with counting and the timing
   model on (wall time of the guest process divided by its handshakes, server on loopback).
4. The timing model's cost: one guest process of --n handshakes with the model on takes at most
   2x the wall time of the same process counting instructions only (fastest of three each).

Configurations: wolfSSL 5.5.4 TLS 1.3 X25519 and P-256 with AES-128-GCM, Mbed TLS 2.28 TLS 1.2
X25519 and Mbed TLS 3.6 TLS 1.3 X25519 (3x the processes for the Mbed TLS stacks), each on the Cortex-A9 profile (Debian's armhf libraries) and on the Cortex-M4 profile
(the libraries built from Debian's source packages for Cortex-M4); a stack whose build is not
there is reported and skipped (wolfSSL on the A9 must be there).

Usage: python benchmarks/device.py [--n 8] [--json OUT]
Exit status: 0 when every target is met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from secperf.core.errors import SetupError
from secperf.inputs.devices import resolve_core
from secperf.measure import device as D
from secperf.measure import device_attrib as A
from secperf.measure.device_build import ensure_built

DET_BAND, SUM_BAND, RATE_BAND, TIMING_COST_BAND = 0.005, 0.01, 5.0, 2.0


def run_once(build, dev, cfg, srv, n: int, marks: bool = True, timed: bool = True):
    t0 = time.monotonic()
    conns, events, _ = D.run_client(build, dev, cfg, srv.port, srv.certs.ca, n, marks=marks, app=False, timed=timed)
    wall = time.monotonic() - t0
    hss = [h for h in A.handshakes(events, conns, cfg.tls) if h.ok]
    return hss, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8, help="handshakes per guest process (first is cold)")
    ap.add_argument("--procs", type=int, default=5, help="guest processes per run (default 5)")
    ap.add_argument(
        "--cold",
        type=int,
        default=15,
        help="extra one-handshake processes per run for the cold "
        "median (default 15: Mbed TLS's cold handshakes vary by a few %%)",
    )
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()
    configs = []
    for device in (resolve_core("cortex-a9-400"), resolve_core("cortex-m4-120")):
        configs += [D.Config(device, "wolfssl", "1.3", g, "aes128gcm", "full", "rsa-2048") for g in ("x25519", "p-256")]
        configs.append(D.Config(device, "mbedtls", "1.2", "x25519", "aes128gcm", "full", "rsa-2048"))
        configs.append(D.Config(device, "mbedtls3", "1.3", "x25519", "aes128gcm", "full", "rsa-2048"))
    ok, rows = True, []
    with D.Server("rsa-2048") as srv:
        for cfg in configs:
            dev = cfg.core
            try:
                build = ensure_built(cfg.stack, D.target_for(dev))
            except SetupError as exc:
                print(f"{cfg.device} {cfg.key}: not built here ({exc})")
                if cfg.stack == "wolfssl" and dev.profile == "A":
                    ok = False
                continue
            # Mbed TLS's counts vary from handshake to handshake (blinding, variable-time bignum code):
            # three times the processes so that the medians settle
            procs = a.procs * (3 if cfg.stack.startswith("mbedtls") else 1)
            runs, colds = [], []
            for _ in range(2):
                parts = [run_once(build, dev, cfg, srv, a.n) for _ in range(procs)]
                runs.append(([h for hs, _ in parts for h in hs], sum(w for _, w in parts)))
                colds.append(
                    [h for _ in range(a.cold * (procs // a.procs)) for h in run_once(build, dev, cfg, srv, 1)[0]]
                )
            plain = [h for _ in range(2) for h in run_once(build, dev, cfg, srv, 2 * a.n, marks=False)[0]]
            row = {"device": cfg.device, "config": cfg.key, "library": build.library}
            print(
                f"{cfg.device} {cfg.key} ({build.library}), {a.n} handshakes per process, 2 runs of {procs} processes "
                f"(+ {a.cold * (procs // a.procs)} one-handshake processes for cold) + 2 plain processes"
            )
            # 1. determinism
            for phase, pick in (("cold", lambda h: h.index == 0), ("warm", lambda h: h.index >= 3)):
                per_run = [
                    [h.instructions for h in hs + (cold if phase == "cold" else []) if pick(h)]
                    for (hs, _), cold in zip(runs, colds)
                ]
                meds = [statistics.median(v) for v in per_run]
                means = [statistics.fmean(v) for v in per_run]
                diff = abs(means[0] - means[1]) / means[0]
                diff_med = abs(meds[0] - meds[1]) / meds[0]
                inner = max((max(v) - min(v)) / statistics.median(v) for v in per_run)
                good = diff <= DET_BAND
                ok &= good
                row[f"determinism_{phase}"] = {
                    "means": means,
                    "medians": meds,
                    "diff": diff,
                    "diff_medians": diff_med,
                    "spread_in_run": inner,
                    "samples_per_run": [len(v) for v in per_run],
                }
                print(
                    f"  determinism {phase}: mean {means[0]:,.0f} vs {means[1]:,.0f} instructions, differ {diff:.3%} "
                    f"(band {DET_BAND:.1%}; medians differ {diff_med:.3%}) over {len(per_run[0])} handshakes a run, "
                    f"spread in a run {inner:.3%}  {'ok' if good else 'MISSED'}"
                )
            # 2. sum rule
            allh = [h for hs, _ in runs for h in hs]
            worst = max(abs(h.parts_sum - h.instructions) / h.instructions for h in allh)
            warm_i = statistics.median([h.instructions for hs, _ in runs for h in hs if h.index >= 3])
            warm_p = statistics.median([h.instructions for h in plain if h.index >= 3])
            overhead = (warm_i - warm_p) / warm_p
            good = worst <= SUM_BAND and abs(overhead) <= SUM_BAND
            ok &= good
            row["sum_rule"] = {
                "parts_vs_total_worst": worst,
                "instrumented": warm_i,
                "plain": warm_p,
                "instrumentation_overhead": overhead,
            }
            print(
                f"  sum rule: parts vs total worst {worst:.4%}; instrumented {warm_i:,.0f} vs plain {warm_p:,.0f} "
                f"instructions ({overhead:+.3%}, band ±{SUM_BAND:.0%})  {'ok' if good else 'MISSED'}"
            )
            # 3. speed
            rates = [len(hs) / wall for hs, wall in runs]
            rate = statistics.median(rates)
            good = rate >= RATE_BAND
            ok &= good
            row["handshakes_per_s"] = rate
            print(
                f"  speed: {rate:.1f} emulated handshakes/s with counting on (band >= {RATE_BAND:g})  "
                f"{'ok' if good else 'MISSED'}"
            )
            # 4. what the timing model costs: the same guest process with and without it (fastest of 3 each)
            walls = {True: [], False: []}
            for _ in range(3):
                for timed in (False, True):
                    walls[timed].append(run_once(build, dev, cfg, srv, a.n, timed=timed)[1])
            cost = min(walls[True]) / min(walls[False])
            good = cost <= TIMING_COST_BAND
            ok &= good
            row["timing_model_cost"] = {"with_s": min(walls[True]), "without_s": min(walls[False]), "ratio": cost}
            print(
                f"  timing model: {min(walls[True]):.2f} s vs {min(walls[False]):.2f} s for {a.n} handshakes in one "
                f"guest process, {cost:.2f}x (band <= {TIMING_COST_BAND:g}x)  {'ok' if good else 'MISSED'}"
            )
            rows.append(row)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    print("device bench: " + ("all targets met" if ok else "a target was MISSED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
