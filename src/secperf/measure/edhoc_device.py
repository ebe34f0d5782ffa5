"""EDHOC + OSCORE on the emulated devices: instructions (and the timing model's cycles) per initiator
step of secperf's EDHOC initiator in C (native/device/edhoc_c), on the crypto of a device build:
mbedtls3 (Mbed TLS 3.6, the default) or wolfssl59 (wolfCrypt 5.9, with its Cortex-M assembly P-256).
Both give P-256 ECDH, SHA-256, HKDF and AES-CCM (crypto_mbedtls.c / crypto_wolfssl.c).

What runs: EDHOC (RFC 9528) method 3 (static DH keys on both sides), cipher suite 2, CCS credentials
by kid (`m3-kid`) or by value (`m3-value`), then OSCORE (RFC 8613): the security context from the
EDHOC exporter and one protected CoAP GET and its response. The initiator is the guest, compiled for
the core's target with the same flags and against the same library objects as the stack's TLS
client (measure/edhoc_device_build.py), run under qemu-arm with the counting plugin; the responder is the
host's lakers with aiocoap's OSCORE (edhoc_device_peer.py), answering over the emulator's
stdin/stdout. The guest marks each step (marker.h OP_BEGIN/OP_END), so only the initiator's work is
counted, and waiting for the host is in no step.

Attribution: message_1 = ephemeral key pair and message_1; message_2 = G_XY, PRK_2e, decryption,
G_RX, PRK_3e2m, MAC_2 check, TH_3; message_3 = G_IY, PRK_4e3m, MAC_3, AEAD, TH_4, PRK_out;
oscore_export = exporter (master secret, salt) and the OSCORE context (keys, common IV). The four
sum to the handshake's instructions; oscore_protect and oscore_unprotect (the first request and its
response) are the application's share, as a TLS row's application data.

Every tool comes from Debian (gcc-arm-linux-gnueabihf, gcc-arm-none-eabi for the Cortex-M0+, qemu-user)
and the library sources from crates.io (wolfssl-sys, mbedtls-rs-sys, unpacked by scripts/bootstrap):
no Rust target is needed.
"""

from __future__ import annotations

import json
import os
import select
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core import result as R
from ..core.errors import InputError, MeasurementError
from ..core.paths import private_dir, write_private
from ..core.result_schema import DeviceDerived, DeviceTime, Series
from ..inputs.core_profiles import Core
from ..inputs.vocabulary import HANDSHAKES
from ..lab import registry
from . import device as D
from . import device_attrib as A
from . import device_timing as T
from .device_build import STACK_TARGETS, TARGETS, default_config
from .edhoc import make_keys
from .edhoc_device_build import CRYPTO, DEFAULT_STACK, EdhocBuild, build
from .edhoc_device_peer import Responder

# the build's names (measure/edhoc_device_build.py) stay importable from here, as callers import them
__all__ = [
    "APP_STEPS",
    "BOUNDARIES",
    "CRYPTO",
    "DEFAULT_STACK",
    "DIRECTION",
    "HANDSHAKE_STEPS",
    "IMPLEMENTATION",
    "RUN_TIMEOUT_S",
    "STEPS",
    "TIMER",
    "VARIANTS",
    "EdhocBuild",
    "EdhocDeviceError",
    "build",
    "check_stacks",
    "check_variants",
    "converse",
    "handshakes",
    "make_series",
    "measure",
    "run_guest",
    "target_for",
]

IMPLEMENTATION = "secperf EDHOC initiator (C)"
VARIANTS = {"m3-kid": "kid", "m3-value": "value"}  # handshake name (inputs/vocabulary HANDSHAKES) -> credential
# step id (native/device/edhoc_c/main.c) -> (name, direction)
STEPS = {
    1: ("message_1", "sent"),
    2: ("message_2", "received"),
    3: ("message_3", "sent"),
    4: ("oscore_export", "local"),
    5: ("oscore_protect", "sent"),
    6: ("oscore_unprotect", "received"),
}
DIRECTION = dict(STEPS.values())
HANDSHAKE_STEPS = ("message_1", "message_2", "message_3", "oscore_export")
APP_STEPS = ("oscore_protect", "oscore_unprotect")
RUN_TIMEOUT_S = 120
TIMER = {
    "name": "guest instructions per EDHOC handshake (initiator)",
    "start": "the initiator begins message_1 (marker OP_BEGIN 1)",
    "end": "the OSCORE security context is derived (marker OP_END 4); waiting for the responder excluded",
    "unit": "instructions (user mode, initiator process, counted under QEMU)",
}
BOUNDARIES = (
    "message_1: ephemeral key pair + message_1; message_2: G_XY, PRK_2e, PLAINTEXT_2, G_RX, PRK_3e2m, "
    "MAC_2 check, TH_3; message_3: G_IY, PRK_4e3m, MAC_3, AEAD, TH_4, PRK_out; oscore_export: exporter "
    "(master secret, salt) + OSCORE keys and common IV; app: oscore_protect (GET /temp), oscore_unprotect "
    "(its 2.05 response)"
)


class EdhocDeviceError(InputError):
    """A device, stack or handshake variant the EDHOC initiator has no build or implementation for."""


def check_variants(modes: str | Iterable[str]) -> list[str]:
    """--mode values for EDHOC: handshake names of the what-if (m<METHOD>-<CREDENTIAL>); "full" (the
    device command's default) is m3-kid. A name the C initiator does not implement exits 2 naming
    the ones it has."""

    items = [m.strip().lower() for m in (modes.split(",") if isinstance(modes, str) else modes) if m.strip()]
    out = []
    for m in items or ["m3-kid"]:
        m = "m3-kid" if m == "full" else m
        if m not in HANDSHAKES["edhoc"]:
            raise EdhocDeviceError(
                f"--mode {m}: no EDHOC handshake {m!r}; the EDHOC initiator on the device "
                f"implements {', '.join(VARIANTS)}"
            )
        if m not in VARIANTS:
            raise EdhocDeviceError(
                f"--mode {m}: the EDHOC initiator on the device ({IMPLEMENTATION}) implements "
                f"{', '.join(VARIANTS)} only (method 3, static DH keys; cipher suite 2; CCS "
                f"credentials by kid or by value; no EAD, no message_4)"
            )
        out.append(m)
    return list(dict.fromkeys(out))


def check_stacks(stacks: str | Iterable[str] | None, explicit: bool) -> list[str]:
    """The stacks EDHOC's crypto comes from: of an explicit --stack, those that have it (none: exit 2
    naming them); else the default one."""
    items = [s.strip().lower() for s in (stacks.split(",") if isinstance(stacks, str) else stacks or []) if s.strip()]
    if not explicit:
        return [DEFAULT_STACK]
    have = [s for s in items if s in CRYPTO]
    if not have:
        raise EdhocDeviceError(
            f"--stack {','.join(items)}: the EDHOC initiator runs on the crypto of "
            f"{' or '.join(CRYPTO)}; give one of them or leave --stack out (default {DEFAULT_STACK})"
        )
    return list(dict.fromkeys(have))


def target_for(dev: Core, stack: str = DEFAULT_STACK) -> str:
    t = D.target_for(dev)
    if t not in STACK_TARGETS.get(stack, tuple(TARGETS)):
        raise EdhocDeviceError(f"--device {dev.name}: there is no {t} build of {stack}, which EDHOC's crypto needs")
    return t


# -- one guest run ---------------------------------------------------------------------------------------


def _key_file(keys: Path, variant: str, path: Path) -> Path:
    """The initiator's key file (0600): its private key and both credentials, from make_keys's directory."""
    import cbor2  # reason: optional 'protocols' extra

    key = cbor2.loads((keys / "client.key").read_bytes())
    ccs = {
        w: cbor2.dumps(cbor2.loads((keys / f"{w}.ccs").read_bytes())[14], canonical=True) for w in ("client", "server")
    }
    text = (
        f"i {key[-4].hex()}\ncred_i {ccs['client'].hex()}\ncred_r {ccs['server'].hex()}\n"
        f"by_value {int(VARIANTS[variant] == 'value')}\n"
    )
    write_private(path, text.encode())
    return path


class _Lines:
    """Lines from the guest's stdout with a deadline (the pipe is read unbuffered, so select is exact)."""

    def __init__(self, fd: int, deadline: float):
        self.fd, self.deadline, self.buf = fd, deadline, b""
        self.limit_s = round(max(0.0, deadline - time.monotonic()), 2)  # for the reason

    def next(self) -> str | None:
        while b"\n" not in self.buf:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise MeasurementError(f"the EDHOC guest did not finish within {self.limit_s:g} s")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    return None
                self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode(errors="replace")


def converse(proc: subprocess.Popen[bytes], responder: Responder, deadline: float) -> list[dict[str, Any]]:
    """Answer the guest's messages until it exits: its JSON lines (one per handshake), and a failed
    line with the reason when the responder refuses a message (the guest is then told to stop)."""
    out: list[dict[str, Any]] = []
    stdout, stdin = proc.stdout, proc.stdin
    if stdout is None or stdin is None:
        raise MeasurementError("the EDHOC guest was started without its pipes")
    lines = _Lines(stdout.fileno(), deadline)

    def send(text: str) -> None:
        try:
            stdin.write((text + "\n").encode())
            stdin.flush()
        except BrokenPipeError:
            pass

    while (line := lines.next()) is not None:
        name, _, value = line.partition(" ")
        try:
            if name == "m1":
                send("m2 " + responder.message_2(bytes.fromhex(value)).hex())
            elif name == "m3" and value:
                responder.message_3(bytes.fromhex(value))
            elif name == "req" and value:
                send("resp " + responder.response(bytes.fromhex(value)).hex())
            elif line.startswith("{"):
                out.append(json.loads(line))
        except (MeasurementError, ValueError) as exc:
            out.append({"i": len(out), "ok": False, "stage": "responder", "error": str(exc)})
            send("stop")
    return out


def run_guest(
    eb: EdhocBuild, dev: Core, variant: str, n: int, timed: bool = True
) -> tuple[list[dict[str, Any]], list[A.Event]]:
    """n handshakes in one guest process: its result lines and the plugin's events."""

    with tempfile.TemporaryDirectory(prefix="secperf-edhoc-dev-") as td:
        tmp = private_dir(Path(td))
        keys = make_keys(tmp / "keys")
        key_file = _key_file(keys, variant, tmp / "initiator.keys")
        registry.track_secret(key_file)
        ev = tmp / "events.txt"
        timing = f",timing={T.write_params(dev, eb.binary, tmp / 'timing.txt')}" if timed and dev.timing else ""
        argv = [
            eb.lib.qemu,
            "-cpu",
            D.qemu_cpu(dev, eb.lib),
            "-plugin",
            f"{eb.lib.plugin},out={ev}{timing}",
            str(eb.binary),
            "run",
            str(key_file),
            str(n),
        ]
        try:  # the host's responder first: one that cannot start fails this variant (MeasurementError), no guest runs
            responder = Responder(keys, VARIANTS[variant])
        except Exception as exc:  # noqa: BLE001 -- lakers, cbor2 and the key files raise their own types
            registry.forget_secret(key_file)
            raise MeasurementError(
                f"the EDHOC responder (lakers, aiocoap) did not start: {type(exc).__name__}: {exc}"
            ) from None
        proc = registry.spawn(
            argv,
            "qemu EDHOC initiator",
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
        )
        try:
            lines = converse(proc, responder, time.monotonic() + (registry.scaled(RUN_TIMEOUT_S + 5 * n) or 0))
            if proc.stdin is not None:
                proc.stdin.close()
            err = proc.stderr.read().decode(errors="replace") if proc.stderr is not None else ""
            proc.wait(timeout=registry.scaled(30))
        except subprocess.TimeoutExpired as exc:  # it closed its output but did not exit
            raise MeasurementError(f"the EDHOC guest did not exit within {exc.timeout:g} s of its last line") from None
        finally:
            if proc.poll() is None:
                registry.kill_tree(proc)
            registry.forget(proc)
            registry.forget_secret(key_file)
        if not lines:
            raise MeasurementError(f"the EDHOC guest printed nothing (exit {proc.returncode}): {err.strip()[-400:]}")
        _total, events = A.read_events(ev)
    return lines, events


def handshakes(events: list[A.Event]) -> list[dict[str, Any]]:
    """Per handshake (HS_BEGIN..HS_END): instructions and, when timed, cycles (low, point, high) of each
    initiator step (OP_BEGIN..OP_END with the step id), and the whole process's count in between."""
    out: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    begin: dict[int, A.Event] = {}
    for e in events:
        if e.kind != "M":
            continue
        if e.a1 == A.HS_BEGIN:
            cur, begin = {"index": e.a2, "start": e, "steps": {}, "cycles": {}}, {}
        elif cur is None:
            continue
        elif e.a1 == A.OP_BEGIN:
            begin[e.a2] = e
        elif e.a1 == A.OP_END and e.a2 in begin:
            b = begin.pop(e.a2)
            name = STEPS.get(e.a2, (str(e.a2), ""))[0]
            cur["steps"][name] = e.count - b.count
            if b.timed is not None and e.timed is not None:
                cur["cycles"][name] = tuple(e.timed.cycles[k] - b.timed.cycles[k] for k in range(3))
        elif e.a1 == A.HS_END:
            start = cur.pop("start")
            cur["ok"] = e.a2 == 1 and all(s in cur["steps"] for s in HANDSHAKE_STEPS + APP_STEPS)
            cur["process_instructions"] = e.count - start.count
            out.append(cur)
            cur = None
    return out


# -- series ------------------------------------------------------------------------------------------------


def _labels(dev: Core, eb: EdhocBuild, variant: str, phase: str) -> dict[str, Any]:
    lib = eb.lib
    return {
        "device": dev.name,
        "stack": lib.stack,
        "library": f"{eb.library} + {IMPLEMENTATION}",
        "crypto_library": eb.library,
        "crypto": CRYPTO[lib.stack][2],
        "implementation": IMPLEMENTATION,
        "tls": "edhoc",
        "mode": variant,
        "method": 3,
        "cipher_suite": 2,
        "credential": VARIANTS[variant],
        "group": "p-256",
        "suite": "aes-ccm-16-64-128",
        "server_cert": f"ccs-p256 ({VARIANTS[variant]})",
        "client_cert": f"ccs-p256 ({VARIANTS[variant]})",
        "phase": phase,
        "qemu_cpu": D.qemu_cpu(dev, lib),
        "core_profile": dev.profile,
        "build_target": lib.target,
        "build": lib.build_note + "; the initiator (native/device/edhoc_c) with the same flags",
        **D.build_labels(lib),
        "boundaries": BOUNDARIES,
        "server": "lakers (EDHOC responder) + aiocoap OSCORE on the host, over the emulator's stdin/stdout",
        "qemu": lib.qemu_version,
        "cross_cc": lib.cross_cc,
    }


def _rows(samples: list[dict[str, Any]], key: str, dev: Core) -> list[dict[str, Any]]:
    """Median instructions (and cycles) per step over the samples, with the derived ms."""
    rows = []
    for name in HANDSHAKE_STEPS if key == "messages" else APP_STEPS:
        got = [m for s in samples for m in s[key] if m["message"] == name]
        if not got:
            continue
        ins = statistics.median(m["instructions"] for m in got)
        lo, hi = dev.ms_range(ins)
        row: dict[str, Any] = {
            "dir": DIRECTION[name],
            "message": name,
            "instructions": int(ins),
            "n": len(got),
            "ms_low": lo,
            "ms_high": hi,
        }
        cyc = [m["cycles"] for m in got if "cycles" in m]
        if cyc and dev.timing is not None:
            row["time"] = T.figure(T.median3(cyc), dev)
        rows.append(row)
    return rows


def make_series(
    dev: Core,
    eb: EdhocBuild,
    variant: str,
    phase: str,
    hss: list[dict[str, Any]],
    lines: dict[int, dict[str, Any]],
    failures: list[str],
) -> Series:
    stack = eb.lib.stack
    tag = "" if eb.lib.config == default_config(stack, eb.lib.target) else f"[{eb.lib.config}]"
    s = R.new_series(
        f"device/{dev.name}/{stack}{tag}/edhoc/{variant}/{phase}",
        kind="device",
        labels=_labels(dev, eb, variant, phase),
        timer=TIMER,
    )
    for reason in failures:
        R.add_failure(s, reason)
    for h in hss:
        parts = {}
        for key, names in (("messages", HANDSHAKE_STEPS), ("app_messages", APP_STEPS)):
            parts[key] = [
                {
                    "message": n,
                    "dir": DIRECTION[n],
                    "instructions": h["steps"][n],
                    **({"cycles": list(h["cycles"][n])} if n in h["cycles"] else {}),
                }
                for n in names
            ]
        ins = sum(m["instructions"] for m in parts["messages"])
        sample = {
            "handshake": h["index"],
            "instructions": ins,
            "parts_sum": ins,
            **parts,
            "app_instructions": sum(m["instructions"] for m in parts["app_messages"]),
            "process_instructions": h["process_instructions"],
            "sizes": {
                k: lines.get(h["index"], {}).get(k)
                for k in ("message_1", "message_2", "message_3", "request", "response")
            },
        }
        if all("cycles" in m for m in parts["messages"]):
            sample["cycles"] = [sum(m["cycles"][k] for m in parts["messages"]) for k in range(3)]
            sample["app_cycles"] = [
                sum(m["cycles"][k] for m in parts["app_messages"] if "cycles" in m) for k in range(3)
            ]
        s.samples.append(sample)
    if not s.samples:
        s.status = "failed"
        if not s.failures:
            R.add_failure(s, "no handshake completed")
        return s
    ins = [x["instructions"] for x in s.samples]
    med = statistics.median(ins)
    lo, hi = dev.ms_range(med)
    s.derived = DeviceDerived(
        instructions_median=med,
        instructions_min=min(ins),
        instructions_max=max(ins),
        spread=(max(ins) - min(ins)) / med if med else 0.0,
        parts_sum_max_error=0.0,
        messages=_rows(s.samples, "messages", dev),
        app_messages=_rows(s.samples, "app_messages", dev),
        app_instructions_median=statistics.median(x["app_instructions"] for x in s.samples),
        process_instructions_median=statistics.median(x["process_instructions"] for x in s.samples),
        sizes=s.samples[0]["sizes"],
        derived_ms={
            "ms_low": lo,
            "ms_high": hi,
            "clock_mhz": dev.clock_mhz,
            "cpi": list(dev.cpi),
            "cpi_estimate": dev.cpi_estimate,
            "rule": "instructions x CPI / clock: DERIVED from the core profile's CPI range",
        },
    )
    cyc = [x["cycles"] for x in s.samples if "cycles" in x]
    if cyc and dev.timing is not None:
        s.derived_as(DeviceDerived).time = DeviceTime.model_validate(
            {**T.figure(tuple(statistics.median(c[k] for c in cyc) for k in range(3)), dev), **T.model_note(dev)}
        )
        app = [x["app_cycles"] for x in s.samples if "app_cycles" in x]
        if app:
            s.derived_as(DeviceDerived).app_time = T.figure(
                tuple(statistics.median(c[k] for c in app) for k in range(3)), dev
            )
    if eb.footprint:
        s.derived_as(DeviceDerived).footprint = eb.footprint
    s.status = "partial" if s.failures else "ok"
    return s


def measure(
    dev: Core,
    variant: str,
    n: int,
    warmup: int,
    eb: EdhocBuild | None = None,
    timed: bool = True,
    config: str | None = None,
    stack: str = DEFAULT_STACK,
) -> list[Series]:
    """Cold and warm series of one EDHOC variant: one guest process with 1 + warmup + n handshakes."""
    (variant,) = check_variants([variant])
    eb = eb or build(target_for(dev, stack), config, stack)
    if variant not in eb.offers.get("variants", ()):
        raise EdhocDeviceError(
            f"--mode {variant}: the {eb.lib.target} initiator offers "
            f"{', '.join(eb.offers.get('variants', ())) or 'nothing'}"
        )
    try:
        lines, events = run_guest(eb, dev, variant, 1 + warmup + n, timed)
        run_failure = []
    except MeasurementError as exc:  # a hung or crashed guest: failed series with the reason
        lines, events, run_failure = [], [], [str(exc)]
    by = {x["i"]: x for x in lines if "i" in x}
    failures = run_failure + [
        f"handshake {x.get('i')}: {x.get('stage')}: {x.get('error') or 'code ' + str(x.get('code'))}"
        for x in lines
        if not x.get("ok")
    ]
    hss = [h for h in handshakes(events) if h["ok"] and by.get(h["index"], {}).get("ok")]
    cold = [h for h in hss if h["index"] == 0]
    warm = [h for h in hss if h["index"] >= 1 + warmup]
    out = [
        make_series(dev, eb, variant, "cold", cold, by, failures if not cold else []),
        make_series(dev, eb, variant, "warm", warm, by, failures),
    ]
    for s in out:
        s.labels["warmup_handshakes"] = warmup
    return out
