"""Commands that read Results: re-render a report, compare two runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core.errors import EXIT_OK


def report(result: str, output: str | None, figures: str | None = None) -> int:
    from ..core import result as R
    from ..core.store import atomic_write
    from ..report.html import render
    from ..core.store import is_abandoned, mark_abandoned
    from .runner import check_output_file
    check_output_file(output, "-o/--output")
    doc = R.load(result)
    src = Path(result)
    if is_abandoned(doc):  # its process died while running: say so, in the file and the report
        mark_abandoned(doc)
        atomic_write(src / "result.json" if src.is_dir() else src, R.dumps(doc))
        print(f"note: {result}: the run's process died before it finished; marked abandoned", file=sys.stderr)
    out = Path(output) if output else (src if src.is_dir() else src.parent) / "report.html"
    atomic_write(out, render(doc))
    print(f"report: {out}", file=sys.stderr)
    if figures:
        from ..report.figures import write_figures
        for p in write_figures(doc, Path(figures)):
            print(f"figure: {p}", file=sys.stderr)
    return EXIT_OK


def compare(a: str, b: str, alpha: float, min_change: float, as_json: bool) -> int:
    from ..core import result as R
    from ..core.compare import compare as compare_results
    from ..report import terminal
    cmp = compare_results(R.load(a), R.load(b), alpha=alpha, min_change=min_change)
    if as_json:
        sys.stdout.write(json.dumps(cmp, indent=1) + "\n")
        return EXIT_OK
    con = terminal.out_console()
    if not cmp["rows"]:
        con.print("[yellow]the two results share no series; nothing to compare[/yellow]")
    else:
        con.print(terminal.compare_table(cmp))
    for w in cmp["warnings"]:
        con.print(f"[yellow]warning:[/yellow] {w}")
    for side in ("a", "b"):
        if cmp[f"only_in_{side}"]:
            con.print(f"only in {side.upper()}: {', '.join(cmp[f'only_in_{side}'])}")
    return EXIT_OK
