"""`secperf jwt`: JWT device authentication against a verifying HTTPS endpoint."""

from __future__ import annotations

import argparse

from ..argtypes import comma_list, count, positive
from . import common
from .common import add_measure_options

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
    common.key_session_option(p)
    add_measure_options(p, links=True)
