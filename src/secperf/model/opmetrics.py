"""Study S2's operational metrics from any Result: signing success rate and mean time, session
reuse frequency, secure-element error and time-out rate, authentication time-out rate — measured
rows (signer, jwt, connect, handshake), predicted rows (whatif: the share of set-ups that gave up)
and a plan's assumptions with its alert thresholds. Rows only; report/export_metrics.py writes them
in the Prometheus text format.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..core.result_schema import ConnectDerived, HandshakeDerived, Result, Series, WhatifDerived

HELP = {
    "secperf_signing_success_ratio": "signatures that succeeded / signatures attempted",
    "secperf_signing_mean_seconds": "mean time of one signature (secure element or software)",
    "secperf_session_reuse_ratio": "connections that resumed or reused a session / connections",
    "secperf_se_error_ratio": "secure-element errors (PKCS#11 failures) / operations that used it",
    "secperf_se_timeout_ratio": "secure-element time-outs / operations that used it",
    "secperf_auth_timeout_ratio": "authentications (handshakes, token requests) that timed out / attempts",
    "secperf_alert_threshold": "the value at which a plan's verdict stops holding (alert past it)",
}
# The values each metric can take: an alert whose threshold lies at or beyond an end of its range can
# never fire (a ratio "below 0", "above 1") and is not exported.
RANGE: dict[str, tuple[float, float]] = {
    "secperf_signing_success_ratio": (0.0, 1.0),
    "secperf_signing_mean_seconds": (0.0, float("inf")),
    "secperf_session_reuse_ratio": (0.0, 1.0),
    "secperf_se_error_ratio": (0.0, 1.0),
    "secperf_se_timeout_ratio": (0.0, 1.0),
    "secperf_auth_timeout_ratio": (0.0, 1.0),
}


def can_fire(alert: Mapping[str, Any]) -> bool:
    """Whether a plan's alert ({"metric", "alert_above" | "alert_below"}) can ever fire: its metric
    can take a value past the threshold (a metric of unknown range is kept)."""
    lo, hi = RANGE.get(str(alert.get("metric")), (float("-inf"), float("inf")))
    if "alert_below" in alert:
        return float(alert["alert_below"]) > lo
    if "alert_above" in alert:
        return float(alert["alert_above"]) < hi
    return False


_TIMEOUT = re.compile(r"time ?out|timed out|deadline", re.I)
_SE_ERR = re.compile(r"CKR_|pkcs ?#?11|token|secure element|shim|C_Sign", re.I)


def _row(metric_name: str, value: float, **labels: object) -> dict[str, Any]:
    return {"metric": metric_name, "value": float(value), "labels": {k: str(v) for k, v in labels.items()}}


def _attempts(s: Series) -> tuple[int, int, list[str]]:
    ok = len(s.values_us)
    reasons = [f.reason for f in s.failures]
    return ok, len(reasons), reasons


def _uses_se(s: Series) -> bool:
    lab = s.labels
    src = str(lab.get("key_source") or lab.get("profile") or lab.get("mode") or "")
    return src.startswith("se:") or src in ("token",) or s.kind == "signer" and lab.get("mode") != "local_sw"


def measured(doc: Result) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    tot = {
        "sign_ok": 0,
        "sign_n": 0,
        "conn": 0,
        "reused": 0,
        "auth_n": 0,
        "auth_to": 0,
        "se_n": 0,
        "se_err": 0,
        "se_to": 0,
    }
    for s in doc.series:
        kind, sid = s.kind, s.id
        ok, bad, reasons = _attempts(s)
        n = ok + bad
        if not n:
            continue
        timeouts = sum(1 for r in reasons if _TIMEOUT.search(r))
        if kind in ("signer", "jwt"):
            rows.append(_row("secperf_signing_success_ratio", ok / n, series=sid, kind=kind))
            if s.summary is not None:
                rows.append(_row("secperf_signing_mean_seconds", s.summary.mean_us / 1e6, series=sid, kind=kind))
            tot["sign_ok"] += ok
            tot["sign_n"] += n
        if kind in ("connect", "handshake", "jwt"):
            rows.append(_row("secperf_auth_timeout_ratio", timeouts / n, series=sid, kind=kind))
            tot["auth_n"] += n
            tot["auth_to"] += timeouts
        if kind in ("connect", "handshake"):
            d = s.derived
            reused = int(d.resumed or 0) if isinstance(d, (HandshakeDerived, ConnectDerived)) else 0
            rows.append(_row("secperf_session_reuse_ratio", reused / n, series=sid, kind=kind))
            tot["conn"] += n
            tot["reused"] += reused
            se = [c["se"]["se_us"] for c in s.samples if isinstance(c.get("se"), dict) and c["se"].get("calls")]
            if se:
                rows.append(_row("secperf_signing_mean_seconds", sum(se) / len(se) / 1e6, series=sid, kind=kind))
                rows.append(_row("secperf_signing_success_ratio", ok / n, series=sid, kind=kind))
        if _uses_se(s):
            se_err = sum(1 for r in reasons if _SE_ERR.search(r) and not _TIMEOUT.search(r))
            se_to = sum(1 for r in reasons if _SE_ERR.search(r) and _TIMEOUT.search(r))
            rows.append(_row("secperf_se_error_ratio", se_err / n, series=sid, kind=kind))
            rows.append(_row("secperf_se_timeout_ratio", se_to / n, series=sid, kind=kind))
            tot["se_n"] += n
            tot["se_err"] += se_err
            tot["se_to"] += se_to
    if tot["sign_n"]:
        rows.append(_row("secperf_signing_success_ratio", tot["sign_ok"] / tot["sign_n"], series="all", kind="all"))
    if tot["conn"]:
        rows.append(_row("secperf_session_reuse_ratio", tot["reused"] / tot["conn"], series="all", kind="all"))
    if tot["auth_n"]:
        rows.append(_row("secperf_auth_timeout_ratio", tot["auth_to"] / tot["auth_n"], series="all", kind="all"))
    if tot["se_n"]:
        rows.append(_row("secperf_se_error_ratio", tot["se_err"] / tot["se_n"], series="all", kind="all"))
        rows.append(_row("secperf_se_timeout_ratio", tot["se_to"] / tot["se_n"], series="all", kind="all"))
    return rows


def predicted(doc: Result) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for s in doc.series:
        if s.kind == "whatif":
            d = s.derived_as(WhatifDerived)
            failed = d.failed_share if d.failed_share is not None else 0.0
            rows.append(_row("secperf_auth_timeout_ratio", failed, series=s.id, kind="whatif"))
            hs = s.labels.get("handshake")
            rows.append(
                _row(
                    "secperf_session_reuse_ratio",
                    1.0 if hs in ("resumed", "cached") else 0.0,
                    series=s.id,
                    kind="whatif",
                )
            )
    for p in doc.analysis.plan.patterns if doc.analysis.plan is not None else []:
        for a in p.alerts or []:
            if not can_fire(a):  # a plan Result written before alerts were checked against their range
                continue
            rows.append(_row(a["metric"], a["assumed"], series=f"plan/{p.pattern}", kind="plan"))
            direction = "above" if "alert_above" in a else "below"
            rows.append(
                _row(
                    "secperf_alert_threshold",
                    a[f"alert_{direction}"],
                    series=f"plan/{p.pattern}",
                    kind="plan",
                    metric=a["metric"],
                    direction=direction,
                )
            )
    return rows


def metrics(doc: Result) -> list[dict[str, Any]]:
    """Every operational metric the Result can give, one row per metric and series."""
    return measured(doc) + predicted(doc)
