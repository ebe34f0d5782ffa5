"""`secperf compare A B`: what changed from A to B (core/compare.py judges, report/ shows)."""

from __future__ import annotations

import argparse
import json

from ..app.reading import compare
from ..report.terminal_compare import tables
from .output import Rich, Text


def run(args: argparse.Namespace) -> Text | Rich:
    cmp = compare(args.a, args.b, args.alpha, args.min_change, args.allow_partial, args.power)
    if args.json:
        return Text(json.dumps(cmp, indent=1) + "\n")
    lines = [f"[yellow]warning:[/yellow] {w}" for w in cmp["warnings"]]
    lines += [
        f"only in {side.upper()}: {', '.join(cmp[f'only_in_{side}'])}" for side in ("a", "b") if cmp[f"only_in_{side}"]
    ]
    return Rich([*tables(cmp), *lines])
