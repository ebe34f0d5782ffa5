"""EDHOC + OSCORE on the emulated cores: instructions and the timing model's milliseconds per initiator
step of secperf's C initiator (native/device/edhoc_c) on the crypto of the mbedtls3 and wolfssl59
builds, counted under qemu-arm against the host's lakers responder (measure/edhoc_device.py), next to
the counts lakers (RustCrypto) gave when it was cross-built for the Cortex-M4F (the earlier
implementation).

    .venv/bin/python benchmarks/edhoc_device.py [--n 3] [--warmup 1] [--cores cortex-m4-80,cortex-m33-160]
        [--stacks mbedtls3,wolfssl59] [--variant m3-kid] [--json FILE]

Needs what scripts/bootstrap installs (gcc-arm-linux-gnueabihf, gcc-arm-none-eabi for the Cortex-M0+,
qemu-user, the Mbed TLS 3.6 sources); builds at first use into $SECPERF_HOME/device/build.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from secperf.core.errors import InputError, SetupError
from secperf.inputs.devices import resolve_core
from secperf.measure import edhoc_device as E

# lakers 0.6.2 (RustCrypto p256) cross-built for thumbv7em-none-eabihf, method 3, suite 2, kid:
# instructions per initiator step (docs/explanation/protocols-beyond-tls.md, the earlier device rows)
LAKERS = {"message_1": 5_063_457, "message_2": 15_983_530, "message_3": 107_396, "oscore_export": 23_546}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--cores", default="cortex-m4-80,cortex-m33-160")
    ap.add_argument("--stacks", default="mbedtls3,wolfssl59")
    ap.add_argument("--variant", default="m3-kid")
    ap.add_argument("--json", help="write the warm series' figures here")
    a = ap.parse_args()
    out = {}
    for core, stack in ((c, s) for c in a.cores.split(",") for s in a.stacks.split(",")):
        t0 = time.monotonic()
        try:
            cold, warm = E.measure(resolve_core(core), a.variant, a.n, a.warmup, stack=stack)
        except (InputError, SetupError) as exc:
            print(f"{core}: {exc}", file=sys.stderr)
            return 2
        d = warm.derived
        print(
            f"\n{core}: {warm.labels['library']}, {a.variant}, "
            f"{len(warm.samples)} warm handshakes, {time.monotonic() - t0:.0f} s with the build and the emulation"
        )
        print(f"{'step':18} {'instructions':>13} {'model ms':>9} {'band ms':>17} {'lakers (M4F)':>13}")
        rows = list(d.messages) + list(d.app_messages)
        for r in rows:
            t = r.get("time") or {}
            band = f"{t['ms_low']:.1f}-{t['ms_high']:.1f}" if t else "-"
            lk = LAKERS.get(r["message"])
            print(
                f"{r['message']:18} {r['instructions']:13,d} {t.get('ms', float('nan')):9.1f} {band:>17} "
                f"{'-' if lk is None else format(lk, ','):>13}"
            )
        tm = d.time
        total_ms = f"{tm.ms:.1f} ms (band {tm.ms_low:.1f}-{tm.ms_high:.1f})" if tm else "no timing model"
        print(f"{'handshake':18} {d.instructions_median:13,.0f} {total_ms}; lakers {sum(LAKERS.values()):,}")
        print(f"cold handshake: {cold.derived.instructions_median:,.0f} instructions; sizes {d.sizes}")
        out[f"{core}/{stack}"] = {
            "instructions_median": d.instructions_median,
            "time_ms": tm.ms if tm else None,
            "steps": {
                r["message"]: {"instructions": r["instructions"], "ms": (r.get("time") or {}).get("ms")} for r in rows
            },
            "library": warm.labels["library"],
            "sizes": d.sizes,
        }
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
