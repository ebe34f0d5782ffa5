"""The lab token: SoftHSM2 provisioned in a private directory, keys generated inside it, certificates
from the lab PKI matching the token keys, idempotent re-use, fresh rebuilds, clean failures and
no PIN anywhere it should not be.

SoftHSM2 and python-pkcs11 are installed by scripts/bootstrap: when missing these tests fail."""

import hashlib
import os
import stat
import subprocess
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from pkcs11 import Attribute, Mechanism, ObjectClass

from secperf.lab import token as T
from secperf.lab.pki import LabPKI
from secperf.lab.token import LabToken, TokenError

MESSAGE = bytes(range(32))
LABELS = ("device-p256", "device-bp256", "device-rsa2048", "device-rsa1024")


def _mode(p):
    return stat.S_IMODE(os.stat(p).st_mode)


def _spki(pk) -> bytes:
    return pk.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return LabPKI(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tok(tmp_path_factory, pki):
    return LabToken(tmp_path_factory.mktemp("lab") / "token", pki=pki).ensure()


def _secrets(t: LabToken) -> list[str]:
    return [t.pin_path.read_text().strip(), t.so_pin_path.read_text().strip()]


# --- layout --------------------------------------------------------------------------------------
def test_private_layout(tok):
    assert _mode(tok.root) == 0o700
    assert _mode(tok.tokens_dir) == 0o700
    assert _mode(tok.pin_path) == 0o600 and _mode(tok.so_pin_path) == 0o600
    user, so = _secrets(tok)
    # the user PIN fits libp11's pin-source file limit (clients read it from the file, not argv)
    assert len(user) == 24 <= T.PIN_MAX_FILE and len(so) == 32 and user != so
    int(user, 16), int(so, 16)
    conf = tok.conf_path.read_text()
    assert f"directories.tokendir = {tok.tokens_dir}\n" in conf
    assert "objectstore.backend = file" in conf and "log.level = ERROR" in conf
    assert tok.env() == {"SOFTHSM2_CONF": str(tok.conf_path)}
    assert tok.conf_path != "/etc/softhsm/softhsm2.conf"
    assert tok.module_path.name == "libsofthsm2.so" and tok.module_path.is_file()
    # the object store holds only owner-readable files
    for dirpath, _dirs, files in os.walk(tok.tokens_dir):
        assert _mode(dirpath) & 0o077 == 0
        for f in files:
            assert _mode(os.path.join(dirpath, f)) & 0o077 == 0
    # nothing left behind by the temp-dir-then-rename provisioning
    assert not [p for p in tok.root.parent.iterdir() if ".new-" in p.name or ".old-" in p.name]


def test_keys_listing_and_uris(tok):
    keys = tok.keys()
    assert [k["label"] for k in keys] == list(LABELS)
    assert [k["key_type"] for k in keys] == ["ecdsa-p256", "ecdsa-brainpoolp256r1", "rsa-2048", "rsa-1024"]
    assert [k["id_hex"] for k in keys] == ["01", "02", "03", "04"]
    for k in keys:
        assert k["uri"] == f"pkcs11:token=secperf;object={k['label']};type=private"
        assert os.path.isfile(k["cert_path"])
    assert tok.key("rsa-2048")["label"] == "device-rsa2048"
    pin = tok.pin()
    assert (
        tok.uri("device-p256", with_pin=True) == f"pkcs11:token=secperf;object=device-p256;type=private?pin-value={pin}"
    )
    assert tok.uri("device-p256", type="cert") == "pkcs11:token=secperf;object=device-p256;type=cert"


# --- keys inside the token match their certificates ------------------------------------------------
@pytest.mark.parametrize("label", LABELS)
def test_token_key_matches_certificate(tok, pki, label):
    cert = x509.load_pem_x509_certificate(open(tok.key(label)["cert_path"], "rb").read())
    ca = x509.load_pem_x509_certificate((pki.root / "client" / "ca.pem").read_bytes())
    cert.verify_directly_issued_by(ca)
    assert cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == x509.ExtendedKeyUsage(
        [x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]
    )
    with tok.login() as s:
        priv = s.get_key(object_class=ObjectClass.PRIVATE_KEY, label=label)
        assert priv[Attribute.SENSITIVE] and not priv[Attribute.EXTRACTABLE]
        assert priv[Attribute.TOKEN] and priv[Attribute.ID] == bytes.fromhex(tok.key(label)["id_hex"])
        # the certificate is on the token too, with the key's CKA_ID and label
        certs = list(s.get_objects({Attribute.CLASS: ObjectClass.CERTIFICATE, Attribute.LABEL: label}))
        assert len(certs) == 1
        assert certs[0][Attribute.ID] == priv[Attribute.ID]
        assert certs[0][Attribute.VALUE] == cert.public_bytes(serialization.Encoding.DER)
        # sign inside the token, verify with the certificate
        if label.startswith("device-rsa"):
            sig = priv.sign(MESSAGE, mechanism=Mechanism.SHA256_RSA_PKCS)
            cert.public_key().verify(sig, MESSAGE, padding.PKCS1v15(), hashes.SHA256())
        else:  # SoftHSM2 offers raw CKM_ECDSA only: hash on the host
            raw = priv.sign(hashlib.sha256(MESSAGE).digest(), mechanism=Mechanism.ECDSA)
            half = len(raw) // 2
            der = encode_dss_signature(int.from_bytes(raw[:half], "big"), int.from_bytes(raw[half:], "big"))
            cert.public_key().verify(der, MESSAGE, ec.ECDSA(hashes.SHA256()))
            curve = {"device-p256": "secp256r1", "device-bp256": "brainpoolP256r1"}[label]
            assert cert.public_key().curve.name == curve
    assert _spki(tok.public_key(label)) == _spki(cert.public_key())
    assert hashlib.sha256(_spki(cert.public_key())).hexdigest() == tok.key(label)["public_key_sha256"]


@pytest.mark.parametrize("label", LABELS)
def test_sign_helper_verifies(tok, label):
    sig = tok.sign(label, b"secperf")
    pub = tok.certificate(label).public_key()
    if label.startswith("device-rsa"):
        pub.verify(sig, b"secperf", padding.PKCS1v15(), hashes.SHA256())
    else:
        pub.verify(sig, b"secperf", ec.ECDSA(hashes.SHA256()))


def test_subprocess_sees_the_token_through_env(tok):
    r = subprocess.run(
        ["softhsm2-util", "--show-slots"], env=dict(os.environ, **tok.env()), capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert "Label:            secperf" in r.stdout
    for secret in _secrets(tok):
        assert secret not in r.stdout


# --- idempotent and fresh --------------------------------------------------------------------------
def test_ensure_again_is_fast_and_reuses_keys(tmp_path, pki):
    """Ensuring an existing token again costs a small part of making it (no key generation, no
    certificates): both measured here, side by side (about 3 s against under 1 ms)."""
    t0 = time.perf_counter()
    tok = LabToken(tmp_path / "token", pki=pki).ensure()
    create_s = time.perf_counter() - t0
    before = {lb: _spki(tok.public_key(lb)) for lb in LABELS}
    pin = tok.pin()
    t0 = time.perf_counter()
    again = LabToken(tok.root, pki=tok.pki).ensure()
    again_s = time.perf_counter() - t0
    assert again_s < create_s / 10, (again_s, create_s)
    assert again.pin() == pin
    assert {lb: _spki(again.public_key(lb)) for lb in LABELS} == before


def test_fresh_rebuilds_with_new_keys(tmp_path, pki):
    t = LabToken(tmp_path / "token", pki=pki).ensure()
    before = {lb: _spki(t.public_key(lb)) for lb in LABELS}
    pin = t.pin()
    t.ensure(fresh=True)
    after = {lb: _spki(t.public_key(lb)) for lb in LABELS}
    assert all(before[lb] != after[lb] for lb in LABELS)
    assert t.pin() != pin
    for lb in LABELS:  # certificates were re-issued for the new keys
        assert _spki(t.certificate(lb).public_key()) == after[lb]
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == ["token"]


def test_two_tokens_in_one_process(tok, tmp_path, pki):
    other = LabToken(tmp_path / "other", pki=pki).ensure()
    for t in (tok, other, tok):  # switching re-initialises SoftHSM2 with the right config
        sig = t.sign("device-p256", MESSAGE)
        t.certificate("device-p256").public_key().verify(sig, MESSAGE, ec.ECDSA(hashes.SHA256()))
    assert _spki(other.public_key("device-p256")) != _spki(tok.public_key("device-p256"))


def test_moved_token_still_works(tmp_path, pki):
    t = LabToken(tmp_path / "a", pki=pki).ensure()
    pk = _spki(t.public_key("device-p256"))
    os.rename(tmp_path / "a", tmp_path / "b")
    moved = LabToken(tmp_path / "b", pki=pki).ensure()
    assert f"directories.tokendir = {tmp_path / 'b' / 'tokens'}" in moved.conf_path.read_text()
    assert _spki(moved.public_key("device-p256")) == pk


# --- errors ------------------------------------------------------------------------------------------
def test_wrong_pin_is_a_token_error_without_the_pin(tok):
    wrong = "0123456789abcdef0123456789abcdef"
    with pytest.raises(TokenError) as ei:
        tok.login(wrong)
    msg = str(ei.value)
    assert "wrong user PIN" in msg and str(tok.pin_path) in msg
    assert wrong not in msg
    for secret in _secrets(tok):
        assert secret not in msg
    assert ei.value.__cause__ is None and ei.value.__suppress_context__


def test_unknown_key_label_lists_known_ones(tok):
    for call in (
        lambda: tok.uri("device-p384"),
        lambda: tok.key("device-p384"),
        lambda: tok.cert_path("device-p384"),
        lambda: tok.sign("device-p384", b"x"),
    ):
        with pytest.raises(TokenError) as ei:
            call()
        msg = str(ei.value)
        assert "'device-p384'" in msg
        for lb in LABELS:
            assert lb in msg
    with tok.login() as s:
        with pytest.raises(TokenError, match="known labels: device-p256, device-bp256, device-rsa2048, device-rsa1024"):
            tok.private_key(s, "nope")


def test_pin_never_in_repr_or_summaries(tok, capsys):
    secrets = _secrets(tok)
    texts = [repr(tok), str(tok), str(tok.describe()), str(tok.keys()), tok.uri("device-p256")]
    tok.print_summary()
    texts.append(capsys.readouterr().out)
    for text in texts:
        for secret in secrets:
            assert secret not in text
    assert "device-p256" in texts[-1] and "SOFTHSM2_CONF=" in texts[-1]


def test_softhsm2_util_missing(tmp_path, pki, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    t = LabToken(tmp_path / "token", pki=pki)
    with pytest.raises(TokenError, match="softhsm2-util not found.*Debian package softhsm2"):
        t.ensure()
    assert not t.root.exists()
    assert not [p for p in tmp_path.iterdir() if ".new-" in p.name]


def test_module_missing_names_the_package(monkeypatch):
    monkeypatch.delenv("SECPERF_SOFTHSM2_MODULE", raising=False)
    from secperf.lab import token_module

    monkeypatch.setattr(token_module, "MODULE_CANDIDATES", ())  # the module search lives there
    monkeypatch.setattr(token_module.glob, "glob", lambda *a, **k: [])
    with pytest.raises(TokenError, match="libsofthsm2.so.*Debian package softhsm2"):
        T.find_module()


def test_failure_midway_leaves_nothing(tmp_path, pki, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("CA unavailable")

    monkeypatch.setattr(pki, "issue_client_cert", boom)
    t = LabToken(tmp_path / "token", pki=pki)
    with pytest.raises(RuntimeError, match="CA unavailable"):
        t.ensure()
    assert not t.root.exists()
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == []
    monkeypatch.undo()
    t.ensure()  # and the next attempt works
    assert t.is_provisioned()


def test_not_provisioned_and_foreign_directories(tmp_path, pki):
    t = LabToken(tmp_path / "nothing", pki=pki)
    with pytest.raises(TokenError, match="not provisioned.*ensure"):
        t.keys()
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("keep me")
    with pytest.raises(TokenError, match="not a secperf token directory"):
        LabToken(foreign, pki=pki).ensure()
    assert (foreign / "thesis.tex").read_text() == "keep me"


def test_other_label_is_not_overwritten(tok):
    with pytest.raises(TokenError, match="holds token 'secperf', not 'other'"):
        LabToken(tok.root, label="other", pki=tok.pki).ensure()
    assert tok.is_provisioned() and len(tok.keys()) == 4


def test_label_is_percent_encoded_in_uris(tmp_path, pki):
    t = LabToken(tmp_path / "t", label="lab token;1", pki=pki).ensure()
    assert t.uri("device-p256") == "pkcs11:token=lab%20token%3B1;object=device-p256;type=private"
    sig = t.sign("device-p256", MESSAGE)
    t.certificate("device-p256").public_key().verify(sig, MESSAGE, ec.ECDSA(hashes.SHA256()))


def test_token_with_a_pin_too_long_for_pin_source_files_is_rebuilt(tmp_path, pki):
    """Older tokens had 32-character PINs, which libp11 0.4.12 truncates when it reads a
    pin-source file: such a token counts as not provisioned, so ensure() rebuilds it once."""
    t = LabToken(tmp_path / "token", pki=pki).ensure()
    assert t.is_provisioned()
    t.pin_path.write_text("a" * 32)
    assert not t.is_provisioned()
    t.ensure()
    assert t.is_provisioned() and len(t.pin()) <= T.PIN_MAX_FILE
