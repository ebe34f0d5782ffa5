"""A table as plain data, built once by a kind's view and drawn by both renderers: the terminal
(report/terminal_grid.py, a rich Table) and the HTML page (report/html_grid.py, the `table` macro).

A cell is text; a line break inside it is "\\n" (the terminal keeps it, the page draws <br>). Row
emphasis (`strong`, `muted`) and the number of left-aligned text columns are the only presentation a
view states; everything else (borders, colours) is the renderer's."""

from __future__ import annotations

from dataclasses import dataclass, field

FAILED = "failed"  # a cell that says so is drawn as a failure by both renderers


@dataclass
class Grid:
    """One table: title, column names, rows of text, notes under it."""

    title: str
    head: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    left: int = 1  # the first `left` columns are text (left-aligned), the others figures
    strong: set[int] = field(default_factory=set)  # row indexes drawn bold (totals, the headline figure)
    muted: set[int] = field(default_factory=set)  # row indexes drawn as context (builds, checks)
    no_wrap: tuple[str, ...] = ()  # columns the terminal keeps on one line
    text: tuple[str, ...] = ()  # further text columns after the first `left` (left-aligned too)

    def is_text(self, i: int) -> bool:
        return i < self.left or self.head[i] in self.text

    def add(self, cells: list[str], *, strong: bool = False, muted: bool = False) -> None:
        """Append a row (padded with empty cells to the header's width)."""
        if strong:
            self.strong.add(len(self.rows))
        if muted:
            self.muted.add(len(self.rows))
        self.rows.append([*cells, *[""] * (len(self.head) - len(cells))])

    def column(self, name: str) -> list[str]:
        """The cells of one column (tests and renderers compare them)."""
        i = self.head.index(name)
        return [r[i] for r in self.rows]
