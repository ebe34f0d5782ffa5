"""The HTML page's drawing of a view's Grid (report/views/grid.py): what the `table` macro takes
(head, rows of cells, left), with the title and notes beside it for the template to place.
A "\\n" in a cell becomes a line break, strong rows are bold, muted rows grey, failures red."""

from __future__ import annotations

from typing import Any

from .html_env import cell, frag, hcell
from .views.grid import FAILED, Grid


def _cell(text: str, *, strong: bool, muted: bool, left: bool, text_col: bool = False) -> Any:
    if text == FAILED or text.startswith(FAILED + ":"):
        return cell(text, cls="fail")
    # a design or measure that misses a requirement (plan's ✗) in the failure colour
    cls = "fail" if "✗" in text else ("l muted" if left else "muted") if muted else ""
    if text_col:  # a text column after the first `left` ones: left-aligned, wrapping like them
        cls = f"l {cls}".strip()
    if "\n" in text:
        return cell(parts=[frag(x, br=i > 0) for i, x in enumerate(text.split("\n"))], b=strong, cls=cls)
    if strong or cls:
        return cell(text, b=strong, cls=cls)
    return text


def view(g: Grid | None) -> dict[str, Any] | None:
    """{title, head, rows, left, notes} for a template, or None for no grid."""
    if g is None:
        return None
    rows = [
        [
            _cell(c, strong=i in g.strong, muted=i in g.muted, left=j < g.left, text_col=j >= g.left and g.is_text(j))
            for j, c in enumerate(r)
        ]
        for i, r in enumerate(g.rows)
    ]
    head = [hcell(h) if j >= g.left and g.is_text(j) else h for j, h in enumerate(g.head)]
    return {"title": g.title, "head": head, "rows": rows, "left": g.left, "notes": list(g.notes)}
