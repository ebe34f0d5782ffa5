"""`secperf plan`: judge communication patterns (study S2) before and after design measures, with
latency, energy and bytes. Parsing only; secperf.app.plan runs it."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..app.plan_options import PlanOptions
    from ..core.result_schema import Result
    from .output import Exited

NAME = "plan"
JUDGES_FAILURES = False  # a plan's Result is judged by its verdicts, not by failed rows
HELP = (
    "judge communication patterns (periodic, events, real-time, management, bulk, batch): verdicts before "
    "and after design measures, energy per day"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from . import argtypes, shared
    from .argtypes import count, seed

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
    from .measuring import max_hours_option

    max_hours_option(p)
    shared.add_device_options(
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
    p.add_argument(
        "--sources",
        action="store_true",
        help="after the tables, list where each figure used comes from (cost table, each operation's "
        "cost, the secure-element and network profiles): what the report and result.json hold",
    )
    p.add_argument(
        "--host-costs",
        choices=("measured", "shipped"),
        default=None,
        help="where this host's (the server's) operation costs come from: measured (default: a short "
        "`secperf crypto` run on first use, cached under SECPERF_HOME) or shipped (the package's table)",
    )
    from .shared import cluster_option

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


def run(args: argparse.Namespace) -> Result | Exited:
    from ..app import plan as A
    from ..core.errors import InputError
    from .output import Exited

    if args.list:
        from ..report.terminal_plan import listing

        listing()
        return Exited(0)
    from ..app.cluster import require

    require(args.cluster)  # Ray missing or a malformed address: exit 2 before any work
    o = options(args)
    o.cluster = args.cluster
    try:
        return A.run(o)
    except InputError as exc:  # about a value the --system file gave: the file's key path, not an option
        from .system_args import in_file_words

        raise in_file_words(exc, args.system, getattr(args, "system_taken", None) or {}) from None


def options(args: argparse.Namespace) -> PlanOptions:
    """The PlanOptions of the parsed arguments, with a --system file's values under them (the command
    line overrides the file, with a note: subcommands/system_args.py)."""
    import sys

    from ..app import plan as A
    from ..core.errors import InputError
    from ..inputs import vocabulary as V

    key = args.key
    if args.se is not None:
        if key is not None:
            raise InputError(
                f"--se {args.se} and --key {key}: --se is the old name of --key se:PROFILE; give --key only"
            )
        key = V.key_from_se(args.se)
        V.note(f"--se is renamed --key se:PROFILE (here --key {key}); accepted for this release")
    if key is not None:
        key = V.key(key, "--key" if args.se is None else "--se")
    pats = list(args.pattern or [])
    device, network, radio, resolved, system = args.device, args.network, args.radio, [], None
    stack, config = args.stack, args.config
    stack_from = config_from = None
    from . import shared

    shared.check_device_build(device or args.system, stack, config)
    if args.system:
        from ..inputs.system import load_system, pattern
        from .system_args import Merge

        ls = load_system(args.system)
        s, system = ls.system, args.system
        m = Merge(args.system)
        args.system_taken = m.taken
        device = m.pick("--device", device, "[device].core", s.device.core)
        key = m.pick("--key", key, "[security].key", s.security.key)
        network = m.pick("--network", network, "[network].link", s.network.link)
        radio = m.pick("--radio", radio, "[network].radio", s.network.radio)
        if pats:
            what = "[pattern] and [budgets]" if s.budgets is not None else "[pattern]"
            V.note(f"--pattern {','.join(pats)} replaces the {what} of {args.system}")
        else:
            resolved = [pattern(ls)]
            pats = [resolved[0].name]
        if "--device" not in m.overridden:
            stack = m.pick("--stack", stack, "[device].stack", s.device.stack)
            config = m.pick("--config", config, "[device].config", s.device.config)
            # the file's library is a preference: a protocol it cannot run is counted with another (a note)
            stack_from = f"[device].stack of {args.system}" if stack is not None and not args.stack else None
            config_from = f"[device].config of {args.system}" if config is not None and not args.config else None
        elif s.device.stack or s.device.config:
            V.note(
                f"[device].stack/config of {args.system} belong to its core {s.device.core}; not used with "
                f"--device {device}"
            )
    o = A.PlanOptions(
        patterns=pats or ["study"],
        device=device,
        se=key,
        network=network,
        radio=radio,
        n=args.n,
        seed=args.seed,
        verify=args.verify,
        verify_n=args.verify_n,
        max_hours=args.max_hours,
        json=args.json,
        out=args.out,
        no_report=args.no_report,
        metrics=args.metrics,
        csv=args.csv,
        command=["secperf", *sys.argv[1:]],
        system=system,
        resolved=resolved,
        stack=stack,
        config=config,
        stack_from=stack_from,
        config_from=config_from,
        host_costs=args.host_costs,
    )
    return o
