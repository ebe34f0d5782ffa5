"""`secperf handshake`: TLS 1.2/1.3 and DTLS 1.2 handshakes timed by secperf-probe's client against
a real server (the probe's own, `openssl s_server` or nginx), with the client's CPU split per
handshake message. One configuration becomes one Result series:

- values_us: handshake wall time per connection (TCP connected → handshake complete);
- cpu_values_us: client CPU inside the TLS library for that handshake;
- samples: every connection line from the probe, raw (per-message CPU, flights, app exchange);
- derived: per-message medians, the sum-rule check, resumption / early-data verification counts,
  TCP connect and app-exchange medians, and the server's CPU per handshake (probe server only).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import host, stats
from ..core import result as R
from ..core.jsonlines import parse_lines
from ..core.result_schema import HandshakeDerived, LinkedDerived, Result, Series
from ..inputs import netspec as NS
from ..lab import registry
from ..lab.netns import LinkPerNetwork
from ..lab.pki import LabPKI
from ..lab.psk_session import hex_file
from ..lab.services import Nginx, ProbeServer, RemoteServer, ServiceError, SServer
from . import Progress
from .handshake_config import EXPERIMENTS, V12, V13, HandshakeConfig, HandshakeError, experiment, for_any_certificate
from .link_counts import link_counters, link_timeout_ms
from .probe import find_probe
from .target import request_bytes

if TYPE_CHECKING:
    from ..core.store import Run
    from ..lab.netns import Link
    from ..lab.services import Service
    from .target import Target

# the configurations' and the link's names (measure/handshake_config.py, link_counts.py) stay importable
# from here, as callers import them
__all__ = [
    "EXPERIMENTS",
    "PROBE_SERVER_TIMEOUT_MS",
    "PSK_HEX",
    "PSK_IDENTITY",
    "REMOTE",
    "SERVERS",
    "SUM_RULE_TOLERANCE",
    "TIMER",
    "V12",
    "V13",
    "HandshakeConfig",
    "HandshakeError",
    "HandshakeParams",
    "breakdown",
    "client_args",
    "experiment",
    "for_any_certificate",
    "link_counters",
    "link_timeout_ms",
    "measure_config",
    "message_key",
    "record_client_run",
    "run_client",
    "run_handshakes",
    "server_for",
]

TIMER = {
    "name": "handshake",
    "start": "TCP connection established (DTLS: UDP socket connected)",
    "end": "handshake complete (SSL_connect returned 1)",
    "value": "wall time per connection; cpu_values_us: client thread CPU inside OpenSSL during the handshake",
    "clock": "CLOCK_MONOTONIC (wall), CLOCK_THREAD_CPUTIME_ID (CPU)",
}
SUM_RULE_TOLERANCE = 0.02
PSK_IDENTITY = "secperf-device"
PSK_HEX = "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"  # lab-only demo PSK
SERVERS = ("probe", "s_server", "nginx")
REMOTE = "remote"  # the user's own server (--connect HOST:PORT)


@dataclass
class HandshakeParams:
    n: int = 50
    warmup: int = 5
    timeout_ms: int = 5000
    pki_root: Path | None = None
    workdir: Path | None = None
    target: Target | None = None  # the user's own server instead of one secperf starts
    seed: int = 1  # the emulated link's draws (delay, jitter, loss)
    links: tuple[NS.NetSpec, ...] = ()  # the --network links the command resolved (by name in the configs)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n, "warmup": self.warmup, "timeout_ms": self.timeout_ms, "seed": self.seed}
        if self.target is not None:
            out["target"] = self.target.labels()
        return out


# --- running one configuration ------------------------------------------------------------------


def _tls_args(cfg: HandshakeConfig) -> list[str]:
    a = ["--proto", cfg.proto, "--tls", cfg.tls]
    if cfg.tls == "1.3" and cfg.ciphersuites:
        a += ["--ciphersuites", cfg.ciphersuites]
    if cfg.ciphers:
        a += ["--ciphers", cfg.ciphers]
    groups = cfg.groups
    if groups and cfg.mtls and cfg.tls == "1.2" and cfg.client_key_type == "ecdsa-p256" and "P-256" not in groups:
        # TLS 1.2 (RFC 8422): an ECDSA client certificate's curve must be among the negotiated
        # groups, or the server rejects it (illegal_parameter). Appended last so ECDHE keeps the
        # configured first group.
        groups += ":P-256"
    if groups:
        a += ["--groups", groups]
    if cfg.sigalgs:
        a += ["--sigalgs", cfg.sigalgs]
    return a


def _psk_args(cfg: HandshakeConfig) -> list[str]:
    """The probe's PSK options: the key in a 0600 file, never on the command line."""
    if cfg.mode not in ("psk", "psk-dhe"):
        return []

    return ["--psk-identity", PSK_IDENTITY, "--psk-file", str(hex_file("handshake", bytes.fromhex(PSK_HEX)))]


PROBE_SERVER_TIMEOUT_MS = 10000  # the probe server's own per-stage default (hs_args.c)


def server_for(
    cfg: HandshakeConfig, pki: LabPKI, workdir: Path | None, link: Link | None = None, target: Target | None = None
) -> Service:
    """The server of a configuration; with a non-loopback `link` it runs in the server namespace,
    and the probe server's stages wait as much longer as the client's (link_timeout_ms), so a
    handshake slowed by the link's retransmissions is not cut off on the server side. With a
    `target` (the user's own server) nothing is started."""
    if target is not None:
        return RemoteServer(target.addr, target.port, cfg.proto, workdir)
    emul = link if link is not None and not link.loopback else None
    srv = _server_for(cfg, pki, workdir, emul.spec if emul else None)
    if emul:
        srv.place(
            emul.srv_prefix(),
            emul.server_addr,
            lambda kind=socket.SOCK_STREAM: emul.socket("srv", type=kind),
            user=emul.server_user,
        )
    return srv


def _server_for(cfg: HandshakeConfig, pki: LabPKI, workdir: Path | None, spec: NS.NetSpec | None = None) -> Service:
    certs = pki.server(cfg.cert_type, cfg.depth)
    client_ca = pki.client(cfg.client_key_type).ca if cfg.mtls else None
    if cfg.server == "probe":
        args = _tls_args(cfg) + _psk_args(cfg) + ["--response-bytes", str(cfg.response_bytes)]
        if spec is not None:
            args += ["--timeout-ms", str(link_timeout_ms(PROBE_SERVER_TIMEOUT_MS, spec))]
        if cfg.mode == "0rtt":
            args += ["--early-data", "16384"]
        if cfg.proto == "dtls":
            args += ["--dtls-cookie", "on" if cfg.dtls_cookie else "off"]
            if cfg.mtu:
                args += ["--mtu", str(cfg.mtu)]
        return ProbeServer(certs, args, proto=cfg.proto, client_ca=client_ca, workdir=workdir)
    if cfg.server == "s_server":
        s_args: list[str] = []
        if cfg.tls == "1.2":
            s_args.append("-tls1_2") if cfg.proto == "tls" else None
        if cfg.mode == "0rtt":
            s_args += ["-early_data"]
        # a PSK from a session file (lab/psk_session), never -psk on the process list; s_server refuses
        # a TLS 1.2/DTLS PSK that way (ServiceError: the row's failure, with its reason)
        psk = (PSK_IDENTITY, bytes.fromhex(PSK_HEX)) if cfg.mode in ("psk", "psk-dhe") else None
        return SServer(certs, s_args, proto=cfg.proto, client_ca=client_ca, workdir=workdir, psk=psk)
    if cfg.server == "nginx":
        if cfg.proto != "tls" or cfg.mode in ("psk", "psk-dhe", "0rtt"):
            raise HandshakeError(f"nginx cannot run {cfg.label!r} (no DTLS, external PSK or 0-RTT here)")
        return Nginx(certs, client_ca=client_ca, workdir=workdir)
    raise HandshakeError(f"unknown server {cfg.server!r}; known: {', '.join(SERVERS)}")


def client_args(
    cfg: HandshakeConfig,
    port: int,
    p: HandshakeParams,
    pki: LabPKI,
    host: str = "127.0.0.1",
    timeout_ms: int | None = None,
) -> list[str]:
    if p.target is not None:  # the user's server: its address, CA, name and the user's client certificate
        a = p.target.probe_args()
    else:
        certs = pki.server(cfg.cert_type, cfg.depth)
        a = ["--host", host, "--port", str(port), "--ca", str(certs.ca), "--servername", "localhost"]

    host_header = p.target.sni if p.target is not None else "localhost"
    a += [
        "--mode",
        cfg.mode,
        "--n",
        str(p.n),
        "--warmup",
        str(p.warmup),
        "--timeout-ms",
        str(timeout_ms or p.timeout_ms),
        "--request-bytes",
        str(request_bytes(cfg.request_bytes, host_header)),
        "--response-bytes",
        str(cfg.response_bytes),
    ]
    a += _tls_args(cfg) + _psk_args(cfg)
    if cfg.mode == "0rtt":
        a += ["--early-data-bytes", str(request_bytes(cfg.early_data_bytes, host_header))]
    if cfg.mtls and p.target is None:
        c = pki.client(cfg.client_key_type)
        a += ["--cert", str(c.cert), "--key", str(c.key)]
    if cfg.proto == "dtls":
        if cfg.dtls_cookie:
            a.append("--dtls-cookie")
        if cfg.mtu:
            a += ["--mtu", str(cfg.mtu)]
    return a


def run_client(
    args: list[str], timeout_s: float, prefix: list[str] | None = None, env: dict[str, str] | None = None
) -> tuple[dict[str, Any] | None, list[dict[str, Any]], str | None]:
    """Run `secperf-probe client` (under `prefix`, e.g. in the device namespace; with `env`, e.g. a
    token behind the shim); returns (meta, connection lines, error)."""
    try:
        proc = registry.run(
            [*(prefix or []), str(find_probe()), "client", *args],
            "probe client",
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
        )
    except subprocess.TimeoutExpired as exc:
        return None, [], f"probe client did not finish within {exc.timeout:g} s"
    meta: dict[str, Any] | None = None
    conns: list[dict[str, Any]] = []
    err: str | None = None
    for msg in parse_lines(proc.stdout):
        if msg.get("type") == "meta":
            meta = msg
        elif msg.get("type") == "conn" and not msg.get("warmup"):
            conns.append(msg)
        elif msg.get("type") == "error":
            err = msg.get("reason")
    if proc.returncode != 0 and err is None:
        err = (proc.stderr.strip().splitlines() or [f"probe client exited with {proc.returncode}"])[-1]
    return meta, conns, err


def record_client_run(series: Series, doc: Result | None, meta: dict[str, Any] | None, err: str | None) -> None:
    """What a probe client run says beyond its connections: the library it used (in the series,
    and in the run's host record) and a client-level error as a failure."""
    if meta:
        series.labels["library"] = meta.get("openssl_version")
        if doc is not None:
            host.record_probe_meta(doc.host, meta)
    if err:
        R.add_failure(series, err)


def message_key(m: dict[str, Any]) -> str:
    return f"{m['event']} ({m['dir']})"


def breakdown(conns: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-message medians (µs) in first-seen order, and the sum rule checked on every connection."""
    order: list[str] = []
    per: dict[str, list[float]] = {}
    worst = 0.0
    for c in conns:
        seen: dict[str, float] = {}
        for m in c.get("messages", []):
            k = message_key(m)
            seen[k] = seen.get(k, 0.0) + float(m["cpu_us"])
        for k, v in seen.items():
            if k not in per:
                order.append(k)
                per[k] = []
            per[k].append(v)
        total = float(c.get("lib_cpu_us") or 0.0)
        if total > 0:
            worst = max(worst, abs(sum(seen.values()) - total) / total)
    return {
        "messages": [{"message": k, "p50_cpu_us": stats.median(per[k]), "n": len(per[k])} for k in order],
        "sum_rule_worst_error": worst,
        "sum_rule_ok": worst <= SUM_RULE_TOLERANCE,
    }


def _median_of(conns: list[dict[str, Any]], path: tuple[str, ...]) -> float | None:
    vals = []
    for c in conns:
        v: object = c
        for key in path:
            v = v.get(key) if isinstance(v, dict) else None
        if isinstance(v, (int, float)):
            vals.append(float(v))
    return stats.median(vals) if vals else None


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in text)[:80]


def measure_config(
    cfg: HandshakeConfig, p: HandshakeParams, pki: LabPKI, doc: Result | None = None, link: Link | None = None
) -> Series:
    """Start the server, run the client, stop the server; server logs stay only if something failed.
    With `link` (lab/netns.Link) the server runs in its server namespace and the client in its
    device namespace, dialing link.server_addr; the link's counters for the run are recorded."""
    labels = {k: v for k, v in asdict(cfg).items()}
    spec = link.spec if link is not None else None
    if spec is not None and not spec.loopback:
        labels.update(network_spec=spec.canonical(), network_rtt_ms=spec.rtt_ms, network_loss=spec.loss)
    series = R.new_series(cfg.series_id, kind="handshake", labels=labels, timer=TIMER)
    workdir = (p.workdir / _slug(f"{cfg.server}-{cfg.label}-{cfg.network}")) if p.workdir else None
    emul = link if link is not None and not link.loopback else None
    if p.target is not None:
        series.labels.update(p.target.labels())
    try:
        server = server_for(cfg, pki, workdir, link, p.target)
    except HandshakeError as exc:
        R.add_failure(series, f"server: {exc}")
        return R.finalize_series(series)
    try:
        server.start()
    except (ServiceError, OSError) as exc:
        R.add_failure(series, f"server: {exc}")
        series.labels["server_log"] = str(server.log_path)
        return R.finalize_series(series)
    port = server.port
    if port is None:  # a started server has its port; this one said none
        server.stop()
        R.add_failure(series, "server: started without a listening port")
        return R.finalize_series(series)
    try:
        tmo = link_timeout_ms(p.timeout_ms, spec)
        budget = (p.n + p.warmup + 2) * (tmo / 1000.0) * 3 + 30
        with link_counters(series.derived_as(LinkedDerived), link):
            meta, conns, err = run_client(
                client_args(cfg, port, p, pki, host=emul.server_addr if emul else "127.0.0.1", timeout_ms=tmo),
                budget,
                emul.dev_prefix() if emul else None,
            )
            time.sleep(0.05)  # let the server print its last connection line
            server_conns = server.drain() if isinstance(server, ProbeServer) else []
    finally:
        server.stop()
    record_client_run(series, doc, meta, err)
    for c in conns:
        series.samples.append(c)
        if c.get("ok"):
            series.values_us.append(float(c["handshake_wall_us"]))
            series.cpu_values_us.append(float(c["lib_cpu_us"]))
        else:
            R.add_failure(series, f"connection {c.get('i')}: {c.get('stage', '?')}: {c.get('reason', 'failed')}")
    ok = [c for c in conns if c.get("ok")]
    d = series.derived_as(HandshakeDerived)
    if ok:
        d.breakdown = breakdown(ok)
        d.tcp_connect_p50_us = _median_of(ok, ("tcp_connect_us",))
        d.wait_p50_us = _median_of(ok, ("wait_us",))
        d.app_write_p50_us = _median_of(ok, ("app", "write_us"))
        d.app_read_p50_us = _median_of(ok, ("app", "read_us"))
        d.negotiated = {k: ok[0].get(k) for k in ("version", "cipher", "group", "signature")}
        if cfg.mode.startswith("resume") or cfg.mode in ("0rtt",):
            resumed = d.resumed = sum(1 for c in ok if c.get("resumed"))
            if resumed < len(ok):
                R.add_failure(series, f"resumption did not happen on {len(ok) - resumed} of {len(ok)} connections")
        if cfg.mode == "0rtt":
            d.early_data_accepted = sum(1 for c in ok if c.get("early_data") == "accepted")
        d.flights_first_conn = [f for f in ok[0].get("flights", [])]
    srv_ok = [c for c in server_conns if c.get("ok")]
    srv_failed = [c for c in server_conns if not c.get("ok")]
    if srv_failed:
        # the server's side of a failed connection (its stage and reason) says which party gave up
        d.server_failures = [
            {k: c.get(k) for k in ("stage", "reason", "hs_wall_us") if k in c} for c in srv_failed[:20]
        ]
    if srv_ok:
        d.server_cpu_p50_us = stats.median([float(c["handshake_cpu_us"]) for c in srv_ok])
    R.finalize_series(series)
    if series.status == "ok":
        shutil.rmtree(server.workdir, ignore_errors=True)
    else:
        series.labels["server_log"] = str(server.log_path)
    return series


def run_handshakes(
    configs: list[HandshakeConfig],
    p: HandshakeParams,
    doc: Result,
    run: Run | None = None,
    progress: Progress | None = None,
    seed: int = 1,
) -> Result:
    """Measure every configuration; configurations over the same --network share one emulated
    link (opened when the network changes, closed after its last configuration, also on errors
    and interrupts). A link that cannot be built fails its configurations with the reason."""

    pki = LabPKI(p.pki_root).ensure()
    if p.workdir is None and run is not None:
        p.workdir = run.dir / "services"
    with LinkPerNetwork(seed, p.links) as links:
        for i, cfg in enumerate(configs):
            if progress:
                progress("start", cfg, i, len(configs), None)
            link, link_err = links.get(cfg.network)
            if link_err:
                series = R.new_series(cfg.series_id, kind="handshake", labels=asdict(cfg), timer=TIMER)
                R.add_failure(series, f"network {cfg.network}: {link_err}")
                R.finalize_series(series)
            else:
                series = measure_config(cfg, p, pki, doc, link)
            doc.series.append(series)
            if run is not None:
                run.save(doc)
            if progress:
                progress("done", cfg, i, len(configs), series)
    return doc
