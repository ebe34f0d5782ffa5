"""Options several subcommands share, kept here so cli.py stays a short parser (this module is no
subcommand of its own: it is not in MODULES). `add_options` puts them on the parsers that take
them; `*_kwargs` turn the parsed values into keyword arguments of secperf.app.commands."""

from __future__ import annotations

from . import argtypes
from .argtypes import count, positive


def add_options(parsers: dict) -> None:
    for name in ("connect", "jwt"):
        parsers[name].add_argument(
            "--key-session", action="append", type=argtypes.name_list, metavar="KINDS",
            help="token key session per connection: warm (default: one PKCS#11 session and login for all), "
                 "cold (a device waking for each connection: open a session, log in, find the key every time); "
                 "comma-separated for both")
    parsers["connect"].add_argument(
        "--coap-server", action="append", type=argtypes.name_list, metavar="NAMES",
        help="CoAP/DTLS servers: libcoap (default), californium (Eclipse Californium: resumes DTLS sessions, "
             "connection IDs; adds its own client's rows: full, resumed, cid-rebind); comma-separated")
    for name in ("connect", "handshake"):
        g = parsers[name].add_argument_group("your own server (instead of one secperf starts)")
        g.add_argument("--connect", metavar="HOST:PORT", help="measure the server at HOST:PORT")
        g.add_argument("--ca", metavar="FILE", help="CA certificate(s) that verify the server (PEM)")
        g.add_argument("--servername", metavar="NAME", help="SNI and the name checked in the server's "
                       "certificate (default: HOST)")
        g.add_argument("--client-cert", metavar="FILE", help="client certificate (PEM) for mutual TLS")
        g.add_argument("--client-key", metavar="FILE|URI", help="its key: a PEM file or a pkcs11: URI")


def wait_options(p) -> None:
    p.add_argument("--wait-port", type=count(65535), metavar="PORT",
                   help="with --server: wait until the server accepts TCP on PORT (of $SECPERF_SERVER_ADDR) before "
                        "starting CMD (default: until the server listens on any TCP port)")
    p.add_argument("--wait-timeout", type=positive(3600), default=10.0, metavar="S",
                   help="how long to wait for the server (default 10 s)")


def _csv(values) -> list[str]:
    return [x.strip() for v in (values or []) for x in v.split(",") if x.strip()]


def session_kwargs(args) -> dict:
    out = {"key_sessions": _csv(getattr(args, "key_session", None)) or ["warm"]}
    if hasattr(args, "coap_server"):
        out["coap_servers"] = _csv(args.coap_server) or ["libcoap"]
    return out


def target_kwargs(args) -> dict:
    """The user's own server: {} when --connect is not given."""
    if not getattr(args, "connect", None):
        for opt in ("ca", "servername", "client_cert", "client_key"):
            if getattr(args, opt, None):
                from ..core.errors import InputError
                raise InputError(f"--{opt.replace('_', '-')} applies to your own server: give --connect HOST:PORT too")
        return {}
    return {"target": {"connect": args.connect, "ca": args.ca, "servername": args.servername,
                       "client_cert": args.client_cert, "client_key": args.client_key}}
