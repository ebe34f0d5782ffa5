"""`secperf can`: CAN bus load of frame authentication (study S4): CPU load, extra bus load, the k
that fits a CPU budget. A model, no measurement: its Result is computed (JUDGES_FAILURES False)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..app import commands
from ..app.can import CanOptions
from .measuring import output
from .output import Text

if TYPE_CHECKING:
    from ..core.result_schema import Result

JUDGES_FAILURES = False


def run(args: argparse.Namespace) -> Result | Text:
    if args.list_devices:
        return Text(commands.list_devices())
    return commands.can(CanOptions.from_namespace(args), output(args))
