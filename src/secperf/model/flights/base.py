"""Protocol flight models: which messages go in which flight, their bytes, and the computation each
side does before sending, for every protocol the what-if knows.

A connection is a list of *exchanges*: a client flight and the server's answer (or none). The
client sends its flight after it received the previous answer and did its work; the server answers
after receiving and doing its own. Retransmission is owned per exchange by its transport: ``tcp-syn``
(the kernel's SYN timer), ``tcp`` (each flight recovered by its sender), ``dtls`` (RFC 6347: the
client's timer covers its flight and the answer), ``coap`` (RFC 7252 confirmable message) and
``ovpn`` (OpenVPN's reliability layer). Sizes come from data/whatif_sizes.toml; the TLS record and
message framing constants below reproduce the probe's per-flight byte counts on this host (TLS 1.3
full, x25519, RSA-2048: 221 / 1396 / 64 bytes; TLS 1.2: 146 / 1255 / 93 / 242).
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from ...core.errors import InputError, SecperfError
from ...inputs import vocabulary as V

PROTOCOLS = {
    "tls1.3": "TLS 1.3 handshake then an HTTP/1.1 GET (40 B) -> 846 B, as `secperf handshake`",
    "tls1.2": "TLS 1.2 handshake then the same GET",
    "dtls1.2": "DTLS 1.2 handshake then the same request/response",
    "https": "HTTPS: TCP, TLS 1.3 with a client certificate (nginx), GET -> response",
    "mqtt": "MQTT 3.1.1 over TLS 1.3 with a client certificate: CONNECT -> CONNACK",
    "coap": "CoAP confirmable GET over DTLS 1.2 with a client certificate -> piggybacked ACK",
    "openvpn": "OpenVPN over UDP: reset exchange, TLS 1.3 control channel with key exchange, PUSH_REQUEST -> PUSH_REPLY",
    "jwt": "HTTPS request authenticated by an ES256 JWT (TLS 1.3 without a client certificate)",
    "edhoc": "EDHOC over CoAP (RFC 9528 A.2), then an OSCORE-protected CoAP GET -> response (model/flights/edhoc.py)",
    "quic": "QUIC with TLS 1.3 (aioquic), then a request (40 B) -> response (846 B) on a stream (model/flights/quic.py)",
    "dtls1.3": "DTLS 1.3 as wolfSSL 5.9 runs it, mutual authentication, cookie, then request -> response "
    "(model/flights/dtls13.py)",
}
HANDSHAKES = V.HANDSHAKES  # per protocol, the handshakes modelled (inputs/vocabulary.py)
# the smallest MTU a protocol's model accepts, and why
MTU_MIN = {
    "tcp": (
        576,
        "RFC 1122 3.3.3: every IPv4 host must accept 576-byte datagrams; the model's MSS assumes at least that",
    ),
    "udp": (256, "OpenSSL's smallest DTLS path MTU (256 bytes; smaller handshake fragments are refused)"),
    "quic": (
        1228,
        "RFC 9000 14: QUIC needs a path that carries 1200-byte UDP payloads (1228 with IPv4 and UDP headers)",
    ),
}

TCP_HDR, UDP_HDR = 52, 28  # IPv4 + TCP with timestamps (Linux default) / IPv4 + UDP
SYN_BYTES, ACK_BYTES = 60, 52  # SYN / SYN-ACK with options; a bare ACK
TLS_REC, TLS13_ENC = 5, 22  # record header; TLS 1.3 AEAD expansion (header 5 + tag 16 + type 1)
TLS12_ENC = 5 + 8 + 16  # TLS 1.2 AES-GCM record: header, explicit nonce, tag
DTLS_REC, DTLS_MSG = 13, 12  # DTLS record header; handshake message header
DTLS_ENC = 13 + 8 + 16
CCS13 = 6  # middlebox-compatibility ChangeCipherSpec record
CH13_BASE = 178  # TLS 1.3 ClientHello without the key_share entry (216 - 38 measured)
SH13_BASE = 86  # ServerHello without the key_share entry (122 - 36 measured)
CH12 = 141  # TLS 1.2 ClientHello (measured)
NST12 = 186  # TLS 1.2 NewSessionTicket (measured)
NST13 = 250  # one TLS 1.3 NewSessionTicket record (estimate: ticket ~ 200 B)
CERT_REQUEST = 109  # TLS 1.3 CertificateRequest as nginx sends it (measured)
PSK_EXT_TICKET = 230  # pre_shared_key extension carrying a ticket + binder (estimate)
# An OpenSSL server's ticket is the encrypted session, and with mutual TLS the session holds the
# client's certificate: the ticket (its NewSessionTicket, and the resumed ClientHello carrying it)
# grows by that certificate's DER plus its length prefix. Seen in the probe's transcripts: a resumed
# MQTT/HTTPS ClientHello with a P-256 client certificate is about 1,000 bytes, not 500.
TICKET_PEER_CERT_PREFIX = 4


def ticket_growth(s: Scenario) -> int:
    """Bytes a session ticket carries for the client's certificate (0 without mutual TLS)."""
    return cert_der(s.client_key_type) + TICKET_PEER_CERT_PREFIX if s.mtls else 0


PSK_EXT_EXTERNAL = 60  # ... carrying a short external identity + binder (estimate)
HTTP_REQ, HTTP_RESP = 40, 846
MQTT_CONNECT, MQTT_CONNACK = 30, 4
COAP_REQ, COAP_RESP = 20, 40
JWT_REQ = 420  # GET with an Authorization: Bearer ES256 JWT (estimate)


class ModelError(InputError):
    pass


# --- what "no security" means per protocol -------------------------------------------------------
# The baseline of "what security costs" (issue 29): the same application exchange over the same
# transport with no security layer at all — no handshake, no record protection, no certificate,
# key or token, zero cryptographic operations; the application messages keep their plaintext sizes
# (the constants above without TLS/DTLS record overhead). Per protocol (transport, what is sent):
PLAIN = {
    "tls1.3": ("TCP", "TCP connect, then the same HTTP/1.1 GET (40 B) -> response (846 B) in clear"),
    "tls1.2": ("TCP", "TCP connect, then the same HTTP/1.1 GET (40 B) -> response (846 B) in clear"),
    "https": ("TCP", "plain HTTP: TCP connect, then GET (40 B) -> response (846 B), one write (no session tickets)"),
    "jwt": (
        "TCP",
        "plain HTTP without a token: TCP connect, then GET (40 B) -> response (846 B); the JWT "
        "(its signature, its 380 bytes in the request, its verification) is security",
    ),
    "mqtt": ("TCP", "MQTT 3.1.1 over plain TCP (port 1883): TCP connect, CONNECT (30 B) -> CONNACK (4 B)"),
    "dtls1.2": (
        "UDP",
        "the same request (40 B) -> response (846 B) as one plain UDP exchange on the same "
        "confirmable retransmission timer",
    ),
    "coap": ("UDP", "CoAP without DTLS (coap://, port 5683): CON GET (20 B) -> piggybacked ACK (40 B)"),
    "edhoc": ("UDP", "CoAP without EDHOC or OSCORE: CON GET (20 B) -> piggybacked ACK (40 B)"),
    "quic": (
        "UDP",
        "the same request (40 B) -> response (846 B) as one plain UDP exchange on the same "
        "confirmable retransmission timer (no QUIC: its transport is inseparable from TLS 1.3)",
    ),
    "dtls1.3": (
        "UDP",
        "the same request (40 B) -> response (846 B) as one plain UDP exchange on the same "
        "confirmable retransmission timer",
    ),
    "openvpn": (
        "UDP",
        "a tunnel without security (no TLS control channel, no reset exchange, no keys): the "
        "configuration request/response OpenVPN carries (PUSH_REQUEST 100 B -> PUSH_REPLY "
        "300 B) as one plain UDP exchange on OpenVPN's retransmission timer, then the same "
        "tun set-up (not a security cost)",
    ),
}
SECURITY = ("on", "none")


def no_security(s: Scenario) -> Scenario:
    """The scenario's baseline without security (PLAIN): one per protocol, so the inputs that only
    shape the security (handshake, group, certificate, key, key share) are set to their defaults —
    every secured row of a protocol shares one baseline row."""
    return Scenario(
        protocol=s.protocol,
        handshake=HANDSHAKES[s.protocol][0] if s.protocol in HANDSHAKES else s.handshake,
        security="none",
    )


def software_key(s: Scenario) -> Scenario:
    """The same secured scenario with the client key in software (the reference for a secure element)."""
    return replace(s, key="software")


@lru_cache(maxsize=1)
def sizes() -> dict[str, Any]:
    return tomllib.loads(resources.files("secperf.data").joinpath("whatif_sizes.toml").read_text())


def groups() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = sizes()["groups"]
    return out


def key_types() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = sizes()["keys"]
    return out


@dataclass(frozen=True)
class Flight:
    sender: str  # client | server
    msgs: tuple[tuple[str, int], ...]  # (message, bytes on the wire without IP/TCP/UDP headers)
    ops: tuple[str, ...] = ()  # cost-table operations the sender runs before sending it
    se_sign: bool = False  # the client's signature comes from its secure element
    handshake_done: bool = False  # the client's handshake completes when this flight is built
    writes: int = 1  # separate writes (TCP: at least that many segments)

    @property
    def payload(self) -> int:
        return sum(b for _, b in self.msgs)

    def names(self) -> str:
        return " + ".join(n for n, _ in self.msgs)


@dataclass(frozen=True)
class Exchange:
    out: Flight
    back: Flight | None
    transport: str  # tcp-syn | tcp | dtls | coap | ovpn

    @property
    def answer(self) -> Flight:
        """The answering flight of an exchange that has one (a TLS 1.3 exchange built with its answer);
        asking it of one without is the model's own slip."""
        if self.back is None:
            raise AssertionError(f"the exchange of {self.out.names()} has no answer")
        return self.back


@dataclass(frozen=True)
class Scenario:
    protocol: str = "tls1.3"
    handshake: str = "full"
    group: str = "x25519"
    cert: str | None = None  # server certificate key type (default per protocol)
    depth: int = 1  # certificates sent by the server (leaf + intermediates)
    key: str = "software"  # client key: software | se:PROFILE | se:PROFILE:cold
    client_key_type: str = "ecdsa-p256"
    mtls: bool | None = None  # default: True for https/mqtt/coap/openvpn, False otherwise
    precomputed_keyshare: bool = False  # S1: key share generated ahead of time (off the clock)
    security: str = "on"  # on | none: the same application messages without security

    @property
    def cert_type(self) -> str:
        """The server certificate's key type: the one given, else the protocol's default."""
        return self.cert or ("rsa-2048" if self.protocol in ("tls1.3", "tls1.2", "dtls1.2") else "ecdsa-p256")

    def resolved(self) -> Scenario:
        mtls = self.mtls if self.mtls is not None else self.protocol in ("https", "mqtt", "coap", "openvpn", "dtls1.3")
        return replace(self, cert=self.cert_type, mtls=mtls)

    @property
    def se_profile(self) -> str | None:
        return self.key.split(":")[1] if self.key.startswith("se:") else None

    @property
    def se_cold(self) -> bool:
        return self.key.startswith("se:") and self.key.endswith(":cold")

    def label(self) -> str:
        s = self.resolved()
        if s.security == "none":
            return f"{s.protocol} without security (plain {PLAIN[s.protocol][0]})"
        parts = [
            s.protocol,
            s.handshake,
            s.group,
            f"cert {s.cert}" + (f"x{s.depth}" if s.depth > 1 else ""),
            f"key {s.key}",
        ]
        if s.precomputed_keyshare:
            parts.append("key share precomputed")
        return " ".join(parts)


@dataclass(frozen=True)
class FlightModel:
    scenario: Scenario
    transport: str  # tcp | udp
    exchanges: tuple[Exchange, ...]
    final_ops: tuple[str, ...] = ()  # client work after the last answer
    start_mark: tuple[str, int] = ("out_start", 0)  # where the handshake timer starts
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def round_trips(self) -> int:
        """Round trips until the connection is usable (exchanges with an answer)."""
        return sum(1 for e in self.exchanges if e.back is not None)

    def round_trips_to_handshake_done(self) -> int:
        n = 0
        for e in self.exchanges:
            if e.out.handshake_done:
                return n
            if e.back is not None:
                n += 1
        return n

    def bytes(self, sender: str) -> int:
        return sum(f.payload for e in self.exchanges for f in (e.out, e.back) if f is not None and f.sender == sender)

    def table(self) -> list[dict[str, Any]]:
        rows = []
        for i, e in enumerate(self.exchanges):
            for f in (e.out, e.back):
                if f is not None:
                    rows.append(
                        {
                            "exchange": i,
                            "transport": e.transport,
                            "sender": f.sender,
                            "messages": f.names(),
                            "bytes": f.payload,
                            "ops": list(f.ops) + (["secure element: sign"] if f.se_sign else []),
                            "handshake_done": f.handshake_done,
                        }
                    )
        return rows


# --- the pieces --------------------------------------------------------------------------------
def _group(name: str) -> dict[str, Any]:
    g = groups()
    if name not in g:
        raise ModelError(f"--group: unknown group {name!r}; known: {', '.join(g)}")
    return g[name]


def _key(name: str, opt: str = "--cert") -> dict[str, Any]:
    k = key_types()
    if name not in k:
        raise ModelError(f"{opt}: unknown key type {name!r}; known: {', '.join(k)}")
    return k[name]


def resolved_all(scenarios: Iterable[Scenario]) -> list[Scenario]:
    """Each scenario resolved (Scenario.resolved), in one call: a caller with many asks once."""
    return [s.resolved() for s in scenarios]


def checked(s: Scenario) -> Scenario:
    """The scenario resolved (Scenario.resolved), its group and both key types checked against the
    size tables (ModelError naming the option): what build() needs before a protocol's model runs."""
    s = s.resolved()
    _group(s.group)
    _key(s.cert_type)
    _key(s.client_key_type, "--key")
    return s


def model(s: Scenario, families: Mapping[str, Callable[[Scenario], FlightModel]]) -> FlightModel:
    """The flight model of a scenario (flights.build): the options checked (ModelError naming the
    option), the scenario resolved and checked, then its family's module (`families`, by protocol)
    builds the exchanges."""
    if s.protocol not in PROTOCOLS:
        raise ModelError(f"PROTOCOL: unknown protocol {s.protocol!r}; known: {', '.join(PROTOCOLS)}")
    if s.security not in SECURITY:
        raise ModelError(f"security: {s.security!r} must be one of {', '.join(SECURITY)}")
    if s.security == "none":
        return _plain(s.resolved())
    if s.handshake not in HANDSHAKES[s.protocol]:
        raise ModelError(
            f"--handshake: {s.protocol} has no {s.handshake!r} handshake; known: {', '.join(HANDSHAKES[s.protocol])}"
        )
    if s.depth < 1 or s.depth > 5:
        raise ModelError(f"--cert: chain depth {s.depth} must be 1..5")
    if not (s.key == "software" or s.key.startswith("se:")):
        raise ModelError(f"--key: {s.key!r} must be software or se:PROFILE[:cold]")
    s = checked(s)  # resolved, its group and key types checked
    return families[s.protocol](s)


@dataclass(frozen=True)
class Context:
    """What the model's vocabulary says about a set of scenarios, asked in one call (context()): the
    size tables' groups and key types (names checked, kinds read), each scenario resolved
    (Scenario.resolved, in the order given) and the flight model of each resolved scenario the
    model builds (one that it refuses is absent: build() says why). Plain data: a caller reads it
    without entering the model again."""

    groups: Mapping[str, Mapping[str, Any]]
    key_types: Mapping[str, Mapping[str, Any]]
    given: tuple[Scenario, ...] = ()
    resolved: tuple[Scenario, ...] = ()
    models: Mapping[Scenario, FlightModel] = field(default_factory=dict)


def context(
    scenarios: Iterable[Scenario],
    group_names: Iterable[str] = (),
    cert_types: Iterable[str] = (),
    families: Mapping[str, Callable[[Scenario], FlightModel]] | None = None,
) -> Context:
    """The Context of `scenarios`. group_names, cert_types: names a user gave (--group, --server-cert),
    checked first (ModelError naming the option and the known names). families: the protocol
    modules' builders (flights.context passes them): the resolved scenarios' models built here."""
    g, k = groups(), key_types()
    for name in group_names:
        if name not in g:
            raise ModelError(f"--group: unknown group {name!r}; known: {', '.join(g)}")
    for t in cert_types:
        if t not in k:
            raise ModelError(f"--server-cert: unknown key type {t!r}; known: {', '.join(k)}")
    given = tuple(scenarios)
    resolved = tuple(sc.resolved() for sc in given)
    models: dict[Scenario, FlightModel] = {}
    for r in dict.fromkeys(resolved):
        if families is None:
            break
        try:
            models[r] = model(r, families)
        except SecperfError:  # refused: absent here, build() says why where a caller builds it
            continue
    return Context(g, k, given, resolved, models)


def cert_der(key_type: str) -> int:
    k = _key(key_type)
    return int(sizes()["certificate"]["base"]) + int(k["spki"]) + int(k["sig"])


def _kx_client_ops(group: str, precomputed: bool) -> tuple[str, ...]:
    g = _group(group)
    if precomputed:
        return ()
    if g["kind"] == "ecdhe":
        return (f"keygen:{g['alg']}",)
    if g["kind"] == "kem":
        return (f"keygen:{g['alg']}",)
    return ("keygen:x25519", "keygen:ml-kem-768")


def _kx_server_ops(group: str) -> tuple[str, ...]:
    g = _group(group)
    if g["kind"] == "ecdhe":
        return (f"keygen:{g['alg']}", f"derive:{g['alg']}")
    if g["kind"] == "kem":
        return (f"encaps:{g['alg']}",)
    return ("keygen:x25519", "derive:x25519", "encaps:ml-kem-768")


def _kx_client_finish(group: str) -> tuple[str, ...]:
    g = _group(group)
    if g["kind"] == "ecdhe":
        return (f"derive:{g['alg']}",)
    if g["kind"] == "kem":
        return (f"decaps:{g['alg']}",)
    return ("derive:x25519", "decaps:ml-kem-768")


def _chain_verify(cert: str, depth: int) -> tuple[str, ...]:
    return ("parse_cert", f"verify:{cert}") * depth


def _base(s: Scenario, party: str) -> str:
    kind = "se" if s.key.startswith("se:") else "software"
    return f"base:{s.protocol}:{s.handshake}:{kind}:{party}"


def _client_sign(s: Scenario) -> tuple[tuple[str, ...], bool]:
    if s.key.startswith("se:"):
        return (), True
    return (f"sign:{s.client_key_type}",), False


# --- TLS 1.3 -----------------------------------------------------------------------------------
Msgs = tuple[tuple[str, int], ...]  # (message, bytes) as a Flight carries them
Ops = tuple[str, ...]


def _tls13(
    s: Scenario, app_out: Msgs, app_back: Msgs, app_server_ops: Ops = (), app_back_writes: int = 1, tickets: int = 0
) -> list[Exchange]:
    """The TLS 1.3 handshake's exchanges with the application messages; tickets: NewSessionTicket
    messages the server sends ahead of its application messages (each grows by the client's
    certificate under mutual TLS: ticket_growth)."""
    app_back = (("NewSessionTicket", NST13 + ticket_growth(s)),) * tickets + tuple(app_back)
    hs = s.handshake
    g = _group(s.group)
    resumed = hs in ("resumed", "psk", "psk-dhe", "0rtt")
    dhe = hs not in ("psk",)  # psk = psk_ke: no key exchange at all
    psk_ext = PSK_EXT_EXTERNAL if hs in ("psk", "psk-dhe") else PSK_EXT_TICKET + ticket_growth(s) if resumed else 0
    ks_c = (6 + g["client"]) if dhe else 0
    ks_s = (4 + g["server"]) if dhe else 0
    ch = ("ClientHello", TLS_REC + CH13_BASE + ks_c + psk_ext - (6 if not dhe else 0))
    ex: list[Exchange] = []
    ch_ops = _kx_client_ops(s.group, s.precomputed_keyshare) if dhe else ()
    if hs == "hrr":
        # first ClientHello offers a share the server does not want (no share computed for it here)
        ex.append(
            Exchange(
                Flight("client", (("ClientHello (no acceptable share)", TLS_REC + CH13_BASE),), ()),
                Flight("server", (("HelloRetryRequest", TLS_REC + 88),)),
                "tcp",
            )
        )
    early: Msgs = ()
    if hs == "0rtt":
        early = tuple((f"{n} (early data)", b) for n, b in app_out)
    server_msgs = [
        ("ServerHello", TLS_REC + SH13_BASE + ks_s + (6 if resumed else 0) - (0 if dhe else 4)),
        ("ChangeCipherSpec", CCS13),
        ("EncryptedExtensions", 6 + TLS13_ENC),
    ]
    server_ops = (_kx_server_ops(s.group) if dhe else ()) + (_base(s, "server"),)
    if not resumed:
        if s.mtls:
            server_msgs.append(("CertificateRequest", CERT_REQUEST + TLS13_ENC))
        cert_msg = 8 + sum(3 + cert_der(s.cert_type) + 2 for _ in range(s.depth))
        server_msgs += [
            ("Certificate", cert_msg + TLS13_ENC),
            ("CertificateVerify", 8 + _key(s.cert_type)["sig"] + TLS13_ENC),
        ]
        server_ops += (f"sign:{s.cert_type}",)
    server_msgs.append(("Finished", 36 + TLS13_ENC))
    if hs == "0rtt":
        server_msgs += [(n, b) for n, b in app_back]
        server_ops += app_server_ops
    ex.append(
        Exchange(Flight("client", (ch,) + early, ch_ops), Flight("server", tuple(server_msgs), server_ops), "tcp")
    )
    # client's second flight
    c_ops: Ops = _kx_client_finish(s.group) if dhe else ()
    c_msgs = [("ChangeCipherSpec", CCS13)]
    se = False
    if not resumed:
        c_ops += _chain_verify(s.cert_type, s.depth) + (f"verify:{s.cert_type}",)
        if s.mtls:
            sign_ops, se = _client_sign(s)
            c_ops += sign_ops
            c_msgs += [
                ("Certificate", 8 + 3 + cert_der(s.client_key_type) + 2 + TLS13_ENC),
                ("CertificateVerify", 8 + _key(s.client_key_type, "--key")["sig"] + TLS13_ENC),
            ]
    c_ops += (_base(s, "client"),)
    c_msgs.append(("Finished", 36 + TLS13_ENC))
    if hs == "0rtt":
        c_msgs.append(("EndOfEarlyData", 4 + TLS13_ENC))
        ex.append(Exchange(Flight("client", tuple(c_msgs), c_ops, se, handshake_done=True), None, "tcp"))
        return ex
    back_ops = app_server_ops
    if not resumed and s.mtls:
        back_ops = ("parse_cert", f"verify:{s.client_key_type}", f"verify:{s.client_key_type}") + back_ops
    ex.append(
        Exchange(
            Flight("client", tuple(c_msgs) + tuple(app_out), c_ops, se, handshake_done=True),
            Flight("server", tuple(app_back), back_ops, writes=app_back_writes),
            "tcp",
        )
    )
    return ex


SYN = Exchange(
    Flight("client", (("SYN", SYN_BYTES - TCP_HDR),)), Flight("server", (("SYN-ACK", SYN_BYTES - TCP_HDR),)), "tcp-syn"
)


def _plain(s: Scenario) -> FlightModel:
    """The flight model without security (PLAIN): zero operations on either side, plaintext sizes.
    The client's "handshake" is done when it can send its first application message: after the
    SYN-ACK over TCP, at once over UDP — so the handshake end point of a baseline is TCP connect
    (UDP: nothing), and the probe's window (TCP connected -> handshake done) is 0."""
    p = s.protocol
    if p in ("tls1.3", "tls1.2", "https", "jwt"):
        app = Exchange(
            Flight("client", (("GET request", HTTP_REQ),), handshake_done=True),
            Flight("server", (("HTTP response", HTTP_RESP),)),
            "tcp",
        )
        return FlightModel(s, "tcp", (SYN, app), start_mark=("back_recv", 0), notes=(PLAIN[p][1],))
    if p == "mqtt":
        app = Exchange(
            Flight("client", (("CONNECT", MQTT_CONNECT),), handshake_done=True),
            Flight("server", (("CONNACK", MQTT_CONNACK),)),
            "tcp",
        )
        return FlightModel(s, "tcp", (SYN, app), start_mark=("back_recv", 0), notes=(PLAIN[p][1],))
    if p in ("dtls1.2", "dtls1.3", "quic"):
        app = Exchange(
            Flight("client", (("request", HTTP_REQ),), handshake_done=True),
            Flight("server", (("response", HTTP_RESP),)),
            "coap",
        )
        return FlightModel(s, "udp", (app,), notes=(PLAIN[p][1],))
    if p in ("coap", "edhoc"):
        app = Exchange(
            Flight("client", (("CoAP CON GET", COAP_REQ),), handshake_done=True),
            Flight("server", (("CoAP ACK + response", COAP_RESP),)),
            "coap",
        )
        return FlightModel(s, "udp", (app,), notes=(PLAIN[p][1],))
    if p == "openvpn":
        app = Exchange(
            Flight("client", (("PUSH_REQUEST", 100),), handshake_done=True),
            Flight("server", (("PUSH_REPLY", 300),)),
            "ovpn",
        )
        return FlightModel(s, "udp", (app,), final_ops=("tun_setup",), notes=(PLAIN[p][1],))
    raise AssertionError(p)
