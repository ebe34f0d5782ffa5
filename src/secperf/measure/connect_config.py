"""`secperf connect`'s configurations: what one row measures (ConnectConfig), how (ConnectParams),
which rows a request expands to (configs_for), and the checks that turn a row that cannot be
measured into a named input error (validate)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError

if TYPE_CHECKING:
    from ..inputs.netspec import NetSpec
    from ..inputs.se_profiles import Profile
    from ..lab.services import Service
    from .target import Target

PROTOCOLS = ("https", "mqtt", "coap", "vpn")
KEY_SESSIONS = ("warm", "cold")
KEY_SOURCES_DOC = "software, token, se:PROFILE"
CLIENTS = {
    "https": ("probe", "curl"),
    "mqtt": ("probe", "mosquitto_pub", "paho"),
    "coap": ("probe", "coap-client"),
    "vpn": ("openvpn",),
}
COAP_SERVERS = ("libcoap", "californium")
# Californium's client (Java), added with --coap-server californium: full, resumed, and a request after a
# NAT rebinding on the connection ID
CF_HANDSHAKES = ("full", "resumed", "cid-rebind")
CF_WARMUP = 10  # the JVM server (and client) compile their hot paths in the first connections
# CoAP over DTLS: the lab's demo pre-shared key (printable: libcoap takes it as a string)
COAP_PSK = b"secperf-lab-demo-psk-0123456789ab"
COAP_PSK_IDENTITY = "secperf-device"
OVER_US = 1_000_000.0  # S2 counts runs over 1 s

USABLE = {
    "https": "HTTP response received (status and Content-Length body)",
    "mqtt": "MQTT CONNACK received (return code 0)",
    "coap": "CoAP response received (2.05 in the ACK, or the separate response)",
    "vpn": "tunnel up (Initialization Sequence Completed)",
}


RESUMPTION_REFUSED = {
    "coap": "the server resumed no session: libcoap's coap-server sets no session ID context, so OpenSSL "
    "refuses to resume a DTLS session with a verified client certificate (its log: 'session id "
    "context uninitialized'); every reconnection is a full handshake"
}


# The 1998 RSA card (study S3) had only an RSA-1024 key. OpenSSL 3 at its default security level 2
# refuses a 1024-bit key on both ends (the client will not load it: 'ee key too small'; the server
# will not verify it). Decision: measure the card as it was -- its rows run client and server at
# security level 1 (80-bit security, admits RSA >= 1024), set through OPENSSL_CONF for those rows
# only and recorded in each series' labels (openssl_security_level) -- rather than swap in a key
# the card never had.
WEAK_RSA_KEY = "rsa-1024"
WEAK_RSA_SECLEVEL = 1


class ConnectError(InputError):
    """A configuration that cannot be measured as asked (bad key source, client, protocol)."""


@dataclass(frozen=True)
class ConnectConfig:
    protocol: str  # https | mqtt | coap | vpn
    key_source: str = "software"  # software | token | se:PROFILE
    handshake: str = "full"  # full | resumed
    auth: str = "mtls"  # mtls | jwt_fresh | jwt_cached (https)
    client: str = "probe"
    tls: str = "1.3"  # TLS version for https/mqtt; CoAP runs DTLS 1.2
    security: str = "pki"  # coap: pki | psk
    nodelay: bool = True  # mosquitto's set_tcp_nodelay
    key_type: str = "ecdsa-p256"
    server_cert: str = "ecdsa-p256"
    network: str = "loopback"  # a --network value (lab/netns.Link); every client runs over it
    # warm: the probe opens its token session and logs in once, every connection signs on it;
    # cold: a device waking for each connection: a new probe process per connection, so the PKCS#11
    # session, login and key search are paid each time (and counted in the establishment time)
    key_session: str = "warm"
    coap_server: str = "libcoap"  # coap: libcoap's coap-server, or Californium (resumes; connection IDs)

    @property
    def profile(self) -> str | None:
        if self.key_source == "token":
            return "softhsm"
        return self.key_source[3:] if self.key_source.startswith("se:") else None

    @property
    def series_id(self) -> str:
        extra = "" if self.auth == "mtls" else f"/{self.auth}"
        extra += "" if self.security == "pki" else f"/{self.security}"
        extra += "" if self.nodelay else "/nagle"
        extra += "" if self.tls == "1.3" or self.protocol in ("coap", "vpn") else f"/tls{self.tls}"
        extra += "/cold" if self.key_session == "cold" else ""
        extra += "" if self.coap_server == "libcoap" else f"/{self.coap_server}-server"
        extra += "" if self.network in ("loopback", "none") else f"@{self.network}"
        return f"connect/{self.protocol}/{self.client}/{self.key_source}/{self.handshake}{extra}"

    @property
    def label(self) -> str:
        parts = [self.protocol, self.client, self.key_source, self.handshake]
        if self.auth != "mtls":
            parts.append(self.auth)
        if self.security != "pki":
            parts.append(self.security)
        if not self.nodelay:
            parts.append("nagle")
        if self.tls != "1.3" and self.protocol in ("https", "mqtt"):
            parts.append(f"tls{self.tls}")
        if self.key_session == "cold":
            parts.append("cold key session")
        if self.coap_server != "libcoap":
            parts.append(f"({self.coap_server} server)")
        if self.network not in ("loopback", "none"):
            parts.append(f"@ {self.network}")
        return " ".join(parts)


@dataclass
class ConnectParams:
    n: int = 20
    warmup: int = 2
    timeout_ms: int = 5000
    seed: int = 1
    workdir: Path | None = None
    pki_root: Path | None = None
    # test hooks: called with the started server (e.g. to stop it mid-run)
    on_server: Callable[[Service], object] | None = field(default=None, repr=False)
    server_port: int | None = None  # a fixed port instead of a free one
    # the secure-element profiles the configurations' key sources name, resolved by the command
    # (app/connect.key_profiles: the built-in ones and a --profiles file's); measure never looks one up
    profiles: dict[str, Profile] = field(default_factory=dict)
    links: tuple[NetSpec, ...] = ()  # the --network links the command resolved (by name in the configs)
    client_pair: tuple[Path, Path] | None = None  # test hook: this certificate and key instead of the lab's
    target: Target | None = None  # the user's own server (--connect), nothing started

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n, "warmup": self.warmup, "timeout_ms": self.timeout_ms, "seed": self.seed}
        if self.target is not None:
            out["target"] = self.target.labels()
        return out


def validate(cfg: ConnectConfig, known_profiles: Mapping[str, Profile]) -> None:
    if cfg.protocol not in PROTOCOLS:
        raise ConnectError(f"unknown protocol {cfg.protocol!r}; known: {', '.join(PROTOCOLS)}, all")
    if cfg.key_source not in ("software", "token") and not cfg.key_source.startswith("se:"):
        raise ConnectError(f"unknown key source {cfg.key_source!r}; known: {KEY_SOURCES_DOC}")
    if cfg.key_source.startswith("se:") and cfg.profile not in known_profiles:
        raise ConnectError(
            f"unknown secure-element profile {cfg.profile!r} in --key {cfg.key_source}; "
            f"known: {', '.join(known_profiles)}"
        )
    if cfg.client not in CLIENTS[cfg.protocol] and not (cfg.client == "californium" and cfg.protocol == "coap"):
        raise ConnectError(f"{cfg.protocol}: unknown client {cfg.client!r}; known: {', '.join(CLIENTS[cfg.protocol])}")
    if cfg.client == "paho" and cfg.key_source != "software":
        raise ConnectError(
            "paho-mqtt uses Python's ssl module, which cannot use a PKCS#11 key: use --key software with --client paho"
        )
    if cfg.coap_server not in COAP_SERVERS or (cfg.coap_server != "libcoap" and cfg.protocol != "coap"):
        raise ConnectError(f"--coap-server {cfg.coap_server!r}: known {', '.join(COAP_SERVERS)} (CoAP only)")
    if cfg.client == "californium":
        if cfg.coap_server != "californium" or cfg.handshake not in CF_HANDSHAKES:
            raise ConnectError(
                "the Californium client runs against the Californium server (--coap-server "
                "californium), rows " + ", ".join(CF_HANDSHAKES)
            )
    elif cfg.handshake not in ("full", "resumed"):
        raise ConnectError(
            f"unknown handshake {cfg.handshake!r}; known: full, resumed"
            + (" (cid-rebind: with the Californium client)" if cfg.handshake == "cid-rebind" else "")
        )
    if cfg.auth != "mtls" and cfg.protocol != "https":
        raise ConnectError("JWT authentication is measured for HTTPS only")
    if cfg.key_session not in KEY_SESSIONS:
        raise ConnectError(f"unknown --key-session {cfg.key_session!r}; known: {', '.join(KEY_SESSIONS)}")
    if cfg.key_session == "cold" and (cfg.client != "probe" or cfg.handshake != "full" or cfg.key_source == "software"):
        raise ConnectError(
            "--key-session cold applies to the probe's full handshakes with a token or secure-element "
            "key (other clients start a new process per connection: cold by nature)"
        )


def configs_for(
    protocols: list[str],
    key_sources: list[str],
    handshakes: list[str],
    clients: list[str] | None,
    auths: list[str] | None = None,
    tls: str = "1.3",
    nodelay: bool = True,
    coap_security: list[str] | None = None,
    key_sessions: list[str] | None = None,
    coap_servers: list[str] | None = None,
) -> list[ConnectConfig]:
    """The matrix `secperf connect` runs: protocol × key source × handshake, plus each protocol's
    external clients (software key, full handshake) and, for HTTPS, JWT authentication rows."""
    out: list[ConnectConfig] = []
    for proto in protocols:
        want_clients = clients or list(CLIENTS[proto][:1])
        for client in want_clients:
            if client not in CLIENTS[proto]:
                continue
            for ks in key_sources:
                for hsk in handshakes:
                    if proto == "vpn" and hsk == "resumed":
                        continue
                    if client != "probe" and hsk == "resumed":
                        continue
                    for sec in (coap_security or ["pki"]) if proto == "coap" else ["pki"]:
                        if sec == "psk" and (ks != "software" or hsk != "full"):
                            continue  # a PSK involves no client key: one row is enough
                        for ksess in _sessions_for(key_sessions, client, ks, hsk, sec):
                            for cs in (coap_servers or ["libcoap"]) if proto == "coap" else ["libcoap"]:
                                if cs != "libcoap" and (client != "probe" or sec != "pki"):
                                    continue
                                out.append(
                                    ConnectConfig(
                                        proto,
                                        ks,
                                        hsk,
                                        client=client,
                                        tls=tls,
                                        nodelay=nodelay,
                                        security=sec,
                                        key_session=ksess,
                                        coap_server=cs,
                                    )
                                )
        if proto == "coap" and "californium" in (coap_servers or []):
            # Californium's client: full, resumed, connection ID after a rebinding; software key, and the
            # token key through the JDK's SunPKCS11 provider and the shim
            out += [
                ConnectConfig("coap", ks, h, client="californium", coap_server="californium")
                for ks in key_sources
                for h in CF_HANDSHAKES
            ]
        if proto == "https":
            for auth in auths or []:
                if auth == "mtls":
                    continue
                for ks in key_sources:
                    for ksess in (key_sessions or ["warm"]) if auth == "jwt_fresh" and ks != "software" else ["warm"]:
                        out.append(
                            ConnectConfig("https", ks, "full", auth=auth, client="jwt-client", key_session=ksess)
                        )
    return list(dict.fromkeys(out))


def _sessions_for(key_sessions: list[str] | None, client: str, ks: str, hsk: str, sec: str) -> list[str]:
    """Key sessions a row runs with: cold only where it differs (the probe, a token key, a full
    handshake with a client certificate); elsewhere the row runs once, warm."""
    if client == "probe" and ks != "software" and hsk == "full" and sec == "pki":
        return list(key_sessions or ["warm"])
    return ["warm"]
