"""`secperf mqtt-load`: N persistent MQTT/TLS clients against mosquitto (ramp at a connect rate, hold
with PUBLISH QoS 0/1/2 and keep-alive, a reconnect storm under a back-off policy), CONNACK and PUBACK
latency histograms per phase, and the storm beside `fleet`'s model. Parsing only.

A command of its own rather than an option of `server`: `server` measures handshake capacity in
levels of concurrent or offered short connections (one row per level); this load holds thousands of
connections open through phases and has options of its own (clients, rates, QoS, keep-alive,
back-off) that mean nothing to `server`'s levels."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..app import mqtt_load as app
from ..app.cluster import require
from ..core.errors import InputError
from .measuring import output
from .server import _from_system
from .system_args import in_file_words

if TYPE_CHECKING:
    from ..core.result_schema import Result


def run(args: argparse.Namespace) -> Result:
    target = None
    if args.system:  # its [server] table: the target and its companions, under the command line's own
        _from_system(args)
    if args.target:
        given = [
            o
            for o, v, d in (
                ("--key", args.key, "ecdsa-p256"),
                ("--key-source", args.key_source, "software"),
                ("--client-auth", args.client_auth, "on"),
                ("--chain-depth", args.chain_depth, 1),
                ("--core", args.core, 0),
            )
            if v != d
        ]
        if given:
            raise InputError(
                f"{', '.join(given)} with --target: the broker's key, client authentication, chain "
                "and core are its own; drop them (--client-cert gives the clients' certificate)"
            )
        if (args.client_cert is None) != (args.client_key is None):
            raise InputError("--client-cert and --client-key go together")
        target = {
            "target": args.target,
            "ca": args.ca,
            "servername": args.servername,
            "client_cert": args.client_cert,
            "client_key": args.client_key,
            "backlog": getattr(args, "target_backlog", None),  # [server].backlog of --system
            "accept_per_s": getattr(args, "target_accept_per_s", None),  # [server].accept_per_s
        }
    else:
        for opt, v in (
            ("--ca", args.ca),
            ("--servername", args.servername),
            ("--client-cert", args.client_cert),
            ("--client-key", args.client_key),
        ):
            if v is not None:
                raise InputError(f"{opt} without --target: mosquitto started here uses the lab's certificates")
    c = app.MqttLoadConfig(
        clients=args.clients,
        connect_rate=args.connect_rate,
        hold_s=args.hold,
        publish_rate=args.publish_rate,
        qos=args.qos,
        payload=args.payload,
        keepalive_s=args.keepalive,
        timeout_s=args.timeout,
        storm=args.storm == "on",
        policy=args.policy,
        base_s=args.base,
        cap_s=args.cap,
        max_attempts=args.max_attempts,
        storm_max_s=args.storm_max,
        spread_s=args.spread,
        resume_ratio=args.resume_ratio,
        se_profile=args.se,
        key=args.key,
        key_source=args.key_source,
        client_auth=args.client_auth == "on",
        depth=args.chain_depth,
        tls=args.tls,
        core=args.core,
        capacity_s=args.capacity_seconds,
        seed=args.seed,
    )

    cluster = require(args.cluster)  # Ray missing or a malformed address: exit 2 before anything runs
    try:
        return app.run(c, output(args), target, max_hours=args.max_hours, cluster=cluster)
    except InputError as exc:  # about a value the --system file gave: said with the file's key path
        raise in_file_words(exc, args.system, getattr(args, "system_taken", None) or {}) from None
