"""The holder processes of a rootless link, from the owner's side (the holder itself is
lab/nsholder.py): a network namespace in a user namespace, kept while the holder runs; it makes
sockets inside on request."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import threading

from . import registry
from .netns_check import LinkError, holder_argv


class Holder:
    """A holder process of a rootless link (lab/nsholder.py): a network namespace in a user
    namespace, kept while it runs; it makes sockets inside on request."""

    def __init__(self, join_userns: str | None = None, timeout_s: float = 10.0):
        self.ctl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = holder_argv("--parent", str(os.getpid()), *(("--join-userns", join_userns) if join_userns else ()))
        self._lock = threading.Lock()
        try:
            self.proc = registry.spawn(
                argv, "netns holder", stdin=theirs, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd="/"
            )
        finally:
            theirs.close()
        self.pid = self.proc.pid
        self.ctl.settimeout(timeout_s)
        try:
            msg = self.ctl.recv(4096)
        except OSError:
            msg = b""
        if msg != b"ok":
            self.ctl.close()
            why = msg.decode(errors="replace").removeprefix("err ") or self._stderr() or "no answer within 10 s"
            self.close()
            raise LinkError(f"cannot create the link's user/network namespace: {why}")
        self.user_ns, self.net_ns = f"/proc/{self.pid}/ns/user", f"/proc/{self.pid}/ns/net"
        self.net_ident = os.readlink(self.net_ns)

    def _stderr(self) -> str:
        try:
            _, err = self.proc.communicate(timeout=2)
        except (subprocess.TimeoutExpired, ValueError):
            return ""
        return (err or b"").decode(errors="replace").strip()

    def socket(self, family: int, type: int, proto: int = 0) -> socket.socket:
        with self._lock:
            self.ctl.send(f"socket {int(family)} {int(type)} {int(proto)}".encode())
            msg, fds, _, _ = socket.recv_fds(self.ctl, 256, 1)
        if msg == b"ok" and len(fds) == 1:
            return socket.socket(fileno=fds[0])
        for fd in fds:
            os.close(fd)
        if not msg:
            raise LinkError("the link's namespace holder is gone (the link was closed?)")
        _, code, text = (msg.decode(errors="replace").split(" ", 2) + ["", ""])[:3]
        raise OSError(int(code) if code.isdigit() else errno.EIO, text)

    def close(self) -> None:
        """End of file tells the holder to stop what is left inside and exit; SIGKILL if it does not."""
        self.ctl.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        registry.forget(self.proc)
        if self.proc.stderr:
            self.proc.stderr.close()
