"""Number formatting shared by terminal tables, CSV, the HTML report and the plots' axes (one
formatter: fmt_value)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

from rich.text import Text

from ..sim.sweep import NETWORK_INPUTS

if TYPE_CHECKING:
    from rich.console import RenderableType

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


def fmt_value(value: float | None, unit: str) -> str:
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


# ---- one unit per table column (report/fit.py) ----------------------------------------------------

# unit -> (family, factor to the family's base unit); display order small to large per family
_BYTES = {"B": "1", "kB": "1e3", "MB": "1e6", "GB": "1e9"}
UNIT_FAMILIES = {
    unit: (family, Decimal(factor))
    for family, units in (
        ("time", {"ns": "1e-9", "\u00b5s": "1e-6", "\u03bcs": "1e-6", "us": "1e-6", "ms": "1e-3", "s": "1"}),
        ("bytes", _BYTES),
        ("rate", {f"{u}/s": f for u, f in _BYTES.items()}),
        ("energy", {"\u00b5J": "1e-6", "mJ": "1e-3", "J": "1", "kJ": "1e3"}),
    )
    for unit, factor in units.items()
}
DISPLAY_UNITS = {
    "time": ("ns", "\u00b5s", "ms", "s"),
    "bytes": ("B", "kB", "MB", "GB"),
    "rate": ("B/s", "kB/s", "MB/s", "GB/s"),
    "energy": ("\u00b5J", "mJ", "J", "kJ"),
}
_UNIT_ALT = "|".join(re.escape(u) for u in sorted(UNIT_FAMILIES, key=len, reverse=True))
_NUM = r"(?P<sign>[-+\u2212]?)(?P<num>\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?)"
QUANTITY = re.compile(rf"(?<![\w.]){_NUM}\s?(?P<unit>{_UNIT_ALT})(?![\w])")
_PURE = re.compile(rf"\s*{_NUM}\s?(?P<unit>{_UNIT_ALT})\s*")


def decimal_text(d: Decimal) -> str:
    """A Decimal as plain digits (no exponent, no trailing zeros)."""
    if d == 0:
        return "0"
    s = format(d.normalize(), "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def _in_unit(num: str, unit: str, to: str) -> str:
    d = Decimal(num.replace(",", "")) * UNIT_FAMILIES[unit][1] / UNIT_FAMILIES[to][1]
    return decimal_text(d)


# a column's unit: the smallest in which its largest number stays under this (whole numbers of at
# most four digits: "672 ms", not "672000 µs"; "4800 ms" rather than "4.8 s" beside "602 ms")
UNIT_CEILING = Decimal(10_000)


def column_unit(quantities: list[tuple[str, str]]) -> str:
    """The one unit for a column's (number, unit) quantities, all of one family, chosen from the
    column's largest magnitude alone: the smallest display unit in which it is below UNIT_CEILING.
    The smaller numbers of the column (an sd beside a mean) follow it with their own decimals, and
    the unit changes between runs only when the column's largest value crosses a factor of ten
    thousand of it, never because of the digits of a small one."""
    fam = UNIT_FAMILIES[quantities[0][1]][0]
    if all(Decimal(n.replace(",", "")) == 0 for n, _ in quantities):
        return max((sum(1 for _, u in quantities if u == x), x) for x in {u for _, u in quantities})[1]
    top = max(abs(Decimal(n.replace(",", ""))) * UNIT_FAMILIES[u][1] for n, u in quantities)
    for to in DISPLAY_UNITS[fam]:
        if top / UNIT_FAMILIES[to][1] < UNIT_CEILING:
            return to
    return DISPLAY_UNITS[fam][-1]


def fits_unit(quantities: list[tuple[str, str]], to: str, floor: str = "0.1") -> bool:
    """Whether a column reads well in `to` (a neighbouring column's unit): its largest number below
    UNIT_CEILING and at least `floor` (a P50 of 12 µs beside P95s in ms would read 0.012). An sd
    beside its mean takes floor 0.001: the two share a unit unless the sd is a millionth of it."""
    top = max(abs(Decimal(n.replace(",", ""))) * UNIT_FAMILIES[u][1] for n, u in quantities) / UNIT_FAMILIES[to][1]
    return top == 0 or Decimal(floor) <= top < UNIT_CEILING


def _cell_plain(cell: object) -> str | None:
    if isinstance(cell, str):
        try:
            return Text.from_markup(cell).plain
        except Exception:  # noqa: BLE001
            return cell
    if isinstance(cell, Text):
        return cell.plain
    return None


def _rewrite(cell: RenderableType, fam: str, to: str, keep_unit: bool) -> RenderableType:
    """The cell with every quantity of `fam` in unit `to` (the unit dropped when not keep_unit)."""

    def sub(m: re.Match[str]) -> str:
        u = m.group("unit")
        if UNIT_FAMILIES[u][0] != fam:
            return m.group(0)
        sign = "-" if m.group("sign") in ("-", "\u2212") else m.group("sign")
        num = (
            m.group("num")
            if u == to or (u in ("us", "\u03bcs") and to == "\u00b5s")
            else _in_unit(m.group("num"), u, to)
        )
        if u == to and "e" in num.lower():
            num = decimal_text(Decimal(num))
        return f"{sign}{num}" + (f" {to}" if keep_unit else "")

    if isinstance(cell, str):
        return QUANTITY.sub(sub, cell)
    if isinstance(cell, Text):
        return Text(QUANTITY.sub(sub, cell.plain), style=cell.style, justify=cell.justify)
    return cell


def zero_column(cells: Sequence[object]) -> bool:
    """Every number in the column is 0 (its unit is anyone's: it takes the table's usual one)."""
    nums = [m.group("num") for c in cells for m in QUANTITY.finditer(_cell_plain(c) or "")]
    return bool(nums) and all(Decimal(n.replace(",", "")) == 0 for n in nums)


def unify_column(
    cells: list[RenderableType], prefer: dict[str, str] | None = None, floor: str = "0.1"
) -> tuple[list[RenderableType], str | None]:
    """One unit per column: (new cells, unit for the header or None).

    Pure column (every cell holding a digit is one quantity, all of one family): the numbers in one
    unit chosen by column_unit, the unit returned for the header; `prefer` (family -> unit, the unit
    most of the table's columns use) wins when its numbers are no longer, so neighbouring columns
    read in the same unit. Otherwise, each family whose quantities come in more
    than one unit in the column is rewritten to one unit, kept inline."""
    plains = [_cell_plain(c) for c in cells]
    digits = [p for p in plains if p is not None and any(ch.isdigit() for ch in p)]
    if not digits:
        return cells, None
    pure = [m for m in (_PURE.fullmatch(p) for p in digits) if m is not None]
    if len(pure) == len(digits) and len({UNIT_FAMILIES[m.group("unit")][0] for m in pure}) == 1:
        fam = UNIT_FAMILIES[pure[0].group("unit")][0]
        qs = [(m.group("num"), m.group("unit")) for m in pure]
        want = (prefer or {}).get(fam)
        zero = all(Decimal(n.replace(",", "")) == 0 for n, _ in qs)
        to = want if zero and want else column_unit(qs)
        if want and want != to and fits_unit(qs, want, floor):
            to = want  # the table's usual unit: a mean and its sd, P50 and P95 read in one unit
        return [_rewrite(c, fam, to, keep_unit=False) for c in cells], to
    found: dict[str, list[tuple[str, str]]] = {}
    for p in digits:
        for m in QUANTITY.finditer(p):
            found.setdefault(UNIT_FAMILIES[m.group("unit")][0], []).append((m.group("num"), m.group("unit")))
    out = list(cells)
    for fam, qs in found.items():
        units = {"\u00b5s" if u in ("us", "\u03bcs") else u for _, u in qs}
        if len(units) > 1 or any("e" in n.lower() for n, _ in qs):
            to = column_unit(qs)
            out = [_rewrite(c, fam, to, keep_unit=True) for c in out]
    return out, None


AXIS_UNITS = {"ms": "ms", "%": "%", "kbit/s": "kbit/s", "bytes": "B"}


def axis_label(name: str | None) -> str:
    """A link named by a sweep (`rtt=200`, `lte-m,loss=1`) with each swept input's unit, written as
    `--network` takes them: `rtt=200ms`, `lte-m, loss=1%` (units: sim/sweep.py NETWORK_INPUTS)."""
    if not name or "=" not in name:
        return name or ""

    parts = []
    for p in name.split(","):
        k, eq, v = p.partition("=")
        unit = NETWORK_INPUTS.get(k.strip()) if eq else None
        parts.append(f"{p}{AXIS_UNITS.get(unit, unit)}" if unit else p)
    return ", ".join(parts)
