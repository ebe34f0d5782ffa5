"""`secperf device`: emulated-device handshakes and primitives into a Result of kind `device`
(phases, progress, run store, report through app/runner.py), plus the build and list helpers."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from ..core.errors import InputError
from .runner import Output, Phase, measure_and_write

DEFAULTS = {"device": "cortex-a9-400", "stack": "wolfssl", "tls": "1.3", "group": "x25519,p-256",
            "suite": "aes128gcm,chacha20", "mode": "full", "server_cert": "rsa-2048", "client_cert": "none", "n": 5,
            "warmup": 2}


@dataclass
class HandshakeOptions:
    device: str = DEFAULTS["device"]
    stack: str = DEFAULTS["stack"]
    tls: str = DEFAULTS["tls"]
    group: str = DEFAULTS["group"]
    suite: str = DEFAULTS["suite"]
    mode: str = DEFAULTS["mode"]
    server_cert: str = DEFAULTS["server_cert"]
    client_cert: str = DEFAULTS["client_cert"]
    n: int = DEFAULTS["n"]
    warmup: int = DEFAULTS["warmup"]


def _check_counts(n: int, warmup: int) -> None:
    if n < 1 or n > 1000:
        raise InputError(f"--n {n}: give 1..1000 warm handshakes per configuration")
    if warmup < 0 or warmup > 100:
        raise InputError(f"--warmup {warmup}: give 0..100 warm-up handshakes")


def handshake_phase(opts: HandshakeOptions) -> tuple[Phase, dict]:
    """The configurations to measure, checked (device, stack, what the build offers) before anything
    runs, as one phase; and the parameters to record."""
    from ..measure import device as D
    from ..measure.device_build import ensure_built
    _check_counts(opts.n, opts.warmup)
    configs = D.plan(opts.device, opts.stack, opts.tls, opts.group, opts.suite, opts.mode, opts.server_cert,
                     opts.client_cert)
    target = D.target_for(D.check_device(opts.device))
    builds = {s: ensure_built(s, target) for s in dict.fromkeys(c.stack for c in configs)}
    for c in configs:  # every combination checked before anything runs
        D.check_offers(c, builds[c.stack])
    params = {"device": opts.device, "stacks": list(builds), "tls": opts.tls, "groups": opts.group,
              "suites": opts.suite, "modes": opts.mode, "server_cert": opts.server_cert,
              "client_cert": opts.client_cert, "n": opts.n,
              "warmup": opts.warmup, "libraries": {s: b.library for s, b in builds.items()}}

    def runner(items, doc, run, progress):
        servers: dict[tuple, D.Server] = {}
        try:
            for i, cfg in enumerate(items):
                progress("start", cfg, i, len(items), None)
                sk = (cfg.server_cert, cfg.client_cert, "dtls" if cfg.dtls else "tls")
                if sk not in servers:
                    servers[sk] = D.Server(*sk).__enter__()
                for s in D.measure_config(cfg, opts.n, opts.warmup, builds[cfg.stack], servers[sk]):
                    doc["series"].append(s)
                run.save(doc)
                progress("done", cfg, i, len(items), None)
        finally:
            for srv in servers.values():
                srv.__exit__(None, None, None)

    return Phase(configs, lambda c: f"{c.stack} TLS {c.tls} {c.group} {c.suite} {c.mode}", runner), params


def run_handshakes(opts: HandshakeOptions, output: Output) -> int:
    phase, params = handshake_phase(opts)
    return measure_and_write("device", params, [phase], output)


def run_crypto(device: str, stacks: str, ops: str | None, n: int, output: Output) -> int:
    from ..measure import device as D
    from ..measure.device_build import ensure_built
    _check_counts(n, 0)
    dev = D.check_device(device)
    stack_l = D.check_stacks(stacks, dev)
    target = D.target_for(dev)
    builds = {s: ensure_built(s, target) for s in stack_l}
    if ops is not None:  # every operation checked against what the builds count, before anything runs
        for s, b in builds.items():
            D.check_ops(ops, b, s)
    params = {"device": device, "stacks": stack_l, "ops": ops, "n": n}

    def runner(items, doc, run, progress):
        for i, s in enumerate(items):
            progress("start", s, i, len(items), None)
            doc["series"] += D.measure_crypto(device, s, ops.split(",") if ops else None, n, builds[s])
            run.save(doc)
            progress("done", s, i, len(items), None)

    return measure_and_write("device", params, [Phase(stack_l, lambda s: f"{s} primitives", runner)], output)


def build(stacks: str, targets: str = "armhf,cortex-m4") -> int:
    from ..measure import device as D
    from ..measure.device_build import STACK_TARGETS, TARGETS, ensure_built
    tl = D._split(targets, "target", tuple(TARGETS))
    for t in tl:
        for s in D.check_stacks(stacks):
            if t not in STACK_TARGETS.get(s, (t,)):
                print(f"{s} [{t}]: not built (built for {', '.join(STACK_TARGETS[s])} only)")
                continue
            b = ensure_built(s, t)
            fp = b.footprint or {}
            size = (f"\n  library {fp['text']:,} B text, {fp['rodata']:,} B rodata, {fp['data']:,} B data, "
                    f"{fp['bss']:,} B bss (linked)") if fp else ""
            print(f"{s} [{t}]: {b.library}\n  build   {b.build_note}\n  client  {b.client}\n"
                  f"  plugin  {b.plugin} ({b.plugin_header})\n  qemu    {b.qemu_version}"
                  f"{' -cpu ' + b.run_cpu if b.run_cpu else ''}\n  offers  {b.offers}{size}")
    return 0


def list_devices() -> int:
    from ..spec.devices import core, cores
    from ..measure.device_build import STACKS
    for name in cores():
        c = core(name)
        est = "estimate" if c.cpi_estimate else "measured"
        ws = "" if c.flash_wait_states is None else f", {c.flash_wait_states} flash wait states"
        print(f"{name:18} {c.description}\n{'':18} {c.clock_mhz:g} MHz, CPI {c.cpi[0]:g}-{c.cpi[1]:g} ({est}){ws}; "
              f"qemu -cpu {c.qemu_cpu}; profile {c.profile}")
        for what, src in c.sources.items():
            print(f"{'':18}   {what}: {src}")
    print(f"stacks: {', '.join(STACKS)} (Debian's armhf builds on profile A cores; builds from Debian's "
          f"source packages for Cortex-M4 on the cortex-m4-* profiles)", file=sys.stdout)
    return 0
