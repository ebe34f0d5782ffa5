"""The TLS VPN lab: OpenVPN 2.6 in TLS server mode and its client, each in a network namespace
that secperf creates and deletes, joined by a veth pair.

Layout (all inside namespaces; nothing touches the host's interfaces or routes)::

    secperf-vpn-<pid>-<n>-srv                     secperf-vpn-<pid>-<n>-dev
      vpn-srv 10.200.0.1/30  <──── veth ────>       vpn-dev 10.200.0.2/30
      tun0    10.201.0.1/24  (openvpn --server)     tun0    10.201.0.x/24 (openvpn --client)

Over an emulated link (``LinkNamespaces(link)``, lab/netns.Link) the same server and client run in
the link's two namespaces instead (server ``link.server_addr`` 10.77.0.2, device 10.77.0.1), so the
control channel, the tunnel and the tunnel ping cross the link's relay with its delay, loss and
rate; the Link creates and deletes those namespaces, not this module.

Why server mode: OpenVPN's point-to-point TLS mode has a built-in step of about one second before
the tunnel comes up; server mode (``--server``, ``--topology subnet``, pushed ifconfig) completes
in milliseconds, which is what a device connecting to a VPN concentrator sees.

Timing comes from OpenVPN's own log: ``--machine-readable-output`` prefixes every line with
``SECONDS.MICROSECONDS FLAGS`` (gettimeofday, i.e. CLOCK_REALTIME, µs resolution), where the plain
``--log`` timestamps have only whole seconds. ``parse_client_log`` turns one client log into the
establishment time (first socket/link line → "Initialization Sequence Completed") and its phases.

PKCS#11 PIN: OpenVPN 2.6 asks for a token PIN only on the console or, with
``--management-query-passwords``, on its management interface. The client is started with
``--management SOCKET unix --management-client``: secperf listens on a unix socket in a private
(0700) directory before the client starts, OpenVPN connects to it, and secperf answers
``>PASSWORD:Need 'LABEL token' password`` with ``password "LABEL token" PIN``, the PIN read from
the token's 0600 file at that moment. The PIN never appears on a command line, in a config file or
in a log (OpenVPN logs the command as ``password [...]``). pkcs11-helper asks for the PIN when the
key is first used, i.e. during the TLS handshake: that wait is its own phase so it can be told
apart from the token's login and signature.

Processes are stopped by their PID; each namespace pair is deleted on exit of its ``with`` block
(also on KeyboardInterrupt) and at interpreter exit. ``sweep_stale()`` deletes pairs whose owner
process (the pid in the name) is gone.
"""

from __future__ import annotations

import atexit
import itertools
import math
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

from . import registry
from .netns import kill_pids, list_namespaces, namespace_pids
from .pki import CertSet
from .services import Service, ServiceError
from ..core.errors import MeasurementError

PREFIX = "secperf-vpn-"
_NAME_RE = re.compile(r"^secperf-vpn-(\d+)-(\d+)-(srv|dev)$")
VETH_SRV, VETH_DEV = "vpn-srv", "vpn-dev"
LINK_SRV_IP, LINK_DEV_IP, LINK_PREFIX = "10.200.0.1", "10.200.0.2", 30
TUN_NET, TUN_MASK, TUN_SERVER_IP = "10.201.0.0", "255.255.255.0", "10.201.0.1"
VPN_PORT = 1194
PROTOS = ("udp", "tcp")
SERVER_KEY_TYPES = ("ecdsa-p256", "rsa-2048")
_IP_TIMEOUT_S = 10

_LIVE_NS: set["NetnsPair"] = set()


class VpnError(MeasurementError):
    """The VPN lab could not be set up (not root, ip failed, openvpn missing); the message says which."""


def _teardown_all() -> None:
    for ns in list(_LIVE_NS):
        ns.teardown()


atexit.register(_teardown_all)


# --- network namespaces --------------------------------------------------------------------------
def require_root() -> None:
    if os.geteuid() != 0:
        raise VpnError("the OpenVPN lab needs root (network namespaces, veth and tun devices)")


def openvpn_exe() -> str:
    exe = shutil.which("openvpn") or "/usr/sbin/openvpn"
    if not os.path.exists(exe):
        raise VpnError("openvpn is not installed: run scripts/bootstrap (Debian package openvpn)")
    return exe


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    try:
        r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=_IP_TIMEOUT_S,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise VpnError(f"`ip {' '.join(args)}` did not finish within {_IP_TIMEOUT_S} s") from None
    except FileNotFoundError:
        raise VpnError("the `ip` command is missing: install iproute2") from None
    if check and r.returncode != 0:
        raise VpnError(f"`ip {' '.join(args)}` failed (exit {r.returncode}): {r.stderr.strip()[-300:]}")
    return r


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale() -> list[str]:
    """Delete ``secperf-vpn-`` namespaces whose owner (the pid in the name) is no longer alive,
    stopping by PID any process still inside them (an OpenVPN left by the dead owner). Other
    namespaces are never touched. Returns the names deleted."""
    deleted = []
    for name in list_namespaces():
        m = _NAME_RE.match(name)
        if not m or _pid_alive(int(m.group(1))):
            continue
        kill_pids(namespace_pids(name))
        if _ip("netns", "del", name, check=False).returncode == 0:
            deleted.append(name)
    return deleted


class NetnsPair:
    """Two network namespaces (server, device) joined by a veth pair with a private /30.

    Use as a context manager; teardown stops any process left inside (by PID) and deletes both
    namespaces, also on KeyboardInterrupt and at interpreter exit."""

    _counter = itertools.count()

    def __init__(self):
        self.base = f"{PREFIX}{os.getpid()}-{next(self._counter)}"
        self.srv, self.dev = f"{self.base}-srv", f"{self.base}-dev"
        self.server_ip, self.device_ip = LINK_SRV_IP, LINK_DEV_IP
        self._created: list[str] = []

    def __enter__(self) -> "NetnsPair":
        try:
            self.create()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc):
        self.teardown()

    def create(self) -> "NetnsPair":
        require_root()
        sweep_stale()
        _LIVE_NS.add(self)
        for name in (self.srv, self.dev):
            registry.current().add_namespace(name, "vpn")  # listed before it exists: never missed
            _ip("netns", "add", name)
            self._created.append(name)
        # created directly inside the namespaces: no name is ever taken in the host namespace
        _ip("link", "add", VETH_SRV, "netns", self.srv, "type", "veth", "peer", "name", VETH_DEV, "netns", self.dev)
        for ns, dev, addr in ((self.srv, VETH_SRV, self.server_ip), (self.dev, VETH_DEV, self.device_ip)):
            _ip("-n", ns, "addr", "add", f"{addr}/{LINK_PREFIX}", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        return self

    def exec_argv(self, side: str, argv: list[str]) -> list[str]:
        """``ip netns exec NS argv``: ip execs the command, so the child's PID is the command's own."""
        _check_side(side)
        return ["ip", "netns", "exec", self.srv if side == "srv" else self.dev, *argv]

    def ping(self, target: str = TUN_SERVER_IP, timeout_s: float = 2.0) -> tuple[bool, float | None]:
        """One ICMP echo from the device namespace; (ok, rtt in µs from ping's output)."""
        return ping_from(self, target, timeout_s)

    def teardown(self) -> None:
        _LIVE_NS.discard(self)
        created, self._created = self._created, []
        for name in created:
            # only processes inside a namespace this object created: ours (an OpenVPN it started)
            try:
                kill_pids(namespace_pids(name))
            except VpnError:
                pass
        for name in created:
            try:
                _ip("netns", "del", name, check=False)
            except VpnError:
                pass
            registry.current().remove_namespace(name)


def _check_side(side: str) -> None:
    if side not in ("srv", "dev"):
        raise ValueError(f"namespace side {side!r} must be 'srv' or 'dev'")


def ping_from(ns, target: str = TUN_SERVER_IP, timeout_s: float = 2.0) -> tuple[bool, float | None]:
    """One ICMP echo from the device side of ``ns`` (a NetnsPair or a LinkNamespaces) to ``target``;
    (ok, rtt in µs from ping's output). ``-W`` is whole seconds (rounded up, at least 1)."""
    wait_s = max(1, math.ceil(timeout_s))
    try:
        r = subprocess.run(ns.exec_argv("dev", ["ping", "-n", "-c", "1", "-W", str(wait_s), target]),
                           capture_output=True, text=True, timeout=wait_s + 3, stdin=subprocess.DEVNULL, cwd="/")
    except subprocess.TimeoutExpired:
        return False, None
    m = re.search(r"time=([\d.]+) ms", r.stdout)
    return r.returncode == 0, (float(m.group(1)) * 1000 if m else None)


class LinkNamespaces:
    """The NetnsPair interface (``exec_argv``, ``server_ip``, ``device_ip``, ``srv``, ``dev``,
    ``ping``) over an open emulated link (lab/netns.Link): OpenVPN's server runs in the link's server
    namespace bound to ``link.server_addr``, its client in the device namespace, and every packet
    between them (the control channel, the tunnel's data channel, the tunnel ping) crosses the
    link's relay. The Link owns the namespaces: this adapter creates and deletes nothing, and its
    ``with`` block leaves them to the Link's own ``close()``."""

    def __init__(self, link):
        if link is None or link.loopback:
            raise ValueError("LinkNamespaces needs an emulated link (for loopback use NetnsPair)")
        if link.dev_ns is None or link.srv_ns is None:
            raise VpnError("the emulated link is not open")
        self.link = link
        self.srv, self.dev = str(link.srv_ns), str(link.dev_ns)
        self.server_ip, self.device_ip = link.server_addr, link.dev_addr

    def __enter__(self) -> "LinkNamespaces":
        return self

    def __exit__(self, *exc):
        return None

    def exec_argv(self, side: str, argv: list[str]) -> list[str]:
        _check_side(side)
        return self.link.prefix(side) + list(argv)

    def ping(self, target: str = TUN_SERVER_IP, timeout_s: float = 2.0) -> tuple[bool, float | None]:
        """One ICMP echo from the device namespace over the link; (ok, rtt in µs)."""
        return ping_from(self, target, timeout_s)


# --- OpenVPN log --------------------------------------------------------------------------------
_LINE_RE = re.compile(r"^(\d+)\.(\d{6}) ([0-9a-fA-F]+) (.*)$")
START_RE = re.compile(r"TCP/UDP: Preserving recently used remote address|Socket Buffers|"
                      r"Attempting to establish TCP connection|link local|link remote")
DONE_RE = re.compile(r"Initialization Sequence Completed")
# a client line that means this attempt has failed (with --tls-exit the client also exits)
FAIL_RE = re.compile(r"TLS Error|TLS_ERROR|VERIFY ERROR|AUTH_FAILED|Options error|Exiting due to fatal error|"
                     r"SIGUSR1\[soft|SIGTERM\[soft,tls-error|Cannot load|PKCS#11: Cannot|"
                     r"Verification Failed|private key password verification failed", re.I)
PIN_CMD_RE = re.compile(r"MANAGEMENT: CMD 'password")
TLS_RE = re.compile(r"Control Channel: (TLSv[\d.]+)")
PEER_CERT_RE = re.compile(r"VERIFY OK: depth=0")

# phase name, the log line that ends it (in order); a phase whose line is absent merges into the next
PHASES = (
    ("tcp connect", re.compile(r"TCP connection established with")),
    ("control channel reset", re.compile(r"TLS: Initial packet from")),
    ("tls handshake", re.compile(r"Peer Connection Initiated with")),
    ("push request/reply", re.compile(r"PUSH: Received control message: 'PUSH_REPLY")),
    ("tun setup", DONE_RE),
)
PIN_PHASES = ("tls handshake: to PIN query", "PIN entry (management)", "tls handshake: login, sign, finish")


def parse_line(line: str) -> tuple[int, str] | None:
    """(realtime µs, message) of one --machine-readable-output line, None for other lines."""
    m = _LINE_RE.match(line.rstrip("\r\n"))
    if not m:
        return None
    return int(m.group(1)) * 1_000_000 + int(m.group(2)), m.group(4)


def parse_client_log(lines: list[tuple[int, str]], spawn_us: int | None = None,
                     pin_query_us: int | None = None) -> dict:
    """Establishment time and phases from one client's log.

    ``lines``: (realtime µs, message) in log order; ``spawn_us``: realtime µs just before the
    process was spawned; ``pin_query_us``: realtime µs when secperf received the PIN query on the
    management socket. Returns {ok, reason, usable_us, phases [{phase, us}] summing to usable_us,
    startup_us (spawn → first log line), init_us (first log line → first socket line), tls,
    peer_cert_verified}."""
    out = {"ok": False, "reason": None, "usable_us": None, "phases": [], "startup_us": None, "init_us": None,
           "tls": None, "peer_cert_verified": False}
    if not lines:
        out["reason"] = "the client wrote no log line"
        return out
    if spawn_us is not None:
        out["startup_us"] = float(lines[0][0] - spawn_us)
    for _t, msg in lines:
        m = TLS_RE.search(msg)
        if m and out["tls"] is None:
            out["tls"] = m.group(1)
        if PEER_CERT_RE.search(msg):
            out["peer_cert_verified"] = True
    start = next(((t, i) for i, (t, msg) in enumerate(lines) if START_RE.search(msg)), None)
    if start is None:
        out["reason"] = "no socket/link line in the client log"
        return out
    t0, i0 = start
    out["init_us"] = float(t0 - lines[0][0])
    end = next(((t, i) for i, (t, msg) in enumerate(lines) if i >= i0 and DONE_RE.search(msg)), None)
    if end is None:
        out["reason"] = "no 'Initialization Sequence Completed' in the client log"
        return out
    t_end, i_end = end
    phases = []
    prev_t, pos = t0, i0
    for name, rx in PHASES:
        hit = next(((t, i) for i, (t, msg) in enumerate(lines[pos:i_end + 1], start=pos) if rx.search(msg)), None)
        if hit is None:
            continue
        t, i = hit
        if name == "tls handshake" and pin_query_us is not None:
            pin_cmd = next((tt for ii, (tt, msg) in enumerate(lines[pos:i + 1], start=pos) if PIN_CMD_RE.search(msg)),
                           None)
            if pin_cmd is not None:
                q = min(max(pin_query_us, prev_t), pin_cmd)   # the query lies between the two log lines
                for pname, a, b in ((PIN_PHASES[0], prev_t, q), (PIN_PHASES[1], q, pin_cmd),
                                    (PIN_PHASES[2], pin_cmd, t)):
                    phases.append({"phase": pname, "us": float(b - a)})
                prev_t, pos = t, i
                continue
        phases.append({"phase": name, "us": float(t - prev_t)})
        prev_t, pos = t, i
    out.update(ok=True, usable_us=float(t_end - t0), phases=phases)
    return out


class _LogReader:
    """Reads a child's stdout for its whole life (so it never blocks on a full pipe), appends each
    line to a log file, keeps the parsed lines and signals when a line matches ``stop_rx``."""

    def __init__(self, proc: subprocess.Popen, log_path: Path, stop_rx: re.Pattern | None = None):
        self.lines: list[tuple[int, str]] = []
        self.raw_tail: list[str] = []
        self.hit = threading.Event()
        self.hit_line: str | None = None
        self.eof = threading.Event()
        self._stop_rx = stop_rx
        self._thread = threading.Thread(target=self._run, args=(proc, log_path), daemon=True)
        self._thread.start()

    def _run(self, proc, log_path):
        try:
            with open(log_path, "a", buffering=1) as log:
                for line in proc.stdout:
                    log.write(line)
                    self.raw_tail = (self.raw_tail + [line.rstrip()])[-40:]
                    p = parse_line(line)
                    if p is not None:
                        self.lines.append(p)
                        if self._stop_rx is not None and not self.hit.is_set() and self._stop_rx.search(p[1]):
                            self.hit_line = p[1]
                            self.hit.set()
        except (OSError, ValueError):
            pass
        finally:
            self.eof.set()
            self.hit.set()

    def join(self, timeout_s: float = 2.0) -> None:
        self._thread.join(timeout_s)


def _quote(path: Path | str) -> str:
    s = str(path)
    if any(c in s for c in "\n\r'"):
        raise ValueError(f"path {s!r} cannot be written into an OpenVPN config (newline or quote)")
    return f"'{s}'"


# --- the server -----------------------------------------------------------------------------------
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

    def __init__(self, ns: "NetnsPair | LinkNamespaces", certs: CertSet, client_ca: Path, proto: str = "udp",
                 workdir: Path | None = None, port: int = VPN_PORT):
        if proto not in PROTOS:
            raise ValueError(f"OpenVPN transport {proto!r} must be one of {', '.join(PROTOS)}")
        if certs.key_type not in SERVER_KEY_TYPES:
            raise ValueError(f"OpenVPN server certificate type {certs.key_type!r} must be one of "
                             f"{', '.join(SERVER_KEY_TYPES)}")
        super().__init__(workdir)
        self.ns, self.certs, self.client_ca, self.proto, self.port = ns, certs, Path(client_ca), proto, port
        self.reader: _LogReader | None = None
        self.conf_path = self.workdir / "server.conf"

    def start(self, timeout_s: float = 10.0) -> "OpenVpnServer":
        conf = SERVER_CONF.format(tun_net=TUN_NET, tun_mask=TUN_MASK,
                                  proto="udp" if self.proto == "udp" else "tcp-server",
                                  socket_flags="" if self.proto == "udp" else TCP_SOCKET_FLAGS,
                                  local=self.ns.server_ip, port=self.port, ca=_quote(self.client_ca),
                                  cert=_quote(self.certs.chain), key=_quote(self.certs.key))
        self.conf_path.write_text(conf)
        proc = self._spawn(self.ns.exec_argv("srv", [openvpn_exe(), "--config", str(self.conf_path)]),
                           stdout=subprocess.PIPE)
        self.reader = _LogReader(proc, self.log_path, DONE_RE)
        if not self.reader.hit.wait(timeout_s) or self.reader.hit_line is None:
            raise self.fail(f"did not report 'Initialization Sequence Completed' within {timeout_s:g} s")
        return self

    def describe(self) -> dict:
        return {"server": "openvpn", "port": self.port, "proto": self.proto, "namespace": self.ns.srv,
                "address": self.ns.server_ip, "tunnel_address": TUN_SERVER_IP}

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
        return [msg for t, msg in list(self.reader.lines)
                if t >= since_us and re.search(r"VERIFY ERROR|TLS Error|TLS_ERROR|error=|AUTH|certificate", msg)]


# --- the client -----------------------------------------------------------------------------------
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
    env: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.kind == "software":
            if not (self.cert and self.key):
                raise ValueError("a software client key needs cert and key files")
        elif self.kind == "pkcs11":
            if not (self.provider and self.pkcs11_id and self.pin_file):
                raise ValueError("a PKCS#11 client key needs provider, pkcs11_id and pin_file")
            mode = os.stat(self.pin_file).st_mode
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise ValueError(f"the PIN file {self.pin_file} is readable by others "
                                 f"(mode {stat.S_IMODE(mode):o}); it must be 0600")
        else:
            raise ValueError(f"client key kind {self.kind!r} must be 'software' or 'pkcs11'")


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

    def __init__(self, ns: "NetnsPair | LinkNamespaces", server_ca: Path, key: ClientKey, proto: str = "udp",
                 workdir: Path | None = None, port: int = VPN_PORT):
        if proto not in PROTOS:
            raise ValueError(f"OpenVPN transport {proto!r} must be one of {', '.join(PROTOS)}")
        super().__init__(workdir)
        self.ns, self.server_ca, self.key, self.proto, self.port = ns, Path(server_ca), key, proto, port
        self.conf_path = self.workdir / "client.conf"
        self.reader: _LogReader | None = None
        self._pin_query_us: int | None = None
        self._pin_problem: str | None = None

    def _config(self, hand_window: int, mgmt_sock: Path | None) -> str:
        k = self.key
        if k.kind == "software":
            key_lines = f"cert {_quote(k.cert)}\nkey {_quote(k.key)}"
        else:
            if "'" in k.pkcs11_id or "\n" in k.pkcs11_id:
                raise ValueError(f"PKCS#11 id {k.pkcs11_id!r} cannot be written into an OpenVPN config")
            key_lines = (f"pkcs11-providers {_quote(k.provider)}\npkcs11-id '{k.pkcs11_id}'\n"
                         f"management {_quote(mgmt_sock)} unix\nmanagement-client\nmanagement-query-passwords")
        return CLIENT_CONF.format(proto="udp" if self.proto == "udp" else "tcp-client",
                                  socket_flags="" if self.proto == "udp" else TCP_SOCKET_FLAGS, remote=self.ns.server_ip,
                                  port=self.port, hand_window=hand_window, ca=_quote(self.server_ca),
                                  key_lines=key_lines)

    def start(self):   # Service API: a client is started by connect()
        raise NotImplementedError("use OpenVpnClient.connect()")

    def connect(self, timeout_s: float = 20.0, server: "OpenVpnServer | None" = None) -> ClientRun:
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
            if self.key.env:   # provider settings (SOFTHSM2_CONF, the shim's profile): paths, never secrets
                argv = ["env", *(f"{k}={v}" for k, v in sorted(self.key.env.items())), *argv]
            spawn_us = time.time_ns() // 1000
            start_ns = time.monotonic_ns()
            proc = self._spawn(self.ns.exec_argv("dev", argv), stdout=subprocess.PIPE)
            self.reader = _LogReader(proc, self.log_path, re.compile(f"{DONE_RE.pattern}|{FAIL_RE.pattern}", re.I))
            mgmt = None
            if listener is not None:
                mgmt = threading.Thread(target=self._answer_pin, args=(listener, timeout_s), daemon=True)
                mgmt.start()
            deadline = time.monotonic() + timeout_s
            got, rejected = False, None
            while not got and time.monotonic() < deadline:
                got = self.reader.hit.wait(min(0.05, max(0.0, deadline - time.monotonic())))
                if not got and server is not None:
                    rejected = server.rejection(spawn_us)
                    if rejected:
                        break
            end_ns = time.monotonic_ns()
            line = self.reader.hit_line
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
                    self.reader.eof.wait(1.0)
                    rc = proc.poll()
                    how = f"exit {rc}" if rc is not None else "stdout closed"
                    what = f"exited ({how}) before the tunnel was up"
                if self._pin_problem:
                    what += f"; {self._pin_problem}"
                reason = f"openvpn client {what}; last log lines: " + " | ".join(self._tail(6))
            return ClientRun(ok=ok, reason=reason, lines=list(self.reader.lines), spawn_us=spawn_us,
                             pin_query_us=self._pin_query_us, start_ns=start_ns, end_ns=end_ns,
                             pid=proc.pid, log_path=self.log_path)
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
            buf = b""
            while time.monotonic() < deadline:
                conn.settimeout(max(0.05, deadline - time.monotonic()))
                try:
                    data = conn.recv(4096)
                except OSError:
                    break
                if not data:
                    break
                buf += data
                while b"\n" in buf:
                    raw, buf = buf.split(b"\n", 1)
                    line = raw.decode(errors="replace").strip()
                    m = re.match(r">PASSWORD:Need '([^']*)' password", line)
                    if m:
                        if self._pin_query_us is None:
                            self._pin_query_us = time.time_ns() // 1000
                        name = m.group(1).replace("\\", "\\\\").replace('"', '\\"')
                        try:
                            pin = Path(self.key.pin_file).read_text().strip()
                        except OSError as exc:
                            self._pin_problem = f"the PIN file could not be read ({exc.strerror})"
                            break
                        conn.sendall(f'password "{name}" {pin}\n'.encode())
                        del pin
                    elif line.startswith(">PASSWORD:Verification Failed"):
                        self._pin_problem = "the token rejected the PIN"


def pkcs11_id(module: Path, env: dict, key_label: str, timeout_s: float = 30.0) -> str:
    """OpenVPN's serialized PKCS#11 id of the certificate labelled ``key_label`` (from
    ``openvpn --show-pkcs11-ids MODULE``; the module sees ``env``, e.g. SOFTHSM2_CONF)."""
    try:
        r = subprocess.run([openvpn_exe(), "--show-pkcs11-ids", str(module)], capture_output=True, text=True,
                           env=dict(os.environ, **env), timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise VpnError(f"openvpn --show-pkcs11-ids did not finish within {timeout_s:g} s") from None
    dn = None
    for line in r.stdout.splitlines():
        s = line.strip()
        if s.startswith("DN:"):
            dn = s
        elif s.startswith("Serialized id:") and dn and re.search(rf"device {re.escape(key_label)}\b", dn):
            return s.split(":", 1)[1].strip()
    raise VpnError(f"no certificate for key {key_label!r} in `openvpn --show-pkcs11-ids {module}` "
                   f"(exit {r.returncode}): {(r.stderr or r.stdout).strip()[-300:]}")


__all__ = ["NetnsPair", "LinkNamespaces", "ping_from", "OpenVpnServer", "OpenVpnClient", "ClientKey", "ClientRun", "VpnError", "ServiceError",
           "sweep_stale", "list_namespaces", "parse_client_log", "parse_line", "pkcs11_id", "require_root",
           "PREFIX", "TUN_SERVER_IP", "PHASES", "PIN_PHASES"]
