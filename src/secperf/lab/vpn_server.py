"""OpenVPN 2.6 in TLS server mode inside the VPN lab's server namespace."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .pki import CertSet
from .services import Service
from .vpn_log import DONE_RE, LogReader
from .vpn_netns import TUN_MASK, TUN_NET, TUN_SERVER_IP, LinkNamespaces, NetnsPair, VpnConfigError, VpnError

VPN_PORT = 1194
PROTOS = ("udp", "tcp")
SERVER_KEY_TYPES = ("ecdsa-p256", "rsa-2048")


def openvpn_exe() -> str:
    exe = shutil.which("openvpn") or "/usr/sbin/openvpn"
    if not os.path.exists(exe):
        raise VpnError("openvpn is not installed: run scripts/bootstrap (Debian package openvpn)")
    return exe


def quote(path: Path | str) -> str:
    s = str(path)
    if any(c in s for c in "\n\r'"):
        raise VpnConfigError(f"path {s!r} cannot be written into an OpenVPN config (newline or quote)")
    return f"'{s}'"


SERVER_CONF = """\
# secperf: OpenVPN TLS server mode (generated)
server {tun_net} {tun_mask}
topology subnet
dev tun
proto {proto}
local {local}
port {port}
ca {ca}
cert {cert}
key {key}
dh none
tls-version-min 1.2
verify-client-cert require
remote-cert-tls client
keepalive 10 60
{socket_flags}verb 3
machine-readable-output
"""
# Over TCP both ends set TCP_NODELAY (as secperf's mosquitto does by default): without it Nagle holds
# the client's small control-channel records until the server's ACK, one more round trip in the TLS
# phase (over a 25 ms one-way link: TLS phase 155 ms against 104 ms, tunnel up 308 ms against 262).
TCP_SOCKET_FLAGS = "socket-flags TCP_NODELAY\n"


class OpenVpnServer(Service):
    """OpenVPN 2.6 in TLS server mode inside the server namespace; ready once its log says
    "Initialization Sequence Completed". Client certificates are required and verified against
    ``client_ca``."""

    name = "openvpn-server"

    def __init__(
        self,
        ns: NetnsPair | LinkNamespaces,
        certs: CertSet,
        client_ca: Path,
        proto: str = "udp",
        workdir: Path | None = None,
        port: int = VPN_PORT,
    ):
        if proto not in PROTOS:
            raise VpnConfigError(f"OpenVPN transport {proto!r} must be one of {', '.join(PROTOS)}")
        if certs.key_type not in SERVER_KEY_TYPES:
            raise VpnConfigError(
                f"OpenVPN server certificate type {certs.key_type!r} must be one of {', '.join(SERVER_KEY_TYPES)}"
            )
        super().__init__(workdir)
        self.ns, self.certs, self.client_ca, self.proto, self.port = ns, certs, Path(client_ca), proto, port
        self.reader: LogReader | None = None
        self.conf_path = self.workdir / "server.conf"

    def start(self, timeout_s: float = 10.0) -> OpenVpnServer:
        conf = SERVER_CONF.format(
            tun_net=TUN_NET,
            tun_mask=TUN_MASK,
            proto="udp" if self.proto == "udp" else "tcp-server",
            socket_flags="" if self.proto == "udp" else TCP_SOCKET_FLAGS,
            local=self.ns.server_ip,
            port=self.port,
            ca=quote(self.client_ca),
            cert=quote(self.certs.chain),
            key=quote(self.certs.key),
        )
        self.conf_path.write_text(conf)
        proc = self._spawn(
            self.ns.exec_argv("srv", [openvpn_exe(), "--config", str(self.conf_path)]), stdout=subprocess.PIPE
        )
        self.reader = LogReader(proc, self.log_path, DONE_RE)
        if not self.reader.hit.wait(timeout_s) or self.reader.hit_line is None:
            raise self.fail(f"did not report 'Initialization Sequence Completed' within {timeout_s:g} s")
        return self

    def describe(self) -> dict[str, Any]:
        return {
            "server": "openvpn",
            "port": self.port,
            "proto": self.proto,
            "namespace": self.ns.srv,
            "address": self.ns.server_ip,
            "tunnel_address": TUN_SERVER_IP,
        }

    def rejection(self, since_us: int) -> str | None:
        """Why the server failed a client's handshake after ``since_us`` (its VERIFY ERROR or
        handshake-failure lines), or None."""
        if self.reader is None:
            return None
        lines = [msg for t, msg in list(self.reader.lines) if t >= since_us]
        if not any(re.search(r"TLS Error: TLS handshake failed|AUTH_FAILED", m) for m in lines):
            return None
        why = [m for m in lines if re.search(r"VERIFY ERROR|Sent fatal SSL alert|TLS handshake failed", m)]
        return " | ".join(why[-3:])

    def recent_errors(self, since_us: int) -> list[str]:
        """Server log lines after ``since_us`` that explain a rejected client."""
        if self.reader is None:
            return []
        return [
            msg
            for t, msg in list(self.reader.lines)
            if t >= since_us and re.search(r"VERIFY ERROR|TLS Error|TLS_ERROR|error=|AUTH|certificate", msg)
        ]
