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
"""

from __future__ import annotations

import json
import secrets
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..core import result as R
from ..core.errors import InputError, MeasurementError, ResultError
from ..core.result_schema import DeviceDerived, DeviceTime, Series, problem
from ..inputs.core_profiles import Core
from ..inputs.devices import core_names
from ..lab import registry
from . import device_attrib as A
from . import device_dtls as DT
from . import device_timing as T
from .device_build import STACK_TARGETS, STACKS, TARGETS, Build, check_config, configs_for, default_config, ensure_built

GROUPS = ("x25519", "p-256", "p-384")
SUITES = {"aes128gcm": "aes128gcm", "aes-128-gcm": "aes128gcm", "chacha20": "chacha20",
          "chacha20-poly1305": "chacha20"}
TLS_VERSIONS = {"1.3": "1.3", "13": "1.3", "tls1.3": "1.3", "1.2": "1.2", "12": "1.2", "tls1.2": "1.2",
                "dtls1.2": "dtls1.2", "dtls": "dtls1.2", "dtls1.3": "dtls1.3", "dtls13": "dtls1.3"}
MODES = ("full", "resumed", "psk", "full-cid", "resumed-cid")   # -cid: a DTLS connection ID (measure/device_dtls.py)
SERVER_CERTS = ("rsa-2048", "ecdsa-p256")
CLIENT_CERTS = ("none", "ecdsa-p256", "rsa-2048")   # mutual TLS: the client's certificate (lab client CA)
RUN_TIMEOUT_S = 120
TIMER = {"name": "guest instructions per handshake",
         "start": "client about to call the library's handshake function (marker HS_BEGIN)",
         "end": "the handshake function returned (marker HS_END)",
         "unit": "instructions (user mode, client process, counted under QEMU)"}


@dataclass(frozen=True)
class Config:
    core: Core   # the emulated core, resolved once where the command reads --device
    stack: str
    tls: str
    group: str
    suite: str
    mode: str
    server_cert: str
    client_cert: str = "none"
    build_config: str | None = None   # library build configuration (data/device_builds.toml); None: the default

    @property
    def device(self) -> str:
        """The core's name (series ids and labels)."""
        return self.core.name

    def __hash__(self) -> int:
        # the core holds dicts (its timing tables): it enters the hash by its name
        return hash((self.core.name, *(getattr(self, f.name) for f in fields(self) if f.name != "core")))

    @property
    def key(self) -> str:
        mtls = "" if self.client_cert == "none" else f"/client-{self.client_cert}"
        proto = self.tls if self.dtls else f"tls{self.tls}"
        stack = self.stack if self.build_config is None else f"{self.stack}[{self.build_config}]"
        return f"{stack}/{proto}/{self.group}/{self.suite}/{self.mode}/{self.server_cert}{mtls}"

    @property
    def dtls(self) -> bool:
        return self.tls.startswith("dtls")


def _split(value: str | Iterable[str], what: str, known: Sequence[str],
           aliases: dict[str, str] | None = None) -> list[str]:
    items = [v.strip().lower() for v in (value.split(",") if isinstance(value, str) else value) if v.strip()]
    if not items:
        raise InputError(f"--{what}: give at least one of {', '.join(known)}")
    out = []
    for v in items:
        v = (aliases or {}).get(v, v)
        if v not in known:
            raise InputError(f"--{what}: unknown {what} {v!r}; known: {', '.join(known)}")
        out.append(v)
    return list(dict.fromkeys(out))


# the build a core runs: profile A cores Debian's armhf libraries, Cortex-M4, M33 and M0+ cores their own
# build (M0+: linked with newlib, for the stacks in device_build.NEWLIB_STACKS)
CPU_TARGETS = {"cortex-m4": "cortex-m4", "cortex-m33": "cortex-m33", "cortex-m0": "cortex-m0plus"}


def target_for(dev: Core) -> str:
    """The build target for a core, or InputError naming the devices there are builds for."""
    if dev.profile == "A":
        return "armhf"
    if dev.qemu_cpu in CPU_TARGETS:
        return CPU_TARGETS[dev.qemu_cpu]
    runnable = ", ".join(core_names(lambda c: c.profile == "A" or c.qemu_cpu in CPU_TARGETS))
    raise InputError(f"--device {dev.name}: there is no {dev.qemu_cpu} build of the stacks (builds: "
                     f"{', '.join(TARGETS)}); devices these builds run on: {runnable}")


def qemu_cpu(dev: Core, build: Build) -> str:
    return build.run_cpu or dev.qemu_cpu


def check_stacks(value: str | Iterable[str], dev: Core | None = None) -> list[str]:
    """--stack values, each one built for the device's target (InputError naming the devices it runs on)."""
    stacks = _split(value, "stack", tuple(STACKS))
    if dev is not None:
        target = target_for(dev)
        for s in stacks:
            if target not in STACK_TARGETS.get(s, (target,)):
                on = ", ".join(core_names(lambda c: c.profile == "A"))
                m_stacks = ", ".join(x for x in STACKS if target in STACK_TARGETS.get(x, (target,)))
                if target == "cortex-m0plus":
                    raise InputError(f"--stack {s}: there is no Cortex-M0+ build of {s} (the M0+ builds are "
                                     f"linked with newlib; built for it: {m_stacks})")
                raise InputError(f"--stack {s}: there is no {target} build of {s} (Debian's armhf package runs on "
                                 f"the A-profile cores only: {on}); this core runs {m_stacks}")
    return stacks


def check_build_configs(value: str | Iterable[str] | None, stacks: list[str], dev: Core) -> dict[str, list[str | None]]:
    """--config names per stack for the device's core (None: the stack's default build). Each stack
    runs the named configurations it has; a name no stack has, or a stack none of the names apply
    to, is an InputError naming the stack's configurations."""
    if value is None:
        return {s: [None] for s in stacks}
    target = target_for(dev)
    names = list(dict.fromkeys(v.strip().lower() for v in (value.split(",") if isinstance(value, str) else value)
                               if v.strip()))
    if not names:
        raise InputError("--config: give at least one configuration name (`secperf device list` shows them)")
    for n in names:
        if not any(n in configs_for(s, target) for s in stacks):
            if len(stacks) == 1:
                check_config(stacks[0], target, n)   # raises, naming the stack's configurations
            raise InputError(f"--config {n}: none of the stacks has it here; configurations: " + "; ".join(
                f"{s}: {', '.join(configs_for(s, target))}" for s in stacks))
    out: dict[str, list[str | None]] = {}
    for s in stacks:
        mine = [n for n in names if n in configs_for(s, target)]
        if not mine:
            check_config(s, target, names[0])   # raises, naming the stack's configurations
        default = default_config(s, target)
        out[s] = [None if n == default else n for n in mine]
    return out


def stack_tag(stack: str, build: Build) -> str:
    """The stack as series ids name it: with its build configuration when that is not the default."""
    return stack if build.config == default_config(stack, build.target) else f"{stack}[{build.config}]"


def plan(dev: Core, stacks: str | Iterable[str], tls: str | Iterable[str], groups: str | Iterable[str],
         suites: str | Iterable[str], modes: str | Iterable[str] = "full",
         server_certs: str | Iterable[str] = "rsa-2048", client_certs: str | Iterable[str] = "none",
         build_configs: str | Iterable[str] | None = None) -> list[Config]:
    """The configurations to run, with every name checked (InputError names what is known).
    build_configs: library build configurations (comma list; None: each stack's default)."""
    stack_l = check_stacks(stacks, dev)
    bconf = check_build_configs(build_configs, stack_l, dev)
    tls_l = [TLS_VERSIONS.get(t, t) for t in _split(tls, "tls", tuple(TLS_VERSIONS))]
    group_l = _split(groups, "group", GROUPS, {"p256": "p-256", "secp256r1": "p-256", "p384": "p-384",
                                              "secp384r1": "p-384"})
    suite_l = _split(suites, "suite", tuple(SUITES), SUITES)
    mode_l = _split(modes, "mode", MODES)
    certs = _split(server_certs, "server-cert", SERVER_CERTS)
    ccerts = _split(client_certs, "client-cert", CLIENT_CERTS)
    DT.check_plan(stack_l, tls_l, mode_l)   # DTLS versions per stack, CID only with DTLS, no TLS 1.2 PSK
    target_for(dev)
    return [Config(dev, s, t, g, su, m, c, cc, b) for s in stack_l for b in bconf[s] for t in tls_l
            for g in group_l for su in suite_l for m in mode_l for c in certs for cc in ccerts]


def check_offers(cfg: Config, build: Build) -> None:
    """InputError when the build cannot do cfg, naming what it offers."""
    off = build.offers
    what = f"{cfg.stack} ({build.library}, {build.target} build)"
    if not off.get("tls"):   # a primitives-only build (pqclean)
        raise InputError(f"--stack {cfg.stack}: {build.library} has no TLS; count its primitives with "
                         f"`secperf device crypto --stack {cfg.stack}`")
    if cfg.tls not in off.get("tls", ()):
        raise InputError(f"--tls {cfg.tls}: {what} offers TLS {', '.join(off.get('tls', ()))} only"
                         + ("; Mbed TLS 2.28 has no TLS 1.3: use --tls 1.2, or --stack mbedtls3 (Mbed TLS 3.6, TLS 1.3)" if cfg.stack == "mbedtls" and not cfg.dtls else "")
                         + DT.lacking(cfg, build))
    if cfg.group not in off.get("groups", ()):
        raise InputError(f"--group {cfg.group}: {what} offers {', '.join(off.get('groups', ()))}")
    if cfg.suite not in off.get("suites", ()):
        raise InputError(f"--suite {cfg.suite}: {what} offers {', '.join(off.get('suites', ()))}")
    if cfg.dtls:
        DT.check_offers(cfg, off, what)   # the build's DTLS handshakes (dtls_modes), the peer's
    elif cfg.mode not in off.get("modes", ()):
        raise InputError(f"--mode {cfg.mode}: {what} offers {', '.join(off.get('modes', ()))}")
    if cfg.client_cert != "none" and not off.get("mtls"):
        raise InputError(f"--client-cert {cfg.client_cert}: {what} has no client certificates")


class Server:
    """`openssl s_server` on loopback for one server certificate type (lab/services.SServer), asking
    for a client certificate of the lab client CA when client_cert is not "none", and holding an
    external PSK made for this server (32 random bytes), always in 0600 files: s_server reads TLS
    1.3's as a session file, the DTLS 1.2 psk row's peer is the probe server reading a key file
    (device_dtls.psk_server says why), the guest client reads its own private file."""

    PSK_IDENTITY = "secperf-device"

    def __init__(self, cert_type: str, client_cert: str = "none", proto: str = "tls", psk_dtls: bool = False):
        from ..core.paths import private_dir, write_private
        from ..lab.pki import LabPKI
        from ..lab.services import ProbeServer, SServer
        pki = LabPKI().ensure()
        self.certs = pki.server(cert_type)
        self.client = None if client_cert == "none" else pki.client(client_cert)
        psk = secrets.token_hex(32)
        self._tmp = tempfile.TemporaryDirectory(prefix="secperf-device-psk-")
        self.psk_file = Path(private_dir(Path(self._tmp.name))) / "psk"
        write_private(self.psk_file, f"{self.PSK_IDENTITY}\n{psk}\n".encode())
        # the server's copy: a TLS 1.3 session file (lab/psk_session), or the probe's key file (DTLS 1.2)
        ca = self.client.ca if self.client else None
        self.svc: SServer | ProbeServer = (
            DT.psk_server(self.certs, ca, self.PSK_IDENTITY, psk) if proto == "dtls" and psk_dtls
            else SServer(self.certs, psk=(self.PSK_IDENTITY, bytes.fromhex(psk)) if proto == "tls" else None,
                         client_ca=ca, proto=proto))

    def __enter__(self) -> Server:
        self.svc.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.svc.stop()
        finally:
            self._tmp.cleanup()

    @property
    def port(self) -> int:
        if self.svc.port is None:
            raise MeasurementError(f"{self.svc.name} has no port: it was not started")
        return self.svc.port


def run_client(build: Build, dev: Core, cfg: Config, port: int, ca: Path, n: int, *, marks: bool = True,
               app: bool = True, work: Path | None = None, server: Server | DT.PairServer | None = None,
               timed: bool = True) -> tuple[list[dict[str, Any]], list[A.Event], int]:
    """One guest process making n connections: its JSON lines, the plugin's events, total count.
    With `timed` (and a core with a timing model) every event also carries the model's cycles."""
    own_tmp = work is None
    tmp = Path(work or tempfile.mkdtemp(prefix="secperf-device-"))
    try:
        return _run_client(build, dev, cfg, port, ca, n, marks=marks, app=app, tmp=tmp, server=server, timed=timed)
    finally:
        if own_tmp:   # the events and the timing parameters; nothing of a run stays in the temporary directory
            shutil.rmtree(tmp, ignore_errors=True)


def _run_client(build: Build, dev: Core, cfg: Config, port: int, ca: Path, n: int, *, marks: bool, app: bool,
                tmp: Path, server: Server | DT.PairServer | None, timed: bool
                ) -> tuple[list[dict[str, Any]], list[A.Event], int]:
    ev = tmp / f"events-{abs(hash((cfg, marks, n))) % 10**8}.txt"
    argv = [build.qemu, "-cpu", qemu_cpu(dev, build), "-plugin",
            f"{build.plugin},out={ev},watch={build.watch}{_timing_arg(dev, build, tmp, timed)}",
            str(build.client), "--port", str(port), "--ca", str(ca), "--tls", cfg.tls[-3:].replace(".", ""),
            "--group", cfg.group, "--suite", cfg.suite, "--n", str(n)]
    if DT.base_mode(cfg.mode) == "resumed":
        argv.append("--resume")
    if cfg.dtls:  # over UDP, with a CID for -cid; s_server answers no DTLS application exchange: none is made
        argv += ["--dtls"] + (["--cid"] if cfg.mode in DT.CID_MODES else []) + ([] if DT.needs_pair(cfg) else ["--no-app"])
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
    except subprocess.TimeoutExpired:
        raise MeasurementError(f"the {cfg.stack} guest client did not finish {n} handshakes within "
                               f"{RUN_TIMEOUT_S + 5 * n} s") from None
    conns = A.guest_connections(p.stdout, p.stderr, p.returncode, cfg.stack)
    total, events = A.read_events(ev)
    ev.unlink(missing_ok=True)
    return conns, events, total


def _timing_arg(dev: Core, build: Build, tmp: Path, timed: bool) -> str:
    """The plugin argument that turns the timing model on for this core and binary ('' when off)."""
    if not timed or dev.timing is None:
        return ""
    return f",timing={T.write_params(dev, build.client, tmp / 'timing.txt')}"


def _timed_handshakes(events: list[A.Event], conns: list[dict[str, Any]], cfg: Config, mtls: bool
                      ) -> dict[int, dict[str, Any]]:
    """Handshake index -> the timing model's cycles (low, point, high) of the whole handshake and of
    each message, attributed by the same rule as the instruction counts."""
    if not events or events[0].timed is None:
        return {}
    sets = [A.handshakes(A.in_cycles(events, k), conns, cfg.tls, mtls, psk=cfg.mode == "psk",
                         ccs_message=cfg.stack == "openssl") for k in range(3)]
    out: dict[int, dict[str, Any]] = {}
    for lo, mid, hi in zip(*sets):
        out[mid.index] = {"cycles": (lo.instructions, mid.instructions, hi.instructions),
                          "messages": [(a["instructions"], b["instructions"], c["instructions"])
                                       for a, b, c in zip(lo.messages, mid.messages, hi.messages)],
                          "app": (lo.app_instructions, mid.app_instructions, hi.app_instructions)}
    return out


def _labels(cfg: Config, dev: Core, build: Build, phase: str) -> dict[str, Any]:
    return {"device": cfg.device, "stack": cfg.stack, "library": build.library, "tls": cfg.tls,
            "group": cfg.group, "suite": cfg.suite, "mode": cfg.mode, "server_cert": cfg.server_cert,
            "client_cert": cfg.client_cert,
            "phase": phase, "qemu_cpu": qemu_cpu(dev, build), "core_profile": dev.profile,
            "build_target": build.target, "build": build.build_note, **build_labels(build),
            "server": "openssl s_server (host, loopback)"}


def build_labels(build: Build) -> dict[str, Any]:
    """The library build configuration a series ran (data/device_builds.toml)."""
    return {"config": build.config, "config_description": build.config_note}


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
    return [{"dir": d, "message": m, "instructions": int(statistics.median(v)), "n": len(v)}
            for (d, m), v in order.items()]


def _derive(dev: Core, instructions: float) -> dict[str, float]:
    lo, hi = dev.ms_range(instructions)
    return {"ms_low": lo, "ms_high": hi}


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


def make_series(cfg: Config, dev: Core, build: Build, phase: str, hss: list[A.Handshake],
                conns: dict[int, dict[str, Any]], failures: list[str],
                timed: dict[int, dict[str, Any]] | None = None) -> Series:
    s = R.new_series(f"device/{cfg.device}/{cfg.key}/{phase}", kind="device", labels=_labels(cfg, dev, build, phase),
                     timer=TIMER)
    for reason in failures:
        R.add_failure(s, reason)
    for h in hss:
        c = conns.get(h.index, {})
        t = (timed or {}).get(h.index)
        messages = [dict(m) for m in h.messages]
        if t and len(t["messages"]) == len(messages):
            for m, cyc in zip(messages, t["messages"]):
                m["cycles"] = list(cyc)
        s.samples.append({"handshake": h.index, "instructions": h.instructions, "parts_sum": h.parts_sum,
                          **({"cycles": list(t["cycles"])} if t else {}),
                          "messages": messages, "app_instructions": h.app_instructions,
                          "records_in": h.records_in, "records_out": h.records_out,
                          "messages_per_record": h.messages_per_record, "version": c.get("version"),
                          "negotiated_suite": c.get("suite"), "negotiated_group": c.get("group"),
                          "resumed": bool(c.get("resumed")), "stack_bytes": c.get("stack_bytes"),
                          **({"cid_bytes": c.get("cid_bytes", 0)} if cfg.dtls else {})})
    good = [x for x in s.samples]
    if good:
        ins = [x["instructions"] for x in good]
        med = statistics.median(ins)
        worst = max(abs(x["parts_sum"] - x["instructions"]) / x["instructions"] for x in good)
        rows = _message_rows(good)
        trows = _timed_rows(good)
        for r in rows:
            r.update(_derive(dev, r["instructions"]))
            if (r["dir"], r["message"]) in trows:
                r["time"] = T.figure(trows[(r["dir"], r["message"])], dev)
        s.derived = {
            "instructions_median": med, "instructions_min": min(ins), "instructions_max": max(ins),
            "spread": (max(ins) - min(ins)) / med if med else 0.0,
            "parts_sum_max_error": worst, "messages": rows,
            # worst-case stack of the handshake call, measured by painting (native/device/client.c)
            "stack_bytes_max": max((x["stack_bytes"] for x in good if x.get("stack_bytes")), default=None),
            "app_instructions_median": statistics.median([x["app_instructions"] for x in good
                                                          if x["app_instructions"] is not None] or [0]),
            "derived_ms": {**_derive(dev, med), "clock_mhz": dev.clock_mhz, "cpi": list(dev.cpi),
                           "cpi_estimate": dev.cpi_estimate,
                           "rule": "instructions x CPI / clock: DERIVED from the core profile's CPI range (the earlier estimate, kept for comparison)"},
        }
        cyc = [x["cycles"] for x in good if "cycles" in x]
        if cyc and dev.timing is not None:
            s.derived_as(DeviceDerived).time = _device_time(
                {**T.figure(T.median3(cyc), dev), **T.model_note(dev)})
        s.status = "partial" if s.failures else "ok"
    else:
        s.status = "failed"
        if not s.failures:
            R.add_failure(s, "no handshake completed")
    return s


def measure_config(cfg: Config, n: int, warmup: int, build: Build | None = None,
                   server: Server | None = None, timed: bool = True) -> list[Series]:
    """Cold and warm series of one configuration: one guest process with 1 + warmup + n handshakes."""
    dev = cfg.core
    build = build or ensure_built(cfg.stack, target_for(dev), cfg.build_config)
    check_offers(cfg, build)
    prime = 1 if DT.base_mode(cfg.mode) == "resumed" else 0   # a full handshake that obtains the ticket
    total_n = prime + 1 + warmup + n
    own = server is None or DT.needs_pair(cfg)   # DTLS 1.3 and CID rows: a wolfSSL peer of their own
    srv = (DT.PairServer(cfg) if DT.needs_pair(cfg) else server or Server(cfg.server_cert, cfg.client_cert,
                                                                          "dtls" if cfg.dtls else "tls",
                                                                          cfg.dtls and cfg.mode == "psk")).__enter__()
    try:
        conns, events, _ = run_client(build, dev, cfg, srv.port, srv.certs.ca, total_n, server=srv, timed=timed)
    finally:
        if own:
            srv.__exit__(None, None, None)
    by = {c["conn"]: c for c in conns}
    mtls = cfg.client_cert != "none"
    hss = A.handshakes(events, conns, cfg.tls, mtls, psk=cfg.mode == "psk", ccs_message=cfg.stack == "openssl")
    failures = [f"handshake {c['conn']}: {c.get('stage')}: {c.get('error')}" for c in conns if not c.get("ok")]
    if prime:
        failures += [f"handshake {h.index}: the session was not resumed" for h in hss
                     if h.index >= prime and not by.get(h.index, {}).get("resumed")]
    failures += DT.cid_failures(cfg, conns)
    # a PSK handshake authenticates by the key: a server Certificate means the PSK was refused
    psk_refused = {h.index for h in hss if cfg.mode == "psk" and DT.psk_refused(cfg, h, by.get(h.index, {}))}
    failures += [f"handshake {i}: the server refused the PSK (it chose certificates)" for i in sorted(psk_refused)]
    if mtls:
        failures += [f"handshake {h.index}: no client Certificate was sent" for h in hss if h.ok and not any(
            m["dir"] == "sent" and m["message"] == "Certificate" for m in h.messages)]
    ok = [h for h in hss if h.ok and by.get(h.index, {}).get("ok") and h.index not in psk_refused
          and (not prime or by[h.index].get("resumed")) and DT.cid_ok(cfg, by[h.index])]
    cold = [h for h in ok if h.index == prime]
    warm = [h for h in ok if h.index >= prime + 1 + warmup]
    timings = _timed_handshakes(events, conns, cfg, mtls)
    out = [make_series(cfg, dev, build, "cold", cold, by, failures if not cold else [], timings),
           make_series(cfg, dev, build, "warm", warm, by, failures, timings)]
    for s in out:
        s.labels.update(DT.labels(cfg, srv))   # the peer, the connection ID
        s.labels["warmup_handshakes"] = warmup
        s.labels["qemu"] = build.qemu_version
        s.labels["cross_cc"] = build.cross_cc
        s.labels["plugin_header"] = build.plugin_header
        if build.footprint and s.status != "failed":
            s.derived_as(DeviceDerived).footprint = build.footprint
    return out


# --- primitives ---------------------------------------------------------------------------------

def check_ops(ops: str | Iterable[str], build: Build, stack: str) -> list[str]:
    """--op values this stack's build counts (InputError naming the known ones otherwise)."""
    known = list(build.crypto_ops)
    if not known:
        raise InputError(f"--stack {stack}: this build has no primitive counts")
    return _split(ops, "op", known)


def route_ops(ops: str | Iterable[str], builds: dict[tuple[str, str | None], Build]) -> dict[tuple[str, str | None], list[str]]:
    """--op values spread over several stacks' builds: each build runs the operations it counts (an
    operation two stacks count runs on both: a comparison); a build that counts none of them runs
    nothing. An operation no build counts is an InputError naming each stack's operations."""
    names = list(dict.fromkeys(v.strip().lower() for v in (ops.split(",") if isinstance(ops, str) else ops)
                               if v.strip()))
    if not names:
        raise InputError("--op: give at least one operation (`secperf device crypto --stack S` counts all of them)")
    counted = {k: list(b.crypto_ops) for k, b in builds.items()}
    if not any(counted.values()):
        raise InputError(f"--stack {', '.join(dict.fromkeys(s for s, _ in builds))}: these builds have no primitive "
                         f"counts")
    missing = [n for n in names if not any(n in known for known in counted.values())]
    if missing:
        have = "; ".join(f"{stack_tag(s, b)}: {', '.join(counted[(s, c)]) or 'none'}" for (s, c), b in builds.items())
        raise InputError(f"--op {', '.join(missing)}: no stack given counts {'it' if len(missing) == 1 else 'them'}; "
                         f"operations per stack: {have}")
    return {k: [n for n in names if n in counted[k]] for k in builds}


def measure_crypto(dev: Core, stack: str, ops: list[str] | None, n: int, build: Build | None = None,
                   build_config: str | None = None, timed: bool = True) -> list[Series]:
    """Instruction counts of single primitive operations (keygen, derive, sign, verify, AEAD, hash)."""
    device = dev.name
    check_stacks(stack, dev)
    build = build or ensure_built(stack, target_for(dev), build_config)
    known = list(build.crypto_ops)
    if not known:
        raise InputError(f"--stack {stack}: this build has no primitive counts")
    ops = _split(ops, "op", known) if ops else known
    out = []
    from ..lab.pki import LabPKI
    pem = LabPKI().ensure().server("rsa-2048")   # the RSA and certificate operations' inputs (the lab leaf)
    with tempfile.TemporaryDirectory(prefix="secperf-device-") as tmp:
        for op in ops:
            ev = Path(tmp) / f"ops-{op}.txt"
            argv = [build.qemu, "-cpu", qemu_cpu(dev, build), "-plugin",
                    f"{build.plugin},out={ev}{_timing_arg(dev, build, Path(tmp), timed)}", str(build.client),
                    "--crypto", op, "--n", str(n + 1), "--cert", str(pem.cert), "--key", str(pem.key)]
            p = registry.run(argv, "qemu device emulator", capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
            s = R.new_series(f"device-crypto/{device}/{stack_tag(stack, build)}/{op}", kind="device_crypto",
                             labels={"device": device, "stack": stack, "library": build.library, "op": op,
                                     "qemu_cpu": qemu_cpu(dev, build), "build_target": build.target,
                                     **build_labels(build)},
                             timer={"name": "guest instructions per operation", "start": "marker OP_BEGIN",
                                    "end": "marker OP_END", "unit": "instructions"})
            cycles: list[T.Cycles3] = []
            classes: list[dict[str, Any]] = []
            try:
                events = A.read_events(ev)[1]
                counts = [c for _, c in A.op_counts(events)]
                if events and events[0].timed is not None:
                    per_set = [[c for _, c in A.op_counts(A.in_cycles(events, k))] for k in range(3)]
                    cycles = list(zip(per_set[0], per_set[1], per_set[2]))
                    classes = A.op_classes(events)
            except MeasurementError as exc:
                counts = []
                R.add_failure(s, str(exc))
            if p.returncode != 0 or not counts:
                R.add_failure(s, f"exit {p.returncode}: {p.stdout.strip()[-300:]} {p.stderr.strip()[-300:]}")
            if counts:
                warm = counts[1:] or counts
                med = statistics.median(warm)
                s.samples = [{"i": i, "instructions": c, "phase": "cold" if i == 0 else "warm",
                              **({"cycles": list(cycles[i])} if i < len(cycles) else {})}
                                for i, c in enumerate(counts)]
                line: dict[str, Any] = next((json.loads(x) for x in p.stdout.splitlines() if x.startswith('{"crypto"')), {})
                s.derived = {"instructions_cold": counts[0], "instructions_median": med,
                             # the deepest stack the operation's repetitions wrote (painted, marker call incl.)
                             "stack_bytes_max": line.get("stack_bytes"),
                             "derived_ms": {**_derive(dev, med), "clock_mhz": dev.clock_mhz, "cpi": list(dev.cpi),
                                            "cpi_estimate": dev.cpi_estimate}}
                warm_cyc = cycles[1:] or cycles
                if warm_cyc:
                    s.derived["time"] = {**T.figure(T.median3(warm_cyc), dev), **T.model_note(dev)}
                    s.derived["time_cold"] = T.figure(cycles[0], dev)
                    # where the cycles come from: the last (warm) operation's classes and stall events
                    s.derived["time"]["counters"] = classes[-1] if classes else {}
                if line.get("check"):   # what the guest checked of the results outside the markers
                    s.derived["check"] = line["check"]
                from .device_build import op_footprint
                fp = op_footprint(build, op) or build.footprint   # the scheme's code (PQClean), else the library's
                if fp:
                    s.derived["footprint"] = fp
                s.status = "partial" if s.failures else "ok"
            else:
                s.status = "failed"
            out.append(s)
    return out
