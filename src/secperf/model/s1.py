"""Study S1's acceleration estimate as a what-if: a PSK handshake (no Certificate, no
CertificateVerify), the key share generated ahead of time, and the fastest group fixed. S1 took its
measured per-message client table and set ClientHello, Certificate and CertificateVerify to zero;
this does the same with the calibration run's per-message table (or, without one, with the
cost table's operations per message), and the flight model + simulator give the whole set-up time
for full and accelerated handshakes over any link."""

from __future__ import annotations

from typing import Any

from . import flights as F
from .costs import CostTable, scenario_key

ZEROED = ("ClientHello (sent)", "Certificate (received)", "CertificateVerify (received)")


def fastest_group(table: CostTable) -> str:
    best, cost = "x25519", float("inf")
    for g, v in F.groups().items():
        if v["kind"] != "ecdhe":
            continue
        ops = (f"keygen:{v['alg']}", f"derive:{v['alg']}")
        if all(table.has("client", o) for o in ops):
            c = sum(table.get("client", o).us for o in ops)
            if c < cost:
                best, cost = g, c
    return best


def per_message(table: CostTable, group: str = "x25519", cert: str = "rsa-2048") -> dict[str, Any]:
    """Rows {message, full_us, accelerated_us, source} and totals."""
    key = scenario_key("tls1.3", "full", "software")
    measured = table.breakdowns.get(key)
    if measured:
        src = f"measured per-message client CPU ({table.measured.get(key, {}).get('series', 'calibration run')})"
        rows = [
            {
                "message": m["message"],
                "full_us": m["p50_cpu_us"],
                "accelerated_us": 0.0 if m["message"] in ZEROED else m["p50_cpu_us"],
                "source": src,
            }
            for m in measured
        ]
    else:
        g = F.groups()[group]

        def t(op: str) -> float:
            return table.get("client", op).us

        base = table.get("client", "base:client").us if table.has("client", "base:client") else 0.0
        rows = [
            {"message": "ClientHello (sent)", "full_us": t(f"keygen:{g['alg']}") + base * 0.1},
            {"message": "ServerHello (received)", "full_us": t(f"derive:{g['alg']}") + base * 0.3},
            {"message": "Certificate (received)", "full_us": t("parse_cert") + t(f"verify:{cert}")},
            {"message": "CertificateVerify (received)", "full_us": t(f"verify:{cert}")},
            {"message": "Finished (received)", "full_us": base * 0.3},
            {"message": "Finished (sent)", "full_us": base * 0.3},
        ]
        for r in rows:
            r["accelerated_us"] = 0.0 if r["message"] in ZEROED else r["full_us"]
            r["source"] = f"cost table {table.name} (operations per message; no calibration breakdown)"
    full = sum(r["full_us"] for r in rows)
    acc = sum(r["accelerated_us"] for r in rows)
    return {
        "rows": rows,
        "full_us": full,
        "accelerated_us": acc,
        "saving": 1 - acc / full if full else 0.0,
        "method": "S1: ClientHello (key share precomputed), Certificate and CertificateVerify (PSK) set to zero",
    }


def scenarios(table: CostTable, protocol: str = "tls1.3") -> list[tuple[str, F.Scenario]]:
    g = fastest_group(table)
    return [
        ("full handshake", F.Scenario(protocol, "full")),
        (
            f"S1 accelerated: psk_dhe_ke, {g} share precomputed",
            F.Scenario(protocol, "psk-dhe", group=g, precomputed_keyshare=True),
        ),
        ("psk_ke (no key exchange)", F.Scenario(protocol, "psk")),
    ]
