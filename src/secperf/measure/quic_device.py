"""QUIC counted on the emulated A-profile cores: ngtcp2 0.12.1 with its GnuTLS crypto back end,
Debian's armhf packages, instruction by instruction under `qemu-arm` with the counting plugin and
the timing model, against aioquic on loopback.

The command: `secperf device handshake --tls quic --device cortex-a7-800 [--mode full,resumed,0rtt]
[--group x25519,p-256] [--server-cert ecdsa-p256]`. QUIC goes through `device handshake` (not a
command of its own) because its rows are device rows like the TLS ones; `--tls quic` is run on its
own (its stack is ngtcp2, so it does not mix with the TLS versions' stacks in one run).

The client (native/device/quic/client.c) makes n connections, one at a time: handshake (full;
resumed with the previous connection's session ticket; or 0-RTT with the request in the first
flight), then 40 request bytes on a bidirectional stream and the server's 846-byte response, as
the host's QUIC rows (measure/quic.py: ALPN hq-interop, 333 ms initial RTT, 1200-byte datagrams,
aioquic's flow-control windows). The server is aioquic on loopback, run in a thread of this process
(measure/quic_device_server.py; measure/quic.py's configuration: the lab certificate, single-use
tickets, 0-RTT accepted).

Attribution (markers in native/device/quic/quic_marks.h): a connection's count runs from the
client's first step (HS_BEGIN: session and connection set up, ClientHello, Initial packet) to the
response's last byte and the session ticket (HS_END). GnuTLS's hook before every handshake message
splits it: a received message owns the instructions from GnuTLS taking it up to the next message
(the QUIC packets around it included; the server's first datagram goes to ServerHello), the
client's Finished from its construction until its packet is on the wire. The handshake's parts
sum to `instructions`; after the Finished, the request, the response and the NewSessionTicket
(`app_parts`) sum to `app_instructions`. With 0-RTT the request is built inside the ClientHello
part (it leaves in the same flight). Waiting for the server costs nothing (the guest is blocked).

Build: measure/quic_device_build.py (cached by a fingerprint of the sources, flags and libraries;
ngtcp2 static, GnuTLS a shared library from the armhf sysroot); LD_BIND_NOW resolves every symbol
before the first marker, so lazy binding is not in any count.

Microcontrollers: no QUIC implementation in the package registries builds for bare-metal
Cortex-M here (ngtcp2 and GnuTLS need a POSIX C library, sockets and a clock; Debian's packages are
A-profile Linux code); a Cortex-M row needs a QUIC stack ported to an embedded TCP/IP stack and
crypto (ngtcp2 with wolfSSL or Mbed TLS and lwIP, or Quant/picoquic's embedded ports), built from
source with a UDP layer of its own: `--tls quic` on an M core exits 2 saying so.
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..core import result as R
from ..core.errors import InputError
from ..core.result_schema import DeviceDerived, Series
from ..inputs.core_profiles import Core
from ..inputs.devices import core_names
from ..lab import registry
from . import device as D
from . import device_attrib as A
from . import device_timing as T
from .device_build import STACKS
from .quic_device_build import ARMHF_DEBS, ARMHF_LIBS, CROSS_LIBC, QuicBuild, ensure_built, sysroot
from .quic_device_server import LoopbackServer

# the build's and the server's names (measure/quic_device_build.py, quic_device_server.py) stay importable from here, as callers import them
__all__ = [
    "APP_PART",
    "ARMHF_DEBS",
    "ARMHF_LIBS",
    "CROSS_LIBC",
    "GROUPS",
    "MODES",
    "NO_MCU",
    "QM_APP",
    "QM_FLIGHT",
    "QM_RECV",
    "QM_SENT",
    "RUN_TIMEOUT_S",
    "SERVER",
    "SERVER_CERTS",
    "STACK",
    "SUITES",
    "TIMER",
    "LoopbackServer",
    "QuicBuild",
    "QuicConfig",
    "QuicDeviceError",
    "connections",
    "ensure_built",
    "failed_config",
    "make_series",
    "measure_config",
    "plan",
    "refusal",
    "run_client",
    "sysroot",
    "why_not_here",
]

STACK = "ngtcp2"
MODES = ("full", "resumed", "0rtt")
GROUPS = ("x25519", "p-256")
SUITES = ("aes128gcm",)
SERVER_CERTS = ("ecdsa-p256", "rsa-2048")
RUN_TIMEOUT_S = 180
SERVER = "aioquic (host, loopback)"  # the rows' peer (quic_device_server.LoopbackServer)
QUIC_KIND = "--tls quic (ngtcp2 + GnuTLS)"  # named where a value is unknown for QUIC only
QM_SENT, QM_RECV, QM_FLIGHT, QM_APP = 0x100, 0x200, 0x300, 0x400
APP_PART = ("exchange", "request → response")
TIMER = {
    "name": "guest instructions per QUIC handshake",
    "start": "client about to set up the session and the connection (marker HS_BEGIN)",
    "end": "the client's Finished is on the wire (marker QM_APP); request → response and the session ticket "
    "are app_instructions (to HS_END)",
    "unit": "instructions (user mode, client process, counted under QEMU)",
}
NO_MCU = (
    "QUIC runs on the A-profile cores only ({cores}): no QUIC implementation in the "
    "package registries builds for bare-metal Cortex-M here -- ngtcp2 and GnuTLS (Debian's packages) are "
    "A-profile Linux code needing a POSIX C library, sockets and a clock; a Cortex-M row needs a QUIC stack "
    "ported to an embedded IP stack and crypto (e.g. ngtcp2 over lwIP with wolfSSL or Mbed TLS), built from "
    "source with its own UDP layer"
)


class QuicDeviceError(InputError):
    """A QUIC device row that cannot be counted as asked (the message says why)."""


@dataclass(frozen=True)
class QuicConfig:
    core: Core  # the emulated core, resolved once where the command reads --device
    mode: str
    group: str = "x25519"
    server_cert: str = "rsa-2048"
    suite: str = "aes128gcm"
    request_bytes: int = 40
    response_bytes: int = 846

    @property
    def device(self) -> str:
        """The core's name (series ids and labels)."""
        return self.core.name

    def __hash__(self) -> int:
        # the core holds dicts (its timing tables): it enters the hash by its name
        return hash((self.core.name, *(getattr(self, f.name) for f in fields(self) if f.name != "core")))

    @property
    def key(self) -> str:
        return f"{STACK}/quic/{self.group}/{self.suite}/{self.mode}/{self.server_cert}"


def why_not_here() -> str:
    """Why QUIC is not counted on a microcontroller core, naming the cores it is counted on."""

    return NO_MCU.format(cores=", ".join(core_names(lambda c: c.profile == "A")))


def refusal(device: str) -> str:
    """`device handshake --tls quic` on a microcontroller core: the options and why."""
    return f"--tls quic --device {device}: " + why_not_here()


def plan(
    dev: Core,
    stacks: str | Iterable[str],
    modes: str | Iterable[str],
    groups: str | Iterable[str],
    suites: str | Iterable[str],
    server_cert: str | Iterable[str],
) -> list[QuicConfig]:
    """The QUIC configurations to count, every name checked (QuicDeviceError names what is known)."""
    if dev.profile != "A":
        raise QuicDeviceError(refusal(dev.name))
    st = D.split_values(stacks, "stack", (STACK, *STACKS))
    if st != [STACK]:
        raise QuicDeviceError(
            f"--stack {','.join(st)}: QUIC is counted with ngtcp2 only here (ngtcp2 0.12.1 + GnuTLS, "
            f"Debian's armhf packages); use --stack ngtcp2 or leave --stack out"
        )
    modes_l = D.split_values(modes, "mode", MODES, {"0-rtt": "0rtt", "resumption": "resumed"}, QUIC_KIND)
    groups_l = D.split_values(groups, "group", GROUPS, {"p256": "p-256", "secp256r1": "p-256"}, QUIC_KIND)
    suites_l = D.split_values(suites, "suite", SUITES, {"aes-128-gcm": "aes128gcm"}, QUIC_KIND)
    certs = D.split_values(server_cert, "server-cert", SERVER_CERTS, kind=QUIC_KIND)
    return [QuicConfig(dev, m, g, c, s) for m in modes_l for g in groups_l for c in certs for s in suites_l]


# --- one run -----------------------------------------------------------------------------------------


def run_client(
    build: QuicBuild, dev: Core, cfg: QuicConfig, port: int, ca: Path, n: int, timed: bool = True
) -> tuple[list[dict[str, Any]], list[A.Event]]:
    """One guest process making n connections: its JSON lines and the plugin's events."""
    with tempfile.TemporaryDirectory(prefix="secperf-device-quic-") as tmp:
        ev = Path(tmp) / "events.txt"
        timing = (
            ""
            if not timed or dev.timing is None
            else f",timing={T.write_params(dev, build.client, Path(tmp) / 't.txt')}"
        )
        argv = [
            build.qemu,
            "-L",
            str(CROSS_LIBC),
            "-E",
            "LD_BIND_NOW=1",
            "-cpu",
            dev.qemu_cpu,
            "-plugin",
            f"{build.plugin},out={ev}{timing}",
            str(build.client),
            "--port",
            str(port),
            "--ca",
            str(ca),
            "--n",
            str(n),
            "--mode",
            cfg.mode,
            "--group",
            cfg.group,
            "--request-bytes",
            str(cfg.request_bytes),
            "--response-bytes",
            str(cfg.response_bytes),
        ]
        limit = RUN_TIMEOUT_S + 10 * n
        try:
            p = registry.run(argv, "qemu device emulator (QUIC)", capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired as exc:  # registry.ChildTimeout: the emulator is stopped already
            raise T.GuestTimeout(
                f"the QUIC guest client did not finish {n} connections within {exc.timeout:g} s"
            ) from None
        conns = A.guest_connections(p.stdout, p.stderr, p.returncode, "QUIC")
        _total, events = A.read_events(ev)
    return conns, events


def _label(arg: int) -> tuple[str, str]:
    kind, t = arg & 0xF00, arg & 0xFF
    if kind == QM_FLIGHT:
        return ("received", "ServerHello")
    if kind == QM_APP:
        return APP_PART
    return ("received" if kind == QM_RECV else "sent", A.HS_TYPES.get(t, f"type {t}"))


def connections(events: list[A.Event]) -> list[dict[str, Any]]:
    """Per connection (HS_BEGIN .. HS_END): the handshake's parts (dir, message, count) in order, summed
    per message, and the parts after the handshake (app_parts); counts are whatever the events carry
    (instructions, or a cycle set through device_attrib.in_cycles)."""
    out: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for e in events:
        if e.kind != "M":
            continue
        if e.a1 == A.HS_BEGIN:
            cur = {"index": e.a2, "start": e.count, "bounds": [(e.count, ("sent", "ClientHello"))]}
        elif cur is not None and e.a1 == A.STEP:
            cur["bounds"].append((e.count, _label(e.a2)))
        elif cur is not None and e.a1 == A.HS_END:
            parts = A.partition(cur["bounds"], e.count)
            hs: dict[tuple[str, str], int] = {}
            app: dict[tuple[str, str], int] = {}
            in_app = False
            for p in parts:
                key = (p["dir"], p["message"])
                in_app = in_app or key == APP_PART
                bucket = app if in_app else hs
                bucket[key] = bucket.get(key, 0) + p["instructions"]
            out.append(
                {
                    "index": cur["index"],
                    "ok": e.a2 == 1,
                    "total": e.count - cur["start"],
                    "messages": [{"dir": d, "message": m, "instructions": v} for (d, m), v in hs.items()],
                    "app_parts": [{"dir": d, "message": m, "instructions": v} for (d, m), v in app.items()],
                }
            )
            cur = None
    return out


def measure_config(
    cfg: QuicConfig,
    n: int,
    warmup: int,
    build: QuicBuild | None = None,
    server: LoopbackServer | None = None,
    timed: bool = True,
) -> list[Series]:
    """Cold and warm series of one configuration: one guest process with (a priming full handshake for
    resumed and 0-RTT) 1 + warmup + n connections."""
    dev = cfg.core
    if dev.profile != "A":
        raise QuicDeviceError(refusal(cfg.device))
    build = build or ensure_built()
    prime = 0 if cfg.mode == "full" else 1
    own = server is None
    if server is None:
        try:
            server = LoopbackServer(cfg.server_cert, cfg.response_bytes).__enter__()
        except OSError as exc:  # its socket, its certificate (ssl.SSLError): this configuration fails, the run goes on
            return failed_config(cfg, build, f"{SERVER} did not start: {exc}", warmup)
    srv = server
    if srv.errors:  # a shared server whose thread has stopped answers no guest: fail now, not at the guest's limit
        return failed_config(cfg, build, "; ".join(srv.errors), warmup)
    stopped: list[str] = []
    try:
        conns, events = run_client(build, dev, cfg, srv.port, srv.certs.ca, prime + 1 + warmup + n, timed=timed)
    except T.GuestTimeout as exc:  # a failed configuration with its reason; the other configurations go on
        conns, events, stopped = [], [], [str(exc)]
    finally:
        if own:
            srv.__exit__(None, None, None)
    by = {c["conn"]: c for c in conns}
    counted = connections(events)
    cyc = [connections(A.in_cycles(events, k)) for k in range(3)] if events and events[0].timed is not None else []
    failures = stopped + [
        f"connection {c['conn']}: {c.get('stage')}: {c.get('error')}" for c in conns if not c.get("ok")
    ]
    failures += srv.errors
    ok = [h for h in counted if h["ok"] and by.get(h["index"], {}).get("ok") and h["index"] >= prime]
    cold = [h for h in ok if h["index"] == prime]
    warm = [h for h in ok if h["index"] >= prime + 1 + warmup]
    return [
        make_series(cfg, dev, build, "cold", cold, by, failures if not cold else [], cyc, warmup),
        make_series(cfg, dev, build, "warm", warm, by, failures, cyc, warmup),
    ]


def failed_config(cfg: QuicConfig, build: QuicBuild, reason: str, warmup: int = 0) -> list[Series]:
    """The cold and warm series of a configuration whose host server did not start or has stopped:
    failed with the reason, labelled as a measured row; no guest ran."""
    return [make_series(cfg, cfg.core, build, phase, [], {}, [reason], [], warmup) for phase in ("cold", "warm")]


def _cycles_of(cyc: list[list[dict[str, Any]]], index: int) -> dict[str, Any] | None:
    """The three cycle sets of one connection: its handshake, message and app cycles (low, point, high)."""
    found = [next((h for h in s if h["index"] == index), None) for s in cyc]
    sets = [s for s in found if s is not None]
    if not found or len(sets) != len(found):
        return None
    hs = [sum(m["instructions"] for m in s["messages"]) for s in sets]
    return {
        "cycles": hs,
        "messages": [[s["messages"][k]["instructions"] for s in sets] for k in range(len(sets[0]["messages"]))],
        "app": [sum(m["instructions"] for m in s["app_parts"]) for s in sets],
    }


def make_series(
    cfg: QuicConfig,
    dev: Core,
    build: QuicBuild,
    phase: str,
    hss: list[dict[str, Any]],
    conns: dict[int, dict[str, Any]],
    failures: list[str],
    cyc: list[list[dict[str, Any]]],
    warmup: int,
) -> Series:
    labels = {
        "device": cfg.device,
        "stack": STACK,
        "library": build.library,
        "tls": "quic",
        "group": cfg.group,
        "suite": cfg.suite,
        "mode": cfg.mode,
        "server_cert": cfg.server_cert,
        "client_cert": "none",
        "phase": phase,
        "qemu_cpu": dev.qemu_cpu,
        "core_profile": dev.profile,
        "build_target": "armhf",
        "build": "Debian's armhf packages (ngtcp2 static, GnuTLS shared), client -O2 Thumb-2",
        "config": "debian",
        "config_description": "Debian's armhf packages as they are",
        "server": SERVER,
        "alpn": "hq-interop",
        "request_bytes": cfg.request_bytes,
        "response_bytes": cfg.response_bytes,
        "warmup_handshakes": warmup,
        "qemu": build.qemu_version,
        "cross_cc": build.cross_cc,
    }
    s = R.new_series(f"device/{cfg.device}/{cfg.key}/{phase}", kind="device", labels=labels, timer=TIMER)
    for reason in failures:
        R.add_failure(s, reason)
    for h in hss:
        c = conns.get(h["index"], {})
        t = _cycles_of(cyc, h["index"]) if cyc else None
        messages = [dict(m) for m in h["messages"]]
        if t and len(t["messages"]) == len(messages):
            for m, cy in zip(messages, t["messages"]):
                m["cycles"] = cy
        hs_ins = sum(m["instructions"] for m in messages)
        app = sum(m["instructions"] for m in h["app_parts"])
        s.samples.append(
            {
                "handshake": h["index"],
                "instructions": hs_ins,
                "parts_sum": hs_ins,
                "messages": messages,
                "connection_instructions": h["total"],
                "app_instructions": app,
                "app_parts": h["app_parts"],
                **({"cycles": t["cycles"], "app_cycles": t["app"]} if t else {}),
                "version": c.get("version"),
                "negotiated_suite": c.get("suite"),
                "negotiated_group": c.get("group"),
                "resumed": bool(c.get("resumed")),
                "early_data_accepted": bool(c.get("early_data_accepted")),
                "bytes_sent": c.get("bytes_sent"),
                "bytes_received": c.get("bytes_received"),
                "datagrams_sent": c.get("datagrams_sent"),
                "datagrams_received": c.get("datagrams_received"),
            }
        )
    _derive(s, dev, build)
    return s


def _derive(s: Series, dev: Core, build: QuicBuild) -> None:
    good = list(s.samples)
    if not good:
        s.status = "failed"
        if not s.failures:
            R.add_failure(s, "no connection completed")
        return
    ins = [x["instructions"] for x in good]
    med = statistics.median(ins)
    rows = D._message_rows(good)
    trows = D._timed_rows(good)
    for r in rows:
        r.update(T.cpi_ms(dev, r["instructions"]))
        if (r["dir"], r["message"]) in trows:
            r["time"] = T.figure(trows[(r["dir"], r["message"])], dev)
    app_rows = D._message_rows([{"messages": x["app_parts"]} for x in good])
    for r in app_rows:
        r.update(T.cpi_ms(dev, r["instructions"]))
    s.derived = DeviceDerived(
        instructions_median=med,
        instructions_min=min(ins),
        instructions_max=max(ins),
        spread=(max(ins) - min(ins)) / med if med else 0.0,
        parts_sum_max_error=max(
            abs(sum(m["instructions"] for m in x["messages"]) - x["instructions"]) / x["instructions"] for x in good
        ),
        messages=rows,
        app_parts=app_rows,
        stack_bytes_max=None,
        app_instructions_median=statistics.median(x["app_instructions"] for x in good),
        connection_instructions_median=statistics.median(x["connection_instructions"] for x in good),
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
        s.derived_as(DeviceDerived).time = D._device_time(
            {**T.figure(tuple(statistics.median(c[k] for c in cyc) for k in range(3)), dev), **T.model_note(dev)}
        )
        app_cyc = [x["app_cycles"] for x in good if "app_cycles" in x]
        s.derived_as(DeviceDerived).app_time = T.figure(
            tuple(statistics.median(c[k] for c in app_cyc) for k in range(3)), dev
        )
    if build.footprint:
        s.derived_as(DeviceDerived).footprint = build.footprint
    s.status = "partial" if s.failures else "ok"
