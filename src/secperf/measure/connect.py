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

The parts, one concern each: configurations and their checks (connect_config), key material
(connect_keys), servers and where a client dials (connect_servers), the series and its phases
(connect_series), and one module per client: the probe (connect_probe), Californium's client
(connect_californium), the protocols' own clients (connect_external: connect_https, connect_mqtt,
connect_coap); OpenVPN through secperf.measure.vpn. This module runs the rows.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import result as R
from ..core.paths import private_dir
from ..core.result_schema import Result, Series
from ..lab.netns import LinkPerNetwork
from ..lab.pki import LabPKI
from .connect_californium import measure_californium
from .connect_config import (
    CF_HANDSHAKES,
    CF_WARMUP,
    CLIENTS,
    COAP_PSK,
    COAP_PSK_IDENTITY,
    COAP_SERVERS,
    KEY_SESSIONS,
    KEY_SOURCES_DOC,
    OVER_US,
    PROTOCOLS,
    RESUMPTION_REFUSED,
    USABLE,
    WEAK_RSA_KEY,
    WEAK_RSA_SECLEVEL,
    ConnectConfig,
    ConnectError,
    ConnectParams,
    configs_for,
    validate,
)
from .connect_external import measure_external
from .connect_keys import KeyMaterial
from .connect_mqtt import engine_key_dir
from .connect_probe import COLD_START, cold_phases, measure_probe, probe_client_args
from .connect_series import PHASES, new_series, phase_medians, probe_phases, slug
from .connect_servers import Dial, dial_for, finish_series, kill_later, server_for, start_server
from .signer import SignerParams, run_jwt
from .vpn import measure_vpn

if TYPE_CHECKING:
    from ..core.store import Run
    from ..lab.netns import Link
    from . import Progress

__all__ = [
    "CF_HANDSHAKES",
    "CF_WARMUP",
    "CLIENTS",
    "COAP_PSK",
    "COAP_PSK_IDENTITY",
    "COAP_SERVERS",
    "COLD_START",
    "KEY_SESSIONS",
    "KEY_SOURCES_DOC",
    "OVER_US",
    "PHASES",
    "PROTOCOLS",
    "RESUMPTION_REFUSED",
    "USABLE",
    "WEAK_RSA_KEY",
    "WEAK_RSA_SECLEVEL",
    "ConnectConfig",
    "ConnectError",
    "ConnectParams",
    "Dial",
    "KeyMaterial",
    "cold_phases",
    "configs_for",
    "dial_for",
    "engine_key_dir",
    "finish_series",
    "kill_later",
    "measure",
    "measure_californium",
    "measure_external",
    "measure_probe",
    "new_series",
    "phase_medians",
    "probe_client_args",
    "probe_phases",
    "run_connect",
    "server_for",
    "start_server",
    "validate",
]


def measure(
    cfg: ConnectConfig, p: ConnectParams, pki: LabPKI, doc: Result | None = None, link: Link | None = None
) -> list[Series]:
    """Every series one configuration produces (JWT configurations go through `signer.run_jwt`)."""
    if cfg.protocol == "vpn":
        return [_measure_vpn(cfg, p, link)]
    if cfg.client == "probe":
        return [measure_probe(cfg, p, pki, doc, link)]
    if cfg.client == "californium":
        return [measure_californium(cfg, p, pki, doc, link)]
    return [measure_external(cfg, p, pki, doc, link)]


def _measure_vpn(cfg: ConnectConfig, p: ConnectParams, link: Link | None = None) -> Series:
    """OpenVPN in server mode inside namespaces secperf creates (secperf.measure.vpn), or inside the
    emulated `link`'s namespaces; a set-up problem (not root, no openvpn) is a failed series with the
    reason, not an exception."""

    workdir = private_dir((p.workdir or Path(".")) / slug(cfg.series_id))
    try:
        return measure_vpn(
            cfg.key_source,
            p.n,
            p.warmup,
            workdir,
            seed=p.seed,
            profile=p.profiles.get(cfg.profile or ""),
            timeout_s=max(20.0, p.timeout_ms / 1000 * 4),
            link=link,
        )
    except (RuntimeError, ValueError, OSError) as exc:
        s = new_series(cfg, "openvpn client: first socket/link log line", USABLE["vpn"], "openvpn log timestamps (µs)")
        R.add_failure(s, f"vpn: {exc}")
        return R.finalize_series(s)


def run_connect(
    configs: list[ConnectConfig],
    p: ConnectParams,
    doc: Result,
    run: Run | None = None,
    progress: Progress | None = None,
) -> Result:
    known = p.profiles
    for cfg in configs:
        if cfg.client != "jwt-client":
            validate(cfg, known)
    pki = LabPKI(p.pki_root).ensure()
    if p.workdir is None and run is not None:
        p.workdir = private_dir(run.dir / "connect")
    elif p.workdir is None:
        p.workdir = Path(tempfile.mkdtemp(prefix="secperf-connect-"))
    jwt_done = False

    with LinkPerNetwork(p.seed, p.links) as links:  # configurations over one network share one emulated link
        for i, cfg in enumerate(configs):
            if progress:
                progress("start", cfg, i, len(configs), None)
            link, link_err = links.get(cfg.network)
            if cfg.client == "jwt-client":
                if not jwt_done:
                    _run_jwt_rows(configs, p, doc, run, links)
                    jwt_done = True
            elif link_err:
                s = new_series(cfg, "socket connect() started", USABLE[cfg.protocol], "CLOCK_MONOTONIC")
                R.add_failure(s, f"network {cfg.network}: {link_err}")
                doc.series.append(R.finalize_series(s))
            else:
                for s in measure(cfg, p, pki, doc, link):
                    doc.series.append(s)
            if run is not None:
                run.save(doc)
            if progress:
                progress("done", cfg, i, len(configs), None)
    return doc


def _run_jwt_rows(
    configs: list[ConnectConfig], p: ConnectParams, doc: Result, run: Run | None, links: LinkPerNetwork
) -> None:
    jwt = [c for c in configs if c.client == "jwt-client"]
    profiles = [p.profiles[name] for name in sorted({c.profile for c in jwt if c.profile})]
    networks = list(dict.fromkeys(c.network for c in jwt))  # over the same links as the other rows
    sp = SignerParams(n=p.n, warmup=p.warmup, seed=p.seed, workdir=private_dir((p.workdir or Path(".")) / "jwt"))
    sessions = list(dict.fromkeys(c.key_session for c in jwt))
    run_jwt(profiles, ["ecdsa-p256"], sp, doc, run, networks=networks, links=links, key_sessions=sessions)
