"""`secperf netem list|check|sweep|run`: emulated network links (two namespaces, a native relay)."""

from __future__ import annotations

import argparse

from ..argtypes import seed
from . import common

NAME = "netem"

HELP = "emulated network links (two namespaces, a native relay): profiles, run a command over a link, checks, clean-up"


def add_arguments(p: argparse.ArgumentParser) -> None:
    nsub = p.add_subparsers(dest="netem_command", metavar="ACTION")
    nsub.add_parser("list", help="link profiles and sweeps with their figures and sources")
    nsub.add_parser("check", help="can links be emulated here? (mode: root or rootless; TUN, namespaces, the relay)")
    nsub.add_parser("sweep", help="delete link namespaces left by dead secperf processes (root mode)")
    nr = nsub.add_parser(
        "run",
        help="run CMD in the device namespace over a link: secperf netem run PROFILE -- CMD",
        description="Runs CMD on the device side of an emulated link; the server side is at "
        "$SECPERF_SERVER_ADDR (10.77.0.2). Exit code: CMD's.",
    )
    nr.add_argument("network", help="profile, spec string (delay=50ms,loss=1%%,...) or loopback")
    nr.add_argument(
        "--server",
        metavar="CMD",
        help="a command to run in the server namespace meanwhile (split like a shell would; stopped by PID at the end)",
    )
    nr.add_argument("--seed", type=seed, default=1, help="seed of the link's random draws")
    nr.add_argument(
        "--poll",
        choices=("adaptive", "busy"),
        default="adaptive",
        help="relay waiting: adaptive (spin 10 ms after activity, then sleep) or busy (spin always)",
    )
    nr.add_argument("--stats", action="store_true", help="print the relay's final counters as JSON on stderr")
    nr.add_argument("cmd", nargs="*", help="-- CMD [ARGS...]")
    common.wait_options(nr)
