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

The parts: the SoftHSM2 module (token_module), the keys and their DER (token_keys), provisioning
(token_provision), in-process use (token_session), OpenSSL configurations (token_openssl). This
module is the token itself: its files, keys, URIs and description.
"""

from __future__ import annotations

import json
from typing import IO, Any
from urllib.parse import quote

from .token_keys import KEY_SPECS, KeySpec
from .token_layout import DEFAULT_LABEL
from .token_module import MODULE_CANDIDATES, TokenError, find_module
from .token_openssl import openssl_engine_conf, openssl_seclevel_conf
from .token_provision import PIN_MAX_FILE, Provisioning
from .token_session import InProcess

__all__ = [
    "DEFAULT_LABEL",
    "KEY_SPECS",
    "MODULE_CANDIDATES",
    "PIN_MAX_FILE",
    "KeySpec",
    "LabToken",
    "TokenError",
    "find_module",
    "openssl_engine_conf",
    "openssl_seclevel_conf",
]


def _uri_part(s: str) -> str:
    """Percent-encode a PKCS#11 URI attribute value (RFC 7512 pchar without ';', '?', '&', '/')."""
    return quote(s, safe="-._~!$'()*+,=:@")


class LabToken(Provisioning, InProcess):
    def __repr__(self) -> str:
        return f"LabToken(root={str(self.root)!r}, label={self.label!r})"

    def env(self) -> dict[str, str]:
        """Environment entries a subprocess needs to see this token: ``{"SOFTHSM2_CONF": ...}``
        (merge into os.environ: ``dict(os.environ, **token.env())``)."""
        return {"SOFTHSM2_CONF": str(self.conf_path)}

    def _require(self) -> dict[str, Any]:
        if not self.is_provisioned():
            raise TokenError(
                f"the lab token in {self.root} is not provisioned: call LabToken.ensure() "
                f"(or run `secperf signer`, which does)"
            )
        meta: dict[str, Any] = json.loads(self.meta_path.read_text())  # is_provisioned read it as an object
        return meta

    def pin(self) -> str:
        """The user PIN (from the 0600 file). Treat it as a secret: never log it."""
        self._require()
        return self.pin_path.read_text().strip()

    def keys(self) -> list[dict[str, str]]:
        """[{label, key_type, id_hex, cert_path, uri, public_key_sha256}] for every key on the token
        (from token.json: no PKCS#11 call). public_key_sha256 is the SHA-256 of the key's DER
        SubjectPublicKeyInfo, so a rebuilt token shows new keys."""
        meta = self._require()
        return [
            {
                "label": k["label"],
                "key_type": k["key_type"],
                "id_hex": k["id_hex"],
                "cert_path": str(self.root / f"{k['label']}.pem"),
                "uri": self.uri(k["label"]),
                "public_key_sha256": k.get("public_key_sha256", ""),
            }
            for k in meta["keys"]
        ]

    def key(self, label_or_type: str) -> dict[str, str]:
        """One entry of ``keys()`` by label (device-p256) or key type (ecdsa-p256)."""
        ks = self.keys()
        for k in ks:
            if label_or_type in (k["label"], k["key_type"]):
                return k
        raise TokenError(
            f"no key labelled {label_or_type!r} in token {self.label!r}; known labels: "
            f"{', '.join(k['label'] for k in ks)} (key types: {', '.join(k['key_type'] for k in ks)})"
        )

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

    def describe(self) -> dict[str, Any]:
        """What other tools need: token label, config, module, CA and per key its URI and certificate."""
        meta = self._require()
        return {
            "token": self.label,
            "root": str(self.root),
            "conf_path": str(self.conf_path),
            "env": self.env(),
            "module_path": str(self.module_path),
            "pin_file": str(self.pin_path),
            "ca_path": meta.get("ca_path", ""),
            "keys": self.keys(),
        }

    def print_summary(self, file: IO[str] | None = None) -> None:
        d = self.describe()
        lines = [
            f"token {d['token']!r}  ({d['root']})",
            f"  SOFTHSM2_CONF={d['conf_path']}",
            f"  module {d['module_path']}",
            f"  user PIN in {d['pin_file']} (mode 0600)",
            f"  client CA {d['ca_path']}",
        ]
        for k in d["keys"]:
            lines.append(f"  {k['key_type']:24} {k['uri']}")
            lines.append(f"  {'':24} certificate {k['cert_path']}")
        print("\n".join(lines), file=file)
