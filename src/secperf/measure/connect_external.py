"""The protocols' own clients as `secperf connect` cross-checks (curl, mosquitto_pub, paho-mqtt,
coap-client) against the same server as the probe; each client's driver is in its protocol's module."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core import result as R
from ..core.result_schema import ConnectDerived, LinkedDerived, Result, Series
from ..lab.pki import LabPKI
from .connect_coap import coap_client_run
from .connect_config import USABLE, ConnectConfig, ConnectParams
from .connect_https import curl_run
from .connect_mqtt import mosquitto_pub_run, paho_run
from .connect_series import derive_series, new_series
from .connect_servers import dial_for, finish_series, port_of, start_server
from .link_counts import link_counters

if TYPE_CHECKING:
    from ..lab.netns import Link


def measure_external(
    cfg: ConnectConfig, p: ConnectParams, pki: LabPKI, doc: Result | None = None, link: Link | None = None
) -> Series:
    """curl, mosquitto_pub, paho-mqtt or coap-client against the same server as the probe. With
    `link` (lab/netns.Link) the server runs in the link's server namespace and the client in its
    device namespace (see Dial), and the link's counters for the run are recorded."""
    certs = pki.server(cfg.server_cert, 1)
    timer_end = USABLE[cfg.protocol]
    if cfg.client == "curl":
        s = new_series(cfg, "curl's own timer: transfer start", f"{timer_end} (curl time_total)", "curl -w timers")
    elif cfg.client == "paho":
        s = new_series(
            cfg,
            "paho-mqtt client.connect() called",
            "on_connect callback (CONNACK received)",
            "time.perf_counter_ns (in-process)",
        )
    else:
        s = new_series(
            cfg,
            "process spawned, minus the client's median process start-up (reported apart)",
            timer_end,
            "time.perf_counter_ns around the process",
        )
    ready = start_server(cfg, p, pki, s, link)
    if ready is None:
        return R.finalize_series(s)
    km, server = ready
    dial = dial_for(link, p)
    try:
        runner = {
            "curl": curl_run,
            "mosquitto_pub": mosquitto_pub_run,
            "paho": paho_run,
            "coap-client": coap_client_run,
        }[cfg.client]
        with link_counters(s.derived_as(LinkedDerived), dial.link):
            startup = runner(cfg, p, port_of(server), certs, km, s, dial)
    finally:
        server.stop()
    if startup is not None:
        s.derived_as(ConnectDerived).startup_p50_us = startup
    calls = km.calls()
    derive_series(s, cfg, calls, km)
    if km.shim_log is not None:
        # a new process loads the token each time: every PKCS#11 call of the run counts
        s.derived_as(ConnectDerived).se_calls_per_run = len(calls) / max(1, p.n + p.warmup)
    return finish_series(s, server)
