"""The lab token's layout: its root, label and the files inside the root (see lab/token for the
whole layout), its key specs by label and the PKI its certificates come from. The base every part of
LabToken (provisioning, in-process use, the token itself) builds on, so each sees the same paths."""

from __future__ import annotations

from pathlib import Path

from ..core.paths import secperf_home
from .pki import LabPKI
from .token_keys import KEY_SPECS, KeySpec
from .token_module import TokenError, find_module

DEFAULT_LABEL = "secperf"


class TokenLayout:
    def __init__(
        self, root: Path | str | None = None, label: str = DEFAULT_LABEL, *, pki: LabPKI | None = None
    ) -> None:
        self.root = Path(root) if root is not None else secperf_home() / "token"
        if not label or len(label.encode()) > 32:
            raise TokenError(f"token label {label!r} must be 1-32 bytes (PKCS#11 CK_TOKEN_INFO.label)")
        self.label = label
        self._pki = pki

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
    def pki(self) -> LabPKI:
        if self._pki is None:
            self._pki = LabPKI()
        return self._pki

    def _spec(self, label: str) -> KeySpec:
        for k in KEY_SPECS:
            if k.label == label:
                return k
        raise TokenError(
            f"no key labelled {label!r} in token {self.label!r}; known labels: {', '.join(k.label for k in KEY_SPECS)}"
        )
