"""`secperf signer`: study S2's signing modes through a PKCS#11 token behind a secure-element profile."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..app import commands
from .measuring import measure_options, no_network, output
from .output import Text

if TYPE_CHECKING:
    from ..core.result_schema import Result

NO_NETWORK = (
    "secperf signer times token operations alone, with no network path; drop --network. For "
    "JWT-authenticated requests over an emulated link use `secperf jwt --network`; for TLS/MQTT/CoAP "
    "connection set-up with the secure-element key, `secperf connect --network`"
)


def run(args: argparse.Namespace) -> Result | Text:
    no_network(args, NO_NETWORK)
    profiles = args.profile or ["iot-safe-sim"]
    if profiles == ["list"]:
        return Text(commands.list_profiles())
    return commands.signer(
        profiles,
        args.key or ["ecdsa-p256"],
        args.mode or list(commands.SIGNER_MODES),
        measure_options(args),
        output(args),
    )
