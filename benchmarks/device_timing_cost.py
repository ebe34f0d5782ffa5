#!/usr/bin/env python3
"""What the timing model costs: the same guest runs with the counting plugin alone (instruction
counts) and with the timing model on, CPU time of the emulator processes side by side.

For each case (a TLS handshake configuration of `secperf device handshake`, and single primitive
operations of `secperf device crypto`) the guest runs once to build and warm the caches, then
alternately with the timing model off and on, --rounds times each; the figure is the ratio of the
median CPU time (user + system of the child processes: qemu-arm, and the TLS server of a handshake,
which does the same work in both runs and so lowers the ratio a little).

Target (issue 41): timing on <= 2 x timing off on the same handshakes.

Usage: python benchmarks/device_timing_cost.py [--device cortex-m4-80] [--stack wolfssl59] [--rounds 3]
Exit status: 0 when every ratio is within the target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys

from secperf.measure import device as D

TARGET = 2.0


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed_run(fn, timed: bool) -> float:
    before = child_cpu()
    fn(timed)
    return child_cpu() - before


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cortex-m4-80")
    ap.add_argument("--stack", default="wolfssl59")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=3, help="handshakes (or operations) per guest process")
    a = ap.parse_args()
    cfg = D.Config(a.device, a.stack, "1.3", "x25519", "aes128gcm", "full", "rsa-2048")
    cases = {
        f"handshake {a.device} {a.stack} TLS 1.3 x25519 rsa-2048 (n={a.n})":
            lambda timed: D.measure_config(cfg, n=a.n, warmup=1, timed=timed),
        f"crypto {a.device} {a.stack} p256-keygen, sha256-1024, aes-128-gcm-1024 (n={a.n})":
            lambda timed: D.measure_crypto(a.device, a.stack, ["p256-keygen", "sha256-1024", "aes-128-gcm-1024"],
                                           a.n, timed=timed),
    }
    ok = True
    print(f"{'case':78} {'off s':>7} {'on s':>7} {'ratio':>6}")
    for name, fn in cases.items():
        fn(False)   # build, warm the page cache
        off, on = [], []
        for _ in range(a.rounds):
            off.append(timed_run(fn, False))
            on.append(timed_run(fn, True))
        ratio = statistics.median(on) / statistics.median(off)
        ok &= ratio <= TARGET
        print(f"{name:78} {statistics.median(off):7.2f} {statistics.median(on):7.2f} {ratio:6.2f}")
    print(f"\ntarget: timing on <= {TARGET:g} x timing off: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
