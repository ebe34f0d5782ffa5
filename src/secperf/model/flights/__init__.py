"""Protocol flight models: which messages go in which flight, their bytes, and the computation each
side does before sending, for every protocol the what-if knows.

base.py holds the scenario, flight and exchange types, the sizes and the shared pieces (groups,
keys, chains, the TLS 1.3 handshake); one module per protocol family builds its exchanges from them
(tls13, tls12, dtls13, edhoc, quic) and imports base only. `build` checks a scenario and hands it to
its family's module; the names callers use are handed on from base.
"""

from __future__ import annotations

from collections.abc import Callable

from . import dtls13, edhoc, quic, tls12, tls13
from .base import (
    CERT_REQUEST,
    COAP_REQ,
    COAP_RESP,
    DTLS_ENC,
    DTLS_MSG,
    DTLS_REC,
    HANDSHAKES,
    HTTP_REQ,
    HTTP_RESP,
    JWT_REQ,
    MQTT_CONNACK,
    MQTT_CONNECT,
    MTU_MIN,
    NST13,
    PLAIN,
    PROTOCOLS,
    SECURITY,
    TCP_HDR,
    TICKET_PEER_CERT_PREFIX,
    TLS12_ENC,
    TLS13_ENC,
    TLS_REC,
    UDP_HDR,
    Exchange,
    Flight,
    FlightModel,
    ModelError,
    Msgs,
    Ops,
    Scenario,
    _plain,
    cert_der,
    checked,
    groups,
    key_types,
    no_security,
    resolved_all,
    sizes,
    software_key,
    ticket_growth,
)

__all__ = [
    "CERT_REQUEST",
    "COAP_REQ",
    "COAP_RESP",
    "DTLS_ENC",
    "DTLS_MSG",
    "DTLS_REC",
    "HANDSHAKES",
    "HTTP_REQ",
    "HTTP_RESP",
    "JWT_REQ",
    "MQTT_CONNACK",
    "MQTT_CONNECT",
    "MTU_MIN",
    "NST13",
    "PLAIN",
    "PROTOCOLS",
    "SECURITY",
    "TCP_HDR",
    "TICKET_PEER_CERT_PREFIX",
    "TLS12_ENC",
    "TLS13_ENC",
    "TLS_REC",
    "UDP_HDR",
    "Exchange",
    "Flight",
    "FlightModel",
    "ModelError",
    "Msgs",
    "Ops",
    "Scenario",
    "baseline",
    "build",
    "cert_der",
    "groups",
    "key_types",
    "no_security",
    "sizes",
    "software_key",
    "ticket_growth",
    "resolved_all",
]

# the function that builds each protocol's exchanges (a checked, resolved scenario in, its model out)
_FAMILY: dict[str, Callable[[Scenario], FlightModel]] = {
    **dict.fromkeys(("tls1.3", "https", "jwt", "mqtt", "openvpn"), tls13.flight_model),
    **dict.fromkeys(("tls1.2", "dtls1.2", "coap"), tls12.flight_model),
    "dtls1.3": dtls13.flight_model,
    "edhoc": edhoc.flight_model,
    "quic": quic.flight_model,
}


def baseline(s: Scenario) -> FlightModel:
    """The flight model of the scenario's exchange without security (no_security, PLAIN)."""
    return build(no_security(s))


def build(s: Scenario) -> FlightModel:
    """The flight model of a scenario; bad combinations raise ModelError naming the option."""
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
    return _FAMILY[s.protocol](s)
