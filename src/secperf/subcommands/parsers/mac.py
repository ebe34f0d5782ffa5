"""`secperf mac`: lightweight MACs: host speed, Cortex-M instruction counts under QEMU, and the CAN
bus load model (study S4). The CAN options are `secperf can`'s (subcommands/can.py)."""

from __future__ import annotations

import argparse

from ...inputs.defaults import MAC_DEFAULT_ALGS, MAC_DEFAULT_SIZES
from .. import argtypes
from ..argtypes import comma_list
from .can import add_can_options
from .common import add_measure_options

NAME = "mac"

HELP = (
    "lightweight MACs: host speed (Chaskey vs OpenSSL's MACs), Cortex-M instruction counts under QEMU, and the "
    "CAN bus load model"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
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
