"""Californium's own (Java) client against the Californium server in `secperf connect`: full
handshakes, resumed sessions and requests after a NAT rebinding carried by the connection ID."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..core import result as R
from ..core import stats
from ..core.jsonlines import parse_lines
from ..core.paths import write_private
from ..core.result_schema import ConnectDerived, LinkedDerived, Result, Series
from ..lab import registry
from ..lab.californium import CID_LENGTH, CaliforniumServer, find_jar, java_exe, pkcs8_pem, sunpkcs11_config
from ..lab.pki import LabPKI
from ..lab.services import ServiceError
from .connect_config import CF_WARMUP, ConnectConfig, ConnectParams
from .connect_keys import KeyMaterial
from .connect_series import new_series, phase_medians, record_run, se_breakdown
from .connect_servers import dial_for, finish_series, port_of, start_server
from .link_counts import link_counters
from .probe import find_shim

if TYPE_CHECKING:
    from ..lab.netns import Link

CF_TIMER = {
    "full": (
        "CoapClient.get() on a new DTLS connector (no session)",
        "2.05 response received: full handshake with the client certificate, then the request",
    ),
    "resumed": (
        "CoapClient.get() after forceResumeAllSessions()",
        "2.05 response received: abbreviated handshake on the session ID, then the request",
    ),
    "cid-rebind": (
        "CoapClient.get() after the client's address changed (NAT rebinding: new source port)",
        "2.05 response received on the same DTLS connection, found by its connection ID (no handshake)",
    ),
}


def measure_californium(
    cfg: ConnectConfig, p: ConnectParams, pki: LabPKI, doc: Result | None = None, link: Link | None = None
) -> Series:
    """Californium's own client against the Californium server: full handshakes, resumed sessions,
    and requests after a NAT rebinding carried by the connection ID. Every connection is verified:
    handshakes the client started (none for cid-rebind) and whether it resumed (resumed rows)."""
    start, end = CF_TIMER[cfg.handshake]
    s = new_series(cfg, start, end, "System.nanoTime (in the Java client)")
    ready = start_server(cfg, p, pki, s, link)
    if ready is None:
        return R.finalize_series(s)
    km, server = ready
    dial = dial_for(link, p)

    warmup = max(p.warmup, CF_WARMUP)
    s.labels["warmup"] = warmup
    try:
        certs = pki.server(cfg.server_cert, 1)
        if km.uri:  # the token key: SunPKCS11 on the shim, the PIN read from its 0600 file by the client
            if km.shim_dir is None:
                raise ServiceError(f"{cfg.key_source}: a token key without its shim directory")
            conf = km.shim_dir / "sunpkcs11.cfg"
            write_private(conf, sunpkcs11_config(find_shim()).encode())
            label = km.uri.split("object=", 1)[1].split(";", 1)[0].split("?", 1)[0]
            key_args = [
                "--pkcs11-config",
                str(conf),
                "--pkcs11-pin-file",
                str(km.token_pin()),
                "--pkcs11-label",
                unquote(label),
            ]
            s.labels["client_key_provider"] = "SunPKCS11 (JDK) on the secure-element shim"
        else:
            if km.key is None:
                raise ServiceError(f"{cfg.key_source}: no client key file for the Californium client")
            key = server.write_secret(Path(server.workdir) / "client.p8.pem", pkcs8_pem(km.key))
            key_args = ["--key", str(key)]
        argv = dial.argv(
            [
                java_exe(),
                "-jar",
                str(find_jar()),
                "client",
                "--host",
                dial.host,
                "--port",
                str(port_of(server)),
                "--ca",
                str(certs.ca),
                "--cert",
                str(km.cert),
                *key_args,
                "--n",
                str(p.n),
                "--warmup",
                str(warmup),
                "--row",
                cfg.handshake,
                "--cid-length",
                str(CID_LENGTH),
                "--timeout-ms",
                str(dial.timeout_ms),
            ]
        )
        budget = (p.n + warmup + 2) * (dial.timeout_ms / 1000 + 2) + 60
        with link_counters(s.derived_as(LinkedDerived), dial.link):
            try:
                r = registry.run(argv, "californium client", capture_output=True, text=True, timeout=budget, env=km.env)
            except subprocess.TimeoutExpired as exc:
                r = None
                R.add_failure(s, f"the Californium client did not finish within {exc.timeout:g} s")
        if not isinstance(server, CaliforniumServer):
            raise ServiceError(f"the Californium client runs against the Californium server, not {server.name}")
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
            rest = {
                "full": "DTLS handshake + CoAP GET/response",
                "resumed": "abbreviated handshake + CoAP GET/response",
                "cid-rebind": "CoAP GET/response (no handshake)",
            }[cfg.handshake]
            se_us = _token_us(c, calls)
            c["phases"] = ([{"phase": "secure element", "us": round(se_us, 3)}] if km.shim_log else []) + [
                {"phase": rest, "us": round(max(0.0, c["usable_us"] - se_us), 3)}
            ]
        record_run(s, c["i"], False, c)
    if r is not None and r.returncode != 0 and not s.failures:
        R.add_failure(s, f"the Californium client exited {r.returncode}: {r.stderr.strip()[-300:]}")
    d = s.derived_as(ConnectDerived)
    ok = [c for c in s.samples if c.get("ok")]
    d.resumed = sum(1 for c in ok if c.get("resumed"))
    d.handshakes_per_request = (sum(c.get("handshakes", 0) for c in ok) / len(ok)) if ok else None
    d.server_handshakes = {"total": len(hs), "resumed": sum(1 for h in hs if h.get("resumed"))}
    if ok:
        d.phases_p50_us = phase_medians(ok)
    if km.shim_log is not None and ok:
        _derive_se(s, ok, calls, km)
    return finish_series(s, server)


def _token_us(conn: dict[str, Any], calls: list[dict[str, Any]]) -> float:
    """µs of the shim's calls (real and injected) inside one connection's [t0_ns, t1_ns]."""
    t0, t1 = conn.get("t0_ns"), conn.get("t1_ns")
    if t0 is None or t1 is None:
        return 0.0
    return float(sum(x.get("duration_ns", 0) for x in calls if t0 <= x.get("start_ns", -1) <= t1) / 1000)


def _derive_se(s: Series, ok: list[dict[str, Any]], calls: list[dict[str, Any]], km: KeyMaterial) -> None:
    """The token's part in the Californium client's connections: per call kind, per connection."""
    d = s.derived_as(ConnectDerived)
    for c in ok:
        mine = [x for x in calls if c["t0_ns"] <= x.get("start_ns", -1) <= c["t1_ns"]]
        c["se"] = {
            "calls": len(mine),
            "se_us": round(sum(x.get("duration_ns", 0) for x in mine) / 1000, 3),
            "sign": sum(1 for x in mine if x["fn"] == "C_Sign"),
            "verify": sum(1 for x in mine if x["fn"] == "C_Verify"),
        }
    d.se_calls = se_breakdown(ok, calls)
    d.se_p50_us = stats.median([c["se"]["se_us"] for c in ok])
    d.token_sign_per_connection = sum(c["se"]["sign"] for c in ok) / len(ok)
    d.token_verify_per_connection = sum(c["se"]["verify"] for c in ok) / len(ok)
    s.labels["shim_log"] = str(km.shim_log)
    s.labels["note"] = (
        "the JDK's SunPKCS11 signs with the token key and also verifies the server's signatures "
        "on the token (C_Verify, not delayed by the profile; counted in derived)"
    )
