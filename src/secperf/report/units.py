"""Number formatting shared by terminal tables, CSV and the HTML report (one formatter: svg.fmt_value)."""

from __future__ import annotations

import html

from .svg import fmt_value

MISSING = "–"


def fmt_time_us(us: float | None) -> str:
    """A duration given in µs, in the most readable unit, 3 significant digits."""
    return MISSING if us is None else fmt_value(us, "µs")


def fmt_rate(x: float | None, unit: str = "") -> str:
    return MISSING if x is None else fmt_value(x, unit)


def fmt_bytes_per_s(x: float | None) -> str:
    """Throughput as kB/s, MB/s, GB/s (decimal prefixes, as openssl speed reports)."""
    if x is None:
        return MISSING
    for div, unit in ((1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s")):
        if x >= div:
            return fmt_value(x / div, unit)
    return fmt_value(x, "B/s")


def esc(x) -> str:
    """Text for HTML (content and attribute values): every report string goes through this."""
    return html.escape("" if x is None else str(x), quote=True)
