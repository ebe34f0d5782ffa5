"""The SoftHSM2 PKCS#11 module behind the lab token: finding it and its utility, the token's own
SoftHSM2 configuration, and the module loaded in-process (python-pkcs11), initialised with the
right configuration."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

from ..core.errors import SetupError

MODULE_CANDIDATES = (
    "/usr/lib/softhsm/libsofthsm2.so",
    "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
    "/usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so",
    "/usr/lib64/pkcs11/libsofthsm2.so",
    "/usr/lib/pkcs11/libsofthsm2.so",
    "/usr/local/lib/softhsm/libsofthsm2.so",
)
SUBPROCESS_TIMEOUT_S = 120


class TokenError(SetupError):
    """The lab token cannot be set up or used; the message says what and what to do (never a PIN)."""


_LIB_LOCK = threading.RLock()
ACTIVE_CONF: dict[str, str | None] = {}  # module path -> SOFTHSM2_CONF it was initialised with


def pkcs11_package() -> ModuleType:
    try:
        import pkcs11  # reason: guarded: python-pkcs11 may be missing
    except ImportError:
        raise TokenError(
            "the Python package python-pkcs11 is not installed: run scripts/bootstrap "
            "(it installs secperf's dependencies into .venv)"
        ) from None
    return pkcs11


def lib_for(module: Path, conf: Path) -> Any:
    """The python-pkcs11 library for ``module``, initialised with ``conf`` as SOFTHSM2_CONF
    (a ``pkcs11.lib``: python-pkcs11 ships no type information)."""
    pkcs11 = pkcs11_package()
    so, want = str(module), str(conf)
    with _LIB_LOCK:
        prev = os.environ.get("SOFTHSM2_CONF")
        os.environ["SOFTHSM2_CONF"] = want
        try:
            was_loaded = so in getattr(pkcs11, "_loaded", {})
            try:
                lib = pkcs11.lib(so)
                if was_loaded and ACTIVE_CONF.get(so) != want:
                    lib.reinitialize()
            except pkcs11.PKCS11Error as exc:
                raise TokenError(
                    f"the PKCS#11 module {so} failed to initialise with {want} "
                    f"({type(exc).__name__}): check that file (SoftHSM2 config)"
                ) from None
            ACTIVE_CONF[so] = want
        finally:
            if prev is None:
                os.environ.pop("SOFTHSM2_CONF", None)
            else:
                os.environ["SOFTHSM2_CONF"] = prev
        return lib


def release(module: Path) -> None:
    """Finalise the module so the next use re-reads its config (after the token moved or changed)."""
    pkcs11 = pkcs11_package()
    so = str(module)
    with _LIB_LOCK:
        lib = getattr(pkcs11, "_loaded", {}).get(so)
        if lib is not None and lib.initialized:
            with contextlib.suppress(pkcs11.PKCS11Error):
                lib.finalize()
        ACTIVE_CONF[so] = None


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
    found = [
        f
        for pattern in (
            "/usr/lib/*/softhsm/libsofthsm2.so",
            "/usr/lib*/softhsm/libsofthsm2.so",
            "/usr/local/lib*/softhsm/libsofthsm2.so",
            "/usr/lib*/pkcs11/libsofthsm2.so",
        )
        for f in sorted(glob.glob(pattern))
    ]
    if found:
        return Path(found[0])
    raise TokenError(
        "the SoftHSM2 PKCS#11 module (libsofthsm2.so) is not installed: install the Debian "
        "package softhsm2 (scripts/bootstrap does: sudo apt-get install softhsm2)"
    )


def softhsm2_util() -> str:
    exe = shutil.which("softhsm2-util")
    if not exe:
        raise TokenError(
            "softhsm2-util not found on PATH: install the Debian package softhsm2 "
            "(scripts/bootstrap does: sudo apt-get install softhsm2)"
        )
    return exe


def conf_text(tokendir: Path) -> str:
    return (
        "# secperf lab token: SoftHSM2 config for this directory only (not the system-wide one)\n"
        f"directories.tokendir = {tokendir}\n"
        "objectstore.backend = file\n"
        "objectstore.umask = 0077\n"
        "log.level = ERROR\n"
        "slots.removable = false\n"
    )
