"""`secperf compare A B`: what changed from A to B (core/compare.py judges, report/ shows)."""

from __future__ import annotations

import argparse

from ..argtypes import open_probability, share
from . import common

NAME = "compare"

HELP = (
    "what changed from A to B: measured differences with their interval, predicted percentiles with their "
    "sampling error, changed numbers and verdicts"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", help="baseline result.json")
    p.add_argument("b", help="result.json to judge against A")
    p.add_argument(
        "--alpha",
        type=open_probability,
        default=0.01,
        help="significance level, between 0 and 1 exclusive (default 0.01)",
    )
    p.add_argument(
        "--min-change", type=share, default=0.02, help="smallest relative median change that counts (default 0.02)"
    )
    p.add_argument(
        "--power",
        type=open_probability,
        default=0.8,
        help="power for the smallest detectable change, between 0 and 1 exclusive (default 0.8)",
    )
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    common.allow_partial_option(p)
