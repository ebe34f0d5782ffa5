"""`secperf schema result|scenario`: the JSON Schema of a Result or of a scenario file."""

from __future__ import annotations

import json
import sys

NAME = "schema"
HELP = "print the JSON Schema of a Result (result.json) or of a scenario file"


def add_arguments(p) -> None:
    p.add_argument("what", choices=("result", "scenario"), help="result: result.json; scenario: a scenario TOML file")


def run(args) -> int:
    if args.what == "result":
        from ..core.result_schema import json_schema
        doc = json_schema()
    else:
        from ..spec.schema import scenario_json_schema
        doc = scenario_json_schema()
    sys.stdout.write(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return 0
