"""`secperf clean`: remove what dead secperf runs left (processes, namespaces, registry files)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .output import Text


def run(args: argparse.Namespace) -> Text:
    from ..app.clean import clean
    from .output import Text

    return Text(clean(args.json, args.results))
