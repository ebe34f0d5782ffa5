"""Devices we do not have: real embedded TLS stacks compiled for ARM, run under qemu-arm (Linux
user mode) with every executed instruction counted by a TCG plugin, against a native
`openssl s_server` on loopback (started and stopped by PID).

What one sample is: one handshake of the guest client (native/device/client.c). The client marks
the start and end of the library's handshake call and every record it hands to or takes from the
library; the plugin records the instruction count at each mark (device_attrib.py has the
attribution rule). Counted: user-mode instructions of the client process (TLS library, libc and
our client); the kernel's network work and time blocked waiting for the server are not
instructions of the guest and cost nothing. Counts are deterministic (no timing enters them), so
few samples suffice; the first handshake in a process is "cold" (lazy initialisation, and
wolfSSL's FP_ECC tables are built on the second use of a point), warm rows come after --warmup
handshakes that are counted but not summarised.

Milliseconds are DERIVED, never measured: instructions x the core's CPI range / its clock
(inputs/devices.py, data/devices.toml), always shown as a range and labelled.

Beside this module: what a row is asked, checked (device_plan.py), the host peer (device_server.py;
DTLS 1.3 and connection IDs: device_dtls.py) and single primitives (device_crypto.py).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..core import result as R
from ..core.errors import InputError, ResultError
from ..core.result_schema import DeviceDerived, DeviceTime, Series, problem
from ..inputs.core_profiles import Core
from ..lab import registry
from ..lab.services import ServiceError
from . import device_attrib as A
from . import device_dtls as DT
from . import device_timing as T
from .device_build import Build, ensure_built
from .device_crypto import check_ops, measure_crypto, route_ops
from .device_plan import (
    CLIENT_CERTS,
    CPU_TARGETS,
    GROUPS,
    MODES,
    RUN_TIMEOUT_S,
    SERVER_CERTS,
    SUITES,
    TLS_VERSIONS,
    Config,
    build_labels,
    check_build_configs,
    check_stacks,
    qemu_cpu,
    split_values,
    stack_tag,
    target_for,
)
from .device_server import Server
from .device_timing import GuestTimeout  # defined beside the timing kernels' run, which raises it too

# what a row is asked (measure/device_plan.py), its host peer (device_server.py) and the primitives
# (device_crypto.py) stay importable from here, as callers import them
__all__ = [
    "CLIENT_CERTS",
    "CPU_TARGETS",
    "GROUPS",
    "MODES",
    "RUN_TIMEOUT_S",
    "SERVER_CERTS",
    "SUITES",
    "TIMER",
    "TLS_VERSIONS",
    "Config",
    "Server",
    "build_labels",
    "check_build_configs",
    "check_offers",
    "check_ops",
    "check_stacks",
    "make_series",
    "measure_config",
    "measure_crypto",
    "plan",
    "qemu_cpu",
    "route_ops",
    "run_client",
    "split_values",
    "stack_tag",
    "target_for",
]

TIMER = {
    "name": "guest instructions per handshake",
    "start": "client about to call the library's handshake function (marker HS_BEGIN)",
    "end": "the handshake function returned (marker HS_END)",
    "unit": "instructions (user mode, client process, counted under QEMU)",
}


def plan(
    dev: Core,
    stacks: str | Iterable[str],
    tls: str | Iterable[str],
    groups: str | Iterable[str],
    suites: str | Iterable[str],
    modes: str | Iterable[str] = "full",
    server_certs: str | Iterable[str] = "rsa-2048",
    client_certs: str | Iterable[str] = "none",
    build_configs: str | Iterable[str] | None = None,
) -> list[Config]:
    """The configurations to run, with every name checked (InputError names what is known).
    build_configs: library build configurations (comma list; None: each stack's default)."""
    stack_l = check_stacks(stacks, dev)
    bconf = check_build_configs(build_configs, stack_l, dev)
    tls_l = [TLS_VERSIONS.get(t, t) for t in split_values(tls, "tls", tuple(TLS_VERSIONS))]
    group_l = split_values(
        groups, "group", GROUPS, {"p256": "p-256", "secp256r1": "p-256", "p384": "p-384", "secp384r1": "p-384"}
    )
    suite_l = split_values(suites, "suite", tuple(SUITES), SUITES)
    mode_l = split_values(modes, "mode", MODES)
    certs = split_values(server_certs, "server-cert", SERVER_CERTS)
    ccerts = split_values(client_certs, "client-cert", CLIENT_CERTS)
    DT.check_plan(stack_l, tls_l, mode_l)  # DTLS versions per stack, CID only with DTLS, no TLS 1.2 PSK
    target_for(dev)
    return [
        Config(dev, s, t, g, su, m, c, cc, b)
        for s in stack_l
        for b in bconf[s]
        for t in tls_l
        for g in group_l
        for su in suite_l
        for m in mode_l
        for c in certs
        for cc in ccerts
        # DTLS 1.2's psk row is a plain PSK suite with no key exchange group: one row, not one per group
        if not (t == "dtls1.2" and m == "psk" and g != group_l[0])
    ]


def check_offers(cfg: Config, build: Build) -> None:
    """InputError when the build cannot do cfg, naming what it offers."""
    off = build.offers
    what = f"{cfg.stack} ({build.library}, {build.target} build)"
    if not off.get("tls"):  # a primitives-only build (pqclean)
        raise InputError(
            f"--stack {cfg.stack}: {build.library} has no TLS; count its primitives with "
            f"`secperf device crypto --stack {cfg.stack}`"
        )
    if cfg.tls not in off.get("tls", ()):
        raise InputError(
            f"--tls {cfg.tls}: {what} offers TLS {', '.join(off.get('tls', ()))} only"
            + (
                "; Mbed TLS 2.28 has no TLS 1.3: use --tls 1.2, or --stack mbedtls3 (Mbed TLS 3.6, TLS 1.3)"
                if cfg.stack == "mbedtls" and not cfg.dtls
                else ""
            )
            + DT.lacking(cfg, build)
        )
    if cfg.group not in off.get("groups", ()):
        raise InputError(f"--group {cfg.group}: {what} offers {', '.join(off.get('groups', ()))}")
    if cfg.suite not in off.get("suites", ()):
        raise InputError(f"--suite {cfg.suite}: {what} offers {', '.join(off.get('suites', ()))}")
    if cfg.dtls:
        DT.check_offers(cfg, off, what)  # the build's DTLS handshakes (dtls_modes), the peer's
    elif cfg.mode not in off.get("modes", ()):
        raise InputError(f"--mode {cfg.mode}: {what} offers {', '.join(off.get('modes', ()))}")
    if cfg.client_cert != "none" and not off.get("mtls"):
        raise InputError(f"--client-cert {cfg.client_cert}: {what} has no client certificates")


def run_client(
    build: Build,
    dev: Core,
    cfg: Config,
    port: int,
    ca: Path,
    n: int,
    *,
    marks: bool = True,
    app: bool = True,
    work: Path | None = None,
    server: Server | DT.PairServer | None = None,
    timed: bool = True,
) -> tuple[list[dict[str, Any]], list[A.Event], int]:
    """One guest process making n connections: its JSON lines, the plugin's events, total count.
    With `timed` (and a core with a timing model) every event also carries the model's cycles."""
    own_tmp = work is None
    tmp = Path(work or tempfile.mkdtemp(prefix="secperf-device-"))
    try:
        return _run_client(build, dev, cfg, port, ca, n, marks=marks, app=app, tmp=tmp, server=server, timed=timed)
    finally:
        if own_tmp:  # the events and the timing parameters; nothing of a run stays in the temporary directory
            shutil.rmtree(tmp, ignore_errors=True)


def _run_client(
    build: Build,
    dev: Core,
    cfg: Config,
    port: int,
    ca: Path,
    n: int,
    *,
    marks: bool,
    app: bool,
    tmp: Path,
    server: Server | DT.PairServer | None,
    timed: bool,
) -> tuple[list[dict[str, Any]], list[A.Event], int]:
    ev = tmp / f"events-{abs(hash((cfg, marks, n))) % 10**8}.txt"
    argv = [
        build.qemu,
        "-cpu",
        qemu_cpu(dev, build),
        "-plugin",
        f"{build.plugin},out={ev},watch={build.watch}{T.plugin_arg(dev, build.client, tmp, timed)}",
        str(build.client),
        "--port",
        str(port),
        "--ca",
        str(ca),
        "--tls",
        cfg.tls[-3:].replace(".", ""),
        "--group",
        cfg.group,
        "--suite",
        cfg.suite,
        "--n",
        str(n),
    ]
    if DT.base_mode(cfg.mode) == "resumed":
        argv.append("--resume")
    if cfg.dtls:  # over UDP, with a CID for -cid; s_server answers no DTLS application exchange: none is made
        argv += (
            ["--dtls"] + (["--cid"] if cfg.mode in DT.CID_MODES else []) + ([] if DT.needs_pair(cfg) else ["--no-app"])
        )
    if cfg.mode == "psk" and server is not None:
        argv += ["--psk-file", str(server.psk_file)]
    if cfg.client_cert != "none" and server is not None and server.client is not None:
        argv += ["--cert", str(server.client.cert), "--key", str(server.client.key)]
    if not marks:
        argv.append("--no-record-marks")
    if not app:
        argv.append("--no-app")
    try:
        # listed in the run registry, under the parent-death signal: no emulator outlives a killed secperf
        p = registry.run(argv, "qemu device emulator", capture_output=True, text=True, timeout=RUN_TIMEOUT_S + 5 * n)
    except subprocess.TimeoutExpired as exc:  # registry.ChildTimeout: the emulator is stopped already
        raise GuestTimeout(
            f"the {cfg.stack} guest client did not finish {n} handshakes within {exc.timeout:g} s"
        ) from None
    conns = A.guest_connections(p.stdout, p.stderr, p.returncode, cfg.stack)
    total, events = A.read_events(ev)
    ev.unlink(missing_ok=True)
    return conns, events, total


def _timed_handshakes(
    events: list[A.Event], conns: list[dict[str, Any]], cfg: Config, mtls: bool
) -> dict[int, dict[str, Any]]:
    """Handshake index -> the timing model's cycles (low, point, high) of the whole handshake and of
    each message, attributed by the same rule as the instruction counts."""
    if not events or events[0].timed is None:
        return {}
    sets = [
        A.handshakes(
            A.in_cycles(events, k), conns, cfg.tls, mtls, psk=cfg.mode == "psk", ccs_message=cfg.stack == "openssl"
        )
        for k in range(3)
    ]
    out: dict[int, dict[str, Any]] = {}
    for lo, mid, hi in zip(*sets):
        out[mid.index] = {
            "cycles": (lo.instructions, mid.instructions, hi.instructions),
            "messages": [
                (a["instructions"], b["instructions"], c["instructions"])
                for a, b, c in zip(lo.messages, mid.messages, hi.messages)
            ],
            "app": (lo.app_instructions, mid.app_instructions, hi.app_instructions),
        }
    return out


def _labels(cfg: Config, dev: Core, build: Build, phase: str) -> dict[str, Any]:
    return {
        "device": cfg.device,
        "stack": cfg.stack,
        "library": build.library,
        "tls": cfg.tls,
        "group": cfg.group,
        "suite": cfg.suite,
        "mode": cfg.mode,
        "server_cert": cfg.server_cert,
        "client_cert": cfg.client_cert,
        "phase": phase,
        "qemu_cpu": qemu_cpu(dev, build),
        "core_profile": dev.profile,
        "build_target": build.target,
        "build": build.build_note,
        **build_labels(build),
        "server": "openssl s_server (host, loopback)",
    }


def _message_rows(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Median per message over the samples, in the order messages first appear."""
    order: dict[tuple[str, str], list[int]] = {}
    for s in samples:
        seen: dict[tuple[str, str], int] = {}
        for m in s["messages"]:
            k = (m["dir"], m["message"])
            seen[k] = seen.get(k, 0) + m["instructions"]
        for k, v in seen.items():
            order.setdefault(k, []).append(v)
    return [
        {"dir": d, "message": m, "instructions": int(statistics.median(v)), "n": len(v)} for (d, m), v in order.items()
    ]


def _timed_rows(samples: list[dict[str, Any]]) -> dict[tuple[str, str], T.Cycles3]:
    """(dir, message) -> median cycles (low, point, high) over the samples that carry cycles."""
    acc: dict[tuple[str, str], list[tuple[float, ...]]] = {}
    for s in samples:
        seen: dict[tuple[str, str], list[float]] = {}
        for m in s["messages"]:
            if "cycles" in m:
                v = seen.setdefault((m["dir"], m["message"]), [0.0, 0.0, 0.0])
                for k in range(3):
                    v[k] += m["cycles"][k]
        for key, v in seen.items():
            acc.setdefault(key, []).append(tuple(v))
    return {key: T.median3(vals) for key, vals in acc.items()}


def _device_time(figure: dict[str, Any]) -> DeviceTime:
    """The timing model's figure as the series' typed time (a malformed one is a ResultError, as any
    field set on a series)."""
    try:
        return DeviceTime.model_validate(figure)
    except ValidationError as exc:
        raise ResultError(f"device series field derived.time: {problem(exc)}") from None


def make_series(
    cfg: Config,
    dev: Core,
    build: Build,
    phase: str,
    hss: list[A.Handshake],
    conns: dict[int, dict[str, Any]],
    failures: list[str],
    timed: dict[int, dict[str, Any]] | None = None,
) -> Series:
    s = R.new_series(
        f"device/{cfg.device}/{cfg.key}/{phase}", kind="device", labels=_labels(cfg, dev, build, phase), timer=TIMER
    )
    for reason in failures:
        R.add_failure(s, reason)
    for h in hss:
        c = conns.get(h.index, {})
        t = (timed or {}).get(h.index)
        messages = [dict(m) for m in h.messages]
        if t and len(t["messages"]) == len(messages):
            for m, cyc in zip(messages, t["messages"]):
                m["cycles"] = list(cyc)
        s.samples.append(
            {
                "handshake": h.index,
                "instructions": h.instructions,
                "parts_sum": h.parts_sum,
                **({"cycles": list(t["cycles"])} if t else {}),
                "messages": messages,
                "app_instructions": h.app_instructions,
                "records_in": h.records_in,
                "records_out": h.records_out,
                "messages_per_record": h.messages_per_record,
                "version": c.get("version"),
                "negotiated_suite": c.get("suite"),
                "negotiated_group": c.get("group"),
                "resumed": bool(c.get("resumed")),
                "stack_bytes": c.get("stack_bytes"),
                **({"cid_bytes": c.get("cid_bytes", 0)} if cfg.dtls else {}),
            }
        )
    good = [x for x in s.samples]
    if good:
        ins = [x["instructions"] for x in good]
        med = statistics.median(ins)
        worst = max(abs(x["parts_sum"] - x["instructions"]) / x["instructions"] for x in good)
        rows = _message_rows(good)
        trows = _timed_rows(good)
        for r in rows:
            r.update(T.cpi_ms(dev, r["instructions"]))
            if (r["dir"], r["message"]) in trows:
                r["time"] = T.figure(trows[(r["dir"], r["message"])], dev)
        s.derived = DeviceDerived(
            instructions_median=med,
            instructions_min=min(ins),
            instructions_max=max(ins),
            spread=(max(ins) - min(ins)) / med if med else 0.0,
            parts_sum_max_error=worst,
            messages=rows,
            # worst-case stack of the handshake call, measured by painting (native/device/client.c)
            stack_bytes_max=max((x["stack_bytes"] for x in good if x.get("stack_bytes")), default=None),
            app_instructions_median=statistics.median(
                [x["app_instructions"] for x in good if x["app_instructions"] is not None] or [0]
            ),
            derived_ms={
                **T.cpi_ms(dev, med),
                "clock_mhz": dev.clock_mhz,
                "cpi": list(dev.cpi),
                "cpi_estimate": dev.cpi_estimate,
                "rule": "instructions x CPI / clock: DERIVED from the core profile's CPI range (the earlier estimate, kept for comparison)",
            },
        )
        cyc = [x["cycles"] for x in good if "cycles" in x]
        if cyc and dev.timing is not None:
            s.derived_as(DeviceDerived).time = _device_time({**T.figure(T.median3(cyc), dev), **T.model_note(dev)})
        s.status = "partial" if s.failures else "ok"
    else:
        s.status = "failed"
        if not s.failures:
            R.add_failure(s, "no handshake completed")
    return s


def measure_config(
    cfg: Config, n: int, warmup: int, build: Build | None = None, server: Server | None = None, timed: bool = True
) -> list[Series]:
    """Cold and warm series of one configuration: one guest process with 1 + warmup + n handshakes."""
    dev = cfg.core
    build = build or ensure_built(cfg.stack, target_for(dev), cfg.build_config)
    check_offers(cfg, build)
    prime = 1 if DT.base_mode(cfg.mode) == "resumed" else 0  # a full handshake that obtains the ticket
    total_n = prime + 1 + warmup + n
    own = server is None or DT.needs_pair(cfg)  # DTLS 1.3 and CID rows: a wolfSSL peer of their own
    srv = (
        DT.PairServer(cfg)
        if DT.needs_pair(cfg)
        else server
        or Server(cfg.server_cert, cfg.client_cert, "dtls" if cfg.dtls else "tls", cfg.dtls and cfg.mode == "psk")
    )
    if own:
        try:
            srv.__enter__()
        except (DT.DtlsPeerError, ServiceError) as exc:  # a peer that does not start fails this configuration only
            srv.__exit__(None, None, None)
            return failed_config(cfg, build, str(exc), srv, warmup)
    stopped: list[str] = []
    try:
        conns, events, _ = run_client(build, dev, cfg, srv.port, srv.certs.ca, total_n, server=srv, timed=timed)
    except GuestTimeout as exc:  # a failed configuration with its reason; the other configurations go on
        conns, events, stopped = [], [], [str(exc)]
    finally:
        # a peer that died during the row is its failure too (its exit status and its own words)
        gone = srv.died() if isinstance(srv, DT.PairServer) else None
        stopped += [gone] if gone else []
        if own:
            srv.__exit__(None, None, None)
    by = {c["conn"]: c for c in conns}
    mtls = cfg.client_cert != "none"
    hss = A.handshakes(events, conns, cfg.tls, mtls, psk=cfg.mode == "psk", ccs_message=cfg.stack == "openssl")
    failures = stopped + [
        f"handshake {c['conn']}: {c.get('stage')}: {c.get('error')}" for c in conns if not c.get("ok")
    ]
    if prime:
        failures += [
            f"handshake {h.index}: the session was not resumed"
            for h in hss
            if h.index >= prime and not by.get(h.index, {}).get("resumed")
        ]
    failures += DT.cid_failures(cfg, conns)
    # a PSK handshake authenticates by the key: a server Certificate means the PSK was refused
    psk_refused = {h.index for h in hss if cfg.mode == "psk" and DT.psk_refused(cfg, h, by.get(h.index, {}))}
    failures += [f"handshake {i}: the server refused the PSK (it chose certificates)" for i in sorted(psk_refused)]
    if mtls:
        failures += [
            f"handshake {h.index}: no client Certificate was sent"
            for h in hss
            if h.ok and not any(m["dir"] == "sent" and m["message"] == "Certificate" for m in h.messages)
        ]
    ok = [
        h
        for h in hss
        if h.ok
        and by.get(h.index, {}).get("ok")
        and h.index not in psk_refused
        and (not prime or by[h.index].get("resumed"))
        and DT.cid_ok(cfg, by[h.index])
    ]
    cold = [h for h in ok if h.index == prime]
    warm = [h for h in ok if h.index >= prime + 1 + warmup]
    timings = _timed_handshakes(events, conns, cfg, mtls)
    out = [
        make_series(cfg, dev, build, "cold", cold, by, failures if not cold else [], timings),
        make_series(cfg, dev, build, "warm", warm, by, failures, timings),
    ]
    return _finish(out, cfg, build, srv, warmup)


def _finish(out: list[Series], cfg: Config, build: Build, srv: object, warmup: int) -> list[Series]:
    for s in out:
        s.labels.update(DT.labels(cfg, srv))  # the peer, the connection ID
        s.labels["warmup_handshakes"] = warmup
        s.labels["qemu"] = build.qemu_version
        s.labels["cross_cc"] = build.cross_cc
        s.labels["plugin_header"] = build.plugin_header
        if build.footprint and s.status != "failed":
            s.derived_as(DeviceDerived).footprint = build.footprint
    return out


def failed_config(cfg: Config, build: Build, reason: str, server: object = None, warmup: int = 0) -> list[Series]:
    """The cold and warm series of a configuration that could not run (its host peer did not start):
    failed, with the reason, labelled as a measured row would be; nothing of the guest ran."""
    out = [make_series(cfg, cfg.core, build, phase, [], {}, [reason]) for phase in ("cold", "warm")]
    return _finish(out, cfg, build, server, warmup)


# --- primitives ---------------------------------------------------------------------------------
