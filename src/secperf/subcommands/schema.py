"""`secperf schema result|scenario|system`: the JSON Schema of a Result, a scenario file or a system
file (`--system FILE.toml` of whatif and plan)."""

from __future__ import annotations

import argparse
import json

from ..core.result_schema import json_schema
from ..inputs.schema import scenario_json_schema
from ..inputs.system import json_schema as system_json_schema
from .output import Text


def run(args: argparse.Namespace) -> Text:
    if args.what == "result":
        doc = json_schema()
    elif args.what == "system":
        doc = system_json_schema()
    else:
        doc = scenario_json_schema()
    return Text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
