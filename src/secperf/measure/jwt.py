"""`secperf jwt`: device authentication with an ES256/RS256 JWT instead of mutual TLS (study S2).
A token is signed in software or by the PKCS#11 token (behind a secure-element profile), then
used for HTTPS requests to a real endpoint that verifies it (secperf.lab.jwt_server):

- fresh: every request signs a new JWT, then makes the HTTPS request (new TLS connection);
- cached: the JWT is signed once and reused for every request (within its lifetime).

The timed section runs from before signing (fresh) / before connecting (cached) to the response
body being received; per iteration the signing and request parts are recorded separately.
Signatures per hour follow from the lifetime: a cached token costs one signature per lifetime.

Each request dials the endpoint's address (127.0.0.1, or the server side of an emulated link) and
checks its certificate for the name ``localhost``; over a link the client's socket is made in the
device namespace (`make_socket`, or the worker runs there), so a request costs the TCP connect,
the TLS 1.3 handshake and the HTTP exchange: three round trips of the link.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import math
import socket
import ssl
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from ..core.errors import MeasurementError


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signing_input(alg: str, sub: str, lifetime_s: int, now: float | None = None) -> bytes:
    """Header and claims for a token issued at `now` (the expected end of its signature): exp rounds
    up, so a token is valid for at least lifetime_s from then (int() cut up to a second off it)."""
    now = time.time() if now is None else now
    header = {"alg": alg, "typ": "JWT"}
    claims = {"sub": sub, "iat": int(now), "nbf": int(now) - 5, "exp": math.ceil(now) + lifetime_s}
    return (
        f"{b64url(json.dumps(header, separators=(',', ':')).encode())}."
        f"{b64url(json.dumps(claims, separators=(',', ':')).encode())}".encode()
    )


Sign = Callable[[bytes], bytes]  # signing input -> JWS signature
MakeSocket = Callable[[], socket.socket]  # a TCP socket made elsewhere (another network namespace)
Emit = Callable[[dict[str, Any]], None]


def software_signer(private_key: PrivateKeyTypes) -> tuple[str, Sign]:
    """sign(signing_input) -> JWS signature bytes (ES256: raw r||s, RS256: PKCS#1 v1.5)."""
    if isinstance(private_key, ec.EllipticCurvePrivateKey):

        def sign(data: bytes) -> bytes:
            r, s = decode_dss_signature(private_key.sign(data, ec.ECDSA(hashes.SHA256())))
            return r.to_bytes(32, "big") + s.to_bytes(32, "big")

        return "ES256", sign
    if isinstance(private_key, rsa.RSAPrivateKey):
        return "RS256", lambda data: private_key.sign(data, padding.PKCS1v15(), hashes.SHA256())
    raise MeasurementError(f"a JWT is signed with an EC or RSA key, not a {type(private_key).__name__}")


def token_signer(key: Any, key_type: str, pkcs11: ModuleType) -> tuple[str, Sign]:  # key: a python-pkcs11 PrivateKey
    """Signing with a PKCS#11 key: CKM_ECDSA on a host-side SHA-256 digest gives raw r||s."""
    if key_type.startswith("ecdsa"):
        return "ES256", lambda data: key.sign(hashlib.sha256(data).digest(), mechanism=pkcs11.Mechanism.ECDSA)
    return "RS256", lambda data: key.sign(data, mechanism=pkcs11.Mechanism.SHA256_RSA_PKCS)


_LAST_SIGN_S: dict[int, float] = {}  # per signer: how long its previous signature took


def make_jwt(alg: str, sign: Sign, sub: str, lifetime_s: int) -> str:
    """A signed token whose validity starts at the end of its signature, not before it: a secure
    element taking 0.5 s per signature issued `--lifetime 1` tokens that arrived expired. The end is
    the start plus the signer's previous signature time (the claims are signed, so they are fixed
    before the signature)."""
    t0 = time.time()
    si = signing_input(alg, sub, lifetime_s, now=t0 + _LAST_SIGN_S.get(id(sign), 0.0))
    sig = sign(si)
    _LAST_SIGN_S[id(sign)] = max(0.0, time.time() - t0)
    return f"{si.decode()}.{b64url(sig)}"


SERVER_NAME = "localhost"  # the name in the lab server certificate


class _Connection(http.client.HTTPSConnection):
    """HTTPS to `addr`:port with SNI, Host and certificate name `localhost`; the TCP socket comes
    from make_socket() when given (a socket made in another network namespace)."""

    def __init__(
        self, addr: str, port: int, ctx: ssl.SSLContext, timeout_s: float, make_socket: MakeSocket | None = None
    ) -> None:
        super().__init__(SERVER_NAME, port, context=ctx, timeout=timeout_s)
        self._addr, self._make_socket = addr, make_socket
        self._create_connection = self._dial

    def _dial(
        self, address: tuple[str, int], timeout: float | None, source_address: tuple[str, int] | None = None
    ) -> socket.socket:
        if self._make_socket is None:
            return socket.create_connection((self._addr, address[1]), timeout, source_address)
        sock = self._make_socket()
        try:
            sock.settimeout(timeout)
            sock.connect((self._addr, address[1]))
        except BaseException:
            sock.close()
            raise
        return sock


def request(
    port: int,
    ctx: ssl.SSLContext,
    token: str,
    timeout_s: float = 10.0,
    addr: str = "127.0.0.1",
    make_socket: MakeSocket | None = None,
) -> tuple[int, bytes]:
    """One GET /data with the bearer token on a new connection (TCP, TLS, request, response)."""
    conn = _Connection(addr, port, ctx, timeout_s, make_socket)
    try:
        conn.request("GET", "/data", headers={"Authorization": f"Bearer {token}"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def jwt_loop(
    alg: str,
    sign: Sign,
    *,
    fresh: bool,
    port: int,
    ca_file: str,
    n: int,
    warmup: int,
    lifetime_s: int,
    emit: Emit,
    addr: str = "127.0.0.1",
    timeout_s: float = 10.0,
    make_socket: MakeSocket | None = None,
) -> None:
    """The measured loop, shared by the software path and the token worker; emit(dict) per iteration."""
    ctx = ssl.create_default_context(cafile=ca_file)
    cached = None if fresh else make_jwt(alg, sign, "secperf-device", lifetime_s)
    for i in range(warmup + n):
        t0 = time.monotonic_ns()
        try:
            token = make_jwt(alg, sign, "secperf-device", lifetime_s) if cached is None else cached
            t1 = time.monotonic_ns()
            status, body = request(port, ctx, token, timeout_s, addr, make_socket)
            t2 = time.monotonic_ns()
            ok = status == 200
            emit(
                {
                    "type": "iter",
                    "i": i,
                    "warmup": i < warmup,
                    "ok": ok,
                    "start_ns": t0,
                    "end_ns": t2,
                    "sign_ns": t1 - t0,
                    "request_ns": t2 - t1,
                    **({} if ok else {"reason": f"HTTP {status}: {body[:200].decode(errors='replace')}"}),
                }
            )
        except Exception as exc:
            emit(
                {
                    "type": "iter",
                    "i": i,
                    "warmup": i < warmup,
                    "ok": False,
                    "start_ns": t0,
                    "end_ns": time.monotonic_ns(),
                    "reason": f"{type(exc).__name__}: {exc}",
                }
            )
