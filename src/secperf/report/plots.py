"""The report's plots, drawn with matplotlib: box plots, grouped bars, stacked bars and lines.

Each drawing function returns a `matplotlib.figure.Figure` built without pyplot (no display, no
global figure registry); `svg.inline` turns one into the report's inline SVG and `figures` saves it
as PNG and PDF. A `Plot` names one figure of a Result (kind, data, title, caption, file name) so the
HTML report and `--figures` draw exactly the same set.

Drawn marks carry a gid (``box-3``, ``bar-0``, ``segment-1-2``, ``series-0``, ...) that the inline
SVG turns into a class, so tests and the browser can count boxes, bars and lines.
"""

from __future__ import annotations

import functools
import math
import re
import textwrap
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec, SupportsFloat, SupportsIndex, TypeGuard

import numpy as np

from .units import fmt_value

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

_P = ParamSpec("_P")
_Number = SupportsFloat | SupportsIndex | str | bytes  # what float() takes

# Okabe-Ito colour-blind-safe palette, ordered for contrast on white (faint yellow last)
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#000000",
    "#F0E442",
    "#999999",
    "#882255",
    "#44AA99",
    "#117733",
    "#332288",
    "#DDCC77",
)
TEXT, MUTED, GRID = "#222222", "#666666", "#e5e5e5"

MAX_DOTS = 400  # raw-sample dots per box-plot row (evenly thinned beyond this): keeps the SVG small
LABEL_CHARS = 64  # row labels longer than this are shortened with an ellipsis (kept distinct: see labels())
WIDTH_IN = 14.0  # 1,400 px at 100 dpi: the report's column width (the page is 1,500 px at most)
_GOLDEN = 0.6180339887498949

# Everything that makes the output reproducible and self-contained: text stays text (no embedded
# fonts, searchable, escaped by matplotlib), a fixed salt for the SVG's ids, no dates.
STYLE: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "secperf",
    "pdf.fonttype": 42,  # TrueType in the PDF: text stays text for print and copy
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.edgecolor": "#999999",
    "axes.labelcolor": TEXT,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": GRID,
    "grid.linewidth": 0.8,
    "xtick.color": MUTED,
    "ytick.color": MUTED,
    "text.color": TEXT,
    "legend.frameon": False,
    "legend.fontsize": 8.5,
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "path.simplify": False,  # every sample dot and point is drawn where it is
}

_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def style() -> AbstractContextManager[None]:
    """The context every plot is built and saved in (rcParams are read at both moments)."""
    from matplotlib import rc_context  # reason: matplotlib is loaded only when a figure is drawn (start-up)

    return rc_context(STYLE)


def text(s: object, limit: int | None = None) -> str:
    """Text from a Result as matplotlib shows it: characters XML cannot hold replaced, ``$`` kept
    literal (matplotlib would otherwise read ``$...$`` as math), optionally shortened."""
    s = _XML_INVALID.sub("\ufffd", "" if s is None else str(s))
    if limit is not None and len(s) > limit:
        s = s[: limit - 1].rstrip() + "\u2026"
    return s.replace("$", r"\$")


def labels(raw: Sequence[object], limit: int = LABEL_CHARS) -> list[str]:
    """Row or legend labels as drawn: each cut to `limit` characters with an ellipsis, except that
    two different labels never come out the same. Labels the plain cut would merge
    (``... key se:iot-safe-sim`` and ``... key se:iot-safe-sim:cold``) are cut in the middle
    instead, keeping the tail that tells them apart; if even that merges them they are shown
    whole, wrapped over lines of `limit` characters."""
    names = ["" if r is None else str(r) for r in raw]

    def merged(shown: list[str]) -> set[int]:
        seen: dict[str, set[str]] = {}
        for r, s in zip(names, shown):
            seen.setdefault(s, set()).add(r)
        return {i for i, s in enumerate(shown) if len(seen[s]) > 1}

    out = [text(r, limit) for r in names]
    bad = merged(out)
    if bad:
        head = max(1, (limit - 1) // 3)
        for i in bad:
            r = names[i]
            out[i] = text(r[:head].rstrip() + "\u2026" + r[-(limit - 1 - head) :]) if len(r) > limit else text(r)
        for i in merged(out):
            out[i] = text(textwrap.fill(names[i], max(limit, 8), break_on_hyphens=False))
    return out


def _finite(v: object, log: bool) -> TypeGuard[_Number]:
    if v is None or isinstance(v, bool) or not isinstance(v, (SupportsFloat, SupportsIndex, str, bytes)):
        return False
    try:
        f = float(v)
    except (TypeError, ValueError):
        return False
    return math.isfinite(f) and (f > 0 or not log)


def _value_axis(axis: Axis, unit: str, log: bool, values: Iterable[float] = ()) -> None:
    """Log axes tick at powers of ten (and 2x, 5x when the data span under two decades), every tick
    labelled in the unit (1 µs, 10 µs, 1 ms)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # reason: matplotlib only when drawn

    if log:  # the caller has set the log scale; this only picks the ticks
        vals = [v for v in values if v > 0]
        narrow = bool(vals) and max(vals) / min(vals) < 100
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if narrow else (1.0,), numticks=12))
        axis.set_minor_formatter(NullFormatter())
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: text(fmt_value(v, unit)) if v or not log else ""))


def _figure(height_in: float, title: str) -> Figure:
    """A figure the report's width with the title at the top left (above a legend, if any)."""
    from matplotlib.figure import Figure  # reason: matplotlib only when a figure is drawn

    fig = Figure(figsize=(WIDTH_IN, max(height_in, 1.6)), layout="constrained")
    fig.suptitle(text(title), x=0.01, ha="left", fontsize=10.5, fontweight="bold", gid="title")
    return fig


def _styled(draw: Callable[_P, Figure]) -> Callable[_P, Figure]:
    """Build the figure inside `style()`: some rcParams are read when artists are made."""

    @functools.wraps(draw)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> Figure:
        with style():
            return draw(*args, **kwargs)

    return wrapper


def _legend(ax: Axes, ncols: int, **kw: Any) -> None:
    """The legend between the title and the plot (inside the layout, never over the title)."""
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.01), ncols=ncols, borderaxespad=0.2, **kw)


def _no_data(ax: Axes, y: float | None = None) -> None:
    """'no data' in the middle of an empty chart, or at the start of row `y` of a horizontal chart (a
    box or a bar without a usable value)."""
    look: dict[str, Any] = {"va": "center", "color": MUTED, "style": "italic"}
    if y is None:
        ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", gid="no-data", **look)
        return
    at: dict[str, Any] = {
        "xy": (0.0, y),
        "xycoords": ("axes fraction", "data"),
        "xytext": (6, 0),
        "textcoords": "offset points",
    }
    ax.annotate("no data", **at, **look)


# --- box plot --------------------------------------------------------------------------------------
def _box_samples(ax: Any, y: float, vals: list[float], unit: str) -> None:
    """A box row's samples as faint dots with a deterministic jitter (at most MAX_DOTS of them), and its
    median printed at the right of the axes."""
    idx = range(len(vals)) if len(vals) <= MAX_DOTS else [int(j * len(vals) / MAX_DOTS) for j in range(MAX_DOTS)]
    jitter = [y + (((j + 1) * _GOLDEN) % 1.0 - 0.5) * 0.6 for j in idx]
    ax.scatter(
        [vals[j] for j in idx], jitter, s=4, color=PALETTE[0], alpha=0.35, linewidths=0, zorder=1, gid=f"samples-{y}"
    )
    ax.annotate(
        text(fmt_value(float(np.median(vals)), unit)),
        xy=(1.0, y),
        xycoords=("axes fraction", "data"),
        xytext=(4, 0),
        textcoords="offset points",
        va="center",
        color=MUTED,
        fontsize=8,
    )


@_styled
def box_plot(groups: list[tuple[str, list[float]]], *, title: str, unit: str, log: bool = True) -> Figure:
    """Horizontal box plots, one row per ``(label, samples)``, first row on top: box P25-P75, a
    median line, Tukey whiskers (1.5 IQR), outliers as hollow circles, every sample as a faint dot
    with a deterministic jitter; the median printed at the right. Non-finite values (and non-positive
    ones on a log axis) are left out; a row without usable samples says "no data"."""
    rows = [(str(label), [float(v) for v in samples if _finite(v, log)]) for label, samples in groups]
    fig = _figure(0.75 + 0.3 * max(len(rows), 1), title)
    ax = fig.add_subplot()
    n = len(rows)
    ys = [n - 1 - i for i in range(n)]  # first row on top
    filled = [(y, vals) for y, (_, vals) in zip(ys, rows) if vals]
    if filled:
        parts = ax.boxplot(
            [v for _, v in filled],
            positions=[y for y, _ in filled],
            orientation="horizontal",
            widths=0.55,
            whis=1.5,
            patch_artist=True,
            manage_ticks=False,
            flierprops={
                "marker": "o",
                "markerfacecolor": "none",
                "markeredgecolor": TEXT,
                "markersize": 3.5,
                "markeredgewidth": 0.7,
            },
            medianprops={"color": TEXT, "linewidth": 1.8},
            boxprops={"facecolor": PALETTE[0] + "38", "edgecolor": PALETTE[0], "linewidth": 1.1},
            whiskerprops={"color": TEXT, "linewidth": 0.9},
            capprops={"color": TEXT, "linewidth": 0.9},
        )
        for k, (y, vals) in enumerate(filled):
            parts["boxes"][k].set_gid(f"box-{y}")
            parts["medians"][k].set_gid(f"median-{y}")
            parts["fliers"][k].set_gid(f"outlier-{y}")
            _box_samples(ax, y, vals, unit)
    for y, (_label, vals) in zip(ys, rows):
        if not vals:
            _no_data(ax, y)
    if not rows:
        _no_data(ax)
    ax.set_yticks(ys, labels([lab for lab, _ in rows]))
    ax.set_ylim(-0.6, max(n, 1) - 0.4)
    ax.grid(False, axis="y")
    if log and filled:
        ax.set_xscale("log")
    _value_axis(ax.xaxis, unit, log and bool(filled), [v for _, vals in filled for v in vals])
    ax.set_xlabel(text("log scale" if log else ""), color=MUTED, fontsize=8, loc="right")
    return fig


# --- grouped bars ----------------------------------------------------------------------------------
@_styled
def grouped_bars(
    groups: list[tuple[str, list[tuple[str, float, float | None, float | None]]]],
    *,
    title: str,
    unit: str,
    log: bool = True,
) -> Figure:
    """Horizontal bars in labelled groups: ``[(group, [(bar, value, err_lo, err_hi), ...]), ...]``.
    A group's name is a bold row above its bars; bars are coloured by position within the group;
    ``err_lo``/``err_hi`` (either may be None) draw an error bar (e.g. the median's 95% interval);
    the value is printed after each bar; a bar without a usable value says "no data"."""
    rows: list[
        tuple[str, str, int, tuple[str, float, float | None, float | None] | None]
    ] = []  # (label, kind, position in group, bar)
    for glabel, bars in groups:
        rows.append((str(glabel), "group", 0, None))
        rows += [(str(b[0]), "bar", j, b) for j, b in enumerate(bars)]
    fig = _figure(0.8 + 0.24 * max(len(rows), 1), title)
    ax = fig.add_subplot()
    values = [float(x) for *_, b in rows if b for x in b[1:4] if _finite(x, log)]
    if log and values:
        ax.set_xscale("log")
    base = 10 ** math.floor(math.log10(min(values))) if log and values else 0.0
    n = len(rows)
    shown = labels([label for label, *_ in rows])
    for i, (_label, kind, j, bar) in enumerate(rows):
        y = n - 1 - i
        if kind == "group" or bar is None:  # a group's row has no bar
            continue
        _lab, v, lo, hi = bar
        if not _finite(v, log):
            _no_data(ax, y)
            continue
        v = float(v)
        ax.barh(y, v - base, left=base, height=0.68, color=PALETTE[j % len(PALETTE)], alpha=0.85, gid=f"bar-{y}")
        end = v
        lo_ok, hi_ok = _finite(lo, log), _finite(hi, log)
        if lo_ok or hi_ok:
            a = float(lo) if lo_ok and lo is not None else v
            b = float(hi) if hi_ok and hi is not None else v
            ax.errorbar(
                [v],
                [y],
                xerr=[[max(v - a, 0.0)], [max(b - v, 0.0)]],
                fmt="none",
                ecolor=TEXT,
                elinewidth=1.1,
                capsize=3,
                gid=f"err-{y}",
            )
            end = max(v, a, b)
        ax.annotate(
            text(fmt_value(v, unit)), xy=(end, y), xytext=(4, 0), textcoords="offset points", va="center", fontsize=8
        )
    ax.set_yticks(range(n - 1, -1, -1), shown)
    for tick, (_, kind, _, _) in zip(ax.get_yticklabels(), rows):
        if kind == "group":
            tick.set_fontweight("bold")
            tick.set_color(TEXT)
    ax.set_ylim(-0.6, max(n, 1) - 0.4)
    ax.grid(False, axis="y")
    if not groups:
        _no_data(ax)
    if values:
        ax.set_xlim(left=base if log else min(0.0, min(values)), right=max(values) * (3 if log else 1.15))
    _value_axis(ax.xaxis, unit, log and bool(values), values)
    ax.set_xlabel(text("log scale" if log else ""), color=MUTED, fontsize=8, loc="right")
    return fig


# --- stacked bars ----------------------------------------------------------------------------------
@_styled
def stacked_bars(rows: list[tuple[str, list[tuple[str, float]]]], *, title: str, unit: str) -> Figure:
    """Horizontal stacked bars from zero: ``[(row, [(segment, value), ...]), ...]``. A segment name
    keeps its colour in every row (legend in first-seen order), so a per-message breakdown reads
    across configurations; the row total is printed after the bar; non-finite or negative segments
    are left out."""
    names: list[str] = []
    clean = []
    for label, segs in rows:
        kept = [(str(s), float(v)) for s, v in segs if _finite(v, False) and float(v) >= 0]
        clean.append((str(label), kept))
        names += [s for s, _ in kept if s not in names]
    colour = {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(names)}
    legend_rows = math.ceil(len(names) / 6)
    fig = _figure(0.9 + 0.3 * max(len(rows), 1) + 0.2 * legend_rows, title)
    ax = fig.add_subplot()
    n = len(clean)
    for i, (_label, segs) in enumerate(clean):
        y = n - 1 - i
        acc = 0.0
        for j, (s, v) in enumerate(segs):
            ax.barh(
                y,
                v,
                left=acc,
                height=0.68,
                color=colour[s],
                gid=f"segment-{y}-{j}",
                label=text(s) if s in names else None,
            )
            if s in names:
                names.remove(s)  # one legend entry per segment name
            acc += v
        ax.annotate(
            text(fmt_value(acc, unit)), xy=(acc, y), xytext=(4, 0), textcoords="offset points", va="center", fontsize=8
        )
    ax.set_yticks(range(n - 1, -1, -1), labels([lab for lab, _ in clean]))
    ax.set_ylim(-0.6, max(n, 1) - 0.4)
    ax.grid(False, axis="y")
    ax.set_xlim(0, max([sum(v for _, v in segs) for _, segs in clean] + [1e-9]) * 1.15)  # room for the totals
    if not rows:
        _no_data(ax)
    elif legend_rows:
        _legend(ax, 6, handlelength=1.0)
    _value_axis(ax.xaxis, unit, False)
    return fig


# --- lines -----------------------------------------------------------------------------------------
@_styled
def line_plot(
    series: list[tuple[str, list[tuple[float, float]]]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    log_x: bool = False,
    log_y: bool = False,
) -> Figure:
    """One line with point markers per ``(name, [(x, y), ...])``, in the given order; points that are
    non-finite (or non-positive on a log axis) are left out. The legend sits under the title."""
    clean = [
        (str(name), [(float(x), float(y)) for x, y in pts if _finite(x, log_x) and _finite(y, log_y)])
        for name, pts in series
    ]
    legend_rows = math.ceil(len(clean) / 3)
    fig = _figure(4.2 + 0.2 * legend_rows, title)
    ax = fig.add_subplot()
    names = labels([name for name, _ in clean], 90)
    for i, (_name, pts) in enumerate(clean):
        ax.plot(
            [x for x, _ in pts],
            [y for _, y in pts],
            marker="o",
            markersize=4,
            linewidth=1.7,
            color=PALETTE[i % len(PALETTE)],
            markeredgecolor="white",
            markeredgewidth=0.6,
            label=names[i],
            gid=f"series-{i}",
        )
    if log_x:
        ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")
    _value_axis(ax.xaxis, "", log_x, [x for _, pts in clean for x, _ in pts])
    _value_axis(ax.yaxis, "", log_y, [y for _, pts in clean for _, y in pts])
    ax.set_xlabel(text(x_label + (" (log scale)" if log_x else "")))
    ax.set_ylabel(text(y_label + (" (log scale)" if log_y else "")))
    if not any(pts for _, pts in clean):
        _no_data(ax)
    if clean:
        _legend(ax, 3, handlelength=1.6)
    return fig


# --- one plot of a Result --------------------------------------------------------------------------
DRAW: dict[str, Callable[..., Figure]] = {
    "box": box_plot,
    "bars": grouped_bars,
    "stacked": stacked_bars,
    "line": line_plot,
}


@dataclass(frozen=True)
class Plot:
    """One figure of a Result: what `render` inlines as SVG and `--figures` writes as PNG and PDF.

    ``name`` is the stable file stem (``crypto-distribution-rsa``); ``options`` go to the drawing
    function of ``kind`` (unit, log, axis labels)."""

    name: str
    kind: str
    title: str
    data: list[Any]
    caption: str = ""
    options: dict[str, Any] = field(default_factory=dict)

    def figure(self) -> Figure:
        with style():
            return DRAW[self.kind](self.data, title=self.title, **self.options)


def slug(*parts: object) -> str:
    """A file-name stem from parts of a plot's identity: lower case ASCII letters, digits and dashes
    only, so no text from a Result can reach outside the figures directory."""
    s = "-".join(str(p) for p in parts if p not in (None, ""))
    s = re.sub(r"[^a-z0-9]+", "-", s.lower().replace("µ", "u")).strip("-")
    return s[:80].rstrip("-") or "plot"
