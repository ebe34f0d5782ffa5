"""Every option acts or is refused: for each command with kinds (connect's protocols, handshake's
experiments, device handshake's --tls, server's --protocol, ...) which kinds each option acts on, in one
table, checked before anything starts (`check_args`, called once by the CLI for every command). An option given for a run none of whose protocols it acts on is
an InputError (exit 2) naming the option and the protocols (it used to be dropped without a word:
`connect edhoc --tls 1.2`, `connect quic --coap-security psk` measured as if it had not been given).
An option acting on some of several protocols is kept (the other protocols' rows ignore it, as their
parameters say)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable

from ..core.errors import InputError
from ..measure.handshake_config import EXPERIMENTS

TLS_OVER_TCP = ("https", "mqtt")
WITH_A_KEY = ("https", "mqtt", "coap", "vpn")  # the probe's handshakes with a token or SE key
EDHOC = ("edhoc",)

# option -> the protocols it acts on (connect's own protocol names; `all` is https,mqtt,coap,vpn)
ACTS_ON: dict[str, tuple[str, ...]] = {
    "--tls": TLS_OVER_TCP,  # CoAP runs DTLS 1.2; OpenVPN negotiates its own version
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
    "--edhoc-method": EDHOC,
    "--edhoc-suite": EDHOC,
    "--edhoc-cred": EDHOC,
    "--edhoc-flow": EDHOC,
    "--oscore-requests": EDHOC,
    # the primitives' batching (crypto, mac, signer): a connection is one sample, counted by --n
    "--duration": (),
    "--min-sample-us": (),
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
            raise InputError(
                f"{opt}: acts on no protocol of connect (a connection is one sample: --n counts them); "
                f"protocol {','.join(chosen)}: drop {opt}"
            )
        if not set(acts) & set(chosen):
            shown = value if isinstance(value, str) else ",".join(map(str, value)) if isinstance(value, list) else ""
            raise InputError(
                f"{opt}{' ' + shown if shown else ''}: acts on protocol {', '.join(acts)}; protocol "
                f"{','.join(chosen)} has nothing it changes: drop {opt}"
            )


def check_connect_args(args: argparse.Namespace) -> None:
    """The check over `secperf connect`'s parsed arguments (the names of ACTS_ON as argparse keeps them)."""
    values = {opt: getattr(args, opt[2:].replace("-", "_"), None) for opt in ACTS_ON}
    values["--min-sample-us"] = None if args.min_sample_us == 1000.0 else args.min_sample_us  # its default
    check(args.protocol, values)


# --- every other command with kinds: command -> (its kinds as the parsed arguments name them, and
# option -> the kinds it acts on; () acts on none of them). An option not listed acts on every kind.
ONE_SAMPLE = "a handshake, connection or signature is one sample, counted by --n"
HANDSHAKE_EXPERIMENTS = EXPERIMENTS  # handshake's kinds: its named experiments
DEVICE_TLS = ("1.3", "1.2", "dtls1.2", "dtls1.3", "quic")  # device handshake --tls, edhoc aside

KIND_OF: dict[str, tuple[str, Callable[[argparse.Namespace], list[str]]]] = {
    "handshake": ("experiment", lambda a: [a.experiment]),
    "signer": ("signer", lambda a: ["signer"]),
    "jwt": ("jwt", lambda a: ["jwt"]),
    "server": ("--protocol", lambda a: [a.protocol]),
    "device handshake": ("--tls", lambda a: list(a.tls or ["1.3"])),
    # a sweep over protocols, or a system file's protocol, is not known here: no check then (an empty list)
    "whatif": ("protocol", lambda a: [] if "protocol" in (a.sweep or "") else _names(a.protocol)),
}
SCOPE: dict[str, dict[str, tuple[str, ...]]] = {
    "connect": ACTS_ON,
    "handshake": {"--duration": (), "--min-sample-us": ()},
    "signer": {"--duration": (), "--min-sample-us": ()},
    "jwt": {"--duration": (), "--min-sample-us": ()},
    "server": {"--tls": ("tls",)},  # DTLS: the server's own version (DTLS 1.2)
    # EDHOC carries neither TLS groups nor suites nor X.509 certificates of the TLS client and server
    "device handshake": {
        "--group": DEVICE_TLS,
        "--suite": DEVICE_TLS,
        "--server-cert": DEVICE_TLS,
        "--client-cert": DEVICE_TLS,
    },
    # CoAP's ACK timer (RFC 7252 ACK_RANDOM_FACTOR) runs where a request over DTLS or CoAP is resent: CoAP,
    # DTLS 1.2's and 1.3's request, EDHOC over CoAP (sim/montecarlo.py); no other protocol has that timer
    "whatif": {"--coap-random-factor": ("coap", "dtls1.2", "dtls1.3", "edhoc")},
}
WHY_NONE = {"--duration": ONE_SAMPLE, "--min-sample-us": ONE_SAMPLE}
# option -> (what else it needs, why): acts only when that is given
NEEDS: dict[tuple[str, str], tuple[Callable[[argparse.Namespace], bool], str]] = {
    ("handshake", "--seed"): (
        lambda a: any(n != "loopback" for n in a.network or []),
        "draws the emulated link's delays and losses: give --network (a link other than loopback)",
    ),
    ("plan", "--verify-n"): (lambda a: bool(a.verify), "counts the rows of --verify: give --verify"),
    ("netem run", "--wait-timeout"): (lambda a: bool(a.server), "waits for the --server CMD: give --server"),
    ("device handshake", "--server-cert"): (
        lambda a: not _psk_only(a),
        "with --mode psk only sends no certificate "
        "(the external PSK authenticates both sides): add --mode full or resumed",
    ),
    ("device handshake", "--client-cert"): (
        lambda a: not _psk_only(a),
        "with --mode psk only sends no certificate "
        "(the external PSK authenticates both sides): add --mode full or resumed",
    ),
    ("device handshake", "--group"): (
        lambda a: not (_psk_only(a) and set(_names(a.tls)) == {"dtls1.2"}),
        "--tls dtls1.2 --mode psk is a plain PSK suite, with no key exchange group: "
        "add --tls 1.3 or dtls1.3 (PSK with an ECDHE share) or --mode full",
    ),
}


def _names(values: list[str] | None, default: str = "") -> list[str]:
    return [w.strip().lower() for v in (values or [default]) for w in v.split(",") if w.strip()]


def _psk_only(a: argparse.Namespace) -> bool:
    return set(_names(a.mode, "full")) == {"psk"}


def command_of(args: argparse.Namespace) -> str:
    sub = {"device": getattr(args, "device_cmd", None), "netem": getattr(args, "netem_command", None)}.get(args.command)
    return f"{args.command} {sub}" if sub else str(args.command)


def given_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, object]:
    """option -> its value, for the options the user gave (a value other than the parser's default)."""
    out: dict[str, object] = {}
    for a in parser._actions:
        if a.option_strings and a.dest != "help":
            v = getattr(args, a.dest, None)
            if v is not None and v != a.default and given(v):
                out[a.option_strings[-1]] = v
    return out


def check_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """The check over any command's parsed arguments: an option given that acts on none of the chosen
    kinds is an InputError naming the option and the kinds (connect: check_connect_args)."""
    command = command_of(args)
    if command == "connect":
        check_connect_args(args)
        return
    table, kind = SCOPE.get(command, {}), KIND_OF.get(command)
    values = given_options(args, parser) if (table or any(c == command for c, _ in NEEDS)) else {}
    for (cmd, opt), (ok, why) in NEEDS.items():
        if cmd == command and opt in values and not ok(args):
            raise InputError(f"{opt}: {command} {why}; drop {opt}")
    if kind is None:
        return
    what, kinds_of = kind
    chosen = kinds_of(args)
    if not chosen:
        return
    for opt, acts in table.items():
        if opt not in values:
            continue
        shown = values[opt]
        text = shown if isinstance(shown, str) else ",".join(map(str, shown)) if isinstance(shown, list) else ""
        if not acts:
            raise InputError(
                f"{opt}: acts on no {what} of {command} ({WHY_NONE.get(opt, 'nothing it changes')}); "
                f"{what} {','.join(chosen)}: drop {opt}"
            )
        if not set(acts) & set(chosen):
            raise InputError(
                f"{opt}{' ' + text if text else ''}: acts on {what} {', '.join(acts)}; {command} "
                f"{what} {','.join(chosen)} has nothing it changes: drop {opt}"
            )
