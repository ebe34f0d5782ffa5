"""DTLS 1.3 flight model (RFC 9147), as wolfSSL 5.9 runs it (measured by `secperf connect dtls13`,
measure/dtls13.py): mutual authentication, the server's HelloRetryRequest cookie, one record per
datagram, ACKs, connection IDs.

Exchanges, each with the transport that owns its loss recovery (sim/recovery.py; timers in
model/network.py, read from wolfSSL 5.9's src/dtls13.c and wolfio.c and measured by
benchmarks/dtls13_loss_study.py):

1. ClientHello (with its X25519 share) -> HelloRetryRequest with a cookie (RFC 9147 5.1). Transport
   `dtls`: the server keeps no state, so either lost costs the client's timer, 1 s, doubling.
2. ClientHello + cookie -> ServerHello, EncryptedExtensions, CertificateRequest, Certificate,
   CertificateVerify, Finished (resumed: ServerHello, EncryptedExtensions, Finished). Transport
   `dtls13-flight`: a lost record is resent alone after the client's quick-timeout ACK.
3. Certificate, CertificateVerify, Finished -> ACK, NewSessionTicket. wolfSSL's client returns from
   wolfSSL_connect only when the server has acknowledged its Finished (tls13.c, WAIT_FINISHED_ACK): a
   round trip the protocol does not require (RFC 9147 allows application data right after Finished).
   Transport `dtls13-finished`: the server's quick-timeout ACK asks for the missing records.
4. request + the ticket's ACK -> response (wolfSSL's server answers when it reads the request).
   DTLS does not retransmit application data: the pair's client resends its request on a CoAP-like
   timer (2 s, doubling; transport `dtls13-app`: the CoAP timer, only the request resent).

On the wire the ticket often arrives just after the client sent its request, so the datagram log
turns direction five times; the client waits four round trips. wolfSSL's server sends its ticket
   when it reads the request and sends the response once the ticket is acknowledged: one more round
   trip than the protocol needs. Both are measured behaviour, modelled so the what-if predicts what
   the implementation does; the protocol's own minimum is 2 round trips after the cookie.

Sizes: TLS 1.3's message bodies (flights._tls13's sizes) with DTLS framing -- a 12-byte handshake
header instead of 4, a plaintext record header of 13 bytes, an encrypted record of 22 bytes (unified
header with a 16-bit sequence number and length, content type, 16-byte tag) -- plus the connection ID
in every record the client sends after the handshake keys (8 bytes: the server's CID; the client's is
empty) and the connection_id extension (ClientHello 5, ServerHello 13 bytes). Constants measured
against the pair's datagrams (ECDSA P-256 on both sides): 173 / 144 / 246 / 111+36+69+504+110+66 /
504+109+66 / 72+222 / 62+40 / 868 bytes.
"""

from __future__ import annotations

from dataclasses import replace

from . import base as F

PLAIN_REC, ENC_REC, HS_HDR = 13, 22, 12
CH_BASE = 135  # DTLS 1.3 ClientHello without its key_share entry (173 - 38 measured)
SH_BASE = 75  # ServerHello without its key_share entry (111 - 36 measured)
COOKIE_EXT = 73  # the cookie extension echoed in the second ClientHello (246 - 173)
HRR = 144  # HelloRetryRequest with the cookie
PSK_EXT = 253  # pre_shared_key with wolfSSL's ticket and binder (426 - 173 measured)
CERT_REQUEST = 39  # wolfSSL's CertificateRequest as a TLS message (69 measured - 30 of DTLS framing)
ACK_FULL, ACK_SHORT = 72, 40  # ACK record acknowledging several / one record(s)
NST = 222  # NewSessionTicket record
CID_BYTES = 8  # the server's connection ID, carried by every protected client record
CID_EXT_CH, CID_EXT_SH = 5, 13  # connection_id extension: empty client CID / the server's 8 bytes


def _enc(body_with_tls_header: int) -> int:
    """A TLS 1.3 handshake message (with its 4-byte header) as a DTLS 1.3 encrypted record."""
    return body_with_tls_header - 4 + HS_HDR + ENC_REC


def _own_base(flight: F.Flight, generic: str, hs: str) -> F.Flight:
    """The flight with its `base:` residual named after this handshake (full-cid, resumed-cid have their
    own calibration rows) rather than the TLS 1.3 handshake the operations were taken from."""
    return replace(flight, ops=tuple(o.replace(f"base:dtls1.3:{generic}:", f"base:dtls1.3:{hs}:") for o in flight.ops))


def flight_model(s: F.Scenario) -> F.FlightModel:
    hs = s.handshake
    cid = hs.endswith("-cid")
    resumed = hs.startswith("resumed")
    s13 = replace(s, handshake="resumed" if resumed else "full")  # mutual by default (Scenario.resolved), as measured
    g = F._group(s.group)
    tls = [
        F.Exchange(_own_base(e.out, s13.handshake, hs), e.back and _own_base(e.back, s13.handshake, hs), e.transport)
        for e in F._tls13(s13, (("request", 0),), (("response", 0),))
    ]  # operations per flight
    c_cid = CID_BYTES if cid else 0
    ks_c, ks_s = 6 + g["client"], 4 + g["server"]
    ch = CH_BASE + ks_c + (PSK_EXT if resumed else 0) + (CID_EXT_CH if cid else 0)
    ex = [
        F.Exchange(
            F.Flight("client", (("ClientHello", ch),), tls[0].out.ops),
            F.Flight("server", (("HelloRetryRequest (cookie)", HRR),)),
            "dtls",
        )
    ]
    server = [
        ("ServerHello", SH_BASE + ks_s + (6 if resumed else 0) + (CID_EXT_SH if cid else 0)),
        ("EncryptedExtensions", _enc(6)),
    ]
    if not resumed:
        server += [("CertificateRequest", _enc(CERT_REQUEST))] if s13.mtls else []
        server += [
            ("Certificate", _enc(8 + 3 + F.cert_der(s.cert_type) + 2)),
            ("CertificateVerify", _enc(8 + F._key(s.cert_type)["sig"])),
        ]
    server.append(("Finished", _enc(36)))
    ex.append(
        F.Exchange(
            F.Flight("client", (("ClientHello + cookie", ch + COOKIE_EXT),)),
            F.Flight("server", tuple(server), tls[0].answer.ops, writes=len(server)),
            "dtls13-flight",
        )
    )
    client = []
    if not resumed and s13.mtls:
        client += [
            ("Certificate", _enc(8 + 3 + F.cert_der(s.client_key_type) + 2) + c_cid),
            ("CertificateVerify", _enc(8 + F._key(s.client_key_type, "--key")["sig"]) + c_cid),
        ]
    client.append(("Finished", _enc(36) + c_cid))
    fin = tls[1].out
    ex.append(
        F.Exchange(
            F.Flight("client", tuple(client), fin.ops, fin.se_sign, writes=len(client)),
            F.Flight(
                "server",
                (("ACK", ACK_SHORT if resumed else ACK_FULL), ("NewSessionTicket", NST)),
                tls[1].answer.ops,
                writes=2,
            ),
            "dtls13-finished",
        )
    )
    ex.append(
        F.Exchange(
            F.Flight(
                "client",
                (("request", F.HTTP_REQ + ENC_REC + c_cid), ("ACK", ACK_SHORT + c_cid)),
                handshake_done=True,
                writes=2,
            ),
            F.Flight("server", (("response", F.HTTP_RESP + ENC_REC),)),
            "dtls13-app",
        )
    )
    notes = (
        "one record per datagram (wolfSSL)",
        "client waits for the ACK of its Finished; server sends the response after the ticket's ACK (wolfSSL 5.9)",
    )
    return F.FlightModel(s, "udp", tuple(ex), notes=notes)
