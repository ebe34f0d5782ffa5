"""`secperf crypto`: primitive benchmarks (signatures, key agreement, AEAD, MACs, hashes, PQC)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .measuring import measure_options, no_network, output

if TYPE_CHECKING:
    from ..core.result_schema import Result
    from .output import Rich


def run(args: argparse.Namespace) -> Result | Rich:
    from ..app import commands

    if args.list:
        from .output import Rich

        return Rich([commands.list_algorithms()], fit=True)
    no_network(args)
    return commands.crypto(
        args.alg, args.op, args.size, args.strength, measure_options(args), output(args), args.library
    )
