"""The server a `secperf server` row measures, started (nginx, the probe server, mosquitto,
coap-server), its key in a PEM file or offloaded to the lab token behind the shim (Offload); what a
handshake with it negotiates, and the private-key operation measured side by side."""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

from ..core.jsonlines import parse_line
from ..core.native import find_probe, find_shim
from ..core.paths import private_dir, write_private
from ..lab import registry
from ..lab.iot_services import CoapServer, Mosquitto
from ..lab.services import Nginx, ProbeServer
from ..lab.token import LabToken, openssl_engine_conf
from .probe import default_key_cache, ensure_private_dir
from .server_config import ServerConfig, ServerMeasureError
from .signer import shim_env

if TYPE_CHECKING:
    from ..inputs.se_profiles import Profile
    from ..lab.pki import CertSet, LabPKI
    from ..lab.services import Service

_SSL_CONF = """
[secperf_ssl]
system_default = secperf_system
[secperf_system]
CipherString = DEFAULT:@SECLEVEL=0
"""


def low_seclevel_conf(base: str | None = None) -> str:
    """An OpenSSL configuration that lets a server load a 1024-bit RSA key (Debian builds OpenSSL with
    security level 2, which rejects it when the certificate is loaded: `ee key too small`); `base`
    is another generated configuration (the pkcs11 engine's) to extend."""
    if base is None:
        return "openssl_conf = openssl_init\n[openssl_init]\nssl_conf = secperf_ssl\n" + _SSL_CONF
    return base.replace("[openssl_init]\n", "[openssl_init]\nssl_conf = secperf_ssl\n", 1) + _SSL_CONF


def negotiated(
    port: int, cfg: ServerConfig, client_pair: tuple[Path, Path] | tuple[str, str] | None = None
) -> dict[str, Any]:
    """What a handshake with this server negotiates (protocol, suite, group): one `secperf-probe
    client` handshake with the load generator's settings (the same system OpenSSL, its default
    groups and suites, no certificate verification). A failure is recorded, not raised."""
    app = {"nginx": "http", "probe": "http", "mosquitto": "mqtt", "coap-server": "none"}[cfg.server]
    args = [
        "client",
        "--port",
        str(port),
        "--n",
        "1",
        "--warmup",
        "0",
        "--timeout-ms",
        "5000",
        "--app",
        app,
        *(["--proto", "dtls", "--tls", "1.2"] if cfg.protocol == "dtls" else ["--tls", cfg.tls]),
    ]
    if cfg.key_type == "rsa-1024":
        args += ["--ciphers", "DEFAULT:@SECLEVEL=0"]
    if client_pair:
        args += ["--cert", str(client_pair[0]), "--key", str(client_pair[1])]
    source = "one secperf-probe client handshake with the load generator's settings"
    try:
        r = registry.run(
            [str(find_probe()), *args], "probe client (negotiated)", capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return {"error": f"secperf-probe client: {exc}", "source": source}
    conn = next((m for m in map(parse_line, r.stdout.splitlines()) if m and m.get("type") == "conn"), None)
    if conn is None or not conn.get("version"):
        why = (conn or {}).get("error") or (r.stderr or r.stdout).strip()[-200:] or "no connection line"
        return {"error": f"secperf-probe client: {why}", "source": source}
    return {"version": conn.get("version"), "cipher": conn.get("cipher"), "group": conn.get("group"), "source": source}


class Offload:
    """The server key in the lab token behind the shim with a profile and wait mode: the
    certificate, the engine key reference (PIN in its 0600 file, never on a command line), and
    the environment nginx needs (OPENSSL_CONF pointing the pkcs11 engine at the shim)."""

    def __init__(self, profile: Profile, wait: str, key_type: str, workdir: Path, seed: int):
        """`profile`: the secure-element profile the command resolved (ServerConfig.offloaded)."""

        self.token = LabToken().ensure()
        key = self.token.key(key_type)
        profile = dataclasses.replace(profile, wait=wait)
        shim_dir = private_dir(workdir / "shim")
        env, self.log = shim_env(self.token, profile, shim_dir, seed)
        conf = shim_dir / "openssl.cnf"
        text = openssl_engine_conf(find_shim(), init=True)
        write_private(conf, (low_seclevel_conf(text) if key_type == "rsa-1024" else text).encode())
        env["OPENSSL_CONF"] = str(conf)
        self.env = {k: env[k] for k in ("OPENSSL_CONF", "SOFTHSM2_CONF", "SECPERF_SE_PROFILE") if k in env}
        # the token key's certificate (issued by the lab client CA) serves as the server's: the
        # load generator does not verify, as `openssl s_time`
        self.cert = Path(key["cert_path"])
        self.uri = self.token.uri(key["label"], pin_file=True)
        self.profile = profile
        self.extractable = False

    def prefix(self) -> list[str]:
        return ["env", *[f"{k}={v}" for k, v in self.env.items()]]

    def calls(self, since_ns: int = 0) -> list[dict[str, Any]]:
        out = []
        try:
            with open(self.log) as f:
                for line in f:
                    try:
                        c = json.loads(line)
                    except json.JSONDecodeError:
                        continue
                    if c.get("start_ns", 0) >= since_ns:
                        out.append(c)
        except OSError:
            pass
        return out


def start_server(
    cfg: ServerConfig, pki: LabPKI, workdir: Path, seed: int, offload: Offload | None = None, backlog: int | None = None
) -> Service:
    certs = pki.server(cfg.key_type, cfg.depth)
    client_ca = (
        pki.client("ecdsa-p256").ca if cfg.client_auth or cfg.server == "mosquitto" else None
    )  # mosquitto needs a cafile
    prefix: list[str] = []
    if cfg.key_type == "rsa-1024" and offload is None:
        conf = private_dir(workdir) / "openssl-seclevel0.cnf"
        write_private(conf, low_seclevel_conf().encode())
        prefix = ["env", f"OPENSSL_CONF={conf}"]
    if cfg.server == "nginx":
        if offload is not None:
            # the engine key in place of a PEM file (quoted: the URI holds ";"); Nginx reads only .chain and .key
            certs = cast("CertSet", SimpleNamespace(chain=offload.cert, key=f'"engine:pkcs11:{offload.uri}"'))
        srv = Nginx(certs, client_ca=client_ca, workdir=workdir, backlog=backlog)
        srv.prefix = offload.prefix() if offload is not None else prefix
        return srv.start()
    if cfg.server == "probe":
        args = ["--concurrent", "512", "--tls", cfg.tls] + (["--rsa-nocrt"] if cfg.nocrt else [])
        psrv = ProbeServer(certs, args=args, client_ca=client_ca, workdir=workdir)
        psrv.prefix = prefix
        return psrv.start()
    if cfg.server == "coap-server":
        csrv = CoapServer(certs, client_ca=client_ca, workdir=workdir, verbosity=3)  # warnings only: no log per session
        csrv.prefix = prefix
        return csrv.start()

    # the key and chain depth are the lab's PEM files, or the token's key through OpenSSL's pkcs11
    # engine (with its certificate, depth 1); client authentication is require_certificate
    if offload is not None:
        certs = cast("CertSet", SimpleNamespace(chain=offload.cert, key=None))
    msrv = Mosquitto(
        certs,
        pki.client("ecdsa-p256").ca,
        nodelay=True,
        workdir=workdir,
        require_certificate=cfg.client_auth,
        connection_messages=False,
        engine_key=offload.uri if offload is not None else None,
    )
    msrv.prefix = offload.prefix() if offload is not None else prefix
    return msrv.start()


def pid_port(srv: Service) -> tuple[int, int]:
    """A started server's process ID and port (ServerMeasureError when it lacks either)."""
    if srv.proc is None or srv.port is None:
        raise ServerMeasureError(f"{srv.name}: started, but without its process or its port")
    return srv.proc.pid, srv.port


def private_op_us(key: str, n: int, seed: int, core: int | None = None) -> dict[str, Any]:
    """Median wall and CPU µs of one signature with this key (SHA-256 included), `secperf-probe speed`;
    on `core` when given (the server's core: the same cache and sibling load as the server)."""

    alg = key if key.startswith("rsa") or key == "ed25519" else key
    args = [
        str(find_probe()),
        "speed",
        "--alg",
        alg,
        "--op",
        "sign",
        "--n",
        str(n),
        "--warmup",
        "3",
        "--min-sample-us",
        "1000",
        "--max-seconds",
        "5",
        "--seed",
        str(seed),
        "--key-cache",
        str(ensure_private_dir(default_key_cache())),
    ]
    if not key.startswith("ed"):
        args += ["--hash", "sha256"]
    pre = (lambda: os.sched_setaffinity(0, {core})) if core is not None else None
    try:  # registered: a hang is killed with all it started and named; a killed secperf leaves nothing
        r = registry.run(args, "secperf-probe speed", 300, capture_output=True, text=True, preexec_fn=pre)
    except subprocess.TimeoutExpired as exc:
        raise ServerMeasureError(
            f"secperf-probe speed --alg {alg} --op sign did not finish within {exc.timeout:g} s"
        ) from None
    samples = [m for m in map(parse_line, r.stdout.splitlines()) if m and m.get("type") == "sample"]
    if not samples:
        raise ServerMeasureError(
            f"secperf-probe speed --alg {alg} --op sign gave no samples: {(r.stderr or r.stdout).strip()[-300:]}"
        )

    wall = statistics.median(s["wall_ns"] / s["ops"] / 1000 for s in samples)
    cpu = statistics.median(s["cpu_ns"] / s["ops"] / 1000 for s in samples)
    return {"alg": alg, "op": "sign", "wall_us": wall, "cpu_us": cpu, "n": len(samples)}
