"""`secperf jwt`: JWT device authentication against a verifying HTTPS endpoint."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from . import shared
from .argtypes import comma_list, count, positive
from .measuring import add_measure_options, measure_options, output

if TYPE_CHECKING:
    from ..app.options import JwtOptions
    from ..core.result_schema import Result

NAME = "jwt"
HELP = (
    "JWT device authentication: token signed in software or by the secure element, fresh vs cached, against a "
    "verifying HTTPS endpoint"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--profile",
        action="extend",
        type=comma_list(),
        metavar="NAMES",
        help="secure-element profiles (default iot-safe-sim)",
    )
    p.add_argument(
        "--key",
        action="extend",
        type=comma_list(),
        metavar="TYPES",
        help="ecdsa-p256 (ES256, default) or rsa-2048 (RS256)",
    )
    p.add_argument(
        "--lifetime", type=count(10 * 365 * 86_400), default=3600, metavar="S", help="token lifetime in seconds"
    )
    p.add_argument(
        "--requests-per-hour",
        type=positive(3.6e9),
        default=60.0,
        help="request rate for the signatures-per-hour estimate",
    )
    shared.key_session_option(p)
    add_measure_options(p, links=True)


def options(args: argparse.Namespace) -> JwtOptions:
    """The app's JwtOptions of the parsed arguments."""
    from ..app.options import JwtOptions

    return JwtOptions(
        profiles=args.profile or ["iot-safe-sim"],
        keys=args.key or ["ecdsa-p256"],
        networks=args.network,
        lifetime_s=args.lifetime,
        requests_per_hour=args.requests_per_hour,
        key_sessions=args.key_session or ["warm"],
        measure=measure_options(args),
    )


def run(args: argparse.Namespace) -> Result:
    from ..app import commands

    return commands.jwt(options(args), output(args))
