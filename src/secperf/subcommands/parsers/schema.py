"""`secperf schema result|scenario|system`: the JSON Schema of a Result, a scenario file or a system
file (`--system FILE.toml` of whatif and plan)."""

from __future__ import annotations

import argparse

NAME = "schema"

HELP = "print the JSON Schema of a Result (result.json), a scenario file or a system file (--system)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "what",
        choices=("result", "scenario", "system"),
        help="result: result.json; scenario: a scenario TOML file; system: a system file (whatif/plan --system)",
    )
