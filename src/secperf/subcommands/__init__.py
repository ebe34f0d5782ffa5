"""The command registry: every secperf command is two modules here, listed in MODULES in the order
the top-level help lists them.

Decision (building the parser stays light): a command's arguments and the code that runs it are two
halves, so that the top-level help, a command's help and a usage error import no more than argparse
and the argument types, and a command imports only its own run half (with secperf.app and what that
needs) once its arguments have parsed.
- The parser half, `subcommands/parsers/<module>.py`, declares NAME and HELP (the command and its
  one-line help) and `add_arguments(parser)` (its options on its own argparse parser). It imports
  only argtypes, parsers/common.py and light inputs modules (names, defaults), never secperf.app.
- The run half, `subcommands/<module>.py`, declares `run(args)`: the command itself, returning what it
  produced (subcommands/output.py): a Result (from secperf.app), or `Text`, `Rich` or `Exited` for
  what is not a Result (a listing, a schema, a comparison, `netem run`'s exit status). It raises
  secperf errors; it prints nothing. Optionally JUDGES_FAILURES = False when its Result is computed,
  not measured (no exit 1 for failed rows).
The module of command NAME is NAME with '-' read as '_' (`mqtt-load`: mqtt_load).
cli.py builds the parser from the parser halves (only the named command's when the command line
names one), calls the run half's `run`, shows what it returned and maps errors to exit codes.
Helpers shared by several commands (argtypes, measuring, shared, system_args, output, streams,
parsers/common) are modules here too, not listed in MODULES. Like cli.py these modules only parse
and call into secperf.app (or model/sim/plan/report); nothing but the CLI imports them."""

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


def module_of(command: str | None) -> str | None:
    """The module name of a command named on the command line, or None when no command has that name."""
    name = (command or "").replace("-", "_")
    return name if name in MODULES and name.replace("_", "-") == command else None


def load(command: str | None = None) -> list[ModuleType]:
    """The parser halves of every command, in MODULES' order; only the one of `command` when it names one."""
    module = module_of(command)
    return [parser(m) for m in ((module,) if module else MODULES)]


def parser(module: str) -> ModuleType:
    """The parser half of a command (NAME, HELP, add_arguments): parsers/<module>.py."""
    return importlib.import_module(f"{__name__}.parsers.{module}")


def command(name: str) -> ModuleType:
    """The run half of command `name` (a NAME the parser took): <module>.py, imported when it runs."""
    return importlib.import_module(f"{__name__}.{name.replace('-', '_')}")
