"""A device what-if across groups and suites against the device's own measurement (issues 13 and 18).

For each emulated core and TLS stack: count the primitives (`secperf device crypto`) and the TLS
handshakes (`secperf device handshake`, X25519 and P-256 x AES-128-GCM and ChaCha20-Poly1305, warm
rows). Calibrate the what-if's device cost table on the primitive counts and ONE handshake row (X25519,
AES-128-GCM), then predict the client's handshake compute of every other row (another group, another
suite) and print it next to the measured count turned into time the same way (instructions x mid CPI /
clock). Both sides are derived from instruction counts; the comparison tests the cost model (which
operations a handshake does and what each costs), not the CPI estimate, which cancels.

--psk adds study S1's accelerated handshake: for each TLS 1.3 stack that offers it, the external-PSK
handshake with an ECDHE share (`--mode psk`, psk_dhe_ke) is measured and predicted from the same table
(calibrated on the FULL handshake row only) as the model's `psk-dhe` handshake.

    .venv/bin/python benchmarks/whatif_device.py [--devices cortex-a9-400,cortex-m4-120]
        [--stacks wolfssl:1.3,mbedtls3:1.3,mbedtls:1.2] [--psk] [--results DIR] [--reuse]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from secperf.inputs import devices as D
from secperf.inputs import netspec as NS
from secperf.model import costs as C
from secperf.model import flights as F
from secperf.model import network as N
from secperf.model import predict as P
from secperf.sim import montecarlo as M

SECPERF = str(Path(sys.executable).with_name("secperf"))
CAL = ("x25519", "aes128gcm")  # the one handshake row the table is calibrated on


def run(argv: list[str], out: Path, name: str, reuse: bool) -> dict:
    f = out / f"{name}.json"
    if reuse and f.exists():
        return json.loads(f.read_text())
    p = subprocess.run(
        [SECPERF, *argv, "--json", "--no-report", "--out", str(out / "results")],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if p.returncode not in (0, 1):
        raise SystemExit(f"secperf {' '.join(argv)} exited {p.returncode}: {p.stderr.strip()[-400:]}")
    f.write_text(p.stdout)
    print(f"  {' '.join(argv)}: exit {p.returncode}", file=sys.stderr)
    return json.loads(p.stdout)


def warm_rows(doc: dict) -> list[dict]:
    return [
        s
        for s in doc["series"]
        if s.get("kind") == "device"
        and s["labels"].get("phase") == "warm"
        and s.get("status") in ("ok", "partial")
        and (s.get("derived") or {}).get("instructions_median")
    ]


def only(doc: dict, rows: list[dict]) -> dict:
    return {**doc, "series": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="cortex-a9-400,cortex-m4-120")
    ap.add_argument("--stacks", default="wolfssl:1.3,mbedtls3:1.3,mbedtls:1.2", help="STACK:TLS, comma list")
    ap.add_argument("--n", type=int, default=3, help="warm handshakes per configuration")
    ap.add_argument("--results", default="/tmp/secperf-whatif-device")
    ap.add_argument("--reuse", action="store_true", help="predict again from the Results in DIR")
    ap.add_argument("--sim-n", type=int, default=20_000)
    ap.add_argument("--psk", action="store_true", help="also measure and predict the TLS 1.3 external-PSK handshake")
    args = ap.parse_args()
    out = Path(args.results)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for dev in [d.strip() for d in args.devices.split(",") if d.strip()]:
        core = D.core(dev)
        stacks = [x.split(":") for x in args.stacks.split(",") if x.strip()]
        crypto = run(
            ["device", "crypto", "--device", dev, "--stack", ",".join(s for s, _ in stacks)],
            out,
            f"crypto-{dev}",
            args.reuse,
        )
        for stack, tls in stacks:
            hs = run(
                [
                    "device",
                    "handshake",
                    "--device",
                    dev,
                    "--stack",
                    stack,
                    "--tls",
                    tls,
                    "--group",
                    "x25519,p-256",
                    "--suite",
                    "aes128gcm,chacha20",
                    "--n",
                    str(args.n),
                ],
                out,
                f"handshake-{dev}-{stack}-{tls}",
                args.reuse,
            )
            warm = warm_rows(hs)
            cal = [s for s in warm if (s["labels"]["group"], s["labels"]["suite"]) == CAL]
            if args.psk and tls == "1.3":
                psk = run(
                    [
                        "device",
                        "handshake",
                        "--device",
                        dev,
                        "--stack",
                        stack,
                        "--tls",
                        tls,
                        "--mode",
                        "psk",
                        "--group",
                        "x25519,p-256",
                        "--suite",
                        "aes128gcm",
                        "--n",
                        str(args.n),
                    ],
                    out,
                    f"handshake-{dev}-{stack}-{tls}-psk",
                    args.reuse,
                )
                warm = warm + warm_rows(psk)
            if not cal:
                rows.append({"device": dev, "stack": stack, "tls": tls, "missing": "no X25519/AES-GCM warm row"})
                continue
            try:
                table = C.from_device(crypto, core, C.load_table(), where=f"crypto-{dev}", stack=stack)
                table = C.from_device(only(hs, cal), core, table, where=f"handshake-{dev}-{stack}", stack=stack)
            except C.CalibrationError as exc:
                rows.append({"device": dev, "stack": stack, "tls": tls, "missing": str(exc)})
                continue
            for s in warm:
                lab = s["labels"]
                measured_us, _ = C.device_us(float(s["derived"]["instructions_median"]), core)
                mode = "psk-dhe" if lab.get("mode") == "psk" else "full"
                sc = F.Scenario(
                    f"tls{tls}", mode, group=C.DEVICE_GROUPS[lab["group"]], cert=lab.get("server_cert") or "rsa-2048"
                )
                try:
                    r = M.simulate(P.plan(sc, table, N.from_spec(NS.parse("loopback"))), args.sim_n, 1)
                except C.MissingCost as exc:
                    rows.append(
                        {
                            "device": dev,
                            "stack": stack,
                            "tls": tls,
                            "group": lab["group"],
                            "suite": lab["suite"],
                            "missing": str(exc),
                        }
                    )
                    continue
                pred_us = r["breakdown_mean_us"]["client_compute"]
                s1 = None
                if mode != "full":
                    # study S1's own estimate: the measured full handshake (same group and suite) without
                    # the messages a PSK handshake does not have (the server's Certificate and its check)
                    fr = [
                        x
                        for x in warm
                        if x["labels"].get("mode", "full") == "full"
                        and (x["labels"]["group"], x["labels"]["suite"]) == (lab["group"], lab["suite"])
                    ]
                    if fr:
                        drop = sum(
                            m["instructions"]
                            for m in fr[0]["derived"]["messages"]
                            if m["dir"] == "received" and m["message"] in ("Certificate", "CertificateVerify")
                        )
                        s1 = C.device_us(float(fr[0]["derived"]["instructions_median"] - drop), core)[0]
                rows.append(
                    {
                        "device": dev,
                        "stack": stack,
                        "library": lab.get("library"),
                        "tls": tls,
                        "group": lab["group"],
                        "suite": lab["suite"] + ("/psk" if mode != "full" else ""),
                        "calibration": (lab["group"], lab["suite"]) == CAL and mode == "full",
                        "instructions": s["derived"]["instructions_median"],
                        "measured_ms": measured_us / 1e3,
                        "predicted_ms": pred_us / 1e3,
                        "err": (pred_us - measured_us) / measured_us,
                        **({"s1_ms": s1 / 1e3, "s1_err": (s1 - measured_us) / measured_us} if s1 else {}),
                    }
                )
    print(
        f"{'device':15} {'stack':9} {'TLS':>3} {'group':7} {'suite':10} {'instructions':>13} {'measured ms':>12} "
        f"{'predicted ms':>13} {'err':>7}"
    )
    for r in rows:
        if "missing" in r:
            print(
                f"{r['device']:15} {r['stack']:9} {r['tls']:>3} {r.get('group', ''):7} {r.get('suite', ''):10} "
                f"(not predicted: {r['missing'][:120]})"
            )
            continue
        tag = "  (calibration row)" if r["calibration"] else ""
        if "s1_ms" in r:
            tag = f"  | S1 per-message (full - Certificate - CertificateVerify): {r['s1_ms']:.2f} ms {r['s1_err'] * 100:+.1f}%"
        print(
            f"{r['device']:15} {r['stack']:9} {r['tls']:>3} {r['group']:7} {r['suite']:10} {r['instructions']:13,.0f} "
            f"{r['measured_ms']:12.2f} {r['predicted_ms']:13.2f} {r['err'] * 100:+6.1f}%{tag}"
        )
    val = [r for r in rows if "err" in r and not r["calibration"]]
    if val:
        e = [abs(r["err"]) for r in val]
        worst = max(val, key=lambda r: abs(r["err"]))
        print(
            f"\n{len(val)} predicted rows (calibration rows excluded): median |error| {statistics.median(e) * 100:.1f}%, "
            f"worst {max(e) * 100:.1f}% ({worst['device']} {worst['stack']} {worst['group']} {worst['suite']}); "
            f"times are derived: instructions x mid CPI / clock on both sides"
        )
    s1 = [r for r in rows if "s1_err" in r]
    if s1:
        print(
            f"{len(s1)} PSK rows: the model (named operations + the full handshake's residual) median |error| "
            f"{statistics.median(abs(r['err']) for r in s1) * 100:.1f}%, worst {max(abs(r['err']) for r in s1) * 100:.1f}%; "
            f"S1's per-message estimate median {statistics.median(abs(r['s1_err']) for r in s1) * 100:.1f}%, "
            f"worst {max(abs(r['s1_err']) for r in s1) * 100:.1f}%"
        )
    (out / "validation.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
