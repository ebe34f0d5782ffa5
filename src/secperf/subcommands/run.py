"""`secperf run`: the default evaluation, or any scenario, measured into one Result."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .measuring import add_measure_options, measure_options, no_network, output

if TYPE_CHECKING:
    from ..core.result_schema import Result

NAME = "run"
HELP = "run the default evaluation and write result.json + report.html"
NO_NETWORK = (
    "a scenario names its links itself: `networks = [...]` in its [handshake], [jwt] or [connect] "
    "section (or run `secperf handshake|connect|jwt --network`)"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenario", default="quick", help="built-in scenario name or a TOML file (default: quick)")
    p.add_argument("--hash", choices=("sha256", "sha1"), default="sha256")
    add_measure_options(
        p,
        no_network="only 'loopback' is accepted here: a scenario names its links in "
        "its [handshake], [jwt] and [connect] sections (networks = [...])",
    )


def run(args: argparse.Namespace) -> Result:
    from ..app.scenario import run_scenario

    no_network(args, NO_NETWORK)
    return run_scenario(args.scenario, measure_options(args), output(args))
