"""Small facts of one series that several report tables show (plain values, no markup)."""

from __future__ import annotations

from ...core.result_schema import Series


def failure_reason(s: Series) -> str:
    """Why a series has no summary: its last failure's reason, else its status."""
    return s.failures[-1].reason if s.failures else s.status


def cpu_p50_us(s: Series) -> float | None:
    """The series' CPU-time median in µs (None without CPU values)."""
    return s.cpu_summary.p50_us if s.cpu_summary is not None else None
