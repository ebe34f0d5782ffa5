"""`secperf compare A B`: per series, is B faster, slower, or not significantly different from A?

A difference counts only if it is both statistically significant (two-sided Mann-Whitney U test on
the raw per-operation values, p < alpha) and at least `min_change` in relative median terms: with
many samples, tiny systematic shifts (a different CPU frequency) become "significant" without
mattering. Both thresholds are reported with the verdicts.
"""

from __future__ import annotations

from . import stats

METADATA_KEYS = ("cpu_model", "kernel", "openssl", "secperf_version", "cpu_governor")


def compare(a: dict, b: dict, alpha: float = 0.01, min_change: float = 0.02) -> dict:
    sa = {s["id"]: s for s in a["series"]}
    sb = {s["id"]: s for s in b["series"]}
    rows = []
    for sid, x in sa.items():
        y = sb.get(sid)
        if y is None:
            continue
        if not x["values_us"] or not y["values_us"]:
            rows.append({"id": sid, "verdict": "not comparable",
                         "reason": "no samples in " + ("A" if not x["values_us"] else "B")})
            continue
        ma, mb = stats.median(x["values_us"]), stats.median(y["values_us"])
        p = stats.mann_whitney_p(x["values_us"], y["values_us"])
        change = mb / ma - 1.0 if ma > 0 else 0.0
        if p < alpha and abs(change) >= min_change:
            verdict = "faster" if mb < ma else "slower"
        else:
            verdict = "no significant difference"
        rows.append({"id": sid, "a_p50_us": ma, "b_p50_us": mb, "change": change, "p_value": p,
                     "n_a": len(x["values_us"]), "n_b": len(y["values_us"]), "verdict": verdict})
    warnings = []
    for key in METADATA_KEYS:
        va, vb = a["host"].get(key), b["host"].get(key)
        if va != vb:
            warnings.append(f"host {key} differs: A {va!r}, B {vb!r} — differences may come from the "
                            f"machine or library, not the change under test")
    return {
        "a": a["run_id"], "b": b["run_id"], "alpha": alpha, "min_change": min_change,
        "rows": rows,
        "only_in_a": sorted(set(sa) - set(sb)),
        "only_in_b": sorted(set(sb) - set(sa)),
        "warnings": warnings,
    }
