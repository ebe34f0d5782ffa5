"""Tables that fit the terminal: every rich Table secperf prints goes through `print_table` (or
`fitted`), which makes it readable at the console's width without ever cutting a number.

What it does to a table, in order:

0. A column that is empty in every row is left out (a "note" column with no notes).
1. One unit per column (`units.unify_column`): a column whose cells are all quantities of one kind
   (times, bytes, throughput, energy) gets one unit, chosen for the column's range, stated once in
   the header ("P50 (ms)"); the cells keep only the number. A column of composite cells
   ("P95 8621 ms ✓", "1.2 mJ of 3.4 mJ") keeps its units inline, but they are all the same one.
2. Widths computed here, not by rich: no column is narrower than its longest word (header words
   included), so a number or a unit is never cut and rich never prints its ellipsis; text columns
   wrap at spaces. Fixed widths are handed to rich.
3. Too wide for the console, or its key column (the first one, e.g. a what-if scenario label) would
   wrap: long labels become short keys (a multi-line label's first line, else the words that differ
   between rows, else A, B, C...) with a legend printed under the table.
4. Still too wide: column groups, each repeating the key columns (the fewest leading text columns
   that tell the rows apart), "(part 1 of 2)" in the title, the caption under the last part.
5. Even one key column plus one other column too wide, or a single row too wide: a stacked layout,
   one block per row, each cell on its own line as "header: value".

Decision: one generic fitter applied at print time, not per-table layouts, so every table kind
(also ones added later, e.g. new protocols') is covered by the same rules and the same test.
A builder may set `table.secperf_keys = N` to name how many leading columns identify a row.

For a new table kind: build a plain rich Table (numbers with their unit in each cell, e.g. via
units.fmt_time_us; left-justified text columns first) and hand it to the command's table list
(app/runner.py result_tables) or print it with print_table; tests/test_tables_fit.py checks the rules."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

from .units import UNIT_FAMILIES, unify_column, zero_column

TEXT_COMFORT = 12  # a text column is not squeezed below this (or its longest word) before splitting
LONG_KEY = 24  # a key column with labels longer than this gets short keys when the table is too wide
MAX_KEY_SHARE = 0.5  # the repeated key columns take at most this share of the width


def _plain(cell: object) -> str:
    if isinstance(cell, str):
        try:
            return Text.from_markup(cell).plain
        except Exception:  # noqa: BLE001 - a cell that is not valid markup prints as written
            return cell
    if isinstance(cell, Text):
        return cell.plain
    return ""


def cell_text(cell: object) -> str:
    """The text a cell shows (markup removed); '' for renderables that are not text."""
    return _plain(cell)


def _measure(console: Console, cell: RenderableType | None) -> tuple[int, int]:
    """(longest word, longest line) of a cell as rich renders it."""
    if cell is None or cell == "":
        return 0, 0
    m = Measurement.get(console, console.options, cell)
    return m.minimum, m.maximum


SPREAD_HEADERS = ("sd", "±", "stdev")  # a column that states the spread of the column before it


def normalise(table: Table) -> Table:
    """Step 1 on a copy of the table: one unit per column, the unit in the header of pure columns."""
    t = _copy(table)
    chosen = [None if zero_column(col._cells) else unify_column(list(col._cells))[1] for col in t.columns]
    counts: dict[str, dict[str, int]] = {}
    for u in filter(None, chosen):
        fam = UNIT_FAMILIES[u][0]
        counts.setdefault(fam, {})[u] = counts.get(fam, {}).get(u, 0) + 1
    prefer = {fam: max(c, key=c.__getitem__) for fam, c in counts.items()}  # the unit most columns chose
    before: str | None = None
    for col in t.columns:
        header = col.header if isinstance(col.header, str) else None
        if header in SPREAD_HEADERS and before:  # an sd reads in its mean's unit (the column before it)
            cells, unit = unify_column(list(col._cells), {UNIT_FAMILIES[before][0]: before}, floor="0.001")
        else:
            cells, unit = unify_column(list(col._cells), prefer)
        before = unit
        col._cells = cells
        if unit and header is not None:
            col.header = f"{header} ({unit})" if header else unit
    return t


def _copy(table: Table, columns: list[Column] | None = None) -> Table:
    t = copy.copy(table)
    cols = table.columns if columns is None else columns
    t.columns = []
    for i, c in enumerate(cols):
        nc = copy.copy(c)  # the cells list is shared: nothing here changes it in place
        nc._index = i
        t.columns.append(nc)
    t.rows = list(table.rows)
    return t


_RANGES: dict[
    tuple[int, int, bool], tuple[list[RenderableType], RenderableType, tuple[int, int]]
] = {}  # (cells list, header) -> (longest word, longest line), for one fitted() call


def _ranges(console: Console, table: Table) -> list[tuple[int, int]]:
    out = []
    for col in table.columns:
        key = (id(col._cells), id(col.header), table.show_header)
        if key not in _RANGES:
            lo, hi = _measure(console, col.header) if table.show_header else (0, 0)
            for cell in col._cells:
                a, b = _measure(console, cell)
                lo, hi = max(lo, a), max(hi, b)
            _RANGES[key] = (col._cells, col.header, (max(1, lo), max(1, hi)))  # keeps the keys' objects alive
        out.append(_RANGES[key][2])
    return out


def _chrome(table: Table) -> int:
    """Borders and padding around the cells."""
    return table._extra_width + sum(table._get_padding_width(i) for i in range(len(table.columns)))


def _allocate(console: Console, table: Table, width: int, comfort: bool) -> list[int] | None:
    """Column widths (without padding) that fit `width`, or None: start at each column's longest
    line, shrink the widest shrinkable column one character at a time, never below its longest word
    (with `comfort`, never below TEXT_COMFORT either)."""
    ranges = _ranges(console, table)
    avail = width - _chrome(table)
    widths = [hi for _, hi in ranges]
    floors = [
        max(lo, min(hi, TEXT_COMFORT)) if comfort and _is_text_column(c) else lo
        for (lo, hi), c in zip(ranges, table.columns)
    ]
    if sum(floors) > avail:
        return None
    excess = sum(widths) - avail
    while excess > 0:
        i = max((i for i in range(len(widths)) if widths[i] > floors[i]), key=lambda i: widths[i])
        widths[i] -= 1
        excess -= 1
    return widths


def _fix(table: Table, widths: list[int]) -> Table:
    for col, w in zip(table.columns, widths):
        col.width = w
        col.min_width = col.max_width = None
        col.overflow = "fold"  # never the ellipsis (widths already keep every word whole)
        col.no_wrap = False
    table.expand = False
    table.min_width = None
    return table


def _is_text_column(col: Column) -> bool:
    vals = [cell_text(c).strip() for c in col._cells]
    vals = [v for v in vals if v]
    return bool(vals) and not all(re.fullmatch(r"[-+−±≥≤<>~≈]?\s?[\d.,]+\S*", v) for v in vals)


def _key_count(table: Table, console: Console, width: int) -> int:
    """How many leading columns identify a row (repeated in every column group): the fewest leading
    text columns whose values tell every row apart, within MAX_KEY_SHARE of the width; the table's
    own `secperf_keys` when set."""
    n = getattr(table, "secperf_keys", None)
    if n is not None:
        return max(1, min(int(n), len(table.columns) - 1))
    r = _ranges(console, table)
    best = 1
    for k in range(1, min(4, len(table.columns) - 1) + 1):
        if k > 1 and (
            not _is_text_column(table.columns[k - 1])
            or sum(max(lo, min(hi, TEXT_COMFORT)) for lo, hi in r[:k]) + 3 * k > width * MAX_KEY_SHARE
        ):
            break
        best = k
        rows = list(zip(*(tuple(cell_text(c) for c in col._cells) for col in table.columns[:k])))
        if len(set(rows)) == len(rows):
            break
    return best


def short_keys(labels: list[str]) -> tuple[list[str], list[str]] | None:
    """Short row keys for long labels and the legend lines that explain them: the words that differ
    between labels of the same word count when those are short and unique, else A, B, C..."""
    distinct = list(dict.fromkeys(labels))
    if len(distinct) < 1:
        return None
    firsts = [d.split("\n", 1)[0].strip() for d in distinct]
    if all("\n" in d for d in distinct) and len(set(firsts)) == len(firsts) and max(map(len, firsts)) <= LONG_KEY:
        m = dict(zip(distinct, firsts))  # a multi-line label: its first line is the key, the rest the legend
        return [m[x] for x in labels], [
            f"{f}: " + " ".join(d.split("\n", 1)[1].split()) for f, d in zip(firsts, distinct)
        ]
    words = [[w for w in re.split(r"[\s,;]+", d) if w] for d in distinct]
    if len(distinct) > 1 and len({len(w) for w in words}) == 1:
        same = [i for i in range(len(words[0])) if len({w[i] for w in words}) == 1]
        keys = [" ".join(x for i, x in enumerate(w) if i not in same) for w in words]
        if same and len(set(keys)) == len(keys) and max(len(k) for k in keys) <= LONG_KEY // 2:
            common = " ".join(words[0][i] for i in same)
            m = dict(zip(distinct, keys))
            return [m[x] for x in labels], [f"every row: {common}"] if common else []
    if _SHARED is not None:  # one output: a label keeps the letter an earlier table gave it
        for d in distinct:
            if d not in _SHARED:
                _SHARED[d] = _letter(len(_SHARED))
        letters = [_SHARED[d] for d in distinct]
    else:
        letters = [_letter(i) for i in range(len(distinct))]
    m = dict(zip(distinct, letters))
    return [m[x] for x in labels], [f"{k} = {d}" for k, d in zip(letters, distinct)]


# label -> letter for the tables of one output (print_result): row B is the same scenario in the
# main table, in "what security costs" and in any later table; None outside one output
_SHARED: dict[str, str] | None = None


@contextmanager
def shared_keys() -> Iterator[dict[str, str]]:
    """Within: tables printed give a long row label the same letter every time (in first-seen order)."""
    global _SHARED
    saved, _SHARED = _SHARED, {}
    try:
        yield _SHARED
    finally:
        _SHARED = saved


def _letter(i: int) -> str:
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(65 + r) + s
    return s


def _shorten_keys(table: Table, console: Console) -> tuple[Table, list[str]]:
    col = table.columns[0]
    labels = [cell_text(c) for c in col._cells]
    if (
        not labels
        or max(len(x) for x in labels) <= LONG_KEY
        or any(isinstance(c, str) and "[" in c for c in col._cells)
    ):
        return table, []
    name = table.columns[0].header if isinstance(table.columns[0].header, str) else ""
    if len(set(labels)) == 1 and len(table.columns) > 2:  # one label for every row: said once, not a column
        return _copy(table, table.columns[1:]), [f"{name + ', ' if name else ''}every row: {labels[0]}"]
    got = short_keys(labels)
    if not got:
        return table, []
    keys, legend = got
    t = _copy(table)
    cells: list[RenderableType] = [*keys]
    t.columns[0]._cells = cells
    name = t.columns[0].header if isinstance(t.columns[0].header, str) else ""
    if name and legend and legend[0].startswith("every row"):
        legend = [f"{name}, {legend[0]}"] + legend[1:]
    return t, legend


def _groups(console: Console, table: Table, width: int, keys: int) -> list[Table] | None:
    """Column groups that each fit, every one repeating the key columns; None when one cannot."""
    key_cols, rest = table.columns[:keys], table.columns[keys:]
    groups: list[list[Column]] = []
    cur: list[Column] = []
    for col in rest:
        trial = _copy(table, key_cols + cur + [col])
        if _allocate(console, trial, width, comfort=True) is not None:
            cur.append(col)
            continue
        if not cur:
            return None
        groups.append(cur)
        cur = [col]
        if _allocate(console, _copy(table, key_cols + cur), width, comfort=True) is None:
            return None
    if cur:
        groups.append(cur)
    out = []
    title = table.title if isinstance(table.title, str) else None
    for i, g in enumerate(groups):
        part = _copy(table, key_cols + g)
        if len(groups) > 1:
            if title is not None:
                part.title = f"{title} (part {i + 1} of {len(groups)})"
            if i < len(groups) - 1:
                part.caption = None
        widths = _allocate(console, part, width, comfort=True)
        if widths is None:  # every group fitted in the loop above; never taken, kept for the type
            return None
        out.append(_fix(part, widths))
    return out


def _stacked(console: Console, table: Table, width: int) -> list[RenderableType]:
    """One block per row: its key in bold, then every other cell as "header: value", the value on a
    line of its own when both do not fit on one (a number is never folded when the width allows it)."""

    out: list[RenderableType] = []
    if table.title:
        out.append(Text.from_markup(table.title) if isinstance(table.title, str) else table.title)
    heads = [c.header if isinstance(c.header, str) else cell_text(c.header) for c in table.columns]
    for r in range(len(table.rows)):
        first = table.columns[0]._cells[r]
        out.append(Text.from_markup(first, style="bold") if isinstance(first, str) else first)
        for h, col in zip(heads[1:], table.columns[1:]):
            cell = col._cells[r]
            v = Text.from_markup(cell) if isinstance(cell, str) else cell if isinstance(cell, Text) else None
            if v is None:
                out += [Text(f"  {h}:"), cell]
            elif "\n" not in v.plain and cell_len(h) + cell_len(v.plain) + 4 <= width:
                out.append(Text.assemble(f"  {h}: ", v))
            else:
                out.append(Text(f"  {h}:"))
                for line in v.split("\n"):
                    out.append(Text.assemble("    ", line))
    if table.caption:
        out.append(table.caption)
    return out


def fitted(table: Table, console: Console) -> list[RenderableType]:
    """The renderables that show `table` within console.width (steps 1–5 of the module's doc)."""
    width = console.width
    _RANGES.clear()
    t = normalise(table)
    if not t.columns:
        return [table]
    if t.rows and len(t.columns) > 1:  # a column no row has anything in says nothing: not printed
        keep = [
            c
            for i, c in enumerate(t.columns)
            if i == 0 or any(cell_text(x).strip() or not isinstance(x, (str, Text)) for x in c._cells)
        ]
        if len(keep) < len(t.columns):
            t = _copy(t, keep)
    widths = _allocate(console, t, width, comfort=True)
    if widths is not None and (len(t.columns) < 2 or widths[0] >= _ranges(console, t)[0][1]):
        return [_fix(t, widths)]
    legend: list[str] = []  # too wide, or its key column would wrap: long labels become short keys
    if len(t.rows) == 1 and widths is None:  # one row too wide: each cell on its own line reads best
        return _stacked(console, t, width)
    if len(t.columns) > 1 and len(t.rows) > 1:
        t, legend = _shorten_keys(t, console)
        widths = _allocate(console, t, width, comfort=True)
        if widths is not None:
            return [_fix(t, widths)] + _legend(legend)
        parts = _groups(console, t, width, _key_count(t, console, width)) if len(t.columns) > 2 else None
        if parts:
            return parts + _legend(legend)
    if len(t.rows) > 1 or widths is None:
        widths = _allocate(console, t, width, comfort=False)
    if widths is not None:
        return [_fix(t, widths)] + _legend(legend)
    return _stacked(console, t, width) + _legend(legend)


def _legend(lines: list[str]) -> list[RenderableType]:
    return [Text(line, style="dim") for line in lines]


def print_table(console: Console, table: RenderableType) -> None:
    """Print a table fitted to the console (anything else is printed as it is)."""
    if not isinstance(table, Table):
        console.print(table)
        return
    for r in fitted(table, console):
        console.print(r)


def print_tables(console: Console, tables: Iterable[RenderableType]) -> None:
    """Tables of one output: a row label keeps its letter from table to table (shared_keys)."""
    with shared_keys():
        for t in tables:
            print_table(console, t)


def group(table: Table, console: Console) -> Group:
    """The fitted table as one renderable (for callers that nest it)."""
    return Group(*fitted(table, console))
