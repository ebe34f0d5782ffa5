"""`secperf mac`: lightweight MACs: host speed, Cortex-M instruction counts under QEMU, and the CAN
bus load model (study S4). The CAN options are `secperf can`'s (subcommands/can.py)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from . import argtypes
from .argtypes import comma_list
from .can import add_can_options
from .measuring import add_measure_options, measure_options, no_network, output

if TYPE_CHECKING:
    from ..app.options import MacOptions
    from ..core.result_schema import Result

NAME = "mac"
HELP = (
    "lightweight MACs: host speed (Chaskey vs OpenSSL's MACs), Cortex-M instruction counts under QEMU, and the "
    "CAN bus load model"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..app.can import MAC_DEFAULT_ALGS, MAC_DEFAULT_SIZES

    p.add_argument(
        "--alg", action="extend", type=comma_list(), metavar="NAMES", help=f"MACs (default {MAC_DEFAULT_ALGS})"
    )
    p.add_argument(
        "--size",
        action="extend",
        type=comma_list(),
        metavar="BYTES",
        help=f"message sizes (default {MAC_DEFAULT_SIZES})",
    )
    p.add_argument(
        "--cortexm",
        type=comma_list(),
        default="m0,m3",
        metavar="TARGETS",
        help="Cortex-M targets counted under QEMU: m0, m3, m4 (comma-separated) or none",
    )
    p.add_argument("--cortexm-only", action="store_true", help="only the Cortex-M instruction counts")
    p.add_argument(
        "--cortexm-table",
        type=argtypes.path,
        metavar="FILE",
        help="write the instruction-count table as JSON (byte-identical across runs)",
    )
    p.set_defaults(hash="sha256", prehashed=False)
    add_can_options(p, single=False)
    add_measure_options(p)


def options(args: argparse.Namespace) -> MacOptions:
    """The app's MacOptions of the parsed arguments (a list not given stays None: the default)."""
    from ..app.can import CanOptions
    from ..app.options import MacOptions

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
    from ..app import commands

    no_network(args)
    return commands.mac(options(args), output(args))
