"""`secperf run`: the default evaluation, or any scenario, measured into one Result."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..app.scenario import run_scenario
from .measuring import measure_options, no_network, output

if TYPE_CHECKING:
    from ..core.result_schema import Result

NO_NETWORK = (
    "a scenario names its links itself: `networks = [...]` in its [handshake], [jwt] or [connect] "
    "section (or run `secperf handshake|connect|jwt --network`)"
)


def run(args: argparse.Namespace) -> Result:
    no_network(args, NO_NETWORK)
    return run_scenario(args.scenario, measure_options(args), output(args))
