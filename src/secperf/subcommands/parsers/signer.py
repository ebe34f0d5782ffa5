"""`secperf signer`: study S2's signing modes through a PKCS#11 token behind a secure-element profile."""

from __future__ import annotations

import argparse

from ..argtypes import comma_list
from .common import add_measure_options

NAME = "signer"

HELP = "study S2's signing modes through a PKCS#11 token behind a secure-element profile"


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
