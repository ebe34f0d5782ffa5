"""Lightweight MACs: Chaskey and Chaskey-12 from native/mac (C, written from the specification),
called through ctypes.

    >>> from secperf.mac import chaskey
    >>> chaskey(bytes(16), b"frame", rounds=8, tag_len=8).hex()   # doctest: +SKIP

The library is found like the other native artefacts: $SECPERF_MAC_LIB, the copy installed inside
the package (secperf/lib), a local CMake build.
"""

from __future__ import annotations

import ctypes
from functools import lru_cache

from ..core.errors import InputError
from ..core.native import find_native

LIB_NAME = "libsecperf_mac.so"
KEY_BYTES = 16
ROUNDS = (8, 12)
TAG_MIN, TAG_MAX = 8, 16

__all__ = ["chaskey", "Chaskey", "ROUNDS", "TAG_MIN", "TAG_MAX", "KEY_BYTES"]


class _Ctx(ctypes.Structure):
    # mirrors chaskey_ctx in native/mac/chaskey.h
    _fields_ = [
        ("k1", ctypes.c_uint32 * 4),
        ("k2", ctypes.c_uint32 * 4),
        ("v", ctypes.c_uint32 * 4),
        ("buf", ctypes.c_uint8 * 16),
        ("buf_len", ctypes.c_uint),
        ("rounds", ctypes.c_uint),
    ]


@lru_cache(maxsize=1)
def _lib() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(find_native(LIB_NAME, "lib", "SECPERF_MAC_LIB", "native/mac")))
    u8p, sz = ctypes.c_char_p, ctypes.c_size_t
    lib.chaskey_mac.argtypes = [ctypes.c_void_p, sz, u8p, sz, u8p, ctypes.c_uint]
    lib.chaskey_mac.restype = ctypes.c_int
    lib.chaskey_init.argtypes = [ctypes.POINTER(_Ctx), u8p, ctypes.c_uint]
    lib.chaskey_init.restype = ctypes.c_int
    lib.chaskey_update.argtypes = [ctypes.POINTER(_Ctx), u8p, sz]
    lib.chaskey_update.restype = None
    lib.chaskey_final.argtypes = [ctypes.POINTER(_Ctx), ctypes.c_void_p, sz]
    lib.chaskey_final.restype = ctypes.c_int
    return lib


def _check(key: bytes, rounds: int, tag_len: int) -> bytes:
    key = bytes(key)
    if len(key) != KEY_BYTES:
        raise InputError(f"Chaskey key must be {KEY_BYTES} bytes, got {len(key)}")
    if rounds not in ROUNDS:
        raise InputError(f"rounds must be 8 (Chaskey) or 12 (Chaskey-12), got {rounds}")
    if not TAG_MIN <= tag_len <= TAG_MAX:
        raise InputError(f"tag_len must be {TAG_MIN}..{TAG_MAX} bytes, got {tag_len}")
    return key


def chaskey(key: bytes, msg: bytes, rounds: int = 8, tag_len: int = 16) -> bytes:
    """The Chaskey (rounds=8) or Chaskey-12 (rounds=12) tag of msg under a 16-byte key."""
    key = _check(key, rounds, tag_len)
    msg = bytes(msg)
    out = ctypes.create_string_buffer(tag_len)
    if _lib().chaskey_mac(out, tag_len, msg, len(msg), key, rounds) != 0:
        raise InputError("chaskey_mac rejected its arguments")
    return out.raw


class Chaskey:
    """Incremental Chaskey: update() any number of times, then digest() once."""

    def __init__(self, key: bytes, rounds: int = 8, tag_len: int = 16):
        key = _check(key, rounds, tag_len)
        self._ctx = _Ctx()
        self._tag_len = tag_len
        self._done = False
        if _lib().chaskey_init(ctypes.byref(self._ctx), key, rounds) != 0:
            raise InputError("chaskey_init rejected its arguments")

    def update(self, data: bytes) -> Chaskey:
        if self._done:
            raise InputError("update() after digest()")
        data = bytes(data)
        _lib().chaskey_update(ctypes.byref(self._ctx), data, len(data))
        return self

    def digest(self) -> bytes:
        if self._done:
            raise InputError("digest() was already taken (the context is wiped)")
        out = ctypes.create_string_buffer(self._tag_len)
        rc = _lib().chaskey_final(ctypes.byref(self._ctx), out, self._tag_len)
        self._done = True
        if rc != 0:
            raise InputError("chaskey_final rejected its arguments")
        return out.raw
