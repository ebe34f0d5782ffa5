"""`secperf metrics RESULT`: a Result of any kind in the Prometheus text exposition format: the
kind's headline numbers (report/export_metrics.py: latencies, rates, CPU per handshake, instruction
counts, a plan's or fleet's numbers) and study S2's operational metrics (signing success rate and
mean time, session reuse, secure-element errors and time-outs, authentication time-outs; a plan's
alert thresholds). A Result with nothing to export exits 2 naming why."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..app.reading import read_result
from ..app.runner import check_output_file
from ..core.result import reading
from ..core.writes import atomic_write
from ..report.export_metrics import exposition
from .output import Exited, Text


def run(args: argparse.Namespace) -> Exited | Text:
    path = Path(args.result)
    if path.is_dir():
        path = path / "result.json"
    check_output_file(args.output, "-o/--output", inputs=[path])
    doc = read_result(str(path), "", args.allow_partial)

    with reading(str(path), "a series or analysis read for the metrics"):
        text = exposition(doc)

    if args.output:
        atomic_write(Path(args.output), text, what="-o/--output")
        return Exited(0)
    return Text(text)
