"""`secperf handshake`: TLS 1.2/1.3 and DTLS handshakes with a per-message client CPU breakdown."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..app import commands
from ..app.options import HandshakeExperimentOptions
from . import shared
from .measuring import measure_options, output

if TYPE_CHECKING:
    from ..core.result_schema import Result


def options(args: argparse.Namespace) -> HandshakeExperimentOptions:
    """The app's HandshakeExperimentOptions of the parsed arguments."""

    return HandshakeExperimentOptions(
        experiment=args.experiment,
        servers=args.server or ["probe"],
        networks=args.network,
        mtls=args.mtls,
        stacks=args.stack or ["openssl"],
        target=shared.target_kwargs(args).get("target"),
        measure=measure_options(args),
    )


def run(args: argparse.Namespace) -> Result:
    return commands.handshake(options(args), output(args))
