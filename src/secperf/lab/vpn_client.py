"""An OpenVPN client in the VPN lab's device namespace: its key (software or PKCS#11, the PIN
answered on the management socket from its 0600 file), one connection attempt timed from its log,
and OpenVPN's id of a token certificate."""

from __future__ import annotations

import os
import re
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core.wait import wait_until
from .services import Service
from .vpn_log import DONE_RE, FAIL_RE, LogReader, parse_line
from .vpn_netns import LinkNamespaces, NetnsPair, VpnConfigError, VpnError
from .vpn_server import PROTOS, TCP_SOCKET_FLAGS, VPN_PORT, OpenVpnServer, openvpn_exe, quote


@dataclass
class ClientKey:
    """Where the client's key lives: ``software`` (PEM cert + key files) or ``pkcs11`` (a token
    through a PKCS#11 provider, e.g. the secure-element shim, with the PIN in a 0600 file)."""

    kind: str
    cert: Path | None = None
    key: Path | None = None
    provider: Path | None = None
    pkcs11_id: str | None = None
    pin_file: Path | None = None
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind == "software":
            if not (self.cert and self.key):
                raise VpnConfigError("a software client key needs cert and key files")
        elif self.kind == "pkcs11":
            if not (self.provider and self.pkcs11_id and self.pin_file):
                raise VpnConfigError("a PKCS#11 client key needs provider, pkcs11_id and pin_file")
            mode = os.stat(self.pin_file).st_mode
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise VpnConfigError(
                    f"the PIN file {self.pin_file} is readable by others (mode {stat.S_IMODE(mode):o}); it must be 0600"
                )
        else:
            raise VpnConfigError(f"client key kind {self.kind!r} must be 'software' or 'pkcs11'")


CLIENT_CONF = """\
# secperf: OpenVPN TLS client (generated)
client
dev tun
proto {proto}
remote {remote} {port}
nobind
connect-retry-max 1
tls-exit
hand-window {hand_window}
ca {ca}
{key_lines}
remote-cert-tls server
verify-x509-name localhost name
tls-version-min 1.2
{socket_flags}verb 3
machine-readable-output
"""


@dataclass
class ClientRun:
    ok: bool
    reason: str | None
    lines: list[tuple[int, str]]
    spawn_us: int
    pin_query_us: int | None
    start_ns: int
    end_ns: int
    pid: int | None
    log_path: Path


class OpenVpnClient(Service):
    """One OpenVPN client process in the device namespace: ``connect()`` spawns it and waits for
    "Initialization Sequence Completed", a failure line, its exit or the timeout; ``stop()`` ends
    it by PID."""

    name = "openvpn-client"

    def __init__(
        self,
        ns: NetnsPair | LinkNamespaces,
        server_ca: Path,
        key: ClientKey,
        proto: str = "udp",
        workdir: Path | None = None,
        port: int = VPN_PORT,
    ):
        if proto not in PROTOS:
            raise VpnConfigError(f"OpenVPN transport {proto!r} must be one of {', '.join(PROTOS)}")
        super().__init__(workdir)
        self.ns, self.server_ca, self.key, self.proto, self.port = ns, Path(server_ca), key, proto, port
        self.conf_path = self.workdir / "client.conf"
        self.reader: LogReader | None = None
        self._pin_query_us: int | None = None
        self._pin_problem: str | None = None

    def _config(self, hand_window: int, mgmt_sock: Path | None) -> str:
        k = self.key
        if k.kind == "software":
            assert k.cert is not None and k.key is not None  # ClientKey.__post_init__ checked them
            key_lines = f"cert {quote(k.cert)}\nkey {quote(k.key)}"
        else:
            # ClientKey.__post_init__ checked them; the management socket is made for a PKCS#11 key
            assert k.pkcs11_id is not None and k.provider is not None and mgmt_sock is not None
            if "'" in k.pkcs11_id or "\n" in k.pkcs11_id:
                raise VpnConfigError(f"PKCS#11 id {k.pkcs11_id!r} cannot be written into an OpenVPN config")
            key_lines = (
                f"pkcs11-providers {quote(k.provider)}\npkcs11-id '{k.pkcs11_id}'\n"
                f"management {quote(mgmt_sock)} unix\nmanagement-client\nmanagement-query-passwords"
            )
        return CLIENT_CONF.format(
            proto="udp" if self.proto == "udp" else "tcp-client",
            socket_flags="" if self.proto == "udp" else TCP_SOCKET_FLAGS,
            remote=self.ns.server_ip,
            port=self.port,
            hand_window=hand_window,
            ca=quote(self.server_ca),
            key_lines=key_lines,
        )

    def start(self) -> OpenVpnClient:  # Service API: a client is started by connect()
        raise NotImplementedError("use OpenVpnClient.connect()")

    def connect(self, timeout_s: float = 20.0, server: OpenVpnServer | None = None) -> ClientRun:
        """Spawn the client and wait (at most ``timeout_s``). With ``server``, a rejection in the
        server's log ends the wait at once: with TLS 1.3 the client learns of a rejected
        certificate only when its handshake window expires."""
        listener, sock_dir, mgmt_sock = None, None, None
        try:
            if self.key.kind == "pkcs11":
                # unix socket paths are limited to 107 bytes: fall back to a short private directory
                sock_dir = None if len(str(self.workdir)) < 90 else Path(tempfile.mkdtemp(prefix="secperf-mgmt-"))
                mgmt_sock = (sock_dir or self.workdir) / "mgmt.sock"
                mgmt_sock.unlink(missing_ok=True)
                listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                listener.bind(str(mgmt_sock))
                os.chmod(mgmt_sock, 0o600)
                listener.listen(1)
            self.conf_path.write_text(self._config(max(5, int(timeout_s)), mgmt_sock))
            argv = [openvpn_exe(), "--config", str(self.conf_path)]
            if self.key.env:  # provider settings (SOFTHSM2_CONF, the shim's profile): paths, never secrets
                argv = ["env", *(f"{k}={v}" for k, v in sorted(self.key.env.items())), *argv]
            spawn_us = time.time_ns() // 1000
            start_ns = time.monotonic_ns()
            proc = self._spawn(self.ns.exec_argv("dev", argv), stdout=subprocess.PIPE)
            reader = self.reader = LogReader(
                proc, self.log_path, re.compile(f"{DONE_RE.pattern}|{FAIL_RE.pattern}", re.I)
            )
            mgmt = None
            if listener is not None:
                mgmt = threading.Thread(target=self._answer_pin, args=(listener, timeout_s), daemon=True)
                mgmt.start()
            refusals: list[str] = []

            def refused() -> bool:  # the server's log says it rejected this client: stop waiting
                why = server.rejection(spawn_us) if server is not None else None
                if why:
                    refusals.append(why)
                return bool(why)

            got = bool(wait_until(lambda: reader.hit.wait(0.05), timeout_s, interval_s=0.0, give_up=refused))
            rejected = refusals[0] if refusals else None
            end_ns = time.monotonic_ns()
            line = reader.hit_line
            ok = bool(got and line and DONE_RE.search(line))
            if ok:
                reason = None
            else:
                if rejected:
                    what = f"rejected by the server ({rejected})"
                elif not got:
                    what = f"no 'Initialization Sequence Completed' within {timeout_s:g} s"
                elif line:
                    what = f"failed: {line}"
                else:
                    reader.eof.wait(1.0)
                    rc = proc.poll()
                    how = f"exit {rc}" if rc is not None else "stdout closed"
                    what = f"exited ({how}) before the tunnel was up"
                if self._pin_problem:
                    what += f"; {self._pin_problem}"
                reason = f"openvpn client {what}; last log lines: " + " | ".join(self._tail(6))
            return ClientRun(
                ok=ok,
                reason=reason,
                lines=list(reader.lines),
                spawn_us=spawn_us,
                pin_query_us=self._pin_query_us,
                start_ns=start_ns,
                end_ns=end_ns,
                pid=proc.pid,
                log_path=self.log_path,
            )
        finally:
            if listener is not None:
                listener.close()
            if mgmt_sock is not None:
                mgmt_sock.unlink(missing_ok=True)
            if sock_dir is not None:
                shutil.rmtree(sock_dir, ignore_errors=True)

    def _tail(self, n: int) -> list[str]:
        if self.reader is None:
            return []
        return [(parse_line(x) or (0, x))[1] for x in self.reader.raw_tail[-n:]]

    def _answer_pin(self, listener: socket.socket, timeout_s: float) -> None:
        """Answer OpenVPN's management PIN query; the PIN is read from its 0600 file only now."""
        deadline = time.monotonic() + timeout_s
        try:
            listener.settimeout(timeout_s)
            conn, _ = listener.accept()
        except OSError:
            self._pin_problem = "OpenVPN did not connect to the management socket"
            return
        with conn:
            buf = bytearray()

            def exchange() -> bool:
                """Read what OpenVPN sent and answer its PIN queries; True once the conversation is over."""
                conn.settimeout(max(0.05, deadline - time.monotonic()))
                try:
                    data = conn.recv(4096)
                except OSError:
                    return True
                if not data:
                    return True
                buf.extend(data)
                while b"\n" in buf:
                    raw, _, rest = bytes(buf).partition(b"\n")
                    buf[:] = rest
                    line = raw.decode(errors="replace").strip()
                    m = re.match(r">PASSWORD:Need '([^']*)' password", line)
                    if m:
                        if self._pin_query_us is None:
                            self._pin_query_us = time.time_ns() // 1000
                        name = m.group(1).replace("\\", "\\\\").replace('"', '\\"')
                        pin_file = self.key.pin_file
                        assert pin_file is not None  # only a PKCS#11 key is asked; __post_init__ checked it
                        try:
                            pin = Path(pin_file).read_text().strip()
                        except OSError as exc:
                            self._pin_problem = f"the PIN file could not be read ({exc.strerror})"
                            break
                        conn.sendall(f'password "{name}" {pin}\n'.encode())
                        del pin
                    elif line.startswith(">PASSWORD:Verification Failed"):
                        self._pin_problem = "the token rejected the PIN"
                return False

            wait_until(exchange, deadline - time.monotonic(), interval_s=0.0)


def pkcs11_id(module: Path, env: dict[str, str], key_label: str, timeout_s: float = 30.0) -> str:
    """OpenVPN's serialized PKCS#11 id of the certificate labelled ``key_label`` (from
    ``openvpn --show-pkcs11-ids MODULE``; the module sees ``env``, e.g. SOFTHSM2_CONF)."""
    try:
        r = subprocess.run(
            [openvpn_exe(), "--show-pkcs11-ids", str(module)],
            capture_output=True,
            text=True,
            env=dict(os.environ, **env),
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise VpnError(f"openvpn --show-pkcs11-ids did not finish within {timeout_s:g} s") from None
    dn = None
    for line in r.stdout.splitlines():
        s = line.strip()
        if s.startswith("DN:"):
            dn = s
        elif s.startswith("Serialized id:") and dn and re.search(rf"device {re.escape(key_label)}\b", dn):
            return s.split(":", 1)[1].strip()
    raise VpnError(
        f"no certificate for key {key_label!r} in `openvpn --show-pkcs11-ids {module}` "
        f"(exit {r.returncode}): {(r.stderr or r.stdout).strip()[-300:]}"
    )
