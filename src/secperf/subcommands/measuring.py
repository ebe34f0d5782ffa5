"""What every measuring command takes (--n, --duration, --warmup, --seed, --network, the output
options) and how the parsed values become the app's MeasureOptions and Output. No subcommand of its
own (not in subcommands.MODULES)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..app.links import check_no_network
from ..app.options import MeasureOptions
from ..app.runner import Output


def measure_options(args: argparse.Namespace) -> MeasureOptions:
    """The app's MeasureOptions of the parsed arguments."""

    return MeasureOptions(
        n=args.n,
        duration_s=args.duration,
        warmup=args.warmup,
        seed=args.seed,
        min_sample_us=args.min_sample_us,
        hash=getattr(args, "hash", "sha256"),
        prehashed=getattr(args, "prehashed", False),
        timeout_ms=getattr(args, "timeout_ms", None),
        max_hours=getattr(args, "max_hours", None) or 24.0,
        max_hours_given=getattr(args, "max_hours", None),
    )


def command_line(*fallback: str) -> list[str]:
    """The command line recorded in the Result: the real one when secperf runs as a program, else
    `secperf` and the given words (a test calling cli.main)."""
    cli = Path(sys.argv[0]).name in ("secperf", "__main__.py")
    return ["secperf", *sys.argv[1:]] if cli else ["secperf", *fallback]


def output(args: argparse.Namespace, *command: str) -> Output:
    """The app's Output of the parsed output options."""

    return Output(
        out=args.out,
        json=args.json,
        csv=getattr(args, "csv", None),
        metrics=getattr(args, "metrics", None),
        no_report=args.no_report,
        max_failure_share=getattr(args, "max_failure_share", 0.0),
        figures=getattr(args, "figures", None),
        command=command_line(*(command or (args.command,))),
    )


def no_network(args: argparse.Namespace, why: str | None = None) -> None:
    """--network of a command that runs no link: only loopback (app/links.check_no_network)."""

    check_no_network(args.network, why)
