"""`secperf jwt`: JWT device authentication against a verifying HTTPS endpoint."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..app import commands
from ..app.options import JwtOptions
from .measuring import measure_options, output

if TYPE_CHECKING:
    from ..core.result_schema import Result


def options(args: argparse.Namespace) -> JwtOptions:
    """The app's JwtOptions of the parsed arguments."""

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
    return commands.jwt(options(args), output(args))
