"""`secperf can`: CAN bus load of frame authentication (study S4): CPU load, extra bus load, the k
that fits a CPU budget. A model, no measurement: its Result is computed (JUDGES_FAILURES False)."""

from __future__ import annotations

import argparse

from ...inputs.defaults import CAN_DEFAULT_DEVICES, CAN_DEFAULT_MACS
from .. import argtypes
from ..argtypes import comma_list, count, positive, share

NAME = "can"

HELP = "CAN bus load of frame authentication (study S4): CPU load, extra bus load, the k that fits a CPU budget"


def add_can_options(p: argparse.ArgumentParser, *, single: bool) -> None:
    """The CAN bus options `can` and `mac` share."""

    g = p.add_argument_group("CAN bus (defaults: study S4)")
    g.add_argument(
        "--device",
        type=comma_list(),
        metavar="NAMES",
        help="device profiles, comma-separated "
        "(data/devices.toml; `secperf can --list-devices`)" + ("" if single else f"; default {CAN_DEFAULT_DEVICES}"),
    )
    g.add_argument(
        "--mac", type=comma_list(), metavar="NAMES", help=f"MACs, comma-separated (default {CAN_DEFAULT_MACS})"
    )
    g.add_argument("--bitrate-kbps", type=positive(100_000), default=1000.0, help="bus bit rate (S4: 1000)")
    g.add_argument("--usable-share", type=share, default=0.5, help="usable share of the bus (S4: 0.5)")
    g.add_argument("--frame-bits", type=count(100_000), help="bits per frame (S4: 108; CAN FD 64 bytes: 579)")
    g.add_argument("--data-bytes", type=count(64), help="application data bytes per frame (S4: 8; CAN FD: 56)")
    g.add_argument("--period-ms", type=positive(3_600_000), default=10.0, help="ECU cycle period (S4: 10 ms)")
    g.add_argument("--clock-mhz", type=positive(100_000), default=32.0, help="MCU clock (S4: RL78 at 32 MHz)")
    g.add_argument(
        "--frames",
        type=count(1_000_000),
        metavar="N",
        help="frames per period (default: the chip's frame-handling limit decides)",
    )
    g.add_argument(
        "--frame-limit-kbps",
        type=positive(100_000),
        default=216.0,
        help="frames the chip can handle, in kbit/s (S4: RL78 about 216)",
    )
    g.add_argument("--tag-bytes", type=count(64), default=8, help="tag length in bytes (default 8)")
    g.add_argument("--k", type=int, metavar="K", help="one tag every K frames (1..8); default: all of 1..8")
    g.add_argument(
        "--cpu-budget",
        type=share,
        default=0.10,
        help="share of the CPU MAC computation may use (default 0.10, an assumption)",
    )
    g.add_argument(
        "--cycles-per-block", type=positive(1e9), help="override the device profile: cycles per 16-byte block"
    )
    g.add_argument("--fd", action="store_true", help="CAN FD: 64-byte frames carrying the tag")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_can_options(p, single=True)
    p.add_argument("--list-devices", action="store_true", help="list device profiles with their MAC figures")
    p.add_argument(
        "--out", type=argtypes.path, default="results", metavar="DIR", help="results directory (default: results)"
    )
    p.add_argument("--json", action="store_true", help="print the Result JSON on stdout and nothing else")
    p.add_argument("--csv", type=argtypes.path, metavar="FILE", help="also write every number as CSV (one row each)")
    p.add_argument("--no-report", action="store_true", help="skip writing report.html")
