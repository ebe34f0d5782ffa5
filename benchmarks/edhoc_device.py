"""EDHOC on the emulated Cortex-M cores (issue 33): instruction counts per initiator message of
lakers (method 3, suite 2, kid) cross-built for the Cortex-M4F and counted under qemu-arm
(measure/edhoc_device.py), and the time each core's CPI model derives from them.

    .venv/bin/python benchmarks/edhoc_device.py [--n 4] [--cores cortex-m4-80,cortex-m4-168,cortex-m33-128]

Needs cargo with the thumbv7em-none-eabihf target, gcc-arm-linux-gnueabihf, qemu-user and the
counting plugin (built by `secperf device crypto --device cortex-m4-80`).
"""

from __future__ import annotations

import argparse
import json
import sys

from secperf.measure import edhoc_device as D
from secperf.model.costs import device_us
from secperf.inputs.devices import core


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--cores", default="cortex-m4-80,cortex-m4-168,cortex-m33-128")
    ap.add_argument("--json", help="write the counts and times here")
    a = ap.parse_args()
    counted = D.count("cortex-m4", a.n)          # one build, one count: the cores run the same code
    print(f"lakers EDHOC on {counted['code']}; sizes {counted['sizes']}")
    print(f"{'step':16} {'instructions':>14}")
    for k, v in counted["instructions"].items():
        print(f"{k:16} {v:14,.0f}")
    print(f"{'initiator':16} {counted['initiator_total']:14,.0f}")
    rows = []
    for name in a.cores.split(","):
        c = core(name)
        us, rule = device_us(counted["initiator_total"], c)
        rows.append({"core": name, "initiator_ms": us / 1e3, "rule": rule})
        print(f"{name:16} initiator {us / 1e3:8.1f} ms  ({rule})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"counts": counted, "cores": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
