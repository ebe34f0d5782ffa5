"""A small HTTPS endpoint that accepts a request only with a valid JWT (ES256 or RS256) signed by
one of the configured device keys: the verifying server of `secperf jwt`. Run by secperf as its
own process on an ephemeral port on loopback (or, with --bind, on the server side of an emulated
link, run inside its namespace):

  python -m secperf.lab.jwt_server --cert CHAIN --key KEY --pubkey DEVICE.pem [--pubkey ...] [--bind ADDR]

It prints {"type":"listening","port":P} once ready, checks signature, `exp` and `nbf`, answers
200 with a small JSON body, or 401 with the reason."""

from __future__ import annotations

import argparse
import base64
import json
import socket
import ssl
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature


def b64url_decode(s: str) -> bytes:
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def verify_jwt(token: str, keys: list, now: float | None = None) -> dict:
    """The claims of a valid token; ValueError naming what is wrong otherwise."""
    try:
        h64, p64, s64 = token.split(".")
        header, claims, sig = json.loads(b64url_decode(h64)), json.loads(b64url_decode(p64)), b64url_decode(s64)
    except Exception:
        raise ValueError("malformed token") from None
    signed = f"{h64}.{p64}".encode()
    alg = header.get("alg")
    ok = False
    for k in keys:
        try:
            if alg == "ES256" and isinstance(k, ec.EllipticCurvePublicKey) and len(sig) == 64:
                der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
                k.verify(der, signed, ec.ECDSA(hashes.SHA256()))
            elif alg == "RS256" and isinstance(k, rsa.RSAPublicKey):
                k.verify(sig, signed, padding.PKCS1v15(), hashes.SHA256())
            else:
                continue
            ok = True
            break
        except InvalidSignature:
            continue
    if not ok:
        raise ValueError(f"signature not valid for any device key (alg {alg})")
    now = time.time() if now is None else now
    if "exp" in claims and now >= claims["exp"]:
        raise ValueError("token expired")
    if "nbf" in claims and now < claims["nbf"]:
        raise ValueError("token not yet valid")
    return claims


def load_public(path: str):
    """A public key from a PEM public key or certificate file."""
    data = open(path, "rb").read()
    if b"BEGIN CERTIFICATE" in data:
        return x509.load_pem_x509_certificate(data).public_key()
    return serialization.load_pem_public_key(data)


def main(argv=None) -> int:
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

        def log_message(self, *args):  # no access log on stderr
            pass

        def setup(self):
            super().setup()
            # headers and body go out in two writes: without TCP_NODELAY, Nagle + delayed ACK add ~40 ms
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_GET(self):
            auth = self.headers.get("Authorization", "")
            try:
                if not auth.startswith("Bearer "):
                    raise ValueError("no bearer token")
                claims = verify_jwt(auth[7:], keys)
                code, body = 200, json.dumps({"ok": True, "sub": claims.get("sub")}).encode()
            except ValueError as exc:
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
