"""The command registry: every secperf command is one module here, listed in MODULES in the order
the top-level help lists them.

A command module declares
- NAME and HELP: the command and its one-line help;
- `add_arguments(parser)`: its options on its own argparse parser;
- `run(args)`: the command itself, returning what it produced (subcommands/output.py): a Result
  (from secperf.app), or `Text`, `Rich` or `Exited` for what is not a Result (a listing, a schema,
  a comparison, `netem run`'s exit status). It raises secperf errors; it prints nothing;
- optionally JUDGES_FAILURES = False when its Result is computed, not measured (no exit 1 for
  failed rows).
cli.py builds the parser from these modules, calls `run`, shows what it returned and maps errors
to exit codes. Helpers shared by several commands (argtypes, measuring, shared, system_args,
output) are modules here too, not listed in MODULES. Like cli.py these modules only parse and call
into secperf.app (or model/sim/plan/report); nothing but the CLI imports them."""

from __future__ import annotations

import importlib
from types import ModuleType

MODULES: tuple[str, ...] = (
    "run",
    "crypto",
    "handshake",
    "signer",
    "jwt",
    "connect",
    "mac",
    "can",
    "report",
    "compare",
    "netem",
    "schema",
    "whatif",
    "device",
    "server",
    "mqtt_load",
    "fleet",
    "clean",
    "plan",
    "metrics",
)


def load() -> list[ModuleType]:
    return [importlib.import_module(f"{__name__}.{m}") for m in MODULES]
