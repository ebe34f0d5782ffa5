"""The verdict rule (README "How a plan is made: the verdict rule"), the best combination of
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
"""

from __future__ import annotations

import itertools

from .evaluate import Outcome

AS_IS, WITH_MEASURES, HARD = "suitable as is", "suitable with design measures", "hard to reconcile"
# measures that change no number (kept in the ranking, left out of the combination search)
NO_EFFECT = ("backoff",)


def worst_ratio(o: Outcome) -> float:
    return max(c["value"] / c["limit"] if c["limit"] else float("inf") for c in o.checks)


def failing(o: Outcome) -> list[str]:
    return [c["check"] for c in o.checks if not c["ok"]]


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
        return min(ok, key=lambda o: (len(o.design.measures), o.numbers["energy_per_day_j"],
                                      o.numbers["latency_pq_ms"]))
    return min(outcomes, key=lambda o: (worst_ratio(o), len(o.design.measures)))


def gain(before: Outcome, after: Outcome) -> dict:
    """What a measure buys against the pattern as written (positive = better)."""
    b, a = before.numbers, after.numbers
    g = {"latency_pq_ms": b["latency_pq_ms"] - a["latency_pq_ms"],
         "spread_ms": b["spread_ms"] - a["spread_ms"],
         "energy_per_day_j": b["energy_per_day_j"] - a["energy_per_day_j"],
         "bytes_per_day": b["bytes_per_day"] - a["bytes_per_day"],
         "signatures_per_day": b["signatures_per_day"] - a["signatures_per_day"]}
    # one score: the gain on each stated requirement as a share of its limit, summed
    score = 0.0
    for cb, ca in zip(before.checks, after.checks):
        score += (cb["value"] - ca["value"]) / cb["limit"] if cb["limit"] else 0.0
    g["score"] = score
    return g


def ranking(before: Outcome, singles: list[Outcome]) -> list[dict]:
    rows = [{"measure": o.design.measures[0], **gain(before, o), "meets": o.passes, "failing": failing(o)}
            for o in singles]
    return sorted(rows, key=lambda r: -r["score"])


def alert_thresholds(chosen: Outcome, profile_sign_ms: float | None) -> list[dict]:
    """The operational metrics (study S2) and the values the verdict assumes for them, with the
    threshold at which to alert: past it, the plan's numbers no longer hold."""
    x = chosen.numbers
    lat_slack = max(0.0, next((c["limit"] - c["value"] for c in chosen.checks if c["check"] == "latency"), 0.0))
    out = []
    if profile_sign_ms:
        on_path = x["setup_on_path_share"] > 0 and x["signatures_per_day"] > 0
        limit = profile_sign_ms + lat_slack if on_path else profile_sign_ms * 2.0
        out.append({"metric": "secperf_signing_mean_seconds", "assumed": profile_sign_ms / 1e3,
                    "alert_above": limit / 1e3,
                    "why": ("signatures are on the request path: a mean this much higher uses up the latency slack"
                            if on_path else "signatures are off the request path: alert when they double (energy)")})
        out.append({"metric": "secperf_signing_success_ratio", "assumed": 1.0, "alert_below": 0.99,
                    "why": "the plan assumes every signature succeeds; each failure is one more set-up"})
        out.append({"metric": "secperf_se_error_ratio", "assumed": 0.0, "alert_above": 0.01,
                    "why": "secure-element errors and time-outs are not modelled beyond the profile's tail"})
    out.append({"metric": "secperf_session_reuse_ratio", "assumed": x["session_reuse_share"],
                "alert_below": max(0.0, x["session_reuse_share"] - 0.1),
                "why": "share of messages sent without a full handshake or fresh token, as planned"})
    out.append({"metric": "secperf_auth_timeout_ratio", "assumed": x["auth_gave_up_share"],
                "alert_above": max(2.0 * x["auth_gave_up_share"], 0.001),
                "why": "set-ups that give up (TCP SYN retries, DTLS/CoAP retransmissions) as the link model predicts"})
    return out
