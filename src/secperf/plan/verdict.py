"""The verdict rule (docs/explanation/planner.md, the verdict rule), the best combination of
measures, the ranking of measures by gain, and the alert thresholds a verdict assumes.

Rule, applied to the numbers of evaluate.py:
- a design *meets* the pattern when every stated requirement holds: P(q) latency <= limit,
  worst regular message - P50 <= the determinism limit, energy per day <= the budget;
- **suitable as is**: the pattern as written meets it;
- **suitable with design measures**: it does not, but some combination of applicable measures does;
- **hard to reconcile**: no combination of applicable measures meets it.
Best combination: among the combinations that meet the pattern, the fewest measures, then the
least energy per day, then the lowest latency percentile; when none meets it, the one with the
smallest worst ratio value / limit.

The verdict judges security (issue 29): the planner first evaluates the pattern as written with no
security at all (Design.without_security: the same messages over plain TCP/UDP). A requirement
that fails there is broken by the pattern itself — the radio alone exceeds the energy budget, the
network alone the latency limit — and is reported as such (`pattern_breaks`), never as a security
verdict: it is left out of "meets" above (its check carries `judged: false`) — unless some
combination of measures meets it (keep-alive or pre-authentication avoids the connection set-up the
network alone makes too slow): then it is judged, so the verdict names the measure that gets the
pattern under its limit, and the pattern-breaks line still says it fails without security. Every judged
requirement shows what security adds to it (value with security − value without). The verdict
names the deciding requirement (the failing one furthest over its limit; when all hold, the one
closest to its limit) with its source, and the measure that moves it most.
"""

from __future__ import annotations

import itertools
from typing import Any

from ..model.opmetrics import can_fire
from .evaluate import Outcome

AS_IS, WITH_MEASURES, HARD = "suitable as is", "suitable with design measures", "hard to reconcile"
# measures that change no number (kept in the ranking, left out of the combination search)
NO_EFFECT = ("backoff",)


def _judged(o: Outcome) -> list[dict[str, Any]]:
    return [c for c in o.checks if c.get("judged", True)] or o.checks


def worst_ratio(o: Outcome) -> float:
    return max(c["value"] / c["limit"] if c["limit"] else float("inf") for c in _judged(o))


def failing(o: Outcome) -> list[str]:
    return [c["check"] for c in o.checks if not c["ok"] and c.get("judged", True)]


def verdict(before: Outcome, best: Outcome | None) -> str:
    if before.passes:
        return AS_IS
    if best is not None and best.passes:
        return WITH_MEASURES
    return HARD


def combinations(names: list[str]) -> list[tuple[str, ...]]:
    names = [n for n in names if n not in NO_EFFECT]
    return [c for r in range(1, len(names) + 1) for c in itertools.combinations(names, r)]


def best_of(outcomes: list[Outcome]) -> Outcome | None:
    if not outcomes:
        return None
    ok = [o for o in outcomes if o.passes]
    if ok:
        return min(
            ok, key=lambda o: (len(o.design.measures), o.numbers["energy_per_day_j"], o.numbers["latency_pq_ms"])
        )
    return min(outcomes, key=lambda o: (worst_ratio(o), len(o.design.measures)))


def gain(before: Outcome, after: Outcome) -> dict[str, Any]:
    """What a measure buys against the pattern as written (positive = better)."""
    b, a = before.numbers, after.numbers
    g = {
        "latency_pq_ms": b["latency_pq_ms"] - a["latency_pq_ms"],
        "spread_ms": b["spread_ms"] - a["spread_ms"],
        "energy_per_day_j": b["energy_per_day_j"] - a["energy_per_day_j"],
        "bytes_per_day": b["bytes_per_day"] - a["bytes_per_day"],
        "signatures_per_day": b["signatures_per_day"] - a["signatures_per_day"],
    }
    # one score: the gain on each stated requirement as a share of its limit, summed
    score = 0.0
    for cb, ca in zip(before.checks, after.checks):
        score += (cb["value"] - ca["value"]) / cb["limit"] if cb["limit"] else 0.0
    g["score"] = score
    return g


def ranking(before: Outcome, singles: list[Outcome]) -> list[dict[str, Any]]:
    rows = [
        {"measure": o.design.measures[0], **gain(before, o), "meets": o.passes, "failing": failing(o)} for o in singles
    ]
    return sorted(rows, key=lambda r: -r["score"])


def alert_thresholds(chosen: Outcome, profile_sign_ms: float | None) -> list[dict[str, Any]]:
    """The operational metrics (study S2) and the values the verdict assumes for them, with the
    threshold at which to alert: past it, the plan's numbers no longer hold."""
    x = chosen.numbers
    lat_slack = max(0.0, next((c["limit"] - c["value"] for c in chosen.checks if c["check"] == "latency"), 0.0))
    out = []
    if profile_sign_ms:
        on_path = x["setup_on_path_share"] > 0 and x["signatures_per_day"] > 0
        limit = profile_sign_ms + lat_slack if on_path else profile_sign_ms * 2.0
        out.append(
            {
                "metric": "secperf_signing_mean_seconds",
                "assumed": profile_sign_ms / 1e3,
                "alert_above": limit / 1e3,
                "why": (
                    "signatures are on the request path: a mean this much higher uses up the latency slack"
                    if on_path
                    else "signatures are off the request path: alert when they double (energy)"
                ),
            }
        )
        out.append(
            {
                "metric": "secperf_signing_success_ratio",
                "assumed": 1.0,
                "alert_below": 0.99,
                "why": "the plan assumes every signature succeeds; each failure is one more set-up",
            }
        )
        out.append(
            {
                "metric": "secperf_se_error_ratio",
                "assumed": 0.0,
                "alert_above": 0.01,
                "why": "secure-element errors and time-outs are not modelled beyond the profile's tail",
            }
        )
    out.append(
        {
            "metric": "secperf_session_reuse_ratio",
            "assumed": x["session_reuse_share"],
            "alert_below": max(0.0, x["session_reuse_share"] - 0.1),
            "why": "share of messages sent without a full handshake or fresh token, as planned",
        }
    )
    out.append(
        {
            "metric": "secperf_auth_timeout_ratio",
            "assumed": x["auth_gave_up_share"],
            "alert_above": max(2.0 * x["auth_gave_up_share"], 0.001),
            "why": "set-ups that give up (TCP SYN retries, DTLS/CoAP retransmissions) as the link model predicts",
        }
    )
    # a threshold at an end of the metric's range (reuse "below 0" when the plan reuses nothing) never fires
    return [a for a in out if can_fire(a)]


# --- what security does to each requirement ------------------------------------------------------
ALONE = {
    "energy": "the radio alone exceeds the energy budget",
    "latency": "the network alone exceeds the latency limit",
    "determinism": "the network alone exceeds the determinism limit",
}


def _fmt(v: float, unit: str) -> str:
    if unit == "ms":
        return f"{v / 1e3:.2f} s" if abs(v) >= 1000 else f"{v:.0f} ms" if abs(v) >= 10 else f"{v:.1f} ms"
    if unit == "J":
        return f"{v:.1f} J/day" if abs(v) >= 10 else f"{v:.2f} J/day"
    return f"{v:.3g} {unit}"


def security_adds(before: Outcome, plain: Outcome) -> list[dict[str, Any]]:
    """Per requirement: its value with security (the pattern as written), without any security, what
    security adds, the limit, and whether the pattern breaks it without security."""
    pv = {c["check"]: c for c in plain.checks}
    out = []
    for c in before.checks:
        p = pv[c["check"]]
        out.append(
            {
                "check": c["check"],
                "what": c["what"],
                "unit": c["unit"],
                "limit": c["limit"],
                "with_security": c["value"],
                "without_security": p["value"],
                "adds": c["value"] - p["value"],
                "breaks_without_security": not p["ok"],
            }
        )
    return out


def pattern_breaks(plain: Outcome, before: Outcome | None = None) -> list[dict[str, Any]]:
    """The requirements the pattern breaks with no security at all, each with its sentence (and what
    security adds on top, given the pattern as written)."""
    out = []
    with_sec = {c["check"]: c["value"] for c in before.checks} if before is not None else {}
    judged = {c["check"] for c in before.checks if c.get("judged", True)} if before is not None else set()
    for c in plain.checks:
        if not c["ok"]:
            what = ALONE.get(c["check"], f"without security the pattern breaks {c['what']}")
            extra = ""
            if c["check"] == "energy":
                extra = f" (radio {_fmt(plain.numbers['energy_radio_j'], 'J')})"
            if c["check"] in with_sec:
                extra += f"; security adds {_fmt(with_sec[c['check']] - c['value'], c['unit'])}"
            out.append(
                {
                    "check": c["check"],
                    "value": c["value"],
                    "limit": c["limit"],
                    "unit": c["unit"],
                    "adds": with_sec.get(c["check"], c["value"]) - c["value"],
                    "sentence": f"{what}: {_fmt(c['value'], c['unit'])} of {_fmt(c['limit'], c['unit'])}"
                    f" with no security at all{extra} — "
                    + (
                        "judged all the same: a design measure meets it"
                        if c["check"] in judged
                        else "not a security verdict"
                    ),
                }
            )
    return out


def _moving_measure(before: Outcome, singles: list[Outcome], check: str) -> tuple[str | None, float | None]:
    """The single measure that lowers `check` most, and its value then (None: none lowers it)."""
    b = next(c["value"] for c in before.checks if c["check"] == check)
    best, val = None, None
    for o in singles:
        v = next(c["value"] for c in o.checks if c["check"] == check)
        if v < b and (val is None or v < val):
            best, val = o.design.measures[0], v
    return best, val


def explain(
    before: Outcome,
    plain: Outcome,
    best: Outcome | None,
    singles: list[Outcome],
    verdict_: str,
    sources: dict[str, str],
) -> dict[str, Any]:
    """The verdict in words: the deciding requirement (with its source), what security adds to it,
    the measure that moves it; plus the requirements the pattern breaks by itself."""
    adds = {a["check"]: a for a in security_adds(before, plain)}
    judged = [c for c in before.checks if c.get("judged", True)]
    breaks = pattern_breaks(plain, before)
    if not judged:
        return {
            "deciding": None,
            "measure": None,
            "sentence": "; ".join(b["sentence"] for b in breaks) + ": security is not what decides this pattern",
            "pattern_breaks": breaks,
        }
    fails = [c for c in judged if not c["ok"]]
    pool = fails or judged
    dec = max(pool, key=lambda c: c["value"] / c["limit"] if c["limit"] else float("inf"))
    a = adds[dec["check"]]
    unit = dec["unit"]
    head = (
        f"{dec['what']} {_fmt(dec['value'], unit)} of {_fmt(dec['limit'], unit)}"
        f" (security adds {_fmt(a['adds'], unit)}; without security {_fmt(a['without_security'], unit)})"
    )
    measure, moved = _moving_measure(before, singles, dec["check"])
    # the pattern breaks it without security too (judged because a measure meets it): not security alone
    culprit = "the connection set-up breaks" if a["breaks_without_security"] else "security breaks"
    if verdict_ == AS_IS:
        s = f"every requirement holds with security; the closest: {head}"
        measure = None
    elif verdict_ == WITH_MEASURES:
        combo = "+".join(best.design.measures) if best else "?"
        after = next(c["value"] for c in best.checks if c["check"] == dec["check"]) if best else None
        s = f"{culprit} {head}; {combo} brings it to {_fmt(after, unit) if after is not None else '?'}"
        if measure and moved is not None and combo != measure:
            s += f" (alone, {measure} moves it most: {_fmt(moved, unit)})"
        measure = combo
    else:
        s = f"{culprit} {head}; no combination of the applicable measures meets it"
        if measure and moved is not None:
            s += f"; {measure} moves it most: {_fmt(moved, unit)}"
    if sources.get(dec["check"]):
        s += f" [requirement: {sources[dec['check']]}]"
    if breaks:
        s += "; " + "; ".join(b["sentence"] for b in breaks)
    return {"deciding": dec["check"], "measure": measure, "sentence": s, "pattern_breaks": breaks}
