"""`secperf report`: re-render the HTML report (and the figures) of a result.json."""

from __future__ import annotations

import argparse

from ..app.reading import report
from .output import Text


def run(args: argparse.Namespace) -> Text:
    written = report(args.result, args.output, getattr(args, "figures", None), args.allow_partial)
    return Text("".join(f"{what}: {path}\n" for what, path in written), stream="stderr")
