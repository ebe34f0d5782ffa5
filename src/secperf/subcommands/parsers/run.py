"""`secperf run`: the default evaluation, or any scenario, measured into one Result."""

from __future__ import annotations

import argparse

from .common import add_measure_options

NAME = "run"

HELP = "run the default evaluation and write result.json + report.html"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenario", default="quick", help="built-in scenario name or a TOML file (default: quick)")
    p.add_argument("--hash", choices=("sha256", "sha1"), default="sha256")
    add_measure_options(
        p,
        no_network="only 'loopback' is accepted here: a scenario names its links in "
        "its [handshake], [jwt] and [connect] sections (networks = [...])",
    )
