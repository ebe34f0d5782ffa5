"""`secperf netem list|check|sweep|run`: emulated network links (two namespaces, a native relay)."""

from __future__ import annotations

import argparse

from ..app import netem
from ..core.errors import InputError
from .output import Exited, Text


def run(args: argparse.Namespace) -> Text | Exited:
    act = args.netem_command
    if act is None:
        raise InputError("netem: give an action: list, check, sweep or run")
    if act == "list":
        return Text(netem.list_links())
    if act == "check":
        ok, text = netem.check()
        return Text(text, exit_code=0 if ok else 1)
    if act == "sweep":
        return Text(netem.sweep())
    return Exited(
        netem.run(
            args.network,
            args.cmd,
            args.server,
            args.seed,
            args.poll,
            args.stats,
            wait_port=args.wait_port,
            wait_timeout_s=args.wait_timeout,
        )
    )
