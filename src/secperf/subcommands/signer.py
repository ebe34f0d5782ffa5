"""`secperf signer`: study S2's signing modes through a PKCS#11 token behind a secure-element profile."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .argtypes import comma_list
from .measuring import add_measure_options, measure_options, no_network, output

if TYPE_CHECKING:
    from ..core.result_schema import Result
    from .output import Text

NAME = "signer"
HELP = "study S2's signing modes through a PKCS#11 token behind a secure-element profile"
NO_NETWORK = (
    "secperf signer times token operations alone, with no network path; drop --network. For "
    "JWT-authenticated requests over an emulated link use `secperf jwt --network`; for TLS/MQTT/CoAP "
    "connection set-up with the secure-element key, `secperf connect --network`"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--profile",
        action="extend",
        type=comma_list(),
        metavar="NAMES",
        help="secure-element profiles (default iot-safe-sim); `--profile list` lists them",
    )
    p.add_argument(
        "--key",
        action="extend",
        type=comma_list(),
        metavar="TYPES",
        help="token key types: ecdsa-p256 (default), ecdsa-brainpoolp256r1, rsa-2048",
    )
    p.add_argument(
        "--mode",
        action="extend",
        type=comma_list(),
        metavar="MODES",
        help="local_sw, sign_only, total (default: all three)",
    )
    add_measure_options(
        p,
        no_network="token operations alone involve no network, so only 'loopback' is "
        "accepted here (over a link: `secperf jwt --network`, `secperf connect --network`)",
    )


def run(args: argparse.Namespace) -> Result | Text:
    from ..app import commands

    no_network(args, NO_NETWORK)
    profiles = args.profile or ["iot-safe-sim"]
    if profiles == ["list"]:
        from .output import Text

        return Text(commands.list_profiles())
    return commands.signer(
        profiles,
        args.key or ["ecdsa-p256"],
        args.mode or list(commands.SIGNER_MODES),
        measure_options(args),
        output(args),
    )
