"""The terminal's drawing of a view's Grid (report/views/grid.py): a rich Table with the grid's title,
columns, rows and notes as its caption. Cells are plain text, escaped for rich, so a label in
brackets ('[handshake done]') prints as written instead of vanishing as markup."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from .views.grid import FAILED, Grid


def _cell(text: str) -> str:
    if text == FAILED or text.startswith(FAILED + ":"):
        return f"[red]{escape(text)}[/red]"
    return escape(text)


def table(g: Grid, **options: Any) -> Table:
    """`g` as a rich Table; `options` (box, show_lines, padding...) pass to Table."""
    t = Table(
        title=escape(g.title) or None,
        title_justify="left",
        header_style="bold",
        caption=escape("\n".join(g.notes)) or None,
        caption_justify="left",
        **options,
    )
    for i, h in enumerate(g.head):
        t.add_column(escape(h), justify="left" if g.is_text(i) else "right", no_wrap=h in g.no_wrap)
    for i, row in enumerate(g.rows):
        t.add_row(*(_cell(c) for c in row), style="bold" if i in g.strong else None)
    return t


def tables(grids: list[Grid | None]) -> list[Table]:
    """The grids that exist, each as a Table."""
    return [table(g) for g in grids if g is not None]
