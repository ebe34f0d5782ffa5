"""The user's own server (`--connect HOST:PORT` of `secperf handshake` and `secperf connect`): where
it is, how to verify it (`--ca`, `--servername`) and which client certificate to show it
(`--client-cert`, `--client-key`: a PEM file or a pkcs11: URI). Checked once, with errors that name
the option."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from ..core.errors import InputError
from ..core.files import read_input


@dataclass(frozen=True)
class Target:
    host: str  # as given (the default server name)
    addr: str  # the address dialed (HOST resolved, IPv4)
    port: int
    ca: Path | None = None  # None: the server's certificate is not verified (said in the labels)
    servername: str | None = None
    client_cert: Path | None = None
    client_key: str | None = None  # a PEM file or a pkcs11: URI

    @property
    def name(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def sni(self) -> str:
        return self.servername or self.host

    def probe_args(self) -> list[str]:
        """secperf-probe client options for this target (address, verification, client certificate)."""
        a = ["--host", self.addr, "--port", str(self.port), "--servername", self.sni]
        if self.ca:
            a += ["--ca", str(self.ca)]
        if self.client_cert:
            a += ["--cert", str(self.client_cert), "--key", str(self.client_key)]
        return a

    def labels(self) -> dict[str, Any]:
        return {
            "target": self.name,
            "target_addr": self.addr,
            "servername": self.sni,
            "server_verified": self.ca is not None,
            "client_certificate": str(self.client_cert or "") or None,
        }


HTTP_GET_OVERHEAD = len("GET / HTTP/1.1\r\nHost: \r\n\r\n")


def request_bytes(wanted: int, host_header: str) -> int:
    """The size of the probe's HTTP GET: `wanted`, or more when the Host header needs it (the probe
    refuses a request too small for its Host line: any --servername over 14 characters failed)."""
    return max(wanted, HTTP_GET_OVERHEAD + len(host_header.encode("utf-8")))


MAX_NAME = 253  # a DNS name's longest text form (RFC 1035: 255 octets on the wire)


def check_server_name(name: str, option: str, given: str | None = None) -> None:
    """A host or server name (SNI) as the wire carries it: at most 253 characters of letters, digits,
    '-', '.', '_' (and ':' of an IPv6 address), labels of at most 63; a newline, a space or a
    control character is refused here (exit 2) instead of failing the measurement (exit 1)."""
    shown = repr(given if given is not None else name)
    shown = shown if len(shown) <= 80 else shown[:60] + f"... ({len(given or name):,} characters)"
    if len(name) > MAX_NAME:
        raise InputError(
            f"{option} {shown}: a server name of {len(name):,} characters; a DNS name has at most {MAX_NAME}"
        )
    bad = sorted({c for c in name if not (c.isascii() and (c.isalnum() or c in "-._:"))})
    if bad:
        raise InputError(
            f"{option} {shown}: {', '.join(repr(c) for c in bad[:5])} cannot be in a server name "
            f"(letters, digits, '-', '.', '_' only; an internationalised name in its xn-- form)"
        )
    if ":" not in name and any(len(label) > 63 for label in name.split(".")):
        raise InputError(f"{option} {shown}: a label longer than 63 characters; a DNS label has at most 63")


def parse_target(
    connect: str,
    ca: str | None = None,
    servername: str | None = None,
    client_cert: str | None = None,
    client_key: str | None = None,
    option: str = "--connect",
) -> Target:
    """--connect HOST:PORT (IPv6 as [ADDR]:PORT) and its companions; InputError naming the option
    (`option`: --connect, or --target of `server` and `fleet --replay`)."""
    text = (connect or "").strip()
    host, sep, port_s = text.rpartition(":")
    host = host.strip("[]")
    if host:
        check_server_name(host, option, connect)
    if servername is not None:
        check_server_name(servername, "--servername")
    # isascii: '²'.isdigit() is True but int('²') fails; a port is ASCII digits only
    if not sep or not host or not (port_s.isascii() and port_s.isdigit()) or not 0 < int(port_s) < 65536:
        raise InputError(
            f"{option} {connect!r}: give HOST:PORT with a port between 1 and 65535, e.g. {option} 127.0.0.1:8443"
        )
    try:
        infos = socket.getaddrinfo(host, int(port_s), type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise InputError(f"{option} {connect!r}: cannot resolve {host!r} ({exc})") from None
    v4 = [i[4][0] for i in infos if i[0] == socket.AF_INET]
    if not v4:
        raise InputError(f"{option} {connect!r}: {host!r} has no IPv4 address (the probe dials IPv4)")
    for opt, path in (("--ca", ca), ("--client-cert", client_cert)):
        if path is not None and not Path(path).exists():
            raise InputError(f"{opt} {path}: no such file")
    if (client_cert is None) != (client_key is None):
        raise InputError("--client-cert and --client-key go together: give both (or neither)")
    for opt, path in (("--ca", ca), ("--client-cert", client_cert)):
        if path is not None:
            _pem_certificates(opt, Path(path))
    if client_key is not None and not client_key.startswith("pkcs11:") and not Path(client_key).exists():
        raise InputError(f"--client-key {client_key}: no such file (give a PEM key file or a pkcs11: URI)")
    if client_cert is not None and client_key is not None and not client_key.startswith("pkcs11:"):
        head = read_input(client_key, "pem", f"--client-key {client_key}")
        if b"PRIVATE KEY-----" not in head:
            raise InputError(
                f"--client-key {client_key}: not a PEM private key (no '-----BEGIN ... PRIVATE KEY-----'); "
                "give a PEM key file or a pkcs11: URI"
            )
        _key_matches_certificate(client_cert, client_key, head)
    if servername is not None and not servername.strip():
        raise InputError("--servername: give a name (the server certificate's DNS name)")
    return Target(
        host=host,
        addr=v4[0],
        port=int(port_s),
        ca=Path(ca).resolve() if ca else None,
        servername=servername,
        client_cert=Path(client_cert).resolve() if client_cert else None,
        client_key=client_key
        if client_key is None or client_key.startswith("pkcs11:")
        else str(Path(client_key).resolve()),
    )


def _pem_certificates(opt: str, path: Path) -> None:
    """The file holds at least one PEM certificate, else an InputError naming the option."""

    pem = read_input(path, "pem", f"{opt} {path}")  # its own errors name the limit; not caught below
    try:
        certs = x509.load_pem_x509_certificates(pem)
    except (ValueError, OSError):
        raise InputError(
            f"{opt} {path}: not a PEM certificate file (no readable '-----BEGIN CERTIFICATE-----' "
            "block); give the certificate(s) in PEM"
        ) from None
    if not certs:
        raise InputError(f"{opt} {path}: holds no PEM certificate")


def _key_matches_certificate(cert_path: str, key_path: str, key_pem: bytes) -> None:
    """A client key that is not the certificate's is said now (exit 2), not as a failed handshake
    per connection (exit 1). An encrypted key cannot be checked here and is left to the probe."""

    try:
        key = serialization.load_pem_private_key(key_pem, None)
        cert = x509.load_pem_x509_certificates(read_input(cert_path, "pem", f"--client-cert {cert_path}"))[0]
    except (TypeError, ValueError, IndexError):
        return  # encrypted or unusual: the probe says what it makes of it
    fmt = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    if key.public_key().public_bytes(*fmt) != cert.public_key().public_bytes(*fmt):
        raise InputError(
            f"--client-key {key_path}: is not the key of --client-cert {cert_path} (their public keys "
            f"differ); give the key the certificate was issued for"
        )
