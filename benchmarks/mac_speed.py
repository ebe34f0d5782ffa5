#!/usr/bin/env python3
"""MAC speed on this host, side by side in one run: secperf's Chaskey and Chaskey-12 (native/mac)
against AES-128-CMAC and HMAC-SHA256 from the system OpenSSL, all through `secperf-probe speed`
(same harness, same key/message set-up, init + update + final per tag, key kept), at 8, 16, 64,
256 and 1024 bytes.

Rounds alternate the algorithms (chaskey, chaskey-12, cmac, hmac, chaskey, ...) so drift on a
shared machine hits all of them alike; per row we take the median over rounds of the per-sample
thread-CPU time per tag, print ns per tag and ns/byte, and the ratios OpenSSL MAC / Chaskey
(how many times faster Chaskey is) with the spread of the per-round ratios.

Usage: python benchmarks/mac_speed.py [--rounds 5] [--n 15] [--json OUT]
Exit status: 0 when every row was measured, 1 otherwise. No speed band is asserted: the ratios are
the result.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from secperf.core import host
from secperf.measure.probe import run_speed

ALGS = ("chaskey", "chaskey-12", "aes-128-cmac", "hmac-sha256")
SIZES = (8, 16, 64, 256, 1024)


def one(alg: str, size: int, n: int) -> float | None:
    """Median thread-CPU ns per tag of one probe run, or None if it failed."""
    r = run_speed(
        [
            "--alg",
            alg,
            "--op",
            "mac",
            "--size",
            str(size),
            "--n",
            str(n),
            "--warmup",
            "2",
            "--min-sample-us",
            "1000",
            "--seed",
            "1",
        ],
        setup_timeout_s=30,
        run_timeout_s=60,
    )
    if r.error or not r.samples:
        print(f"  {alg} {size} B failed: {r.error}", file=sys.stderr)
        return None
    return statistics.median(s["cpu_ns"] / max(1, s["ops"]) for s in r.samples)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=15, help="samples per probe run")
    ap.add_argument("--json", metavar="OUT")
    a = ap.parse_args()
    rounds = max(1, min(a.rounds, 50))
    per: dict[tuple[str, int], list[float]] = {(alg, n): [] for alg in ALGS for n in SIZES}
    failed = 0
    for rnd in range(rounds):
        for n in SIZES:
            for alg in ALGS:
                v = one(alg, n, max(1, min(a.n, 200)))
                if v is None:
                    failed += 1
                else:
                    per[(alg, n)].append(v)
        print(f"round {rnd + 1}/{rounds} done", file=sys.stderr)
    h = host.collect()
    print(f"host: {h.get('cpu_model')} ({h.get('cpu_count')} CPUs), load average at start {h.get('loadavg_at_start')}")
    print(f"{'size':>6}  " + "  ".join(f"{alg:>22}" for alg in ALGS) + "   cmac/chaskey  hmac/chaskey")
    rows = []
    for n in SIZES:
        med = {alg: statistics.median(per[(alg, n)]) if per[(alg, n)] else None for alg in ALGS}
        cells = "  ".join(
            f"{med[alg]:9.1f} ns {med[alg] / n:6.2f} ns/B" if med[alg] else f"{'failed':>22}" for alg in ALGS
        )
        ratios = {}
        for other in ("aes-128-cmac", "hmac-sha256"):
            rr = [o / c for o, c in zip(per[(other, n)], per[("chaskey", n)])]
            ratios[other] = (statistics.median(rr), min(rr), max(rr)) if rr else None
        rtxt = "  ".join(f"{r[0]:6.2f}x ({r[1]:.2f}-{r[2]:.2f})" if r else "   n/a" for r in ratios.values())
        print(f"{n:>5}B  {cells}   {rtxt}")
        rows.append(
            {
                "size_bytes": n,
                "ns_per_tag": med,
                "ns_per_byte": {k: (v / n if v else None) for k, v in med.items()},
                "ratio_vs_chaskey": {k: (v[0] if v else None) for k, v in ratios.items()},
            }
        )
    print("ratios: OpenSSL MAC time / secperf Chaskey time per tag (thread CPU); >1 means Chaskey is faster")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rounds": rounds, "rows": rows}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
