"""Token design: how often a device must sign when it caches its JWT."""

from __future__ import annotations

import math


def signatures_per_hour(lifetime_s: int, requests_per_hour: float) -> float:
    """A cached token is re-signed once per lifetime (never more often than requests need one)."""
    return min(requests_per_hour, math.ceil(3600 / lifetime_s))
