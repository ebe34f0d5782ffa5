"""`secperf connect`: connection establishment on real servers with software, token and
secure-element keys, full and resumed (study S2); secperf's own QUIC, DTLS 1.3/1.2 and EDHOC pairs."""

from __future__ import annotations

import argparse

from ..argtypes import comma_list, count
from . import common
from .common import add_measure_options

NAME = "connect"

HELP = (
    "connection establishment on real servers (nginx, mosquitto, coap-server, OpenVPN) with software, token "
    "and secure-element keys, full and resumed (study S2)"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "protocol",
        type=comma_list(),
        help="https, mqtt, coap, vpn or all; quic, dtls13, dtls12 "
        "(secperf's own aioquic and wolfSSL 5.9 pairs) (comma-separated allowed)",
    )
    p.add_argument(
        "--key",
        action="extend",
        type=comma_list(),
        metavar="SOURCES",
        help="key sources: software, token (SoftHSM2, no added delay), se:PROFILE, se:PROFILE:cold "
        "(as --key-session cold) (default: software,se:iot-safe-sim)",
    )
    p.add_argument(
        "--handshake",
        action="extend",
        type=comma_list(),
        metavar="KINDS",
        help="full, resumed (default: both); 0rtt (quic)",
    )
    p.add_argument(
        "--lost",
        action="extend",
        type=comma_list(),
        metavar="KINDS",
        help="quic: none (default), client-initial, server-initial; dtls13/dtls12: client-hello "
        "(that first datagram is not sent: recovery by the protocol's own timer)",
    )
    p.add_argument(
        "--cid",
        action="extend",
        type=comma_list(),
        metavar="ON_OFF",
        help="dtls13: connection IDs off, on (default: both)",
    )
    p.add_argument(
        "--client",
        action="extend",
        type=comma_list(),
        metavar="NAMES",
        help="probe (default), curl, mosquitto_pub, paho, coap-client, openvpn, or 'all' "
        "for every client of each protocol",
    )
    p.add_argument(
        "--auth",
        action="extend",
        type=comma_list(),
        metavar="KINDS",
        help="HTTPS authentication: mtls, jwt_fresh, jwt_cached (default: all three)",
    )
    p.add_argument(
        "--coap-security",
        action="extend",
        type=comma_list(),
        metavar="KINDS",
        help="CoAP over DTLS: pki (default), psk",
    )
    p.add_argument("--tls", choices=("1.2", "1.3"), default=None, help="TLS version for HTTPS and MQTT (default 1.3)")
    p.add_argument(
        "--nagle", action="store_true", help="mosquitto without set_tcp_nodelay (shows Nagle + delayed ACK on CONNACK)"
    )
    p.add_argument("--timeout-ms", type=count(3_600_000), default=5000, help="per-connection stage timeout")
    p.add_argument(
        "--edhoc-method", action="extend", type=comma_list(), metavar="N", help="edhoc: EDHOC method(s) (default 3)"
    )
    p.add_argument(
        "--edhoc-suite", action="extend", type=comma_list(), metavar="N", help="edhoc: cipher suite(s) (default 2)"
    )
    p.add_argument(
        "--edhoc-cred",
        action="extend",
        type=comma_list(),
        metavar="KINDS",
        help="edhoc: credentials by kid (default) or by value",
    )
    p.add_argument(
        "--edhoc-flow",
        action="extend",
        type=comma_list(),
        metavar="KINDS",
        help="edhoc: separate (message_3 on its own, default) or combined (with the first OSCORE request)",
    )
    p.add_argument(
        "--oscore-requests",
        type=count(1000),
        default=None,
        help="edhoc: OSCORE-protected requests per handshake (default 1)",
    )
    common.key_session_option(p)
    p.add_argument(
        "--coap-server",
        action="extend",
        type=comma_list(),
        metavar="NAMES",
        help="CoAP/DTLS servers: libcoap (default), californium (Eclipse Californium: resumes DTLS "
        "sessions, connection IDs; adds its own client's rows: full, resumed, cid-rebind); "
        "comma-separated",
    )
    add_measure_options(p, links=True)
    common.own_server_options(p)
