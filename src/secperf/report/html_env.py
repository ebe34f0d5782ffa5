"""The HTML report's templates: one Jinja2 environment over the package's ``templates`` directory.

Autoescape is on for every template (``*.html.j2``), so any text from a Result is escaped where it
meets the page; an undefined variable is an error (StrictUndefined), never an empty string. The
Python side (``html*.py``) computes plain values: rows of strings formatted with ``units``, and,
for a table cell that carries markup, a small object the ``td`` macro understands:

- ``cell(text, cls=..., colspan=..., title=..., b=...)``: a ``<td>`` (class, colspan, hover title,
  bold text);
- ``cell(parts=[...])``: the cell's content as fragments, each plain text or
  ``frag(text, span=CLASS, b=True, br=True)`` (a ``<span class>``, bold, a line break before; the
  text may itself be a list of fragments).

The only markup that enters a template as markup is the SVG that secperf draws itself
(``figure_view``), marked safe in one commented place.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from .plots import Plot
from .svg import plot_svg

ENV = Environment(
    # templates ship inside the package (wheel.packages takes every file under src/secperf)
    loader=PackageLoader("secperf.report", "templates"),
    autoescape=select_autoescape(["html", "j2"], default_for_string=True, default=True),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    finalize=lambda v: "" if v is None else v,  # a missing number is an empty cell, as before
)


def render_page(template: str, **context: Any) -> str:
    """A whole template rendered with `context`."""
    return ENV.get_template(template).render(**context)


def macro(template: str, name: str, *args: Any, **kwargs: Any) -> str:
    """One macro of a template, called from Python (a table or figure on its own)."""
    return str(getattr(ENV.get_template(template).module, name)(*args, **kwargs))


@dataclass(frozen=True)
class Cell:
    """A table cell with attributes or mixed content (see the module docstring)."""

    text: Any = None
    cls: str = ""
    colspan: int = 0
    title: str = ""
    b: bool = False
    parts: list[Any] | None = None


@dataclass(frozen=True)
class Frag:
    """A piece of a cell's content."""

    text: Any
    span: str = ""
    b: bool = False
    br: bool = False


@dataclass(frozen=True)
class Heading:
    """A column heading that is left-aligned or has a hover title."""

    text: Any
    left: bool = True
    title: str = ""


def cell(
    text: Any = None,
    *,
    cls: str = "",
    colspan: int = 0,
    title: str = "",
    b: bool = False,
    parts: list[Any] | None = None,
) -> Cell:
    """A table cell with attributes or mixed content (see the module docstring)."""
    return Cell(text, cls, colspan, title, b, parts)


def frag(text: Any, *, span: str = "", b: bool = False, br: bool = False) -> Frag:
    """A piece of a cell's content: plain text (or a list of fragments), in a span of class `span`,
    bold, after a line break."""
    return Frag(text, span, b, br)


def hcell(text: Any, *, left: bool = True, title: str = "") -> Heading:
    """A column heading that is left-aligned (text columns) or has a hover title."""
    return Heading(text, left, title)


# The templates tell these apart from a Result's own values by type (a label that is a JSON object
# is text to show, never a cell to interpret): `c is cell`, `f is frag`, `h is heading`.
ENV.tests.update(
    cell=lambda x: isinstance(x, Cell),
    frag=lambda x: isinstance(x, Frag),
    heading=lambda x: isinstance(x, Heading),
    frags=lambda x: isinstance(x, list) and all(isinstance(f, Frag) for f in x),
)


# False while secperf reads back a Result it wrote (core/store.readback_problem): the views and the
# page are made from the Result as the report makes them, the plots' drawing (seconds each) is not
DRAW_PLOTS: ContextVar[bool] = ContextVar("draw_plots", default=True)


def figure_view(plot: Plot, data_plot: str | None = None) -> dict[str, Any]:
    """What the `figure` macro needs: the plot's SVG, its caption and an optional data-plot mark."""
    if not DRAW_PLOTS.get():
        return {"svg": Markup(""), "caption": plot.caption, "data_plot": data_plot}
    # The SVG is markup secperf draws itself (matplotlib's SVG writer, with every label and the title
    # escaped by matplotlib and svg.inline); it is the one value the templates take as markup.
    svg = Markup(plot_svg(plot))
    return {"svg": svg, "caption": plot.caption, "data_plot": data_plot}
