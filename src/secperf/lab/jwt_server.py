"""A small HTTPS endpoint that accepts a request only with a valid JWT (ES256 or RS256) signed by
one of the configured device keys (verified with PyJWT): the verifying server of `secperf jwt`. Run
by secperf as its own process on an ephemeral port on loopback (or, with --bind, on the server side
of an emulated link, run inside its namespace):

  python -m secperf.lab.jwt_server --cert CHAIN --key KEY --pubkey DEVICE.pem [--pubkey ...] [--bind ADDR]

It prints {"type":"listening","port":P} once ready, checks signature, `exp` and `nbf`, answers
200 with a small JSON body, or 401 with the reason."""

from __future__ import annotations

import argparse
import json
import socket
import ssl
import sys
import warnings
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, cast

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes
from jwt.types import Options

from secperf.core.errors import InputError


class TokenRejected(InputError):
    """A request's token is not accepted; the endpoint answers 401 with this message as the reason."""


# the JWS algorithms secperf signs with (measure/jwt.py: software and PKCS#11 token signers), per
# device-key type; a token is checked only against keys of its algorithm's type, so an RSA key is
# never used as an HMAC secret (no algorithm confusion) and "none" is never accepted
_KEY_ALGORITHMS: tuple[tuple[type, str], ...] = ((ec.EllipticCurvePublicKey, "ES256"), (rsa.RSAPublicKey, "RS256"))

# what PyJWT checks beyond the signature: exp and nbf with no leeway, as the endpoint always did;
# not iat (a token's iat is the expected end of its signature, which can be a little ahead of the
# verifier's clock), aud or iss (secperf's tokens carry neither)
_OPTIONS: Options = {"verify_iat": False, "verify_aud": False, "verify_iss": False, "require": []}
_NO_CLOCK: Options = {**_OPTIONS, "verify_exp": False, "verify_nbf": False}


def _algorithm(key: object) -> str | None:
    return next((alg for kind, alg in _KEY_ALGORITHMS if isinstance(key, kind)), None)


def verify_jwt(token: str, keys: Sequence[object], now: float | None = None) -> dict[str, Any]:
    """The claims of a token signed (ES256 or RS256) by one of `keys`, not expired and not before
    its `nbf`; TokenRejected naming what is wrong otherwise. `now` (seconds since the epoch) checks
    the times against another clock than the wall clock (PyJWT has no clock to pass): PyJWT then
    verifies the signature and the same two comparisons are made here."""
    try:
        alg = jwt.get_unverified_header(token).get("alg")
    except jwt.InvalidTokenError:
        raise TokenRejected("malformed token") from None
    claims: dict[str, Any] | None = None
    for key in keys:
        key_alg = _algorithm(key)
        if key_alg is None or key_alg != alg:
            continue
        try:
            with warnings.catch_warnings():
                # an RSA-1024 device key is a choice being measured, not a mistake to warn about per request
                warnings.simplefilter("ignore", jwt.warnings.InsecureKeyLengthWarning)
                # _algorithm names an algorithm only for a key of _KEY_ALGORITHMS' types
                signing_key = cast(ec.EllipticCurvePublicKey | rsa.RSAPublicKey, key)
                claims = jwt.decode(
                    token, signing_key, algorithms=[key_alg], options=_OPTIONS if now is None else _NO_CLOCK, leeway=0
                )
            break
        except jwt.InvalidSignatureError:
            continue
        except jwt.ExpiredSignatureError:
            raise TokenRejected("token expired") from None
        except jwt.ImmatureSignatureError:
            raise TokenRejected("token not yet valid") from None
        except jwt.InvalidTokenError as exc:  # not JSON, not base64url, a claim of the wrong type
            raise TokenRejected(f"malformed token: {exc}") from None
    if claims is None:
        raise TokenRejected(f"signature not valid for any device key (alg {alg})")
    if now is not None:  # PyJWT's comparisons (integer claims, no leeway) against the given clock
        if "exp" in claims and int(claims["exp"]) <= now:
            raise TokenRejected("token expired")
        if "nbf" in claims and int(claims["nbf"]) > now:
            raise TokenRejected("token not yet valid")
    return claims


def load_public(path: str) -> PublicKeyTypes:
    """A public key from a PEM public key or certificate file."""
    with open(path, "rb") as f:
        data = f.read()
    if b"BEGIN CERTIFICATE" in data:
        return x509.load_pem_x509_certificate(data).public_key()
    return serialization.load_pem_public_key(data)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--pubkey", action="append", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--bind", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    a = ap.parse_args(argv)
    keys = [load_public(p) for p in a.pubkey]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # no access log on stderr
            pass

        def setup(self) -> None:
            super().setup()
            # headers and body go out in two writes: without TCP_NODELAY, Nagle + delayed ACK add ~40 ms
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_GET(self) -> None:
            auth = self.headers.get("Authorization", "")
            try:
                if not auth.startswith("Bearer "):
                    raise TokenRejected("no bearer token")
                claims = verify_jwt(auth[7:], keys)
                code, body = 200, json.dumps({"ok": True, "sub": claims.get("sub")}).encode()
            except TokenRejected as exc:
                code, body = 401, json.dumps({"ok": False, "reason": str(exc)}).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    httpd = HTTPServer((a.bind, a.port), Handler)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    print(json.dumps({"type": "listening", "port": httpd.server_address[1]}), flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    sys.exit(main())
