#!/usr/bin/env python3
"""What the timing model costs: the same guest runs with the counting plugin alone (instruction
counts) and with the timing model on, CPU time of the emulator processes side by side.

For each case (a TLS handshake configuration of `secperf device handshake`, and single primitive
operations of `secperf device crypto`) the guest runs once to build and warm the caches, then
alternately with the timing model off and on, --rounds times each; the figure is the ratio of the
median CPU time (user + system of the child processes: qemu-arm, and the TLS server of a handshake,
which does the same work in both runs and so lowers the ratio a little); "range" is the lowest and
highest ratio of one round's on run to its off run (a shared machine's noise shows there).

The timing model disassembles each translated instruction once and keeps what it read in a decode
cache beside the guest binary (native/device/plugin/decode_cache.c): a binary's first timed run pays
the disassembly, later runs of it do not. The "on" column is a run with the cache in place (the usual
case: every configuration and every repeat runs the same client); "cold" is one run with the cache
removed first, printed for information. "steady" runs --steady operations of p256-keygen in one guest
process (startup and translation amortised: what the model costs per executed instruction), --rounds
times interleaved as the cases, also for information.

Target (issue 41): timing on <= 2 x timing off on the same handshakes.

Usage: python benchmarks/device_timing_cost.py [--device cortex-m4-80] [--stack wolfssl59] [--rounds 3]
       [--steady 50]
Exit status: 0 when every ratio is within the target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys

from secperf.inputs.devices import resolve_core
from secperf.measure import device as D
from secperf.measure.device_build import ensure_built

TARGET = 2.0


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed_run(fn, timed: bool) -> float:
    before = child_cpu()
    fn(timed)
    return child_cpu() - before


def rounds(fn, n: int) -> tuple[list[float], list[float]]:
    """CPU seconds of n runs with the timing model off and n with it on, interleaved (off, on, off, ...)."""
    off, on = [], []
    for _ in range(n):
        off.append(timed_run(fn, False))
        on.append(timed_run(fn, True))
    return off, on


def spread(off: list[float], on: list[float]) -> str:
    """The lowest and highest ratio of a round's on run to its off run ("1.71-2.05")."""
    r = [b / a for a, b in zip(off, on)]
    return f"{min(r):.2f}-{max(r):.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cortex-m4-80")
    ap.add_argument("--stack", default="wolfssl59")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=3, help="handshakes (or operations) per guest process")
    ap.add_argument(
        "--steady", type=int, default=50, help="p256-keygen operations of the steady-state line (0: no such line)"
    )
    a = ap.parse_args()
    if a.rounds < 1 or a.n < 1 or a.steady < 0:
        ap.error("--rounds and --n must be at least 1, --steady at least 0")
    dev = resolve_core(a.device)
    client = ensure_built(a.stack, D.target_for(dev)).client
    cfg = D.Config(dev, a.stack, "1.3", "x25519", "aes128gcm", "full", "rsa-2048")
    cases = {
        f"handshake {a.device} {a.stack} TLS 1.3 x25519 rsa-2048 (n={a.n})": lambda timed: D.measure_config(
            cfg, n=a.n, warmup=1, timed=timed
        ),
        f"crypto {a.device} {a.stack} p256-keygen, sha256-1024, aes-128-gcm-1024 (n={a.n})": lambda timed: (
            D.measure_crypto(dev, a.stack, ["p256-keygen", "sha256-1024", "aes-128-gcm-1024"], a.n, timed=timed)
        ),
    }
    ok = True
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average at the start (1, 5, 15 min): {load} (the host's other work shows in the ranges)")
    print(f"{'case':78} {'off s':>7} {'on s':>7} {'ratio':>6} {'range':>11} {'cold s':>7} {'ratio':>6}")
    for name, fn in cases.items():
        fn(False)  # build, warm the page cache
        for old in client.parent.glob(f".{client.name}.*.decode"):
            old.unlink()
        cold = timed_run(fn, True)  # fills the decode cache
        off, on = rounds(fn, a.rounds)
        base = statistics.median(off)
        ratio = statistics.median(on) / base
        ok &= ratio <= TARGET
        print(
            f"{name:78} {base:7.2f} {statistics.median(on):7.2f} {ratio:6.2f} {spread(off, on):>11} {cold:7.2f} "
            f"{cold / base:6.2f}"
        )
    if a.steady:

        def steady(timed):
            return D.measure_crypto(dev, a.stack, ["p256-keygen"], a.steady, timed=timed)

        off, on = rounds(steady, a.rounds)
        print(
            f"{f'steady state: p256-keygen x {a.steady} in one process (information)':78} "
            f"{statistics.median(off):7.2f} {statistics.median(on):7.2f} "
            f"{statistics.median(on) / statistics.median(off):6.2f} {spread(off, on):>11}"
        )
    print(f"load average at the end (1, 5, 15 min): {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"\ntarget: timing on <= {TARGET:g} x timing off: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
