"""The TLS 1.3 family of the flight model: a TLS 1.3 handshake with an HTTP GET, HTTPS (nginx), a
JWT-authenticated request, MQTT over TLS 1.3 and OpenVPN's TLS 1.3 control channel. The shared
types and the TLS 1.3 handshake itself (`_tls13`) are in base.py."""

from __future__ import annotations

from dataclasses import replace

from .base import (
    HTTP_REQ,
    HTTP_RESP,
    JWT_REQ,
    MQTT_CONNACK,
    MQTT_CONNECT,
    SYN,
    TLS13_ENC,
    Exchange,
    Flight,
    FlightModel,
    Scenario,
    _client_sign,
    _tls13,
)


def flight_model(s: Scenario) -> FlightModel:
    """The FlightModel of a checked, resolved scenario of the TLS 1.3 family (flights.build calls this)."""
    p = s.protocol
    http = ((("GET request", HTTP_REQ + TLS13_ENC),), (("HTTP response", HTTP_RESP + TLS13_ENC),))
    if p == "tls1.3":
        ex = [SYN] + _tls13(s, *http)
        return FlightModel(s, "tcp", tuple(ex), start_mark=("back_recv", 0))
    if p == "https":
        # nginx (OpenSSL) sends session tickets at the end of the handshake (one write: two after a
        # full handshake, one after a resumption — OpenSSL's defaults), then the response (a second write)
        tickets = 2 if s.handshake == "full" else 1
        ex = [SYN] + _tls13(s, http[0], http[1], app_back_writes=2, tickets=tickets)
        return FlightModel(s, "tcp", tuple(ex), start_mark=("back_recv", 0))
    if p == "jwt":
        fresh = s.handshake == "fresh"
        s13 = replace(s, handshake="full", mtls=False, key="software")
        ex = [SYN] + _tls13(s13, (("GET + JWT", JWT_REQ + TLS13_ENC),), http[1], app_server_ops=("verify:ecdsa-p256",))
        if fresh:  # the token is signed before the connection starts
            sign_ops, se = _client_sign(replace(s, client_key_type="ecdsa-p256"))
            first = ex[0]
            ex[0] = Exchange(replace(first.out, ops=sign_ops + first.out.ops, se_sign=se), first.back, first.transport)
        return FlightModel(s, "tcp", tuple(ex), start_mark=("back_recv", 0))
    if p == "mqtt":
        app = ((("CONNECT", MQTT_CONNECT + TLS13_ENC),), (("CONNACK", MQTT_CONNACK + TLS13_ENC),))
        # the server's two session tickets leave with the end of its handshake (one write), the
        # CONNACK after mosquitto has read CONNECT (a second write: with TCP_NODELAY, its own segment)
        ex = [SYN] + _tls13(s, *app, app_back_writes=2, tickets=2)
        return FlightModel(s, "tcp", tuple(ex), start_mark=("back_recv", 0))
    if p == "openvpn":
        s13 = replace(s, handshake="full")
        tls = _tls13(s13, (("key method 2 data", 300),), (("key method 2 data", 300),))
        tls = [Exchange(e.out, e.back, "ovpn") for e in tls]
        tls[-1] = Exchange(replace(tls[-1].out, handshake_done=False), tls[-1].back, "ovpn")
        ex = (
            [
                Exchange(
                    Flight("client", (("P_CONTROL_HARD_RESET_CLIENT_V2", 54),)),
                    Flight("server", (("P_CONTROL_HARD_RESET_SERVER_V2", 66),)),
                    "ovpn",
                )
            ]
            + tls
            + [
                Exchange(
                    Flight("client", (("PUSH_REQUEST", 100),), handshake_done=True),
                    Flight("server", (("PUSH_REPLY", 300),)),
                    "ovpn",
                )
            ]
        )
        return FlightModel(s, "udp", tuple(ex), final_ops=("tun_setup",))
    raise AssertionError(p)
