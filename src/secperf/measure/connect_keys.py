"""The client's key material for a `secperf connect` row: certificate and key (software), or the
token key behind the secure-element shim with the environment a client process needs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.paths import private_dir, write_private
from ..lab.pki import LabPKI
from ..lab.token import LabToken, openssl_engine_conf
from .connect_config import WEAK_RSA_KEY, WEAK_RSA_SECLEVEL, ConnectConfig, ConnectError
from .probe import find_shim
from .signer import key_type_for, read_log, shim_env
from .vpn import run_seed

if TYPE_CHECKING:
    from ..inputs.se_profiles import Profile


class KeyMaterial:
    """The client certificate and key for a key source, and the environment a client process needs
    (the shim in front of SoftHSM2 with the source's profile, its call log)."""

    def __init__(
        self,
        cfg: ConnectConfig,
        pki: LabPKI,
        workdir: Path,
        seed: int,
        profile: Profile | None = None,
        client_pair: tuple[Path, Path] | None = None,
    ) -> None:
        self.cfg = cfg
        self.token: LabToken | None = None
        self.profile: Profile | None = None  # token keys: the secure-element profile the shim plays
        self.shim_dir: Path | None = None
        self.cert: Path
        self.key: Path | None
        self.uri: str | None
        self.shim_log: Path | None = None
        self.security_level: int | None = None  # OpenSSL security level both sides run at (None: default)
        self.env = dict(os.environ)
        if client_pair is not None:
            self.cert, self.key, self.uri = Path(client_pair[0]), Path(client_pair[1]), None
            return
        if cfg.key_source == "software":
            cs = pki.client(cfg.key_type)
            self.cert, self.key, self.uri = cs.cert, cs.key, None
            return

        name = cfg.profile
        if name is None:
            raise ConnectError(f"unknown key source {cfg.key_source!r}")
        if profile is None or profile.name != name:
            raise ConnectError(f"key source {cfg.key_source}: the secure-element profile {name!r} was not resolved")
        self.token = LabToken(pki=pki).ensure()
        key = self.token.key(key_type_for(profile, cfg.key_type))  # the 1998 RSA card: its RSA-1024 key
        if key["key_type"] == WEAK_RSA_KEY:
            self.security_level = WEAK_RSA_SECLEVEL
        self.cert = Path(key["cert_path"])
        self.key = None
        # the PIN stays in its 0600 file: libp11 reads it from there (pin-source), never from argv
        self.uri = self.token.uri(key["label"], pin_file=True)
        shim_dir = private_dir(workdir / "shim")
        self.profile, self.shim_dir = profile, shim_dir
        self.env, self.shim_log = shim_env(self.token, profile, shim_dir, seed)
        self.env["SECPERF_PKCS11_MODULE"] = str(find_shim())
        # Clients other than the probe find libp11's module through OpenSSL's configuration: point
        # the pkcs11 engine at the shim so their token calls pass the secure-element profile too.
        conf = shim_dir / "openssl.cnf"
        write_private(conf, openssl_engine_conf(find_shim(), init=False, security_level=self.security_level).encode())
        self.env["OPENSSL_CONF"] = str(conf)

    def run_env(self, i: int, seed: int) -> tuple[dict[str, str], Path]:
        """A client process of its own for connection `i` (cold key session): the shim loaded afresh
        with a seed per run (one seed for all would draw the same delays each time) and its own log."""

        if self.token is None or self.profile is None or self.shim_dir is None:
            raise ConnectError(f"{self.cfg.key_source}: a client process of its own per connection needs a token key")
        env, log = shim_env(self.token, self.profile, private_dir(self.shim_dir / f"run-{i}"), run_seed(seed, i))
        return {
            **env,
            "SECPERF_PKCS11_MODULE": self.env["SECPERF_PKCS11_MODULE"],
            "OPENSSL_CONF": self.env["OPENSSL_CONF"],
        }, log

    def token_pin(self) -> Path:
        """The token's 0600 PIN file (a token key only)."""
        if self.token is None:
            raise ConnectError(f"{self.cfg.key_source}: a software key has no token PIN")
        return self.token.pin_path

    def probe_args(self) -> list[str]:
        return ["--cert", str(self.cert), "--key", self.uri or str(self.key)]

    def calls(self) -> list[dict[str, Any]]:
        return read_log(self.shim_log) if self.shim_log else []
