"""`secperf plan`: judge communication patterns (study S2) before and after design measures, with
latency, energy and bytes. Parsing only; secperf.app.plan runs it."""

from __future__ import annotations

NAME = "plan"
HELP = "judge communication patterns (periodic, events, real-time, management, bulk, batch): verdicts before " \
       "and after design measures, energy per day"


def add_arguments(p) -> None:
    from .argtypes import count, seed
    from . import argtypes
    p.add_argument("--pattern", action="append", type=argtypes.name_list, metavar="NAME|FILE",
                   help="a built-in pattern (periodic-collection, event-driven, real-time-control, remote-management, "
                        "bulk-transfer, batch-collection; 'study' = all six) or a TOML file; comma list, repeatable "
                        "(default: study)")
    p.add_argument("--list", action="store_true", help="the built-in patterns, measures and energy profiles")
    p.add_argument("--device", metavar="TABLE", help="device cost table and CPU power (host-default, cortex-m4-120mhz)")
    p.add_argument("--se", metavar="PROFILE", help="secure-element profile for the client key (or 'software')")
    p.add_argument("--network", metavar="NETWORK", help="link profile instead of each pattern's (lte-m, nb-iot, lte, wifi...)")
    p.add_argument("--radio", metavar="PROFILE", help="radio energy profile (default: the network's; needed for a "
                   "network given as a spec such as 'delay=50ms')")
    p.add_argument("--n", type=count(1_000_000, lo=100), default=20_000, help="simulated draws per exchange kind")
    p.add_argument("--seed", type=seed, default=1)
    p.add_argument("--verify", action="store_true",
                   help="run each measure the emulator can run (resumption, JWT caching, PSK) before/after on the "
                        "real servers over the pattern's emulated link; predicted vs measured P50 (needs root)")
    p.add_argument("--verify-n", type=count(1000), default=10, help="connections per verified row (default 10)")
    p.add_argument("--metrics", type=argtypes.path, metavar="FILE", help="also write the plan's operational metrics (Prometheus text)")
    p.add_argument("--out", type=argtypes.path, default="results", metavar="DIR")
    p.add_argument("--json", action="store_true", help="print the Result JSON on stdout and nothing else")
    p.add_argument("--no-report", action="store_true", help="skip writing report.html")


def run(args) -> int:
    import sys
    from ..app import plan as A
    if args.list:
        from ..report.terminal_plan import listing
        listing()
        return 0
    pats = [x.strip() for v in args.pattern or ["study"] for x in v.split(",") if x.strip()]
    o = A.PlanOptions(patterns=pats, device=args.device, se=args.se, network=args.network, radio=args.radio, n=args.n, seed=args.seed,
                      verify=args.verify, verify_n=args.verify_n, json=args.json, out=args.out,
                      no_report=args.no_report, metrics=args.metrics, command=["secperf", *sys.argv[1:]])
    return A.run(o)
