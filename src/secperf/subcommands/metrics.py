"""`secperf metrics RESULT`: a Result of any kind in the Prometheus text exposition format: the
kind's headline numbers (report/export_metrics.py: latencies, rates, CPU per handshake, instruction
counts, a plan's or fleet's numbers) and study S2's operational metrics (signing success rate and
mean time, session reuse, secure-element errors and time-outs, authentication time-outs; a plan's
alert thresholds). A Result with nothing to export exits 2 naming why."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .output import Exited, Text


def run(args: argparse.Namespace) -> Exited | Text:
    from pathlib import Path

    from ..app.reading import read_result
    from ..app.runner import check_output_file
    from ..report.export_metrics import exposition

    path = Path(args.result)
    if path.is_dir():
        path = path / "result.json"
    check_output_file(args.output, "-o/--output", inputs=[path])
    doc = read_result(str(path), "", args.allow_partial)
    from ..core.result import reading

    with reading(str(path), "a series or analysis read for the metrics"):
        text = exposition(doc)
    from .output import Exited, Text

    if args.output:
        from ..core.writes import atomic_write

        atomic_write(Path(args.output), text, what="-o/--output")
        return Exited(0)
    return Text(text)
