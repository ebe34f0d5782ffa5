"""`secperf metrics RESULT`: a Result of any kind in the Prometheus text exposition format: the
kind's headline numbers (report/export_metrics.py: latencies, rates, CPU per handshake, instruction
counts, a plan's or fleet's numbers) and study S2's operational metrics (signing success rate and
mean time, session reuse, secure-element errors and time-outs, authentication time-outs; a plan's
alert thresholds). A Result with nothing to export exits 2 naming why."""

from __future__ import annotations

import argparse

from .. import argtypes
from .common import allow_partial_option

NAME = "metrics"

HELP = (
    "a Result's headline numbers and operational metrics (signing, session reuse, SE errors, auth time-outs) "
    "as Prometheus text"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("result", help="a result.json (or its run directory)")
    p.add_argument("-o", "--output", type=argtypes.path, metavar="FILE", help="write to FILE instead of stdout")

    allow_partial_option(p)
