"""EDHOC (RFC 9528) + OSCORE (RFC 8613) flight model for the what-if: message sizes from method,
cipher suite and credential type; the CoAP datagrams that carry them (RFC 9528 Appendix A.2); the
operations each side runs; OSCORE's overhead per request.

Sizes are computed from the CBOR encodings RFC 9528 defines, not taken from a table:
  message_1 = METHOD, SUITES_I, G_X (bstr), C_I, ?EAD_1
  message_2 = bstr(G_Y || CIPHERTEXT_2), CIPHERTEXT_2 = plaintext_2 XOR keystream (no tag);
              plaintext_2 = C_R, ID_CRED_R, Signature_or_MAC_2 (bstr), ?EAD_2
  message_3 = bstr(CIPHERTEXT_3), CIPHERTEXT_3 = AEAD(ID_CRED_I, Signature_or_MAC_3 (bstr), ?EAD_3)
  message_4 = bstr(AEAD(?EAD_4)) (the separate flow's reply; aiocoap sends it)
They reproduce RFC 9529's traces (trace 1: method 0, suite 0, x5t: 37/115/90 bytes; trace 2:
method 3, suite 2 offered as [6, 2], kid: 39/45/19) and lakers' messages (tests/test_edhoc.py).

The what-if names an EDHOC variant as its handshake: `m{METHOD}-{CRED}[-combined]` (CRED: kid,
value (a CCS by value), x5t, x5chain); the cipher suite follows the scenario's group: x25519 ->
suite 0 (EdDSA), p-256 -> suite 2 (ES256), p-384 -> suite 24 (ES384). "-combined" carries
message_3 inside the first OSCORE request (RFC 9668); otherwise message_3 has its own POST and the
responder's message_4 comes back before the first protected request.

A secure element: with a signature method the initiator's signature (message_3) comes from it, as
for TLS. With static DH (method 3) its key operation is an ECDH with the static key (G_IY); the
profiles give signing times only, so the model charges that ECDH at the profile's signing latency
(a stated estimate: on the parts profiled, ECDH and ECDSA signing take the same order of time).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import InputError
from ...inputs.vocabulary import HANDSHAKES as _HS
from . import base as F
from .base import FlightModel, Scenario

# suite -> (key exchange op alg, signature alg, x-coordinate / public key bytes, AEAD tag bytes,
# static-DH MAC length, signature bytes) (RFC 9528 section 10.2 and IANA's EDHOC cipher suites)
SUITES = {
    0: ("x25519", "ed25519", 32, 8, 8, 64),
    1: ("x25519", "ed25519", 32, 16, 16, 64),
    2: ("ecdh-p256", "ecdsa-p256", 32, 8, 8, 64),
    3: ("ecdh-p256", "ecdsa-p256", 32, 16, 16, 64),
    4: ("x25519", "ed25519", 32, 16, 16, 64),
    5: ("ecdh-p256", "ecdsa-p256", 32, 16, 16, 64),
    6: ("x25519", "ecdsa-p256", 32, 16, 16, 64),
    24: ("ecdh-p384", "ecdsa-p384", 48, 16, 16, 96),
}
GROUP_SUITE = {"x25519": 0, "p-256": 2, "p-384": 24}
METHODS = {0: ("sig", "sig"), 1: ("sig", "dh"), 2: ("dh", "sig"), 3: ("dh", "dh")}  # (initiator, responder)
CREDS = ("kid", "value", "x5t", "x5chain")
CCS_BYTES = 84  # the lab's CWT claim set: P-256 x and y, a one-byte kid, an empty subject (lakers' by-value size)
CERT_DER = 241  # an EdDSA X.509 certificate as RFC 9529 trace 1's (its CRED_R is 241 bytes)
# CoAP framing (RFC 7252): header 4, token 2 (aiocoap's), Uri-Path ".well-known" + "edhoc" 18, payload marker 1
COAP_HDR, COAP_TOKEN, EDHOC_PATH, MARKER = 4, 2, 18, 1
# OSCORE (RFC 8613 section 6): option = header 1 + flags 1 + PIV 1 + kid 1; inner code 1; AEAD tag
OSCORE_OPTION = 4
OSCORE_RESP_OPTION = 1  # a response's OSCORE option: empty (no PIV, no kid)
EDHOC_OPTION = 1  # RFC 9668's EDHOC option (empty) on the combined request


def _bstr_hdr(n: int) -> int:
    return 1 if n < 24 else 2 if n < 256 else 3


def _id_cred(cred: str, ccs_bytes: int, cert_bytes: int) -> int:
    if cred == "kid":
        return 1  # a one-byte kid, sent as its CBOR int (compact)
    if cred == "value":
        return 2 + ccs_bytes  # {14: CCS}
    if cred == "x5t":
        return 14  # {34: [-15, h'8 bytes']}
    if cred == "x5chain":
        return 3 + _bstr_hdr(cert_bytes) + cert_bytes  # {33: bstr(DER)}
    raise InputError(cred)


@dataclass(frozen=True)
class Variant:
    method: int = 3
    suite: int = 2
    cred: str = "kid"
    combined: bool = False
    suites_offered: tuple[int, ...] = ()  # SUITES_I (default: the selected suite alone)
    ccs_bytes: int = CCS_BYTES
    cert_bytes: int = CERT_DER

    def check(self) -> Variant:
        if self.method not in METHODS:
            raise InputError(f"EDHOC method {self.method}: methods are 0-3")
        if self.suite not in SUITES:
            raise InputError(f"EDHOC cipher suite {self.suite}: modelled suites {', '.join(map(str, SUITES))}")
        if self.cred not in CREDS:
            raise InputError(f"EDHOC credential {self.cred!r}: known {', '.join(CREDS)}")
        return self


def message_sizes(v: Variant) -> dict[str, int]:
    """EDHOC message sizes in bytes (the CBOR sequences, no transport framing)."""
    v.check()
    _kx, _sig, x_len, tag, mac_len, sig_len = SUITES[v.suite]
    offered = v.suites_offered or (v.suite,)
    suites_i = (
        1
        if len(offered) == 1 and v.suite < 24
        else 2
        if len(offered) == 1
        else 1 + sum(1 if s < 24 else 2 for s in offered)
    )
    m1 = 1 + suites_i + 2 + x_len + 1
    i_auth, r_auth = METHODS[v.method]
    sm2 = sig_len if r_auth == "sig" else mac_len
    pt2 = 1 + _id_cred(v.cred, v.ccs_bytes, v.cert_bytes) + _bstr_hdr(sm2) + sm2
    m2 = _bstr_hdr(x_len + pt2) + x_len + pt2
    sm3 = sig_len if i_auth == "sig" else mac_len
    ct3 = _id_cred(v.cred, v.ccs_bytes, v.cert_bytes) + _bstr_hdr(sm3) + sm3 + tag
    m3 = _bstr_hdr(ct3) + ct3
    m4 = _bstr_hdr(tag) + tag
    return {"message_1": m1, "message_2": m2, "message_3": m3, "message_4": m4}


def oscore_overhead(suite: int = 2) -> dict[str, int]:
    """Bytes OSCORE adds to a CoAP request and to its response (beyond the plain message): the
    OSCORE option, the inner code byte and the AEAD tag (a request's payload marker exists anyway
    when it has a payload; a GET without one gains it)."""
    tag = SUITES[suite][3]
    return {"request": OSCORE_OPTION + 1 + tag + MARKER, "response": OSCORE_RESP_OPTION + 1 + tag}


def coap_datagrams(v: Variant, app_req: int, app_resp: int) -> list[tuple[str, str, int]]:
    """(sender, message, CoAP datagram bytes) in order, for one set-up to the first protected
    response; app_req/app_resp are the plain CoAP request/response datagrams it protects."""
    m = message_sizes(v)
    base = COAP_HDR + COAP_TOKEN
    ov = oscore_overhead(v.suite)
    out = [
        ("client", "EDHOC message_1 (POST /.well-known/edhoc)", base + EDHOC_PATH + MARKER + 1 + m["message_1"]),
        ("server", "EDHOC message_2 (2.04)", base + MARKER + m["message_2"]),
    ]
    if v.combined:
        out.append(
            ("client", "EDHOC message_3 + OSCORE request", app_req + ov["request"] + EDHOC_OPTION + m["message_3"])
        )
    else:
        out += [
            ("client", "EDHOC message_3 (POST, C_R first)", base + EDHOC_PATH + MARKER + 1 + m["message_3"]),
            ("server", "EDHOC message_4 (2.04)", base + MARKER + m["message_4"]),
            ("client", "OSCORE request", app_req + ov["request"]),
        ]
    out.append(("server", "OSCORE response", app_resp + ov["response"]))
    return out


def ops(v: Variant) -> dict[str, tuple[str, ...]]:
    """Cost-table operations per step: client_m1 (before message_1), client_m3 (after message_2,
    before message_3), server_m2 (before message_2), server_m3 (after message_3). Which of them the
    secure element takes is `se_step`."""
    kx, sig, *_ = SUITES[v.suite]
    i_auth, r_auth = METHODS[v.method]
    chain = ("parse_cert", f"verify:{sig}") if v.cred == "x5chain" else ()
    c_m3: tuple[str, ...] = (f"derive:{kx}",)  # G_XY
    s_m2: tuple[str, ...] = (f"keygen:{kx}", f"derive:{kx}")
    if r_auth == "sig":
        c_m3 += chain + (f"verify:{sig}",)
        s_m2 += (f"sign:{sig}",)
    else:
        c_m3 += (f"derive:{kx}",)  # G_RX
        s_m2 += (f"derive:{kx}",)  # G_RX
    s_m3: tuple[str, ...] = ()
    if i_auth == "sig":
        c_m3 += (f"sign:{sig}",)
        s_m3 += chain + (f"verify:{sig}",)
    else:
        c_m3 += (f"derive:{kx}",)  # G_IY with the static key
        s_m3 += (f"derive:{kx}",)
    return {"client_m1": (f"keygen:{kx}",), "client_m3": c_m3, "server_m2": s_m2, "server_m3": s_m3}


def se_op(v: Variant) -> str:
    """The client's private-key operation, taken by a secure element when the key lives there."""
    kx, sig, *_ = SUITES[v.suite]
    return f"sign:{sig}" if METHODS[v.method][0] == "sig" else f"derive:{kx}"


# --- the what-if's handshake names --------------------------------------------------------------

HANDSHAKES = _HS["edhoc"]


def variant(handshake: str, group: str) -> Variant:
    """The variant a what-if handshake name and group mean (InputError naming what is wrong)."""
    combined = handshake.endswith("-combined")
    core = handshake.removesuffix("-combined")
    try:
        m, cred = core.split("-", 1)
        method = int(m.removeprefix("m"))
    except ValueError:
        raise InputError(
            f"EDHOC handshake {handshake!r}: m<METHOD>-<CRED>[-combined], e.g. m3-kid, m0-x5chain"
        ) from None
    if group not in GROUP_SUITE:
        raise InputError(
            f"EDHOC over group {group!r}: the suites modelled follow x25519 (suite 0), p-256 (suite 2), "
            f"p-384 (suite 24)"
        )
    return Variant(method=method, suite=GROUP_SUITE[group], cred=cred, combined=combined).check()


def flight_model(s: Scenario) -> FlightModel:
    """The what-if FlightModel of an EDHOC + OSCORE scenario (flights.build calls this)."""
    try:
        v = variant(s.handshake, s.group)
    except ValueError as exc:
        raise F.ModelError(f"--handshake/--group: {exc}") from None
    d = coap_datagrams(v, F.COAP_REQ, F.COAP_RESP)
    o = ops(v)
    se = s.key.startswith("se:")
    c_m3 = o["client_m3"]
    if se:
        dropped = list(c_m3)
        dropped.remove(se_op(v))
        c_m3 = tuple(dropped)
    c_m3 += (F._base(s, "client"),)
    m1 = F.Flight("client", ((d[0][1], d[0][2]),), o["client_m1"])
    m2 = F.Flight("server", ((d[1][1], d[1][2]),), o["server_m2"] + (F._base(s, "server"),))
    ex = [F.Exchange(m1, m2, "coap")]
    if v.combined:
        ex.append(
            F.Exchange(
                F.Flight("client", ((d[2][1], d[2][2]),), c_m3, se, handshake_done=True),
                F.Flight("server", ((d[3][1], d[3][2]),), o["server_m3"]),
                "coap",
            )
        )
    else:
        ex.append(
            F.Exchange(
                F.Flight("client", ((d[2][1], d[2][2]),), c_m3, se),
                F.Flight("server", ((d[3][1], d[3][2]),), o["server_m3"]),
                "coap",
            )
        )
        ex.append(
            F.Exchange(
                F.Flight("client", ((d[4][1], d[4][2]),), handshake_done=True),
                F.Flight("server", ((d[5][1], d[5][2]),)),
                "coap",
            )
        )
    notes = [
        f"EDHOC method {v.method} ({'/'.join(METHODS[v.method])}), suite {v.suite}, credentials {v.cred}; "
        f"messages {message_sizes(v)['message_1']}/{message_sizes(v)['message_2']}/"
        f"{message_sizes(v)['message_3']} bytes; OSCORE adds {oscore_overhead(v.suite)['request']} bytes "
        f"to the request, {oscore_overhead(v.suite)['response']} to the response"
    ]
    if se and METHODS[v.method][0] == "dh":
        notes.append("secure element: its static-DH ECDH is charged at the profile's signing latency (estimate)")
    return F.FlightModel(s, "udp", tuple(ex), notes=tuple(notes))
