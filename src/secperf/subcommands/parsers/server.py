"""`secperf server`: handshake capacity and server CPU per handshake of real servers pinned to a
core, by key, client authentication, resumption ratio, chain depth and key source (software or
offloaded to the token behind the latency shim, busy-poll or sleep). Parsing only."""

from __future__ import annotations

import argparse

from .. import argtypes
from ..argtypes import comma_list, count, nonneg, positive, seed
from .common import cluster_option, max_hours_option

NAME = "server"

HELP = "server CPU per handshake and capacity (nginx, probe, mosquitto), private-key offload busy vs sleep"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--protocol",
        choices=("tls", "dtls"),
        default="tls",
        help="tls (TCP) or dtls (DTLS 1.2 over UDP against libcoap's coap-server, which serves "
        "concurrent DTLS clients; handshake only, cookie exchange always on)",
    )
    p.add_argument(
        "--server",
        type=comma_list(),
        default=None,
        help="nginx, probe, mosquitto with --protocol tls (default nginx); "
        "coap-server with --protocol dtls (the default there) (comma list)",
    )
    p.add_argument(
        "--key",
        type=comma_list(),
        default="rsa-2048",
        help="server key: rsa-2048|3072|4096, rsa-N-nocrt (probe server), ecdsa-p256, ecdsa-p384, ed25519 (comma list)",
    )
    p.add_argument(
        "--key-source",
        type=comma_list(),
        default="software",
        help="software, offload:PROFILE:busy|sleep, e.g. "
        "offload:rsa-card-1998:busy,offload:rsa-card-1998:sleep (nginx, mosquitto: the key on the lab token through OpenSSL's pkcs11 engine; comma list)",
    )
    p.add_argument("--client-auth", type=comma_list(choices=("on", "off")), default="off", help="off, on or off,on")
    p.add_argument(
        "--resume-ratio", type=comma_list(float), default="0", help="share of resumed handshakes 0..1 (comma list)"
    )
    p.add_argument("--chain-depth", type=comma_list(int), default="1", help="1..3 (comma list)")
    p.add_argument("--tls", default="1.3", help="1.3 or 1.2")
    p.add_argument(
        "--concurrency",
        type=comma_list(int),
        default="1,4,16",
        help="concurrent clients per level (comma list; closed loop)",
    )
    p.add_argument(
        "--rates",
        type=comma_list(float),
        help="open loop instead: offered new connections/s per level (comma list, e.g. "
        "100,200,400,800); gives the capacity curve with its knee",
    )

    cluster_option(
        p,
        "one secperf-loadgen per worker CPU (pinned) against the server; counts added, latency "
        "histograms merged bin by bin",
    )
    p.add_argument(
        "--matrix",
        action="store_true",
        help="the whole capacity table in one run: every server key "
        "(RSA-1024..4096 with and without CRT, ECDSA P-256/P-384, Ed25519) in software, the token's keys "
        "offloaded busy-poll and sleep, client auth, resumption 0/50/100 %%, chain depth 1-3, mosquitto "
        "(--server, --key, --key-source, --client-auth, --resume-ratio, --chain-depth are ignored)",
    )
    p.add_argument("--duration", type=positive(3600), default=3.0, help="seconds counted per level (default 3)")
    p.add_argument("--warmup", type=nonneg(600), default=0.5, help="seconds not counted before each level")

    max_hours_option(p)
    p.add_argument(
        "--core",
        type=count(4095, lo=0),
        default=None,
        help="the core the server is pinned to (default 0); "
        "with --target, a core the generators keep off (default: none, they use every core)",
    )
    p.add_argument(
        "--procs",
        type=count(64),
        default=None,
        help="load generator processes (default: one per core "
        "other than the server's; the generator runs on those cores)",
    )
    p.add_argument("--seed", type=seed, default=1)
    target_options(p)
    g = p.add_argument_group("output")
    g.add_argument("--out", type=argtypes.path, default="results")
    g.add_argument("--json", action="store_true", help="the Result on stdout, nothing else there")
    g.add_argument("--csv", type=argtypes.path)
    g.add_argument("--no-report", action="store_true")


def target_options(p: argparse.ArgumentParser, replay: bool = False) -> None:
    """--target HOST:PORT and its companions (`server`, and `fleet --replay`)."""
    g = p.add_argument_group("your own server (--target: the generators load it instead of one secperf starts)")
    g.add_argument(
        "--target",
        metavar="HOST:PORT",
        help="load the server at HOST:PORT (TLS, or DTLS with --protocol "
        "dtls); probed first (a bounded connect and one handshake): unreachable, not TLS or refusing the "
        "client certificate is exit 2; the server's CPU is not measured",
    )
    if not replay:
        g.add_argument(
            "--target-app",
            choices=("http", "none", "mqtt"),
            default=None,
            help="after each handshake: http (GET -> response, default for TLS), none (handshake only; "
            "the DTLS default), mqtt (CONNECT -> CONNACK)",
        )
    g.add_argument(
        "--ca",
        metavar="FILE",
        help="CA certificate(s) that verify the target in the probe (PEM); the load "
        "itself does not verify, as openssl s_time",
    )
    g.add_argument("--servername", metavar="NAME", help="SNI and the name checked (default: HOST)")
    g.add_argument("--client-cert", metavar="FILE", help="client certificate (PEM) the generators show")
    g.add_argument("--client-key", metavar="FILE", help="its key: a PEM file only its owner reads (0600)")
    g.add_argument("--groups", metavar="LIST", help="key-exchange groups offered, OpenSSL names (e.g. x25519:P-256)")
    g.add_argument("--ciphersuites", metavar="LIST", help="TLS 1.3 suites offered (e.g. TLS_AES_128_GCM_SHA256)")
    g.add_argument("--ciphers", metavar="LIST", help="TLS 1.2 cipher list offered (e.g. ECDHE-ECDSA-AES128-GCM-SHA256)")
    g.add_argument(
        "--system",
        type=argtypes.path,
        metavar="FILE.toml",
        help="a system file whose [server] table "
        "gives the target (target, ca, servername, client_cert, client_key; paths relative to the file); "
        "options given here win",
    )
