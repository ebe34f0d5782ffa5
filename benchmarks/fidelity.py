#!/usr/bin/env python3
"""Fidelity benchmark: `openssl speed` and `secperf crypto` measure the same operations in one run,
and we print secperf/openssl per operation (operations per second). It is the same library, so
any gap is our harness; target: every ratio within 0.95–1.05.

`openssl speed` times the process's user CPU time (unless -elapsed), so the comparison uses
secperf's thread-CPU-based rate (`cpu_ops_per_s`); wall-time rates are printed alongside. CPU time
is also what keeps the comparison meaningful on a shared machine, where wall time swings by
±30% between identical back-to-back runs. The two tools run in alternating rounds (openssl,
secperf, openssl, secperf, ...) and each ratio is the median of the per-round ratios. secperf signs a precomputed digest here (--prehashed), as openssl speed does; the
hash-included figure `secperf crypto` reports by default is printed alongside for reference.

Usage: python benchmarks/fidelity.py [--rounds 11] [--seconds 1] [--json OUT]
Exit status: 0 when every ratio is within the target band, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from secperf.core import host
from secperf.inputs.algorithms import Row, catalog
from secperf.measure import crypto as C

# (label, secperf alg, op, size, openssl speed args, how to read the -mr line)
CASES = [
    ("RSA-2048 sign", "rsa-2048", "sign", 32, ["rsa2048"], ("+F2:", 2048, 3)),
    ("RSA-2048 verify", "rsa-2048", "verify", 32, ["rsa2048"], ("+F2:", 2048, 4)),
    ("ECDSA P-256 sign", "ecdsa-p256", "sign", 32, ["ecdsap256"], ("+F4:", 256, 3)),
    ("ECDSA P-256 verify", "ecdsa-p256", "verify", 32, ["ecdsap256"], ("+F4:", 256, 4)),
    ("X25519 derive", "x25519", "derive", 32, ["ecdhx25519"], ("+F5:", 253, 3)),
    ("ECDH P-256 derive", "ecdh-p256", "derive", 32, ["ecdhp256"], ("+F5:", 256, 3)),
    ("Ed25519 sign", "ed25519", "sign", 32, ["ed25519"], ("+F6:", 253, 3)),
    (
        "AES-128-GCM 1024 B",
        "aes-128-gcm",
        "encrypt",
        1024,
        ["-aead", "-evp", "aes-128-gcm", "-bytes", "1024"],
        ("+F:", "AES-128-GCM", 3),
    ),
]
BAND = (0.95, 1.05)


def openssl_speed(args: list[str], seconds: int) -> dict[tuple, float]:
    """Run `openssl speed -mr` and return {(tag, key): ops_per_s-like numbers by field index}."""
    out = subprocess.run(
        ["openssl", "speed", "-seconds", str(seconds), "-mr", *args], capture_output=True, text=True, check=True
    ).stdout
    return parse_mr(out)


def parse_mr(text: str) -> dict[tuple, list[str]]:
    rows = {}
    for line in text.splitlines():
        if not line.startswith("+F"):
            continue
        parts = line.split(":")
        tag = parts[0] + ":"
        if tag == "+F6:":  # +F6:idx:bits:name:sign/s:verify/s
            key, fields = int(parts[2]), [parts[0], parts[1], parts[2]] + parts[4:]
        elif tag == "+F:":  # +F:idx:NAME:bytes/s per size
            key, fields = parts[2], parts
        else:  # +F2/+F4/+F5:idx:bits:ops/s:...
            key, fields = int(parts[2]), parts
        rows[(tag, key)] = fields
    return rows


def openssl_ops_per_s(rows: dict, case) -> float:
    tag, key, field = case[5]
    fields = rows[(tag, key)]
    value = float(fields[field])
    if tag == "+F:":  # bytes/s at the single -bytes size
        value /= case[3]
    return value


def secperf_ops_per_s(alg: str, op: str, size: int, seconds: float, prehashed: bool) -> tuple[float, float]:
    """(CPU-time-based ops/s, wall-time-based ops/s)"""
    a = catalog()[alg]
    p = C.CryptoParams(n=10_000, warmup=3, duration_s=seconds, prehashed=prehashed)
    series, _meta = C.measure_row(Row(a, op, size), p)
    if not series["values_us"]:
        raise RuntimeError(f"secperf failed on {alg} {op}: {series['failures']}")
    return series["derived"]["cpu_ops_per_s"], series["derived"]["ops_per_s"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--seconds", type=int, default=1, help="per tool, per operation, per round")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args()

    groups: dict[tuple, list] = {}
    for case in CASES:
        groups.setdefault(tuple(case[4]), []).append(case)
    ratios: dict[str, list[float]] = {c[0]: [] for c in CASES}
    figures: dict[str, dict] = {c[0]: {"openssl": [], "secperf": [], "secperf_wall": []} for c in CASES}
    t0 = time.monotonic()
    for r in range(args.rounds):
        for speed_args, cases in groups.items():
            rows = openssl_speed(list(speed_args), args.seconds)
            for case in cases:
                ref = openssl_ops_per_s(rows, case)
                ours, ours_wall = secperf_ops_per_s(case[1], case[2], case[3], args.seconds, prehashed=True)
                figures[case[0]]["openssl"].append(ref)
                figures[case[0]]["secperf"].append(ours)
                figures[case[0]]["secperf_wall"].append(ours_wall)
                ratios[case[0]].append(ours / ref)
        print(f"round {r + 1}/{args.rounds} done ({time.monotonic() - t0:.0f} s)", file=sys.stderr)

    hashed = {}
    for case in CASES:
        if case[2] in ("sign", "verify") and case[1].startswith(("rsa", "ecdsa")):
            hashed[case[0]] = secperf_ops_per_s(case[1], case[2], case[3], args.seconds, prehashed=False)[0]

    ok = True
    report = []
    print(f"{'operation':<22}{'openssl ops/s':>15}{'secperf ops/s':>15}{'ratio':>8}  verdict   (per-round ratios)")
    for case in CASES:
        name = case[0]
        ratio = statistics.median(ratios[name])
        ref = statistics.median(figures[name]["openssl"])
        ours = statistics.median(figures[name]["secperf"])
        wall = statistics.median(figures[name]["secperf_wall"])
        inside = BAND[0] <= ratio <= BAND[1]
        ok &= inside
        extra = f"; wall-time rate {wall:.0f} ops/s" + (
            f"; with hashing: {hashed[name]:.0f} ops/s" if name in hashed else ""
        )
        print(
            f"{name:<22}{ref:>15.0f}{ours:>15.0f}{ratio:>8.3f}  {'ok' if inside else 'OUTSIDE'}"
            f"   ({', '.join(f'{x:.3f}' for x in ratios[name])}){extra}"
        )
        report.append(
            {
                "operation": name,
                "alg": case[1],
                "op": case[2],
                "size_bytes": case[3],
                "openssl_ops_per_s": ref,
                "secperf_cpu_ops_per_s": ours,
                "secperf_wall_ops_per_s": wall,
                "ratio": ratio,
                "round_ratios": ratios[name],
                "secperf_hashed_ops_per_s": hashed.get(name),
                "inside_band": inside,
            }
        )
    print(f"target band {BAND[0]}–{BAND[1]}: {'all inside' if ok else 'some outside'}")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"benchmark": "fidelity", "band": BAND, "rows": report, "host": host.collect()}, indent=1)
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
