"""`secperf connect`: connection establishment on real servers with software, token and
secure-element keys, full and resumed (study S2); secperf's own QUIC, DTLS 1.3/1.2 and EDHOC pairs."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..app import commands  # every option acts on a chosen protocol or is refused: cli (app/option_scope)
from ..app.options import ConnectOptions
from . import shared
from .measuring import measure_options, output

if TYPE_CHECKING:
    from ..core.result_schema import Result


def options(args: argparse.Namespace) -> ConnectOptions:
    """The app's ConnectOptions of the parsed arguments (a list not given stays None)."""

    return ConnectOptions(
        protocols=args.protocol,
        keys=args.key,
        handshakes=args.handshake,
        clients=args.client,
        auths=args.auth,
        coap_security=args.coap_security,
        networks=args.network,
        tls=args.tls or "1.3",
        nagle=args.nagle,
        key_sessions=args.key_session,
        coap_servers=args.coap_server,
        target=shared.target_kwargs(args).get("target"),
        lost=args.lost,
        cid=args.cid,
        edhoc_method=args.edhoc_method,
        edhoc_suite=args.edhoc_suite,
        edhoc_cred=args.edhoc_cred,
        edhoc_flow=args.edhoc_flow,
        oscore_requests=args.oscore_requests,
        measure=measure_options(args),
    )


def run(args: argparse.Namespace) -> Result:
    return commands.connect(options(args), output(args))
