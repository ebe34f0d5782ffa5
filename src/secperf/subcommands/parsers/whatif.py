"""`secperf whatif`: predict what cannot run here (a device, a secure element, a network) from flight
models, cost tables and a Monte Carlo over the link. Parsing only; secperf.app.whatif runs it."""

from __future__ import annotations

import argparse

from ...inputs.handshakes import HANDSHAKES
from .. import argtypes
from ..argtypes import count, nonneg, off_measure_or_ms, positive, seed
from . import common
from .common import allow_partial_option, sources_option

NAME = "whatif"

HELP = "predict connection set-up for a protocol, key source, group, certificate and network (Monte Carlo)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "protocol",
        nargs="?",
        type=argtypes.comma_list(),
        help=f"{', '.join(HANDSHAKES)} (comma list allowed); `--list` shows them with their handshakes",
    )
    p.add_argument("--list", action="store_true", help="protocols, handshakes, groups, certificate types, cost tables")
    p.add_argument(
        "--network",
        action="append",
        metavar="NETWORK",
        help="a link profile (`secperf netem list`), a spec like 'delay=50ms,loss=1%%,rate=250kbit', a "
        "sweep or a comma list of profiles; repeatable (default: loopback)",
    )
    p.add_argument(
        "--key",
        action="extend",
        type=argtypes.comma_list(),
        metavar="SOURCES",
        help="client key: software, se:PROFILE (warm: session kept) or se:PROFILE:cold (open "
        "session, log in, find key, sign per connection); comma list",
    )
    p.add_argument(
        "--group",
        action="extend",
        type=argtypes.comma_list(),
        metavar="GROUPS",
        help="key-exchange group(s) (default x25519), e.g. p-256, ml-kem-768, x25519mlkem768",
    )
    p.add_argument(
        "--server-cert",
        action="extend",
        type=argtypes.comma_list(),
        metavar="TYPE[:DEPTH]",
        dest="server_cert",
        help="server certificate key type and chain depth, e.g. ecdsa-p256, rsa-2048:2, ml-dsa-44",
    )
    p.add_argument(
        "--cert",
        action="extend",
        type=argtypes.comma_list(),
        metavar="TYPE[:DEPTH]",
        dest="old_cert",
        help="old name of --server-cert, accepted for this release",
    )
    p.add_argument(
        "--system",
        type=argtypes.path,
        metavar="FILE.toml",
        help="a system file: core, stack and build, key, network, protocol and handshakes in one file "
        "(`secperf schema system`; examples/); options given here override the file's, with a note",
    )
    p.add_argument(
        "--handshake",
        action="extend",
        type=argtypes.comma_list(),
        metavar="KINDS",
        help="full, resumed, psk, psk-dhe, 0rtt, hrr, nocookie (DTLS), fresh/cached (jwt); comma list",
    )
    common.add_device_options(
        p,
        "its client costs are counted on the emulator now or taken from the cache "
        "(each side keeps its own costs: the server's stay this host's)",
        ", or the one of several in --calibrate device Results",
    )
    p.add_argument(
        "--sweep",
        metavar="GRID",
        help="grid over inputs, e.g. 'rtt=0..300:25,loss=0,1,5' or "
        "'group=x25519,ml-kem-768'; units: rtt, delay, jitter in ms, loss in %%, rate in kbit/s, "
        "mtu in bytes; also protocol, handshake, key, group, cert",
    )
    p.add_argument(
        "--calibrate",
        metavar="RESULT",
        help="result.json file(s), comma list, measured on this host (crypto, handshake "
        "or connect rows) to take costs from; with --device CORE, `secperf device` Results for the client "
        "(instead of counting now) and host Results for the server",
    )
    sources_option(p)
    p.add_argument(
        "--host-costs",
        choices=("measured", "shipped"),
        default=None,
        help="where this host's (the server's) operation costs come from: measured (default: a short "
        "`secperf crypto` run on first use, cached per CPU model and OpenSSL version under "
        "SECPERF_HOME) or shipped (the table in the package, measured on the development VM); "
        "a --calibrate Result of this host replaces both",
    )
    p.add_argument(
        "--s1",
        action="store_true",
        help="study S1's acceleration estimate: full vs PSK with a precomputed key share and the fastest group",
    )
    p.add_argument(
        "--coap-random-factor",
        type=positive(10),
        default=1.5,
        help="CoAP ACK_RANDOM_FACTOR (RFC 7252: 1.5; secperf's probe uses 1.0)",
    )
    p.add_argument(
        "--path-floor",
        type=nonneg(1000),
        default=0.0,
        metavar="MS",
        help="one-way latency every flight pays on top of the link's delay: the path's own forwarding "
        "(secperf's emulator at delay 0: about 0.2 ms; a real link's delay already holds it: 0, the "
        "default)",
    )
    p.add_argument(
        "--host-scheduling",
        type=off_measure_or_ms(1000),
        default="off",
        metavar="off|measure|MS",
        help="lateness of the receiving process waking up for each flight on the host that runs the "
        "link: off (default: a device's own stack), measure (sample this host now: 100 sleeps of "
        "20 ms) or a fixed number of ms; applies to links of 10 ms RTT or more, as the emulator's "
        "relay keeps spinning below that",
    )
    p.add_argument(
        "--baseline",
        action="store_true",
        help="what security costs: each row next to the same exchange without security (plain TCP/UDP, "
        "the same application messages, no crypto) and, for a secure-element key, with a software "
        "key; prints 'security adds X of Y' in time, bytes, radio-on time and energy",
    )
    p.add_argument(
        "--until",
        choices=("response", "handshake"),
        default="response",
        help="end point of the clock: response (default: the first application response, CONNACK, CoAP "
        "ACK...) or handshake (the client's handshake complete, as `secperf handshake` and openssl "
        "s_time stop; TCP connect included)",
    )
    p.add_argument("--n", type=count(100_000_000), default=100_000, help="simulated connections per scenario")
    p.add_argument(
        "--max-draws",
        type=count(10**12),
        default=200_000_000,
        metavar="N",
        help="refuse a what-if whose cells x --n exceed N simulated connections (default 2e8)",
    )
    p.add_argument(
        "--max-cells",
        type=count(10**9),
        default=20_000,
        metavar="N",
        help="refuse a what-if with more than N cells (scenarios x networks x sweep values; default 20000)",
    )
    p.add_argument("--seed", type=seed, default=1)
    common.cluster_option(p, "the cells as Ray tasks; the Result equals a local run's with the same --seed")
    p.add_argument("--out", type=argtypes.path, default="results", metavar="DIR")

    allow_partial_option(p)
    p.add_argument("--json", action="store_true", help="print the Result JSON on stdout and nothing else")
    p.add_argument("--no-report", action="store_true", help="skip writing report.html")
    p.add_argument(
        "--csv",
        type=argtypes.path,
        metavar="FILE",
        help="also write every predicted number as CSV (tidy: one row per number)",
    )
