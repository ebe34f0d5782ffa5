"""`secperf fleet`: N devices reconnecting after an outage against a server whose capacity is
measured here (the load generator against nginx) or given; a fluid queueing model extrapolates to
millions of devices. Parsing only."""

from __future__ import annotations

import argparse

from .. import argtypes
from ..argtypes import comma_list, count, nonneg, positive, seed, share
from .common import allow_partial_option, cluster_option, max_hours_option
from .server import target_options

MAX_DEVICES = 100_000_000

NAME = "fleet"

HELP = "reconnect storms: N devices reconnecting after an outage (measured capacity + queueing model)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--devices",
        type=comma_list(count(MAX_DEVICES)),
        default="100000",
        help="devices (comma list, up to 100,000,000)",
    )
    p.add_argument(
        "--policy",
        type=comma_list(),
        default="exponential",
        help="none, fixed, exponential (full jitter), decorrelated (comma list)",
    )
    p.add_argument("--capacity", type=positive(1e9), help="full handshakes/s of the server (default: measure it here)")
    p.add_argument("--resumed-capacity", type=positive(1e9), help="resumed handshakes/s (default: as --capacity)")
    p.add_argument(
        "--from", dest="from_result", metavar="RESULT", help="take the capacity from a `secperf server` result.json"
    )
    p.add_argument("--resumed-share", type=share, default=0.0, help="share of devices that resume (0..1)")
    p.add_argument("--base", type=positive(86_400), default=1.0, help="fixed delay or back-off base, seconds")
    p.add_argument("--cap", type=positive(7 * 86_400), default=60.0, help="back-off cap, seconds")
    p.add_argument("--timeout", type=positive(3600), default=10.0, help="client timeout per attempt, seconds")
    p.add_argument(
        "--backlog",
        type=count(10_000_000),
        default=4096,
        help="the server's listen backlog (mosquitto 100, nginx 511; the kernel caps it at somaxconn, 4096): "
        "SYNs beyond it are dropped and wait for TCP's retransmission (1, 2, 3, 4, 5, 7, 11 s ... on Linux 6.5+)",
    )
    p.add_argument(
        "--spread",
        type=nonneg(86_400),
        default=0.0,
        help="first attempts spread over this many seconds (0: all at the end of the outage)",
    )
    p.add_argument(
        "--device-handshake",
        type=nonneg(3600),
        default=0.0,
        help="device-side handshake seconds (e.g. from `secperf whatif`)",
    )
    p.add_argument("--horizon", type=positive(30 * 86_400), default=7200.0, help="simulated seconds at most")
    p.add_argument("--server", default="nginx", help="server to measure the capacity of (nginx, probe)")
    p.add_argument(
        "--key",
        metavar="KEYS",
        help="the server key(s) whose capacity to measure (default rsa-2048) or "
        "to take from --from (default: the Result's only key; a Result holding several needs --key); a "
        "comma list gives one set of rows per key",
    )
    p.add_argument("--measure-seconds", type=positive(600), default=2.0)

    max_hours_option(p)
    p.add_argument(
        "--abandoned-work",
        action="store_true",
        help="the model: the server still does the handshake "
        "of an attempt whose client gave up (nginx does; default: such work is dropped)",
    )
    p.add_argument(
        "--replay",
        type=count(5000, lo=10),
        metavar="N",
        help="replay a storm of N clients (10..5000) "
        "against nginx with secperf-loadgen --storm and compare with the model at the capacity "
        "measured just before",
    )
    p.add_argument("--seed", type=seed, default=1)

    target_options(p, replay=True)

    cluster_option(p, "with --replay, the storm's clients spread over one secperf-loadgen per worker CPU")
    g = p.add_argument_group("output")
    g.add_argument("--out", type=argtypes.path, default="results")

    allow_partial_option(p)
    g.add_argument("--json", action="store_true")
    g.add_argument(
        "--csv",
        type=argtypes.path,
        metavar="FILE",
        help="also write every number of the fleet model as CSV (tidy: one row per number)",
    )
    g.add_argument("--no-report", action="store_true")
