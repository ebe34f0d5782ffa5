"""`secperf plan`: judge communication patterns (study S2) before and after design measures, with
latency, energy and bytes. Parsing only; secperf.app.plan runs it."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..app import plan as A
from ..app.cluster import require
from ..core.errors import InputError
from ..inputs import vocabulary as V
from ..inputs.system import load_system, pattern
from ..report.terminal_plan import listing
from . import shared
from .output import Exited
from .system_args import Merge, in_file_words

if TYPE_CHECKING:
    from ..app.plan_options import PlanOptions
    from ..core.result_schema import Result

JUDGES_FAILURES = False  # a plan's Result is judged by its verdicts, not by failed rows


def run(args: argparse.Namespace) -> Result | Exited:
    if args.list:
        listing()
        return Exited(0)

    require(args.cluster)  # Ray missing or a malformed address: exit 2 before any work
    o = options(args)
    o.cluster = args.cluster
    try:
        return A.run(o)
    except InputError as exc:  # about a value the --system file gave: the file's key path, not an option
        raise in_file_words(exc, args.system, getattr(args, "system_taken", None) or {}) from None


def options(args: argparse.Namespace) -> PlanOptions:
    """The PlanOptions of the parsed arguments, with a --system file's values under them (the command
    line overrides the file, with a note: subcommands/system_args.py)."""

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
    file_link = None  # a --system file's link and key profile, resolved while it was read
    file_key = None
    file_device = None  # ... and its [device].core (inputs.devices.choose_device)
    stack, config = args.stack, args.config
    stack_from = config_from = None

    shared.check_device_build(device or args.system, stack, config)
    if args.system:
        ls = load_system(args.system)
        s, system = ls.system, args.system
        m = Merge(args.system)
        args.system_taken = m.taken
        device = m.pick("--device", device, "[device].core", s.device.core)
        key = m.pick("--key", key, "[security].key", s.security.key)
        network = m.pick("--network", network, "[network].link", s.network.link)
        radio = m.pick("--radio", radio, "[network].radio", s.network.radio)
        file_link = ls.link if "--network" in m.taken else None
        file_key = ls.key_profile if "--key" in m.taken else None
        file_device = ls.device if "--device" in m.taken else None
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
        link=file_link,
        key_profile=file_key,
        device_choice=file_device,
    )
    return o
