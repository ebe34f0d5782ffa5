#!/usr/bin/env python3
"""Shim overhead benchmark: the secure-element latency shim with no delay configured must add at
most 50 µs per PKCS#11 call. secperf-shim-bench times C_GetSessionInfo and C_GenerateRandom(16)
against SoftHSM2 directly and through the shim, alternating, in one run; this prints both and
the difference per call against the target.

Usage: python benchmarks/shim_overhead.py [--n 20000] [--rounds 3] [--json OUT]
Exit status: 0 when every added cost is within 50 µs, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from secperf.core import host
from secperf.core.native import find_native, find_shim
from secperf.inputs.se_profiles import get_profile, write_shim_config
from secperf.lab.token import LabToken

TARGET_NS = 50_000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    token = LabToken().ensure()
    conf = Path(tempfile.mkdtemp(prefix="secperf-shimbench-")) / "nodelay.conf"
    write_shim_config(get_profile("softhsm"), token.module_path, os.devnull, 1, conf)
    env = dict(os.environ, **token.env(), SECPERF_SE_PROFILE=str(conf))
    env.pop("SECPERF_SE_LOG", None)
    out = subprocess.run(
        [
            str(find_native("secperf-shim-bench", "bin", None, "native/se_shim")),
            "--direct",
            str(token.module_path),
            "--shim",
            str(find_shim()),
            "--n",
            str(args.n),
            "--rounds",
            str(args.rounds),
            "--token-label",
            token.label,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if out.returncode != 0:
        print(out.stderr.strip() or out.stdout.strip(), file=sys.stderr)
        return 1
    res = json.loads(out.stdout.strip().splitlines()[-1])
    ok = True
    print(f"{'call':<20}{'direct':>12}{'through shim':>14}{'added':>10}   target <= {TARGET_NS / 1000:.0f} µs")
    for fn, added in res["overhead_ns"].items():
        inside = added <= TARGET_NS
        ok &= inside
        print(
            f"{fn:<20}{res['direct_ns'][fn]:>10} ns{res['shim_ns'][fn]:>11} ns{added:>8} ns   {'ok' if inside else 'OUTSIDE'}"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"benchmark": "shim_overhead", "target_ns": TARGET_NS, **res, "host": host.collect()}, indent=1)
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
