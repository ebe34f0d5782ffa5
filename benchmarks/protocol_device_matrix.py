#!/usr/bin/env python3
"""Which protocol runs on which emulated core, counted or with the reason (issue 40), and the what-if's
client compute against the count it was built from.

For every cell (protocol x core) the bench asks app/device_stacks.py which library counts the
protocol on that core (the default choice: the first stack that runs it), counts the full handshake
on the emulator through app/device_counts.py (the what-if's own path, cached under SECPERF_HOME),
and prints the library, the counted instructions, the timing model's milliseconds, or the reason
the cell cannot be counted. For the protocols beyond TLS (DTLS 1.2 and 1.3, EDHOC, QUIC) and their
abbreviated handshakes it then plans the same scenario with model.predict on the device's cost table
(until the client's handshake completes, loopback link) and compares the predicted client compute
with the counted cycles / clock. Target: within 5 % on every core where the protocol is counted.
Since the table's residual is fitted on that row, this checks the plumbing (the timer window, the
named operations inside it); the held-out column is a prediction proper: an abbreviated handshake
predicted from the full row alone (model.predict's rule for handshakes a device did not run),
printed for information, not a target.

    .venv/bin/python benchmarks/protocol_device_matrix.py [--cores C1,C2] [--protocols P1,P2] [--json OUT]

Exit status: 0 when every counted cell's prediction is within 5 % and at least TLS 1.3, DTLS 1.2,
DTLS 1.3 and EDHOC are counted on the Cortex-M4 and the Cortex-M33 and QUIC on the Cortex-A7 and A9.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from secperf.app import device_counts as DC
from secperf.app import device_stacks as DS
from secperf.core.errors import SecperfError
from secperf.inputs import netspec as NS
from secperf.inputs.devices import core as core_profile
from secperf.model import costs as C
from secperf.model import flights as F
from secperf.model import network as N
from secperf.model import predict as P

CORES = ("cortex-m0plus-64", "cortex-m4-80", "cortex-m33-160", "cortex-a7-800", "cortex-a9-400")
# protocol -> (what-if protocol, its full handshake, the abbreviated ones counted for the prediction check)
PROTOCOLS = {
    "tls1.3": ("tls1.3", "full", ()),
    "tls1.2": ("tls1.2", "full", ()),
    "dtls1.2": ("coap", "full", ()),
    "dtls1.3": ("dtls1.3", "full", ("resumed", "full-cid")),
    "edhoc": ("edhoc", "m3-kid", ()),
    "quic": ("quic", "full", ("resumed", "0rtt")),
}
NEW = ("dtls1.2", "dtls1.3", "edhoc", "quic")
MUST = {
    ("tls1.3", "cortex-m4-80"),
    ("dtls1.2", "cortex-m4-80"),
    ("dtls1.3", "cortex-m4-80"),
    ("edhoc", "cortex-m4-80"),
    ("tls1.3", "cortex-m33-160"),
    ("dtls1.2", "cortex-m33-160"),
    ("dtls1.3", "cortex-m33-160"),
    ("edhoc", "cortex-m33-160"),
    ("quic", "cortex-a7-800"),
    ("quic", "cortex-a9-400"),
}


def _scenario(proto: str, hs: str) -> F.Scenario:
    # EDHOC as the device's initiator runs it: P-256 (suite 2); the others with their defaults
    return F.Scenario(proto, hs, "p-256" if proto == "edhoc" else "x25519")


def _client_us(sc: F.Scenario, table: C.CostTable) -> float:
    """The what-if's client compute until the client's handshake completes (loopback link)."""
    pl = P.plan(sc, table, N.from_spec(NS.parse_networks(["loopback"])[0]), until="handshake")
    return sum(c["us"] for c in P.compute_breakdown(pl) if c["party"] == "client")


def _row(counts: DC.DeviceCounts, fam: str, mode: str):
    stack = counts.families[fam]
    for s in counts.per_stack[stack].doc.series:
        if s.kind == "device" and s.labels.get("tls") == fam and s.labels.get("mode") == mode:
            return s
    return None


def cell(core: str, name: str) -> list[dict]:
    """The cell's rows: the full handshake and (new protocols) the abbreviated ones counted."""
    proto, full, more = PROTOCOLS[name]
    prof = core_profile(core)
    hss = (full, *more) if name in NEW else (full,)
    scs = [_scenario(proto, h) for h in hss]
    t0 = time.monotonic()
    try:
        counts = DC.device_counts(prof, scs, quiet=True)
    except SecperfError as exc:
        return [{"core": core, "protocol": name, "handshake": full, "counted": False, "reason": str(exc)}]
    fam = DS.family(proto)
    out = []
    for sc in scs:
        mode = sc.handshake if fam in ("dtls1.3", "edhoc", "quic") else "full"
        s = _row(counts, fam, mode)
        r = {
            "core": core,
            "protocol": name,
            "handshake": sc.handshake,
            "stack": counts.families[fam],
            "library": counts.per_stack[counts.families[fam]].library,
            "seconds": round(time.monotonic() - t0, 1),
        }
        if s is None:
            r.update(counted=False, reason=f"no {mode} row was counted (see the device rows' failures)")
            out.append(r)
            continue
        us, _ = C.device_row_us(s.derived, prof)
        r.update(counted=True, instructions=s.derived["instructions_median"], counted_ms=us / 1e3)
        if name in NEW:
            try:
                pred = _client_us(sc, counts.table)
                r.update(predicted_ms=pred / 1e3, error=(pred - us) / us)
            except SecperfError as exc:
                r.update(predicted_ms=None, error=None, reason=f"not predicted: {exc}")
            if sc.handshake != full:  # held out: the same handshake predicted from the full row alone
                try:
                    held = _client_us(sc, DC.device_counts(prof, [scs[0]], quiet=True).table)
                    r.update(held_out_ms=held / 1e3, held_out_error=(held - us) / us)
                except SecperfError as exc:
                    r.update(held_out_reason=str(exc))
        out.append(r)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cores", default=",".join(CORES))
    ap.add_argument("--protocols", default=",".join(PROTOCOLS))
    ap.add_argument("--json")
    a = ap.parse_args()
    rows: list[dict] = []
    for core in a.cores.split(","):
        for name in a.protocols.split(","):
            got = cell(core, name)
            rows += got
            for r in got:
                if r["counted"]:
                    pred = (
                        ""
                        if r.get("predicted_ms") is None
                        else (f" predicted {r['predicted_ms']:.2f} ms ({r['error'] * 100:+.2f} %)")
                    )
                    if r.get("held_out_ms") is not None:
                        pred += (
                            f"; from the full row alone {r['held_out_ms']:.2f} ms ({r['held_out_error'] * 100:+.1f} %)"
                        )
                    print(
                        f"{core:17} {name:8} {r['handshake']:9} {r['library'][:34]:34} "
                        f"{r['instructions'] / 1e6:8.2f} M instr {r['counted_ms']:9.2f} ms{pred}",
                        flush=True,
                    )
                else:
                    print(f"{core:17} {name:8} {r['handshake']:9} not counted: {r['reason'][:150]}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    errs = [abs(r["error"]) for r in rows if r.get("error") is not None]
    missing = sorted(
        f"{p}@{c}" for p, c in MUST if not any(r["counted"] and r["protocol"] == p and r["core"] == c for r in rows)
    )
    print(
        f"\ncounted cells: {len({(r['core'], r['protocol']) for r in rows if r['counted']})} of "
        f"{len({(r['core'], r['protocol']) for r in rows})}; predicted vs counted client compute over "
        f"{len(errs)} rows: max |error| {max(errs, default=0) * 100:.2f} % (target <= 5 %)"
    )
    if missing:
        print("required cells not counted: " + ", ".join(missing))
    return 0 if not missing and all(e <= 0.05 for e in errs) else 1


if __name__ == "__main__":
    sys.exit(main())
