"""The JWT-verifying endpoint (secperf.lab.jwt_server, PyJWT underneath): every token secperf signs
verifies (ES256 and RS256, in software and through the PKCS#11 token), and what it must refuse is
refused with its reason, over HTTP with status 401."""

import base64
import http.client
import json
import ssl
import time

import jwt as pyjwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from secperf.core.errors import InputError
from secperf.lab.jwt_server import TokenRejected, verify_jwt
from secperf.measure import jwt as J


def _b64(obj) -> str:
    raw = obj if isinstance(obj, bytes) else json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@pytest.fixture(scope="module")
def ec_key():
    return ec.generate_private_key(ec.SECP256R1())


@pytest.fixture(scope="module")
def rsa_key():
    return rsa.generate_private_key(65537, 2048)


def _token(key, claims=None, alg=None):
    alg = alg or ("ES256" if isinstance(key, ec.EllipticCurvePrivateKey) else "RS256")
    now = int(time.time())
    return pyjwt.encode(
        {"sub": "dev", "iat": now, "nbf": now - 5, "exp": now + 60, **(claims or {})}, key, algorithm=alg
    )


@pytest.mark.parametrize("kind", ["ecdsa-p256", "rsa-2048", "rsa-1024"])
def test_software_signed_tokens_of_every_jwt_key_type_verify(kind):
    key = (
        ec.generate_private_key(ec.SECP256R1())
        if kind.startswith("ecdsa")
        else rsa.generate_private_key(65537, int(kind.split("-")[1]))
    )
    alg, sign = J.software_signer(key)
    token = J.make_jwt(alg, sign, "secperf-device", 60)
    other = ec.generate_private_key(ec.SECP256R1()).public_key()
    claims = verify_jwt(token, [other, key.public_key()])  # the device key among others
    assert claims["sub"] == "secperf-device"
    assert json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))["alg"] == alg


def test_tokens_signed_by_the_pkcs11_token_verify(tmp_path):
    """The token's keys sign as the signer worker does (J.token_signer); the endpoint gets the key's
    certificate, as run_jwt passes it."""
    import pkcs11
    from pkcs11 import ObjectClass

    from secperf.lab.jwt_server import load_public
    from secperf.lab.pki import LabPKI
    from secperf.lab.token import LabToken

    token = LabToken(tmp_path / "token", pki=LabPKI(tmp_path / "pki").ensure()).ensure()
    keys = [k for k in token.keys() if k["key_type"] in ("ecdsa-p256", "rsa-2048", "rsa-1024")]
    assert {k["key_type"] for k in keys} >= {"ecdsa-p256", "rsa-2048"}
    pubs = [load_public(k["cert_path"]) for k in keys]
    with token.login() as session:
        for k in keys:
            priv = session.get_key(object_class=ObjectClass.PRIVATE_KEY, label=k["label"])
            alg, sign = J.token_signer(priv, k["key_type"], pkcs11)
            assert alg == ("ES256" if k["key_type"].startswith("ecdsa") else "RS256")
            assert verify_jwt(J.make_jwt(alg, sign, "tok", 60), pubs)["sub"] == "tok", k["key_type"]


@pytest.mark.parametrize(
    "case,reason",
    [
        ("expired", "token expired"),
        ("not_yet", "token not yet valid"),
        ("tampered", "signature not valid for any device key (alg ES256)"),
        ("other_key", "signature not valid for any device key (alg ES256)"),
        ("alg_none", "signature not valid for any device key (alg none)"),
        ("hs256_with_public_pem", "signature not valid for any device key (alg HS256)"),
        ("rs256_header_on_ec_key", "signature not valid for any device key (alg RS256)"),
        ("garbage", "malformed token"),
        ("two_parts", "malformed token"),
        ("exp_not_a_number", "malformed token"),
    ],
)
def test_bad_tokens_are_rejected_with_their_reason(case, reason, ec_key, rsa_key):
    keys = [ec_key.public_key()]
    now = int(time.time())
    if case == "expired":
        token = _token(ec_key, {"exp": now - 1})
    elif case == "not_yet":
        token = _token(ec_key, {"nbf": now + 30})
    elif case == "tampered":
        h, _p, s = _token(ec_key).split(".")
        token = f"{h}.{_b64({'sub': 'admin', 'exp': now + 60})}.{s}"
    elif case == "other_key":
        token = _token(ec.generate_private_key(ec.SECP256R1()))
    elif case == "alg_none":
        token = f"{_b64({'alg': 'none', 'typ': 'JWT'})}.{_b64({'sub': 'dev'})}."
    elif case == "hs256_with_public_pem":  # the public key's PEM as an HMAC secret (algorithm confusion)
        pem = rsa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        import hashlib
        import hmac

        si = f"{_b64({'alg': 'HS256', 'typ': 'JWT'})}.{_b64({'sub': 'dev'})}"
        token = f"{si}.{_b64(hmac.new(pem, si.encode(), hashlib.sha256).digest())}"
        keys = [rsa_key.public_key()]
    elif case == "rs256_header_on_ec_key":
        token = _token(rsa_key)
    elif case == "garbage":
        token = "not-a-token"
    elif case == "two_parts":
        token = ".".join(_token(ec_key).split(".")[:2])
    else:
        token = _token(ec_key, {"exp": "tomorrow"})
    with pytest.raises(TokenRejected) as err:
        verify_jwt(token, keys)
    assert str(err.value).startswith(reason), str(err.value)
    assert isinstance(err.value, InputError)


def test_claims_the_endpoint_never_checked_still_pass(ec_key):
    """iat a little ahead of the verifier (a token's iat is the expected end of its signature), an
    audience, an issuer: accepted, as before PyJWT."""
    now = int(time.time())
    claims = verify_jwt(_token(ec_key, {"iat": now + 3, "aud": "someone", "iss": "x"}), [ec_key.public_key()])
    assert claims["aud"] == "someone"


def test_an_explicit_clock_judges_exp_and_nbf(ec_key):
    token = _token(ec_key, {"nbf": 1000, "exp": 2000})
    assert verify_jwt(token, [ec_key.public_key()], now=1000)["exp"] == 2000
    assert verify_jwt(token, [ec_key.public_key()], now=1999.5)["exp"] == 2000
    with pytest.raises(TokenRejected, match="token expired"):
        verify_jwt(token, [ec_key.public_key()], now=2000)
    with pytest.raises(TokenRejected, match="token not yet valid"):
        verify_jwt(token, [ec_key.public_key()], now=999.9)
    with pytest.raises(TokenRejected, match="signature not valid"):  # the clock does not skip the signature
        verify_jwt(token, [ec.generate_private_key(ec.SECP256R1()).public_key()], now=1500)


def test_the_endpoint_answers_200_or_401_with_the_reason(tmp_path, ec_key):
    from secperf.lab.pki import LabPKI
    from secperf.lab.services import JwtServer

    pki = LabPKI(tmp_path / "pki").ensure()
    pub = tmp_path / "device.pem"
    pub.write_bytes(
        ec_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    certs = pki.server("ecdsa-p256", 1)
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    with JwtServer(certs, [pub], workdir=tmp_path / "srv") as srv:
        status, body = J.request(srv.port, ctx, _token(ec_key))
        assert (status, json.loads(body)) == (200, {"ok": True, "sub": "dev"})
        status, body = J.request(srv.port, ctx, _token(ec_key, {"exp": int(time.time()) - 10}))
        assert (status, json.loads(body)) == (401, {"ok": False, "reason": "token expired"})
        status, body = J.request(srv.port, ctx, "x.y")
        assert (status, json.loads(body)["reason"]) == (401, "malformed token")
        conn = http.client.HTTPSConnection(J.SERVER_NAME, srv.port, context=ctx, timeout=10)
        try:
            conn.request("GET", "/data")  # no Authorization header
            resp = conn.getresponse()
            assert (resp.status, json.loads(resp.read())["reason"]) == (401, "no bearer token")
        finally:
            conn.close()
