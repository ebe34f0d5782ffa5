"""One function per measuring command: validate the selection, build the phases, run them.
Each takes its command's options dataclass (app/options.py; a few small commands plain lists of names
and MeasureOptions) and the Output, and returns the Result, so it is usable without the CLI."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, overload

from rich.table import Table

from ..core import host
from ..core import result as R
from ..core.errors import InputError
from ..core.result_schema import Result
from ..inputs.algorithms import catalog, for_libraries, parse_libraries, select
from ..inputs.core_profiles import raw
from ..inputs.devices import devices
from ..inputs.se_profiles import load_profiles
from ..measure import connect as C
from ..measure import cortexm as CM
from ..measure import handshake as H
from ..measure import signer as S
from ..measure import stack_host as SH
from ..measure.backends import check_available
from ..measure.target import parse_target
from ..model.tokens import signatures_per_hour
from . import bounds, connect_edhoc, links
from . import connect_beyond as CB
from . import phases as P
from .can import CAN_DEFAULT_DEVICES, CAN_DEFAULT_MACS, MAC_DEFAULT_ALGS, MAC_DEFAULT_SIZES, CanOptions, can_analysis
from .connect import connect_configs, key_profiles
from .options import (
    ConnectOptions,
    HandshakeExperimentOptions,
    JwtOptions,
    MacOptions,
    MeasureOptions,
    check_time_budget,
    crypto_params,
    handshake_params,
)
from .reporter import Lines, reporter
from .runner import Output, Phase, check_output_file, measure_and_write, output_store, write_outputs

if TYPE_CHECKING:
    from ..inputs.algorithms import Values
    from ..inputs.netspec import NetSpec
    from ..inputs.se_profiles import Profile as SEProfile
    from ..measure.handshake import HandshakeConfig
    from ..measure.target import Target

SIGNER_KEYS = ("ecdsa-p256", "ecdsa-brainpoolp256r1", "rsa-2048", "rsa-1024")
SIGNER_MODES = ("local_sw", "sign_only", "total")
JWT_KEYS = {"ecdsa-p256": "ES256", "rsa-2048": "RS256", "rsa-1024": "RS256"}


def known_names(option: str, values: Iterable[str], allowed: Sequence[str]) -> None:
    """Every value must be one of `allowed`; else an input error naming the option."""
    for v in values:
        if v not in allowed:
            raise InputError(f"unknown {option} {v!r}; known: {', '.join(allowed)}")


def crypto(
    algs: Values,
    ops: Values,
    sizes: Values,
    strength: int | None,
    opts: MeasureOptions,
    output: Output,
    libraries: Values = None,
) -> Result:
    libs = parse_libraries(libraries)
    rows = for_libraries(select(algs, ops, sizes, strength), libs)
    if opts.prehashed and not any(r.alg.family in ("rsa", "ecdsa") and r.op in ("sign", "verify") for r in rows):
        chosen = sorted({r.alg.name for r in rows})
        raise InputError(
            f"--prehashed: acts on RSA and ECDSA signatures (the digest is signed instead of the "
            f"message); {', '.join(chosen[:6])}{' ...' if len(chosen) > 6 else ''} "
            f"{'has' if len(chosen) == 1 else 'have'} none: drop --prehashed or add e.g. --alg "
            f"ecdsa-p256 --op sign"
        )
    check_available(libs)
    params = crypto_params(opts, {})
    check_time_budget(len(rows), params, opts.max_hours)
    limit = _crypto_estimate("crypto", rows, params, opts)
    extra = {"alg": algs, "op": ops, "size": sizes, "strength": strength, "libraries": libs, **limit}
    return measure_and_write("crypto", {**params.as_dict(), **extra}, [P.crypto_phase(rows, params)], output)


def _crypto_estimate(
    what: str, rows: Sequence[Any], params: Any, opts: MeasureOptions, extra_s: float = 0.0
) -> dict[str, float]:
    """The run's length from its rows, --n, --warmup, --duration and --min-sample-us (app/bounds.py)."""

    est = bounds.crypto_rows_s(rows, params.n, params.warmup, params.duration_s, params.min_sample_us) + extra_s
    return bounds.check_estimate(
        what,
        est,
        f"{len(rows)} rows x the least of --duration {params.duration_s:g} s and "
        f"(--n {params.n} + --warmup {params.warmup}) samples",
        "lower --n, --duration or the rows (--alg, --op, --size)",
        opts.max_hours_given,
    )


def handshake(o: HandshakeExperimentOptions, output: Output) -> Result:
    """TLS and DTLS handshakes of one experiment as `o` selects, with the per-message client CPU
    breakdown; against the user's own server when `o.target` names one."""

    experiment, servers, mtls, opts = o.experiment, list(o.servers), o.mtls, o.measure
    stacks = SH.check_stacks(o.stacks or ["openssl"])
    nets = links.networks(o.networks)
    known_names("--server", servers, H.SERVERS)
    try:
        base = H.experiment(experiment)
    except H.HandshakeError as exc:
        raise InputError(str(exc)) from None
    tgt = _target(o.target, nets)
    if tgt is not None:  # the user's own server: the experiment's client side against it
        servers = [H.REMOTE]
        mtls = mtls or tgt.client_cert is not None
    configs = [replace(c, server=sv, network=n.name) for n in nets for sv in servers for c in base]
    if tgt is not None:  # the user's certificate and groups are not secperf's choice: offer what fits any
        configs = [H.for_any_certificate(c) for c in configs]
    if "nginx" in servers:
        configs = [
            c for c in configs if c.server != "nginx" or (c.proto == "tls" and c.mode not in ("psk", "psk-dhe", "0rtt"))
        ]
        # nginx runs as in studies S1/S2: with client-certificate verification on
        configs = [replace(c, mtls=True) if c.server == "nginx" else c for c in configs]
    if mtls:
        configs = [replace(c, mtls=True) for c in configs]
    if not configs:
        raise InputError(
            f"handshake {experiment}: no configuration is left: nginx serves TLS over TCP with "
            f"certificates only (no DTLS, PSK or 0-RTT); choose --server probe or s_server"
        )
    dropped = len(nets) * len(servers) * len(base) - len(configs)
    if servers == ["nginx"] and dropped > len(configs):
        # what nginx can run of this experiment is only its baseline: the rows the experiment is about are gone
        raise InputError(
            f"handshake {experiment} --server nginx: nginx can run only {len(configs) // len(nets)} of "
            f"the experiment's {len(base)} configurations (it serves TLS over TCP with certificates "
            "only: no DTLS, PSK or 0-RTT); choose --server probe or s_server"
        )
    if dropped:
        reporter().note(
            f"secperf handshake: note: {dropped} configuration(s) skipped: nginx serves TLS over TCP with "
            f"certificates only (no DTLS, PSK or 0-RTT)"
        )
    # s_server reads a TLS 1.2 or DTLS PSK from -psk only, on the process list every user reads: those rows
    # run on the probe server (which reads a 0600 key file), never on s_server
    kept = [
        c
        for c in configs
        if c.server != "s_server" or c.mode not in ("psk", "psk-dhe") or (c.tls == "1.3" and c.proto == "tls")
    ]
    if not kept:
        raise InputError(
            f"handshake {experiment}: no configuration is left: s_server takes a TLS 1.2 or DTLS PSK "
            "only on its command line (-psk), where every user reads it; choose --server probe"
        )
    if len(kept) < len(configs):
        reporter().note(
            f"secperf handshake: note: {len(configs) - len(kept)} s_server configuration(s) skipped: "
            "s_server takes a TLS 1.2 or DTLS PSK only on its command line (-psk), where every user "
            "reads it; the probe server (--server probe) runs them from a 0600 key file"
        )
    configs = kept
    hp = handshake_params(opts, {})
    hp.target = tgt
    hp.links = tuple(nets)  # resolved once above: the emulated links are built from these
    phases = [P.handshake_phase(configs, hp, opts.seed)] if "openssl" in stacks else []
    others = [s for s in stacks if s != "openssl"]
    if others:
        phases.append(P.stack_phase(_stack_items(others, experiment, base, nets, tgt, mtls), hp))

    per_stack = bounds.rows_of(configs, nets, lambda c: c.proto) * len(stacks)
    limit = bounds.check(f"handshake {experiment}", per_stack, hp.n + hp.warmup + 1, opts.max_hours_given)
    return measure_and_write(
        "handshake",
        {
            "experiment": experiment,
            "servers": servers,
            "stacks": stacks,
            "networks": [n.as_dict() for n in nets],
            **hp.as_dict(),
            **limit,
        },
        phases,
        output,
    )


def _stack_items(
    stacks: list[str], experiment: str, base: list[HandshakeConfig], nets: list[NetSpec], tgt: Target | None, mtls: bool
) -> list[tuple[str, HandshakeConfig]]:
    """(stack, config) for the experiment's configurations another client library can run: on
    loopback, against secperf's own s_server, TLS over TCP, server authentication, full or resumed."""

    if tgt is not None or mtls or any(n.name != "loopback" for n in nets):
        raise InputError(
            "--stack wolfssl/mbedtls: the other libraries' clients run on loopback against secperf's own "
            "server with server authentication only; drop --network, --target and --mtls, or use "
            "--stack openssl"
        )
    items = [(st, c) for st in stacks for c in base if SH.stack_config(c) is not None]
    skipped: list[str] = []
    for st in stacks:
        offers = SH.offers(st)
        mine = [(s_, c) for s_, c in items if s_ == st]
        ok = [(s_, c) for s_, c in mine if SH.offered(SH.stack_config(c), offers)]
        if mine and not ok:
            o = offers.get("offers", {})
            raise InputError(
                f"--stack {st}: {offers.get('library')} runs none of handshake {experiment}'s "
                f"configurations; it offers TLS {', '.join(o.get('tls', ()))}, groups "
                f"{', '.join(o.get('groups', ()))}, suites {', '.join(o.get('suites', ()))}"
            )
        skipped += [f"{c.label} ({st})" for s_, c in mine if (s_, c) not in ok]
        items = [it for it in items if it[0] != st or it in ok]
    if skipped:
        reporter().note(f"secperf handshake: note: skipped what the library does not offer: {', '.join(skipped)}")
    if not items:
        raise InputError(
            f"--stack {','.join(stacks)}: handshake {experiment} has no configuration these clients run "
            f"(TLS 1.2/1.3 over TCP, full or ticket-resumed, groups x25519/p-256/p-384, AES-128-GCM or "
            f"ChaCha20-Poly1305, rsa-2048 or ecdsa-p256 certificate of depth 1); try `handshake versions` "
            f"or `handshake groups`"
        )
    return items


def _target(target: dict[str, Any] | None, nets: list[NetSpec]) -> Target | None:
    """--connect HOST:PORT and its options, checked; None without --connect."""
    if not target:
        return None

    if any(not n.loopback for n in nets):
        raise InputError(
            "--connect measures your own server from this host: it cannot be combined with an "
            "emulated --network (the link's device namespace has no route to it)"
        )
    return parse_target(**target)


def _profiles(names: list[str]) -> list[SEProfile]:
    """The --profile names resolved once (an unknown one names the known ones): the estimate and
    the phase take the objects."""
    return P.se_profiles(names)


def signer(profiles: list[str], keys: list[str], modes: list[str], opts: MeasureOptions, output: Output) -> Result:
    resolved = _profiles(profiles)
    known_names("key type", keys, SIGNER_KEYS)
    known_names("mode", modes, SIGNER_MODES)
    sp = S.SignerParams(n=opts.pick_n(30), warmup=opts.pick_warmup(2), seed=opts.seed)

    rows = len(profiles) * len(keys) * len(modes)
    est = (
        sum(bounds.se_sign_s(p) + 0.01 for p in resolved) * len(keys) * len(modes) * (sp.n + sp.warmup)
        + bounds.SERVER_START_S
    )
    limit = bounds.check_estimate(
        "signer",
        est,
        f"{rows} series x {sp.n + sp.warmup} signatures at each profile's signing time",
        "lower --n, --warmup or the rows",
        opts.max_hours_given,
    )
    return measure_and_write(
        "signer",
        {"profiles": profiles, "keys": keys, "modes": modes, **sp.as_dict(), **limit},
        [P.signer_phase(resolved, keys, modes, sp)],
        output,
    )


def jwt(o: JwtOptions, output: Output) -> Result:
    """JWT device authentication as `o` selects: tokens signed in software or by the secure element,
    fresh and cached, against the verifying HTTPS endpoint."""

    profiles, keys, key_sessions, opts = o.profiles, o.keys, o.key_sessions, o.measure
    lifetime_s, requests_per_hour = o.lifetime_s, o.requests_per_hour
    nets = links.networks(o.networks)
    resolved = _profiles(profiles)
    for kt in keys:
        if kt not in JWT_KEYS:
            raise InputError(f"unknown JWT key type {kt!r}; known: ecdsa-p256 (ES256), rsa-2048 (RS256)")
    known_names("--key-session", key_sessions, S.KEY_SESSIONS)
    sp = S.SignerParams(n=opts.pick_n(20), warmup=opts.pick_warmup(2), seed=opts.seed, links=tuple(nets))
    phase = P.jwt_phase(resolved, keys, sp, lifetime_s, [n.name for n in nets], key_sessions)

    per = sum(bounds.se_sign_s(p) + bounds.connection_s("https", n) for p in resolved for n in nets)
    limit = bounds.check_estimate(
        "jwt",
        2 * per * len(keys) * len(key_sessions) * (sp.n + sp.warmup) + 5,
        f"{len(profiles) * len(nets) * len(keys) * len(key_sessions) * 2} series x "
        f"{sp.n + sp.warmup} requests, each a signature and an HTTPS connection",
        "lower --n, --warmup, the link's delay or the rows",
        opts.max_hours_given,
    )
    params = {
        **limit,
        "profiles": profiles,
        "keys": keys,
        "lifetime_s": lifetime_s,
        "requests_per_hour": requests_per_hour,
        "key_sessions": list(key_sessions),
        "signatures_per_hour": signatures_per_hour(lifetime_s, requests_per_hour),
        "networks": [n.as_dict() for n in nets],
        **sp.as_dict(),
    }
    return measure_and_write("jwt", params, [phase], output)


@overload
def connect(o: ConnectOptions, output: Output, phases_only: Literal[False] = False) -> Result: ...


@overload
def connect(o: ConnectOptions, output: Output, phases_only: Literal[True]) -> tuple[dict[str, Any], list[Phase]]: ...


def connect(
    o: ConnectOptions, output: Output, phases_only: bool = False
) -> Result | tuple[dict[str, Any], list[Phase]]:
    """Connection set-up on real servers (and secperf's own QUIC, DTLS 1.3/1.2 and EDHOC pairs) as
    `o` selects; with `phases_only`, (params, phases) for another command's Result instead."""

    if "edhoc" in o.protocols:
        return connect_edhoc.measure(o, output)
    connect_edhoc.check_not_edhoc(o)
    keys = o.keys or ["software", "se:iot-safe-sim"]
    handshakes = o.handshakes or ["full", "resumed"]
    clients, auths = o.clients or [], o.auths or ["mtls", "jwt_fresh", "jwt_cached"]
    key_sessions, coap_servers = o.key_sessions or ["warm"], o.coap_servers or ["libcoap"]
    beyond = {"lost": o.lost or [], "cid": o.cid or None, "keys_given": o.keys is not None}
    mine, protocols = CB.split(o.protocols)
    if mine:  # quic, dtls13, dtls12: secperf's own pairs (app/connect_beyond.py)
        return CB.connect(
            o,
            mine,
            protocols,
            output,
            lambda ps, hs: connect(
                replace(o, protocols=ps, handshakes=hs, lost=None, cid=None), output, phases_only=True
            ),
        )
    if not phases_only:
        CB.check_unused(beyond, protocols)
    nets = links.networks(o.networks)
    tgt = _target(o.target, nets)
    if tgt is not None:
        if protocols == ["all"] or len(protocols) != 1 or protocols[0] not in ("https", "mqtt", "coap"):
            raise InputError("--connect HOST:PORT measures one server: name its protocol, https, mqtt or coap")
        if clients and clients != ["probe"]:
            raise InputError("--connect: the probe is the client against your own server (drop --client)")
        auths = ["mtls"]  # the JWT endpoint is secperf's own

    known = load_profiles()  # read once: the matrix's check and the run's key sources take them
    configs = connect_configs(
        protocols,
        keys,
        handshakes,
        clients,
        auths,
        tls=o.tls,
        nagle=o.nagle,
        coap_security=o.coap_security or ["pki"],
        networks=[n.name for n in nets],
        key_sessions=key_sessions,
        coap_servers=coap_servers,
        profiles=known,
    )
    opts = o.measure

    cp = C.ConnectParams(
        n=opts.pick_n(20),
        warmup=opts.pick_warmup(2),
        timeout_ms=opts.timeout_ms or 5000,
        seed=opts.seed,
        target=tgt,
        profiles=key_profiles(configs, known=known),  # --key's secure elements, resolved once here
        links=tuple(nets),  # and the --network links
    )

    params = {
        "protocols": protocols,
        "keys": keys,
        "handshakes": handshakes,
        "clients": clients or ["probe"],
        "auth": auths,
        "tls": o.tls,
        "set_tcp_nodelay": not o.nagle,
        "key_sessions": list(key_sessions),
        "coap_servers": list(coap_servers),
        "coap_security": list(o.coap_security or ["pki"]),
        "networks": [n.as_dict() for n in nets],
        **cp.as_dict(),
        **bounds.check("connect", bounds.rows_of(configs, nets), cp.n + cp.warmup + 1, opts.max_hours_given),
    }
    if phases_only:
        return params, [P.connect_phase(configs, cp)]
    return measure_and_write("connect", params, [P.connect_phase(configs, cp)], output)


def mac(o: MacOptions, output: Output) -> Result:
    """Host MAC speed, Cortex-M instruction counts (`o.cortexm` targets, or ["none"]) and the CAN model."""

    sizes, cortexm_only, cortexm_table, opts = o.sizes, o.cortexm_only, o.cortexm_table, o.measure
    targets = [] if list(o.cortexm) == ["none"] else list(o.cortexm)
    for t in targets:
        if t not in CM.TARGETS:
            raise InputError(f"--cortexm {t!r}: unknown target; known: {', '.join(CM.TARGETS)} (or none)")
    if cortexm_only and not targets:
        raise InputError("--cortexm-only with --cortexm none leaves nothing to measure")
    if cortexm_table and not targets:
        raise InputError("--cortexm-table needs at least one --cortexm target")

    check_output_file(cortexm_table, "--cortexm-table")
    can_result = can_analysis(o.can, CAN_DEFAULT_DEVICES, CAN_DEFAULT_MACS)
    phases: list[Phase] = []
    params = crypto_params(opts, {})
    alg_list = list(o.algs or MAC_DEFAULT_ALGS.split(","))
    mac_rows: list[Any] = []
    if not cortexm_only:
        cat = catalog()
        for a in alg_list:
            if a in cat and cat[a].family != "mac":
                raise InputError(
                    f"--alg {a}: not a MAC; MACs: {', '.join(n for n, x in cat.items() if x.family == 'mac')}"
                )
        mac_rows = select(alg_list, ["mac"], sizes or [MAC_DEFAULT_SIZES])
        check_time_budget(len(mac_rows), params, opts.max_hours)
        phases.append(P.crypto_phase(mac_rows, params))

    limit = _crypto_estimate("mac", mac_rows, params, opts, len(targets) * bounds.DEVICE_ROW_S * 10)
    if targets:
        phases.append(P.cortexm_phase(targets, cortexm_table))
    phases.append(P.analysis_phase("CAN bus load model", "can", can_result))
    return measure_and_write(
        "mac",
        {**params.as_dict(), "alg": alg_list, "size": sizes, "cortexm": targets, "cortexm_only": cortexm_only, **limit},
        phases,
        output,
    )


def can(options: CanOptions, output: Output) -> Result:
    """The CAN model alone: no measurement, one Result of kind `can`."""

    result = can_analysis(options, "rl78", "chaskey,aes-128-cmac")
    run = output_store(output).create("can")
    doc = R.new_result(
        kind="can", command=output.command, params=result["params"], host=host.collect(), run_id=run.run_id
    )
    doc.analysis.can = result
    R.finish(doc, "complete")
    run.save(doc)
    write_outputs(doc, run, output)
    return doc


def list_devices() -> str:
    """The CAN device profiles with their MAC figures and sources."""

    say = Lines()
    for name, d in devices().items():
        say(f"{name:16} {d.get('description', '')}")
        for m, e in d.get("macs", {}).items():
            fig = {k: v for k, v in e.items() if k not in ("source", "note")}
            say(f"{'':16}   {m}: {fig}  [source: {raw()['sources'].get(e.get('source'), e.get('source'))}]")
    return say.text()


def list_algorithms() -> Table:
    """The algorithm catalogue as a table (the CLI fits it to the terminal)."""

    t = Table(title="secperf crypto: algorithms", title_justify="left", header_style="bold")
    for c in ("algorithm", "family", "operations", "bits", "engine", "strength note"):
        t.add_column(c)
    for a in catalog().values():
        t.add_row(a.name, a.family, ", ".join(a.ops), str(a.security_bits), a.engine, a.note)
    return t


def list_profiles() -> str:
    """The secure-element profiles with their sources."""

    say = Lines()
    for name, pr in load_profiles().items():
        say(f"{name:16} {pr.description}  [source: {pr.source}]")
    return say.text()
