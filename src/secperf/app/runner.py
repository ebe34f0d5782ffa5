"""Running measuring phases into one Result: the run directory, progress, signals, analyses,
exports and the terminal summary. The CLI builds the phases; this module runs them.

A phase is a list of items (series to measure), a label per item for the progress bar, and a runner
that appends series to the Result and saves it after each one (so an interrupted run keeps what it
measured)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import host
from ..core import result as R
from ..core.errors import OutputError
from ..core.result_schema import Result, Series
from ..core.store import Run, RunStore, check_output_path
from ..lab import registry
from ..model import crypto_questions as Q
from ..report import (
    terminal,
    terminal_device,
    terminal_libraries,
    terminal_mac,
    terminal_plan,
    terminal_server,
    terminal_whatif,
)
from ..report.export import write_csv
from ..report.export_metrics import write_metrics
from ..report.figures import figures_directory, write_figures
from ..report.html import render
from .reporter import reporter
from .signals import Interrupted, interruptible


@dataclass
class Output:
    """Where and how a run reports: the results directory, JSON on stdout, a CSV copy, the HTML
    report, the failure share that still counts as success, and the command line to record."""

    out: str = "results"
    json: bool = False
    csv: str | None = None
    metrics: str | None = None
    no_report: bool = False
    max_failure_share: float = 0.0
    figures: str | None = None
    command: list[str] = field(default_factory=lambda: ["secperf"])


# progress(event, item, index, total, series): event "start" before an item and "done" after it; series is
# the one measured for the item when the measure hands it back, else None
Progress = Callable[[str, Any, int, int, "Series | None"], None]
# a phase's runner(items, doc, run, progress): measures the items into the Result, appending its series
# and saving the Result through the run after each one
PhaseRunner = Callable[[list[Any], Result, Run, Progress], object]  # what it returns is not used


class Phase:
    """One measuring step of a command: items to measure, how to label one, and the runner."""

    def __init__(self, items: Iterable[Any], label: Callable[[Any], str], runner: PhaseRunner):
        self.items, self.label, self.runner = list(items), label, runner


def add_analyses(doc: Result, params: dict[str, Any]) -> None:
    """Answers computed from the measured rows (study S5's questions, the strength table)."""

    if any(s.kind == "crypto" for s in doc.series):
        doc.analysis.s5 = Q.answers(doc)
        libs = Q.libraries_analysis(doc)
        if libs:
            doc.analysis.libraries = libs
        if params.get("strength"):
            doc.analysis.strength = {
                "security_bits": params["strength"],
                "rows": Q.strength_table(doc, params["strength"]),
            }


def measure_and_write(kind: str, params: dict[str, Any], phases: list[Phase], output: Output) -> Result:
    """Run the phases into a new run directory; write result.json (after every series), the CSV,
    the HTML report and figures. Returns the Result; the caller shows it and judges its failed
    series. Interrupted, the partial Result is saved and written out first, then the
    interruption is raised again carrying it (`exc.result`)."""
    check_output_file(output.csv, "--csv")
    check_output_file(output.metrics, "--metrics")
    if output.figures:  # a bad figures directory is said before measuring, not after
        figures_directory(Path(output.figures))
    run = output_store(output).create(kind)

    registry.start(run.dir)  # whatever this run starts is listed, and dies with it (also on kill -9)
    doc = R.new_result(kind=kind, command=output.command, params=params, host=host.collect(), run_id=run.run_id)
    run.save(doc)
    total = sum(len(ph.items) for ph in phases)
    if not output.json:
        reporter().status(f"[bold]secperf {kind}[/bold]: {total} series → {run.dir}")
    status, interrupted = "complete", None
    try:
        with interruptible(), reporter().progress(total, "measuring") as update:
            for ph in phases:

                def progress(event: str, item: Any, i: int, n: int, series: Series | None, ph: Phase = ph) -> None:
                    if event == "start":
                        update(ph.label(item))
                    else:
                        update(advance=1)

                ph.runner(ph.items, doc, run, progress)
    except Interrupted as sig:
        status, interrupted = "interrupted", sig
    add_analyses(doc, params)
    R.finish(doc, status)
    run.save(doc)
    write_outputs(doc, run, output)
    if interrupted is not None:
        interrupted.result = doc
        raise interrupted
    return doc


def check_output_file(path: str | None, option: str, inputs: Iterable[str | Path | None] = ()) -> None:
    """A file the run will write at its end must be writable now, so a run never measures for an
    hour and then fails to save; it must not be an input nor a Result (core/store.py)."""

    check_output_path(path, option, inputs)


def output_store(output: Output) -> RunStore:
    return RunStore(output.out)


def write_outputs(doc: Result, run: Run, output: Output) -> None:
    """The CSV copy, the HTML report and the figures, as the options ask."""
    own = {run.result_path, run.report_path}
    for opt, path in (("--csv", output.csv), ("--metrics", output.metrics)):
        if path and any(_same(Path(path), p) for p in own):  # the run's own files are not outputs to overwrite
            raise OutputError(
                f"{opt} {path}: is this run's own {Path(path).name}; name a file outside the run directory"
            )
    if output.csv:
        write_csv(doc, Path(output.csv))
    if output.metrics:
        write_metrics(doc, output.metrics)
    if not output.no_report:
        run.write_text(
            "report.html", render(doc, log=run.dir / "secperf.log")
        )  # drawing warnings: the log, not the terminal
    if output.figures:
        write_figures(doc, Path(output.figures), log=run.dir / "secperf.log")


def _same(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _server_tables(doc: Result) -> list[Any]:
    return terminal_server.tables(doc)


def result_tables(doc: Result, params: dict[str, Any]) -> list[Any]:
    """Every terminal table the Result has rows for, in the order they print."""

    out = (
        terminal.crypto_tables(terminal_libraries.openssl_only(doc))
        + terminal_libraries.tables(doc)
        + terminal.handshake_tables(doc)
        + terminal.signer_tables(doc)
        + terminal.connect_tables(doc)
        + terminal_device.tables(doc)
        + terminal_whatif.tables(doc)
        + _server_tables(doc)
        + terminal_plan.tables(doc)
    )
    analysis = doc.analysis
    if analysis.strength:
        out.append(terminal.strength_table(analysis.strength["rows"], params["strength"]))
    if analysis.s5:
        out.append(terminal.answers_table(analysis.s5))
    if analysis.cortexm:
        out.append(terminal_mac.cortexm_table(analysis.cortexm))
    if analysis.can:
        out += terminal_mac.can_tables(analysis.can)
    return out
