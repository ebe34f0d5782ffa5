"""`secperf report`: re-render the HTML report (and the figures) of a result.json."""

from __future__ import annotations

import argparse

from .. import argtypes
from . import common

NAME = "report"

HELP = "re-render the HTML report of a result.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("result", help="result.json (or its run directory)")
    p.add_argument(
        "-o", "--output", type=argtypes.path, help="where to write the HTML (default: report.html next to the result)"
    )
    p.add_argument(
        "--figures",
        type=argtypes.path,
        metavar="DIR",
        help="also write every plot as PNG (300 dpi) and PDF into DIR, one file pair per plot",
    )
    common.allow_partial_option(p)
