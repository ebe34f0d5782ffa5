"""Prediction next to measurement: each what-if series matched with the measured connection
series of the same protocol, key source, handshake and network in the same Result (a scenario's
[whatif] block predicts next to the rows it measured)."""

from __future__ import annotations


def whatif_series(doc: dict) -> list[dict]:
    """The what-if series that hold a prediction (a failed prediction is listed with the failures)."""
    return [s for s in doc["series"] if s.get("kind") == "whatif" and (s.get("derived") or {}).get("usable")]


def _measured(doc: dict) -> dict[tuple, dict]:
    out = {}
    for s in doc["series"]:
        if s.get("kind") != "connect" or not s.get("summary"):
            continue
        lb = s["labels"]
        if lb.get("client", "probe") != "probe" or lb.get("auth", "mtls") != "mtls":
            continue
        out[(lb["protocol"], lb["key_source"], lb["handshake"], lb.get("network") or "loopback")] = s
    return out


def _err(pred: float | None, meas: float | None) -> float | None:
    return None if pred is None or not meas else (pred - meas) / meas


def predicted_vs_measured(doc: dict) -> list[dict]:
    """Rows of (protocol, key, handshake, network, measured P50/P95, predicted P50/P95, errors);
    measured values are None where the run did not measure that cell."""
    measured = _measured(doc)
    rows = []
    for s in whatif_series(doc):
        lb, u = s["labels"], s["derived"]["usable"]
        if lb.get("security") == "none" or lb.get("until", "response") != "response":
            continue          # measured connect rows have security and stop at the response
        key = (lb.get("protocol"), lb.get("key"), lb.get("handshake"), lb.get("network"))
        m = measured.get(key)
        sm = (m or {}).get("summary") or {}
        p95 = None
        if m and m.get("values_us"):
            import numpy as np
            p95 = float(np.percentile(m["values_us"], 95))
        rows.append({"protocol": key[0], "key": key[1], "handshake": key[2], "network": key[3],
                     "measured_p50_us": sm.get("p50_us"), "measured_p95_us": p95, "measured_n": sm.get("n"),
                     "predicted_p50_us": u["p50_us"], "predicted_p95_us": u["p95_us"],
                     "p50_error": _err(u["p50_us"], sm.get("p50_us")), "p95_error": _err(u["p95_us"], p95)})
    return rows
