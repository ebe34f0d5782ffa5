"""Subcommands that live in their own module, so cli.py stays a short parser.

Each module listed in MODULES defines NAME (the subcommand), HELP, `add_arguments(parser)` and
`run(args) -> int`. Like cli.py they only parse and call into secperf.app (or model/sim/plan);
nothing but the CLI imports them."""

from __future__ import annotations

import importlib

MODULES: tuple[str, ...] = ("schema", "whatif", "device", "server", "fleet", "clean", "plan", "metrics")


def load():
    return [importlib.import_module(f"{__name__}.{m}") for m in MODULES]
