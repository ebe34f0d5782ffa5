"""The TLS 1.2 and DTLS 1.2 handshakes of the flight model: the exchanges of a full, resumed
(session ticket or ID) and PSK handshake with their messages' sizes and each side's operations, the
record protection of the application exchange that follows, and DTLS's framing and cookie exchange.
The scenario, flight and exchange types and the shared pieces (groups, keys, chains) are in
base.py; flights.build hands the tls1.2, dtls1.2 and coap protocols to `flight_model` here."""

from __future__ import annotations

from dataclasses import replace

from .base import (
    CH12,
    COAP_REQ,
    COAP_RESP,
    DTLS_ENC,
    DTLS_MSG,
    DTLS_REC,
    HTTP_REQ,
    HTTP_RESP,
    NST12,
    SYN,
    TLS12_ENC,
    TLS_REC,
    Exchange,
    Flight,
    FlightModel,
    ModelError,
    Msgs,
    Ops,
    Scenario,
    _base,
    _chain_verify,
    _client_sign,
    _group,
    _key,
    cert_der,
)


def tls12(s: Scenario, app_out: Msgs, app_back: Msgs, dtls: bool, app_server_ops: Ops = ()) -> list[Exchange]:
    hs = s.handshake
    g = _group(s.group)
    if g["kind"] != "ecdhe":
        raise ModelError(
            f"--group: {s.group!r} is a TLS 1.3 group; (D)TLS 1.2 key exchange needs an ECDHE "
            f"group (x25519, x448, p-256, p-384)"
        )
    rec = DTLS_REC if dtls else TLS_REC
    mh = DTLS_MSG - 4 if dtls else 0  # extra message-header bytes of DTLS
    enc = DTLS_ENC if dtls else TLS12_ENC
    tr = "dtls" if dtls else "tcp"
    ex: list[Exchange] = []
    if dtls and hs != "nocookie":
        ex.append(
            Exchange(
                Flight("client", (("ClientHello", rec + mh + CH12 - 40),)),
                Flight("server", (("HelloVerifyRequest", rec + DTLS_MSG + 3 + 20),)),
                tr,
            )
        )
    cookie = 21 if dtls and hs != "nocookie" else 0
    resumed = hs == "resumed"
    ch = ("ClientHello", rec + mh + CH12 + cookie + (176 if resumed else 0))
    if resumed:
        ex.append(
            Exchange(
                Flight("client", (ch,)),
                Flight(
                    "server",
                    (("ServerHello", rec + mh + 65), ("ChangeCipherSpec", rec + 1), ("Finished", 16 + enc)),
                    (_base(s, "server"),),
                ),
                tr,
            )
        )
        ex.append(
            Exchange(
                Flight(
                    "client",
                    (("ChangeCipherSpec", rec + 1), ("Finished", 16 + enc)) + tuple(app_out),
                    (_base(s, "client"),),
                    handshake_done=True,
                ),
                Flight("server", tuple(app_back), app_server_ops),
                "coap" if dtls else tr,
            )
        )
        return ex
    psk = hs == "psk"
    smsgs = [("ServerHello", rec + mh + 65)]
    sops: tuple[str, ...] = (_base(s, "server"),)
    if not psk:
        smsgs += [
            ("Certificate", rec + mh + 7 + sum(3 + cert_der(s.cert_type) for _ in range(s.depth))),
            ("ServerKeyExchange", rec + mh + 4 + 4 + g["server"] + 4 + _key(s.cert_type)["sig"]),
        ]
        sops += (f"keygen:{g['alg']}", f"sign:{s.cert_type}")
        if s.mtls:
            smsgs.append(("CertificateRequest", rec + mh + 40))
    smsgs.append(("ServerHelloDone", rec + mh + 4))
    ex.append(Exchange(Flight("client", (ch,)), Flight("server", tuple(smsgs), sops), tr))
    cmsgs: list[tuple[str, int]] = []
    cops: Ops = ()
    se = False
    if psk:
        cmsgs.append(("ClientKeyExchange (PSK identity)", rec + mh + 4 + 2 + 16))
    else:
        cops = _chain_verify(s.cert_type, s.depth) + (
            f"verify:{s.cert_type}",
            f"keygen:{g['alg']}",
            f"derive:{g['alg']}",
        )
        if s.mtls:
            cmsgs.append(("Certificate", rec + mh + 7 + 3 + cert_der(s.client_key_type)))
        cmsgs.append(("ClientKeyExchange", rec + mh + 4 + 1 + g["client"]))
        if s.mtls:
            sign_ops, se = _client_sign(s)
            cops += sign_ops
            cmsgs.append(("CertificateVerify", rec + mh + 8 + _key(s.client_key_type, "--key")["sig"]))
    cmsgs += [("ChangeCipherSpec", rec + 1), ("Finished", 16 + enc)]
    b_ops: tuple[str, ...] = () if psk else (f"derive:{g['alg']}",)
    if s.mtls and not psk:
        b_ops += ("parse_cert", f"verify:{s.client_key_type}", f"verify:{s.client_key_type}")
    # OpenSSL servers (the probe, libcoap's) send a session ticket before ChangeCipherSpec in DTLS too
    # (the probe's DTLS transcript: 282 bytes in 3 records)
    bmsgs = [("NewSessionTicket", rec + mh + NST12), ("ChangeCipherSpec", rec + 1), ("Finished", 16 + enc)]
    ex.append(Exchange(Flight("client", tuple(cmsgs), cops, se), Flight("server", tuple(bmsgs), b_ops), tr))
    ex.append(
        Exchange(
            Flight("client", tuple(app_out), (_base(s, "client"),), handshake_done=True),
            Flight("server", tuple(app_back), app_server_ops),
            "coap" if dtls else tr,
        )
    )
    return ex


def flight_model(s: Scenario) -> FlightModel:
    """The FlightModel of a checked, resolved tls1.2, dtls1.2 or coap scenario (flights.build calls this)."""
    p = s.protocol
    if p == "tls1.2":
        app = ((("GET request", HTTP_REQ + TLS12_ENC),), (("HTTP response", HTTP_RESP + TLS12_ENC),))
        if s.handshake == "psk":
            s = replace(s, mtls=False)
        return FlightModel(s, "tcp", tuple([SYN] + tls12(s, *app, dtls=False)), start_mark=("back_recv", 0))
    if p in ("dtls1.2", "coap"):
        app = (
            ((("CoAP CON GET", COAP_REQ + DTLS_ENC),), (("CoAP ACK + response", COAP_RESP + DTLS_ENC),))
            if p == "coap"
            else ((("request", HTTP_REQ + DTLS_ENC),), (("response", HTTP_RESP + DTLS_ENC),))
        )
        return FlightModel(s, "udp", tuple(tls12(s, *app, dtls=True)))
    raise AssertionError(p)
