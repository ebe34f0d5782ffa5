"""Study S5's questions answered from a crypto Result's own data: sign vs verify for RSA and
ECDSA, growth with RSA modulus size and with the curve, RSA vs ECDSA at equal strength; plus
S3's CRT speed-up. Every answer lists the figures it rests on (P50 per operation)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..core import stats
from ..core.result_schema import Result, Series
from ..inputs.algorithms import STRENGTH_ROWS


def backend_of(series: Series) -> str:
    """The --library a crypto series ran in (results from before --library: openssl)."""
    return str(series.labels.get("backend") or "openssl")


def p50_table(doc: Result, library: str = "openssl") -> dict[tuple[str, str], float]:
    """(alg, op) -> P50 µs per operation, for one library's non-bulk series that produced data."""
    out = {}
    for s in doc.series:
        lab = s.labels
        if (
            s.kind == "crypto"
            and s.summary
            and lab.get("family") not in ("aead", "mac", "hash")
            and backend_of(s) == library
        ):
            out[(lab["alg"], lab["op"])] = s.summary.p50_us
    return out


def _labels(doc: Result, library: str = "openssl") -> dict[str, dict[str, Any]]:
    return {s.labels["alg"]: s.labels for s in doc.series if s.kind == "crypto" and backend_of(s) == library}


def _fmt_ratio(x: float) -> str:
    return f"{x:.1f}×" if x < 100 else f"{x:.0f}×"


def loglog_slope(points: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of log(y) against log(x): cost ∝ x^slope."""
    pts = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    if sxx == 0:
        return None
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx


def _rsa_sizes(t: Mapping[tuple[str, str], float], labels: Mapping[str, Any], suffix: str = "") -> list[int]:
    sizes = []
    for alg, _op in t:
        if (
            alg.startswith("rsa-")
            and alg.removeprefix("rsa-").isascii()
            and alg.removeprefix("rsa-").isdigit()
            and not suffix
        ):
            sizes.append(int(alg.removeprefix("rsa-")))
    return sorted(set(sizes))


def answers(doc: Result, library: str = "openssl") -> list[dict[str, Any]]:
    """S5's answers from one library's rows (default: OpenSSL, as before --library existed)."""
    t = p50_table(doc, library)
    labels = _labels(doc, library)
    out: list[dict[str, Any]] = []

    # Q1: RSA sign vs verify
    rsa = [b for b in _rsa_sizes(t, labels) if (f"rsa-{b}", "sign") in t and (f"rsa-{b}", "verify") in t]
    if rsa:
        ratios = [(b, t[(f"rsa-{b}", "sign")] / t[(f"rsa-{b}", "verify")]) for b in rsa]
        faster = "verifying" if all(r > 1 for _, r in ratios) else "mixed"
        out.append(
            {
                "id": "rsa-sign-vs-verify",
                "question": "RSA: which is faster, signing or verifying?",
                "answer": (
                    f"Verifying is faster: one signature costs as much as "
                    f"{', '.join(f'{r:.0f} verifications at {b} bits' for b, r in ratios)} "
                    f"(public exponent 65537 against a full-size private exponent)."
                    if faster == "verifying"
                    else "Mixed: " + ", ".join(f"rsa-{b} sign/verify {r:.2f}" for b, r in ratios)
                ),
                "evidence": [
                    {
                        "alg": f"rsa-{b}",
                        "sign_p50_us": t[(f"rsa-{b}", "sign")],
                        "verify_p50_us": t[(f"rsa-{b}", "verify")],
                        "sign_over_verify": r,
                    }
                    for b, r in ratios
                ],
            }
        )

    # Q2: ECDSA sign vs verify
    curves = sorted({a for (a, _o) in t if a.startswith("ecdsa-")}, key=lambda a: labels.get(a, {}).get("key_bits", 0))
    ec = [a for a in curves if (a, "sign") in t and (a, "verify") in t]
    if ec:
        ec_ratios = [(a, t[(a, "verify")] / t[(a, "sign")]) for a in ec]
        sign_faster = [a for a, r in ec_ratios if r > 1]
        verify_faster = [a for a, r in ec_ratios if r <= 1]
        lo, hi = min(r for _, r in ec_ratios), max(r for _, r in ec_ratios)
        if not verify_faster:
            verdict = (
                f"Signing is faster on every curve measured: a verification costs {lo:.1f}–{hi:.1f}× "
                f"a signature (two scalar multiplications against one with a fixed base point) — "
                f"the opposite of RSA."
            )
        else:
            verdict = (
                f"It depends on the implementation: signing is faster on {', '.join(sign_faster) or 'none'} "
                f"(verify/sign up to {hi:.1f}×), verifying is faster on {', '.join(verify_faster)} "
                f"(verify/sign down to {lo:.2f}). In theory verification costs more (two scalar "
                f"multiplications); where the library has no optimised code for a curve, its "
                f"constant-time signing path costs more than the variable-time verification."
            )
        out.append(
            {
                "id": "ecdsa-sign-vs-verify",
                "question": "ECDSA: which is faster, signing or verifying?",
                "answer": verdict,
                "evidence": [
                    {"alg": a, "sign_p50_us": t[(a, "sign")], "verify_p50_us": t[(a, "verify")], "verify_over_sign": r}
                    for a, r in ec_ratios
                ],
            }
        )

    # Q3: growth with RSA size
    for op in ("sign", "verify"):
        pts = [(b, t[(f"rsa-{b}", op)]) for b in _rsa_sizes(t, labels) if (f"rsa-{b}", op) in t]
        k = loglog_slope(pts)
        if k is None:
            continue
        out.append(
            {
                "id": f"rsa-growth-{op}",
                "question": f"RSA: how does {op} cost grow with the modulus size?",
                "answer": (
                    f"{op.capitalize()} time grows about as bits^{k:.2f}: ×{2**k:.1f} per doubling of "
                    f"the modulus (from {pts[0][0]} to {pts[-1][0]} bits: ×{pts[-1][1] / pts[0][1]:.1f}). "
                    + (
                        "Theory: ~bits^3 for the private operation."
                        if op == "sign"
                        else "Theory: ~bits^2 with the small public exponent."
                    )
                ),
                "evidence": [{"alg": f"rsa-{b}", "key_bits": b, f"{op}_p50_us": v} for b, v in pts],
                "exponent": k,
            }
        )

    # Q4: growth with the curve
    sign_pts = [(labels[a]["key_bits"], a, t[(a, "sign")]) for a in curves if (a, "sign") in t]
    if len({b for b, _a, _v in sign_pts}) >= 2:
        sign_pts.sort()
        nonmono = [(a2, a1) for (b1, a1, v1), (b2, a2, v2) in zip(sign_pts, sign_pts[1:]) if b2 > b1 and v2 < v1]
        k = loglog_slope([(b, v) for b, _a, v in sign_pts])
        text = (
            f"Across curves from {sign_pts[0][0]} to {sign_pts[-1][0]} bits, signing goes from "
            f"{sign_pts[0][2]:.1f} µs ({sign_pts[0][1]}) to {sign_pts[-1][2]:.1f} µs ({sign_pts[-1][1]})"
            + (f", roughly field-bits^{k:.1f}" if k else "")
            + "."
        )
        if nonmono:
            text += (
                " Cost is not monotonic in the field size: "
                + "; ".join(f"{big} is faster than the smaller {small}" for big, small in nonmono)
                + " — a curve with a dedicated optimised implementation in the library beats generic code."
            )
        out.append(
            {
                "id": "ecdsa-growth",
                "question": "ECDSA: how does cost change with the curve?",
                "answer": text,
                "evidence": [
                    {"alg": a, "key_bits": b, "sign_p50_us": v, "verify_p50_us": t.get((a, "verify"))}
                    for b, a, v in sign_pts
                ],
            }
        )

    # Q5: RSA vs ECDSA at equal strength
    rows: list[dict[str, Any]] = []
    for strength in STRENGTH_ROWS:
        rs = [
            a
            for a in labels
            if a.startswith("rsa-")
            and a.removeprefix("rsa-").isascii()
            and a.removeprefix("rsa-").isdigit()
            and labels[a]["security_bits"] == strength
            and (a, "sign") in t
        ]
        es = [
            a for a in labels if a.startswith("ecdsa-") and labels[a]["security_bits"] == strength and (a, "sign") in t
        ]
        if not rs or not es:
            continue
        r = min(rs, key=lambda a: labels[a]["key_bits"])
        e = "ecdsa-p256" if "ecdsa-p256" in es else min(es, key=lambda a: t[(a, "sign")])
        row: dict[str, Any] = {
            "security_bits": strength,
            "rsa": r,
            "ecdsa": e,
            "rsa_sign_p50_us": t[(r, "sign")],
            "ecdsa_sign_p50_us": t[(e, "sign")],
            "sign_rsa_over_ecdsa": t[(r, "sign")] / t[(e, "sign")],
        }
        if (r, "verify") in t and (e, "verify") in t:
            row.update(
                rsa_verify_p50_us=t[(r, "verify")],
                ecdsa_verify_p50_us=t[(e, "verify")],
                verify_rsa_over_ecdsa=t[(r, "verify")] / t[(e, "verify")],
            )
        rows.append(row)
    if rows:
        parts = []
        for row in rows:
            ratio: float = row["sign_rsa_over_ecdsa"]
            s = (
                f"{row['security_bits']}-bit: {row['rsa']} signs {_fmt_ratio(ratio if ratio >= 1 else 1 / ratio)} "
                f"{'slower' if ratio >= 1 else 'faster'} than {row['ecdsa']}"
            )
            if "verify_rsa_over_ecdsa" in row:
                v: float = row["verify_rsa_over_ecdsa"]
                s += f" and verifies {_fmt_ratio(1 / v if v < 1 else v)} {'faster' if v < 1 else 'slower'}"
            parts.append(s)
        out.append(
            {
                "id": "rsa-vs-ecdsa-equal-strength",
                "question": "RSA vs ECDSA at equal security strength (NIST SP 800-57)?",
                "answer": "; ".join(parts)
                + "."
                + (
                    " For signing, RSA falls further behind as strength grows: RSA moduli grow much faster than curves."
                    if len(rows) > 1
                    and all(a["sign_rsa_over_ecdsa"] < b["sign_rsa_over_ecdsa"] for a, b in zip(rows, rows[1:]))
                    else ""
                ),
                "evidence": rows,
            }
        )

    # S3: CRT
    crt = [
        (b, t[(f"rsa-{b}-nocrt", "sign")] / t[(f"rsa-{b}", "sign")])
        for b in _rsa_sizes(t, labels)
        if (f"rsa-{b}-nocrt", "sign") in t and (f"rsa-{b}", "sign") in t
    ]
    if crt:
        out.append(
            {
                "id": "rsa-crt-speedup",
                "question": "RSA private operation: what does the CRT save (study S3)?",
                "answer": "Without CRT the private operation is "
                + ", ".join(f"{r:.1f}× slower at {b} bits" for b, r in crt)
                + " (theory: about 3–4×: two half-size exponentiations instead of one full-size).",
                "evidence": [{"key_bits": b, "nocrt_over_crt": r} for b, r in crt],
            }
        )
    return out


def strength_table(doc: Result, strength: int, library: str = "openssl") -> list[dict[str, Any]]:
    """Every measured non-bulk algorithm at one strength, fastest sign/derive first."""
    t = p50_table(doc, library)
    labels = _labels(doc, library)
    rows = []
    for alg, lab in labels.items():
        if lab["security_bits"] != strength or lab["family"] in ("aead", "mac", "hash"):
            continue
        ops = {op: v for (a, op), v in t.items() if a == alg}
        if ops:
            rows.append(
                {
                    "alg": alg,
                    "family": lab["family"],
                    "key_bits": lab.get("key_bits"),
                    **{f"{op}_p50_us": v for op, v in ops.items()},
                }
            )

    def key(r: dict[str, Any]) -> float:
        return float(r.get("sign_p50_us") or r.get("derive_p50_us") or r.get("encaps_p50_us") or math.inf)

    return sorted(rows, key=key)


# --- across libraries (`secperf crypto --library`) ---


def libraries_in(doc: Result) -> list[str]:
    """The libraries of a Result's crypto series, in the order they first appear."""
    seen: dict[str, None] = {}
    for s in doc.series:
        if s.kind == "crypto":
            seen.setdefault(backend_of(s), None)
    return list(seen)


def library_table(doc: Result) -> list[dict[str, Any]]:
    """One row per (algorithm, operation, size) with a cell per library: P50 and its bootstrap 95%
    interval, or the status and reason (unsupported rows say which library lacks what), and each
    library's ratio to the fastest. Rows in SP 800-57 strength order."""
    rows: dict[tuple[str, str, int | None], dict[str, Any]] = {}
    values: dict[tuple[str, str, int | None], dict[str, list[float]]] = {}
    for s in doc.series:
        if s.kind != "crypto":
            continue
        lab, sm = s.labels, s.summary
        key = (lab["alg"], lab["op"], lab["size_bytes"] if lab["family"] in ("aead", "mac", "hash") else None)
        row = rows.setdefault(
            key,
            {
                "alg": lab["alg"],
                "op": lab["op"],
                "family": lab["family"],
                "size_bytes": key[2],
                "security_bits": lab["security_bits"],
                "key_bits": lab.get("key_bits"),
                "cells": {},
            },
        )
        cell: dict[str, Any] = {"status": s.status, "library": lab.get("library"), "version": lab.get("version")}
        if sm:
            cell.update(p50_us=sm.p50_us, ci95_us=list(sm.median_ci95_us), n=sm.n)
            cpu = s.cpu_summary.p50_us if s.cpu_summary is not None else None
            if cpu and sm.p50_us > 0:
                # thread CPU per operation, and the share of the wall time the thread was on a CPU:
                # well below 1 means the machine was busy and the wall time includes waiting
                cell.update(cpu_p50_us=cpu, cpu_share=min(1.0, cpu / sm.p50_us))
        if s.failures:
            cell["reason"] = s.failures[-1].reason
        rows[key]["cells"][backend_of(s)] = cell
        if sm and s.values_us:
            values.setdefault(key, {})[backend_of(s)] = s.values_us
    out = []
    for key, row in rows.items():
        measured = {lib: c["p50_us"] for lib, c in row["cells"].items() if c.get("p50_us")}
        if measured:
            fastest = min(measured, key=lambda lib: measured[lib])
            row["fastest"] = fastest
            vals = values.get(key, {})
            for lib, v in measured.items():
                cell = row["cells"][lib]
                cell["ratio_to_fastest"] = v / measured[fastest]
                # bootstrap 95% interval of the ratio of medians (each library's samples resampled)
                if lib != fastest and lib in vals and fastest in vals:
                    cell["ratio_ci95"] = list(stats.bootstrap_ratio_ci(vals[lib], vals[fastest]))
            cpus = {lib: c["cpu_p50_us"] for lib, c in row["cells"].items() if c.get("p50_us") and c.get("cpu_p50_us")}
            if cpus:
                row["fastest_cpu"] = min(cpus, key=lambda lib: cpus[lib])
                for lib, v in cpus.items():
                    row["cells"][lib]["cpu_ratio_to_fastest"] = v / cpus[row["fastest_cpu"]]
        out.append(row)
    fam_order = ["rsa", "ecdsa", "eddsa", "kex", "pq-kem", "pq-sig", "aead", "mac", "hash"]
    out.sort(
        key=lambda r: (
            r["security_bits"],
            fam_order.index(r["family"]) if r["family"] in fam_order else 99,
            r.get("key_bits") or 0,
            r["alg"],
            r["op"],
            r["size_bytes"] or 0,
        )
    )
    return out


def library_answers(doc: Result) -> list[dict[str, Any]]:
    """S5's question across libraries: per strength and operation, which library signs (verifies)
    fastest and by how much, for each signature algorithm measured in more than one library."""
    table = [
        r for r in library_table(doc) if r["family"] in ("rsa", "ecdsa", "eddsa") and r["op"] in ("sign", "verify")
    ]
    out = []
    for op in ("sign", "verify"):
        by_strength: dict[int, list[dict[str, Any]]] = {}
        for r in table:
            if r["op"] == op and len([c for c in r["cells"].values() if c.get("p50_us")]) >= 2:
                by_strength.setdefault(r["security_bits"], []).append(r)
        for bits, rows in sorted(by_strength.items()):
            parts: list[str] = []
            evidence: list[dict[str, Any]] = []
            for r in rows:
                cells = sorted(
                    ((lib, c) for lib, c in r["cells"].items() if c.get("p50_us")), key=lambda x: x[1]["p50_us"]
                )
                best_lib, best = cells[0]
                others = ", ".join(f"{lib} {_fmt_ratio(c['ratio_to_fastest'])}" for lib, c in cells[1:])
                parts.append(f"{r['alg']}: {best_lib} fastest ({best['p50_us']:.1f} µs); {others}")
                lacking = [lib for lib, c in r["cells"].items() if c["status"] == "unsupported"]
                if lacking:
                    parts[-1] += f"; not offered by {', '.join(lacking)}"
                evidence.append(
                    {
                        "alg": r["alg"],
                        "fastest": best_lib,
                        **{f"{lib}_p50_us": c["p50_us"] for lib, c in cells},
                        **{f"{lib}_over_fastest": c["ratio_to_fastest"] for lib, c in cells},
                    }
                )
            wins: dict[str, int] = {}
            for ev in evidence:
                wins[ev["fastest"]] = wins.get(ev["fastest"], 0) + 1
            lead = max(wins, key=lambda lib: wins[lib])
            out.append(
                {
                    "id": f"libraries-{op}-{bits}",
                    "question": f"Which library is fastest at {'signing' if op == 'sign' else 'verifying'} at {bits}-bit strength, and by how much?",
                    "answer": (
                        f"{lead} is fastest for {wins[lead]} of {len(evidence)} algorithms. "
                        + "; ".join(parts)
                        + " (P50 per operation; ratios to the fastest library)."
                    ),
                    "evidence": evidence,
                }
            )
    return out


def libraries_analysis(doc: Result) -> dict[str, Any] | None:
    """The cross-library view of a Result: the table, the answers across libraries and S5's
    answers per library. None when only OpenSSL ran."""
    libs = libraries_in(doc)
    if libs in ([], ["openssl"]):
        return None
    return {
        "libraries": libs,
        "table": library_table(doc),
        "answers": library_answers(doc),
        "per_library": {lib: answers(doc, lib) for lib in libs},
    }
