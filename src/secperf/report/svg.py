"""Dependency-free SVG plots for the self-contained HTML report.

Every public plotting function is a pure function that returns the text of one
inline ``<svg>`` element (well-formed XML, no scripts, no external resources).
Benchmark times span many orders of magnitude, so value axes default to a
log10 scale with ticks at powers of ten.

Public API:

* :func:`box_plot`      -- horizontal box plots with the raw samples as dots
* :func:`grouped_bars`  -- horizontal bars in labelled groups, optional error bars
* :func:`line_plot`     -- polylines with point markers, legend, linear/log axes
* :func:`fmt_value`     -- "1234 µs" -> "1.23 ms"; also used by the report tables

Helpers that are handy elsewhere (and in tests): :func:`nice_linear_ticks`,
:func:`log10_ticks` and :class:`Scale`.

Every root element carries ``data-plot`` ("box", "bars" or "line"), ``role="img"``,
an ``aria-label`` with the title, and the caller's CSS class.  Drawn marks carry
class names so tests can count them: ``box``, ``sample``, ``outlier``, ``median``,
``whisker``, ``bar``, ``err``, ``series``, ``line``, ``point``, ``tick``, ``grid``.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

__all__ = [
    "box_plot",
    "grouped_bars",
    "line_plot",
    "stacked_bars",
    "fmt_value",
    "nice_linear_ticks",
    "log10_ticks",
    "Scale",
]

SVG_NS = "http://www.w3.org/2000/svg"

_FONT = "system-ui, sans-serif"
_FS = 11  # base font size, px
_CHAR_W = 6.3  # rough average glyph width at _FS, px (used for layout estimates only)

# Okabe-Ito colour-blind-safe palette, ordered for contrast on white
# (the yellow #F0E442 comes late because it is faint on a white background).
PALETTE = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#D55E00",  # vermillion
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#F0E442",  # yellow
)

_TEXT = "#222222"
_MUTED = "#666666"
_GRID = "#e5e5e5"
_GRID_MINOR = "#f2f2f2"
_AXIS = "#999999"
_BAND = "#f7f7f7"

_MAX_DOTS = 400  # raw-sample dots drawn per box-plot row (evenly thinned beyond this)
_GOLDEN = 0.6180339887498949

# ---------------------------------------------------------------------------
# text helpers
# ---------------------------------------------------------------------------

# characters that are not allowed in XML 1.0 documents
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _esc(text: object) -> str:
    """Escape caller text for element content *and* attribute values."""
    return html.escape(_XML_INVALID.sub("\ufffd", str(text)), quote=True)


def _truncate(text: str, max_chars: int) -> str:
    text = str(text)
    if max_chars < 2:
        max_chars = 2
    if len(text) <= max_chars:
        return text
    return text[: max_chars - 1].rstrip() + "\u2026"


def _n(x: float) -> str:
    """A coordinate rounded to 0.1 px, without a trailing '.0'."""
    s = f"{x:.1f}"
    if s.endswith(".0"):
        s = s[:-2]
    if s == "-0":
        s = "0"
    return s


def _text_w(text: str, font_size: float = _FS) -> float:
    return len(text) * _CHAR_W * font_size / _FS


def _label(x: float, y: float, text: str, max_chars: int, *, anchor: str = "end",
           cls: str = "label", extra: str = "") -> str:
    """A text element; truncated text gets the full text as a <title> tooltip."""
    full = str(text)
    shown = _truncate(full, max_chars)
    tip = f"<title>{_esc(full)}</title>" if shown != full else ""
    return (f'<text class="{cls}" x="{_n(x)}" y="{_n(y)}" dy="0.35em" text-anchor="{anchor}" '
            f'fill="{_TEXT}"{extra}>{tip}{_esc(shown)}</text>')


# ---------------------------------------------------------------------------
# number formatting
# ---------------------------------------------------------------------------

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


def _linear_tick_labels(ticks: Sequence[float], step: float, unit: str) -> list[str]:
    """Labels for linear ticks: one display unit for the whole axis, decimals from the step."""
    max_abs = max((abs(t) for t in ticks), default=0.0)
    if unit in _TIME_UNITS:
        base = _TIME_UNITS[unit]
        name, factor = _TIME_LADDER[0]
        for cand, f in _TIME_LADDER:
            if max_abs * base >= f:
                name, factor = cand, f
        scale, suffix, shown_unit = factor / base, "", name
    else:
        scale, suffix, shown_unit = 1.0, "", unit
        if max_abs >= 1e4:
            for cand, f in _SUFFIXES:
                if max_abs >= 10 * f:
                    suffix, scale = cand, f
    s = step / scale
    decimals = max(0, -math.floor(math.log10(s) + 1e-9)) if s > 0 else 0
    out = []
    for t in ticks:
        v = t / scale
        if abs(v) < s * 1e-6:
            num = "0"
        else:
            num = f"{v:.{decimals}f}" + suffix
        out.append(_with_unit(num, shown_unit))
    return out


def _log_tick_labels(ticks: Sequence[float], unit: str) -> list[str]:
    return [fmt_value(t, unit) for t in ticks]


# ---------------------------------------------------------------------------
# scales and ticks
# ---------------------------------------------------------------------------


def _clean(v: float) -> float:
    """Remove float noise such as 0.30000000000000004."""
    return float(f"{v:.12g}")


def nice_linear_ticks(lo: float, hi: float, target: int = 6) -> tuple[float, float, list[float], float]:
    """Nice 1-2-5 ticks covering [lo, hi].

    Returns ``(domain_lo, domain_hi, ticks, step)``; the domain is widened to
    whole steps.  Equal or non-finite bounds are padded to a valid range.
    """
    if not (math.isfinite(lo) and math.isfinite(hi)):
        lo, hi = 0.0, 1.0
    if lo > hi:
        lo, hi = hi, lo
    if lo == hi:
        pad = abs(lo) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / max(target - 1, 1)
    base = 10.0 ** math.floor(math.log10(raw))
    step = 10 * base
    for m in (1, 2, 5, 10):
        if m * base >= raw * (1 - 1e-9):
            step = m * base
            break
    step = _clean(step)
    i0 = math.floor(lo / step + 1e-9)
    i1 = math.ceil(hi / step - 1e-9)
    ticks = [_clean(i * step) for i in range(i0, i1 + 1)]
    return ticks[0], ticks[-1], ticks, step


def log10_ticks(lo: float, hi: float) -> tuple[float, float, list[float]]:
    """Ticks for a log10 axis covering the positive range [lo, hi].

    The domain is widened to whole decades and the ticks are the powers of ten
    in it; when the data span a single decade, 2x and 5x ticks are added.
    Invalid bounds give the domain [1, 10]; a single value is padded by one
    decade on each side when it is itself a power of ten.
    """
    if not (math.isfinite(lo) and math.isfinite(hi) and lo > 0 and hi > 0):
        lo, hi = 1.0, 10.0
    if lo > hi:
        lo, hi = hi, lo
    e0 = math.floor(math.log10(lo) + 1e-9)
    e1 = math.ceil(math.log10(hi) - 1e-9)
    if e0 == e1:
        e0, e1 = e0 - 1, e1 + 1
    ticks = [float(f"1e{e}") for e in range(e0, e1 + 1)]
    if e1 - e0 == 1:
        ticks = [ticks[0], _clean(2 * ticks[0]), _clean(5 * ticks[0]), ticks[1]]
    return float(f"1e{e0}"), float(f"1e{e1}"), ticks


@dataclass(frozen=True)
class Scale:
    """Maps data values in [lo, hi] to pixels in [p0, p1] (linear or log10)."""

    lo: float
    hi: float
    p0: float
    p1: float
    log: bool = False

    def __call__(self, v: float) -> float:
        if self.log:
            a, b, x = math.log10(self.lo), math.log10(self.hi), math.log10(v)
        else:
            a, b, x = self.lo, self.hi, v
        t = (x - a) / (b - a) if b != a else 0.5
        return self.p0 + t * (self.p1 - self.p0)


def _ok(v: object, log: bool) -> bool:
    """Usable for scaling/drawing: a finite number (and > 0 on a log axis)."""
    if v is None or isinstance(v, bool):
        return False
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return math.isfinite(f) and (f > 0 or not log)


@dataclass(frozen=True)
class _Axis:
    scale: Scale
    ticks: list[float]
    labels: list[str]
    minor: list[float]


def _make_axis(values: Iterable[float], log: bool, p0: float, p1: float, unit: str,
               *, include_zero: bool = False, label_spacing: float | None = None) -> _Axis:
    vals = [float(v) for v in values if _ok(v, log)]
    plot_len = abs(p1 - p0)
    minor: list[float] = []
    if log:
        lo, hi = (min(vals), max(vals)) if vals else (1.0, 10.0)
        dlo, dhi, ticks = log10_ticks(lo, hi)
        decades = round(math.log10(dhi / dlo))
        if plot_len / max(decades, 1) >= 100:
            for e in range(round(math.log10(dlo)), round(math.log10(dhi))):
                minor += [_clean(m * 10.0 ** e) for m in range(2, 10)]
            minor = [m for m in minor if m not in ticks]
        labels = _log_tick_labels(ticks, unit)
    else:
        if vals:
            lo, hi = min(vals), max(vals)
        else:
            lo, hi = 0.0, 1.0
        if include_zero:
            lo, hi = min(lo, 0.0), max(hi, 0.0)
            if lo == hi == 0.0:
                hi = 1.0
        target = max(3, min(8, int(plot_len / (label_spacing or 90)) + 1))
        dlo, dhi, ticks, step = nice_linear_ticks(lo, hi, target)
        labels = _linear_tick_labels(ticks, step, unit)
    return _Axis(Scale(dlo, dhi, p0, p1, log), ticks, labels, minor)


def _label_stride(positions: Sequence[float], sizes: Sequence[float]) -> int:
    """Label every k-th tick so that labels of the given sizes do not collide."""
    if len(positions) < 2:
        return 1
    gap = min(abs(b - a) for a, b in zip(positions, positions[1:]))
    need = max(sizes) + 8
    return max(1, math.ceil(need / gap)) if gap > 0 else len(positions)


def _x_axis(axis: _Axis, y_top: float, y_bottom: float, caption: str = "") -> list[str]:
    s = axis.scale
    out = ['<g class="axis x-axis">']
    for m in axis.minor:
        x = _n(s(m))
        out.append(f'<line class="grid minor" x1="{x}" x2="{x}" y1="{_n(y_top)}" y2="{_n(y_bottom)}" '
                   f'stroke="{_GRID_MINOR}"/>')
    xs = [s(t) for t in axis.ticks]
    stride = _label_stride(xs, [_text_w(lab) for lab in axis.labels])
    for i, (t, x, lab) in enumerate(zip(axis.ticks, xs, axis.labels)):
        xn = _n(x)
        out.append(f'<line class="grid" x1="{xn}" x2="{xn}" y1="{_n(y_top)}" y2="{_n(y_bottom)}" '
                   f'stroke="{_GRID}"/>')
        out.append(f'<line class="tick" data-value="{t:.12g}" x1="{xn}" x2="{xn}" '
                   f'y1="{_n(y_bottom)}" y2="{_n(y_bottom + 4)}" stroke="{_AXIS}"/>')
        if i % stride == 0:
            out.append(f'<text class="tick-label" x="{xn}" y="{_n(y_bottom + 15)}" text-anchor="middle" '
                       f'fill="{_MUTED}">{_esc(lab)}</text>')
    out.append(f'<line class="axis-line" x1="{_n(s.p0)}" x2="{_n(s.p1)}" y1="{_n(y_bottom)}" '
               f'y2="{_n(y_bottom)}" stroke="{_AXIS}"/>')
    if caption:
        out.append(f'<text class="axis-caption" x="{_n(s.p1)}" y="{_n(y_bottom + 31)}" text-anchor="end" '
                   f'fill="{_MUTED}" font-size="10">{_esc(caption)}</text>')
    out.append("</g>")
    return out


def _y_axis(axis: _Axis, x_left: float, x_right: float) -> list[str]:
    s = axis.scale
    out = ['<g class="axis y-axis">']
    for m in axis.minor:
        y = _n(s(m))
        out.append(f'<line class="grid minor" x1="{_n(x_left)}" x2="{_n(x_right)}" y1="{y}" y2="{y}" '
                   f'stroke="{_GRID_MINOR}"/>')
    ys = [s(t) for t in axis.ticks]
    stride = _label_stride(ys, [12.0] * len(ys))
    for i, (t, y, lab) in enumerate(zip(axis.ticks, ys, axis.labels)):
        yn = _n(y)
        out.append(f'<line class="grid" x1="{_n(x_left)}" x2="{_n(x_right)}" y1="{yn}" y2="{yn}" '
                   f'stroke="{_GRID}"/>')
        out.append(f'<line class="tick" data-value="{t:.12g}" x1="{_n(x_left - 4)}" x2="{_n(x_left)}" '
                   f'y1="{yn}" y2="{yn}" stroke="{_AXIS}"/>')
        if i % stride == 0:
            out.append(f'<text class="tick-label" x="{_n(x_left - 7)}" y="{yn}" dy="0.35em" '
                       f'text-anchor="end" fill="{_MUTED}">{_esc(lab)}</text>')
    out.append(f'<line class="axis-line" x1="{_n(x_left)}" x2="{_n(x_left)}" y1="{_n(s.p0)}" '
               f'y2="{_n(s.p1)}" stroke="{_AXIS}"/>')
    out.append("</g>")
    return out


# ---------------------------------------------------------------------------
# svg skeleton
# ---------------------------------------------------------------------------


def _open(kind: str, title: str, width: float, height: float, css_class: str) -> list[str]:
    w, h = _n(width), _n(height)
    max_chars = max(8, int((width - 20) / (_CHAR_W * 13 / _FS)))
    return [
        f'<svg xmlns="{SVG_NS}" class="{_esc(css_class)}" data-plot="{kind}" role="img" '
        f'aria-label="{_esc(title)}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        f'font-family="{_FONT}" font-size="{_FS}">',
        f"<title>{_esc(title)}</title>",
        f'<rect class="background" x="0" y="0" width="{w}" height="{h}" fill="#ffffff"/>',
        f'<text class="title" x="10" y="20" font-size="13" font-weight="600" fill="{_TEXT}">'
        f"{_esc(_truncate(title, max_chars))}</text>",
    ]


def _close(parts: list[str]) -> str:
    parts.append("</svg>")
    return "\n".join(parts)


def _left_margin(labels: Iterable[str], width: float, *, min_px: float = 60) -> tuple[float, int]:
    """Left margin for row labels (at most ~34 characters or 40% of the width) and the truncation length."""
    longest = max((len(str(lab)) for lab in labels), default=0)
    cap = min(width * 0.4, 18 + 34 * _CHAR_W)
    left = min(cap, max(min_px, 18 + longest * _CHAR_W))
    max_chars = max(4, int((left - 18) / _CHAR_W))
    return left, max_chars


# ---------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------


def _quantile(sorted_vals: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default, Hyndman-Fan type 7)."""
    n = len(sorted_vals)
    if n == 1:
        return sorted_vals[0]
    pos = q * (n - 1)
    i = math.floor(pos)
    frac = pos - i
    if i + 1 >= n:
        return sorted_vals[-1]
    return sorted_vals[i] + frac * (sorted_vals[i + 1] - sorted_vals[i])


# ---------------------------------------------------------------------------
# box plot
# ---------------------------------------------------------------------------


def box_plot(groups: list[tuple[str, list[float]]], *, title: str, unit: str, log: bool = True,
             width: int = 760, height: int | None = None, css_class: str = "plot box-plot") -> str:
    """Horizontal box plots, one row per ``(label, samples)``.

    Box from P25 to P75 with a median line, Tukey whiskers (to the most extreme
    samples within 1.5×IQR of the box, i.e. the fences clamped to the data),
    outliers as hollow circles, and all samples as faint dots with a
    deterministic vertical jitter.  The median value is printed at the right.
    Non-finite values (and non-positive ones on a log axis) are ignored; a row
    without usable samples shows "no data".
    """
    rows = [(str(label), [float(v) for v in samples if _ok(v, log)]) for label, samples in groups]
    n_rows = max(len(rows), 1)
    left, max_chars = _left_margin((lab for lab, _ in rows), width)
    right, top, bottom = 70.0, 34.0, 44.0
    if height is None:
        row_h = 26.0
        height = top + n_rows * row_h + bottom
    else:
        row_h = max(8.0, (height - top - bottom) / n_rows)
    x0, x1 = left, max(left + 40, width - right)
    y_top, y_bottom = top, top + n_rows * row_h

    axis = _make_axis((v for _, vals in rows for v in vals), log, x0, x1, unit)
    sx = axis.scale
    parts = _open("box", title, width, height, css_class)

    for i in range(len(rows)):
        if i % 2 == 1:
            parts.append(f'<rect class="row-band" x="{_n(x0)}" y="{_n(top + i * row_h)}" '
                         f'width="{_n(x1 - x0)}" height="{_n(row_h)}" fill="{_BAND}"/>')
    parts += _x_axis(axis, y_top, y_bottom, "log scale" if log else "")

    box_h = max(4.0, min(16.0, row_h * 0.55))
    colour = PALETTE[0]
    if not rows:
        parts.append(f'<text class="no-data" x="{_n((x0 + x1) / 2)}" y="{_n(top + row_h / 2)}" dy="0.35em" '
                     f'text-anchor="middle" fill="{_MUTED}">no data</text>')
    for i, (label, vals) in enumerate(rows):
        yc = top + (i + 0.5) * row_h
        parts.append(f'<g class="row" data-label="{_esc(label)}">')
        parts.append(_label(x0 - 8, yc, label, max_chars))
        if not vals:
            parts.append(f'<text class="no-data" x="{_n(x0 + 6)}" y="{_n(yc)}" dy="0.35em" '
                         f'fill="{_MUTED}" font-style="italic">no data</text>')
            parts.append("</g>")
            continue
        s = sorted(vals)
        q1, med, q3 = _quantile(s, 0.25), _quantile(s, 0.5), _quantile(s, 0.75)
        iqr = q3 - q1
        lo_fence, hi_fence = q1 - 1.5 * iqr, q3 + 1.5 * iqr
        inside = [v for v in s if lo_fence <= v <= hi_fence]
        w_lo, w_hi = (inside[0], inside[-1]) if inside else (q1, q3)
        outliers = [v for v in s if v < w_lo or v > w_hi]

        # raw samples, thinned evenly over the original order if there are very many
        idx = range(len(vals))
        if len(vals) > _MAX_DOTS:
            k = len(vals) / _MAX_DOTS
            idx = [int(j * k) for j in range(_MAX_DOTS)]
        parts.append(f'<g class="samples" fill="{colour}" fill-opacity="0.35">')
        for j in idx:
            jitter = (((j + 1) * _GOLDEN) % 1.0 - 0.5) * box_h * 1.1
            parts.append(f'<circle class="sample" cx="{_n(sx(vals[j]))}" cy="{_n(yc + jitter)}" r="1.8"/>')
        parts.append("</g>")

        xq1, xq3, xm = sx(q1), sx(q3), sx(med)
        bx, bw = (xq1, xq3 - xq1) if xq3 - xq1 >= 1 else (xm - 0.5, 1.0)
        tip = (f"{label}: median {fmt_value(med, unit)}, P25 {fmt_value(q1, unit)}, "
               f"P75 {fmt_value(q3, unit)}, min {fmt_value(s[0], unit)}, "
               f"max {fmt_value(s[-1], unit)}, n={len(s)}")
        parts.append(f'<g class="box"><title>{_esc(tip)}</title>')
        cap = box_h * 0.5
        for a, b in ((w_lo, q1), (q3, w_hi)):
            xa, xb = sx(a), sx(b)
            parts.append(f'<line class="whisker" x1="{_n(xa)}" x2="{_n(xb)}" y1="{_n(yc)}" y2="{_n(yc)}" '
                         f'stroke="{_TEXT}" stroke-width="1"/>')
        for w in (w_lo, w_hi):
            xw = _n(sx(w))
            parts.append(f'<line class="whisker-cap" x1="{xw}" x2="{xw}" y1="{_n(yc - cap / 2)}" '
                         f'y2="{_n(yc + cap / 2)}" stroke="{_TEXT}" stroke-width="1"/>')
        parts.append(f'<rect class="iqr" x="{_n(bx)}" y="{_n(yc - box_h / 2)}" width="{_n(bw)}" '
                     f'height="{_n(box_h)}" fill="{colour}" fill-opacity="0.22" stroke="{colour}" '
                     f'stroke-width="1.2"/>')
        parts.append(f'<line class="median" data-value="{med:.12g}" x1="{_n(xm)}" x2="{_n(xm)}" '
                     f'y1="{_n(yc - box_h / 2)}" y2="{_n(yc + box_h / 2)}" stroke="{_TEXT}" '
                     f'stroke-width="2"/>')
        for v in outliers:
            parts.append(f'<circle class="outlier" cx="{_n(sx(v))}" cy="{_n(yc)}" r="2.4" fill="none" '
                         f'stroke="{_TEXT}" stroke-width="0.8"/>')
        parts.append("</g>")
        parts.append(f'<text class="median-label" x="{_n(x1 + 6)}" y="{_n(yc)}" dy="0.35em" '
                     f'fill="{_MUTED}">{_esc(fmt_value(med, unit))}</text>')
        parts.append("</g>")
    return _close(parts)


# ---------------------------------------------------------------------------
# grouped bars
# ---------------------------------------------------------------------------


def grouped_bars(groups: list[tuple[str, list[tuple[str, float, float | None, float | None]]]], *,
                 title: str, unit: str, log: bool = True, width: int = 760, height: int | None = None,
                 css_class: str = "plot grouped-bars") -> str:
    """Horizontal bars in groups: ``[(group_label, [(bar_label, value, err_lo, err_hi), ...]), ...]``.

    Each group gets a bold header row above its bars.  ``err_lo``/``err_hi`` (either
    may be None) draw a thin error bar, e.g. a bootstrap 95% CI of the median.  The
    value is printed after each bar; bars are coloured by their position within the
    group (Okabe-Ito palette).  On a log axis bars start at the left edge of the
    axis; on a linear axis they start at zero.  Unusable values show "no data".
    """
    header_h, bar_h, gap = 22.0, 20.0, 6.0
    bar_labels = [str(b[0]) for _, bars in groups for b in bars]
    left, max_chars = _left_margin(bar_labels, width)
    right, top, bottom = 64.0, 34.0, 44.0
    natural = sum(header_h + bar_h * len(bars) for _, bars in groups) + gap * max(len(groups) - 1, 0)
    natural = max(natural, bar_h)
    if height is None:
        k = 1.0
        height = top + natural + bottom
    else:
        k = max(0.3, (height - top - bottom) / natural)
    x0, x1 = left, max(left + 40, width - right)

    values: list[float] = []
    for _, bars in groups:
        for _lab, v, lo, hi in bars:
            values += [x for x in (v, lo, hi) if _ok(x, log)]
    axis = _make_axis(values, log, x0, x1, unit, include_zero=not log)
    sx = axis.scale
    base_x = sx(sx.lo) if log else sx(0.0)
    y_bottom = top + natural * k

    parts = _open("bars", title, width, height, css_class)
    parts += _x_axis(axis, top, y_bottom, "log scale" if log else "")
    if not groups:
        parts.append(f'<text class="no-data" x="{_n((x0 + x1) / 2)}" y="{_n(top + bar_h / 2)}" dy="0.35em" '
                     f'text-anchor="middle" fill="{_MUTED}">no data</text>')
    if not log:
        parts.append(f'<line class="zero-line" x1="{_n(base_x)}" x2="{_n(base_x)}" y1="{_n(top)}" '
                     f'y2="{_n(y_bottom)}" stroke="{_AXIS}"/>')

    thick = bar_h * k * 0.68
    y = top
    for gi, (glabel, bars) in enumerate(groups):
        if gi:
            y += gap * k
        parts.append(f'<g class="group" data-label="{_esc(glabel)}">')
        hy = y + header_h * k * 0.55
        max_head = max(8, int((width - 20) / (_CHAR_W * 1.05)))
        parts.append(_label(10, hy, str(glabel), max_head, anchor="start", cls="group-label",
                            extra=' font-weight="600"'))
        y += header_h * k
        for j, (blabel, v, lo, hi) in enumerate(bars):
            yc = y + bar_h * k / 2
            colour = PALETTE[j % len(PALETTE)]
            parts.append(_label(x0 - 8, yc, str(blabel), max_chars))
            if not _ok(v, log):
                parts.append(f'<text class="no-data" x="{_n(x0 + 6)}" y="{_n(yc)}" dy="0.35em" '
                             f'fill="{_MUTED}" font-style="italic">no data</text>')
                y += bar_h * k
                continue
            v = float(v)
            xv = sx(v)
            bx, bw = min(base_x, xv), max(abs(xv - base_x), 0.5)
            tip = f"{blabel}: {fmt_value(v, unit)}"
            lo_ok, hi_ok = _ok(lo, log), _ok(hi, log)
            if lo_ok or hi_ok:
                tip += (f" (interval {fmt_value(lo, unit) if lo_ok else '–'} – "
                        f"{fmt_value(hi, unit) if hi_ok else '–'})")
            parts.append(f'<rect class="bar" x="{_n(bx)}" y="{_n(yc - thick / 2)}" width="{_n(bw)}" '
                         f'height="{_n(thick)}" fill="{colour}" fill-opacity="0.85">'
                         f"<title>{_esc(tip)}</title></rect>")
            text_x = max(xv, base_x)
            if lo_ok or hi_ok:
                xa = sx(float(lo)) if lo_ok else xv
                xb = sx(float(hi)) if hi_ok else xv
                cap = thick * 0.7
                parts.append(f'<g class="err" stroke="{_TEXT}" stroke-width="1.2">')
                parts.append(f'<line x1="{_n(xa)}" x2="{_n(xb)}" y1="{_n(yc)}" y2="{_n(yc)}"/>')
                for xe, ok in ((xa, lo_ok), (xb, hi_ok)):
                    if ok:
                        parts.append(f'<line x1="{_n(xe)}" x2="{_n(xe)}" y1="{_n(yc - cap / 2)}" '
                                     f'y2="{_n(yc + cap / 2)}"/>')
                parts.append("</g>")
                text_x = max(text_x, xa, xb)
            parts.append(f'<text class="value" x="{_n(text_x + 5)}" y="{_n(yc)}" dy="0.35em" '
                         f'fill="{_TEXT}">{_esc(fmt_value(v, unit))}</text>')
            y += bar_h * k
        parts.append("</g>")
    return _close(parts)


def stacked_bars(rows: list[tuple[str, list[tuple[str, float]]]], *, title: str, unit: str,
                 width: int = 760, css_class: str = "plot stacked-bars") -> str:
    """Horizontal stacked bars on a linear axis from zero: ``[(row_label, [(segment, value), ...])]``.

    A segment name keeps its colour in every row (a legend lists them in first-seen order), so a
    per-message handshake breakdown reads across configurations. The row total is printed at the
    end of each bar; non-finite or negative segments are dropped.
    """
    bar_h, top, bottom, right = 24.0, 34.0, 44.0, 70.0
    names: list[str] = []
    for _, segs in rows:
        for name, _v in segs:
            if str(name) not in names:
                names.append(str(name))
    colour = {n: PALETTE[i % len(PALETTE)] if i < len(PALETTE) else _EXTRA_COLOURS[(i - len(PALETTE)) % len(_EXTRA_COLOURS)]
              for i, n in enumerate(names)}
    left, max_chars = _left_margin([r[0] for r in rows], width)
    x0, x1 = left, max(left + 40, width - right)
    # legend: wrap entries over lines under the title
    legend, lx, ly = [], x0, top
    for n in names:
        w = 18 + _text_w(n) + 14
        if lx + w > width - 10 and lx > x0:
            lx, ly = x0, ly + 16
        legend.append((n, lx, ly))
        lx += w
    top = ly + 22
    clean = [(lab, [(str(n), float(v)) for n, v in segs if _ok(v, False) and float(v) >= 0]) for lab, segs in rows]
    totals = [sum(v for _, v in segs) for _, segs in clean]
    height = top + bar_h * max(1, len(rows)) + bottom
    axis = _make_axis(totals or [0.0], False, x0, x1, unit, include_zero=True)
    sx = axis.scale
    y_bottom = top + bar_h * max(1, len(rows))
    parts = _open("stacked", title, width, height, css_class)
    parts += _x_axis(axis, top, y_bottom)
    for n, lx, ly in legend:
        parts.append(f'<g class="legend-item"><rect x="{_n(lx)}" y="{_n(ly - 5)}" width="12" height="10" '
                     f'fill="{colour[n]}"/><text x="{_n(lx + 16)}" y="{_n(ly)}" dy="0.35em" fill="{_TEXT}">'
                     f'{_esc(n)}</text></g>')
    if not rows:
        parts.append(f'<text class="no-data" x="{_n((x0 + x1) / 2)}" y="{_n(top + bar_h / 2)}" dy="0.35em" '
                     f'text-anchor="middle" fill="{_MUTED}">no data</text>')
    for i, ((lab, segs), total) in enumerate(zip(clean, totals)):
        yc = top + bar_h * (i + 0.5)
        parts.append(_label(x0 - 8, yc, str(lab), max_chars))
        parts.append(f'<g class="stack" data-label="{_esc(lab)}">')
        acc = 0.0
        for n, v in segs:
            xa, xb = sx(acc), sx(acc + v)
            parts.append(f'<rect class="segment" x="{_n(xa)}" y="{_n(yc - bar_h * 0.34)}" '
                         f'width="{_n(max(xb - xa, 0.0))}" height="{_n(bar_h * 0.68)}" fill="{colour[n]}">'
                         f'<title>{_esc(f"{lab} — {n}: {fmt_value(v, unit)}")}</title></rect>')
            acc += v
        parts.append("</g>")
        parts.append(f'<text class="value" x="{_n(sx(total) + 5)}" y="{_n(yc)}" dy="0.35em" fill="{_TEXT}">'
                     f'{_esc(fmt_value(total, unit))}</text>')
    return _close(parts)


_EXTRA_COLOURS = ("#999999", "#882255", "#44AA99", "#117733", "#332288", "#DDCC77")


# ---------------------------------------------------------------------------
# line plot
# ---------------------------------------------------------------------------


def line_plot(series: list[tuple[str, list[tuple[float, float]]]], *, title: str, x_label: str, y_label: str,
              log_x: bool = False, log_y: bool = False, width: int = 760, height: int = 360,
              css_class: str = "plot line-plot") -> str:
    """One polyline with point markers per ``(name, [(x, y), ...])`` series.

    Points are drawn in the given order.  Points that are non-finite (or
    non-positive on a log axis) are dropped.  A legend is laid out under the
    title, wrapping onto more lines when needed.
    """
    clean = [(str(name), [(float(x), float(y)) for x, y in pts if _ok(x, log_x) and _ok(y, log_y)])
             for name, pts in series]

    # legend layout (under the title, wrapped)
    left, right = 68.0, 24.0
    legend: list[tuple[float, int, str, str]] = []  # (x, line, colour, name)
    lx, line_no = left, 0
    for i, (name, _) in enumerate(clean):
        shown = _truncate(name, 40)
        w = 26 + _text_w(shown) + 16
        if lx + w > width - right and lx > left:
            lx, line_no = left, line_no + 1
        legend.append((lx, line_no, PALETTE[i % len(PALETTE)], name))
        lx += w
    legend_lines = line_no + 1 if clean else 0
    top = 34.0 + legend_lines * 18 + 6
    bottom = 48.0
    height = max(height, int(top + 240 + bottom))  # a long legend grows the figure, not squeezes the plot
    x0, x1 = left, max(left + 40, width - right)
    y0, y1 = max(top + 40, height - bottom), top  # y axis maps lo -> bottom

    ax = _make_axis((x for _, pts in clean for x, _ in pts), log_x, x0, x1, "")
    ay = _make_axis((y for _, pts in clean for _, y in pts), log_y, y0, y1, "", label_spacing=50)
    sx, sy = ax.scale, ay.scale

    parts = _open("line", title, width, height, css_class)
    parts += _y_axis(ay, x0, x1)
    parts += _x_axis(ax, y1, y0)
    parts.append(f'<text class="axis-label x-label" x="{_n((x0 + x1) / 2)}" y="{_n(y0 + 36)}" '
                 f'text-anchor="middle" fill="{_TEXT}">{_esc(x_label)}'
                 f'{_esc(" (log scale)") if log_x else ""}</text>')
    ymid = (y0 + y1) / 2
    parts.append(f'<text class="axis-label y-label" x="14" y="{_n(ymid)}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {_n(ymid)})" fill="{_TEXT}">{_esc(y_label)}'
                 f'{_esc(" (log scale)") if log_y else ""}</text>')

    parts.append('<g class="legend">')
    for (lx, ln, colour, name) in legend:
        ly = 34.0 + ln * 18
        parts.append(f'<line x1="{_n(lx)}" x2="{_n(lx + 20)}" y1="{_n(ly)}" y2="{_n(ly)}" stroke="{colour}" '
                     f'stroke-width="2"/>')
        parts.append(f'<circle cx="{_n(lx + 10)}" cy="{_n(ly)}" r="3" fill="{colour}"/>')
        parts.append(_label(lx + 26, ly, name, 40, anchor="start", cls="legend-label"))
    parts.append("</g>")

    if not any(pts for _, pts in clean):
        parts.append(f'<text class="no-data" x="{_n((x0 + x1) / 2)}" y="{_n(ymid)}" dy="0.35em" '
                     f'text-anchor="middle" fill="{_MUTED}">no data</text>')
    for i, (name, pts) in enumerate(clean):
        colour = PALETTE[i % len(PALETTE)]
        parts.append(f'<g class="series" data-series="{_esc(name)}">')
        coords = [(sx(x), sy(y)) for x, y in pts]
        if len(coords) >= 2:
            pstr = " ".join(f"{_n(px)},{_n(py)}" for px, py in coords)
            parts.append(f'<polyline class="line" points="{pstr}" fill="none" stroke="{colour}" '
                         f'stroke-width="1.8" stroke-linejoin="round"/>')
        for (x, y), (px, py) in zip(pts, coords):
            tip = f"{name}: {_fmt_sig(x, 6)}, {_fmt_sig(y, 6)}"
            parts.append(f'<circle class="point" cx="{_n(px)}" cy="{_n(py)}" r="3" fill="{colour}" '
                         f'stroke="#ffffff" stroke-width="0.8"><title>{_esc(tip)}</title></circle>')
        parts.append("</g>")
    return _close(parts)
