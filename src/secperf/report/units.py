"""Number formatting shared by terminal tables, CSV, the HTML report and the plots' axes (one
formatter: fmt_value)."""

from __future__ import annotations

import html
import math

MISSING = "–"

# factor to nanoseconds
_TIME_UNITS = {"ns": 1.0, "us": 1e3, "\u00b5s": 1e3, "\u03bcs": 1e3, "ms": 1e6, "s": 1e9}
_TIME_LADDER = (("ns", 1.0), ("\u00b5s", 1e3), ("ms", 1e6), ("s", 1e9))
_SUFFIXES = (("", 1.0), ("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12))


def _round_sig(x: float, sig: int = 3) -> float:
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, sig - 1 - math.floor(math.log10(abs(x))))


def _fmt_sig(x: float, sig: int = 3) -> str:
    """``x`` with ``sig`` significant digits, no exponent, trailing zeros stripped."""
    if x == 0:
        return "0"
    x = _round_sig(x, sig)
    ax = abs(x)
    if ax < 1e-4:
        mant, exp = f"{x:.{sig - 1}e}".split("e")
        if "." in mant:
            mant = mant.rstrip("0").rstrip(".")
        return f"{mant}e{int(exp)}"
    decimals = max(0, sig - 1 - math.floor(math.log10(ax)))
    s = f"{x:.{decimals}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def _with_unit(num: str, unit: str) -> str:
    return f"{num} {unit}" if unit else num


def fmt_value(value: float, unit: str) -> str:
    """Format ``value`` with 3 significant digits (trailing zeros dropped).

    Time units ("ns", "µs"/"us", "ms", "s") are converted to the most readable
    time unit: ``fmt_value(1234, "µs") == "1.23 ms"``, ``fmt_value(0.5, "µs") ==
    "500 ns"``.  Other units get k/M/G/T suffixes on the number:
    ``fmt_value(2_500_000, "ops/s") == "2.5M ops/s"``.  NaN/None give "n/a".
    """
    if value is None:
        return "n/a"
    value = float(value)
    if math.isnan(value):
        return "n/a"
    sign = "-" if value < 0 else ""
    if math.isinf(value):
        return _with_unit(sign + "\u221e", unit)
    if unit in _TIME_UNITS:
        ns = _round_sig(abs(value) * _TIME_UNITS[unit])
        name, factor = _TIME_LADDER[0]
        for cand, f in _TIME_LADDER:
            if ns >= f:
                name, factor = cand, f
        if ns == 0:
            return f"0 {unit}"
        return f"{sign}{_fmt_sig(ns / factor)} {name}"
    mag = _round_sig(abs(value))
    suffix, factor = _SUFFIXES[0]
    for cand, f in _SUFFIXES:
        if mag >= f:
            suffix, factor = cand, f
    return _with_unit(f"{sign}{_fmt_sig(mag / factor)}{suffix}", unit)



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
