"""`secperf server`: handshake capacity and server CPU per handshake of real servers pinned to a
core, by key, client authentication, resumption ratio, chain depth and key source (software or
offloaded to the token behind the latency shim, busy-poll or sleep). Parsing only."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from . import argtypes
from .argtypes import comma_list, count, nonneg, positive, seed

if TYPE_CHECKING:
    from ..core.result_schema import Result
    from ..measure.server_target import LoadTarget

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
    from .shared import cluster_option

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
    from .measuring import max_hours_option

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


TARGET_COMPANIONS = ("target_app", "ca", "servername", "client_cert", "client_key", "groups", "ciphersuites", "ciphers")


def _from_system(args: argparse.Namespace) -> None:
    """--system FILE.toml: its [server] table under the command line's own --target options."""
    from pathlib import Path

    from ..core.errors import InputError
    from ..inputs.system import load_system

    sysf = load_system(args.system, "--system")
    srv = sysf.s.server
    if srv is None:
        raise InputError(
            f"--system {args.system}: has no [server] table; add one with target = \"HOST:PORT\" "
            f"(and ca, servername, client_cert, client_key), or give --target"
        )
    base = Path(args.system).resolve().parent
    taken = args.system_taken = {}  # the options whose value the file gave: an error names the file's key
    if not args.target:
        args.target = srv.target
        taken["--target"] = "[server].target"
    for k in ("ca", "client_cert", "client_key"):
        v = getattr(srv, k)
        if v is not None and not getattr(args, k, None):
            setattr(args, k, v if v.startswith("pkcs11:") else str(base / v))
            taken[f"--{k.replace('_', '-')}"] = f"[server].{k}"
    if srv.backlog is not None:  # the target's listen backlog: `fleet --replay`'s model takes it
        args.target_backlog = srv.backlog
    if srv.servername and not args.servername:
        args.servername = srv.servername
        taken["--servername"] = "[server].servername"


def load_target(args: argparse.Namespace, protocol: str = "tls") -> LoadTarget | None:
    """The parsed --target (None without it); a companion option without --target is exit 2."""
    from ..core.errors import InputError

    if getattr(args, "system", None):
        _from_system(args)
    if not getattr(args, "target", None):
        for opt in TARGET_COMPANIONS:
            if getattr(args, opt, None):
                raise InputError(f"--{opt.replace('_', '-')} applies to --target HOST:PORT: give --target too")
        return None
    from ..measure.server_target import parse_load_target

    try:
        return parse_load_target(
            args.target,
            protocol,
            getattr(args, "target_app", None),
            args.ca,
            args.servername,
            args.client_cert,
            args.client_key,
            args.groups,
            args.ciphersuites,
            args.ciphers,
        )
    except InputError as exc:  # about a value the --system file gave: the file's key path, not an option
        from .system_args import in_file_words

        raise in_file_words(exc, args.system, getattr(args, "system_taken", None) or {}) from None


def run(args: argparse.Namespace) -> Result:
    from ..app import server as app
    from ..core.errors import InputError
    from .measuring import output

    auth = [a == "on" for a in args.client_auth]
    if args.procs is not None and not 1 <= args.procs <= 64:
        raise InputError(f"--procs {args.procs}: give 1..64")
    target = load_target(args, args.protocol)
    if target is not None and args.server:
        raise InputError(f"--server {','.join(args.server)} with --target: the target is the server; drop --server")
    servers = args.server or (["coap-server"] if args.protocol == "dtls" and target is None else ["nginx"])
    tls = "1.2" if args.protocol == "dtls" and args.tls == "1.3" else args.tls  # DTLS is 1.2 here
    o = app.ServerOptions(
        servers=servers,
        protocol=args.protocol,
        keys=args.key,
        sources=args.key_source,
        client_auth=auth,
        resume_ratios=args.resume_ratio,
        depths=args.chain_depth,
        tls=tls,
        concurrency=args.concurrency,
        duration_s=args.duration,
        rates=args.rates or [],
        matrix=args.matrix,
        warmup_s=args.warmup,
        core=args.core,
        procs=args.procs,
        seed=args.seed,
        target=target,
        max_hours=args.max_hours,
    )
    from ..app.cluster import require

    o.cluster = require(args.cluster)  # Ray missing or a malformed address: exit 2 before anything runs
    return app.run(o, output(args))
