"""The `connect` matrix: protocols × key sources × handshakes × clients × authentication × links,
validated as a whole so a bad name is an input error before any server starts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ..core.errors import InputError
from ..inputs.se_profiles import load_profiles, profiles_with
from ..measure import connect as C
from .reporter import reporter

if TYPE_CHECKING:
    from pathlib import Path

    from ..inputs.se_profiles import Profile
    from ..measure.connect import ConnectConfig

HANDSHAKES = ("full", "resumed")
AUTHS = ("mtls", "jwt_fresh", "jwt_cached")
COAP_SECURITY = ("pki", "psk")


def _cold_keys(keys: list[str], sessions: list[str]) -> tuple[list[str], list[str]]:
    """`--key se:PROFILE:cold`, the key vocabulary of whatif and plan (inputs/vocabulary.py), as
    connect's matrix writes it: key se:PROFILE with key session cold. When every secure-element or
    token key is written :cold, the default warm session is replaced by cold; otherwise both run."""
    cold = [k for k in keys if k.startswith("se:") and k.count(":") == 2 and k.endswith(":cold")]
    if not cold:
        return keys, sessions
    out = list(dict.fromkeys(k.removesuffix(":cold") if k in cold else k for k in keys))
    only_cold = all(k in cold for k in keys if k != "software")
    if only_cold and sessions == ["warm"]:
        return out, ["cold"]
    return out, list(dict.fromkeys([*sessions, "cold"]))


def connect_configs(
    protocols: list[str],
    keys: Iterable[str],
    handshakes: list[str],
    clients: list[str] | None,
    auths: list[str],
    tls: str = "1.3",
    nagle: bool = False,
    coap_security: list[str] | None = None,
    networks: Iterable[str] = ("loopback",),
    key_sessions: Iterable[str] = ("warm",),
    coap_servers: Sequence[str] = ("libcoap",),
    profiles: Mapping[str, Profile] | None = None,
) -> list[ConnectConfig]:
    """The `connect` matrix from command-line style lists; bad names raise InputError. `profiles`: the
    secure-element profiles the command read (read here when not given)."""

    if "all" in protocols:  # all,https is all: every protocol once (all,https made a KeyError)
        protocols = list(dict.fromkeys([*C.PROTOCOLS, *(p for p in protocols if p != "all")]))
    keys, key_sessions = _cold_keys(list(keys), list(key_sessions))
    _known("protocol", protocols, [*C.PROTOCOLS, "all"])
    _known("--handshake", handshakes, HANDSHAKES)
    _known("--auth", auths, AUTHS)
    _known("--coap-security", coap_security or [], COAP_SECURITY)
    _known("--key-session", key_sessions, C.KEY_SESSIONS)
    _known("--coap-server", coap_servers, C.COAP_SERVERS)
    if "coap" not in protocols and any(c != "libcoap" for c in coap_servers):
        raise InputError(
            f"--coap-server {','.join(coap_servers)}: CoAP servers, but protocol "
            f"{','.join(protocols)} has no CoAP; add coap to the protocols or drop --coap-server"
        )
    all_clients = sorted({c for v in C.CLIENTS.values() for c in v})
    explicit = clients != ["all"]
    if clients == ["all"]:
        clients = all_clients
    _known("--client", clients or [], [*all_clients, "all"])
    if profiles is None:
        profiles = load_profiles()
    known = dict(profiles)
    base = C.configs_for(
        protocols,
        keys,
        handshakes,
        clients or None,
        auths,
        tls=tls,
        nodelay=not nagle,
        coap_security=coap_security,
        key_sessions=list(key_sessions),
        coap_servers=list(coap_servers),
    )
    # an option that cannot act on anything chosen is refused, naming both (it used to be dropped
    # silently: `--key software --key-session cold` measured warm rows)
    if "cold" in key_sessions and not any(c.key_session == "cold" for c in base):
        raise InputError(
            f"--key-session cold: acts on the probe's full handshakes with a token or secure-element key; "
            f"protocol {','.join(protocols)} with --key {','.join(keys)} and --handshake "
            f"{','.join(handshakes)} has none: add --key token or "
            f"--key se:PROFILE, or drop --key-session cold"
        )
    if nagle and not any(p in ("mqtt", "https", "vpn") for p in protocols):
        raise InputError(
            f"--nagle: acts on TCP connections (mqtt, https, vpn); protocol {','.join(protocols)} runs over "
            f"UDP: drop --nagle"
        )
    if coap_security and "coap" not in protocols and any(x != "pki" for x in coap_security):  # pki: the default
        raise InputError(
            f"--coap-security {','.join(coap_security)}: protocol {','.join(protocols)} has no CoAP; add coap "
            f"to the protocols or drop --coap-security"
        )
    for client in (clients or []) if explicit else []:
        served = [p for p in protocols if client in C.CLIENTS.get(p, ())]
        if served and not any(c.client == client for c in base):
            raise InputError(
                f"--client {client}: nothing to measure with --handshake {','.join(handshakes)}: "
                f"{client} runs full handshakes only (a new process per connection has no "
                "session to resume); add --handshake full"
            )
    configs = [replace(c, network=n) for n in networks for c in base]
    if not configs:
        raise InputError(
            f"nothing to measure: --handshake {','.join(handshakes)} with --client "
            f"{','.join(clients or ['probe'])} serves none of protocol {','.join(protocols)} "
            "(a resumed row needs a client that resumes; vpn has full handshakes only)"
        )
    kept: list[ConnectConfig] = []
    skipped: list[str] = []
    for cfg in configs:
        if cfg.client == "jwt-client":
            if cfg.key_source.startswith("se:") and cfg.profile not in known:
                raise InputError(f"unknown secure-element profile {cfg.profile!r}; known: {', '.join(known)}")
            kept.append(cfg)
            continue
        try:
            C.validate(cfg, known)
        except C.ConnectError as exc:
            if clients and len(clients) > 1 and cfg.client != "probe":
                skipped.append(f"{cfg.label}: {exc}")
                continue  # a combination this client cannot do, in a multi-client sweep: skip it
            raise InputError(str(exc)) from None
        kept.append(cfg)
    if skipped:
        reporter().note(f"secperf connect: note: {len(skipped)} combination(s) skipped, e.g. {skipped[0]}")
    unserved = [p for p in protocols if clients and not set(clients) & set(C.CLIENTS.get(p, ()))]
    if unserved:
        raise InputError(
            f"--client {','.join(clients or [])}: serves none of {', '.join(unserved)}; clients per protocol: "
            + "; ".join(f"{p}: {', '.join(C.CLIENTS[p])}" for p in unserved if p in C.CLIENTS)
        )
    return kept


def _known(option: str, values: Iterable[str], allowed: Sequence[str]) -> None:
    for v in values:
        if v not in allowed:
            raise InputError(f"unknown {option} {v!r}; known: {', '.join(allowed)}")


def key_profiles(
    configs: Iterable[ConnectConfig], path: str | Path | None = None, known: Mapping[str, Profile] | None = None
) -> dict[str, Profile]:
    """The secure-element profiles the configurations' key sources name (the lab token's own
    included), looked up once here for the run: measure takes them (ConnectParams.profiles).
    `path`: a TOML file of profiles besides the built-in ones; `known`: the profiles the command
    already read for connect_configs (not read again)."""
    names = sorted({c.profile for c in configs if c.profile})
    if not names:
        return {}
    if known is None:
        known = profiles_with(path)
    for n in names:
        if n not in known:
            raise InputError(f"--key: unknown secure-element profile {n!r}; known: {', '.join(known)}")
    return {n: known[n] for n in names}
