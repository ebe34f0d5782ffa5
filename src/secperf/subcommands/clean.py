"""`secperf clean`: remove what dead secperf runs left (processes, namespaces, registry files)."""

from __future__ import annotations

import argparse

from ..app.clean import clean
from .output import Text


def run(args: argparse.Namespace) -> Text:
    return Text(clean(args.json, args.results))
