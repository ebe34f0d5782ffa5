"""`secperf handshake`: TLS 1.2/1.3 and DTLS handshakes with a per-message client CPU breakdown."""

from __future__ import annotations

import argparse

from ..argtypes import comma_list, count
from . import common
from .common import add_measure_options

NAME = "handshake"

HELP = "TLS 1.2/1.3 and DTLS handshakes with a per-message client CPU breakdown"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "experiment", help="versions, suites, groups, breakdown, appdata, resumption, psk, 0rtt, certs, mtls, dtls"
    )
    p.add_argument(
        "--server",
        action="extend",
        type=comma_list(),
        metavar="NAMES",
        help="probe (default), s_server, nginx; comma-separated or repeated",
    )
    p.add_argument("--mtls", action="store_true", help="mutual TLS with a lab client certificate")
    p.add_argument(
        "--stack",
        action="extend",
        type=comma_list(),
        metavar="STACKS",
        help="client libraries: openssl (the probe, default), wolfssl, mbedtls (Mbed TLS 2.28: TLS 1.2); "
        "the others run the `secperf device` client built for this host against openssl s_server, "
        "with the same per-message client CPU breakdown (loopback, TLS over TCP, full or resumed)",
    )
    p.add_argument(
        "--timeout-ms",
        type=count(3_600_000),
        default=5000,
        help="per-connection stage timeout (over an emulated link, plus ten of its round trips, "
        "and 7 s of retransmission back-off if it loses packets)",
    )
    add_measure_options(p, links=True)
    common.own_server_options(p)
