"""`secperf mac`: lightweight MACs: host speed, Cortex-M instruction counts under QEMU, and the CAN
bus load model (study S4). The CAN options are `secperf can`'s (subcommands/can.py)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..app import commands
from ..app.can import CanOptions
from ..app.options import MacOptions
from .measuring import measure_options, no_network, output

if TYPE_CHECKING:
    from ..core.result_schema import Result


def options(args: argparse.Namespace) -> MacOptions:
    """The app's MacOptions of the parsed arguments (a list not given stays None: the default)."""

    return MacOptions(
        algs=args.alg,
        sizes=args.size,
        cortexm=args.cortexm,
        cortexm_only=args.cortexm_only,
        cortexm_table=args.cortexm_table,
        can=CanOptions.from_namespace(args),
        measure=measure_options(args),
    )


def run(args: argparse.Namespace) -> Result:
    no_network(args)
    return commands.mac(options(args), output(args))
