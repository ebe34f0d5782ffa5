"""Provisioning the lab token: generated inside a temporary sibling directory (keys in the token,
certificates from the lab PKI's client CA, random PINs in 0600 files) and renamed into place only
when complete; reused when it is (LabToken's `ensure`)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pty
import secrets
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from ..core.paths import private_dir, write_private
from .token_keys import EC_PARAMS, KEY_SPECS, der_integer, public_key_of
from .token_layout import TokenLayout
from .token_module import (
    ACTIVE_CONF,
    SUBPROCESS_TIMEOUT_S,
    TokenError,
    conf_text,
    find_module,
    lib_for,
    pkcs11_package,
    release,
    softhsm2_util,
)

if TYPE_CHECKING:
    pass

PIN_MAX_FILE = 31  # libp11 0.4.12 reads a pin-source file with BIO_gets(buf, 32): 31 characters


def init_token(util: str, label: str, so_pin: str, user_pin: str, env: dict[str, str]) -> tuple[int, str]:
    """`softhsm2-util --init-token` with the PINs typed at its prompts on a pseudo-terminal (it reads them
    from a terminal only): its --so-pin and --pin would put them on the process list, which every user
    reads (/proc/PID/cmdline). Its exit code and what it printed; TimeoutExpired past the time-out."""

    answers = [so_pin, so_pin, user_pin, user_pin]  # each PIN, then again to confirm
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [util, "--init-token", "--free", "--label", label],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
        )
    finally:
        os.close(slave)
    out, asked = b"", 0
    deadline = time.monotonic() + SUBPROCESS_TIMEOUT_S
    try:
        while proc.poll() is None or select.select([master], [], [], 0)[0]:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(util, SUBPROCESS_TIMEOUT_S)
            if not select.select([master], [], [], 0.2)[0]:
                continue
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child has closed its terminal
                break
            if not chunk:
                break
            out += chunk
            while out.count(b"PIN:") > asked and answers:  # "Please enter SO PIN:", "Please reenter ...", ...
                os.write(master, answers.pop(0).encode() + b"\n")
                asked += 1
        return proc.wait(timeout=max(1.0, deadline - time.monotonic())), out.decode(errors="replace")
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
    finally:
        os.close(master)


class Provisioning(TokenLayout):
    """LabToken's provisioning (a mixin: it uses the token's layout and PKI)."""

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
        return (
            pin_ok
            and meta.get("label") == self.label
            and [k["label"] for k in meta.get("keys", [])] == [k.label for k in KEY_SPECS]
        )

    def ensure(self, fresh: bool = False) -> Self:
        """Provision the token if it is missing or incomplete (or always, with ``fresh``); reuse it
        otherwise. Returns self."""
        if not fresh and self.is_provisioned():
            self._fix_conf()
            return self
        if not fresh:
            other = self._existing_label()
            if other is not None and other != self.label:
                raise TokenError(
                    f"{self.root} holds token {other!r}, not {self.label!r}: use "
                    f"LabToken(label={other!r}) or rebuild with ensure(fresh=True)"
                )
        self.root.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.root.parent / f".{self.root.name}.lock"
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # one provisioning at a time per directory
            if not fresh and self.is_provisioned():  # another process finished it meanwhile
                self._fix_conf()
                return self
            self._check_replaceable()
            self._provision()
        finally:
            os.close(fd)
        return self

    def _existing_label(self) -> str | None:
        try:
            label = json.loads(self.meta_path.read_text()).get("label")
        except (OSError, ValueError, AttributeError):
            return None
        return label if isinstance(label, str) else None

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
            raise TokenError(
                f"{self.root} exists but is not a secperf token directory (it holds "
                f"{', '.join(sorted(names)[:5])}): remove it or choose another token root"
            )

    def _provision(self) -> None:
        util = softhsm2_util()
        module = self.module_path
        tmp = self.root.parent / f".{self.root.name}.new-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            private_dir(tmp)
            meta = self._build(tmp, util, module)
            # the finished directory points at its final place before it moves there
            (tmp / "softhsm2.conf").write_text(conf_text(self.tokens_dir))
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
            release(module)  # the module may still hold the temporary directory or the old token

    def _build(self, d: Path, util: str, module: Path) -> dict[str, Any]:
        private_dir(d / "tokens")
        (d / "softhsm2.conf").write_text(conf_text(d / "tokens"))
        # 24 hex digits (96 bits): libp11 0.4.12 reads at most PIN_MAX_FILE characters from a
        # pin-source file, and clients get the PIN that way rather than on their command line
        user_pin, so_pin = secrets.token_hex(PIN_MAX_FILE // 2 - 3), secrets.token_hex(16)
        write_private(d / "user.pin", user_pin.encode())
        write_private(d / "so.pin", so_pin.encode())
        try:
            code, out = init_token(
                util, self.label, so_pin, user_pin, dict(os.environ, SOFTHSM2_CONF=str(d / "softhsm2.conf"))
            )
        except subprocess.TimeoutExpired:
            raise TokenError(f"softhsm2-util --init-token did not finish within {SUBPROCESS_TIMEOUT_S} s") from None
        if code != 0:
            msg = out.strip() or "no output"
            for secret in (user_pin, so_pin):
                msg = msg.replace(secret, "***")
            raise TokenError(f"softhsm2-util --init-token failed (exit {code}): {msg[-400:]}")

        pkcs11 = pkcs11_package()
        from pkcs11 import (  # reason: guarded: python-pkcs11 may be missing
            Attribute,
            CertificateType,
            KeyType,
            ObjectClass,
        )

        lib = lib_for(module, d / "softhsm2.conf")
        try:
            token = lib.get_token(token_label=self.label)
        except pkcs11.PKCS11Error as exc:
            raise TokenError(
                f"the new token {self.label!r} is not visible to {module} ({type(exc).__name__})"
            ) from None
        keys = []
        with token.open(rw=True, user_pin=user_pin) as session:
            for spec in KEY_SPECS:
                priv_t = {
                    Attribute.SENSITIVE: True,
                    Attribute.EXTRACTABLE: False,
                    Attribute.PRIVATE: True,
                    Attribute.SIGN: True,
                }
                pub_t = {Attribute.PRIVATE: False, Attribute.VERIFY: True}
                if spec.curve:
                    params = session.create_domain_parameters(
                        KeyType.EC, {Attribute.EC_PARAMS: EC_PARAMS[spec.curve]}, local=True
                    )
                    pub, _priv = params.generate_keypair(
                        store=True, label=spec.label, id=spec.id, public_template=pub_t, private_template=priv_t
                    )
                else:
                    pub, _priv = session.generate_keypair(
                        KeyType.RSA,
                        spec.rsa_bits,
                        store=True,
                        label=spec.label,
                        id=spec.id,
                        public_template=pub_t,
                        private_template=priv_t,
                    )
                public_key = public_key_of(pub, spec)
                cert_path = d / f"{spec.label}.pem"
                self.pki.issue_client_cert(spec.label, None, cert_path, public_key=public_key)
                cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
                der = cert.public_bytes(serialization.Encoding.DER)
                session.create_object(
                    {
                        Attribute.CLASS: ObjectClass.CERTIFICATE,
                        Attribute.CERTIFICATE_TYPE: CertificateType.X_509,
                        Attribute.TOKEN: True,
                        Attribute.PRIVATE: False,
                        Attribute.LABEL: spec.label,
                        Attribute.ID: spec.id,
                        Attribute.SUBJECT: cert.subject.public_bytes(),
                        Attribute.ISSUER: cert.issuer.public_bytes(),
                        Attribute.SERIAL_NUMBER: der_integer(cert.serial_number),
                        Attribute.VALUE: der,
                    }
                )
                spki = public_key.public_bytes(
                    serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
                )
                keys.append(
                    {
                        "label": spec.label,
                        "key_type": spec.key_type,
                        "id_hex": spec.id.hex(),
                        "public_key_sha256": hashlib.sha256(spki).hexdigest(),
                    }
                )
        return {"label": self.label, "keys": keys, "ca_path": str(self._client_ca_path())}

    def _client_ca_path(self) -> Path:
        return Path(self.pki.root) / "client" / "ca.pem"

    def _fix_conf(self) -> None:
        """Keep the config pointing at this directory's object store (the root may have been moved)."""
        want = conf_text(self.tokens_dir)
        try:
            if self.conf_path.read_text() == want:
                return
        except OSError:
            pass
        self.conf_path.write_text(want)
        module = find_module()
        if ACTIVE_CONF.get(str(module)) == str(self.conf_path):
            release(module)
