"""Protocol flight models: which messages go in which flight, their bytes, and the computation each
side does before sending, for every protocol the what-if knows.

base.py holds the scenario, flight and exchange types, the sizes and the shared pieces (groups,
keys, chains, the TLS 1.3 handshake); one module per protocol family builds its exchanges from them
(tls13, tls12, dtls13, edhoc, quic) and imports base only. `build` checks a scenario and hands it to
its family's module; the names callers use are handed on from base.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

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
    Context,
    Exchange,
    Flight,
    FlightModel,
    ModelError,
    Msgs,
    Ops,
    Scenario,
    cert_der,
    groups,
    key_types,
    model,
    no_security,
    resolved_all,
    sizes,
    software_key,
    ticket_growth,
)
from .base import context as base_context

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
    "context",
    "Context",
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
    return model(s, _FAMILY)


def context(scenarios: Iterable[Scenario], groups: Iterable[str] = (), certs: Iterable[str] = ()) -> Context:
    """The scenarios' Context in one call (base.context): the size tables, each scenario resolved and
    the resolved scenarios' flight models; groups, certs: the user's --group and --server-cert names,
    checked first."""
    return base_context(scenarios, groups, certs, _FAMILY)
