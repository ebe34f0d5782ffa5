"""`secperf server`: handshake capacity and server CPU per handshake of real servers pinned to a
core, by key, client authentication, resumption ratio, chain depth and key source (software or
offloaded to the token behind the latency shim, busy-poll or sleep). Parsing only."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..app import server as app
from ..app.cluster import require
from ..core.errors import InputError
from ..inputs.system import load_system
from ..measure.server_target import parse_load_target
from .measuring import output
from .system_args import in_file_words

if TYPE_CHECKING:
    from ..core.result_schema import Result
    from ..measure.server_target import LoadTarget


TARGET_COMPANIONS = ("target_app", "ca", "servername", "client_cert", "client_key", "groups", "ciphersuites", "ciphers")


def _from_system(args: argparse.Namespace) -> None:
    """--system FILE.toml: its [server] table under the command line's own --target options."""

    sysf = load_system(args.system)  # its messages name the file: "--system FILE: ..."
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
    if srv.accept_per_s is not None:  # the target's accept rate: the storm models take it instead of a probe
        args.target_accept_per_s = srv.accept_per_s
    if srv.servername and not args.servername:
        args.servername = srv.servername
        taken["--servername"] = "[server].servername"


def load_target(args: argparse.Namespace, protocol: str = "tls") -> LoadTarget | None:
    """The parsed --target (None without it); a companion option without --target is exit 2."""

    if getattr(args, "system", None):
        _from_system(args)
    if not getattr(args, "target", None):
        for opt in TARGET_COMPANIONS:
            if getattr(args, opt, None):
                raise InputError(f"--{opt.replace('_', '-')} applies to --target HOST:PORT: give --target too")
        return None

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
        raise in_file_words(exc, args.system, getattr(args, "system_taken", None) or {}) from None


def run(args: argparse.Namespace) -> Result:
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

    o.cluster = require(args.cluster)  # Ray missing or a malformed address: exit 2 before anything runs
    return app.run(o, output(args))
