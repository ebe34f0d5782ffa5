"""`secperf compare A B`: what changed from A to B, judged the way each kind of number allows.

Both Results must be of the same kind (a handshake run against a plan means nothing: an input
error naming both kinds). Three kinds of numbers, three rules:

1. Measured samples (crypto, handshake, signer, jwt, connect, server; the measured series of a
   scenario run): the difference B − A with its (1 − alpha) confidence interval, absolute and
   relative to A, and the smallest change the two sample sizes could have detected at that alpha
   with the chosen power.
   - estimate and interval: with at least MIN_RANKS samples on each side, the Hodges-Lehmann shift
     (the median of all pairwise differences B_j − A_i) with its distribution-free interval from
     Mann-Whitney's critical value (the C-th smallest to the C-th largest pairwise difference).
     Decided over a percentile bootstrap of the difference of medians, which undercovers at tens of
     samples (a median's bootstrap distribution is lumpy) and called a 3 % noise difference
     "slower" at 99 %; the rank interval keeps its coverage for skewed timings. With fewer samples
     the rank interval cannot reach the confidence asked (3 vs 3 samples never reach p < 0.05), so:
     the difference of means with Welch's t interval (unequal variances, Welch-Satterthwaite
     degrees of freedom). The row names its method. The change is relative to A's median (mean).
   - smallest detectable change: (quantile_{1−alpha/2} + quantile_{power}) × the standard error of
     the difference (t quantiles for Welch; for the rank interval its half-width / z), relative to A.
   - verdict, from the interval and `min_change` (the smallest relative change that matters):
     interval excludes 0 and |change| ≥ min_change → faster/slower (higher/lower for a rate);
     interval excludes 0 but |change| < min_change → "negligible difference";
     interval includes 0 and lies within ±min_change → "no significant difference" (the data rule
     out a change that matters); interval includes 0 and reaches beyond ±min_change → "too few
     samples to decide" (a change that matters is still possible: the row says how large a change
     these sample sizes can detect).
   A server series is compared on three per-interval samples: server CPU per handshake, handshakes
   per second and P95 latency (one value per counting interval, typically n = 3).
2. Monte Carlo draws (whatif): the difference of the predicted percentiles (P50, P95, P99, from the
   summaries over all n draws) with its sampling interval, estimated by bootstrapping the stored
   draws of each side (values_us keeps the first draws) and scaled to all n draws (a percentile's
   sampling error shrinks as 1/sqrt(n)). No significance test: draws are the model's, their number
   is the user's choice, and any difference becomes "significant" with enough of them. The verdict
   says whether the difference exceeds the simulation's own sampling error.
3. Deterministic numbers (device instruction counts, Cortex-M counts, the CAN model, fleet
   models, plans): every headline number (core/observations.py) present in both, with A, B and the
   change; a plan's verdict per pattern, changed or not. "Identical" is an answer too. A fleet is
   a fluid queueing model (no draws: the same inputs give the same numbers). A plan's latencies
   are Monte Carlo percentiles, but a plan Result keeps no draws: its changes are listed without a
   sampling interval (rerun both with the same --seed and a larger --n to see what is noise); a
   `fleet --replay` storm is one measured run per policy, listed the same way.

Results that share nothing (no series id, no row) are an input error naming a few ids of each,
never an empty "nothing to compare".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .errors import InputError
from .observations import MEASURED, Observation, interval_rates, observations, verdicts
from .result_schema import MqttDerived, Result, Series

METADATA_KEYS = ("cpu_model", "kernel", "openssl", "secperf_version", "cpu_governor")
MIN_RANKS = 10
MAX_PAIRS = 1_000_000  # 1000 x 1000 pairwise differences: about 0.1 s per row
MAX_BOOTSTRAP = 2000  # samples a side an mqtt-load percentile's bootstrap resamples (1000 x 2000 values)
PREDICTED_STATS = (("p50", 50.0), ("p95", 95.0), ("p99", 99.0))
DETERMINISTIC = ("device", "device_crypto", "cortexm", "can", "fleet", "plan")
TOO_FEW = "too few samples to decide"


class CompareError(InputError):
    """Two Results that cannot be compared (different kinds, nothing in common)."""


def _difference(a: list[float], b: list[float], alpha: float, power: float, seed: int) -> dict[str, Any]:
    """B − A: estimate, (1 − alpha) interval, standard error and the smallest detectable change."""
    from scipy import stats as sp  # reason: scipy: ~1 s to import (start-up)

    xa, xb = np.asarray(a, float), np.asarray(b, float)
    na, nb = xa.size, xb.size
    if min(na, nb) >= MIN_RANKS:
        rng = np.random.default_rng(seed)
        if na * nb > MAX_PAIRS:  # a seeded subsample of each side keeps the pairwise differences in memory
            k = int(math.sqrt(MAX_PAIRS))
            xa = xa[rng.choice(na, min(na, k), replace=False)]
            xb = xb[rng.choice(nb, min(nb, k), replace=False)]
        ma, mb = xa.size, xb.size
        d = np.sort((xb[:, None] - xa[None, :]).ravel())
        z = float(sp.norm.ppf(1 - alpha / 2))
        # Mann-Whitney's critical count (normal approximation, continuity-corrected): the interval
        # runs from the C-th smallest to the C-th largest pairwise difference
        c = int(math.floor(ma * mb / 2 - z * math.sqrt(ma * mb * (ma + mb + 1) / 12) - 0.5))
        c = min(max(c, 0), d.size - 1)
        lo, hi = float(d[c]), float(d[d.size - 1 - c])
        se = (hi - lo) / (2 * z)
        mde = (z + float(sp.norm.ppf(power))) * se
        return {
            "method": "Hodges-Lehmann shift with its Mann-Whitney interval",
            "a": float(np.median(xa)),
            "b": float(np.median(xb)),
            "diff": float(np.median(d)),
            "diff_ci": [lo, hi],
            "se": se,
            "mde": mde,
        }
    va, vb = xa.var(ddof=1) / na, xb.var(ddof=1) / nb
    se = math.sqrt(va + vb)
    diff = float(xb.mean() - xa.mean())
    if se == 0.0:  # every value equal on both sides: the interval is the point
        df, lo, hi, mde = float(na + nb - 2), diff, diff, 0.0
    else:
        df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
        t = float(sp.t.ppf(1 - alpha / 2, df))
        lo, hi = diff - t * se, diff + t * se
        mde = (t + float(sp.t.ppf(power, df))) * se
    return {
        "method": f"Welch t on the difference of means (n < {MIN_RANKS}; df {df:.1f})",
        "a": float(xa.mean()),
        "b": float(xb.mean()),
        "diff": diff,
        "diff_ci": [float(lo), float(hi)],
        "se": se,
        "mde": float(mde),
    }


def _verdict(change: float, ci: list[float], min_change: float, lower_is_better: bool) -> str:
    lo, hi = ci
    if lo > 0 or hi < 0:
        if abs(change) < min_change:
            return "negligible difference"
        up = change > 0
        if lower_is_better:
            return "slower" if up else "faster"
        return "higher" if up else "lower"
    if -min_change <= lo and hi <= min_change:
        return "no significant difference"
    return TOO_FEW


def measured_row(
    sid: str,
    metric: str,
    unit: str,
    a: list[float],
    b: list[float],
    alpha: float,
    min_change: float,
    power: float,
    lower_is_better: bool = True,
    seed: int = 1,
) -> dict[str, Any]:
    row: dict[str, Any] = {"id": sid, "metric": metric, "unit": unit, "n_a": len(a), "n_b": len(b)}
    if not a or not b:
        return {**row, "verdict": "not comparable", "reason": "no samples in " + ("A" if not a else "B")}
    if min(len(a), len(b)) < 2:
        return {
            **row,
            "a": float(np.mean(a)),
            "b": float(np.mean(b)),
            "verdict": TOO_FEW,
            "reason": "one sample on a side gives no interval; measure longer (--n, --duration)",
        }
    d = _difference(a, b, alpha, power, seed)
    base: float = d["a"]
    # A at 0: no relative change (and no NaN in JSON)
    rel: Callable[[float], float | None] = (lambda x: x / base) if base else (lambda x: None)
    change, ci = rel(d["diff"]), [rel(x) for x in d["diff_ci"]]
    # A at 0 (a count of nothing): no relative change; the absolute interval alone decides
    verdict = (
        _verdict(d["diff"] / base, [x / base for x in d["diff_ci"]], min_change, lower_is_better)
        if base
        else _verdict(d["diff"], d["diff_ci"], 0.0, lower_is_better)
        if d["diff_ci"][0] > 0 or d["diff_ci"][1] < 0
        else TOO_FEW
    )
    row.update(
        {
            "method": d["method"],
            "a": d["a"],
            "b": d["b"],
            "diff": d["diff"],
            "diff_ci": d["diff_ci"],
            "change": change,
            "change_ci": ci,
            "detectable": d["mde"],
            "detectable_change": rel(d["mde"]),
            "verdict": verdict,
        }
    )
    if d["a"] is not None and unit == "us":  # the old field names, for readers of earlier comparisons
        row["a_p50_us"], row["b_p50_us"] = d["a"], d["b"]
    return row


def _server_samples(s: Series) -> list[tuple[str, str, list[float], bool]]:
    p95 = [
        float(m["p95_ms"])
        for m in s.samples
        if m.get("type") == "interval" and isinstance(m.get("p95_ms"), (int, float)) and m.get("handshakes")
    ]
    return [
        ("server_cpu_per_handshake", "us", list(s.values_us), True),
        ("handshakes_per_s", "1/s", interval_rates(s), False),
        ("latency_p95", "ms", p95, True),
    ]


def _percentile_row(x: Series, y: Series, q: float, alpha: float, min_change: float, seed: int) -> dict[str, Any]:
    """An mqtt-load series' P50 or P99, B − A: the phases' own percentiles (ms), the interval the
    percentile bootstrap of both sides' binned samples gives around their difference (the what-if
    rows' rule), judged as a measured row is."""
    st = f"p{q:g}"
    dx, dy = x.derived_as(MqttDerived), y.derived_as(MqttDerived)
    va, vb = getattr(dx, f"{st}_ms"), getattr(dy, f"{st}_ms")
    row: dict[str, Any] = {
        "id": x.id,
        "metric": f"{dx.latency} {st.upper()}",
        "unit": "ms",
        "n_a": len(x.values_us),
        "n_b": len(y.values_us),
    }
    # beyond MAX_BOOTSTRAP samples a side, a seeded subsample's interval scaled to all samples (the
    # what-if rows' rule: a percentile's error shrinks as 1/sqrt(n)); the resamples stay in memory
    rng = np.random.default_rng(seed)
    xa, xb = (
        np.asarray(v, float)[rng.choice(len(v), MAX_BOOTSTRAP, replace=False)].tolist()
        if len(v) > MAX_BOOTSTRAP
        else list(v)
        for v in (x.values_us, y.values_us)
    )
    na, nb = len(x.values_us), len(y.values_us)
    scale = math.sqrt((len(xa) + len(xb)) / (na + nb)) if na + nb else 1.0
    half = _percentile_interval(xa, xb, q, alpha, scale, seed)
    if va is None or vb is None or half is None:
        return {**row, "a": va, "b": vb, "verdict": TOO_FEW, "reason": "fewer than 2 samples on a side"}
    diff = vb - va
    ci = [diff + half[0] / 1000.0, diff + half[1] / 1000.0]
    change, change_ci = (diff / va, [c / va for c in ci]) if va else (None, [None, None])
    verdict = _verdict(diff / va, [c / va for c in ci], min_change, True) if va else TOO_FEW
    return {
        **row,
        "method": f"difference of the phases' {st.upper()} with a percentile-bootstrap interval of the binned samples",
        "a": va,
        "b": vb,
        "diff": diff,
        "diff_ci": ci,
        "change": change,
        "change_ci": change_ci,
        "detectable": None,
        "detectable_change": None,
        "verdict": verdict,
    }


def _mqtt_rows(x: Series, y: Series, alpha: float, min_change: float, power: float, seed: int) -> list[dict[str, Any]]:
    """An mqtt-load series: the whole latency's shift (a handshake's statistics), then its P50 and P99."""
    latency = x.derived_as(MqttDerived).latency
    shift = measured_row(
        x.id, f"{latency} latency", "us", list(x.values_us), list(y.values_us), alpha, min_change, power, True, seed
    )
    return [shift, *(_percentile_row(x, y, q, alpha, min_change, seed) for q in (50.0, 99.0))]


def _measured_rows(
    a: Result, b: Result, alpha: float, min_change: float, power: float, seed: int
) -> list[dict[str, Any]]:
    sa = {s.id: s for s in a.series if s.kind in (*MEASURED, "mqtt")}
    sb = {s.id: s for s in b.series if s.kind in (*MEASURED, "mqtt")}
    rows = []
    for sid, x in sa.items():
        y = sb.get(sid)
        if y is None or y.kind != x.kind:
            continue
        if x.kind == "mqtt":
            rows += _mqtt_rows(x, y, alpha, min_change, power, seed)
            continue
        if x.kind == "server":
            for (metric, unit, va, low), (_, _, vb, _) in zip(_server_samples(x), _server_samples(y)):
                if va or vb:
                    rows.append(measured_row(sid, metric, unit, va, vb, alpha, min_change, power, low, seed))
            continue
        metric = {
            "crypto": "time per operation",
            "handshake": "handshake wall time",
            "signer": "signing time",
            "jwt": "request time",
            "connect": "establishment",
        }.get(x.kind, "time")
        rows.append(
            measured_row(sid, metric, "us", list(x.values_us), list(y.values_us), alpha, min_change, power, True, seed)
        )
    return rows


def _percentile_interval(
    a: Sequence[float], b: Sequence[float], q: float, alpha: float, scale: float, seed: int
) -> list[float] | None:
    xa, xb = np.asarray(a, float), np.asarray(b, float)
    if xa.size < 2 or xb.size < 2:
        return None
    rng = np.random.default_rng(seed)
    pa = np.percentile(xa[rng.integers(0, xa.size, (1000, xa.size))], q, axis=1)
    pb = np.percentile(xb[rng.integers(0, xb.size, (1000, xb.size))], q, axis=1)
    d = pb - pa
    centre = float(np.percentile(xb, q) - np.percentile(xa, q))
    lo, hi = np.percentile(d, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return [float(lo - centre) * scale, float(hi - centre) * scale]


def _predicted_rows(a: Result, b: Result, alpha: float, seed: int) -> list[dict[str, Any]]:
    sa = {s.id: s for s in a.series if s.kind == "whatif"}
    sb = {s.id: s for s in b.series if s.kind == "whatif"}
    rows = []
    for sid, x in sa.items():
        y = sb.get(sid)
        if y is None:
            continue
        dx, dy = x.values_us, y.values_us
        nx = x.summary.n if x.summary is not None else len(dx)
        ny = y.summary.n if y.summary is not None else len(dy)
        for st, q in PREDICTED_STATS:
            # P95 is no field of a Summary: a what-if summary carries it as an extra key
            va = getattr(x.summary, f"{st}_us", None) if x.summary is not None else None
            vb = getattr(y.summary, f"{st}_us", None) if y.summary is not None else None
            if va is None or vb is None:
                continue
            diff = vb - va
            # the stored draws' interval, scaled to the summaries' n (a percentile's error ~ 1/sqrt(n))
            scale = math.sqrt((len(dx) + len(dy)) / (nx + ny)) if nx + ny else 1.0
            half = _percentile_interval(dx, dy, q, alpha, scale, seed)
            iv = [diff + half[0], diff + half[1]] if half else None
            if iv is None:
                verdict = "no stored draws: the difference's sampling error is unknown"
            elif iv[0] > 0 or iv[1] < 0:
                verdict = "B predicts slower" if diff > 0 else "B predicts faster"
            else:
                verdict = "within sampling error (raise --n)"
            rows.append(
                {
                    "id": sid,
                    "metric": "connection set-up",
                    "statistic": st,
                    "unit": "us",
                    "a": va,
                    "b": vb,
                    "diff": diff,
                    "diff_interval": iv,
                    "change": diff / va if va else None,
                    "draws_a": nx,
                    "draws_b": ny,
                    "stored_draws": [len(dx), len(dy)],
                    "verdict": verdict,
                }
            )
    return rows


def _changes(
    a: Result, b: Result, kinds: tuple[str, ...], keep: Callable[[Observation], bool] = lambda o: True
) -> tuple[list[dict[str, Any]], int]:
    def index(doc: Result) -> dict[tuple[str, str, str], Observation]:
        return {(o["id"], o["metric"], o["statistic"]): o for o in observations(doc) if o["kind"] in kinds and keep(o)}

    ia, ib = index(a), index(b)
    changed: list[dict[str, Any]] = []
    same = 0
    for key, oa in ia.items():
        ob = ib.get(key)
        if ob is None:
            continue
        if ob["value"] == oa["value"]:
            same += 1
            continue
        va, vb = oa["value"], ob["value"]
        changed.append(
            {
                "id": key[0],
                "kind": oa["kind"],
                "metric": key[1],
                "statistic": key[2],
                "unit": oa["unit"],
                "a": va,
                "b": vb,
                "diff": vb - va,
                "change": (vb - va) / abs(va) if va else None,
            }
        )
    return changed, same


def _ids(doc: Result) -> set[str]:
    return {s.id for s in doc.series} | {o["id"] for o in observations(doc) if o["kind"] in DETERMINISTIC}


def _is_mqtt_load(doc: Result) -> bool:
    return doc.params.get("mqtt_load") is True or any(s.kind == "mqtt" for s in doc.series)


def _what(doc: Result) -> str:
    if _is_mqtt_load(doc):
        return "an mqtt-load Result"
    return f"a {doc.kind} Result" + (" (handshake capacity levels)" if doc.kind == "server" else "")


def _mqtt_load_pair(a: Result, b: Result) -> None:
    """An mqtt-load Result compares only with another one holding series: its series (a latency per
    phase) correspond to no handshake's, server level's or other kind's; one written before mqtt-load
    kept series (schema version 3) holds none to compare (its figures are in its analysis)."""
    ma, mb = _is_mqtt_load(a), _is_mqtt_load(b)
    if not (ma or mb):
        return
    if ma != mb:
        ids = ", ".join(s.id for s in (a if ma else b).series[:3]) or "no series"
        raise CompareError(
            f"A is {_what(a)} and B {_what(b)}: their series do not correspond (the mqtt-load one holds "
            f"a latency per phase: {ids}); compare two mqtt-load runs"
        )
    for side, doc in (("A", a), ("B", b)):
        failed = (doc.analysis.mqtt_load or {}).get("failed")
        if failed and not doc.series:
            raise CompareError(f"{side} ({doc.run_id}) is an mqtt-load run that failed ({failed}): nothing to compare")
        if not any(s.kind == "mqtt" for s in doc.series):
            raise CompareError(
                f"{side} ({doc.run_id}) is an mqtt-load Result of schema version {doc.schema_version} that holds "
                "no series (written before mqtt-load kept them): its figures are in its analysis, which "
                "`secperf report` shows; rerun the load to compare it"
            )


def compare(
    doc_a: Result, doc_b: Result, alpha: float = 0.01, min_change: float = 0.02, power: float = 0.8, seed: int = 1
) -> dict[str, Any]:
    for name, v in (("--alpha", alpha), ("--power", power)):  # 0 and 1 make infinite or empty intervals
        if not (isinstance(v, (int, float)) and math.isfinite(v) and 0 < v < 1):
            raise CompareError(f"{name} {v!r}: give a probability between 0 and 1, both excluded (e.g. 0.05)")
    a, b = doc_a, doc_b
    _mqtt_load_pair(a, b)
    if a.kind != b.kind:
        raise CompareError(
            f"A is a {a.kind} Result and B a {b.kind} Result: compare two Results "
            f"of the same kind (two {a.kind} runs, or two {b.kind} runs)"
        )
    ida, idb = _ids(a), _ids(b)
    if not ida & idb:
        raise CompareError(
            f"the two {a.kind} Results share no series or row: A has "
            f"{', '.join(sorted(ida)[:3]) or 'none'}{' ...' if len(ida) > 3 else ''}; B has "
            f"{', '.join(sorted(idb)[:3]) or 'none'}{' ...' if len(idb) > 3 else ''}. Compare runs "
            "of the same configurations"
        )
    rows = _measured_rows(a, b, alpha, min_change, power, seed)
    predictions = _predicted_rows(a, b, alpha, seed)
    changes, unchanged = _changes(a, b, DETERMINISTIC)
    # an mqtt-load phase's counts (failed and refused connections, the time until all were up): one
    # number per run, listed as changed or not (no interval: one run gives one count)
    mq_changes, mq_same = _changes(a, b, ("mqtt",), lambda o: o["statistic"] == "value")
    changes, unchanged = changes + mq_changes, unchanged + mq_same
    va, vb = verdicts(a), verdicts(b)
    verdict_rows = [{"pattern": p, "a": va[p], "b": vb[p], "changed": va[p] != vb[p]} for p in va if p in vb]
    warnings = []
    for key in METADATA_KEYS:
        ha, hb = a.host.get(key), b.host.get(key)
        if ha != hb:
            warnings.append(
                f"host {key} differs: A {ha!r}, B {hb!r} — differences may come from the "
                f"machine or library, not the change under test"
            )
    sa, sb = {s.id for s in a.series}, {s.id for s in b.series}
    return {
        "a": a.run_id,
        "b": b.run_id,
        "kind": a.kind,
        "alpha": alpha,
        "min_change": min_change,
        "power": power,
        "rows": rows,
        "predictions": predictions,
        "changes": changes,
        "unchanged": unchanged,
        "verdicts": verdict_rows,
        "only_in_a": sorted(sa - sb),
        "only_in_b": sorted(sb - sa),
        "warnings": warnings,
    }
