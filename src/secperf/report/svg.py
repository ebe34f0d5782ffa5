"""A matplotlib figure as the HTML report's inline SVG: self-contained, deterministic, countable.

- Self-contained: text stays ``<text>`` (svg.fonttype none: no font files), the XML prolog, DOCTYPE
  and the metadata block (which links to matplotlib.org and purl.org) are dropped.
- Deterministic: a fixed hash salt for matplotlib's ids and no date, so two renders of the same
  Result are byte-identical.
- Safe inline: every id gets a prefix from the SVG's own digest, so two plots in one page never
  share an id (their clip paths and markers would otherwise resolve to the first plot's).
- Countable: the root carries ``data-plot`` (box, bars, stacked, line), ``role="img"`` and the
  title; a mark drawn with gid ``box-3`` gets ``class="box"``, so tests and the browser can count.
"""

from __future__ import annotations

import hashlib
import html
import io
import re
from typing import TYPE_CHECKING

from .plots import Plot, style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(url\(#|xlink:href="#|href="#)([^")]+)')
_MARK = re.compile(r'<g id="([a-z-]+?)-(\d+(?:-\d+)*)"')
_ROOT_CLASS = {"box": "box-plot", "bars": "grouped-bars", "stacked": "stacked-bars", "line": "line-plot"}
_CLASS_OF = {
    "box": "box",
    "median": "median",
    "outlier": "outlier",
    "samples": "samples",
    "bar": "bar",
    "err": "err",
    "segment": "segment",
    "series": "series",
    "no-data": "no-data",
}


def figure_svg(fig: Figure) -> str:
    """The figure's SVG document text as matplotlib writes it (in the report's style)."""
    buf = io.StringIO()
    with style():
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def inline(fig: Figure, kind: str, title: str, css_class: str = "") -> str:
    """The ``<svg>`` element to place in the HTML page (see the module docstring)."""
    doc = figure_svg(fig)
    body = doc[doc.index("<svg") :]
    body = re.sub(r"\s*<metadata>.*?</metadata>", "", body, count=1, flags=re.S)
    prefix = "p" + hashlib.sha256(body.encode("utf-8")).hexdigest()[:8] + "-"
    body = _MARK.sub(
        lambda m: f'<g id="{m.group(1)}-{m.group(2)}" class="{_CLASS_OF.get(m.group(1), m.group(1))}"', body
    )
    body = _ID.sub(lambda m: f'id="{prefix}{m.group(1)}"', body)
    body = _REF.sub(lambda m: f"{m.group(1)}{prefix}{m.group(2)}", body)
    # the root's attributes are escaped here: this SVG enters the page as markup (html_env.figure_view)
    t = html.escape(title, quote=True)
    cls = html.escape(css_class or f"plot {_ROOT_CLASS.get(kind, kind + '-plot')}", quote=True)
    head = f'<svg data-plot="{html.escape(kind, quote=True)}" class="{cls}" role="img" aria-label="{t}"'
    body = head + body[len("<svg") :]
    body = re.sub(r"(<svg\b[^>]*>)", lambda m: m.group(1) + f"\n <title>{t}</title>", body, count=1)
    return body.strip() + "\n"


def plot_svg(plot: Plot) -> str:
    """One Plot of a Result as inline SVG."""
    return inline(plot.figure(), plot.kind, plot.title)
