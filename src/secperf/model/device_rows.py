"""What a `secperf device` row counts, in the what-if's names: the device primitives as cost-table
operations, and the protocol and handshake a warm handshake row stands for (model/costs.from_device
reads rows through these)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..inputs.vocabulary import HANDSHAKES

DEVICE_OPS = {
    "x25519-keygen": "keygen:x25519",
    "x25519-derive": "derive:x25519",
    "p256-keygen": "keygen:ecdh-p256",
    "p256-derive": "derive:ecdh-p256",
    "p384-keygen": "keygen:ecdh-p384",
    "p384-derive": "derive:ecdh-p384",
    "ecdsa-p256-sign": "sign:ecdsa-p256",
    "ecdsa-p256-verify": "verify:ecdsa-p256",
    "ecdsa-p384-sign": "sign:ecdsa-p384",
    "ecdsa-p384-verify": "verify:ecdsa-p384",
    "rsa-2048-sign": "sign:rsa-2048",
    "rsa-2048-verify": "verify:rsa-2048",
    "ed25519-sign": "sign:ed25519",
    "ed25519-verify": "verify:ed25519",
    "x509-parse": "parse_cert",
    # post-quantum primitives counted on the device (the pqclean stack): ML-KEM as the hybrid
    # groups' KEM half, ML-DSA as a signature
    **{f"ml-kem-{k}-{o}": f"{o}:ml-kem-{k}" for k in (512, 768, 1024) for o in ("keygen", "encaps", "decaps")},
    **{f"ml-dsa-{k}-{o}": f"{o}:ml-dsa-{k}" for k in (44, 65) for o in ("sign", "verify")},
}
DEVICE_OPS.update(
    {"aes-128-gcm-1024": "aead:aes-128-gcm-1024", "chacha20-poly1305-1024": "aead:chacha20-poly1305-1024"}
)
DEVICE_GROUPS = {"x25519": "x25519", "p-256": "p-256", "p-384": "p-384"}


def device_row_handshake(lab: Mapping[str, Any]) -> str | None:
    """The what-if handshake a device row counts: TLS's external PSK mode is psk_dhe_ke (a key share
    with the PSK); DTLS 1.3, EDHOC and QUIC rows name the model's handshake themselves (None: one the
    model does not have)."""

    tls, mode = str(lab.get("tls")), str(lab.get("mode"))
    if tls in ("dtls1.3", "edhoc", "quic"):
        return mode if mode in HANDSHAKES[tls] else None
    if tls == "dtls1.2":  # DTLS 1.2's PSK is the plain PSK suite (the model's `psk`); CID rows are no model's
        return mode if mode in ("full", "resumed", "psk") else None
    return {"resumed": "resumed", "psk": "psk-dhe"}.get(mode, "full")


def device_row_protocols(lab: Mapping[str, Any]) -> tuple[str, ...]:
    """The what-if protocols whose client handshake a device row counts: a TLS 1.3 row with a client
    certificate is the handshake of HTTPS, MQTT and OpenVPN's control channel (all mutual TLS 1.3 in
    the model), one without it that of plain TLS 1.3 and of the JWT request (server-authenticated);
    a DTLS 1.2 row with a client certificate is CoAP's, without it plain DTLS 1.2's. The model's TLS
    1.2 is server-authenticated, so a mutual TLS 1.2 row serves none."""
    tls = str(lab.get("tls"))
    mtls = lab.get("client_cert", "none") not in ("none", None)
    if tls in ("edhoc", "quic"):  # counted as their own protocols (measure/edhoc_device.py, quic_device.py)
        return (tls,)
    if tls == "dtls1.3":  # the model's DTLS 1.3 authenticates both sides, as measured
        return ("dtls1.3",) if mtls else ()
    if tls.startswith("dtls"):
        return ("coap",) if mtls else ("dtls1.2",)
    if tls == "1.2":
        return () if mtls else ("tls1.2",)
    return ("https", "mqtt", "openvpn") if mtls else ("tls1.3", "jwt")
