"""`secperf mqtt-load`: N persistent MQTT/TLS clients against mosquitto (ramp at a connect rate, hold
with PUBLISH QoS 0/1/2 and keep-alive, a reconnect storm under a back-off policy), CONNACK and PUBACK
latency histograms per phase, and the storm beside `fleet`'s model. Parsing only.

A command of its own rather than an option of `server`: `server` measures handshake capacity in
levels of concurrent or offered short connections (one row per level); this load holds thousands of
connections open through phases and has options of its own (clients, rates, QoS, keep-alive,
back-off) that mean nothing to `server`'s levels."""

from __future__ import annotations

import argparse

from .. import argtypes
from ..argtypes import count, nonneg, positive, seed, share
from .common import cluster_option, max_hours_option

NAME = "mqtt-load"

HELP = "MQTT-level load on mosquitto: persistent MQTT/TLS clients, CONNACK/PUBACK latency, a reconnect storm vs fleet's model"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--clients",
        type=count(1_000_000),
        default=100,
        help="persistent clients (one socket each; "
        "the open-file limit and the ephemeral ports bound it and are named when they bind)",
    )
    p.add_argument("--connect-rate", type=positive(1e6), default=200.0, help="ramp: new connections per second")
    p.add_argument("--hold", type=nonneg(86_400), default=10.0, help="seconds held connected after the ramp")
    p.add_argument(
        "--publish-rate",
        type=nonneg(1e6),
        default=100.0,
        help="PUBLISH per second over all clients (round robin; 0: none)",
    )
    p.add_argument(
        "--qos",
        type=int,
        choices=(0, 1, 2),
        default=1,
        help="PUBLISH QoS (1: PUBACK latency measured; 2: PUBLISH to PUBCOMP, the PUBREC/PUBREL exchange included)",
    )
    p.add_argument("--payload", type=count(1024, lo=0), default=32, help="PUBLISH payload bytes")
    p.add_argument(
        "--keepalive",
        type=count(65535, lo=0),
        default=60,
        help="MQTT keep-alive seconds (PINGREQ after half of it idle; 0: none)",
    )
    p.add_argument("--timeout", type=positive(3600), default=10.0, help="seconds per attempt, connect to CONNACK")
    p.add_argument(
        "--storm",
        choices=("on", "off"),
        default="on",
        help="after the hold, reset every connection and measure the reconnection (default on)",
    )
    p.add_argument(
        "--policy",
        choices=("none", "fixed", "exponential", "decorrelated"),
        default="exponential",
        help="back-off after a failed attempt (exponential: full jitter)",
    )
    p.add_argument("--base", type=nonneg(86_400), default=0.5, help="fixed delay or back-off base, seconds")
    p.add_argument("--cap", type=nonneg(86_400), default=8.0, help="back-off cap, seconds")
    p.add_argument("--max-attempts", type=count(1_000_000), default=100)
    p.add_argument(
        "--spread",
        type=nonneg(86_400),
        default=0.0,
        help="the storm's first attempts spread uniformly "
        "over this many seconds (0: all at once; mosquitto's listen backlog is 100: a burst beyond it "
        "waits for TCP's SYN retransmissions, 1, 2, 3, 4, 5, 7, 11 s ... on Linux 6.5+)",
    )
    p.add_argument("--storm-max", type=positive(86_400), default=300.0, help="seconds the storm may last at most")

    max_hours_option(p)
    p.add_argument(
        "--key", default="ecdsa-p256", help="the broker's key (rsa-1024..4096, ecdsa-p256, ecdsa-p384, ed25519)"
    )
    p.add_argument(
        "--key-source",
        default="software",
        help="the broker's key: software (a PEM file) or offload:PROFILE:busy|sleep (the lab token's "
        "key of --key's type, loaded by mosquitto through OpenSSL's pkcs11 engine behind the "
        "secure-element shim with that profile's timings; --key rsa-1024, rsa-2048 or ecdsa-p256)",
    )
    p.add_argument("--client-auth", choices=("on", "off"), default="on", help="mosquitto's require_certificate")
    p.add_argument(
        "--resume-ratio",
        type=share,
        default=0.0,
        help="share of (re)connections offering the newest TLS session (0..1)",
    )
    p.add_argument("--chain-depth", type=count(3), default=1, help="the broker's chain depth 1..3")
    p.add_argument("--tls", choices=("1.2", "1.3"), default="1.3")
    p.add_argument(
        "--se",
        metavar="PROFILE",
        help="the clients' key in a secure element: its signing time "
        "(data/secure_elements.toml, C_SignInit + C_Sign) paused per full handshake",
    )
    t = p.add_argument_group("the user's own broker (instead of mosquitto started here)")
    t.add_argument(
        "--target",
        metavar="HOST:PORT",
        help="load this MQTT/TLS broker (probed first: unreachable, "
        "not TLS or a refused certificate exit 2); its CPU is not read; --key, --client-auth, "
        "--chain-depth and --core are the broker's own then and are refused",
    )
    t.add_argument("--ca", help="with --target: verify the broker's certificate once, in the probe")
    t.add_argument("--servername", help="with --target: the name sent (SNI) and verified")
    t.add_argument("--client-cert", help="with --target: the clients' certificate (PEM)")
    t.add_argument("--client-key", help="with --target: its key (PEM, a file only its owner reads)")
    t.add_argument(
        "--system",
        type=argtypes.path,
        metavar="FILE.toml",
        help="a system file whose [server] table gives the target (target, ca, servername, client_cert, "
        "client_key; paths relative to the file), its listen backlog (backlog) and accept rate "
        "(accept_per_s) for the storm's model; options given here win. Without accept_per_s the target is "
        "probed with bursts of connects before the load (a lower bound)",
    )

    cluster_option(
        p,
        "the clients spread over one secperf-mqttload per worker CPU (with mosquitto started here: the "
        "nodes on this machine; with --target: every node that reaches it), counts added, histograms "
        "merged bin by bin",
    )
    p.add_argument("--core", type=count(4095, lo=0), default=0, help="the core mosquitto is pinned to")
    p.add_argument("--capacity-seconds", type=positive(600), default=2.0, help="each capacity run (before, after)")
    p.add_argument("--seed", type=seed, default=1)
    g = p.add_argument_group("output")
    g.add_argument("--out", type=argtypes.path, default="results")
    g.add_argument("--json", action="store_true", help="the Result on stdout, nothing else there")
    g.add_argument("--no-report", action="store_true")
