"""`secperf device`: emulated-device handshakes and primitives into a Result of kind `device`
(phases, progress, run store, report through app/runner.py), plus the build and list helpers."""

from __future__ import annotations

import tempfile
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError
from ..inputs.core_profiles import Core
from ..inputs.defaults import DEVICE_BUILD_DEFAULTS, DEVICE_DEFAULTS
from ..inputs.devices import core, cores, resolve_core
from ..lab.services import ServiceError
from ..measure import device as D
from ..measure import device_dtls as DT
from ..measure import device_user as U
from ..measure import edhoc_device as E
from ..measure import quic_device as QD
from ..measure.device_build import (
    STACK_TARGETS,
    STACKS,
    TARGETS,
    build_configs,
    configs_for,
    default_config,
    ensure_built,
)
from .device_bounds import check_crypto, check_handshakes, check_user_code
from .reporter import Lines, reporter
from .runner import Output, Phase, measure_and_write

if TYPE_CHECKING:
    from ..core.result_schema import Result
    from ..core.store import Run
    from .runner import Progress


DEFAULTS = DEVICE_DEFAULTS  # the command's defaults (inputs/defaults.py: the parser shows them)
BUILD_DEFAULTS = DEVICE_BUILD_DEFAULTS

# a list of names, or the same as one comma list (the defaults above, a scenario file's text):
# measure/device.py checks either against what it knows
Names = str | list[str]


def _text(names: Names) -> str:
    """The names as the Result's parameters record them: one comma list."""
    return names if isinstance(names, str) else ",".join(names)


@dataclass
class HandshakeOptions:
    device: str = DEFAULTS["device"]
    stack: Names = DEFAULTS["stack"]
    tls: Names = DEFAULTS["tls"]
    group: Names = DEFAULTS["group"]
    suite: Names = DEFAULTS["suite"]
    mode: Names = DEFAULTS["mode"]
    server_cert: Names = DEFAULTS["server_cert"]
    client_cert: Names = DEFAULTS["client_cert"]
    n: int = DEFAULTS["n"]
    warmup: int = DEFAULTS["warmup"]
    config: Names | None = None  # library build configurations (None: each stack's default)
    timing: bool = True  # the timing model on (cycles, ms, band) or instruction counts only
    max_hours: float | None = None  # --max-hours (None: app/bounds.py's default limit)


def _check_counts(n: int, warmup: int) -> None:
    if n < 1 or n > 1000:
        raise InputError(f"--n {n}: give 1..1000 warm handshakes per configuration")
    if warmup < 0 or warmup > 100:
        raise InputError(f"--warmup {warmup}: give 0..100 warm-up handshakes")


def handshake_phase(opts: HandshakeOptions, dev: Core | None = None) -> tuple[Phase, dict[str, Any]]:
    """The configurations to measure, checked (device, stack, what the build offers) before anything
    runs, as one phase; and the parameters to record. dev: the --device core, resolved by the caller
    (else here, once); the layers below take it, not its name."""

    _check_counts(opts.n, opts.warmup)
    dev = dev or resolve_core(opts.device)
    if "quic" in [t.strip().lower() for t in (opts.tls.split(",") if isinstance(opts.tls, str) else opts.tls)]:
        return _quic_phase(opts, dev)
    configs = D.plan(
        dev, opts.stack, opts.tls, opts.group, opts.suite, opts.mode, opts.server_cert, opts.client_cert, opts.config
    )
    target = D.target_for(dev)
    builds = {k: ensure_built(k[0], target, k[1]) for k in dict.fromkeys((c.stack, c.build_config) for c in configs)}
    for c in configs:  # every combination checked before anything runs
        D.check_offers(c, builds[(c.stack, c.build_config)])
    params = {
        "device": dev.name,
        "stacks": list(dict.fromkeys(s for s, _ in builds)),
        "tls": _text(opts.tls),
        "groups": _text(opts.group),
        "suites": _text(opts.suite),
        "modes": _text(opts.mode),
        "server_cert": _text(opts.server_cert),
        "client_cert": _text(opts.client_cert),
        "n": opts.n,
        "warmup": opts.warmup,
        "timing": opts.timing,
        "configs": {f"{s}:{b.config}": b.config_note for (s, _), b in builds.items()},
        "libraries": {s if c is None else f"{s}[{c}]": b.library for (s, c), b in builds.items()},
    }

    if any(DT.needs_pair(c) for c in configs):  # the DTLS 1.3 / CID peer: built before anything runs, as the clients
        DT.ensure_peer()

    def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
        servers: dict[tuple[str, str, str, bool], D.Server] = {}
        down: dict[tuple[str, str, str, bool], str] = {}  # a shared peer that did not start: why
        try:
            for i, cfg in enumerate(items):
                progress("start", cfg, i, len(items), None)
                build = builds[(cfg.stack, cfg.build_config)]
                sk = (cfg.server_cert, cfg.client_cert, "dtls" if cfg.dtls else "tls", cfg.dtls and cfg.mode == "psk")
                if sk not in servers and sk not in down and not DT.needs_pair(cfg):  # pair rows start their own
                    srv = D.Server(*sk)
                    try:
                        servers[sk] = srv.__enter__()
                    except ServiceError as exc:  # its configurations fail with the reason; the others go on
                        srv.__exit__(None, None, None)
                        down[sk] = str(exc)
                if sk in down and not DT.needs_pair(cfg):
                    doc.series += D.failed_config(cfg, build, down[sk], warmup=opts.warmup)
                else:
                    doc.series += D.measure_config(cfg, opts.n, opts.warmup, build, servers.get(sk), timed=opts.timing)
                run.save(doc)
                progress("done", cfg, i, len(items), None)
        finally:
            for srv in servers.values():
                srv.__exit__(None, None, None)

    return Phase(
        configs,
        lambda c: (
            f"{c.stack}{f' [{c.build_config}]' if c.build_config else ''} TLS {c.tls} {c.group} {c.suite} {c.mode}"
        ),
        runner,
    ), params


def _quic_phase(opts: HandshakeOptions, dev: Core) -> tuple[Phase, dict[str, Any]]:
    """`--tls quic`: ngtcp2 + GnuTLS on an A-profile core against aioquic on loopback
    (measure/quic_device.py), in a run of its own. The stack and suite defaults of the TLS rows
    (wolfssl; aes128gcm,chacha20) stand for ngtcp2 and aes128gcm here."""

    tls = [t.strip().lower() for t in (opts.tls.split(",") if isinstance(opts.tls, str) else opts.tls) if t.strip()]
    if set(tls) != {"quic"}:
        raise InputError(
            f"--tls {','.join(tls)}: count QUIC in a run of its own (its stack is ngtcp2, the TLS "
            f"versions' are the embedded TLS stacks): --tls quic"
        )
    stack = QD.STACK if opts.stack == DEFAULTS["stack"] else opts.stack
    suite = "aes128gcm" if opts.suite == DEFAULTS["suite"] else opts.suite
    configs = QD.plan(dev, stack, opts.mode, opts.group, suite, opts.server_cert)
    if _text(opts.client_cert) != "none":
        raise InputError(
            f"--client-cert {_text(opts.client_cert)}: the QUIC rows authenticate the server only (--client-cert none)"
        )
    if opts.config:
        raise InputError(
            f"--config {_text(opts.config)}: QUIC runs Debian's armhf ngtcp2 and GnuTLS as packaged "
            f"(no build configurations)"
        )
    build = QD.ensure_built()
    params = {
        "device": dev.name,
        "stacks": [QD.STACK],
        "tls": "quic",
        "groups": _text(opts.group),
        "suites": _text(suite),
        "modes": _text(opts.mode),
        "server_cert": _text(opts.server_cert),
        "client_cert": "none",
        "n": opts.n,
        "warmup": opts.warmup,
        "timing": opts.timing,
        "libraries": {QD.STACK: build.library},
    }

    def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
        servers: dict[str, QD.LoopbackServer] = {}
        down: dict[str, str] = {}  # a server that did not start: why (its configurations fail, the others go on)
        try:
            for i, cfg in enumerate(items):
                progress("start", cfg, i, len(items), None)
                if cfg.server_cert not in servers and cfg.server_cert not in down:
                    try:
                        servers[cfg.server_cert] = QD.LoopbackServer(cfg.server_cert).__enter__()
                    except OSError as exc:  # its socket, its certificate (ssl.SSLError)
                        down[cfg.server_cert] = f"{QD.SERVER} did not start: {exc}"
                if cfg.server_cert in down:
                    doc.series += QD.failed_config(cfg, build, down[cfg.server_cert], opts.warmup)
                else:
                    doc.series += QD.measure_config(
                        cfg, opts.n, opts.warmup, build, servers[cfg.server_cert], timed=opts.timing
                    )
                run.save(doc)
                progress("done", cfg, i, len(items), None)
        finally:
            for srv in servers.values():
                srv.__exit__(None, None, None)

    return Phase(configs, lambda c: f"ngtcp2 QUIC {c.group} {c.mode} ({c.server_cert})", runner), params


def _names(value: Names) -> list[str]:
    return [v.strip().lower() for v in (value.split(",") if isinstance(value, str) else value) if v.strip()]


def edhoc_phase(opts: HandshakeOptions, modes: list[str], dev: Core) -> tuple[Phase, dict[str, Any]]:
    """`--tls edhoc`: the EDHOC + OSCORE initiator (C) per stack whose crypto it runs on, build
    configuration and variant, checked and built before anything runs (measure/edhoc_device.py)."""

    _check_counts(opts.n, opts.warmup)
    stacks = E.check_stacks(opts.stack, explicit=opts.stack is not DEFAULTS["stack"])
    variants = E.check_variants(modes)
    cfgs = D.check_build_configs(opts.config, stacks, dev) if opts.config else {s: [None] for s in stacks}
    builds = {(s, c): E.build(E.target_for(dev, s), c, s) for s in stacks for c in cfgs[s]}
    items = [(v, k) for k in builds for v in variants]
    params = {
        "device": dev.name,
        "stacks": stacks,
        "tls": "edhoc",
        "modes": ",".join(variants),
        "n": opts.n,
        "warmup": opts.warmup,
        "timing": opts.timing,
        "implementation": E.IMPLEMENTATION,
        "configs": {f"{s}:{b.lib.config}": b.lib.config_note for (s, _), b in builds.items()},
        "libraries": {s if c is None else f"{s}[{c}]": b.library for (s, c), b in builds.items()},
    }

    def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
        for i, (variant, key) in enumerate(items):
            progress("start", (variant, key), i, len(items), None)
            doc.series.extend(E.measure(dev, variant, opts.n, opts.warmup, builds[key], timed=opts.timing))
            run.save(doc)
            progress("done", (variant, key), i, len(items), None)

    return Phase(items, lambda it: f"EDHOC {it[0]} on {it[1][0]}{f' [{it[1][1]}]' if it[1][1] else ''}", runner), params


def run_handshakes(opts: HandshakeOptions, output: Output) -> Result:
    limit = check_handshakes(opts, opts.max_hours)  # before anything is built or run
    dev = resolve_core(opts.device)  # once: the phases and the measurements below take the core
    tls = _names(opts.tls)
    if "edhoc" not in tls:
        phase, params = handshake_phase(opts, dev)
        return measure_and_write("device", {**params, **limit}, [phase], output)
    # EDHOC's variants (m3-kid, ...) and TLS's modes (full, resumed, psk) share --mode; "full" is both
    modes = _names(opts.mode)
    e_modes = [m for m in modes if m == "full" or (m.startswith("m") and "-" in m)]
    t_modes = [m for m in modes if not (m.startswith("m") and "-" in m)] or ["full"]
    phases, params = [], {}
    others = [t for t in tls if t != "edhoc"]
    if not others:  # EDHOC alone: every --mode must be one of its variants
        e_modes = modes
    if others:
        phase, params = handshake_phase(replace(opts, tls=others, mode=t_modes), dev)
        phases.append(phase)
    phase, e_params = edhoc_phase(opts, e_modes, dev)
    return measure_and_write(
        "device", {**({**params, "edhoc": e_params} if params else e_params), **limit}, [*phases, phase], output
    )


def run_crypto(
    device: str,
    stacks: Names,
    ops: list[str] | None,
    n: int,
    output: Output,
    config: Names | None = None,
    timing: bool = True,
    max_hours: float | None = None,
) -> Result:
    _check_counts(n, 0)
    limit = check_crypto(stacks, ops, n, config, max_hours)  # before anything is built or run
    dev = resolve_core(device)  # once: the measurements below take the core
    stack_l = D.check_stacks(stacks, dev)
    target = D.target_for(dev)
    per_stack = D.check_build_configs(config, stack_l, dev)
    items = [(s, c) for s in stack_l for c in per_stack[s]]
    builds = {(s, c): ensure_built(s, target, c) for s, c in items}
    # every operation routed to the builds that count it, before anything runs (an operation no
    # stack counts is an error naming each stack's operations; a stack with none of them runs nothing)
    routed = D.route_ops(ops, builds) if ops is not None else {k: None for k in items}
    skipped = [k for k in items if routed[k] == []]
    if skipped:
        reporter().note(
            "note: "
            + ", ".join(D.stack_tag(s, builds[(s, c)]) for s, c in skipped)
            + " counts none of the operations asked; nothing runs there"
        )
        items = [k for k in items if k not in skipped]
    params = {
        "device": dev.name,
        "stacks": stack_l,
        "ops": None if ops is None else _text(ops),
        "n": n,
        "timing": timing,
        "configs": {f"{s}:{b.config}": b.config_note for (s, _), b in builds.items()},
        **limit,
    }

    def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
        for i, (s, c) in enumerate(items):
            progress("start", s, i, len(items), None)
            doc.series += D.measure_crypto(dev, s, routed[(s, c)], n, builds[(s, c)], timed=timing)
            run.save(doc)
            progress("done", s, i, len(items), None)

    return measure_and_write(
        "device",
        params,
        [Phase(items, lambda sc: f"{sc[0]}{f' [{sc[1]}]' if sc[1] else ''} primitives", runner)],
        output,
    )


def run_user_code(
    device: str,
    sources: Names,
    entry: str | None,
    output: Output,
    harness: str | None = None,
    name: str | None = None,
    timing: bool = True,
    calls: int | None = None,
    max_hours: float | None = None,
) -> Result:
    """The user's own function (`device crypto --source FILES --entry FUNCTION`): built and linked with
    the harness before anything runs (code that does not build is bad input, exit 2), then counted as
    one device_crypto series (a fault or a run past the time limit: its failure, exit 1)."""

    limit = check_user_code(calls, max_hours)
    dev = resolve_core(device)  # once: the build and the measurement below take the core
    device = dev.name
    target = D.target_for(dev)
    srcs = U.check_sources(sources)
    fn = U.check_entry(entry)
    op = U.check_name(name, fn)
    h = U.load_harness(harness)
    if calls is not None:  # --n: the counted calls, over the harness's run.calls
        h.calls = calls
    run_cpu = dev.qemu_cpu if target == "armhf" else "max"
    params = {
        "device": device,
        "sources": [s.name for s in srcs],
        "entry": fn,
        "name": op,
        "harness": harness,
        "calls": h.calls,
        "warmup": h.warmup,
        "arguments": h.describe(),
        "timing": timing,
        **limit,
    }
    with tempfile.TemporaryDirectory(prefix="secperf-user-") as tmp:
        b = U.build_user(srcs, fn, target, h, Path(tmp))
        params["library"] = b.library

        def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
            progress("start", op, 0, 1, None)
            doc.series.append(U.measure_user(device, dev, b, fn, op, h, Path(tmp), timed=timing, run_cpu=run_cpu))
            run.save(doc)
            progress("done", op, 0, 1, None)

        return measure_and_write(
            "device", params, [Phase([op], lambda o: f"{o} (user code on {device})", runner)], output
        )


def build(stacks: Names, targets: Names = BUILD_DEFAULTS["target"], config: Names | None = None) -> None:
    """Build the guest clients and the counting plugin now; each build's description is said as it
    is done (the reporter's lines: stdout in the CLI)."""
    say = reporter().line

    tl = D.split_values(targets, "target", tuple(TARGETS))
    names = None if config is None else D.split_values(config, "config", tuple(build_configs()))
    stack_l = [s.strip().lower() for s in (stacks.split(",") if isinstance(stacks, str) else stacks) if s.strip()]
    if "ngtcp2" in stack_l:  # the QUIC client (armhf only, Debian's packages as they are)
        b = QD.ensure_built()
        say(
            f"ngtcp2 [armhf, debian]: {b.library}\n  client  {b.client}\n  plugin  {b.plugin}\n  qemu    {b.qemu_version}"
        )
        stack_l.remove("ngtcp2")
        if not stack_l:
            return
        stacks = stack_l
    each_config: list[str | None] = [*names] if names else [None]  # None: the stack's default configuration
    for t in tl:
        for s in D.check_stacks(stacks):
            if t not in STACK_TARGETS.get(s, (t,)):
                say(f"{s} [{t}]: not built (built for {', '.join(STACK_TARGETS[s])} only)")
                continue
            for c in each_config:
                if c is not None and c not in configs_for(s, t):
                    say(f"{s} [{t}, {c}]: not built (its configurations there: {', '.join(configs_for(s, t))})")
                    continue
                _build_one(s, t, c)


def _build_one(stack: str, target: str, config: str | None) -> None:
    b = ensure_built(stack, target, config)
    say = reporter().line
    fp = b.footprint or {}
    size = (
        (
            f"\n  library {fp['text']:,} B text, {fp['rodata']:,} B rodata, {fp['data']:,} B data, "
            f"{fp['bss']:,} B bss (linked)"
        )
        if fp
        else ""
    )
    say(
        f"{stack} [{target}, {b.config}]: {b.library}\n  build   {b.build_note}\n  config  {b.config_note}\n"
        f"  client  {b.client}\n  plugin  {b.plugin} ({b.plugin_header})\n  qemu    {b.qemu_version}"
        f"{' -cpu ' + b.run_cpu if b.run_cpu else ''}\n  offers  {b.offers}{size}"
    )


def _short(text: str, width: int) -> str:
    """A description cut at a word to `width` (the whole one: `device show NAME`)."""
    if len(text) <= width:
        return text
    return text[: width - 1].rsplit(" ", 1)[0].rstrip(",;(") + "…"


def list_devices(verbose: bool = False) -> str:
    """The core profiles, one line each (80 columns), and the stacks; with `verbose`, every core's
    timing model, memory, bands and sources and the build configurations (one core: show_device)."""
    if verbose:
        return show_device(None)

    names = list(cores())
    w = max(len(n) for n in names + ["core profile"])
    say = Lines()
    say(f"{'core profile':{w}} {'MHz':>4} {'WS':>2} {'':1} description")
    for name in names:
        c = core(name)
        ws = "–" if c.flash_wait_states is None else str(c.flash_wait_states)
        say(f"{name:{w}} {c.clock_mhz:>4g} {ws:>2} {c.profile:1} {_short(c.description, 80 - w - 11)}")
    say("WS: flash wait states; A: runs Debian's armhf builds, M: a Cortex-M build")
    for line in textwrap.wrap(f"stacks: {', '.join(STACKS)}", 80, subsequent_indent="  "):
        say(line)
    say("one core in full: secperf device show NAME; every core and build: --verbose")
    return say.text()


def show_device(name: str | None) -> str:
    """The core profiles (or the one named) with their timing model, memory, bands and sources; the
    stacks and their build configurations after the whole list."""
    say = Lines()

    for shown in cores() if name is None else [name]:
        c = core(shown)
        est = "estimate" if c.cpi_estimate else "measured"
        ws = "" if c.flash_wait_states is None else f", {c.flash_wait_states} flash wait states"
        say(
            f"{shown:18} {c.description}\n{'':18} {c.clock_mhz:g} MHz{ws}; qemu -cpu {c.qemu_cpu}; profile {c.profile}; "
            f"old CPI range {c.cpi[0]:g}-{c.cpi[1]:g} ({est}, kept for comparison)"
        )
        if c.timing is not None:
            t = c.timing
            banded = ", ".join(f"{k} {lo:g}/{mid:g}/{hi:g}" for k, (lo, mid, hi) in t.costs.items() if lo != hi)
            mem = ", ".join(f"{k} {v}" for k, v in t.geometry.items() if v)
            say(f"{'':18}   timing model {t.model}: {t.sources['model'][:110]}...")
            say(f"{'':18}   memory: {mem or 'no cache simulated'}; {t.sources['memory'][:90]}...")
            say(f"{'':18}   band (low/point/high): {banded or 'none (every parameter exact)'}")
        for what, src in c.sources.items():
            say(f"{'':18}   {what}: {src}")
    if name is None:
        say(
            f"stacks: {', '.join(STACKS)} (Debian's armhf builds on profile A cores; builds from Debian's "
            f"source packages for Cortex-M4 on the cortex-m4-* profiles)"
        )
        _list_configs(say)
    return say.text()


def _list_configs(say: Lines) -> None:
    """Build configurations per stack and target, with the cores each target runs on."""

    on: dict[str, list[str]] = {}
    for name in cores():
        try:
            on.setdefault(D.target_for(core(name)), []).append(name)
        except InputError:
            pass
    say("\nbuild configurations (--config NAME[,NAME]; src/secperf/data/device_builds.toml):")
    for s in STACKS:
        rows: dict[tuple[tuple[str, ...], str], list[str]] = {}
        for t in TARGETS:
            if t in STACK_TARGETS.get(s, (t,)) and on.get(t):
                rows.setdefault((tuple(configs_for(s, t)), default_config(s, t)), []).append(t)
        for (names, default), ts in rows.items():
            cores_l = [c for t in ts for c in on[t]]
            say(
                f"  {s:10} {', '.join(f'{n} (default)' if n == default else n for n in names)}\n"
                f"  {'':10}   targets {', '.join(ts)}: {', '.join(cores_l)}"
            )
    for n, c in build_configs().items():
        say(f"  {n:17} {c.description}\n  {'':17} source: {c.source}")
