"""secperf's probe as the `secperf connect` client: in-process timing, per-message handshake CPU,
the secure element's calls per connection; with a cold key session, one probe process per
connection."""

from __future__ import annotations

from dataclasses import replace as _replace
from typing import TYPE_CHECKING, Any

from ..core import result as R
from ..core.result_schema import ConnectDerived, LinkedDerived, Result, Series
from ..lab.pki import LabPKI
from ..lab.psk_session import hex_file  # the key in a 0600 file, never on the command line
from ..lab.services import LOOPBACK
from .connect_config import CF_WARMUP, COAP_PSK, COAP_PSK_IDENTITY, USABLE, ConnectConfig, ConnectParams
from .connect_keys import KeyMaterial
from .connect_series import derive_series, new_series, probe_phases
from .connect_servers import Dial, dial_for, finish_series, port_of, start_server
from .handshake import record_client_run, run_client
from .link_counts import link_counters
from .signer import read_log
from .target import request_bytes

if TYPE_CHECKING:
    from ..lab.netns import Link


def probe_client_args(
    cfg: ConnectConfig,
    port: int,
    p: ConnectParams,
    pki: LabPKI,
    km: KeyMaterial,
    host: str = LOOPBACK,
    timeout_ms: int | None = None,
) -> list[str]:
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
            a += [
                "--psk-identity",
                COAP_PSK_IDENTITY,
                "--psk-file",
                str(hex_file("coap", COAP_PSK)),
                "--mode",
                "psk",
                "--ciphers",
                "PSK-AES128-CCM8:PSK-AES128-GCM-SHA256:PSK-AES128-CBC-SHA256",
            ]
            return a
        a += ["--mode", "resume-id" if cfg.handshake == "resumed" else "full"]
    else:
        a += ["--tls", cfg.tls, "--app", "http" if cfg.protocol == "https" else "mqtt"]
        if cfg.tls == "1.2" and cfg.key_type == "ecdsa-p256":
            a += ["--groups", "x25519:P-256"]
        a += ["--mode", "resume-ticket" if cfg.handshake == "resumed" else "full"]
        if cfg.protocol == "https":
            a += ["--request-bytes", str(request_bytes(40, t.sni if t is not None else "localhost"))]
    if t is not None and cfg.key_source == "software":  # the user's client certificate, if any
        return a + (["--cert", str(t.client_cert), "--key", str(t.client_key)] if t.client_cert else [])
    return a + km.probe_args()


def measure_probe(
    cfg: ConnectConfig, p: ConnectParams, pki: LabPKI, doc: Result | None = None, link: Link | None = None
) -> Series:
    """One configuration with the probe as client. With `link` (lab/netns.Link) the server runs in
    the link's server namespace and the probe in its device namespace, over the emulated link."""
    s = new_series(
        cfg,
        "socket connect() started (TCP SYN / DTLS socket set-up)",
        USABLE[cfg.protocol],
        "CLOCK_MONOTONIC (secperf-probe)",
    )
    ready = start_server(cfg, p, pki, s, link)
    if ready is None:
        return R.finalize_series(s)
    km, server = ready
    dial = dial_for(link, p)
    if cfg.coap_server == "californium" and p.warmup < CF_WARMUP:
        p = _replace(p, warmup=CF_WARMUP)  # a JVM server: warm its hot paths first (the series says so)
        s.labels["warmup"] = CF_WARMUP
    try:
        if cfg.key_session == "cold":
            with link_counters(s.derived_as(LinkedDerived), dial.link):
                meta, conns, err, calls = _cold_runs(cfg, p, pki, km, port_of(server), dial)
        else:
            budget = (p.n + p.warmup + 2) * (dial.timeout_ms / 1000.0) * 3 + 30
            args = probe_client_args(cfg, port_of(server), p, pki, km, dial.host, dial.timeout_ms)
            with link_counters(s.derived_as(LinkedDerived), dial.link):
                meta, conns, err = run_client(args, budget, prefix=list(dial.prefix), env=km.env)
            calls = None
        if hasattr(server, "drain") and cfg.coap_server == "californium":
            hs = server.drain()[-p.n :]  # the server's own word on each counted handshake
            s.derived_as(ConnectDerived).server_resumed = sum(1 for h in hs if h.get("resumed"))
    finally:
        server.stop()
    record_client_run(s, doc, meta, err)
    if cfg.key_session == "cold":
        s.timer.start = COLD_START
    calls = km.calls() if calls is None else calls
    for c in conns:
        if not c.get("ok"):
            R.add_failure(s, f"connection {c.get('i')}: {c.get('stage', '?')}: {c.get('reason', 'failed')}")
            s.samples.append(c)
            continue
        phases, se = probe_phases(c, calls, busy=getattr(getattr(km, "profile", None), "wait", "") == "busy")
        if "cold" in c:
            phases = c["cold"]["phases"] + phases
            c["usable_us"] = c["cold"]["usable_us"]
            se["calls"] += c["cold"]["calls"]
            se["se_us"] = round(se["se_us"] + c["cold"]["token_us"], 3)
        c["phases"], c["se"] = phases, se
        s.samples.append(c)
        s.values_us.append(float(c["usable_us"]))
        s.cpu_values_us.append(float(c["lib_cpu_us"]))
    derive_series(s, cfg, calls, km)
    return finish_series(s, server)


COLD_START = (
    "C_OpenSession of a new client process (cold key session: open, log in, find the key, then the socket connect)"
)
SESSION_FNS = (
    "C_OpenSession",
    "C_Login",
    "C_FindObjectsInit",
    "C_FindObjects",
    "C_FindObjectsFinal",
    "C_GetAttributeValue",
    "C_GetSessionInfo",
)


def cold_phases(conn: dict[str, Any], calls: list[dict[str, Any]]) -> dict[str, Any] | None:
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
    return {
        "usable_us": span_us + float(conn["usable_us"]),
        "start_ns": start,
        "token_us": round(token_us, 3),
        "phases": [
            {"phase": "key session: open, login, find key", "us": round(token_us, 3)},
            {
                "phase": "key session: host (engine, key and context loading)",
                "us": round(max(0.0, span_us - token_us), 3),
            },
        ],
        "calls": len(before),
    }


def _cold_runs(
    cfg: ConnectConfig, p: ConnectParams, pki: LabPKI, km: KeyMaterial, port: int, dial: Dial
) -> tuple[dict[str, Any] | None, list[dict[str, Any]], str | None, list[dict[str, Any]]]:
    """Cold key session: one probe process per connection (warm-up processes first, discarded), each
    loading the key through the shim afresh. Returns (meta, connections, error, every shim call)."""
    one = ConnectParams(n=1, warmup=0, timeout_ms=p.timeout_ms, seed=p.seed)
    args = probe_client_args(cfg, port, one, pki, km, dial.host, dial.timeout_ms)
    meta: dict[str, Any] | None = None
    conns: list[dict[str, Any]] = []
    err: str | None = None
    calls: list[dict[str, Any]] = []
    for i in range(p.warmup + p.n):
        env, log = km.run_env(i, p.seed)
        m, got, e = run_client(args, dial.timeout_ms / 1000.0 * 3 + 30, prefix=list(dial.prefix), env=env)

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
                    c.update(
                        ok=False,
                        stage="key session",
                        reason="the client process opened no PKCS#11 session before connecting",
                    )
                else:
                    c["cold"] = cold
            conns.append(c)
    return meta, conns, err, calls
