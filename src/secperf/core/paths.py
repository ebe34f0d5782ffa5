"""Where secperf keeps state that outlives a run (key cache, lab PKI): $SECPERF_HOME, else
~/.cache/secperf. Directories holding private keys are created mode 0700."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import InputError
from .writes import atomic_write


def secperf_home() -> Path:
    env = os.environ.get("SECPERF_HOME")
    if env:
        if os.path.exists(env) and not os.path.isdir(env):
            raise InputError(
                f"SECPERF_HOME={env} is not a directory; point it at a directory (it holds the lab "
                f"PKI, the token and the key cache) or unset it"
            )
        if not os.path.exists(env):
            try:
                os.makedirs(env, mode=0o700, exist_ok=True)
            except OSError as exc:
                raise InputError(
                    f"SECPERF_HOME={env} cannot be created ({exc.strerror or exc}); point it at a "
                    f"writable directory or unset it"
                ) from None
        return Path(env)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "secperf"


def private_dir(path: Path) -> Path:
    """Create (if needed) a directory only its owner can enter."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, 0o700)
    except OSError as exc:  # where it lies is the user's choice (SECPERF_HOME, HOME, --out): bad input, exit 2
        raise InputError(
            f"cannot create the private directory {path}: {exc.strerror or exc}; check SECPERF_HOME "
            f"(or HOME, or --out) points at a writable place"
        ) from None
    return path


def write_private(path: Path, data: bytes) -> None:
    """Write a file created with mode 0600 (never world-readable, even for a moment), atomically: the
    one writer, whose temp file is created 0600 (mkstemp)."""
    atomic_write(Path(path), data, mode=0o600)
