"""What a command's `run(args)` returns, and how the CLI shows it: the one place that prints.

Decision: `run` returns one of
- a Result (what secperf.app returns for a measurement, a prediction, a plan, a model): shown as
  the Result JSON on stdout with --json, else "At a glance" and its terminal tables on stdout and
  where its result.json and report.html are on stderr; exit 1 when more of its series failed than
  --max-failure-share allows (for commands that measure; a module whose Result is computed, not
  measured, sets `JUDGES_FAILURES = False`);
- `Text`: what a command produced that is not a Result (a listing, a JSON Schema, Prometheus text,
  what `clean` removed), written as it is to stdout or stderr, with its exit code;
- `Rich`: rich tables and markup lines for the terminal's stdout (`compare`, `crypto --list`);
- `Exited`: an exit status and nothing to show (`netem run`: the command's own).
While a command works, the app speaks through its Reporter (app/reporter.py); the CLI installs
`TerminalReporter` (notes on stderr, rich progress bars) for the length of the command.
A Result (secperf.core.result_schema.Result) is recognised by being none of the three classes above."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..app.reporter import Reporter
from ..app.runner import result_tables
from ..core import result as R
from ..core.errors import EXIT_FAILURES, EXIT_OK
from ..report import terminal
from ..report.fit import print_table
from ..report.sources import sources_lines
from ..report.terminal import err_console, out_console, progress_bar
from .streams import KEPT, write_stdout

if TYPE_CHECKING:
    from rich.console import RenderableType

    from ..app.signals import Interrupted
    from ..core.result_schema import Result


@dataclass
class Text:
    text: str
    stream: str = "stdout"  # or "stderr"
    exit_code: int = 0


@dataclass
class Rich:
    items: list[RenderableType] = field(default_factory=list)  # rich renderables or markup strings, printed in order
    fit: bool = False  # fit tables to the terminal's width (report/fit.py)


@dataclass
class Exited:
    code: int


class TerminalReporter(Reporter):
    """Notes and lines as they come, a status line and rich progress bars on stderr."""

    def note(self, text: str) -> None:
        sys.stderr.write(text + "\n")

    def line(self, text: str) -> None:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    def status(self, text: str) -> None:
        err_console().print(text)

    @contextlib.contextmanager
    def progress(self, total: int, label: str, quiet: bool = False) -> Iterator[Callable[..., None]]:
        con = err_console()
        con.quiet = quiet
        with progress_bar(con, total, label) as update:
            yield update


def show(value: Result | Text | Rich | Exited, args: argparse.Namespace, judges_failures: bool = True) -> int:
    """Show what `run` returned; the command's exit code."""
    if isinstance(value, Exited):
        return value.code
    if isinstance(value, Text):
        (sys.stderr if value.stream == "stderr" else sys.stdout).write(value.text)
        return value.exit_code
    if isinstance(value, Rich):
        con = out_console()
        for item in value.items:
            if value.fit and not isinstance(item, str):
                print_table(con, item)
            else:
                con.print(item)
        return 0
    return show_result(value, args, judges_failures)


def run_paths(doc: Result, args: argparse.Namespace) -> tuple[Path, Path]:
    """Where the Result and its report were written: --out / the run's id."""
    d = Path(getattr(args, "out", "results")) / doc.run_id
    return d / "result.json", d / "report.html"


def failure_exit(doc: Result, max_failure_share: float = 0.0) -> tuple[int, str | None]:
    """Exit code of a finished measurement and, when it is 1, the line that says why: more than
    `max_failure_share` of its series failed (or are partial)."""

    failed = [s for s in doc.series if s.status in ("failed", "partial")]
    share = len(failed) / max(1, len(doc.series))
    if failed and share > max_failure_share:
        return EXIT_FAILURES, (
            f"[red]{len(failed)} of {len(doc.series)} series had failures[/red] "
            f"(first: {failed[0].id}: {failed[0].failures[-1].reason})"
        )
    return EXIT_OK, None


def show_result(doc: Result, args: argparse.Namespace, judges_failures: bool = True) -> int:
    result_path, report_path = run_paths(doc, args)
    KEPT.append(result_path)
    if getattr(args, "json", False):
        write_stdout(R.dumps(doc), f"the Result (kept in {result_path})")
    else:
        terminal.print_result(terminal.out_console(), doc, result_tables(doc, doc.params))
        if getattr(args, "sources", False):  # whatif/plan --sources: each figure's source (report/sources.py)
            con = terminal.out_console()
            for line in sources_lines(doc, con.width):
                con.print(line, highlight=False, markup=False, soft_wrap=True)
        terminal.err_console().print(
            f"result: {result_path}" + ("" if getattr(args, "no_report", False) else f"\nreport: {report_path}")
        )
    if not judges_failures:
        return 0
    code, why = failure_exit(doc, getattr(args, "max_failure_share", 0.0))
    if why:
        terminal.err_console().print(why)
    return code


def show_interrupted(exc: Interrupted, args: argparse.Namespace) -> int:
    """An interrupted measurement: its partial Result as a finished one is shown, then where it is."""

    doc = exc.result
    if doc is None:  # cli.main calls this only for an interruption that left a partial Result
        raise exc
    show_result(doc, args, judges_failures=False)
    err_console().print(f"[yellow]run interrupted[/yellow]; the partial result is in {run_paths(doc, args)[0]}")
    return exc.exit_code
