"""The server a `secperf connect` row runs against, started and checked ready (over loopback or in
an emulated link's server namespace), and where the row's client runs and what it dials (Dial)."""

from __future__ import annotations

import shutil
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import result as R
from ..core.paths import private_dir, write_private
from ..core.result_schema import Series
from ..lab.californium import CaliforniumServer
from ..lab.iot_services import CoapServer, Mosquitto
from ..lab.pki import LabPKI
from ..lab.services import LOOPBACK, Nginx, RemoteServer, ServiceError
from ..lab.token import openssl_seclevel_conf
from .connect_config import COAP_PSK, OVER_US, ConnectConfig, ConnectError, ConnectParams
from .connect_keys import KeyMaterial
from .connect_series import slug
from .link_counts import link_timeout_ms

if TYPE_CHECKING:
    from ..lab.netns import Link
    from ..lab.services import Service


def server_for(cfg: ConnectConfig, pki: LabPKI, workdir: Path, port: int | None = None) -> Service:
    certs = pki.server(cfg.server_cert, 1)
    client_ca = pki.client(cfg.key_type).ca
    if cfg.protocol == "https":
        return Nginx(certs, client_ca=client_ca, workdir=workdir)
    if cfg.protocol == "mqtt":
        return Mosquitto(certs, client_ca, nodelay=cfg.nodelay, workdir=workdir, port=port)
    if cfg.protocol == "coap":
        if cfg.coap_server == "californium":
            return CaliforniumServer(certs, client_ca, workdir=workdir)
        if cfg.security == "psk":
            return CoapServer(psk=COAP_PSK, workdir=workdir, port=port)
        return CoapServer(certs, client_ca, workdir=workdir, port=port)
    raise ConnectError(f"no server for {cfg.protocol!r} here")


@dataclass(frozen=True)
class Dial:
    """Where a configuration's client runs and what it dials. Over loopback (no link, or a loopback
    one): here, 127.0.0.1, the configured timeout. Over an emulated link: inside the link's device
    namespace (`prefix` in front of the client's argv), the server's address in the server
    namespace, and a timeout grown by ten of the link's round trips (link_counts.link_timeout_ms), so
    a slow link is not a failure."""

    host: str = LOOPBACK
    prefix: tuple[str, ...] = ()
    timeout_ms: int = 5000
    link: Link | None = None  # the emulated link, None over loopback

    def argv(self, argv: list[str]) -> list[str]:
        return [*self.prefix, *argv]


def dial_for(link: Link | None, p: ConnectParams) -> Dial:
    if link is None or link.loopback:
        return Dial(LOOPBACK, (), p.timeout_ms)
    return Dial(link.server_addr, tuple(link.dev_prefix()), link_timeout_ms(p.timeout_ms, link.spec), link)


def port_of(server: Service) -> int:
    """The port a started server listens on (ServiceError when it reports none)."""
    if server.port is None:
        raise ServiceError(f"{server.name}: started, but without a listening port")
    return server.port


def kill_later(server: Service, after_s: float) -> threading.Timer:
    t = threading.Timer(after_s, server.stop)
    t.daemon = True
    t.start()
    return t


def start_server(
    cfg: ConnectConfig, p: ConnectParams, pki: LabPKI, s: Series, link: Link | None = None
) -> tuple[KeyMaterial, Service] | None:
    """The key material and the configuration's server, started and checked ready (inside the
    link's server namespace when `link` emulates one). Returns (km, server), or None with the
    reason recorded in series `s` (the run goes on)."""
    workdir = private_dir((p.workdir or Path(".")) / slug(cfg.series_id))
    try:
        km = KeyMaterial(cfg, pki, workdir, p.seed, p.profiles.get(cfg.profile or ""), p.client_pair)
    except RuntimeError as exc:  # TokenError
        R.add_failure(s, f"key: {exc}")
        return None
    try:
        if p.target is not None:
            server: Service = RemoteServer(
                p.target.addr, p.target.port, "dtls" if cfg.protocol == "coap" else "tls", workdir / "server"
            )
            s.labels.update(p.target.labels())
        else:
            server = server_for(cfg, pki, workdir / "server", p.server_port)
    except ConnectError as exc:
        R.add_failure(s, f"server: {exc}")
        return None
    if km.security_level is not None:
        s.labels["openssl_security_level"] = km.security_level
        s.labels["note"] = (
            f"client and server at OpenSSL security level {km.security_level}: the 1998 card's "
            "RSA-1024 key is refused at the default level 2"
        )
        if p.target is None:
            conf = private_dir(workdir / "server-openssl") / "openssl.cnf"
            write_private(conf, openssl_seclevel_conf(km.security_level).encode())
            server.openssl_conf = conf
    if link is not None and not link.loopback:
        emul = link
        server.place(
            emul.srv_prefix(),
            emul.server_addr,
            lambda kind=socket.SOCK_STREAM: emul.socket("srv", type=kind),
            user=emul.server_user,
        )
        s.labels.update(
            network_spec=emul.spec.canonical(), network_rtt_ms=emul.spec.rtt_ms, network_loss=emul.spec.loss
        )
    try:
        server.start()
    except (ServiceError, OSError) as exc:
        R.add_failure(s, f"server: {exc}")
        s.labels["server_log"] = str(server.log_path)
        return None
    s.labels["server"] = server.name
    s.labels["server_settings"] = server.describe()
    if p.on_server is not None:
        p.on_server(server)
    return km, server


def finish_series(s: Series, server: Service) -> Series:
    """Summaries and status; the server's directory goes when all went well, else its log is named."""
    R.finalize_series(s, OVER_US)
    if s.status == "ok":
        shutil.rmtree(server.workdir, ignore_errors=True)
    else:
        s.labels["server_log"] = str(server.log_path)
    return s
