"""What every measuring command takes (--n, --duration, --warmup, --seed, --network, the output
options) and how the parsed values become the app's MeasureOptions and Output. No subcommand of its
own (not in subcommands.MODULES)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from . import argtypes
from .argtypes import count, positive, seed, share

if TYPE_CHECKING:
    from ..app.options import MeasureOptions
    from ..app.runner import Output


def add_measure_options(p: argparse.ArgumentParser, links: bool = False, no_network: str | None = None) -> None:
    g = p.add_argument_group("measurement")
    g.add_argument("--n", type=count(1_000_000), help="samples per series (each a timed batch)")
    g.add_argument(
        "--duration",
        type=positive(86_400),
        metavar="S",
        help="time budget per series in seconds (at least one sample is always taken)",
    )
    g.add_argument("--warmup", type=count(100_000, lo=0), help="samples run and discarded before counting")
    g.add_argument("--seed", type=seed, default=1, help="seed for generated messages and keys' inputs")
    g.add_argument(
        "--min-sample-us",
        type=positive(10_000_000),
        default=1000.0,
        help="batch operations until a sample lasts this long, so timer overhead stays < 1%%",
    )
    g.add_argument(
        "--max-hours",
        type=positive(10_000),
        default=None,
        metavar="H",
        help="refuse a run whose estimate (from the rows, --n, --duration, the link and the protocols' "
        "timers, before anything starts) is longer (default 1)",
    )
    if links:
        g.add_argument(
            "--network",
            action="append",
            metavar="NETWORK",
            help="emulated link: a profile (`secperf netem list`), a spec like "
            "'delay=50ms,loss=1%%,rate=250kbit', a sweep (rtt-sweep, loss-sweep, iot-links) or a "
            "comma list of profiles; repeat for several links (default: loopback)",
        )
    else:
        g.add_argument(
            "--network",
            default="loopback",
            help="emulated link; "
            + (no_network or "primitives involve no network, so only 'loopback' is accepted here"),
        )
    o = p.add_argument_group("output")
    o.add_argument(
        "--out",
        type=argtypes.path,
        default="results",
        metavar="DIR",
        help="results directory; each run gets its own sub-directory (default: results)",
    )
    o.add_argument("--json", action="store_true", help="print the Result JSON on stdout and nothing else")
    o.add_argument(
        "--csv", type=argtypes.path, metavar="FILE", help="also write every number as CSV (tidy: one row per number)"
    )
    o.add_argument(
        "--metrics",
        type=argtypes.path,
        metavar="FILE",
        help="also write S2's operational metrics (Prometheus text format)",
    )
    o.add_argument("--no-report", action="store_true", help="skip writing report.html")
    o.add_argument(
        "--figures",
        type=argtypes.path,
        metavar="DIR",
        help="also write every plot as PNG (300 dpi) and PDF into DIR, one file pair per plot",
    )
    o.add_argument(
        "--max-failure-share",
        type=share,
        default=0.0,
        help="exit 1 when more than this share of series failed (default 0)",
    )


def max_hours_option(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """--max-hours of a measuring command outside add_measure_options (device, server, fleet, mqtt-load,
    plan): the limit its run-time estimate (app/bounds.py) is held to."""
    p.add_argument(
        "--max-hours",
        type=positive(10_000),
        default=None,
        metavar="H",
        help="refuse a run whose estimate (from the options, before anything starts) is longer (default 1)",
    )


def measure_options(args: argparse.Namespace) -> MeasureOptions:
    """The app's MeasureOptions of the parsed arguments."""
    from ..app.options import MeasureOptions

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
    from ..app.runner import Output

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
    from ..app.links import check_no_network

    check_no_network(args.network, why)
