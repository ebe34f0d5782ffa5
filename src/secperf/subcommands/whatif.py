"""`secperf whatif`: predict what cannot run here (a device, a secure element, a network) from flight
models, cost tables and a Monte Carlo over the link. Parsing only; secperf.app.whatif runs it."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ..app import whatif as W
from ..app.cluster import require
from ..core.errors import InputError
from ..inputs import vocabulary as V
from ..inputs.system import load_system
from ..inputs.vocabulary import note
from ..model.flights import HANDSHAKES
from ..report.terminal_whatif import listing
from . import shared
from .output import Exited
from .system_args import Merge, in_file_words

if TYPE_CHECKING:
    from ..app.whatif import WhatifOptions
    from ..core.result_schema import Result

JUDGES_FAILURES = False  # a prediction's Result: its failed rows do not make the command fail


def run(args: argparse.Namespace) -> Result | Exited:
    if args.list:
        listing()
        return Exited(0)

    require(args.cluster)  # Ray missing or a malformed address: exit 2 before any work
    o = options(args)
    taken = getattr(args, "system_taken", None)
    try:
        return W.run(o)
    except InputError as exc:  # about a value the --system file gave: the file's key path, not an option
        raise in_file_words(exc, args.system, taken or {}) from None


def _server_certs(args: argparse.Namespace) -> list[str]:
    """--server-cert, and the old --cert with a note (accepted for this release)."""

    if args.old_cert:
        note("--cert is renamed --server-cert (the name `secperf device handshake` uses); accepted for this release")
    return (args.server_cert or []) + (args.old_cert or [])


def options(args: argparse.Namespace) -> WhatifOptions:
    """The WhatifOptions of the parsed arguments, with a --system file's values under them (the
    command line overrides the file, with a note: subcommands/system_args.py)."""

    protocols, networks, keys = args.protocol or [], args.network, args.key or []
    groups = V.groups(args.group) if args.group else []
    certs, handshakes = _server_certs(args), args.handshake or []
    device, stack, config = args.device, args.stack, args.config
    stack_from = config_from = None
    # a --system file's link, key profile and device as its reader resolved them (LoadedSystem), where
    # the command line did not override them: the run takes the objects, not the names again
    file_links = file_keys = file_device = None
    if args.system:
        ls = load_system(args.system)
        s = ls.system
        m = Merge(args.system)
        args.system_taken = m.taken
        protocols = m.pick("PROTOCOL", protocols, "[protocol].name", [s.protocol.name])
        networks = m.pick("--network", networks, "[network].link", [s.network.link])
        keys = m.pick("--key", keys, "[security].key", [s.security.key])
        groups = m.pick("--group", groups, "[protocol].groups", s.protocol.groups)
        certs = m.pick(
            "--server-cert", certs, "[protocol].server_cert", [s.protocol.server_cert] if s.protocol.server_cert else []
        )
        handshakes = m.pick("--handshake", handshakes, "[protocol].handshakes", s.protocol.handshakes)
        if "PROTOCOL" in m.overridden and not args.handshake and handshakes:
            # the file's handshakes belong to its protocol: those another protocol lacks are dropped, said

            fit = [h for h in handshakes if all(h in HANDSHAKES.get(p, ()) for p in protocols)]
            if fit != handshakes:
                V.note(
                    f"[protocol].handshakes = {','.join(handshakes)} of {args.system} belong to its protocol "
                    f"{s.protocol.name}; {', '.join(protocols)} "
                    + (
                        f"keep{'s' if len(protocols) == 1 else ''} {','.join(fit)}"
                        if fit
                        else f"take{'s its' if len(protocols) == 1 else ' their'} own first handshake"
                    )
                )
                handshakes = fit
        device = m.pick("--device", device, "[device].core", s.device.core)
        file_links = [ls.link] if "--network" in m.taken and ls.link is not None else None
        file_keys = {ls.key_profile.name: ls.key_profile} if "--key" in m.taken and ls.key_profile else None
        file_device = ls.device if "--device" in m.taken else None
        if "--device" in m.overridden:  # the file's build belongs to the file's core
            dropped = [f"[device].{k}" for k in ("stack", "config") if getattr(s.device, k) is not None]
            if dropped and not (stack or config):
                V.note(
                    f"{' and '.join(dropped)} of {args.system} belong to its core {s.device.core}; not used with "
                    f"--device {device}"
                )
        else:
            stack = m.pick("--stack", stack, "[device].stack", s.device.stack)
            config = m.pick("--config", config, "[device].config", s.device.config)
            # the file's library is a preference: a protocol it cannot run is counted with another (a note)
            if stack is not None and not args.stack:
                stack_from = f"[device].stack of {args.system}"
            if config is not None and not args.config:
                config_from = f"[device].config of {args.system}"
        unused = [
            t
            for t, v in (("[network].radio", s.network.radio), ("[pattern]", s.pattern), ("[budgets]", s.budgets))
            if v is not None
        ]
        if unused:
            V.note(
                f"{', '.join(unused)} of {args.system}: judged by `secperf plan --system {args.system}`; "
                f"whatif predicts the connection set-up"
            )
    if not protocols:
        raise InputError(
            "PROTOCOL: give a protocol (tls1.3, tls1.2, dtls1.2, https, mqtt, coap, openvpn, jwt) or --system FILE.toml"
        )
    shared.check_device_build(device, stack, config)
    if not 1.0 <= args.coap_random_factor <= 4.0:
        raise InputError(f"--coap-random-factor: {args.coap_random_factor} must be between 1.0 and 4.0 (RFC 7252: 1.5)")
    return W.WhatifOptions(
        protocols=protocols,
        networks=networks or ["loopback"],
        links=file_links,
        key_profiles=file_keys,
        device_choice=file_device,
        keys=keys or ["software"],
        groups=groups or ["x25519"],
        certs=certs,
        handshakes=handshakes,
        sweep=args.sweep,
        calibrate=args.calibrate,
        device=device,
        stack=stack,
        config=config,
        stack_from=stack_from,
        config_from=config_from,
        n=args.n,
        seed=args.seed,
        s1=args.s1,
        coap_random_factor=args.coap_random_factor,
        path_floor_ms=args.path_floor,
        host_scheduling=args.host_scheduling,
        json=args.json,
        out=args.out,
        no_report=args.no_report,
        command=["secperf", *sys.argv[1:]],
        allow_partial=args.allow_partial,
        max_draws=args.max_draws,
        max_cells=args.max_cells,
        **_passed_on(args, W.WhatifOptions),
    )


def _passed_on(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """Options parsed here whose WhatifOptions field has the same name (--baseline, --until), passed
    as they are, once the dataclass has the field."""
    fields = getattr(cls, "__dataclass_fields__", {})
    out = {
        k: getattr(args, k)
        for k in ("baseline", "until", "cluster", "csv", "host_costs")
        if k in fields and hasattr(args, k)
    }
    if getattr(args, "system", None) and "baseline" in fields:
        # a system file asks the whole question ("how much of it is security"): the baseline rows
        # come with it, decided so that one command answers it
        out["baseline"] = True
    if "baseline" in fields and len(set(args.protocol or [])) > 1 and getattr(args, "device", None):
        # several protocols on a device: a comparison, whose table says what security adds to each
        # (decided so that `whatif tls1.3,dtls1.3,edhoc,... --device CORE` answers "which protocol" in
        # one command; without a device, sweeps of several protocols keep their cell count)
        out["baseline"] = True
    return out
