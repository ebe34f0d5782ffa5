#!/usr/bin/env python3
"""Each library backend against that library's own benchmark, side by side in one run.

- JVM (jce, bouncycastle): secperf's JVM rows (JMH measurement iterations with per-iteration
  clocks, forks = 1) against a plain JMH run of the same operation (the `Plain` benchmark in the
  same jar: no clocks, no call counter; JMH's avgt score). Ratio = secperf's mean per operation
  (total wall / total operations) / JMH's score, for RSA-2048 and ECDSA P-256 sign and verify;
  band 0.95–1.05. Rounds alternate secperf and plain runs so drift hits both alike; the median
  ratio over rounds is gated. Fork stability: the spread of secperf's P50 over the rounds (one
  forked JVM each) is printed.
- wolfCrypt and Mbed TLS: their benchmark programs (wolfcrypt/benchmark, programs/test/benchmark)
  are not shipped as Debian binaries; where `SECPERF_WOLFCRYPT_BENCH` / `SECPERF_MBEDTLS_BENCH`
  name a built one, its ops/s are printed beside secperf's (not gated: their output formats differ
  per version); otherwise the row says so.

Usage: python benchmarks/libraries.py [--rounds 3] [--n 20] [--warmup-ms 3000] [--json OUT]
Exit status: 0 when every JVM ratio is inside its band, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from secperf.core.errors import SetupError
from secperf.measure import backends
from secperf.measure.crypto import CryptoParams, measure_row
from secperf.measure.probe import run_speed
from secperf.spec.algorithms import for_libraries, select

CASES = (("rsa-2048", "sign"), ("rsa-2048", "verify"), ("ecdsa-p256", "sign"), ("ecdsa-p256", "verify"))
BAND = (0.95, 1.05)


def secperf_row(lib, alg, op, p):
    row = for_libraries(select([alg], [op]), [lib])[0]
    s, _ = measure_row(row, p)
    if s["status"] != "ok":
        return None, None
    return 1e6 / s["derived"]["ops_per_s"], s["summary"]["p50_us"]


def plain_jmh(lib, alg, op, p):
    r = run_speed(backends.tool_args(lib) + ["--alg", alg, "--op", op, "--size", "32", "--n", str(p.n),
                                             "--forks", "1", "--iteration-ms", str(p.jmh_iteration_ms),
                                             "--warmup-ms", str(p.jmh_warmup_ms), "--plain"],
                  setup_timeout_s=120, run_timeout_s=600, command=backends.command(lib))
    return (r.end or {}).get("jmh_score_us")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--warmup-ms", type=int, default=3000)
    ap.add_argument("--libraries", default="jce,bouncycastle")
    ap.add_argument("--json")
    a = ap.parse_args()
    p = CryptoParams(n=a.n, warmup=2, duration_s=60, jmh_forks=1, jmh_iteration_ms=100, jmh_warmup_ms=a.warmup_ms)
    out, ok = [], True
    print(f"{'library':13} {'case':20} {'secperf mean':>13} {'plain JMH':>11} {'ratio':>7}  {'P50 spread over forks':>22}")
    for lib in a.libraries.split(","):
        try:
            backends.command(lib)
        except SetupError as exc:
            print(f"{lib:13} unavailable: {exc}")
            ok = False
            continue
        for alg, op in CASES:
            means, plains, p50s = [], [], []
            for _ in range(a.rounds):
                m, p50 = secperf_row(lib, alg, op, p)
                ref = plain_jmh(lib, alg, op, p)
                if m and ref:
                    means.append(m)
                    plains.append(ref)
                    p50s.append(p50)
            if not means:
                print(f"{lib:13} {alg + ' ' + op:20} failed")
                ok = False
                continue
            ratio = statistics.median(m / r for m, r in zip(means, plains))
            spread = (max(p50s) - min(p50s)) / statistics.median(p50s)
            inside = BAND[0] <= ratio <= BAND[1]
            ok &= inside
            print(f"{lib:13} {alg + ' ' + op:20} {statistics.median(means):10.1f} µs {statistics.median(plains):8.1f} µs "
                  f"{ratio:7.3f}{'' if inside else ' !'}  {spread:8.1%} ({len(p50s)} forks: "
                  + ", ".join(f"{x:.1f}" for x in p50s) + " µs)")
            out.append({"library": lib, "alg": alg, "op": op, "secperf_mean_us": means, "plain_jmh_us": plains,
                        "p50_us": p50s, "ratio": ratio, "fork_spread": spread, "inside": inside})
    for lib, env in (("wolfcrypt", "SECPERF_WOLFCRYPT_BENCH"), ("mbedtls", "SECPERF_MBEDTLS_BENCH")):
        ref = os.environ.get(env)
        if not ref:
            print(f"{lib:13} reference benchmark not available: Debian ships no binary; build it from the "
                  f"library's sources and set {env} (not gated)")
            continue
        print(f"{lib:13} reference output ({ref}):")
        print(subprocess.run([ref], capture_output=True, text=True, timeout=600).stdout[-3000:])
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
