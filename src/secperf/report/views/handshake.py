"""What the terminal and HTML reports show of handshake series, computed once: the per-connection
verifications that passed, and the per-message P50 matrix across configurations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.result_schema import HandshakeDerived, Series


def verifications(s: Series) -> list[str]:
    """Human-readable checks of one handshake series (resumption, early data, sum rule)."""
    sm, d = s.summary, s.derived_as(HandshakeDerived)
    n = sm.n if sm is not None else 0
    out: list[str] = []
    if d.resumed is not None:
        out.append(f"resumed {d.resumed}/{n}")
    if d.early_data_accepted is not None:
        out.append(f"early data accepted {d.early_data_accepted}/{n}")
    if d.breakdown:
        out.append(f"per-message sum within {d.breakdown['sum_rule_worst_error']:.2%}")
    return out


def breakdown(s: Series) -> dict[str, Any] | None:
    """A handshake series' per-message breakdown (None for another kind or a series without one)."""
    return s.derived.breakdown if isinstance(s.derived, HandshakeDerived) else None


def message_matrix(series: Sequence[Series]) -> tuple[list[Series], list[str], list[list[float | None]]]:
    """(series with a breakdown, message names in first-seen order, P50 µs per [message][series])."""
    with_bd = [(s, bd) for s in series if (bd := breakdown(s))]
    cols = [s for s, _ in with_bd]
    per: list[dict[str, float]] = [{m["message"]: m["p50_cpu_us"] for m in bd["messages"]} for _, bd in with_bd]
    order: list[str] = []
    for p in per:
        order += [m for m in p if m not in order]
    return cols, order, [[p.get(msg) for p in per] for msg in order]
