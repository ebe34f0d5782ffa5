"""`secperf whatif`: predict what cannot run here (a device, a secure element, a network) from flight
models, cost tables and a Monte Carlo over the link. Parsing only; secperf.app.whatif runs it."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..inputs.vocabulary import HANDSHAKES
from . import argtypes, shared
from .argtypes import count, nonneg, off_measure_or_ms, positive, seed

if TYPE_CHECKING:
    from ..app.whatif import WhatifOptions
    from ..core.result_schema import Result
    from .output import Exited

NAME = "whatif"
JUDGES_FAILURES = False  # a prediction's Result: its failed rows do not make the command fail
HELP = "predict connection set-up for a protocol, key source, group, certificate and network (Monte Carlo)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "protocol",
        nargs="?",
        type=argtypes.comma_list(),
        help=f"{', '.join(HANDSHAKES)} (comma list allowed); `--list` shows them with their handshakes",
    )
    p.add_argument("--list", action="store_true", help="protocols, handshakes, groups, certificate types, cost tables")
    p.add_argument(
        "--network",
        action="append",
        metavar="NETWORK",
        help="a link profile (`secperf netem list`), a spec like 'delay=50ms,loss=1%%,rate=250kbit', a "
        "sweep or a comma list of profiles; repeatable (default: loopback)",
    )
    p.add_argument(
        "--key",
        action="extend",
        type=argtypes.comma_list(),
        metavar="SOURCES",
        help="client key: software, se:PROFILE (warm: session kept) or se:PROFILE:cold (open "
        "session, log in, find key, sign per connection); comma list",
    )
    p.add_argument(
        "--group",
        action="extend",
        type=argtypes.comma_list(),
        metavar="GROUPS",
        help="key-exchange group(s) (default x25519), e.g. p-256, ml-kem-768, x25519mlkem768",
    )
    p.add_argument(
        "--server-cert",
        action="extend",
        type=argtypes.comma_list(),
        metavar="TYPE[:DEPTH]",
        dest="server_cert",
        help="server certificate key type and chain depth, e.g. ecdsa-p256, rsa-2048:2, ml-dsa-44",
    )
    p.add_argument(
        "--cert",
        action="extend",
        type=argtypes.comma_list(),
        metavar="TYPE[:DEPTH]",
        dest="old_cert",
        help="old name of --server-cert, accepted for this release",
    )
    p.add_argument(
        "--system",
        type=argtypes.path,
        metavar="FILE.toml",
        help="a system file: core, stack and build, key, network, protocol and handshakes in one file "
        "(`secperf schema system`; examples/); options given here override the file's, with a note",
    )
    p.add_argument(
        "--handshake",
        action="extend",
        type=argtypes.comma_list(),
        metavar="KINDS",
        help="full, resumed, psk, psk-dhe, 0rtt, hrr, nocookie (DTLS), fresh/cached (jwt); comma list",
    )
    shared.add_device_options(
        p,
        "its client costs are counted on the emulator now or taken from the cache "
        "(each side keeps its own costs: the server's stay this host's)",
        ", or the one of several in --calibrate device Results",
    )
    p.add_argument(
        "--sweep",
        metavar="GRID",
        help="grid over inputs, e.g. 'rtt=0..300:25,loss=0,1,5' or "
        "'group=x25519,ml-kem-768'; units: rtt, delay, jitter in ms, loss in %%, rate in kbit/s, "
        "mtu in bytes; also protocol, handshake, key, group, cert",
    )
    p.add_argument(
        "--calibrate",
        metavar="RESULT",
        help="result.json file(s), comma list, measured on this host (crypto, handshake "
        "or connect rows) to take costs from; with --device CORE, `secperf device` Results for the client "
        "(instead of counting now) and host Results for the server",
    )
    p.add_argument(
        "--sources",
        action="store_true",
        help="after the tables, list where each figure used comes from (cost table, each operation's "
        "cost, the secure-element and network profiles): what the report and result.json hold",
    )
    p.add_argument(
        "--host-costs",
        choices=("measured", "shipped"),
        default=None,
        help="where this host's (the server's) operation costs come from: measured (default: a short "
        "`secperf crypto` run on first use, cached per CPU model and OpenSSL version under "
        "SECPERF_HOME) or shipped (the table in the package, measured on the development VM); "
        "a --calibrate Result of this host replaces both",
    )
    p.add_argument(
        "--s1",
        action="store_true",
        help="study S1's acceleration estimate: full vs PSK with a precomputed key share and the fastest group",
    )
    p.add_argument(
        "--coap-random-factor",
        type=positive(10),
        default=1.5,
        help="CoAP ACK_RANDOM_FACTOR (RFC 7252: 1.5; secperf's probe uses 1.0)",
    )
    p.add_argument(
        "--path-floor",
        type=nonneg(1000),
        default=0.0,
        metavar="MS",
        help="one-way latency every flight pays on top of the link's delay: the path's own forwarding "
        "(secperf's emulator at delay 0: about 0.2 ms; a real link's delay already holds it: 0, the "
        "default)",
    )
    p.add_argument(
        "--host-scheduling",
        type=off_measure_or_ms(1000),
        default="off",
        metavar="off|measure|MS",
        help="lateness of the receiving process waking up for each flight on the host that runs the "
        "link: off (default: a device's own stack), measure (sample this host now: 100 sleeps of "
        "20 ms) or a fixed number of ms; applies to links of 10 ms RTT or more, as the emulator's "
        "relay keeps spinning below that",
    )
    p.add_argument(
        "--baseline",
        action="store_true",
        help="what security costs: each row next to the same exchange without security (plain TCP/UDP, "
        "the same application messages, no crypto) and, for a secure-element key, with a software "
        "key; prints 'security adds X of Y' in time, bytes, radio-on time and energy",
    )
    p.add_argument(
        "--until",
        choices=("response", "handshake"),
        default="response",
        help="end point of the clock: response (default: the first application response, CONNACK, CoAP "
        "ACK...) or handshake (the client's handshake complete, as `secperf handshake` and openssl "
        "s_time stop; TCP connect included)",
    )
    p.add_argument("--n", type=count(100_000_000), default=100_000, help="simulated connections per scenario")
    p.add_argument(
        "--max-draws",
        type=count(10**12),
        default=200_000_000,
        metavar="N",
        help="refuse a what-if whose cells x --n exceed N simulated connections (default 2e8)",
    )
    p.add_argument(
        "--max-cells",
        type=count(10**9),
        default=20_000,
        metavar="N",
        help="refuse a what-if with more than N cells (scenarios x networks x sweep values; default 20000)",
    )
    p.add_argument("--seed", type=seed, default=1)
    shared.cluster_option(p, "the cells as Ray tasks; the Result equals a local run's with the same --seed")
    p.add_argument("--out", type=argtypes.path, default="results", metavar="DIR")
    from .shared import allow_partial_option

    allow_partial_option(p)
    p.add_argument("--json", action="store_true", help="print the Result JSON on stdout and nothing else")
    p.add_argument("--no-report", action="store_true", help="skip writing report.html")
    p.add_argument(
        "--csv",
        type=argtypes.path,
        metavar="FILE",
        help="also write every predicted number as CSV (tidy: one row per number)",
    )


def run(args: argparse.Namespace) -> Result | Exited:
    from ..app import whatif as W
    from ..core.errors import InputError
    from .output import Exited

    if args.list:
        from ..report.terminal_whatif import listing

        listing()
        return Exited(0)
    from ..app.cluster import require

    require(args.cluster)  # Ray missing or a malformed address: exit 2 before any work
    o = options(args)
    taken = getattr(args, "system_taken", None)
    try:
        return W.run(o)
    except InputError as exc:  # about a value the --system file gave: the file's key path, not an option
        from .system_args import in_file_words

        raise in_file_words(exc, args.system, taken or {}) from None


def _server_certs(args: argparse.Namespace) -> list[str]:
    """--server-cert, and the old --cert with a note (accepted for this release)."""
    from ..inputs.vocabulary import note

    if args.old_cert:
        note("--cert is renamed --server-cert (the name `secperf device handshake` uses); accepted for this release")
    return (args.server_cert or []) + (args.old_cert or [])


def options(args: argparse.Namespace) -> WhatifOptions:
    """The WhatifOptions of the parsed arguments, with a --system file's values under them (the
    command line overrides the file, with a note: subcommands/system_args.py)."""
    import sys

    from ..app import whatif as W
    from ..core.errors import InputError
    from ..inputs import vocabulary as V

    protocols, networks, keys = args.protocol or [], args.network, args.key or []
    groups = V.groups(args.group) if args.group else []
    certs, handshakes = _server_certs(args), args.handshake or []
    device, stack, config = args.device, args.stack, args.config
    stack_from = config_from = None
    if args.system:
        from ..inputs.system import load_system
        from .system_args import Merge

        s = load_system(args.system).system
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
            from ..model.flights import HANDSHAKES

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
