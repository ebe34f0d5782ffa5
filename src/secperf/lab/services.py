"""Real servers for experiments, started and stopped by secperf: the probe's own TLS/DTLS server,
`openssl s_server` and nginx. Each listens on an ephemeral loopback port (or, placed with
`Service.place`, on an address inside a network namespace: see lab/netns.Link), runs from generated
config in a private run directory, is checked for readiness before any timing, keeps its log there,
and is stopped by its PID (also when the run is interrupted: every live service is tracked and
stopped at interpreter exit)."""

from __future__ import annotations

import atexit
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol, Self, TypeVar

import psutil

from ..core.errors import MeasurementError
from ..core.jsonlines import parse_line
from ..core.native import find_probe
from ..core.paths import private_dir
from ..core.wait import wait_until
from . import registry
from .pki import CertSet

LOOPBACK = "127.0.0.1"


class SocketFactory(Protocol):
    """Makes a socket where the server is (e.g. inside its namespace): TCP, or the socket type given
    (iot_services' CoAP ping asks for a datagram socket)."""
    def __call__(self, kind: int = ..., /) -> socket.socket: ...


_T = TypeVar("_T")
_LIVE: set[Service] = set()


class ServiceError(MeasurementError):
    """A server that would not start; the message names it and points at its log."""


def _stop_all() -> None:
    for svc in list(_LIVE):
        svc.stop()


atexit.register(_stop_all)


def stop_process(proc: subprocess.Popen[Any], timeout_s: float = 5.0) -> None:
    """SIGTERM a child we started, wait (bounded), SIGKILL if it did not exit; always reaped. A child
    leading its own process group (spawned in its own session) takes what is left of its group
    with it (e.g. workers a server forked)."""
    if proc.poll() is not None:
        return
    try:
        leads_group = os.getpgid(proc.pid) == proc.pid
    except OSError:
        leads_group = False
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if leads_group:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the group outlives its reaped leader only while members remain
        except OSError:
            pass


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """An unused loopback port (for servers that cannot report an ephemeral one)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind((LOOPBACK, 0))
        port: int = s.getsockname()[1]
        return port


def _accepts_tcp(host: str, port: int, make_socket: SocketFactory | None = None) -> bool:
    """One attempt: does host:port accept a TCP connection (on a socket from make_socket())?"""
    try:
        if make_socket is None:
            with socket.create_connection((host, port), timeout=0.2):
                return True
        with make_socket() as s:
            s.settimeout(0.2)
            s.connect((host, port))
            return True
    except OSError:
        return False


def wait_tcp(port: int, timeout_s: float, proc: subprocess.Popen[Any] | None = None, host: str = LOOPBACK,
             make_socket: SocketFactory | None = None) -> bool:
    """True once host:port accepts TCP; make_socket() makes the socket (e.g. inside a namespace).
    False when `proc` exits first (never checked against a port someone else took meanwhile)."""
    def exited() -> bool:
        return proc is not None and proc.poll() is not None
    return bool(wait_until(lambda: not exited() and _accepts_tcp(host, port, make_socket), timeout_s,
                           give_up=exited))


def _tree(pid: int) -> list[int]:
    """pid and its descendants; [] if there is no such process."""
    try:
        proc = psutil.Process(pid)
        return [pid] + [c.pid for c in proc.children(recursive=True)]
    except psutil.Error:
        return []


def listening_ports(pid: int) -> set[tuple[str, int]]:
    """(tcp|udp, port) of the TCP listeners and bound UDP sockets held by a process or its
    descendants, read in the process's own network namespace (/proc/PID/net).

    psutil finds the tree, but not the sockets: its net_connections() matches a process's socket
    inodes against /proc/net/*, the *caller's* namespace, and a server secperf placed in a link's
    server namespace has its sockets only in that namespace's tables, which /proc/PID/net shows."""
    out: set[tuple[str, int]] = set()
    for p in _tree(pid):
        inodes: set[str] = set()
        try:
            for fd in os.listdir(f"/proc/{p}/fd"):
                try:
                    link = os.readlink(f"/proc/{p}/fd/{fd}")
                except OSError:
                    continue
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        except OSError:
            continue
        for proto in ("tcp", "tcp6", "udp", "udp6"):
            try:
                lines = Path(f"/proc/{p}/net/{proto}").read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                f = line.split()
                if len(f) > 9 and f[9] in inodes and (f[3] == "0A" or proto.startswith("udp")):
                    out.add((proto[:3], int(f[1].rsplit(":", 1)[1], 16)))
    return out


def wait_listening(proc: subprocess.Popen[Any], timeout_s: float, port: int | None = None, host: str = LOOPBACK,
                   make_socket: SocketFactory | None = None) -> tuple[bool, str]:
    """Wait until a server process is ready: with `port`, until host:port accepts TCP; otherwise until
    the process (or a descendant) listens on a TCP port or has bound a UDP port. (ready, what)."""
    if port is not None:
        ok = wait_tcp(port, timeout_s, proc, host, make_socket)
        return ok, f"TCP port {port} accepts" if ok else f"TCP port {port} did not accept"

    def exited() -> bool:
        return proc.poll() is not None
    ports = wait_until(lambda: set() if exited() else listening_ports(proc.pid), timeout_s, give_up=exited)
    if ports:
        return True, "listening on " + ", ".join(f"{k}/{n}" for k, n in sorted(ports))
    if exited():
        return False, f"the server exited with code {proc.returncode} before listening"
    return False, "no listening socket"


def watch_stdout(proc: subprocess.Popen[str], on_line: Callable[[str], _T | None], timeout_s: float) -> _T | None:
    """Read the child's stdout in a thread for its whole life (so it never blocks on a full pipe);
    return the first non-None value of on_line(line), or None on exit or after timeout_s."""
    first: queue.Queue[_T | None] = queue.Queue()

    def reader() -> None:
        for line in proc.stdout or ():   # a child started without stdout=PIPE: nothing to read
            value = on_line(line)
            if value is not None:
                first.put(value)
        first.put(None)
    threading.Thread(target=reader, daemon=True).start()
    try:
        return first.get(timeout=timeout_s)
    except queue.Empty:
        return None


class Service:
    """A child process with a log file in `workdir`; `port` is set once it is ready."""

    name = "service"
    proto = "tls"

    def __init__(self, workdir: Path | None = None) -> None:
        # absolute: servers run with their work directory as cwd and get paths inside it
        self.workdir = private_dir(Path(workdir).resolve() if workdir else Path(tempfile.mkdtemp(prefix="secperf-svc-")))
        self._own_workdir = workdir is None  # a temporary directory of its own: removed at stop()
        self.proc: subprocess.Popen[Any] | None = None
        self._port: int | None = None
        self.log_path = self.workdir / f"{self.name}.log"
        self.prefix: list[str] = []      # argv prefix, e.g. ["ip", "netns", "exec", NS]
        self.bind = LOOPBACK             # the address the server listens on
        self.make_socket: SocketFactory | None = None   # socket factory for readiness checks (inside the namespace)
        self.user: str | None = None     # the user the server runs as, as its namespace names it (None: ours)
        self.openssl_conf: Path | None = None  # OPENSSL_CONF for the server (e.g. a lower security level)

    @property
    def port(self) -> int | None:
        return self._port

    @port.setter
    def port(self, value: int | None) -> None:
        # the run registry lists the ports its servers listen on (secperf clean reports them)
        self._port = value
        if value is not None and self.proc is not None:
            registry.current().add_port(int(value), self.proto, self.name, self.proc.pid)

    def place(self, prefix: list[str], bind: str, make_socket: SocketFactory | None = None,
              user: str | None = None) -> Self:
        """Run the server under an argv prefix (a network namespace) bound to `bind`; `user` when the
        namespace sees secperf's user as another (a rootless link's user namespace: "root")."""
        self.prefix, self.bind, self.make_socket, self.user = list(prefix), bind, make_socket, user
        return self

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Service:
        raise NotImplementedError

    def _spawn(self, argv: list[str], stdout: int | IO[Any] | None = None, cwd: Path | None = None,
               stdin: int | IO[Any] | None = subprocess.DEVNULL) -> subprocess.Popen[Any]:
        log = open(self.log_path, "ab")
        # its own session, the parent-death signal, listed in the run registry (lab/registry)
        env = {**os.environ, "OPENSSL_CONF": str(self.openssl_conf)} if self.openssl_conf else None
        self.proc = registry.spawn(self.prefix + argv, self.name, stdout=stdout if stdout is not None else log,
                                   stderr=log, stdin=stdin, cwd=cwd or self.workdir,
                                   start_new_session=True, text=stdout is not None, env=env)
        log.close()
        _LIVE.add(self)
        return self.proc

    def log_tail(self, lines: int = 8) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def fail(self, what: str) -> ServiceError:
        tail = self.log_tail()  # before stop(): a temporary working directory goes with it
        self.stop()
        return ServiceError(f"{self.name}: {what} (log: {self.log_path})" + (f"\n{tail}" if tail else ""))

    def write_secret(self, path: Path, data: bytes) -> Path:
        """A key file for this service (0600), listed in the run registry and removed at stop(), or
        after a kill by the watchdog or `secperf clean`: never left in a results directory."""
        from ..core.paths import write_private
        write_private(path, data)
        registry.track_secret(path)
        self.__dict__.setdefault("_secrets", []).append(Path(path))
        return Path(path)

    def stop(self, timeout_s: float = 5.0) -> None:
        proc, self.proc = self.proc, None
        _LIVE.discard(self)
        if proc is not None:
            stop_process(proc, timeout_s)
            registry.forget(proc)
        for p in self.__dict__.pop("_secrets", []):
            registry.forget_secret(p)
        if self.__dict__.get("_own_workdir"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def describe(self) -> dict[str, Any]:
        return {"server": self.name, "port": self.port, "proto": self.proto}


class ProbeServer(Service):
    """`secperf-probe server`: reports server CPU per handshake on its stdout (read in a thread)."""

    name = "probe"

    def __init__(self, certs: CertSet, args: list[str] | None = None, proto: str = "tls",
                 client_ca: Path | None = None, workdir: Path | None = None):
        super().__init__(workdir)
        self.certs, self.args, self.proto, self.client_ca = certs, list(args or []), proto, client_ca
        self.conns: queue.Queue[dict[str, Any]] = queue.Queue()

    def start(self) -> ProbeServer:
        argv = [str(find_probe()), "server", "--port", "0", "--bind", self.bind, "--proto", self.proto,
                "--cert", str(self.certs.chain), "--key", str(self.certs.key)]
        if self.client_ca:
            argv += ["--ca", str(self.client_ca), "--verify-client"]
        proc = self._spawn(argv + self.args, stdout=subprocess.PIPE)
        self.port = await_listening(self, proc, "server_conn", self.conns, 10)
        return self

    def drain(self) -> list[dict[str, Any]]:
        return drain_queue(self.conns)


def drain_queue(q: queue.Queue[_T]) -> list[_T]:
    """Everything queued so far, without waiting."""
    out: list[_T] = []
    while True:
        try:
            out.append(q.get_nowait())
        except queue.Empty:
            return out


def await_listening(svc: Service, proc: subprocess.Popen[str], collect_type: str, into: queue.Queue[dict[str, Any]],
                    timeout_s: float) -> int:
    """The port a server reports in its `listening` JSON line; its lines of `collect_type` (one per
    connection or handshake) go into `into` as they come. No line in time is the service's failure."""
    def on_line(line: str) -> dict[str, Any] | None:
        msg = parse_line(line)
        if msg and msg.get("type") == collect_type:
            into.put(msg)
        return msg if msg and msg.get("type") == "listening" else None
    msg = watch_stdout(proc, on_line, timeout_s)
    if not msg:
        raise svc.fail(f"did not report a listening port within {timeout_s:g} s")
    return int(msg["port"])


def _secret_option(arg: str) -> bool:
    """An s_server argument carrying a secret: -psk (also read as --psk, -psk=HEX), a pass:TEXT phrase."""
    name, _, value = arg.lstrip("-").partition("=")
    return (name.lower() in ("psk", "psk_hex") or value.startswith("pass:")) if arg[:1] == "-" else arg.startswith("pass:")


class SServer(Service):
    """`openssl s_server` (OpenSSL's own test server) on an ephemeral port."""

    name = "s_server"

    def __init__(self, certs: CertSet, args: list[str] | None = None, proto: str = "tls",
                 client_ca: Path | None = None, workdir: Path | None = None, psk: tuple[str, bytes] | None = None):
        super().__init__(workdir)
        if proto not in ("tls", "dtls"):
            raise ServiceError(f"s_server: protocol {proto!r}; it serves tls or dtls")
        self.certs, self.args, self.proto, self.client_ca = certs, list(args or []), proto, client_ca
        if secret := [a for a in self.args if _secret_option(a)]:
            raise ServiceError(f"s_server: {secret[0].split('=', 1)[0]} puts a secret on the command line, where "
                               f"every user reads it; a PSK goes in `psk=` (a 0600 session file, TLS 1.3)")
        self.psk = psk   # (identity, key): TLS 1.3 external PSK from a 0600 session file (lab/psk_session)
        self.psk_args(check_only=True)

    def psk_args(self, check_only: bool = False) -> list[str]:
        """-psk_session FILE -psk_identity ID: the key in a private file, not on the process list. A
        TLS 1.2 / DTLS PSK suite needs s_server's -psk: refused here, for every protocol (the caller
        picks a server that reads a key file: the probe server, measure/device_dtls.psk_server)."""
        if self.psk is None:
            return []
        if self.proto != "tls" or any(a.lstrip("-") in ("tls1_2", "tls1_1", "tls1", "dtls", "dtls1_2", "dtls1")
                                      for a in self.args):
            raise ServiceError(f"s_server reads a {'DTLS' if self.proto == 'dtls' else 'TLS 1.2'} PSK only from its "
                               "command line (-psk), where every user could read it: that PSK row needs a server "
                               "that reads a key file")
        if check_only:
            return []
        from .psk_session import write_session
        identity, key = self.psk
        return ["-psk_session", str(write_session(self.workdir, key)), "-psk_identity", identity]

    def start(self) -> SServer:
        argv = ["openssl", "s_server", "-accept", f"{self.bind}:0", "-cert", str(self.certs.cert),
                "-key", str(self.certs.key), "-www"]
        # -cert_chain takes the intermediates only: passing the full chain would send the leaf twice
        pems = self.certs.chain.read_text().split("-----END CERTIFICATE-----")
        intermediates = "".join(p + "-----END CERTIFICATE-----\n" for p in pems[1:] if p.strip())
        if intermediates:
            (self.workdir / "intermediates.pem").write_text(intermediates)
            argv += ["-cert_chain", str(self.workdir / "intermediates.pem")]
        if self.proto == "dtls":
            argv[2:4] = ["-dtls", "-accept", f"{self.bind}:{free_port(socket.SOCK_DGRAM)}"]
            # s_server refuses -www with DTLS: its echo mode, which reads its stdin (a pipe kept open,
            # or it quits at end of input) and takes the next client after a close_notify
            argv.remove("-www")
        if self.client_ca:
            argv += ["-CAfile", str(self.client_ca), "-Verify", "1"]
        proc = self._spawn(argv + self.args + self.psk_args(), stdout=subprocess.PIPE,
                           stdin=subprocess.PIPE if self.proto == "dtls" else subprocess.DEVNULL)
        # a DTLS s_server prints a bare ACCEPT: its port is the one chosen above
        found = watch_stdout(proc, lambda line: re.search(r"ACCEPT(?:\s+\S+:(\d+))?", line), 10)
        if found is None:
            raise self.fail("did not print its ACCEPT address within 10 s")
        port = int(found.group(1) or argv[argv.index("-accept") + 1].rsplit(":", 1)[1])
        self.port = port
        if self.proto == "tls" and not wait_tcp(port, 10, proc, self.bind, self.make_socket):
            raise self.fail(f"not accepting on port {port}")
        return self


NGINX_CONF = """\
{user}worker_processes 1;
daemon off;
master_process off;
pid {workdir}/nginx.pid;
error_log {workdir}/nginx.log info;
{rlimit}events {{ worker_connections {conns}; }}
http {{
    access_log off;
    client_body_temp_path {workdir}/tmp; proxy_temp_path {workdir}/tmp; fastcgi_temp_path {workdir}/tmp;
    uwsgi_temp_path {workdir}/tmp; scgi_temp_path {workdir}/tmp;
    server {{
        listen {host}:{port} ssl{backlog};
        ssl_certificate {chain};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache shared:secperf:1m;
        ssl_session_tickets on;
        {client_auth}
        keepalive_timeout 5s;
        location / {{ default_type text/plain; return 200 "{body}"; }}
    }}
}}
"""


class Nginx(Service):
    """nginx with TLS (mutual TLS when a client CA is given), the real server of studies S1 and S2.

    nginx cannot report an ephemeral port, so a free one is picked and the start is retried once
    if another process took it in between.
    """

    name = "nginx"

    def __init__(self, certs: CertSet, client_ca: Path | None = None, body_bytes: int = 700,
                 workdir: Path | None = None, backlog: int | None = None):
        super().__init__(workdir)
        self.certs, self.client_ca, self.body_bytes = certs, client_ca, body_bytes
        self.backlog = backlog           # listen backlog (None: nginx's default, 511 on Linux)

    def start(self) -> Nginx:
        exe = shutil.which("nginx") or "/usr/sbin/nginx"
        if not os.path.exists(exe):
            raise ServiceError("nginx is not installed: run scripts/bootstrap (Debian package nginx-light)")
        private_dir(self.workdir / "tmp")
        for _attempt in range(2):
            port = free_port()
            client_auth = (f"ssl_client_certificate {self.client_ca}; ssl_verify_client on; ssl_verify_depth 3;"
                           if self.client_ca else "")
            # started as root, nginx chowns its temp paths to its compiled-in user: in a user namespace
            # that user is unmapped, so name the one the server runs as
            user = f"user {self.user};\n" if self.user else ""
            conf = NGINX_CONF.format(user=user, workdir=self.workdir, host=self.bind, port=port,
                                     chain=self.certs.chain, key=self.certs.key, client_auth=client_auth,
                                     body="x" * self.body_bytes,
                                     backlog=f" backlog={int(self.backlog)}" if self.backlog else "",
                                     conns=max(256, int(self.backlog or 0) + 64),
                                     rlimit=(f"worker_rlimit_nofile {2 * int(self.backlog) + 256};\n"
                                             if self.backlog else ""))
            (self.workdir / "nginx.conf").write_text(conf)
            proc = self._spawn([exe, "-p", str(self.workdir), "-c", str(self.workdir / "nginx.conf"),
                                "-e", str(self.log_path)])
            if wait_tcp(port, 10, proc, self.bind, self.make_socket):
                self.port = port
                return self
            self.stop()
        raise self.fail("did not start listening")


class JwtServer(Service):
    """The HTTPS endpoint that verifies device JWTs (secperf.lab.jwt_server) in its own process
    (placed with `place`, inside a link's server namespace on its address)."""

    name = "jwt_server"

    def __init__(self, certs: CertSet, pubkeys: list[Path], workdir: Path | None = None):
        super().__init__(workdir)
        self.certs, self.pubkeys = certs, list(pubkeys)

    def start(self) -> JwtServer:
        import sys
        argv = [sys.executable, "-m", "secperf.lab.jwt_server", "--cert", str(self.certs.chain),
                "--key", str(self.certs.key), "--bind", self.bind]
        for k in self.pubkeys:
            argv += ["--pubkey", str(k)]
        proc = self._spawn(argv, stdout=subprocess.PIPE)

        def on_line(line: str) -> dict[str, Any] | None:
            msg = parse_line(line)
            return msg if msg and msg.get("type") == "listening" else None
        msg = watch_stdout(proc, on_line, 15)
        if not msg:
            raise self.fail("did not report a listening port within 15 s")
        self.port = int(msg["port"])
        return self


class RemoteServer(Service):
    """A server secperf does not run (the user's own, `--connect HOST:PORT`): nothing is started or
    stopped; `start` checks that a TCP server accepts there (UDP cannot be checked without speaking
    its protocol, so a DTLS target is taken as given)."""

    name = "remote"

    def __init__(self, host: str, port: int, proto: str = "tls", workdir: Path | None = None):
        super().__init__(workdir)
        self.remote_port = int(port)
        self.host, self.proto, self._port = host, proto, self.remote_port
        self.bind = host

    def start(self) -> RemoteServer:
        if self.proto == "tls" and not wait_tcp(self.remote_port, 5, None, self.host):
            raise ServiceError(f"nothing accepts TCP connections at {self.host}:{self._port} (tried for 5 s): "
                               f"is the server running, and is --connect HOST:PORT right?")
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"server": f"remote {self.host}:{self._port}", "port": self._port, "proto": self.proto}


SERVERS = {"probe": ProbeServer, "s_server": SServer, "nginx": Nginx}


# --- what each server is: version and TLS library (provenance for a server Result) ----------------
def _version_output(argv: list[str]) -> str:
    """stdout + stderr of a version query; '' when the program is missing or hangs."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (r.stdout or "") + (r.stderr or "")


def _linked_libssl(exe: str | None) -> str | None:
    """The libssl a dynamically linked program loads (from ldd), e.g. libssl.so.3; None if static."""
    if not exe:
        return None
    m = re.search(r"(libssl\.so[.\d]*)\s+=>\s+(\S+)", _version_output(["ldd", exe]))
    return m.group(2) if m else None


def system_openssl() -> str | None:
    """The system OpenSSL library's version text ("OpenSSL 3.0.19 27 Jan 2026"), as `openssl version`
    reports the library it runs with."""
    out = _version_output(["openssl", "version"]).strip()
    m = re.search(r"\(Library: ([^)]+)\)", out)
    return m.group(1) if m else (out or None)


def server_software(server: str) -> dict[str, Any]:
    """What a server started by secperf is: {"server", "version", "tls_library", "build", "source"}.
    Version strings come from the program itself (nginx -V, mosquitto -h, coap-server-openssl's
    usage text, secperf-probe --version, openssl version); a field it does not print is None, never
    guessed. `tls_library` is the library the server runs with; `build` what it was built against."""
    out: dict[str, Any] = {"server": server, "version": None, "tls_library": None, "build": None, "source": None}
    if server == "nginx":
        exe = shutil.which("nginx") or "/usr/sbin/nginx"
        text = _version_output([exe, "-V"])
        m = re.search(r"nginx version: nginx/(\S+)", text)
        b = re.search(r"built with (OpenSSL [^\n(]+?)\s*(?:\(running with ([^)]+)\))?\n", text)
        out.update(version=m.group(1) if m else None, source="nginx -V",
                   build=b.group(1).strip() if b else None,
                   tls_library=(b.group(2) or b.group(1)).strip() if b else None)
    elif server == "mosquitto":
        exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        m = re.search(r"mosquitto version (\S+)", _version_output([exe, "-h"]))
        lib = _linked_libssl(exe)
        sys_ssl = system_openssl()
        out.update(version=m.group(1) if m else None, source="mosquitto -h; ldd",
                   tls_library=f"{sys_ssl}, linked as {lib}" if lib and sys_ssl else lib)
    elif server == "coap-server":
        exe = shutil.which("coap-server-openssl") or "/usr/bin/coap-server-openssl"
        text = _version_output([exe, "-h"])
        m = re.search(r"coap-server-openssl v(\S+)", text)
        t = re.search(r"TLS Library: (.+)", text)
        lib = t.group(1).strip() if t else None
        rt = re.search(r"runtime ([^\s,]+)", lib or "")
        bt = re.search(r"built for ([^\s,]+)", lib or "")
        sys_ssl = system_openssl()
        out.update(version=f"libcoap {m.group(1)}" if m else None, source="coap-server-openssl -h; openssl version",
                   # libcoap prints OpenSSL's version number as hex-decoded text ("3.0.0s-dev" for 3.0.19):
                   # the library actually loaded is the system one
                   tls_library=(f"{sys_ssl} (libcoap reports runtime {rt.group(1)})" if rt and sys_ssl else lib or sys_ssl),
                   build=f"libcoap built for OpenSSL {bt.group(1)}" if bt else None)
    elif server == "probe":
        text = _version_output([str(find_probe()), "--version"])
        m = re.search(r"secperf-probe (\S+) \(([^)]+)\)", text)
        out.update(version=f"secperf-probe {m.group(1)}" if m else None, tls_library=m.group(2) if m else None,
                   source="secperf-probe --version")
    elif server == "s_server":
        lib = system_openssl()
        out.update(version=f"openssl s_server ({lib})" if lib else None, tls_library=lib, source="openssl version")
    return out
