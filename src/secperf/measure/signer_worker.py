"""Worker process for `secperf signer`: signs through a PKCS#11 module (the latency shim) with
python-pkcs11 and prints one JSON line per iteration with its monotonic start/end times, so the
parent can match the shim's per-call log to iterations. Runs in its own process because a PKCS#11
library is initialised once per process with one profile.

Input: one JSON object on stdin: module, token_label, key_label, key_type, mode (sign_only|total|
jwt_fresh|jwt_cached), n, warmup, pin_file; JWT modes also port, ca_file, lifetime_s, key_session
(warm: one session for all signatures; cold: a session, login and key search per signature), and the
endpoint's addr and timeout_s (over an emulated link the worker itself runs in the device
namespace). Output: {"type":"iter",...} lines, then {"type":"end"}; errors per iteration are
failed samples ({"ok": false, "reason": ...}), a set-up error is {"type":"error","reason"}.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .jwt import jwt_loop, token_signer

MESSAGE = bytes(range(32))  # S2 signed a 32-byte message


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _sign(key: Any, key_type: str, pkcs11: ModuleType) -> bytes:  # key: a python-pkcs11 PrivateKey
    if key_type.startswith("ecdsa"):
        # SoftHSM2 offers raw CKM_ECDSA only: hash on the host, sign the digest
        return bytes(key.sign(hashlib.sha256(MESSAGE).digest(), mechanism=pkcs11.Mechanism.ECDSA))
    return bytes(key.sign(MESSAGE, mechanism=pkcs11.Mechanism.SHA256_RSA_PKCS))


def main() -> int:
    cfg = json.loads(sys.stdin.read())
    try:
        import pkcs11  # reason: guarded: python-pkcs11 may be missing
        from pkcs11 import ObjectClass  # reason: guarded: python-pkcs11 may be missing

        pin = open(cfg["pin_file"]).read().strip()
        lib = pkcs11.lib(cfg["module"])
        token = lib.get_token(token_label=cfg["token_label"])
    except Exception as exc:  # reported, never with the PIN
        _emit({"type": "error", "reason": f"{type(exc).__name__}: {exc}"})
        return 1
    mode, label, kt = cfg["mode"], cfg["key_label"], cfg["key_type"]
    kept = None
    if mode in ("jwt_fresh", "jwt_cached"):
        sign: Callable[[bytes], bytes]
        try:
            if cfg.get("key_session") == "cold":
                # a device waking for each request: open a session, log in, find the key, sign, close
                def sign_cold(data: bytes) -> bytes:
                    with token.open(user_pin=pin) as session:
                        k = session.get_key(object_class=ObjectClass.PRIVATE_KEY, label=label)
                        return token_signer(k, kt, pkcs11)[1](data)

                alg, sign = ("ES256" if kt.startswith("ecdsa") else "RS256"), sign_cold
            else:
                kept = token.open(user_pin=pin)
                key = kept.get_key(object_class=ObjectClass.PRIVATE_KEY, label=label)
                alg, sign = token_signer(key, kt, pkcs11)
            jwt_loop(
                alg,
                sign,
                fresh=mode == "jwt_fresh",
                port=cfg["port"],
                ca_file=cfg["ca_file"],
                n=cfg["n"],
                warmup=cfg["warmup"],
                lifetime_s=cfg.get("lifetime_s", 3600),
                emit=_emit,
                addr=cfg.get("addr", "127.0.0.1"),
                timeout_s=cfg.get("timeout_s", 10.0),
            )
        except Exception as exc:
            _emit({"type": "error", "reason": f"{type(exc).__name__}: {exc}"})
            return 1
        finally:
            kept.close() if kept is not None else None
        _emit({"type": "end"})
        return 0
    try:
        if mode == "sign_only":
            kept = token.open(user_pin=pin)
            key = kept.get_key(object_class=ObjectClass.PRIVATE_KEY, label=label)
        for i in range(cfg["warmup"] + cfg["n"]):
            t0 = time.monotonic_ns()
            try:
                if mode == "sign_only":
                    sig = _sign(key, kt, pkcs11)
                else:
                    with token.open(user_pin=pin) as session:
                        k = session.get_key(object_class=ObjectClass.PRIVATE_KEY, label=label)
                        sig = _sign(k, kt, pkcs11)
                t1 = time.monotonic_ns()
                _emit(
                    {
                        "type": "iter",
                        "i": i,
                        "warmup": i < cfg["warmup"],
                        "ok": True,
                        "start_ns": t0,
                        "end_ns": t1,
                        "sig_bytes": len(sig),
                    }
                )
            except Exception as exc:
                _emit(
                    {
                        "type": "iter",
                        "i": i,
                        "warmup": i < cfg["warmup"],
                        "ok": False,
                        "start_ns": t0,
                        "end_ns": time.monotonic_ns(),
                        "reason": f"{type(exc).__name__}: {exc}",
                    }
                )
    except Exception as exc:
        _emit({"type": "error", "reason": f"{type(exc).__name__}: {exc}"})
        return 1
    finally:
        if kept is not None:
            kept.close()
    _emit({"type": "end"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
