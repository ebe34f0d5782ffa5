"""Every option of `secperf connect` acts or is refused: which protocols each option acts on, in one
table, checked before anything starts. An option given for a run none of whose protocols it acts on is
an InputError (exit 2) naming the option and the protocols (it used to be dropped without a word:
`connect edhoc --tls 1.2`, `connect quic --coap-security psk` measured as if it had not been given).
An option acting on some of several protocols is kept (the other protocols' rows ignore it, as their
parameters say)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from ..core.errors import InputError

TLS_OVER_TCP = ("https", "mqtt")
WITH_A_KEY = ("https", "mqtt", "coap", "vpn")        # the probe's handshakes with a token or SE key
EDHOC = ("edhoc",)

# option -> the protocols it acts on (connect's own protocol names; `all` is https,mqtt,coap,vpn)
ACTS_ON: dict[str, tuple[str, ...]] = {
    "--tls": TLS_OVER_TCP,                 # CoAP runs DTLS 1.2; OpenVPN negotiates its own version
    "--auth": ("https",),
    "--nagle": ("https", "mqtt", "vpn"),
    "--key-session": WITH_A_KEY,
    "--coap-security": ("coap",),
    "--coap-server": ("coap",),
    "--connect": ("https", "mqtt", "coap"),
    "--ca": ("https", "mqtt", "coap"),
    "--servername": ("https", "mqtt", "coap"),
    "--client-cert": ("https", "mqtt", "coap"),
    "--client-key": ("https", "mqtt", "coap"),
    "--client": ("https", "mqtt", "coap", "vpn", "quic", "dtls13", "dtls12"),
    "--lost": ("quic", "dtls13", "dtls12"),
    "--cid": ("dtls13",),
    "--edhoc-method": EDHOC, "--edhoc-suite": EDHOC, "--edhoc-cred": EDHOC, "--edhoc-flow": EDHOC,
    "--oscore-requests": EDHOC,
    # the primitives' batching (crypto, mac, signer): a connection is one sample, counted by --n
    "--duration": (), "--min-sample-us": (),
}
ALL = ("https", "mqtt", "coap", "vpn")


def expand(protocols: Iterable[str]) -> list[str]:
    out: list[str] = []
    for p in protocols:
        out += list(ALL) if p == "all" else [p]
    return list(dict.fromkeys(out))


def given(value: object) -> bool:
    return value not in (None, False, [], (), "")


def check(protocols: Iterable[str], values: dict[str, object]) -> None:
    """`values`: option -> what the user gave (None/False/[] when not given)."""
    chosen = expand(protocols)
    for opt, value in values.items():
        acts = ACTS_ON.get(opt)
        if acts is None or not given(value):
            continue
        if not acts:
            raise InputError(f"{opt}: acts on no protocol of connect (a connection is one sample: --n counts them); "
                             f"protocol {','.join(chosen)}: drop {opt}")
        if not set(acts) & set(chosen):
            shown = value if isinstance(value, str) else ",".join(map(str, value)) if isinstance(value, list) else ""
            raise InputError(f"{opt}{' ' + shown if shown else ''}: acts on protocol {', '.join(acts)}; protocol "
                             f"{','.join(chosen)} has nothing it changes: drop {opt}")


def check_connect_args(args: argparse.Namespace) -> None:
    """The check over `secperf connect`'s parsed arguments (the names of ACTS_ON as argparse keeps them)."""
    values = {opt: getattr(args, opt[2:].replace("-", "_"), None) for opt in ACTS_ON}
    values["--min-sample-us"] = None if args.min_sample_us == 1000.0 else args.min_sample_us   # its default
    check(args.protocol, values)
