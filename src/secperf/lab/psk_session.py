"""A TLS 1.3 external PSK for `openssl s_server` without the key on its command line.

Decision: `openssl s_server -psk HEX` puts the key on the process list (/proc/PID/cmdline, readable by
every user) for the length of a run, and OpenSSL 3.0's apps read -psk from nowhere else (no argument
files, no interactive `openssl` prompt since 3.0). s_server's `-psk_session FILE` reads a PEM
SSL_SESSION instead and hands it to a client that offers `-psk_identity` (psk_find_session_cb): a
session whose master key is the PSK and whose suite is TLS_AES_128_GCM_SHA256 is exactly the external
PSK that `-psk` builds in memory (the same suite, the same hash). So secperf writes that session, 0600
in a private directory, and passes its path. It serves TLS 1.3 only; a TLS 1.2/DTLS 1.2 PSK suite
needs -psk, so those rows run against a server that reads a key file (the wolfSSL pair server) or are
refused (SServer.psk_args).

The DER is SSL_SESSION_ASN1 of OpenSSL's ssl/ssl_asn1.c: version 1, ssl_version 0x0304, the cipher's
two bytes, an empty session id, the master key, [1] the time and [2] the timeout."""

from __future__ import annotations

import base64
import time
from pathlib import Path

from ..core.errors import MeasurementError
from ..core.paths import private_dir, secperf_home, write_private

SUITES = {
    "TLS_AES_128_GCM_SHA256": b"\x13\x01",
    "TLS_AES_256_GCM_SHA384": b"\x13\x02",
    "TLS_CHACHA20_POLY1305_SHA256": b"\x13\x03",
}


def _tlv(tag: int, body: bytes) -> bytes:
    n = len(body)
    if n < 0x80:
        return bytes([tag, n]) + body
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(size)]) + size + body


def _int(v: int) -> bytes:
    return _tlv(0x02, v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big", signed=True))


def session_pem(key: bytes, suite: str = "TLS_AES_128_GCM_SHA256", now: int | None = None) -> bytes:
    """The PEM SSL_SESSION that `s_server -psk_session` reads as the external PSK `key`."""
    if not 1 <= len(key) <= 64:
        raise MeasurementError(f"a PSK of {len(key)} bytes: 1 to 64 here")
    body = (
        _int(1)
        + _int(0x0304)
        + _tlv(0x04, SUITES[suite])
        + _tlv(0x04, b"")
        + _tlv(0x04, key)
        + _tlv(0xA1, _int(int(time.time() if now is None else now)))
        + _tlv(0xA2, _int(86400 * 365))
    )
    b64 = base64.b64encode(_tlv(0x30, body)).decode()
    lines = [b64[i : i + 64] for i in range(0, len(b64), 64)]
    return (
        "-----BEGIN SSL SESSION PARAMETERS-----\n" + "\n".join(lines) + "\n-----END SSL SESSION PARAMETERS-----\n"
    ).encode()


def write_session(directory: Path, key: bytes, suite: str = "TLS_AES_128_GCM_SHA256") -> Path:
    """The session file (0600, in a private directory under `directory`); its path."""

    path = private_dir(Path(directory) / "psk") / "psk-session.pem"
    write_private(path, session_pem(key, suite))
    return path


def hex_file(name: str, key: bytes) -> Path:
    """`key` as hex in a 0600 file of a private directory under SECPERF_HOME (the probe's --psk-file):
    a PSK reaches secperf's own clients and servers through a file, never their command lines."""

    path = private_dir(secperf_home() / "psk") / f"{name}.hex"
    text = key.hex().encode() + b"\n"
    try:
        if path.read_bytes() == text and (path.stat().st_mode & 0o077) == 0:
            return path
    except OSError:
        pass
    write_private(path, text)
    return path
