"""`secperf plan`: judge communication patterns (study S2) before and after design measures, with
latency, energy and bytes. Parsing only; secperf.app.plan runs it."""

from __future__ import annotations

import argparse

from .. import argtypes
from ..argtypes import count, seed
from . import common
from .common import cluster_option, max_hours_option, sources_option

NAME = "plan"

HELP = (
    "judge communication patterns (periodic, events, real-time, management, bulk, batch): verdicts before "
    "and after design measures, energy per day"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pattern",
        action="extend",
        type=argtypes.comma_list(),
        metavar="NAME|FILE",
        help="a built-in pattern (periodic-collection, event-driven, real-time-control, remote-management, "
        "bulk-transfer, batch-collection; 'study' = all six) or a TOML file; comma list, repeatable "
        "(default: study)",
    )
    p.add_argument("--list", action="store_true", help="the built-in patterns, measures and energy profiles")

    max_hours_option(p)
    common.add_device_options(
        p,
        "its client costs counted on the emulator now or taken from the cache, its CPU power from its class and clock",
    )
    p.add_argument(
        "--key",
        metavar="SOURCE",
        help="the client key instead of each pattern's: software, se:PROFILE "
        "(warm: session kept) or se:PROFILE:cold (session opened and key found per connection); profiles: "
        "`secperf signer --profile list`",
    )
    p.add_argument(
        "--se", metavar="PROFILE", help="old name: --se PROFILE is --key se:PROFILE; accepted for this release"
    )
    p.add_argument(
        "--system",
        type=argtypes.path,
        metavar="FILE.toml",
        help="a system file: core, key, network and radio, protocol, the pattern and its budgets in one "
        "file (`secperf schema system`; examples/); options given here override the file's, with a note",
    )
    p.add_argument(
        "--network", metavar="NETWORK", help="link profile instead of each pattern's (lte-m, nb-iot, lte, wifi...)"
    )
    p.add_argument(
        "--radio",
        metavar="PROFILE",
        help="radio energy profile (default: the network's; needed for a network given as a spec such as 'delay=50ms')",
    )
    p.add_argument("--n", type=count(1_000_000, lo=100), default=20_000, help="simulated draws per exchange kind")
    p.add_argument("--seed", type=seed, default=1)
    sources_option(p)
    p.add_argument(
        "--host-costs",
        choices=("measured", "shipped"),
        default=None,
        help="where this host's (the server's) operation costs come from: measured (default: a short "
        "`secperf crypto` run on first use, cached under SECPERF_HOME) or shipped (the package's table)",
    )

    cluster_option(p, "each pattern's judgement as a Ray task; the same matrix as a local run")
    p.add_argument(
        "--verify",
        action="store_true",
        help="run each measure the emulator can run (resumption, JWT caching, PSK) before/after on the "
        "real servers over the pattern's emulated link; predicted vs measured P50 (needs root)",
    )
    p.add_argument("--verify-n", type=count(1000), default=10, help="connections per verified row (default 10)")
    p.add_argument(
        "--metrics",
        type=argtypes.path,
        metavar="FILE",
        help="also write the plan's operational metrics (Prometheus text)",
    )
    p.add_argument("--out", type=argtypes.path, default="results", metavar="DIR")
    p.add_argument(
        "--csv",
        type=argtypes.path,
        metavar="FILE",
        help="also write every number of the plan as CSV (tidy: one row per number)",
    )
    p.add_argument("--json", action="store_true", help="print the Result JSON on stdout and nothing else")
    p.add_argument("--no-report", action="store_true", help="skip writing report.html")
