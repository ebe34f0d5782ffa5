"""One cost figure of a cost table: its P50, where it comes from and its spread."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """One cost: P50 in µs and where it comes from; `sigma` is its lognormal spread."""

    us: float
    source: str
    sigma: float = 0.0
    # a figure replacing the one the measured rows ran (the user's own code for a library's op,
    # `device crypto --source`): that one's µs, which a residual fitted from those rows subtracts
    as_measured_us: float | None = None
