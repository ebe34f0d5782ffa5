"""The options several commands share (measurement and output options, your own server, device
builds, a cluster, --allow-partial, --max-hours, key sessions), as argparse definitions only: what
the parsed values become is the run halves' (subcommands/measuring.py, shared.py)."""

from __future__ import annotations

import argparse

from .. import argtypes
from ..argtypes import count, positive, seed, share


def key_session_option(p: argparse.ArgumentParser) -> None:
    """--key-session of `connect` and `jwt`."""
    p.add_argument(
        "--key-session",
        action="extend",
        type=argtypes.comma_list(),
        metavar="KINDS",
        help="token key session per connection: warm (default: one PKCS#11 session and login for all), "
        "cold (a device waking for each connection: open a session, log in, find the key every "
        "time); comma-separated for both",
    )


def own_server_options(p: argparse.ArgumentParser) -> None:
    """The user's own server instead of one secperf starts (`connect`, `handshake`)."""
    g = p.add_argument_group("your own server (instead of one secperf starts)")
    g.add_argument("--connect", metavar="HOST:PORT", help="measure the server at HOST:PORT")
    g.add_argument("--ca", metavar="FILE", help="CA certificate(s) that verify the server (PEM)")
    g.add_argument(
        "--servername", metavar="NAME", help="SNI and the name checked in the server's certificate (default: HOST)"
    )
    g.add_argument("--client-cert", metavar="FILE", help="client certificate (PEM) for mutual TLS")
    g.add_argument("--client-key", metavar="FILE|URI", help="its key: a PEM file or a pkcs11: URI")


def wait_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--wait-port",
        type=count(65535),
        metavar="PORT",
        help="with --server: wait until the server accepts TCP on PORT (of $SECPERF_SERVER_ADDR) before "
        "starting CMD (default: until the server listens on any TCP port)",
    )
    p.add_argument(
        "--wait-timeout",
        type=positive(3600),
        default=10.0,
        metavar="S",
        help="how long to wait for the server (default 10 s)",
    )


def allow_partial_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--allow-partial",
        action="store_true",
        help="read a Result whose run is still running or was abandoned (killed before it finished); "
        "a note says its figures are partial",
    )


def add_device_options(p: argparse.ArgumentParser, device_help: str, stack_help: str = "") -> None:
    """--device CORE with its library choices (--stack, --config), as `whatif` and `plan` take them."""
    p.add_argument(
        "--device",
        type=argtypes.name,
        metavar="CORE",
        help="the client's device: an emulated core of `secperf device list` "
        f"(cortex-m4-80, cortex-m33-128, cortex-a9-400, ...): {device_help}; or the cost table host-default",
    )
    p.add_argument(
        "--stack",
        type=argtypes.name_list,
        metavar="STACK",
        help="with --device CORE: the libraries counted, in order of preference (comma list: wolfssl, "
        "wolfssl59, mbedtls3, mbedtls, openssl, ngtcp2); each protocol takes the first that runs it, one "
        "none runs exits 2 naming those that do (default: one library for as many of the protocols as it "
        f"runs, another where it lacks one, said){stack_help}",
    )
    p.add_argument(
        "--config",
        metavar="CONFIG",
        help="with --device CORE: the library's build configuration (default: the stack's; "
        "`secperf device list` shows them, e.g. sp-asm, sp-c, sp-small for wolfSSL)",
    )


def cluster_option(p: argparse.ArgumentParser, what: str) -> None:
    """--cluster auto|local|ADDRESS (app/cluster.py; Ray is the optional extra secperf[cluster])."""
    p.add_argument(
        "--cluster",
        metavar="auto|local|ADDRESS",
        help=f"run on a Ray cluster: {what}; auto: the cluster this machine joined (`ray start`), "
        "local: a private Ray on this machine, HOST:PORT: a head's address (needs "
        "`pip install 'secperf[cluster]'`; docs/how-to/cluster.md)",
    )


def add_measure_options(p: argparse.ArgumentParser, links: bool = False, no_network: str | None = None) -> None:
    g = p.add_argument_group("measurement")
    g.add_argument("--n", type=count(1_000_000), help="samples per series (each a timed batch)")
    g.add_argument(
        "--duration",
        type=positive(86_400),
        metavar="S",
        help="time budget per series in seconds (at least one sample is always taken)",
    )
    g.add_argument("--warmup", type=count(100_000, lo=0), help="samples run and discarded before counting")
    g.add_argument("--seed", type=seed, default=1, help="seed for generated messages and keys' inputs")
    g.add_argument(
        "--min-sample-us",
        type=positive(10_000_000),
        default=1000.0,
        help="batch operations until a sample lasts this long, so timer overhead stays < 1%%",
    )
    g.add_argument(
        "--max-hours",
        type=positive(10_000),
        default=None,
        metavar="H",
        help="refuse a run whose estimate (from the rows, --n, --duration, the link and the protocols' "
        "timers, before anything starts) is longer (default 1)",
    )
    if links:
        g.add_argument(
            "--network",
            action="append",
            metavar="NETWORK",
            help="emulated link: a profile (`secperf netem list`), a spec like "
            "'delay=50ms,loss=1%%,rate=250kbit', a sweep (rtt-sweep, loss-sweep, iot-links) or a "
            "comma list of profiles; repeat for several links (default: loopback)",
        )
    else:
        g.add_argument(
            "--network",
            default="loopback",
            help="emulated link; "
            + (no_network or "primitives involve no network, so only 'loopback' is accepted here"),
        )
    o = p.add_argument_group("output")
    o.add_argument(
        "--out",
        type=argtypes.path,
        default="results",
        metavar="DIR",
        help="results directory; each run gets its own sub-directory (default: results)",
    )
    o.add_argument("--json", action="store_true", help="print the Result JSON on stdout and nothing else")
    o.add_argument(
        "--csv", type=argtypes.path, metavar="FILE", help="also write every number as CSV (tidy: one row per number)"
    )
    o.add_argument(
        "--metrics",
        type=argtypes.path,
        metavar="FILE",
        help="also write S2's operational metrics (Prometheus text format)",
    )
    o.add_argument("--no-report", action="store_true", help="skip writing report.html")
    o.add_argument(
        "--figures",
        type=argtypes.path,
        metavar="DIR",
        help="also write every plot as PNG (300 dpi) and PDF into DIR, one file pair per plot",
    )
    o.add_argument(
        "--max-failure-share",
        type=share,
        default=0.0,
        help="exit 1 when more than this share of series failed (default 0)",
    )


def max_hours_option(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """--max-hours of a measuring command outside add_measure_options (device, server, fleet, mqtt-load,
    plan): the limit its run-time estimate (app/bounds.py) is held to."""
    p.add_argument(
        "--max-hours",
        type=positive(10_000),
        default=None,
        metavar="H",
        help="refuse a run whose estimate (from the options, before anything starts) is longer (default 1)",
    )


def sources_option(p: argparse.ArgumentParser) -> None:
    """--sources of the predicting commands (whatif, plan): where each figure used comes from."""
    p.add_argument(
        "--sources",
        action="store_true",
        help="after the tables, list where each figure used comes from (cost table, each operation's "
        "cost, the secure-element and network profiles): what the report and result.json hold",
    )
