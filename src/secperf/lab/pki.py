"""The lab PKI: CAs, server certificates (RSA-2048/3072/4096, ECDSA P-256/P-384, Ed25519) with
chains of depth 1–3, and client certificates for mutual TLS. Generated once under
$SECPERF_HOME/pki (directory 0700, private keys 0600) and reused; `fresh=True` rebuilds.

Each server key type has its own root CA and intermediates of the same key type, so that
"certificate type" experiments change every signature the client verifies, not only the leaf's.
Depth 1 = leaf signed by the root; depth 2 = root → intermediate → leaf; depth 3 = two
intermediates. Client certificates come from a separate client CA (ECDSA P-256).
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.asymmetric.types import CertificatePublicKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ..core.errors import InputError
from ..core.paths import private_dir, secperf_home, write_private

SERVER_KEY_TYPES = ("rsa-1024", "rsa-2048", "rsa-3072", "rsa-4096", "ecdsa-p256", "ecdsa-p384", "ed25519")
CLIENT_KEY_TYPES = ("ecdsa-p256", "rsa-2048", "rsa-1024")
MAX_DEPTH = 3
SERVER_NAME = "localhost"
NOT_BEFORE = _dt.datetime(2025, 1, 1, tzinfo=_dt.UTC)
NOT_AFTER = _dt.datetime(2035, 1, 1, tzinfo=_dt.UTC)


class PKIError(InputError):
    pass


# the private keys the lab makes (each can sign certificates)
LabKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey


class HasPublicKey(Protocol):
    """A certificate's subject: a private key, or a bare public key wrapped (a token key)."""

    def public_key(self) -> CertificatePublicKeyTypes: ...


@dataclass(frozen=True)
class CertSet:
    """Files for one endpoint: its certificate, private key, chain (leaf + intermediates) and the
    CA file a peer must trust."""

    cert: Path
    key: Path
    chain: Path
    ca: Path
    key_type: str
    depth: int


def _new_key(key_type: str) -> LabKey:
    if key_type.startswith("rsa-"):
        return rsa.generate_private_key(public_exponent=65537, key_size=int(key_type[4:]))
    if key_type == "ecdsa-p256":
        return ec.generate_private_key(ec.SECP256R1())
    if key_type == "ecdsa-p384":
        return ec.generate_private_key(ec.SECP384R1())
    if key_type == "ed25519":
        return ed25519.Ed25519PrivateKey.generate()
    raise PKIError(f"unknown key type {key_type!r}; known: {', '.join(SERVER_KEY_TYPES)}")


def _sig_hash(key: LabKey) -> hashes.SHA256 | hashes.SHA384 | None:
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return None
    if isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.key_size >= 384:
        return hashes.SHA384()
    return hashes.SHA256()


def _name(cn: str) -> x509.Name:
    return x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "secperf lab"), x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    )


def _issue(
    subject_key: HasPublicKey,
    subject_cn: str,
    issuer_key: LabKey,
    issuer_cn: str,
    *,
    ca: bool,
    path_len: int | None = None,
    server: bool = False,
    client: bool = False,
    serial: int = 1,
) -> x509.Certificate:
    b = (
        x509.CertificateBuilder()
        .subject_name(_name(subject_cn))
        .issuer_name(_name(issuer_cn))
        .public_key(subject_key.public_key())
        .serial_number(serial)
        .not_valid_before(NOT_BEFORE)
        .not_valid_after(NOT_AFTER)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=path_len), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(subject_key.public_key()), critical=False)
    )
    if ca:
        b = b.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    else:
        b = b.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=isinstance(subject_key, rsa.RSAPrivateKey),
                key_cert_sign=False,
                crl_sign=False,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + (
            [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
        )
        b = b.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    if server:
        b = b.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(SERVER_NAME), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
    return b.sign(issuer_key, _sig_hash(issuer_key))


def _pem_cert(c: x509.Certificate) -> bytes:
    return c.public_bytes(serialization.Encoding.PEM)


def _pem_key(k: LabKey) -> bytes:
    return k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


class _Pub:
    """Lets _issue take a bare public key (token keys have no private part here)."""

    def __init__(self, pk: CertificatePublicKeyTypes) -> None:
        self._pk = pk

    def public_key(self) -> CertificatePublicKeyTypes:
        return self._pk


class LabPKI:
    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root else secperf_home() / "pki"

    def ensure(self, fresh: bool = False) -> LabPKI:
        if fresh and self.root.exists():
            shutil.rmtree(self.root)
        private_dir(self.root)
        return self

    # --- server side ---------------------------------------------------------------------------
    def server(self, key_type: str = "rsa-2048", depth: int = 1) -> CertSet:
        if key_type not in SERVER_KEY_TYPES:
            raise PKIError(f"unknown server certificate type {key_type!r}; known: {', '.join(SERVER_KEY_TYPES)}")
        if not 1 <= depth <= MAX_DEPTH:
            raise PKIError(f"chain depth {depth} is outside 1..{MAX_DEPTH}")
        d = private_dir(self.root / key_type)
        cs = CertSet(
            cert=d / f"leaf-d{depth}.pem",
            key=d / f"leaf-d{depth}.key",
            chain=d / f"chain-d{depth}.pem",
            ca=d / "ca.pem",
            key_type=key_type,
            depth=depth,
        )
        if not all(p.exists() for p in (cs.cert, cs.key, cs.chain, cs.ca)):
            self._make_server_chain(d, key_type)
        return cs

    def _make_server_chain(self, d: Path, key_type: str) -> None:
        root_key = _new_key(key_type)
        root_cn = f"secperf lab root CA ({key_type})"
        root = _issue(root_key, root_cn, root_key, root_cn, ca=True, serial=1)
        ints = []  # intermediates: [(key, cert, cn)]
        issuer_key, issuer_cn = root_key, root_cn
        for i in range(1, MAX_DEPTH):
            k = _new_key(key_type)
            cn = f"secperf lab intermediate {i} ({key_type})"
            c = _issue(k, cn, issuer_key, issuer_cn, ca=True, path_len=None, serial=10 + i)
            ints.append((k, c, cn))
            issuer_key, issuer_cn = k, cn
        for depth in range(1, MAX_DEPTH + 1):
            leaf_key = _new_key(key_type)
            ik, icn = (root_key, root_cn) if depth == 1 else (ints[depth - 2][0], ints[depth - 2][2])
            leaf = _issue(leaf_key, SERVER_NAME, ik, icn, ca=False, server=True, serial=100 + depth)
            chain = [leaf] + [ints[j][1] for j in range(depth - 2, -1, -1)]
            write_private(d / f"leaf-d{depth}.key", _pem_key(leaf_key))
            (d / f"leaf-d{depth}.pem").write_bytes(_pem_cert(leaf))
            (d / f"chain-d{depth}.pem").write_bytes(b"".join(_pem_cert(c) for c in chain))
        (d / "ca.pem").write_bytes(_pem_cert(root))

    # --- client side ---------------------------------------------------------------------------
    def client(self, key_type: str = "ecdsa-p256") -> CertSet:
        if key_type not in CLIENT_KEY_TYPES:
            raise PKIError(f"unknown client certificate type {key_type!r}; known: {', '.join(CLIENT_KEY_TYPES)}")
        d = private_dir(self.root / "client")
        if not (d / "ca.pem").exists() or not (d / "ca.key").exists():
            k = _new_key("ecdsa-p256")
            cn = "secperf lab client CA"
            write_private(d / "ca.key", _pem_key(k))
            (d / "ca.pem").write_bytes(_pem_cert(_issue(k, cn, k, cn, ca=True, serial=1)))
        cs = CertSet(
            cert=d / f"{key_type}.pem",
            key=d / f"{key_type}.key",
            chain=d / f"{key_type}.pem",
            ca=d / "ca.pem",
            key_type=key_type,
            depth=1,
        )
        if not (cs.cert.exists() and cs.key.exists()):
            self.issue_client_cert(key_type, _new_key(key_type), cs.cert, cs.key)
        return cs

    def issue_client_cert(
        self,
        name: str,
        key: LabKey | None,
        cert_path: Path,
        key_path: Path | None = None,
        public_key: CertificatePublicKeyTypes | None = None,
    ) -> Path:
        """Issue a client certificate from the client CA (for a software key or, with public_key,
        a key living in a token)."""
        d = self.root / "client"
        if not (d / "ca.pem").exists():
            self.client()
        ca = x509.load_pem_x509_certificate((d / "ca.pem").read_bytes())
        ca_key = serialization.load_pem_private_key((d / "ca.key").read_bytes(), None)
        if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
            raise PKIError(
                f"{d / 'ca.key'} is not the client CA's ECDSA key: rebuild the lab PKI (LabPKI.ensure(fresh=True))"
            )
        ca_cn = ca.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
        subject: HasPublicKey
        if key is not None:
            subject = key
        elif public_key is not None:
            subject = _Pub(public_key)
        else:
            raise PKIError(f"client certificate {name!r}: give a key or a public key")
        serial = x509.random_serial_number()
        cert = _issue(
            subject,
            f"secperf lab device {name}",
            ca_key,
            ca_cn if isinstance(ca_cn, str) else ca_cn.decode(),
            ca=False,
            client=True,
            serial=serial,
        )
        cert_path.write_bytes(_pem_cert(cert))
        if key is not None and key_path is not None:
            write_private(key_path, _pem_key(key))
        return cert_path
