"""What the terminal and HTML reports show of handshake series, computed once: the per-connection
verifications that passed, and the per-message P50 matrix across configurations."""

from __future__ import annotations

from collections.abc import Sequence

from ...core.result_schema import Series


def verifications(s: Series) -> list[str]:
    """Human-readable checks of one handshake series (resumption, early data, sum rule)."""
    sm, d = s.summary, s.derived
    n = sm.n if sm is not None else 0
    out: list[str] = []
    if "resumed" in d:
        out.append(f"resumed {d['resumed']}/{n}")
    if "early_data_accepted" in d:
        out.append(f"early data accepted {d['early_data_accepted']}/{n}")
    if d.get("breakdown"):
        out.append(f"per-message sum within {d['breakdown']['sum_rule_worst_error']:.2%}")
    return out


def message_matrix(series: Sequence[Series]) -> tuple[list[Series], list[str], list[list[float | None]]]:
    """(series with a breakdown, message names in first-seen order, P50 µs per [message][series])."""
    cols = [s for s in series if s.derived.get("breakdown")]
    per: list[dict[str, float]] = [
        {m["message"]: m["p50_cpu_us"] for m in s.derived["breakdown"]["messages"]} for s in cols
    ]
    order: list[str] = []
    for p in per:
        order += [m for m in p if m not in order]
    return cols, order, [[p.get(msg) for p in per] for msg in order]
