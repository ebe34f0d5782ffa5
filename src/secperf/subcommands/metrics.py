"""`secperf metrics RESULT`: study S2's operational metrics of a Result (signing success rate and
mean time, session reuse, secure-element errors and time-outs, authentication time-outs; a plan's
alert thresholds) in the Prometheus text exposition format."""

from __future__ import annotations

from . import argtypes

NAME = "metrics"
HELP = "operational metrics of a Result (signing, session reuse, SE errors, auth time-outs) as Prometheus text"


def add_arguments(p) -> None:
    p.add_argument("result", help="a result.json (or its run directory)")
    p.add_argument("-o", "--output", type=argtypes.path, metavar="FILE", help="write to FILE instead of stdout")


def run(args) -> int:
    import sys
    from pathlib import Path
    from ..core import result as R
    from ..report.export_metrics import exposition
    path = Path(args.result)
    if path.is_dir():
        path = path / "result.json"
    doc = R.load(str(path))
    text = exposition(doc)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0
