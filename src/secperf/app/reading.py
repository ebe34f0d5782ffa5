"""Commands that read Results: re-render a report, compare two runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import result as R
from ..core.compare import compare as compare_results
from ..core.errors import InputError, ResultError
from ..core.result import reading
from ..core.store import is_abandoned, mark_abandoned, register_readback
from ..core.writes import atomic_write
from ..report.export_metrics import exposition
from ..report.figures import figures_directory, write_figures
from ..report.html import render
from ..report.html_env import DRAW_PLOTS
from .reporter import reporter
from .runner import check_output_file, result_tables

if TYPE_CHECKING:
    from ..core.result_schema import Result


def read_result(path: str | Path, option: str = "", allow_partial: bool = False) -> Result:
    """A Result for a reader: validated (core/result.py) and complete. A run still `running` (its
    writer alive) or `abandoned` (its writer died: the owner record in the run's result.json names a
    process that is gone) is refused unless `allow_partial`, and then a note says so on stderr."""

    doc = R.load(path)
    where = f"{option} {path}".strip()
    if doc.status == "internal-error":  # secperf's own read-back refused what it wrote: its bug, said
        internal = doc.internal or {}
        kept = f"; the Result as written is in {internal.get('as_written')}" if internal.get("as_written") else ""
        reporter().note(
            f"note: {where}: when secperf wrote this Result its own read-back failed (internal: "
            f"{internal.get('check', '?')}: {internal.get('problem', '?')}); this is secperf's bug, not the "
            f"file's: showing what passed the check{kept}"
        )
        return doc
    state = "abandoned" if is_abandoned(doc) else doc.status
    if state in ("running", "abandoned"):
        why = (
            f"is still being written by a running secperf (pid {(doc.owner or {}).get('pid')})"
            if state == "running"
            else "was abandoned: the process writing it died before it finished"
        )
        if not allow_partial:
            raise ResultError(
                f"{where}: the run {why}; its series may be incomplete. Wait for it to finish, "
                f"or pass --allow-partial to read the {len(doc.series)} series it has"
            )
        if state == "abandoned" and doc.status == "running":
            mark_abandoned(doc)  # in memory: the report says so; the reader never rewrites its input
        reporter().note(
            f"note: {where}: the run {why}; reading its {len(doc.series)} series as they are "
            f"(--allow-partial): figures from it are partial"
        )
    return doc


def report(
    result_path: str, output: str | None, figures: str | None = None, allow_partial: bool = False
) -> list[tuple[str, Path]]:
    """Write the HTML report of the Result at `result_path` (a result.json or its run directory) and
    its figures; what was written: ("report", path), then ("figure", path) per file."""

    src = Path(result_path)
    default_out = (src if src.is_dir() else src.parent) / "report.html"
    check_output_file(
        output or str(default_out), "-o/--output", inputs=[src, src / "result.json"] if src.is_dir() else [src]
    )
    if figures:  # a bad figures directory is said before the report is written, not after
        figures_directory(Path(figures))
    doc = read_result(result_path, "", allow_partial)
    out = Path(output) if output else default_out
    atomic_write(out, render(doc), what="-o/--output")
    written = [("report", out)]
    if figures:
        written += [("figure", p) for p in write_figures(doc, Path(figures))]
    return written


def compare(
    a: str, b: str, alpha: float, min_change: float, allow_partial: bool = False, power: float = 0.8
) -> dict[str, Any]:
    """Two Results of the same kind judged as core/compare.py says: the comparison (report/
    terminal_compare.py shows it). Different kinds, or Results sharing nothing, are input errors
    (exit 2)."""

    if not 0.0 < power < 1.0:
        raise InputError(f"--power {power:g}: give a probability between 0 and 1 (exclusive), e.g. 0.8")
    da, db = read_result(a, "A", allow_partial), read_result(b, "B", allow_partial)
    with reading(f"{a} vs {b}", "a series' values or labels"):
        return compare_results(da, db, alpha=alpha, min_change=min_change, power=power)


def _report_check(doc: Result, log: Path | None) -> None:
    """What `secperf report` does with a Result, without drawing the plots."""

    token = DRAW_PLOTS.set(False)
    try:
        render(doc, log=log)
    finally:
        DRAW_PLOTS.reset(token)


def _metrics_check(doc: Result, _log: Path | None) -> None:
    """What `secperf metrics` does with a Result."""

    with reading("result.json", "a series or analysis read for the metrics"):
        exposition(doc)


def _terminal_check(doc: Result, _log: Path | None) -> None:
    """The terminal tables a command prints from its Result (app/runner.result_tables)."""

    with reading("result.json", "the terminal tables"):
        result_tables(doc, doc.params)


def register_readback_checks() -> None:
    """Every Result a run marks finished is read back with these first (core/store.Run.save)."""

    register_readback("the report (secperf report's views)", _report_check)
    register_readback("the metrics export (secperf metrics)", _metrics_check)
    register_readback("the terminal tables", _terminal_check)


register_readback_checks()
