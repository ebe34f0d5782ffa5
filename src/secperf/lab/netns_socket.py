"""Sockets inside a named network namespace (setns() on this thread), and the kernel's receive
timestamps of what crosses a link."""

from __future__ import annotations

import ctypes
import os
import socket
import struct
import threading
from collections.abc import Iterable

from .netns_check import LinkError

CLONE_NEWNET = 0x40000000
_NS_LOCK = threading.Lock()

_libc = None


# Kernel receive timestamps, to time what crosses a link as ping does (the benchmark's echoes, the
# tests' one-way delays): Linux's SO_TIMESTAMPNS (asm-generic/socket.h), which Python's socket
# module does not name; the stamp comes as a struct timespec on CLOCK_REALTIME.
SO_TIMESTAMPNS = 35


def kernel_rx_ns(ancdata: Iterable[tuple[int, int, bytes]]) -> int | None:
    """The kernel's receive time (ns, CLOCK_REALTIME) in a recvmsg() result's ancillary data, from
    a socket with SO_TIMESTAMPNS set; None if it carries none."""
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
            sec, nsec = struct.unpack("ll", data[:16])
            return int(sec) * 1_000_000_000 + int(nsec)
    return None


def netns_socket(
    ns: str, family: int = socket.AF_INET, type: int = socket.SOCK_STREAM, proto: int = 0
) -> socket.socket:
    """Create a socket inside the named network namespace: setns() on this thread, socket(), back."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    with _NS_LOCK:
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open(f"/run/netns/{ns}", os.O_RDONLY)
        try:
            if _libc.setns(target, CLONE_NEWNET) != 0:
                raise LinkError(f"cannot enter namespace {ns}: {os.strerror(ctypes.get_errno())}")
            try:
                return socket.socket(family, type, proto)
            finally:
                if _libc.setns(own, CLONE_NEWNET) != 0:
                    raise LinkError(f"cannot return from namespace {ns}: {os.strerror(ctypes.get_errno())}")
        finally:
            os.close(own)
            os.close(target)
