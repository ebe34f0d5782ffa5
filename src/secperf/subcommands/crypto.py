"""`secperf crypto`: primitive benchmarks (signatures, key agreement, AEAD, MACs, hashes, PQC)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..app import commands
from .measuring import measure_options, no_network, output
from .output import Rich

if TYPE_CHECKING:
    from ..core.result_schema import Result


def run(args: argparse.Namespace) -> Result | Rich:
    if args.list:
        return Rich([commands.list_algorithms()], fit=True)
    no_network(args)
    return commands.crypto(
        args.alg, args.op, args.size, args.strength, measure_options(args), output(args), args.library
    )
