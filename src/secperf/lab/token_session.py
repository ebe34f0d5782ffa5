"""Using the lab token in-process (python-pkcs11): a logged-in session, its objects, the public key
read back from the token, and signing with a token key."""

from __future__ import annotations

import contextlib
import hashlib
from typing import TYPE_CHECKING, Any

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from .token_keys import public_key_of
from .token_layout import TokenLayout
from .token_module import TokenError, lib_for, pkcs11_package


class InProcess(TokenLayout):
    """LabToken's in-process use (a mixin: it uses the token's label, paths, PIN and key specs).
    python-pkcs11 ships no type information: its tokens, sessions and objects are ``Any`` here."""

    if TYPE_CHECKING:  # what LabToken provides

        def _require(self) -> dict[str, Any]: ...
        def pin(self) -> str: ...

    def _token(self) -> Any:
        self._require()
        pkcs11 = pkcs11_package()
        lib = lib_for(self.module_path, self.conf_path)
        try:
            return lib.get_token(token_label=self.label)
        except pkcs11.NoSuchToken:
            raise TokenError(
                f"no token labelled {self.label!r} in {self.tokens_dir}: rebuild it with LabToken.ensure(fresh=True)"
            ) from None
        except pkcs11.MultipleTokensReturned:
            raise TokenError(
                f"several tokens labelled {self.label!r} in {self.tokens_dir}: rebuild with LabToken.ensure(fresh=True)"
            ) from None

    def login(self, pin: str | None = None, rw: bool = False) -> Any:
        """An open python-pkcs11 session logged in as the user (close it: ``with token.login() as s``).
        ``pin`` defaults to the token's own; a wrong one raises TokenError (the PIN is not shown)."""
        pkcs11 = pkcs11_package()
        token = self._token()
        try:
            return token.open(rw=rw, user_pin=self.pin() if pin is None else pin)
        except pkcs11.PinIncorrect:
            raise TokenError(
                f"wrong user PIN for token {self.label!r} (the PIN given is not shown); the "
                f"token's PIN is in {self.pin_path}, LabToken.pin() reads it"
            ) from None
        except (pkcs11.PinLenRange, pkcs11.PinInvalid):
            raise TokenError(
                f"the user PIN given for token {self.label!r} was rejected (wrong length or "
                f"characters; it is not shown); the token's PIN is in {self.pin_path}"
            ) from None
        except pkcs11.PinLocked:
            raise TokenError(
                f"the user PIN of token {self.label!r} is locked: rebuild the token with LabToken.ensure(fresh=True)"
            ) from None

    def private_key(self, session: Any, label: str) -> Any:
        """The private key object ``label`` in a logged-in session."""
        return self._object(session, label, "PRIVATE_KEY")

    def certificate_object(self, session: Any, label: str) -> Any:
        return self._object(session, label, "CERTIFICATE")

    def _object(self, session: Any, label: str, cls: str) -> Any:
        spec = self._spec(label)
        from pkcs11 import Attribute, ObjectClass  # reason: guarded: python-pkcs11 may be missing

        found = list(session.get_objects({Attribute.CLASS: getattr(ObjectClass, cls), Attribute.LABEL: label}))
        if not found:
            raise TokenError(
                f"token {self.label!r} has no {cls.lower().replace('_', ' ')} labelled {label!r} "
                f"(id {spec.id.hex()}): rebuild it with LabToken.ensure(fresh=True)"
            )
        if len(found) > 1:
            raise TokenError(
                f"token {self.label!r} has {len(found)} objects labelled {label!r}: rebuild it "
                f"with LabToken.ensure(fresh=True)"
            )
        return found[0]

    def public_key(self, label: str) -> ec.EllipticCurvePublicKey | rsa.RSAPublicKey:
        """The key's public half read from the token itself (a cryptography public key)."""
        spec = self._spec(label)
        from pkcs11 import Attribute, ObjectClass  # reason: guarded: python-pkcs11 may be missing

        with self.login() as s:
            found = list(s.get_objects({Attribute.CLASS: ObjectClass.PUBLIC_KEY, Attribute.LABEL: label}))
            if len(found) != 1:
                raise TokenError(
                    f"token {self.label!r} has {len(found)} public keys labelled {label!r}: "
                    f"rebuild it with LabToken.ensure(fresh=True)"
                )
            return public_key_of(found[0], spec)

    def certificate(self, label: str) -> x509.Certificate:
        self._spec(label)
        return x509.load_pem_x509_certificate(self.cert_path(label).read_bytes())

    def sign(self, label: str, message: bytes, session: Any = None) -> bytes:
        """Sign ``message`` with the token key: ECDSA over SHA-256 (hashed on the host, CKM_ECDSA,
        DER-encoded result) or RSA PKCS#1 v1.5 with SHA-256 (CKM_SHA256_RSA_PKCS). The result
        verifies with cryptography against the key's certificate."""
        spec = self._spec(label)
        from pkcs11 import Mechanism  # reason: guarded: python-pkcs11 may be missing
        from pkcs11.util.ec import encode_ecdsa_signature  # reason: guarded: python-pkcs11 may be missing

        with contextlib.ExitStack() as stack:
            s = session if session is not None else stack.enter_context(self.login())
            key = self.private_key(s, label)
            if spec.curve:
                raw = key.sign(hashlib.sha256(message).digest(), mechanism=Mechanism.ECDSA)
                return bytes(encode_ecdsa_signature(raw))
            return bytes(key.sign(message, mechanism=Mechanism.SHA256_RSA_PKCS))
