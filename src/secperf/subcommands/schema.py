"""`secperf schema result|scenario|system`: the JSON Schema of a Result, a scenario file or a system
file (`--system FILE.toml` of whatif and plan)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .output import Text


def run(args: argparse.Namespace) -> Text:
    from .output import Text

    if args.what == "result":
        from ..core.result_schema import json_schema

        doc = json_schema()
    elif args.what == "system":
        from ..inputs.system import json_schema

        doc = json_schema()
    else:
        from ..inputs.schema import scenario_json_schema

        doc = scenario_json_schema()
    return Text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
