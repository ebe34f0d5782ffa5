"""`secperf fleet`: N devices reconnecting after an outage against a server whose capacity is
measured here (the load generator against nginx) or given; a fluid queueing model extrapolates to
millions of devices. Parsing only."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..app import server as app
from ..app.cluster import require
from ..core.errors import InputError
from .measuring import output
from .server import load_target

if TYPE_CHECKING:
    from ..core.result_schema import Result


def run(args: argparse.Namespace) -> Result:
    backing_off = [p for p in (args.policy or []) if p in ("exponential", "decorrelated")]
    if args.cap < args.base and backing_off:  # before any capacity is measured
        raise InputError(
            f"--cap {args.cap:g} s is below --base {args.base:g} s: {' and '.join(backing_off)} back-off "
            f"never waits past the cap, so every retry would draw from the same window below the base "
            f"(no back-off at all); give --cap at least --base, or --policy fixed for a fixed delay"
        )
    o = app.FleetOptions(
        devices=args.devices,
        policies=args.policy,
        capacity=args.capacity,
        resumed_capacity=args.resumed_capacity,
        resumed_share=args.resumed_share,
        base_s=args.base,
        cap_s=args.cap,
        timeout_s=args.timeout,
        backlog=args.backlog,
        spread_s=args.spread,
        device_handshake_s=args.device_handshake,
        horizon_s=args.horizon,
        from_result=args.from_result,
        server=args.server,
        key=args.key,
        measure_s=args.measure_seconds,
        seed=args.seed,
        abandoned_work=args.abandoned_work,
        replay=args.replay,
        allow_partial=args.allow_partial,
        max_hours=args.max_hours,
    )

    o.target = load_target(args)
    o.target_backlog = getattr(args, "target_backlog", None)  # [server].backlog of --system
    o.target_accept_per_s = getattr(args, "target_accept_per_s", None)  # [server].accept_per_s of --system

    o.cluster = require(args.cluster)  # Ray missing or a malformed address: exit 2 before anything runs
    if o.cluster and o.replay is None:
        raise InputError(
            "--cluster with fleet: only a --replay storm runs on the cluster (the model runs here in "
            "seconds); add --replay N or drop --cluster"
        )
    return app.run_fleet(o, output(args))
