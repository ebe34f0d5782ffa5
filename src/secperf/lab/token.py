"""The lab token: a SoftHSM2 token provisioned non-interactively in a private directory, holding
the device keys secperf signs with through PKCS#11 (study S2's token modes, the secure-element
shim, mutual TLS and JWTs with token keys).

Layout of ``root`` (default ``$SECPERF_HOME/token``; directories 0700, secrets 0600):

    softhsm2.conf        this token's own SoftHSM2 config (never the system-wide one)
    tokens/              SoftHSM2's object store (file backend, umask 0077)
    user.pin, so.pin     random PINs (secrets.token_hex), mode 0600
    device-*.pem         each key's client certificate from the lab PKI's client CA
    token.json           what was provisioned (written last: its presence means "complete")

Keys are generated inside the token (never exported: CKA_SENSITIVE, not CKA_EXTRACTABLE):
``device-p256`` (ECDSA P-256), ``device-bp256`` (ECDSA brainpoolP256r1), ``device-rsa2048``
(RSA-2048). Each certificate is also stored on the token as a CKO_CERTIFICATE with the key's
CKA_ID and CKA_LABEL, so PKCS#11 URIs and tools (p11tool, pkcs11-tool, libp11) find the pair.

Provisioning happens in a temporary sibling directory that is renamed into place only when
complete; anything half-made after an error is removed. ``ensure()`` on a complete token only
checks files (fast). PINs never appear in logs, exception messages or ``repr``; softhsm2-util
does receive them on its command line for the moment it runs (that is its only non-interactive
interface), which other local users could see in the process list for that instant.

In-process use (python-pkcs11) loads the SoftHSM2 module once per process; the module reads
SOFTHSM2_CONF at C_Initialize, so switching to another token directory re-initialises the module
(C_Finalize + C_Initialize) and invalidates sessions opened on the previous one. Subprocesses get
the right config through ``env()``.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from ..core.paths import private_dir, secperf_home, write_private
from ..core.errors import SetupError

DEFAULT_LABEL = "secperf"
MODULE_CANDIDATES = (
    "/usr/lib/softhsm/libsofthsm2.so",
    "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
    "/usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so",
    "/usr/lib64/pkcs11/libsofthsm2.so",
    "/usr/lib/pkcs11/libsofthsm2.so",
    "/usr/local/lib/softhsm/libsofthsm2.so",
)
_SUBPROCESS_TIMEOUT_S = 120

# DER of the ECParameters namedCurve OIDs (CKA_EC_PARAMS)
_EC_PARAMS = {
    "secp256r1": bytes.fromhex("06082a8648ce3d030107"),            # 1.2.840.10045.3.1.7
    "brainpoolP256r1": bytes.fromhex("06092b2403030208010107"),    # 1.3.36.3.3.2.8.1.1.7
}
_CURVES = {"secp256r1": ec.SECP256R1, "brainpoolP256r1": ec.BrainpoolP256R1}


PIN_MAX_FILE = 31  # libp11 0.4.12 reads a pin-source file with BIO_gets(buf, 32): 31 characters


@dataclass(frozen=True)
class KeySpec:
    label: str
    key_type: str       # secperf's key-type name
    id: bytes           # CKA_ID shared by the private key, public key and certificate
    curve: str | None   # EC curve name, None for RSA
    rsa_bits: int = 0


KEY_SPECS: tuple[KeySpec, ...] = (
    KeySpec("device-p256", "ecdsa-p256", b"\x01", "secp256r1"),
    KeySpec("device-bp256", "ecdsa-brainpoolp256r1", b"\x02", "brainpoolP256r1"),
    KeySpec("device-rsa2048", "rsa-2048", b"\x03", None, 2048),
    KeySpec("device-rsa1024", "rsa-1024", b"\x04", None, 1024),  # the 1998 RSA card's key size (study S3)
)


class TokenError(SetupError):
    """The lab token cannot be set up or used; the message says what and what to do (never a PIN)."""


# --- the in-process PKCS#11 module ---------------------------------------------------------------
_LIB_LOCK = threading.RLock()
_ACTIVE_CONF: dict[str, str | None] = {}   # module path -> SOFTHSM2_CONF it was initialised with


def _pkcs11():
    try:
        import pkcs11
    except ImportError:
        raise TokenError("the Python package python-pkcs11 is not installed: run scripts/bootstrap "
                         "(it installs secperf's dependencies into .venv)") from None
    return pkcs11


def _lib(module: Path, conf: Path):
    """The python-pkcs11 library for ``module``, initialised with ``conf`` as SOFTHSM2_CONF."""
    pkcs11 = _pkcs11()
    so, want = str(module), str(conf)
    with _LIB_LOCK:
        prev = os.environ.get("SOFTHSM2_CONF")
        os.environ["SOFTHSM2_CONF"] = want
        try:
            was_loaded = so in getattr(pkcs11, "_loaded", {})
            try:
                lib = pkcs11.lib(so)
                if was_loaded and _ACTIVE_CONF.get(so) != want:
                    lib.reinitialize()
            except pkcs11.PKCS11Error as exc:
                raise TokenError(f"the PKCS#11 module {so} failed to initialise with {want} "
                                 f"({type(exc).__name__}): check that file (SoftHSM2 config)") from None
            _ACTIVE_CONF[so] = want
        finally:
            if prev is None:
                os.environ.pop("SOFTHSM2_CONF", None)
            else:
                os.environ["SOFTHSM2_CONF"] = prev
        return lib


def _release(module: Path) -> None:
    """Finalise the module so the next use re-reads its config (after the token moved or changed)."""
    pkcs11 = _pkcs11()
    so = str(module)
    with _LIB_LOCK:
        lib = getattr(pkcs11, "_loaded", {}).get(so)
        if lib is not None and lib.initialized:
            with contextlib.suppress(pkcs11.PKCS11Error):
                lib.finalize()
        _ACTIVE_CONF[so] = None


def find_module() -> Path:
    """The SoftHSM2 PKCS#11 module on this host ($SECPERF_SOFTHSM2_MODULE overrides the search)."""
    env = os.environ.get("SECPERF_SOFTHSM2_MODULE")
    if env:
        if Path(env).is_file():
            return Path(env)
        raise TokenError(f"SECPERF_SOFTHSM2_MODULE={env} does not exist")
    for c in MODULE_CANDIDATES:
        if Path(c).is_file():
            return Path(c)
    found = [f for pattern in ("/usr/lib/*/softhsm/libsofthsm2.so", "/usr/lib*/softhsm/libsofthsm2.so",
                               "/usr/local/lib*/softhsm/libsofthsm2.so", "/usr/lib*/pkcs11/libsofthsm2.so")
             for f in sorted(glob.glob(pattern))]
    if found:
        return Path(found[0])
    raise TokenError("the SoftHSM2 PKCS#11 module (libsofthsm2.so) is not installed: install the Debian "
                     "package softhsm2 (scripts/bootstrap does: sudo apt-get install softhsm2)")


def _softhsm2_util() -> str:
    exe = shutil.which("softhsm2-util")
    if not exe:
        raise TokenError("softhsm2-util not found on PATH: install the Debian package softhsm2 "
                         "(scripts/bootstrap does: sudo apt-get install softhsm2)")
    return exe


def _conf_text(tokendir: Path) -> str:
    return ("# secperf lab token: SoftHSM2 config for this directory only (not the system-wide one)\n"
            f"directories.tokendir = {tokendir}\n"
            "objectstore.backend = file\n"
            "objectstore.umask = 0077\n"
            "log.level = ERROR\n"
            "slots.removable = false\n")


def _uri_part(s: str) -> str:
    """Percent-encode a PKCS#11 URI attribute value (RFC 7512 pchar without ';', '?', '&', '/')."""
    return quote(s, safe="-._~!$'()*+,=:@")


# --- the token -----------------------------------------------------------------------------------
class LabToken:
    def __init__(self, root: Path | str | None = None, label: str = DEFAULT_LABEL, *, pki=None):
        self.root = Path(root) if root is not None else secperf_home() / "token"
        if not label or len(label.encode()) > 32:
            raise TokenError(f"token label {label!r} must be 1-32 bytes (PKCS#11 CK_TOKEN_INFO.label)")
        self.label = label
        self._pki = pki

    def __repr__(self) -> str:
        return f"LabToken(root={str(self.root)!r}, label={self.label!r})"

    # --- paths ------------------------------------------------------------------------------------
    @property
    def conf_path(self) -> Path:
        return self.root / "softhsm2.conf"

    @property
    def tokens_dir(self) -> Path:
        return self.root / "tokens"

    @property
    def pin_path(self) -> Path:
        """The file holding the user PIN (mode 0600). The PIN itself: ``pin()``."""
        return self.root / "user.pin"

    @property
    def so_pin_path(self) -> Path:
        return self.root / "so.pin"

    @property
    def meta_path(self) -> Path:
        return self.root / "token.json"

    @property
    def module_path(self) -> Path:
        """The SoftHSM2 PKCS#11 module (TokenError naming the Debian package softhsm2 if missing)."""
        return find_module()

    def cert_path(self, label: str) -> Path:
        self._spec(label)
        return self.root / f"{label}.pem"

    @property
    def pki(self):
        if self._pki is None:
            from .pki import LabPKI
            self._pki = LabPKI()
        return self._pki

    def env(self) -> dict[str, str]:
        """Environment entries a subprocess needs to see this token: ``{"SOFTHSM2_CONF": ...}``
        (merge into os.environ: ``dict(os.environ, **token.env())``)."""
        return {"SOFTHSM2_CONF": str(self.conf_path)}

    # --- provisioning -----------------------------------------------------------------------------
    def is_provisioned(self) -> bool:
        paths = [self.meta_path, self.conf_path, self.pin_path, self.so_pin_path, self.tokens_dir]
        paths += [self.root / f"{k.label}.pem" for k in KEY_SPECS]
        if not all(p.exists() for p in paths):
            return False
        try:
            meta = json.loads(self.meta_path.read_text())
        except (OSError, ValueError):
            return False
        try:
            # a token from an older secperf with a 32-character PIN is rebuilt once (see _build)
            pin_ok = len(self.pin_path.read_text().strip()) <= PIN_MAX_FILE
        except OSError:
            return False
        return pin_ok and meta.get("label") == self.label and [k["label"] for k in meta.get("keys", [])] == \
            [k.label for k in KEY_SPECS]

    def ensure(self, fresh: bool = False) -> "LabToken":
        """Provision the token if it is missing or incomplete (or always, with ``fresh``); reuse it
        otherwise. Returns self."""
        if not fresh and self.is_provisioned():
            self._fix_conf()
            return self
        if not fresh:
            other = self._existing_label()
            if other is not None and other != self.label:
                raise TokenError(f"{self.root} holds token {other!r}, not {self.label!r}: use "
                                 f"LabToken(label={other!r}) or rebuild with ensure(fresh=True)")
        self.root.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.root.parent / f".{self.root.name}.lock"
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)   # one provisioning at a time per directory
            if not fresh and self.is_provisioned():   # another process finished it meanwhile
                self._fix_conf()
                return self
            self._check_replaceable()
            self._provision()
        finally:
            os.close(fd)
        return self

    def _existing_label(self) -> str | None:
        try:
            return json.loads(self.meta_path.read_text()).get("label")
        except (OSError, ValueError, AttributeError):
            return None

    def _check_replaceable(self) -> None:
        """Refuse to delete a directory secperf did not make."""
        if not self.root.exists():
            return
        if not self.root.is_dir():
            raise TokenError(f"{self.root} exists and is not a directory: remove it or choose another token root")
        ours = {"softhsm2.conf", "tokens", "user.pin", "so.pin", "token.json"} | {f"{k.label}.pem" for k in KEY_SPECS}
        names = {p.name for p in self.root.iterdir()}
        visible = {n for n in names if not n.startswith(".")}
        if names and (not visible & {"softhsm2.conf", "token.json"} or not visible <= ours):
            raise TokenError(f"{self.root} exists but is not a secperf token directory (it holds "
                             f"{', '.join(sorted(names)[:5])}): remove it or choose another token root")

    def _provision(self) -> None:
        util = _softhsm2_util()
        module = self.module_path
        tmp = self.root.parent / f".{self.root.name}.new-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            private_dir(tmp)
            meta = self._build(tmp, util, module)
            # the finished directory points at its final place before it moves there
            (tmp / "softhsm2.conf").write_text(_conf_text(self.tokens_dir))
            write_private(tmp / "token.json", (json.dumps(meta, indent=2) + "\n").encode())
            old = None
            if self.root.exists():
                old = self.root.parent / f".{self.root.name}.old-{os.getpid()}-{secrets.token_hex(4)}"
                os.rename(self.root, old)
            try:
                os.rename(tmp, self.root)
            except OSError:
                if old is not None:
                    os.rename(old, self.root)
                raise
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        finally:
            _release(module)   # the module may still hold the temporary directory or the old token

    def _build(self, d: Path, util: str, module: Path) -> dict:
        private_dir(d / "tokens")
        (d / "softhsm2.conf").write_text(_conf_text(d / "tokens"))
        # 24 hex digits (96 bits): libp11 0.4.12 reads at most PIN_MAX_FILE characters from a
        # pin-source file, and clients get the PIN that way rather than on their command line
        user_pin, so_pin = secrets.token_hex(PIN_MAX_FILE // 2 - 3), secrets.token_hex(16)
        write_private(d / "user.pin", user_pin.encode())
        write_private(d / "so.pin", so_pin.encode())
        cmd = [util, "--init-token", "--free", "--label", self.label, "--pin", user_pin, "--so-pin", so_pin]
        try:
            r = subprocess.run(cmd, env=dict(os.environ, SOFTHSM2_CONF=str(d / "softhsm2.conf")),
                               capture_output=True, text=True, timeout=_SUBPROCESS_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise TokenError(f"softhsm2-util --init-token did not finish within {_SUBPROCESS_TIMEOUT_S} s") from None
        if r.returncode != 0:
            msg = (r.stderr.strip() or r.stdout.strip() or "no output")
            for secret in (user_pin, so_pin):
                msg = msg.replace(secret, "***")
            raise TokenError(f"softhsm2-util --init-token failed (exit {r.returncode}): {msg[-400:]}")

        pkcs11 = _pkcs11()
        from pkcs11 import Attribute, CertificateType, KeyType, ObjectClass
        lib = _lib(module, d / "softhsm2.conf")
        try:
            token = lib.get_token(token_label=self.label)
        except pkcs11.PKCS11Error as exc:
            raise TokenError(f"the new token {self.label!r} is not visible to {module} "
                             f"({type(exc).__name__})") from None
        keys = []
        with token.open(rw=True, user_pin=user_pin) as session:
            for spec in KEY_SPECS:
                priv_t = {Attribute.SENSITIVE: True, Attribute.EXTRACTABLE: False, Attribute.PRIVATE: True,
                          Attribute.SIGN: True}
                pub_t = {Attribute.PRIVATE: False, Attribute.VERIFY: True}
                if spec.curve:
                    params = session.create_domain_parameters(
                        KeyType.EC, {Attribute.EC_PARAMS: _EC_PARAMS[spec.curve]}, local=True)
                    pub, _priv = params.generate_keypair(store=True, label=spec.label, id=spec.id,
                                                         public_template=pub_t, private_template=priv_t)
                else:
                    pub, _priv = session.generate_keypair(KeyType.RSA, spec.rsa_bits, store=True,
                                                          label=spec.label, id=spec.id,
                                                          public_template=pub_t, private_template=priv_t)
                public_key = _public_key(pub, spec)
                cert_path = d / f"{spec.label}.pem"
                self.pki.issue_client_cert(spec.label, None, cert_path, public_key=public_key)
                cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
                der = cert.public_bytes(serialization.Encoding.DER)
                session.create_object({
                    Attribute.CLASS: ObjectClass.CERTIFICATE,
                    Attribute.CERTIFICATE_TYPE: CertificateType.X_509,
                    Attribute.TOKEN: True,
                    Attribute.PRIVATE: False,
                    Attribute.LABEL: spec.label,
                    Attribute.ID: spec.id,
                    Attribute.SUBJECT: cert.subject.public_bytes(),
                    Attribute.ISSUER: cert.issuer.public_bytes(),
                    Attribute.SERIAL_NUMBER: _der_integer(cert.serial_number),
                    Attribute.VALUE: der,
                })
                spki = public_key.public_bytes(serialization.Encoding.DER,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
                keys.append({"label": spec.label, "key_type": spec.key_type, "id_hex": spec.id.hex(),
                             "public_key_sha256": hashlib.sha256(spki).hexdigest()})
        return {"label": self.label, "keys": keys, "ca_path": str(self._client_ca_path())}

    def _client_ca_path(self) -> Path:
        return Path(self.pki.root) / "client" / "ca.pem"

    def _fix_conf(self) -> None:
        """Keep the config pointing at this directory's object store (the root may have been moved)."""
        want = _conf_text(self.tokens_dir)
        try:
            if self.conf_path.read_text() == want:
                return
        except OSError:
            pass
        self.conf_path.write_text(want)
        module = find_module()
        if _ACTIVE_CONF.get(str(module)) == str(self.conf_path):
            _release(module)

    # --- what the token holds ---------------------------------------------------------------------
    def _require(self) -> dict:
        if not self.is_provisioned():
            raise TokenError(f"the lab token in {self.root} is not provisioned: call LabToken.ensure() "
                             f"(or run `secperf signer`, which does)")
        return json.loads(self.meta_path.read_text())

    def _spec(self, label: str) -> KeySpec:
        for k in KEY_SPECS:
            if k.label == label:
                return k
        raise TokenError(f"no key labelled {label!r} in token {self.label!r}; known labels: "
                         f"{', '.join(k.label for k in KEY_SPECS)}")

    def pin(self) -> str:
        """The user PIN (from the 0600 file). Treat it as a secret: never log it."""
        self._require()
        return self.pin_path.read_text().strip()

    def keys(self) -> list[dict]:
        """[{label, key_type, id_hex, cert_path, uri, public_key_sha256}] for every key on the token
        (from token.json: no PKCS#11 call). public_key_sha256 is the SHA-256 of the key's DER
        SubjectPublicKeyInfo, so a rebuilt token shows new keys."""
        meta = self._require()
        return [{"label": k["label"], "key_type": k["key_type"], "id_hex": k["id_hex"],
                 "cert_path": str(self.root / f"{k['label']}.pem"), "uri": self.uri(k["label"]),
                 "public_key_sha256": k.get("public_key_sha256", "")}
                for k in meta["keys"]]

    def key(self, label_or_type: str) -> dict:
        """One entry of ``keys()`` by label (device-p256) or key type (ecdsa-p256)."""
        ks = self.keys()
        for k in ks:
            if label_or_type in (k["label"], k["key_type"]):
                return k
        raise TokenError(f"no key labelled {label_or_type!r} in token {self.label!r}; known labels: "
                         f"{', '.join(k['label'] for k in ks)} (key types: {', '.join(k['key_type'] for k in ks)})")

    def uri(self, label: str, with_pin: bool = False, type: str = "private", pin_file: bool = False) -> str:
        """RFC 7512 PKCS#11 URI of a key, e.g. ``pkcs11:token=secperf;object=device-p256;type=private``.

        ``with_pin`` appends ``?pin-value=...`` (RFC 7512 query attribute) for consumers that cannot
        prompt (libp11 / the OpenSSL pkcs11 engine, pkcs11-provider). Such a URI IS A SECRET: pass it
        through a file or an environment variable, never on a command line or into a log.
        ``pin_file`` appends ``?pin-source=file:PIN_PATH`` instead (RFC 7512; libp11 reads the PIN
        from the 0600 file), so the URI itself holds no secret and may appear on a command line."""
        self._spec(label)
        if type not in ("private", "public", "cert"):
            raise TokenError(f"URI object type {type!r} must be private, public or cert")
        u = f"pkcs11:token={_uri_part(self.label)};object={_uri_part(label)};type={type}"
        if with_pin:
            u += f"?pin-value={_uri_part(self.pin())}"
        elif pin_file:
            u += f"?pin-source=file:{quote(str(self.pin_path), safe='/-._~')}"
        return u

    def describe(self) -> dict:
        """What other tools need: token label, config, module, CA and per key its URI and certificate."""
        meta = self._require()
        return {"token": self.label, "root": str(self.root), "conf_path": str(self.conf_path),
                "env": self.env(), "module_path": str(self.module_path), "pin_file": str(self.pin_path),
                "ca_path": meta.get("ca_path", ""), "keys": self.keys()}

    def print_summary(self, file=None) -> None:
        d = self.describe()
        lines = [f"token {d['token']!r}  ({d['root']})",
                 f"  SOFTHSM2_CONF={d['conf_path']}",
                 f"  module {d['module_path']}",
                 f"  user PIN in {d['pin_file']} (mode 0600)",
                 f"  client CA {d['ca_path']}"]
        for k in d["keys"]:
            lines.append(f"  {k['key_type']:24} {k['uri']}")
            lines.append(f"  {'':24} certificate {k['cert_path']}")
        print("\n".join(lines), file=file)

    # --- using the token in-process ----------------------------------------------------------------
    def _token(self):
        self._require()
        pkcs11 = _pkcs11()
        lib = _lib(self.module_path, self.conf_path)
        try:
            return lib.get_token(token_label=self.label)
        except pkcs11.NoSuchToken:
            raise TokenError(f"no token labelled {self.label!r} in {self.tokens_dir}: rebuild it with "
                             f"LabToken.ensure(fresh=True)") from None
        except pkcs11.MultipleTokensReturned:
            raise TokenError(f"several tokens labelled {self.label!r} in {self.tokens_dir}: rebuild with "
                             f"LabToken.ensure(fresh=True)") from None

    def login(self, pin: str | None = None, rw: bool = False):
        """An open python-pkcs11 session logged in as the user (close it: ``with token.login() as s``).
        ``pin`` defaults to the token's own; a wrong one raises TokenError (the PIN is not shown)."""
        pkcs11 = _pkcs11()
        token = self._token()
        try:
            return token.open(rw=rw, user_pin=self.pin() if pin is None else pin)
        except pkcs11.PinIncorrect:
            raise TokenError(f"wrong user PIN for token {self.label!r} (the PIN given is not shown); the "
                             f"token's PIN is in {self.pin_path}, LabToken.pin() reads it") from None
        except (pkcs11.PinLenRange, pkcs11.PinInvalid):
            raise TokenError(f"the user PIN given for token {self.label!r} was rejected (wrong length or "
                             f"characters; it is not shown); the token's PIN is in {self.pin_path}") from None
        except pkcs11.PinLocked:
            raise TokenError(f"the user PIN of token {self.label!r} is locked: rebuild the token with "
                             f"LabToken.ensure(fresh=True)") from None

    def private_key(self, session, label: str):
        """The private key object ``label`` in a logged-in session."""
        return self._object(session, label, "PRIVATE_KEY")

    def certificate_object(self, session, label: str):
        return self._object(session, label, "CERTIFICATE")

    def _object(self, session, label: str, cls: str):
        spec = self._spec(label)
        from pkcs11 import Attribute, ObjectClass
        found = list(session.get_objects({Attribute.CLASS: getattr(ObjectClass, cls), Attribute.LABEL: label}))
        if not found:
            raise TokenError(f"token {self.label!r} has no {cls.lower().replace('_', ' ')} labelled {label!r} "
                             f"(id {spec.id.hex()}): rebuild it with LabToken.ensure(fresh=True)")
        if len(found) > 1:
            raise TokenError(f"token {self.label!r} has {len(found)} objects labelled {label!r}: rebuild it "
                             f"with LabToken.ensure(fresh=True)")
        return found[0]

    def public_key(self, label: str):
        """The key's public half read from the token itself (a cryptography public key)."""
        spec = self._spec(label)
        from pkcs11 import Attribute, ObjectClass
        with self.login() as s:
            found = list(s.get_objects({Attribute.CLASS: ObjectClass.PUBLIC_KEY, Attribute.LABEL: label}))
            if len(found) != 1:
                raise TokenError(f"token {self.label!r} has {len(found)} public keys labelled {label!r}: "
                                 f"rebuild it with LabToken.ensure(fresh=True)")
            return _public_key(found[0], spec)

    def certificate(self, label: str) -> x509.Certificate:
        self._spec(label)
        return x509.load_pem_x509_certificate(self.cert_path(label).read_bytes())

    def sign(self, label: str, message: bytes, session=None) -> bytes:
        """Sign ``message`` with the token key: ECDSA over SHA-256 (hashed on the host, CKM_ECDSA,
        DER-encoded result) or RSA PKCS#1 v1.5 with SHA-256 (CKM_SHA256_RSA_PKCS). The result
        verifies with cryptography against the key's certificate."""
        spec = self._spec(label)
        from pkcs11 import Mechanism
        from pkcs11.util.ec import encode_ecdsa_signature
        with contextlib.ExitStack() as stack:
            s = session if session is not None else stack.enter_context(self.login())
            key = self.private_key(s, label)
            if spec.curve:
                raw = key.sign(hashlib.sha256(message).digest(), mechanism=Mechanism.ECDSA)
                return encode_ecdsa_signature(raw)
            return key.sign(message, mechanism=Mechanism.SHA256_RSA_PKCS)


def _der_integer(n: int) -> bytes:
    body = n.to_bytes(max(1, (n.bit_length() + 8) // 8), "big")   # room for the sign bit
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


def _public_key(pub, spec: KeySpec):
    from pkcs11 import Attribute
    if spec.curve:
        point = _unwrap_octet_string(bytes(pub[Attribute.EC_POINT]))
        return ec.EllipticCurvePublicKey.from_encoded_point(_CURVES[spec.curve](), point)
    n = int.from_bytes(pub[Attribute.MODULUS], "big")
    e = int.from_bytes(pub[Attribute.PUBLIC_EXPONENT], "big")
    return rsa.RSAPublicNumbers(e, n).public_key()


_ENGINE_CONF = """\
# generated by secperf: OpenSSL's pkcs11 engine (libp11) loads the secure-element shim
openssl_conf = openssl_init
[openssl_init]
engines = engine_section
[engine_section]
pkcs11 = pkcs11_section
[pkcs11_section]
engine_id = pkcs11
MODULE_PATH = {module}
init = {init}
"""


_SECLEVEL_CONF = """\
[ssl_section]
system_default = secperf_system_default
[secperf_system_default]
CipherString = DEFAULT@SECLEVEL={level}
"""


def openssl_engine_conf(module, init: bool, security_level: int | None = None) -> str:
    """An OpenSSL configuration whose pkcs11 engine loads `module` (the shim). init = 1 initialises
    the engine when OpenSSL starts (servers such as nginx load their key at start-up); init = 0
    leaves it to the client that loads the engine by name. `security_level`: see
    `openssl_seclevel_conf`."""
    text = _ENGINE_CONF.format(module=module, init=1 if init else 0)
    if security_level is not None:
        text = text.replace("engines = engine_section\n", "engines = engine_section\nssl_conf = ssl_section\n")
        text += _SECLEVEL_CONF.format(level=int(security_level))
    return text


def openssl_seclevel_conf(level: int) -> str:
    """An OpenSSL configuration (for OPENSSL_CONF) whose TLS contexts start at security `level`.

    OpenSSL 3 (and Debian's own configuration) default to level 2, which refuses RSA keys under
    2048 bits at both ends ('ee key too small' loading a client certificate, 'EE certificate key
    too weak' verifying one). The 1998 RSA card of study S3 had only RSA-1024, so its rows run
    both sides at level 1 (80-bit security: RSA-1024 admitted), said in each series' labels."""
    return ("# generated by secperf: TLS contexts at OpenSSL security level {level}\n"
            "openssl_conf = openssl_init\n[openssl_init]\nssl_conf = ssl_section\n"
            + _SECLEVEL_CONF).format(level=int(level))
