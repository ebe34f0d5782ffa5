"""The keys the lab token holds (KeySpec, KEY_SPECS) and the DER a PKCS#11 object needs or gives:
a certificate's serial number, an EC point, a public key read back from the token."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec, rsa

# DER of the ECParameters namedCurve OIDs (CKA_EC_PARAMS)
EC_PARAMS = {
    "secp256r1": bytes.fromhex("06082a8648ce3d030107"),  # 1.2.840.10045.3.1.7
    "brainpoolP256r1": bytes.fromhex("06092b2403030208010107"),  # 1.3.36.3.3.2.8.1.1.7
}
_CURVES = {"secp256r1": ec.SECP256R1, "brainpoolP256r1": ec.BrainpoolP256R1}


@dataclass(frozen=True)
class KeySpec:
    label: str
    key_type: str  # secperf's key-type name
    id: bytes  # CKA_ID shared by the private key, public key and certificate
    curve: str | None  # EC curve name, None for RSA
    rsa_bits: int = 0


KEY_SPECS: tuple[KeySpec, ...] = (
    KeySpec("device-p256", "ecdsa-p256", b"\x01", "secp256r1"),
    KeySpec("device-bp256", "ecdsa-brainpoolp256r1", b"\x02", "brainpoolP256r1"),
    KeySpec("device-rsa2048", "rsa-2048", b"\x03", None, 2048),
    KeySpec("device-rsa1024", "rsa-1024", b"\x04", None, 1024),  # the 1998 RSA card's key size (study S3)
)


def der_integer(n: int) -> bytes:
    body = n.to_bytes(max(1, (n.bit_length() + 8) // 8), "big")  # room for the sign bit
    if len(body) < 128:
        return bytes([0x02, len(body)]) + body
    ln = len(body).to_bytes((len(body).bit_length() + 7) // 8, "big")
    return bytes([0x02, 0x80 | len(ln)]) + ln + body


def _unwrap_octet_string(b: bytes) -> bytes:
    """CKA_EC_POINT is a DER OCTET STRING holding the point (some modules give the raw point)."""
    if len(b) > 2 and b[0] == 0x04 and b[1] & 0x80 == 0 and b[1] == len(b) - 2 and b[2] in (2, 3, 4):
        return b[2:]
    if len(b) > 3 and b[0] == 0x04 and b[1] == 0x81 and b[2] == len(b) - 3:
        return b[3:]
    return b


def public_key_of(pub: Any, spec: KeySpec) -> ec.EllipticCurvePublicKey | rsa.RSAPublicKey:
    """The public half of a token key (``pub``: a python-pkcs11 public key object, untyped)."""
    from pkcs11 import Attribute  # reason: guarded: python-pkcs11 may be missing

    if spec.curve:
        point = _unwrap_octet_string(bytes(pub[Attribute.EC_POINT]))
        return ec.EllipticCurvePublicKey.from_encoded_point(_CURVES[spec.curve](), point)
    n = int.from_bytes(pub[Attribute.MODULUS], "big")
    e = int.from_bytes(pub[Attribute.PUBLIC_EXPONENT], "big")
    return rsa.RSAPublicNumbers(e, n).public_key()
