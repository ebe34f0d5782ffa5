"""Real servers for experiments, started and stopped by secperf: the probe's own TLS/DTLS server,
`openssl s_server` and nginx. Each listens on an ephemeral loopback port (or, placed with
`Service.place`, on an address inside a network namespace: see lab/netns.Link), runs from generated
config in a private run directory, is checked for readiness before any timing, keeps its log there,
and is stopped by its PID (also when the run is interrupted: every live service is tracked and
stopped at interpreter exit). How a child is stopped, given a port and waited for lives in
lab/processes.py (its names stay importable from here)."""

from __future__ import annotations

import atexit
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any, Self, TypeVar

from ..core.errors import MeasurementError
from ..core.jsonlines import parse_line
from ..core.native import find_probe
from ..core.paths import private_dir, write_private
from . import registry
from .pki import CertSet
from .processes import (
    LOOPBACK,
    SocketFactory,
    free_port,
    listening_ports,
    stop_process,
    wait_listening,
    wait_tcp,
    watch_stdout,
)
from .psk_session import write_session

# the child-process helpers moved to lab/processes.py stay importable from here, as callers import them
__all__ = [
    "LOOPBACK",
    "NGINX_CONF",
    "SERVERS",
    "JwtServer",
    "Nginx",
    "ProbeServer",
    "RemoteServer",
    "SServer",
    "Service",
    "ServiceError",
    "SocketFactory",
    "await_listening",
    "drain_queue",
    "free_port",
    "listening_ports",
    "stop_process",
    "wait_listening",
    "wait_tcp",
    "watch_stdout",
]

_T = TypeVar("_T")
_LIVE: set[Service] = set()


class ServiceError(MeasurementError):
    """A server that would not start; the message names it and points at its log."""


def _stop_all() -> None:
    for svc in list(_LIVE):
        svc.stop()


atexit.register(_stop_all)


class Service:
    """A child process with a log file in `workdir`; `port` is set once it is ready."""

    name = "service"
    proto = "tls"

    def __init__(self, workdir: Path | None = None) -> None:
        # absolute: servers run with their work directory as cwd and get paths inside it
        self.workdir = private_dir(
            Path(workdir).resolve() if workdir else Path(tempfile.mkdtemp(prefix="secperf-svc-"))
        )
        self._own_workdir = workdir is None  # a temporary directory of its own: removed at stop()
        self.proc: subprocess.Popen[Any] | None = None
        self._port: int | None = None
        self.log_path = self.workdir / f"{self.name}.log"
        self.prefix: list[str] = []  # argv prefix, e.g. ["ip", "netns", "exec", NS]
        self.bind = LOOPBACK  # the address the server listens on
        self.make_socket: SocketFactory | None = None  # socket factory for readiness checks (inside the namespace)
        self.user: str | None = None  # the user the server runs as, as its namespace names it (None: ours)
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

    def place(
        self, prefix: list[str], bind: str, make_socket: SocketFactory | None = None, user: str | None = None
    ) -> Self:
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

    def _spawn(
        self,
        argv: list[str],
        stdout: int | IO[Any] | None = None,
        cwd: Path | None = None,
        stdin: int | IO[Any] | None = subprocess.DEVNULL,
    ) -> subprocess.Popen[Any]:
        log = open(self.log_path, "ab")
        # its own session, the parent-death signal, listed in the run registry (lab/registry)
        env = {**os.environ, "OPENSSL_CONF": str(self.openssl_conf)} if self.openssl_conf else None
        self.proc = registry.spawn(
            self.prefix + argv,
            self.name,
            stdout=stdout if stdout is not None else log,
            stderr=log,
            stdin=stdin,
            cwd=cwd or self.workdir,
            start_new_session=True,
            text=stdout is not None,
            env=env,
        )
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

    def __init__(
        self,
        certs: CertSet,
        args: list[str] | None = None,
        proto: str = "tls",
        client_ca: Path | None = None,
        workdir: Path | None = None,
    ):
        super().__init__(workdir)
        self.certs, self.args, self.proto, self.client_ca = certs, list(args or []), proto, client_ca
        self.conns: queue.Queue[dict[str, Any]] = queue.Queue()

    def start(self) -> ProbeServer:
        argv = [
            str(find_probe()),
            "server",
            "--port",
            "0",
            "--bind",
            self.bind,
            "--proto",
            self.proto,
            "--cert",
            str(self.certs.chain),
            "--key",
            str(self.certs.key),
        ]
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


def await_listening(
    svc: Service, proc: subprocess.Popen[str], collect_type: str, into: queue.Queue[dict[str, Any]], timeout_s: float
) -> int:
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
    return (
        (name.lower() in ("psk", "psk_hex") or value.startswith("pass:")) if arg[:1] == "-" else arg.startswith("pass:")
    )


class SServer(Service):
    """`openssl s_server` (OpenSSL's own test server) on an ephemeral port."""

    name = "s_server"

    def __init__(
        self,
        certs: CertSet,
        args: list[str] | None = None,
        proto: str = "tls",
        client_ca: Path | None = None,
        workdir: Path | None = None,
        psk: tuple[str, bytes] | None = None,
    ):
        super().__init__(workdir)
        if proto not in ("tls", "dtls"):
            raise ServiceError(f"s_server: protocol {proto!r}; it serves tls or dtls")
        self.certs, self.args, self.proto, self.client_ca = certs, list(args or []), proto, client_ca
        if secret := [a for a in self.args if _secret_option(a)]:
            raise ServiceError(
                f"s_server: {secret[0].split('=', 1)[0]} puts a secret on the command line, where "
                f"every user reads it; a PSK goes in `psk=` (a 0600 session file, TLS 1.3)"
            )
        self.psk = psk  # (identity, key): TLS 1.3 external PSK from a 0600 session file (lab/psk_session)

    def psk_args(self) -> list[str]:
        """-psk_session FILE -psk_identity ID: the key in a private file, not on the process list. A
        TLS 1.2 / DTLS PSK suite needs s_server's -psk: refused here, for every protocol (the caller
        picks a server that reads a key file: the probe server, measure/device_dtls.psk_server).
        start() asks before its process runs: the refusal is the row's failure, with its reason."""
        if self.psk is None:
            return []
        if self.proto != "tls" or any(
            a.lstrip("-") in ("tls1_2", "tls1_1", "tls1", "dtls", "dtls1_2", "dtls1") for a in self.args
        ):
            raise ServiceError(
                f"s_server reads a {'DTLS' if self.proto == 'dtls' else 'TLS 1.2'} PSK only from its "
                "command line (-psk), where every user could read it: that PSK row needs a server "
                "that reads a key file"
            )

        identity, key = self.psk
        return ["-psk_session", str(write_session(self.workdir, key)), "-psk_identity", identity]

    def start(self) -> SServer:
        argv = [
            "openssl",
            "s_server",
            "-accept",
            f"{self.bind}:0",
            "-cert",
            str(self.certs.cert),
            "-key",
            str(self.certs.key),
            "-www",
        ]
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
        proc = self._spawn(
            argv + self.args + self.psk_args(),
            stdout=subprocess.PIPE,
            stdin=subprocess.PIPE if self.proto == "dtls" else subprocess.DEVNULL,
        )
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

    def __init__(
        self,
        certs: CertSet,
        client_ca: Path | None = None,
        body_bytes: int = 700,
        workdir: Path | None = None,
        backlog: int | None = None,
    ):
        super().__init__(workdir)
        self.certs, self.client_ca, self.body_bytes = certs, client_ca, body_bytes
        self.backlog = backlog  # listen backlog (None: nginx's default, 511 on Linux)

    def start(self) -> Nginx:
        exe = shutil.which("nginx") or "/usr/sbin/nginx"
        if not os.path.exists(exe):
            raise ServiceError("nginx is not installed: run scripts/bootstrap (Debian package nginx-light)")
        private_dir(self.workdir / "tmp")
        for _attempt in range(2):
            port = free_port()
            client_auth = (
                f"ssl_client_certificate {self.client_ca}; ssl_verify_client on; ssl_verify_depth 3;"
                if self.client_ca
                else ""
            )
            # started as root, nginx chowns its temp paths to its compiled-in user: in a user namespace
            # that user is unmapped, so name the one the server runs as
            user = f"user {self.user};\n" if self.user else ""
            conf = NGINX_CONF.format(
                user=user,
                workdir=self.workdir,
                host=self.bind,
                port=port,
                chain=self.certs.chain,
                key=self.certs.key,
                client_auth=client_auth,
                body="x" * self.body_bytes,
                backlog=f" backlog={int(self.backlog)}" if self.backlog else "",
                conns=max(256, int(self.backlog or 0) + 64),
                rlimit=(f"worker_rlimit_nofile {2 * int(self.backlog) + 256};\n" if self.backlog else ""),
            )
            (self.workdir / "nginx.conf").write_text(conf)
            proc = self._spawn(
                [exe, "-p", str(self.workdir), "-c", str(self.workdir / "nginx.conf"), "-e", str(self.log_path)]
            )
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
        argv = [
            sys.executable,
            "-m",
            "secperf.lab.jwt_server",
            "--cert",
            str(self.certs.chain),
            "--key",
            str(self.certs.key),
            "--bind",
            self.bind,
        ]
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
            raise ServiceError(
                f"nothing accepts TCP connections at {self.host}:{self._port} (tried for 5 s): "
                f"is the server running, and is --connect HOST:PORT right?"
            )
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"server": f"remote {self.host}:{self._port}", "port": self._port, "proto": self.proto}


SERVERS = {"probe": ProbeServer, "s_server": SServer, "nginx": Nginx}
