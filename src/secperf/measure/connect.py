"""`secperf connect`: how long each IoT protocol takes to become usable (study S2), on real
servers, with the client key in software, in the token, or in the token behind a secure-element
profile; full and resumed handshakes; for HTTPS also JWT instead of mutual TLS.

One configuration becomes one Result series (kind "connect"):

- values_us: establishment time per connection, from the socket connect starting to the point the
  protocol is usable (HTTP response received, MQTT CONNACK received, CoAP response received, VPN
  tunnel up); the timer's boundaries are named in the series;
- samples: every connection raw, each with `phases` (ordered, summing to the establishment time):
  socket connect, client TLS CPU, secure element (the shim's calls inside this connection),
  server + network wait, the protocol step, and what remains;
- derived: phase medians, the secure element's per-call breakdown from the shim log (calls per
  connection, time per call), resumption verified per connection.

The probe is the client by default (in-process, per-message handshake CPU, key from file or a
pkcs11: URI). The protocols' own clients run as cross-checks, timed by their own timers where they
have one (curl), otherwise by spawn time minus their measured process start-up (reported apart).
Over an emulated link (`--network`) every client runs in the link's device namespace and dials the
server in its server namespace (`Dial`; OpenVPN's client and server through lab/vpn.LinkNamespaces);
each series records the link's counters.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from urllib.parse import unquote
from pathlib import Path

from ..core import result as R
from ..core import stats
from ..core.jsonlines import parse_lines
from ..core.paths import private_dir, write_private
from ..lab import registry
from ..lab.token import openssl_engine_conf, openssl_seclevel_conf
from ..lab.pki import LabPKI
from ..lab.services import LOOPBACK, Nginx, ServiceError
from .handshake import link_counters, link_timeout_ms, record_client_run, run_client
from .probe import find_shim
from ..core.errors import InputError

PROTOCOLS = ("https", "mqtt", "coap", "vpn")
KEY_SESSIONS = ("warm", "cold")
KEY_SOURCES_DOC = "software, token, se:PROFILE"
CLIENTS = {"https": ("probe", "curl"), "mqtt": ("probe", "mosquitto_pub", "paho"),
           "coap": ("probe", "coap-client"), "vpn": ("openvpn",)}
COAP_SERVERS = ("libcoap", "californium")
# Californium's client (Java), added with --coap-server californium: full, resumed, and a request after a
# NAT rebinding on the connection ID
CF_HANDSHAKES = ("full", "resumed", "cid-rebind")
CF_WARMUP = 10  # the JVM server (and client) compile their hot paths in the first connections
# CoAP over DTLS: the lab's demo pre-shared key (printable: libcoap takes it as a string)
COAP_PSK = b"secperf-lab-demo-psk-0123456789ab"
COAP_PSK_IDENTITY = "secperf-device"
OVER_US = 1_000_000.0  # S2 counts runs over 1 s

USABLE = {"https": "HTTP response received (status and Content-Length body)",
          "mqtt": "MQTT CONNACK received (return code 0)",
          "coap": "CoAP response received (2.05 in the ACK, or the separate response)",
          "vpn": "tunnel up (Initialization Sequence Completed)"}


RESUMPTION_REFUSED = {
    "coap": "the server resumed no session: libcoap's coap-server sets no session ID context, so OpenSSL "
            "refuses to resume a DTLS session with a verified client certificate (its log: 'session id "
            "context uninitialized'); every reconnection is a full handshake"}


# The 1998 RSA card (study S3) had only an RSA-1024 key. OpenSSL 3 at its default security level 2
# refuses a 1024-bit key on both ends (the client will not load it: 'ee key too small'; the server
# will not verify it). Decision: measure the card as it was -- its rows run client and server at
# security level 1 (80-bit security, admits RSA >= 1024), set through OPENSSL_CONF for those rows
# only and recorded in each series' labels (openssl_security_level) -- rather than swap in a key
# the card never had.
WEAK_RSA_KEY = "rsa-1024"
WEAK_RSA_SECLEVEL = 1


class ConnectError(InputError):
    """A configuration that cannot be measured as asked (bad key source, client, protocol)."""


@dataclass(frozen=True)
class ConnectConfig:
    protocol: str                 # https | mqtt | coap | vpn
    key_source: str = "software"  # software | token | se:PROFILE
    handshake: str = "full"       # full | resumed
    auth: str = "mtls"            # mtls | jwt_fresh | jwt_cached (https)
    client: str = "probe"
    tls: str = "1.3"              # TLS version for https/mqtt; CoAP runs DTLS 1.2
    security: str = "pki"         # coap: pki | psk
    nodelay: bool = True          # mosquitto's set_tcp_nodelay
    key_type: str = "ecdsa-p256"
    server_cert: str = "ecdsa-p256"
    network: str = "loopback"     # a --network value (lab/netns.Link); every client runs over it
    # warm: the probe opens its token session and logs in once, every connection signs on it;
    # cold: a device waking for each connection: a new probe process per connection, so the PKCS#11
    # session, login and key search are paid each time (and counted in the establishment time)
    key_session: str = "warm"
    coap_server: str = "libcoap"  # coap: libcoap's coap-server, or Californium (resumes; connection IDs)

    @property
    def profile(self) -> str | None:
        if self.key_source == "token":
            return "softhsm"
        return self.key_source[3:] if self.key_source.startswith("se:") else None

    @property
    def series_id(self) -> str:
        extra = "" if self.auth == "mtls" else f"/{self.auth}"
        extra += "" if self.security == "pki" else f"/{self.security}"
        extra += "" if self.nodelay else "/nagle"
        extra += "" if self.tls == "1.3" or self.protocol in ("coap", "vpn") else f"/tls{self.tls}"
        extra += "/cold" if self.key_session == "cold" else ""
        extra += "" if self.coap_server == "libcoap" else f"/{self.coap_server}-server"
        extra += "" if self.network in ("loopback", "none") else f"@{self.network}"
        return f"connect/{self.protocol}/{self.client}/{self.key_source}/{self.handshake}{extra}"

    @property
    def label(self) -> str:
        parts = [self.protocol, self.client, self.key_source, self.handshake]
        if self.auth != "mtls":
            parts.append(self.auth)
        if self.security != "pki":
            parts.append(self.security)
        if not self.nodelay:
            parts.append("nagle")
        if self.tls != "1.3" and self.protocol in ("https", "mqtt"):
            parts.append(f"tls{self.tls}")
        if self.key_session == "cold":
            parts.append("cold key session")
        if self.coap_server != "libcoap":
            parts.append(f"({self.coap_server} server)")
        if self.network not in ("loopback", "none"):
            parts.append(f"@ {self.network}")
        return " ".join(parts)


@dataclass
class ConnectParams:
    n: int = 20
    warmup: int = 2
    timeout_ms: int = 5000
    seed: int = 1
    workdir: Path | None = None
    pki_root: Path | None = None
    # test hooks: called with the started server (e.g. to stop it mid-run)
    on_server: object = field(default=None, repr=False)
    server_port: int | None = None  # a fixed port instead of a free one
    profiles_path: Path | None = None  # extra secure-element profiles (TOML) besides the built-in ones
    client_pair: tuple[Path, Path] | None = None  # test hook: this certificate and key instead of the lab's
    target: object = None  # measure.target.Target: the user's own server (--connect), nothing started

    def as_dict(self) -> dict:
        out = {"n": self.n, "warmup": self.warmup, "timeout_ms": self.timeout_ms, "seed": self.seed}
        if self.target is not None:
            out["target"] = self.target.labels()
        return out


def validate(cfg: ConnectConfig, known_profiles) -> None:
    if cfg.protocol not in PROTOCOLS:
        raise ConnectError(f"unknown protocol {cfg.protocol!r}; known: {', '.join(PROTOCOLS)}, all")
    if cfg.key_source not in ("software", "token") and not cfg.key_source.startswith("se:"):
        raise ConnectError(f"unknown key source {cfg.key_source!r}; known: {KEY_SOURCES_DOC}")
    if cfg.key_source.startswith("se:") and cfg.profile not in known_profiles:
        raise ConnectError(f"unknown secure-element profile {cfg.profile!r} in --key {cfg.key_source}; "
                           f"known: {', '.join(known_profiles)}")
    if cfg.client not in CLIENTS[cfg.protocol] and not (cfg.client == "californium" and cfg.protocol == "coap"):
        raise ConnectError(f"{cfg.protocol}: unknown client {cfg.client!r}; known: {', '.join(CLIENTS[cfg.protocol])}")
    if cfg.client == "paho" and cfg.key_source != "software":
        raise ConnectError("paho-mqtt uses Python's ssl module, which cannot use a PKCS#11 key: "
                           "use --key software with --client paho")
    if cfg.coap_server not in COAP_SERVERS or (cfg.coap_server != "libcoap" and cfg.protocol != "coap"):
        raise ConnectError(f"--coap-server {cfg.coap_server!r}: known {', '.join(COAP_SERVERS)} (CoAP only)")
    if cfg.client == "californium":
        if cfg.coap_server != "californium" or cfg.handshake not in CF_HANDSHAKES:
            raise ConnectError("the Californium client runs against the Californium server (--coap-server "
                               "californium), rows " + ", ".join(CF_HANDSHAKES))
    elif cfg.handshake not in ("full", "resumed"):
        raise ConnectError(f"unknown handshake {cfg.handshake!r}; known: full, resumed"
                           + (" (cid-rebind: with the Californium client)" if cfg.handshake == "cid-rebind" else ""))
    if cfg.auth != "mtls" and cfg.protocol != "https":
        raise ConnectError("JWT authentication is measured for HTTPS only")
    if cfg.key_session not in KEY_SESSIONS:
        raise ConnectError(f"unknown --key-session {cfg.key_session!r}; known: {', '.join(KEY_SESSIONS)}")
    if cfg.key_session == "cold" and (cfg.client != "probe" or cfg.handshake != "full" or cfg.key_source == "software"):
        raise ConnectError("--key-session cold applies to the probe's full handshakes with a token or secure-element "
                           "key (other clients start a new process per connection: cold by nature)")


# --- key material ----------------------------------------------------------------------------------



def _profiles(path: Path | None) -> dict:
    from ..inputs.se_profiles import load_profiles
    return {**load_profiles(), **(load_profiles(path) if path else {})}


class KeyMaterial:
    """The client certificate and key for a key source, and the environment a client process needs
    (the shim in front of SoftHSM2 with the source's profile, its call log)."""

    def __init__(self, cfg: ConnectConfig, pki: LabPKI, workdir: Path, seed: int,
                 profiles_path: Path | None = None, client_pair: tuple[Path, Path] | None = None):
        self.cfg = cfg
        self.token = None
        self.shim_log: Path | None = None
        self.security_level: int | None = None  # OpenSSL security level both sides run at (None: default)
        self.env = dict(os.environ)
        if client_pair is not None:
            self.cert, self.key, self.uri = Path(client_pair[0]), Path(client_pair[1]), None
            return
        if cfg.key_source == "software":
            cs = pki.client(cfg.key_type)
            self.cert, self.key, self.uri = cs.cert, cs.key, None
            return
        from ..lab.token import LabToken
        from ..inputs.se_profiles import get_profile
        from .signer import shim_env
        from .signer import key_type_for
        self.token = LabToken(pki=pki).ensure()
        profile = _profiles(profiles_path).get(cfg.profile) or get_profile(cfg.profile)
        key = self.token.key(key_type_for(profile, cfg.key_type))  # the 1998 RSA card: its RSA-1024 key
        if key["key_type"] == WEAK_RSA_KEY:
            self.security_level = WEAK_RSA_SECLEVEL
        self.cert = Path(key["cert_path"])
        self.key = None
        # the PIN stays in its 0600 file: libp11 reads it from there (pin-source), never from argv
        self.uri = self.token.uri(key["label"], pin_file=True)
        shim_dir = private_dir(workdir / "shim")
        profile = _profiles(profiles_path).get(cfg.profile) or get_profile(cfg.profile)
        self.profile, self.shim_dir = profile, shim_dir
        self.env, self.shim_log = shim_env(self.token, profile, shim_dir, seed)
        self.env["SECPERF_PKCS11_MODULE"] = str(find_shim())
        # Clients other than the probe find libp11's module through OpenSSL's configuration: point
        # the pkcs11 engine at the shim so their token calls pass the secure-element profile too.
        conf = shim_dir / "openssl.cnf"
        write_private(conf, openssl_engine_conf(find_shim(), init=False, security_level=self.security_level).encode())
        self.env["OPENSSL_CONF"] = str(conf)

    def run_env(self, i: int, seed: int) -> tuple[dict, Path]:
        """A client process of its own for connection `i` (cold key session): the shim loaded afresh
        with a seed per run (one seed for all would draw the same delays each time) and its own log."""
        from .signer import shim_env
        from .vpn import run_seed
        env, log = shim_env(self.token, self.profile, private_dir(self.shim_dir / f"run-{i}"), run_seed(seed, i))
        return {**env, "SECPERF_PKCS11_MODULE": self.env["SECPERF_PKCS11_MODULE"],
                "OPENSSL_CONF": self.env["OPENSSL_CONF"]}, log

    def probe_args(self) -> list[str]:
        return ["--cert", str(self.cert), "--key", self.uri or str(self.key)]

    def calls(self) -> list[dict]:
        from .signer import read_log
        return read_log(self.shim_log) if self.shim_log else []


# --- servers -----------------------------------------------------------------------------------------

def server_for(cfg: ConnectConfig, pki: LabPKI, workdir: Path, port: int | None = None):
    from ..lab.iot_services import CoapServer, Mosquitto
    certs = pki.server(cfg.server_cert, 1)
    client_ca = pki.client(cfg.key_type).ca
    if cfg.protocol == "https":
        return Nginx(certs, client_ca=client_ca, workdir=workdir)
    if cfg.protocol == "mqtt":
        return Mosquitto(certs, client_ca, nodelay=cfg.nodelay, workdir=workdir, port=port)
    if cfg.protocol == "coap":
        if cfg.coap_server == "californium":
            from ..lab.californium import CaliforniumServer
            return CaliforniumServer(certs, client_ca, workdir=workdir)
        if cfg.security == "psk":
            return CoapServer(psk=COAP_PSK, workdir=workdir, port=port)
        return CoapServer(certs, client_ca, workdir=workdir, port=port)
    raise ConnectError(f"no server for {cfg.protocol!r} here")


# --- phases -----------------------------------------------------------------------------------------

PHASES = ("socket connect", "handshake: client CPU", "secure element", "handshake: server + network",
          "protocol step", "other")


def probe_phases(conn: dict, calls: list[dict], busy: bool = False) -> tuple[list[dict], dict]:
    """Split one probe connection's establishment time into phases (µs, summing to usable_us).

    The shim's calls inside the connection [t0_ns, t1_ns] are the secure element: their real
    (SoftHSM2) part ran on the client thread inside the TLS library's CPU, their injected delay
    while the thread waited; both are moved out of those phases into "secure element"."""
    t0, t1 = conn.get("t0_ns", 0), conn.get("t1_ns", 0)
    mine = [c for c in calls if t0 <= c.get("start_ns", -1) <= t1]
    se_real = sum(c.get("real_ns", 0) for c in mine) / 1000
    se_delay = sum(c.get("delay_ns", 0) for c in mine) / 1000
    usable = float(conn["usable_us"])
    tcp = float(conn.get("tcp_connect_us", 0.0))
    hs = float(conn.get("handshake_wall_us", 0.0))
    lib = float(conn.get("lib_cpu_us", 0.0))
    app = conn.get("app") or {}
    step = float(app.get("write_us", 0.0)) + float(app.get("read_us", 0.0))
    # a busy-waiting element (profile wait = busy) spins on the client thread: its delay is CPU too
    client_cpu = max(0.0, lib - se_real - (se_delay if busy else 0.0))
    se = se_real + se_delay
    server_net = max(0.0, hs - client_cpu - se)
    other = usable - tcp - client_cpu - se - server_net - step
    parts = [tcp, client_cpu, se, server_net, step, other]
    phases = [{"phase": p, "us": round(v, 3)} for p, v in zip(PHASES, parts)]
    fns: dict[str, int] = {}
    for c in mine:
        fns[c["fn"]] = fns.get(c["fn"], 0) + 1
    return phases, {"calls": len(mine), "by_fn": fns, "se_us": round(se, 3)}


def phase_medians(samples: list[dict]) -> list[dict]:
    order: list[str] = []
    per: dict[str, list[float]] = {}
    for s in samples:
        for p in s.get("phases", []):
            if p["phase"] not in per:
                order.append(p["phase"])
                per[p["phase"]] = []
            per[p["phase"]].append(float(p["us"]))
    return [{"phase": k, "p50_us": stats.median(per[k])} for k in order]


def _series(cfg: ConnectConfig, timer_start: str, timer_end: str, clock: str) -> dict:
    labels = {k: v for k, v in asdict(cfg).items()}
    labels["profile"] = cfg.profile
    labels["label"] = cfg.label
    return R.new_series(cfg.series_id, kind="connect", labels=labels,
                        timer={"name": "establishment", "start": timer_start, "end": timer_end, "clock": clock})


def _se_breakdown(samples: list[dict], calls: list[dict]) -> dict:
    from .signer import per_call_breakdown
    # a cold connection starts at its process's C_OpenSession (see cold_phases)
    iters = [{"start_ns": (s.get("cold") or {}).get("start_ns", s["t0_ns"]), "end_ns": s["t1_ns"]}
             for s in samples if "t0_ns" in s]
    return per_call_breakdown(iters, calls)


# --- where a client runs ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Dial:
    """Where a configuration's client runs and what it dials. Over loopback (no link, or a loopback
    one): here, 127.0.0.1, the configured timeout. Over an emulated link: inside the link's device
    namespace (`prefix` in front of the client's argv), the server's address in the server
    namespace, and a timeout grown by ten of the link's round trips (handshake.link_timeout_ms), so
    a slow link is not a failure."""
    host: str = LOOPBACK
    prefix: tuple[str, ...] = ()
    timeout_ms: int = 5000
    link: object = None  # the emulated lab/netns.Link, None over loopback

    def argv(self, argv: list[str]) -> list[str]:
        return [*self.prefix, *argv]


def dial_for(link, p: ConnectParams) -> Dial:
    if link is None or link.loopback:
        return Dial(LOOPBACK, (), p.timeout_ms)
    return Dial(link.server_addr, tuple(link.dev_prefix()), link_timeout_ms(p.timeout_ms, link.spec), link)


# --- the probe as client ----------------------------------------------------------------------------

def probe_client_args(cfg: ConnectConfig, port: int, p: ConnectParams, pki: LabPKI, km: KeyMaterial,
                      host: str = LOOPBACK, timeout_ms: int | None = None) -> list[str]:
    t = p.target
    if t is not None:  # the user's server: its address, name and CA (unverified without --ca)
        a = ["--host", t.addr, "--port", str(t.port), "--servername", t.sni] + (["--ca", str(t.ca)] if t.ca else [])
    else:
        certs = pki.server(cfg.server_cert, 1)
        a = ["--host", host, "--port", str(port), "--ca", str(certs.ca), "--servername", "localhost"]
    a += ["--n", str(p.n), "--warmup", str(p.warmup), "--timeout-ms", str(timeout_ms or p.timeout_ms)]
    if cfg.protocol == "coap":
        a += ["--proto", "dtls", "--tls", "1.2", "--app", "coap", "--dtls-cookie"]
        if cfg.security == "psk":
            a += ["--psk-identity", COAP_PSK_IDENTITY, "--psk-hex", COAP_PSK.hex(), "--mode", "psk",
                  "--ciphers", "PSK-AES128-CCM8:PSK-AES128-GCM-SHA256:PSK-AES128-CBC-SHA256"]
            return a
        a += ["--mode", "resume-id" if cfg.handshake == "resumed" else "full"]
    else:
        a += ["--tls", cfg.tls, "--app", "http" if cfg.protocol == "https" else "mqtt"]
        if cfg.tls == "1.2" and cfg.key_type == "ecdsa-p256":
            a += ["--groups", "x25519:P-256"]
        a += ["--mode", "resume-ticket" if cfg.handshake == "resumed" else "full"]
        if cfg.protocol == "https":
            from .target import request_bytes
            a += ["--request-bytes", str(request_bytes(40, t.sni if t is not None else "localhost"))]
    if t is not None and cfg.key_source == "software":  # the user's client certificate, if any
        return a + (["--cert", str(t.client_cert), "--key", str(t.client_key)] if t.client_cert else [])
    return a + km.probe_args()


def _kill_later(server, after_s: float) -> threading.Timer:
    t = threading.Timer(after_s, server.stop)
    t.daemon = True
    t.start()
    return t


def _start(cfg: ConnectConfig, p: ConnectParams, pki: LabPKI, s: dict, link=None):
    """The key material and the configuration's server, started and checked ready (inside the
    link's server namespace when `link` emulates one). Returns (km, server), or None with the
    reason recorded in series `s` (the run goes on)."""
    workdir = private_dir((p.workdir or Path(".")) / _slug(cfg.series_id))
    try:
        km = KeyMaterial(cfg, pki, workdir, p.seed, p.profiles_path, p.client_pair)
    except RuntimeError as exc:  # TokenError
        R.add_failure(s, f"key: {exc}")
        return None
    try:
        if p.target is not None:
            from ..lab.services import RemoteServer
            server = RemoteServer(p.target.addr, p.target.port, "dtls" if cfg.protocol == "coap" else "tls",
                                  workdir / "server")
            s["labels"].update(p.target.labels())
        else:
            server = server_for(cfg, pki, workdir / "server", p.server_port)
    except ConnectError as exc:
        R.add_failure(s, f"server: {exc}")
        return None
    if km.security_level is not None:
        s["labels"]["openssl_security_level"] = km.security_level
        s["labels"]["note"] = (f"client and server at OpenSSL security level {km.security_level}: the 1998 card's "
                               "RSA-1024 key is refused at the default level 2")
        if p.target is None:
            conf = private_dir(workdir / "server-openssl") / "openssl.cnf"
            write_private(conf, openssl_seclevel_conf(km.security_level).encode())
            server.openssl_conf = conf
    if link is not None and not link.loopback:
        server.place(link.srv_prefix(), link.server_addr,
                     lambda kind=socket.SOCK_STREAM: link.socket("srv", type=kind), user=link.server_user)
        s["labels"].update(network_spec=link.spec.canonical(), network_rtt_ms=link.spec.rtt_ms,
                           network_loss=link.spec.loss)
    try:
        server.start()
    except (ServiceError, OSError) as exc:
        R.add_failure(s, f"server: {exc}")
        s["labels"]["server_log"] = str(server.log_path)
        return None
    s["labels"]["server"] = server.name
    s["labels"]["server_settings"] = server.describe()
    if callable(p.on_server):
        p.on_server(server)
    return km, server


def _finish(s: dict, server) -> dict:
    """Summaries and status; the server's directory goes when all went well, else its log is named."""
    R.finalize_series(s, OVER_US)
    if s["status"] == "ok":
        shutil.rmtree(server.workdir, ignore_errors=True)
    else:
        s["labels"]["server_log"] = str(server.log_path)
    return s


def measure_probe(cfg: ConnectConfig, p: ConnectParams, pki: LabPKI, doc: dict | None = None, link=None) -> dict:
    """One configuration with the probe as client. With `link` (lab/netns.Link) the server runs in
    the link's server namespace and the probe in its device namespace, over the emulated link."""
    s = _series(cfg, "socket connect() started (TCP SYN / DTLS socket set-up)", USABLE[cfg.protocol],
                "CLOCK_MONOTONIC (secperf-probe)")
    ready = _start(cfg, p, pki, s, link)
    if ready is None:
        return R.finalize_series(s)
    km, server = ready
    dial = dial_for(link, p)
    if cfg.coap_server == "californium" and p.warmup < CF_WARMUP:
        from dataclasses import replace as _replace
        p = _replace(p, warmup=CF_WARMUP)  # a JVM server: warm its hot paths first (the series says so)
        s["labels"]["warmup"] = CF_WARMUP
    try:
        if cfg.key_session == "cold":
            with link_counters(s["derived"], dial.link):
                meta, conns, err, calls = _cold_runs(cfg, p, pki, km, server.port, dial)
        else:
            budget = (p.n + p.warmup + 2) * (dial.timeout_ms / 1000.0) * 3 + 30
            args = probe_client_args(cfg, server.port, p, pki, km, dial.host, dial.timeout_ms)
            with link_counters(s["derived"], dial.link):
                meta, conns, err = run_client(args, budget, prefix=list(dial.prefix), env=km.env)
            calls = None
        if hasattr(server, "drain") and cfg.coap_server == "californium":
            hs = server.drain()[-p.n:]  # the server's own word on each counted handshake
            s["derived"]["server_resumed"] = sum(1 for h in hs if h.get("resumed"))
    finally:
        server.stop()
    record_client_run(s, doc, meta, err)
    if cfg.key_session == "cold":
        s["timer"]["start"] = COLD_START
    calls = km.calls() if calls is None else calls
    for c in conns:
        if not c.get("ok"):
            R.add_failure(s, f"connection {c.get('i')}: {c.get('stage', '?')}: {c.get('reason', 'failed')}")
            s["samples"].append(c)
            continue
        phases, se = probe_phases(c, calls, busy=getattr(getattr(km, "profile", None), "wait", "") == "busy")
        if "cold" in c:
            phases = c["cold"]["phases"] + phases
            c["usable_us"] = c["cold"]["usable_us"]
            se["calls"] += c["cold"]["calls"]
            se["se_us"] = round(se["se_us"] + c["cold"]["token_us"], 3)
        c["phases"], c["se"] = phases, se
        s["samples"].append(c)
        s["values_us"].append(float(c["usable_us"]))
        s["cpu_values_us"].append(float(c["lib_cpu_us"]))
    _derive(s, cfg, calls, km)
    return _finish(s, server)


COLD_START = ("C_OpenSession of a new client process (cold key session: open, log in, find the key, then "
              "the socket connect)")
SESSION_FNS = ("C_OpenSession", "C_Login", "C_FindObjectsInit", "C_FindObjects", "C_FindObjectsFinal",
               "C_GetAttributeValue", "C_GetSessionInfo")


def cold_phases(conn: dict, calls: list[dict]) -> dict | None:
    """A cold connection's start: its process's first C_OpenSession. Returns the phases before the
    socket connect -- the token's own session set-up calls (open, login, key search: real and
    injected time) and the host's work between them (engine, key and context loading) -- and the
    establishment time from that start to usable; None if the process opened no session."""
    t0 = conn.get("t0_ns")
    opens = [c for c in calls if c.get("fn") == "C_OpenSession" and t0 is not None and c.get("start_ns", t0) < t0]
    if not opens:
        return None
    start = min(c["start_ns"] for c in opens)
    before = [c for c in calls if start <= c.get("start_ns", -1) < t0]
    token_us = sum(c.get("duration_ns", c.get("real_ns", 0) + c.get("delay_ns", 0)) for c in before) / 1000
    span_us = (t0 - start) / 1000
    return {"usable_us": span_us + float(conn["usable_us"]), "start_ns": start, "token_us": round(token_us, 3),
            "phases": [{"phase": "key session: open, login, find key", "us": round(token_us, 3)},
                       {"phase": "key session: host (engine, key and context loading)",
                        "us": round(max(0.0, span_us - token_us), 3)}],
            "calls": len(before)}


def _cold_runs(cfg: ConnectConfig, p: ConnectParams, pki: LabPKI, km: KeyMaterial, port: int, dial: Dial):
    """Cold key session: one probe process per connection (warm-up processes first, discarded), each
    loading the key through the shim afresh. Returns (meta, connections, error, every shim call)."""
    one = ConnectParams(n=1, warmup=0, timeout_ms=p.timeout_ms, seed=p.seed)
    args = probe_client_args(cfg, port, one, pki, km, dial.host, dial.timeout_ms)
    meta, conns, err, calls = None, [], None, []
    for i in range(p.warmup + p.n):
        env, log = km.run_env(i, p.seed)
        m, got, e = run_client(args, dial.timeout_ms / 1000.0 * 3 + 30, prefix=list(dial.prefix), env=env)
        from .signer import read_log
        mine = read_log(log)
        meta = meta or m
        if i < p.warmup:
            continue
        calls += mine
        if e and not got:
            got = [{"ok": False, "stage": "process", "reason": e}]
        for c in got:
            c["i"] = i - p.warmup
            if c.get("ok"):
                cold = cold_phases(c, mine)
                if cold is None:
                    c.update(ok=False, stage="key session", reason="the client process opened no PKCS#11 session "
                                                                   "before connecting")
                else:
                    c["cold"] = cold
            conns.append(c)
    return meta, conns, err, calls


def _derive(s: dict, cfg: ConnectConfig, calls: list[dict], km: KeyMaterial | None) -> None:
    ok = [c for c in s["samples"] if c.get("ok")]
    d = s["derived"]
    if not ok:
        return
    d["phases_p50_us"] = phase_medians(ok)
    if "version" in ok[0]:
        d["negotiated"] = {k: ok[0].get(k) for k in ("version", "cipher", "group")}
    d["resumed"] = sum(1 for c in ok if c.get("resumed"))
    if cfg.handshake == "resumed" and d["resumed"] == 0:
        # the server never resumes: a property of the server, measured and said, not a failed run;
        # every reconnection here is a full handshake (the table shows resumed 0/n)
        d["resumption_note"] = RESUMPTION_REFUSED.get(cfg.protocol, "the server resumed no session")
        s["labels"]["note"] = d["resumption_note"]
    elif cfg.handshake == "resumed" and d["resumed"] < len(ok):
        R.add_failure(s, f"resumption did not happen on {len(ok) - d['resumed']} of {len(ok)} connections")
    if km is not None and km.shim_log is not None:
        for c in ok:
            if "se" not in c and "t0_ns" in c:
                mine = [x for x in calls if c["t0_ns"] <= x.get("start_ns", -1) <= c["t1_ns"]]
                c["se"] = {"calls": len(mine), "se_us": sum(x.get("duration_ns", 0) for x in mine) / 1000}
        d["se_calls"] = _se_breakdown(ok, calls)
        se = [c["se"]["se_us"] for c in ok if "se" in c]
        if se:
            d["se_p50_us"] = stats.median(se)
        s["labels"]["shim_log"] = str(km.shim_log)


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in text)[:100]


# --- external clients (cross-checks) -----------------------------------------------------------------

def _median_startup(argv: list[str], n: int, env: dict | None = None) -> float:
    """Median spawn → exit time (µs) of a command that starts the client and exits at once (with
    the same namespace prefix as the measured runs, so entering the namespace is start-up too)."""
    vals = []
    for _ in range(max(3, min(n, 10))):
        t0 = time.perf_counter_ns()
        subprocess.run(argv, capture_output=True, env=env, timeout=30)
        vals.append((time.perf_counter_ns() - t0) / 1000)
    return stats.median(vals)


def _stamp_lines(argv: list[str], env: dict, marker: str, timeout_s: float, prefix: tuple[str, ...] = (),
                 cwd: Path | None = None) -> tuple[float | None, float, int, str]:
    """Spawn argv (under `prefix`, e.g. in a link's device namespace) with line-buffered stdout;
    return (µs from spawn to the first line containing marker or None, µs to exit, exit code, last
    output)."""
    cmd = [*prefix, *(["stdbuf", "-oL"] if shutil.which("stdbuf") else []), *argv]
    t0 = time.perf_counter_ns()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True,
                            stdin=subprocess.DEVNULL, cwd=cwd)
    hit, tail = None, []
    timer = threading.Timer(timeout_s, proc.kill)
    timer.start()
    try:
        for line in proc.stdout:
            tail = (tail + [line.rstrip()])[-6:]
            if hit is None and marker in line:
                hit = (time.perf_counter_ns() - t0) / 1000
        rc = proc.wait()
    finally:
        timer.cancel()
    return hit, (time.perf_counter_ns() - t0) / 1000, rc, " | ".join(tail)


def measure_external(cfg: ConnectConfig, p: ConnectParams, pki: LabPKI, doc: dict | None = None, link=None) -> dict:
    """curl, mosquitto_pub, paho-mqtt or coap-client against the same server as the probe. With
    `link` (lab/netns.Link) the server runs in the link's server namespace and the client in its
    device namespace (see Dial), and the link's counters for the run are recorded."""
    certs = pki.server(cfg.server_cert, 1)
    timer_end = USABLE[cfg.protocol]
    if cfg.client == "curl":
        s = _series(cfg, "curl's own timer: transfer start", f"{timer_end} (curl time_total)", "curl -w timers")
    elif cfg.client == "paho":
        s = _series(cfg, "paho-mqtt client.connect() called", "on_connect callback (CONNACK received)",
                    "time.perf_counter_ns (in-process)")
    else:
        s = _series(cfg, "process spawned, minus the client's median process start-up (reported apart)",
                    timer_end, "time.perf_counter_ns around the process")
    ready = _start(cfg, p, pki, s, link)
    if ready is None:
        return R.finalize_series(s)
    km, server = ready
    dial = dial_for(link, p)
    try:
        runner = {"curl": _curl_run, "mosquitto_pub": _mosquitto_pub_run, "paho": _paho_run,
                  "coap-client": _coap_client_run}[cfg.client]
        with link_counters(s["derived"], dial.link):
            startup = runner(cfg, p, server.port, certs, km, s, dial)
    finally:
        server.stop()
    if startup is not None:
        s["derived"]["startup_p50_us"] = startup
    calls = km.calls()
    _derive(s, cfg, calls, km)
    if km.shim_log is not None:
        # a new process loads the token each time: every PKCS#11 call of the run counts
        s["derived"]["se_calls_per_run"] = len(calls) / max(1, p.n + p.warmup)
    return _finish(s, server)


def _record(s: dict, i: int, warm: bool, sample: dict) -> None:
    if warm:
        return
    sample["i"] = i
    s["samples"].append(sample)
    if sample.get("ok"):
        s["values_us"].append(sample["usable_us"])
    else:
        R.add_failure(s, f"run {sample['i']}: {sample.get('reason', 'failed')}")


def _timed_run(argv: list[str], env: dict, timeout_s: float) -> tuple[subprocess.CompletedProcess, float, dict]:
    """Run a client process to its end: (result, wall µs spawn → exit, its CLOCK_MONOTONIC bounds
    as t0_ns/t1_ns, to match the shim's calls to the run)."""
    m0, t0 = time.monotonic_ns(), time.perf_counter_ns()
    r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout_s)
    wall = (time.perf_counter_ns() - t0) / 1000
    return r, wall, {"t0_ns": m0, "t1_ns": time.monotonic_ns()}


def _curl_run(cfg, p, port, certs, km, s, dial: Dial) -> float | None:
    exe = shutil.which("curl")
    if exe is None:
        R.add_failure(s, "curl is not installed: run scripts/bootstrap")
        return None
    url = f"https://localhost:{port}/"  # the lab certificate's name, resolved to the server's address
    argv = [exe, "-sS", "-o", os.devnull, "-w", "%{json}", "--resolve", f"localhost:{port}:{dial.host}",
            "--cacert", str(certs.ca), "--cert", str(km.cert), "--max-time", str(dial.timeout_ms / 1000)]
    if km.uri:
        argv += ["--engine", "pkcs11", "--key-type", "ENG", "--key", km.uri]
    else:
        argv += ["--key", str(km.key)]
    if cfg.tls == "1.3":
        argv += ["--tlsv1.3"]
    else:
        argv += ["--tlsv1.2", "--tls-max", "1.2"]
    argv = dial.argv(argv + [url])
    startup = []
    for i in range(p.warmup + p.n):
        r, wall, bracket = _timed_run(argv, km.env, dial.timeout_ms / 1000 + 30)
        warm = i < p.warmup
        try:
            w = json.loads(r.stdout)
        except json.JSONDecodeError:
            w = {}
        if r.returncode != 0 or w.get("http_code") != 200:
            _record(s, i - p.warmup, warm, {"ok": False, "reason": f"curl exited {r.returncode} "
                                            f"(HTTP {w.get('http_code')}): {r.stderr.strip()[-300:]}"})
            continue
        tc, ta, tt = (float(w[k]) * 1e6 for k in ("time_connect", "time_appconnect", "time_total"))
        phases = [{"phase": "socket connect", "us": tc}, {"phase": "TLS handshake", "us": ta - tc},
                  {"phase": "protocol step", "us": tt - ta}]
        if not warm:
            startup.append(wall - tt)
        _record(s, i - p.warmup, warm, {"ok": True, "usable_us": tt, "phases": phases, "process_wall_us": wall,
                                        "time_appconnect_us": ta, "resumed": False, **bracket})
    return stats.median(startup) if startup else None


def _mosquitto_pub_run(cfg, p, port, certs, km, s, dial: Dial) -> float | None:
    """mosquitto_pub per connection; with the token key from a private temporary directory that is
    removed at the end (it links to the token's PIN file, so it never lies inside results/)."""
    exe = shutil.which("mosquitto_pub")
    if exe is None:
        R.add_failure(s, "mosquitto_pub is not installed: run scripts/bootstrap (mosquitto-clients)")
        return None
    base = [exe, "-h", dial.host, "-p", str(port), "--cafile", str(certs.ca), "--insecure",
            "--cert", str(km.cert), "-t", "secperf/connect", "-m", "x", "-q", "0", "-d",
            "-i", f"secperf-pub-{os.getpid()}"]
    cwd = None
    if km.uri:
        cwd, key_id = engine_key_dir(km)
        base += ["--keyform", "engine", "--tls-engine", "pkcs11", "--key", key_id]
    else:
        base += ["--key", str(km.key)]
    try:
        return _mosquitto_pub_loop(cfg, p, km, s, dial, exe, base, cwd)
    finally:
        if cwd is not None:
            shutil.rmtree(cwd, ignore_errors=True)


def _mosquitto_pub_loop(cfg, p, km, s, dial: Dial, exe: str, base: list[str], cwd) -> float:
    if cfg.tls in ("1.2", "1.3"):
        base += ["--tls-version", f"tlsv{cfg.tls}"]
    startup = _median_startup(dial.argv([exe, "--help"]), p.n, km.env)
    for i in range(p.warmup + p.n):
        m0 = time.monotonic_ns()
        hit, wall, rc, tail = _stamp_lines(base, km.env, "received CONNACK", dial.timeout_ms / 1000 + 10, dial.prefix,
                                           cwd=cwd)
        bracket = {"t0_ns": m0, "t1_ns": time.monotonic_ns()}
        warm = i < p.warmup
        if hit is None:
            _record(s, i - p.warmup, warm, {"ok": False, "reason": f"mosquitto_pub exited {rc} without CONNACK: {tail[-300:]}"})
            continue
        _record(s, i - p.warmup, warm, {"ok": True, "usable_us": max(0.0, hit - startup), "connack_since_spawn_us": hit,
                                        "process_wall_us": wall, "resumed": False, **bracket,
                                        "phases": [{"phase": "connect + TLS + CONNECT/CONNACK (spawn minus start-up)",
                                                    "us": max(0.0, hit - startup)}]})
    return startup


def engine_key_dir(km: KeyMaterial) -> tuple[Path, str]:
    """mosquitto_pub with the token key: (a private working directory, the key id to pass).

    libmosquitto 2.0 (mosquitto_tls_set) opens the --key argument as a file before it looks at
    --keyform, so a pkcs11: URI fails there ('Problem setting TLS options: File not found') although
    the engine would load it. The URI is therefore made relative -- its PIN source a relative
    `user.pin`, a link to the token's 0600 PIN file -- and an empty file of that very name sits in a
    0700 directory the client runs in: the file check passes, and libp11 gets the URI (and reads
    the PIN from its file, never from argv)."""
    import tempfile
    # outside the run directory: an archive of results/ (tar -h, zip) would copy the PIN through the link
    d = Path(tempfile.mkdtemp(prefix="secperf-engine-key-"))  # 0700
    pin = d / "user.pin"
    if not pin.is_symlink():
        pin.symlink_to(km.token.pin_path)
    key_id = km.uri.split("?", 1)[0] + "?pin-source=file:user.pin"
    if "/" in key_id:
        raise ConnectError(f"the token URI {key_id!r} contains '/': it cannot name a file for mosquitto_pub")
    write_private(d / key_id, b"")
    return d, key_id


def _coap_client_run(cfg, p, port, certs, km, s, dial: Dial) -> float | None:
    exe = shutil.which("coap-client-openssl")
    if exe is None:
        R.add_failure(s, "coap-client-openssl is not installed: run scripts/bootstrap (libcoap3-bin)")
        return None
    argv = [exe, "-m", "get", "-B", str(max(1, -(-dial.timeout_ms // 1000))), "-v", "0"]
    if cfg.security == "psk":
        argv += ["-u", COAP_PSK_IDENTITY, "-k", COAP_PSK.decode()]
    else:
        if km.uri:
            # libcoap: once one of -c/-j/-C is a PKCS#11 URI the others must be DER files; the URI
            # goes to the pkcs11 engine, which reads the PIN from its file
            der = private_dir(Path(km.shim_log).parent / "der")
            argv += ["-c", str(_der(km.cert, der / "client.der")), "-C", str(_der(certs.ca, der / "ca.der")),
                     "-j", km.uri]
        else:
            argv += ["-c", str(km.cert), "-C", str(certs.ca)]
            argv += ["-j", str(km.key)]
    argv = dial.argv(argv + [f"coaps://{dial.host}:{port}/"])
    startup = _median_startup(dial.argv([exe, "-h"]), p.n, km.env)
    for i in range(p.warmup + p.n):
        r, wall, bracket = _timed_run(argv, km.env, dial.timeout_ms / 1000 + 30)
        warm = i < p.warmup
        if r.returncode != 0 or not r.stdout.strip():
            _record(s, i - p.warmup, warm, {"ok": False, "reason": f"coap-client exited {r.returncode} "
                                            f"without a response: {(r.stderr or r.stdout).strip()[-300:]}"})
            continue
        est = max(0.0, wall - startup)
        _record(s, i - p.warmup, warm, {"ok": True, "usable_us": est, "process_wall_us": wall, "resumed": False, **bracket,
                                        "phases": [{"phase": "DTLS + GET/response + exit (spawn minus start-up)",
                                                    "us": est}]})
    return startup


def _der(pem: Path, out: Path) -> Path:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding
    out.write_bytes(x509.load_pem_x509_certificate(Path(pem).read_bytes()).public_bytes(Encoding.DER))
    return out


def _paho_run(cfg, p, port, certs, km, s, dial: Dial) -> None:
    """paho-mqtt in a worker process (secperf.measure.paho_client) making all connections, under the
    link's device-namespace prefix over an emulated link (why a process: see that module)."""
    try:
        import paho.mqtt.client  # noqa: F401 - the worker runs with this interpreter
    except ImportError:
        R.add_failure(s, "paho-mqtt is not installed: run scripts/bootstrap")
        return None
    argv = dial.argv([sys.executable, "-m", "secperf.measure.paho_client", "--host", dial.host, "--port", str(port),
                      "--ca", str(certs.ca), "--cert", str(km.cert), "--key", str(km.key),
                      "--n", str(p.n), "--warmup", str(p.warmup), "--timeout-ms", str(dial.timeout_ms),
                      "--client-id", f"secperf-paho-{os.getpid()}"])
    budget = (p.n + p.warmup) * (dial.timeout_ms / 1000 + 5) + 30
    try:
        r = registry.run(argv, "paho worker", capture_output=True, text=True, env=km.env, timeout=budget)
    except subprocess.TimeoutExpired:
        R.add_failure(s, f"paho-mqtt worker did not finish within {budget:.0f} s")
        return None
    for c in parse_lines(r.stdout):
        if c.get("type") == "error":
            R.add_failure(s, c.get("reason", "paho-mqtt worker failed"))
            continue
        if c.get("type") != "conn" or c.get("warmup"):
            continue
        sample = {k: v for k, v in c.items() if k in ("ok", "reason", "usable_us", "rc", "t0_ns", "t1_ns")}
        if c.get("ok"):
            sample.update(resumed=False, phases=[{"phase": "socket connect + TLS handshake", "us": c["connect_us"]},
                                                 {"phase": "protocol step", "us": c["step_us"]}])
        _record(s, c["i"], False, sample)
    if r.returncode != 0:
        R.add_failure(s, f"paho-mqtt worker exited {r.returncode}: {r.stderr.strip()[-300:]}")
    return None


# --- the experiment matrix ---------------------------------------------------------------------------

def configs_for(protocols: list[str], key_sources: list[str], handshakes: list[str], clients: list[str] | None,
                auths: list[str] | None = None, tls: str = "1.3", nodelay: bool = True,
                coap_security: list[str] | None = None, key_sessions: list[str] | None = None,
                coap_servers: list[str] | None = None) -> list[ConnectConfig]:
    """The matrix `secperf connect` runs: protocol × key source × handshake, plus each protocol's
    external clients (software key, full handshake) and, for HTTPS, JWT authentication rows."""
    out: list[ConnectConfig] = []
    for proto in protocols:
        want_clients = clients or list(CLIENTS[proto][:1])
        for client in want_clients:
            if client not in CLIENTS[proto]:
                continue
            for ks in key_sources:
                for hsk in handshakes:
                    if proto == "vpn" and hsk == "resumed":
                        continue
                    if client != "probe" and hsk == "resumed":
                        continue
                    for sec in (coap_security or ["pki"]) if proto == "coap" else ["pki"]:
                        if sec == "psk" and (ks != "software" or hsk != "full"):
                            continue  # a PSK involves no client key: one row is enough
                        for ksess in _sessions_for(key_sessions, client, ks, hsk, sec):
                            for cs in (coap_servers or ["libcoap"]) if proto == "coap" else ["libcoap"]:
                                if cs != "libcoap" and (client != "probe" or sec != "pki"):
                                    continue
                                out.append(ConnectConfig(proto, ks, hsk, client=client, tls=tls, nodelay=nodelay,
                                                         security=sec, key_session=ksess, coap_server=cs))
        if proto == "coap" and "californium" in (coap_servers or []):
            # Californium's client: full, resumed, connection ID after a rebinding; software key, and the
            # token key through the JDK's SunPKCS11 provider and the shim
            out += [ConnectConfig("coap", ks, h, client="californium", coap_server="californium")
                    for ks in key_sources for h in CF_HANDSHAKES]
        if proto == "https":
            for auth in auths or []:
                if auth == "mtls":
                    continue
                for ks in key_sources:
                    for ksess in (key_sessions or ["warm"]) if auth == "jwt_fresh" and ks != "software" else ["warm"]:
                        out.append(ConnectConfig("https", ks, "full", auth=auth, client="jwt-client",
                                                 key_session=ksess))
    return list(dict.fromkeys(out))


def _sessions_for(key_sessions: list[str] | None, client: str, ks: str, hsk: str, sec: str) -> list[str]:
    """Key sessions a row runs with: cold only where it differs (the probe, a token key, a full
    handshake with a client certificate); elsewhere the row runs once, warm."""
    if client == "probe" and ks != "software" and hsk == "full" and sec == "pki":
        return list(key_sessions or ["warm"])
    return ["warm"]


def measure(cfg: ConnectConfig, p: ConnectParams, pki: LabPKI, doc: dict | None = None, link=None) -> list[dict]:
    """Every series one configuration produces (JWT configurations go through `signer.run_jwt`)."""
    if cfg.protocol == "vpn":
        return [_measure_vpn(cfg, p, link)]
    if cfg.client == "probe":
        return [measure_probe(cfg, p, pki, doc, link)]
    if cfg.client == "californium":
        return [measure_californium(cfg, p, pki, doc, link)]
    return [measure_external(cfg, p, pki, doc, link)]


CF_TIMER = {"full": ("CoapClient.get() on a new DTLS connector (no session)", "2.05 response received: full handshake "
                     "with the client certificate, then the request"),
            "resumed": ("CoapClient.get() after forceResumeAllSessions()", "2.05 response received: abbreviated "
                        "handshake on the session ID, then the request"),
            "cid-rebind": ("CoapClient.get() after the client's address changed (NAT rebinding: new source port)",
                           "2.05 response received on the same DTLS connection, found by its connection ID "
                           "(no handshake)")}


def measure_californium(cfg: ConnectConfig, p: ConnectParams, pki: LabPKI, doc: dict | None = None, link=None) -> dict:
    """Californium's own client against the Californium server: full handshakes, resumed sessions,
    and requests after a NAT rebinding carried by the connection ID. Every connection is verified:
    handshakes the client started (none for cid-rebind) and whether it resumed (resumed rows)."""
    start, end = CF_TIMER[cfg.handshake]
    s = _series(cfg, start, end, "System.nanoTime (in the Java client)")
    ready = _start(cfg, p, pki, s, link)
    if ready is None:
        return R.finalize_series(s)
    km, server = ready
    dial = dial_for(link, p)
    from ..lab.californium import CID_LENGTH, find_jar, java_exe, pkcs8_pem, sunpkcs11_config
    warmup = max(p.warmup, CF_WARMUP)
    s["labels"]["warmup"] = warmup
    try:
        certs = pki.server(cfg.server_cert, 1)
        if km.uri:  # the token key: SunPKCS11 on the shim, the PIN read from its 0600 file by the client
            conf = Path(km.shim_dir) / "sunpkcs11.cfg"
            write_private(conf, sunpkcs11_config(find_shim()).encode())
            label = km.uri.split("object=", 1)[1].split(";", 1)[0].split("?", 1)[0]
            key_args = ["--pkcs11-config", str(conf), "--pkcs11-pin-file", str(km.token.pin_path),
                        "--pkcs11-label", unquote(label)]
            s["labels"]["client_key_provider"] = "SunPKCS11 (JDK) on the secure-element shim"
        else:
            key = server.write_secret(Path(server.workdir) / "client.p8.pem", pkcs8_pem(km.key))
            key_args = ["--key", str(key)]
        argv = dial.argv([java_exe(), "-jar", str(find_jar()), "client", "--host", dial.host, "--port", str(server.port),
                          "--ca", str(certs.ca), "--cert", str(km.cert), *key_args, "--n", str(p.n),
                          "--warmup", str(warmup), "--row", cfg.handshake, "--cid-length", str(CID_LENGTH),
                          "--timeout-ms", str(dial.timeout_ms)])
        budget = (p.n + warmup + 2) * (dial.timeout_ms / 1000 + 2) + 60
        with link_counters(s["derived"], dial.link):
            try:
                r = registry.run(argv, "californium client", capture_output=True, text=True, timeout=budget,
                                 env=km.env)
            except subprocess.TimeoutExpired:
                r = None
                R.add_failure(s, f"the Californium client did not finish within {budget:.0f} s")
        hs = server.drain()
    except ServiceError as exc:
        R.add_failure(s, str(exc))
        r, hs = None, []
    finally:
        server.stop()
    calls = km.calls()
    for c in parse_lines(r.stdout) if r is not None else []:
        if c.get("type") == "error":
            R.add_failure(s, c.get("reason", "the Californium client failed"))
        if c.get("type") != "conn" or c.get("warmup"):
            continue
        c["i"] = c["i"] - warmup
        if c.get("ok") and cfg.handshake == "cid-rebind" and c.get("handshakes"):
            c.update(ok=False, reason="a new handshake ran after the rebinding: the connection ID was not used")
        if c.get("ok") and cfg.handshake == "resumed" and not c.get("resumed"):
            c.update(ok=False, reason="the session was not resumed")
        if c.get("ok"):
            rest = {"full": "DTLS handshake + CoAP GET/response", "resumed": "abbreviated handshake + CoAP GET/response",
                    "cid-rebind": "CoAP GET/response (no handshake)"}[cfg.handshake]
            se_us = _token_us(c, calls)
            c["phases"] = ([{"phase": "secure element", "us": round(se_us, 3)}] if km.shim_log else []) + \
                [{"phase": rest, "us": round(max(0.0, c["usable_us"] - se_us), 3)}]
        _record(s, c["i"], False, c)
    if r is not None and r.returncode != 0 and not s["failures"]:
        R.add_failure(s, f"the Californium client exited {r.returncode}: {r.stderr.strip()[-300:]}")
    d = s["derived"]
    ok = [c for c in s["samples"] if c.get("ok")]
    d["resumed"] = sum(1 for c in ok if c.get("resumed"))
    d["handshakes_per_request"] = (sum(c.get("handshakes", 0) for c in ok) / len(ok)) if ok else None
    d["server_handshakes"] = {"total": len(hs), "resumed": sum(1 for h in hs if h.get("resumed"))}
    if ok:
        d["phases_p50_us"] = phase_medians(ok)
    if km.shim_log is not None and ok:
        _derive_se(s, ok, calls, km)
    return _finish(s, server)


def _token_us(conn: dict, calls: list[dict]) -> float:
    """µs of the shim's calls (real and injected) inside one connection's [t0_ns, t1_ns]."""
    t0, t1 = conn.get("t0_ns"), conn.get("t1_ns")
    if t0 is None or t1 is None:
        return 0.0
    return sum(x.get("duration_ns", 0) for x in calls if t0 <= x.get("start_ns", -1) <= t1) / 1000


def _derive_se(s: dict, ok: list[dict], calls: list[dict], km: KeyMaterial) -> None:
    """The token's part in the Californium client's connections: per call kind, per connection."""
    d = s["derived"]
    for c in ok:
        mine = [x for x in calls if c["t0_ns"] <= x.get("start_ns", -1) <= c["t1_ns"]]
        c["se"] = {"calls": len(mine), "se_us": round(sum(x.get("duration_ns", 0) for x in mine) / 1000, 3),
                   "sign": sum(1 for x in mine if x["fn"] == "C_Sign"),
                   "verify": sum(1 for x in mine if x["fn"] == "C_Verify")}
    d["se_calls"] = _se_breakdown(ok, calls)
    d["se_p50_us"] = stats.median([c["se"]["se_us"] for c in ok])
    d["token_sign_per_connection"] = sum(c["se"]["sign"] for c in ok) / len(ok)
    d["token_verify_per_connection"] = sum(c["se"]["verify"] for c in ok) / len(ok)
    s["labels"]["shim_log"] = str(km.shim_log)
    s["labels"]["note"] = ("the JDK's SunPKCS11 signs with the token key and also verifies the server's signatures "
                           "on the token (C_Verify, not delayed by the profile; counted in derived)")


def _measure_vpn(cfg: ConnectConfig, p: ConnectParams, link=None) -> dict:
    """OpenVPN in server mode inside namespaces secperf creates (secperf.measure.vpn), or inside the
    emulated `link`'s namespaces; a set-up problem (not root, no openvpn) is a failed series with the
    reason, not an exception."""
    from .vpn import measure_vpn
    workdir = private_dir((p.workdir or Path(".")) / _slug(cfg.series_id))
    try:
        return measure_vpn(cfg.key_source, p.n, p.warmup, workdir, seed=p.seed, profiles_path=p.profiles_path,
                           timeout_s=max(20.0, p.timeout_ms / 1000 * 4), link=link)
    except (RuntimeError, ValueError, OSError) as exc:
        s = _series(cfg, "openvpn client: first socket/link log line", USABLE["vpn"], "openvpn log timestamps (µs)")
        R.add_failure(s, f"vpn: {exc}")
        return R.finalize_series(s)


def run_connect(configs: list[ConnectConfig], p: ConnectParams, doc: dict, run=None, progress=None) -> dict:
    known = _profiles(p.profiles_path)
    for cfg in configs:
        if cfg.client != "jwt-client":
            validate(cfg, known)
    pki = LabPKI(p.pki_root).ensure()
    if p.workdir is None and run is not None:
        p.workdir = private_dir(run.dir / "connect")
    elif p.workdir is None:
        import tempfile
        p.workdir = Path(tempfile.mkdtemp(prefix="secperf-connect-"))
    jwt_done = False
    from ..lab.netns import LinkPerNetwork
    with LinkPerNetwork(p.seed) as links:  # configurations over one network share one emulated link
        for i, cfg in enumerate(configs):
            if progress:
                progress("start", cfg, i, len(configs), None)
            link, link_err = links.get(cfg.network)
            if cfg.client == "jwt-client":
                if not jwt_done:
                    _run_jwt_rows(configs, p, doc, run, links)
                    jwt_done = True
            elif link_err:
                s = _series(cfg, "socket connect() started", USABLE[cfg.protocol], "CLOCK_MONOTONIC")
                R.add_failure(s, f"network {cfg.network}: {link_err}")
                doc["series"].append(R.finalize_series(s))
            else:
                for s in measure(cfg, p, pki, doc, link):
                    doc["series"].append(s)
            if run is not None:
                run.save(doc)
            if progress:
                progress("done", cfg, i, len(configs), None)
    return doc


def _run_jwt_rows(configs: list[ConnectConfig], p: ConnectParams, doc: dict, run, links) -> None:
    from .signer import SignerParams, run_jwt
    jwt = [c for c in configs if c.client == "jwt-client"]
    profiles = sorted({c.profile for c in jwt if c.profile})
    networks = list(dict.fromkeys(c.network for c in jwt))  # over the same links as the other rows
    sp = SignerParams(n=p.n, warmup=p.warmup, seed=p.seed, workdir=private_dir(p.workdir / "jwt"))
    sessions = list(dict.fromkeys(c.key_session for c in jwt))
    run_jwt(profiles, ["ecdsa-p256"], sp, doc, run, networks=networks, links=links, key_sessions=sessions)
