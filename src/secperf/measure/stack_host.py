"""Other TLS libraries' clients on this host: `secperf handshake --stack wolfssl,mbedtls`.

The guest client of `secperf device` (native/device/client.c, one backend per library) compiled
for this machine against Debian's libwolfssl and libmbedtls (native/device/Makefile, host-*
targets, built at first use into $SECPERF_HOME/device/build). Its markers (marker_host.c) record
the client thread's CPU time (CLOCK_THREAD_CPUTIME_ID) and the monotonic clock where the emulated
build's plugin records instruction counts, so the same attribution (device_attrib.py) partitions
each handshake's client CPU into messages, and the rows line up with the OpenSSL probe's breakdown
(same message names, "(sent)" / "(received)").

Server: `openssl s_server` on loopback (lab/services.SServer), started and stopped by PID. The
probe's own rows run against the probe's server (also OpenSSL 3); the client side is what differs.

Attribution on the host has no function-entry watch points (the plugin has them under QEMU): a
message the client SENDS owns its write; the work of building it before that write stays with the
message received before it (for wolfSSL: the client's Finished is built inside the server's
Finished part). Mbed TLS marks each state-machine step, so its sent messages own their building.
"""

from __future__ import annotations

import fcntl
import json
import os
import statistics
import subprocess
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import result as R
from ..core.errors import InputError, MeasurementError
from ..core.result_schema import HandshakeDerived, Result, Series
from ..lab import registry
from . import build_stage
from . import device_attrib as A
from .device import Server
from .device_build import DeviceSetupError, _fingerprint, _run, device_home, sources_dir, tool

if TYPE_CHECKING:
    from ..core.store import Run
    from . import Progress
    from .handshake import HandshakeConfig, HandshakeParams

# stack -> (make target, binary, Debian package of the host library)
HOST_STACKS = {
    "wolfssl": ("host-wolfssl", "sp-host-wolfssl", "libwolfssl-dev"),
    "mbedtls": ("host-mbedtls", "sp-host-mbedtls", "libmbedtls-dev"),
}
STACKS = ("openssl", *HOST_STACKS)  # openssl: the probe (native/probe), today's rows
GROUPS = {
    "x25519": "x25519",
    "p-256": "p-256",
    "prime256v1": "p-256",
    "secp256r1": "p-256",
    "p256": "p-256",
    "p-384": "p-384",
    "secp384r1": "p-384",
}
RUN_TIMEOUT_S = 120
SUM_RULE_TOLERANCE = 0.01
TIMER = {
    "name": "TLS handshake (client library's handshake call)",
    "start": "client about to call the library's handshake function (marker HS_BEGIN)",
    "end": "the handshake function returned (marker HS_END)",
}


def check_stacks(stacks: list[str]) -> list[str]:
    for s in stacks:
        if s not in STACKS:
            raise InputError(f"--stack: unknown stack {s!r}; known: {', '.join(STACKS)}")
    return list(dict.fromkeys(stacks))


def ensure_host_built(stack: str) -> tuple[Path, dict[str, Any]]:
    """(client binary, its --offers) for `stack`, built at first use (and when a source changes)."""
    target, binary, pkg = HOST_STACKS[stack]
    cc = tool("gcc", "build-essential")
    tool("make", "make")
    src = sources_dir()
    out = device_home() / "build" / f"host-{_fingerprint(src, [stack, 'host', _cc_line(cc)])}"
    client, meta = out / binary, out / f"{binary}.json"
    if not (build_stage.is_complete(out) and client.is_file() and meta.is_file()):
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(device_home() / "build" / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            build_stage.remove_stale(out.parent)
            if not (build_stage.is_complete(out) and client.is_file() and meta.is_file()):
                build_stage.invalidate(out)
                tmp = build_stage.stage(out)  # built apart, renamed into place when it succeeded
                try:
                    try:
                        _run(
                            ["make", "-s", "-f", str(src / "Makefile"), f"OUT={tmp}", target],
                            f"building the {stack} client for this host (native/device/Makefile)",
                            300,
                        )
                    except DeviceSetupError as exc:
                        raise DeviceSetupError(f"{exc}; the host build needs the Debian package {pkg}") from None
                    info = _run([str(tmp / binary), "--offers"], f"asking the {stack} host client what it offers", 60)
                    (tmp / meta.name).write_text(info)
                    build_stage.publish(tmp, out, {tmp: out})
                finally:
                    build_stage.discard(tmp)
    return client, json.loads(meta.read_text().splitlines()[0])


def offers(stack: str) -> dict[str, Any]:
    """The host build's --offers (library name, TLS versions, groups, suites, modes); built now if needed."""
    return ensure_host_built(stack)[1]


def offered(sc: tuple[str, str, str] | None, offers_: dict[str, Any]) -> bool:
    o = offers_.get("offers", {})
    return (
        sc is not None and sc[0] in o.get("tls", ()) and sc[1] in o.get("groups", ()) and sc[2] in o.get("suites", ())
    )


def _cc_line(cc: str) -> str:
    try:
        return subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout.splitlines()[0]
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return "unknown"


def stack_config(cfg: HandshakeConfig) -> tuple[str, str, str] | None:
    """(tls, group, suite) of a probe HandshakeConfig a host stack can run, or None: TLS over TCP,
    full or ticket-resumed, server authentication only, one group."""
    if cfg.proto != "tls" or cfg.mode not in ("full", "resume-ticket") or cfg.mtls:
        return None
    group = GROUPS.get((cfg.groups or "x25519").split(":")[0].lower())
    if group is None:
        return None
    names = f"{cfg.ciphersuites or ''} {cfg.ciphers or ''}".upper()
    suite = (
        "chacha20"
        if "CHACHA20" in names
        else "aes128gcm"
        if ("AES128-GCM" in names or "AES_128_GCM" in names or not names.strip())
        else None
    )
    if suite is None or cfg.cert_type not in ("rsa-2048", "ecdsa-p256") or cfg.depth != 1:
        return None
    return cfg.tls, group, suite


def _labels(stack: str, cfg: HandshakeConfig) -> dict[str, Any]:
    # the stack names the row in every table (the configuration column shows `label`)
    return {
        **asdict(cfg),
        "label": f"{cfg.label} ({stack})",
        "server": "s_server",
        "stack": stack,
        "client": f"{stack} client built for this host (native/device, marker_host.c)",
    }


def _wall_ns(path: Path) -> dict[int, int]:
    """HS_BEGIN..HS_END monotonic duration (ns) per handshake index, from the events' fifth field."""
    begin: dict[str, tuple[int, int]] = {}
    out: dict[int, int] = {}
    for ln in path.read_text().splitlines()[1:]:
        f = ln.split()
        if len(f) < 5 or f[1] != "M":
            continue
        kind, arg, wall = int(f[2]), int(f[3]), int(f[4])
        if kind == A.HS_BEGIN:
            begin["cur"] = (arg, wall)
        elif kind == A.HS_END and "cur" in begin:
            idx, w0 = begin.pop("cur")
            out[idx] = wall - w0
    return out


def _name(m: dict[str, Any], tls: str, resumed: bool) -> str:
    msg = m["message"]
    if m["dir"] == "sent" and msg == "record":
        # an encrypted record the client sent: its last flight (no client certificate here)
        msg = "Finished" if tls == "1.3" else "ChangeCipherSpec + Finished"
    return f"{msg} ({m['dir']})"


def measure(stack: str, cfg: HandshakeConfig, n: int, warmup: int, server: Server) -> Series:
    """One series: n warm handshakes of the host-built `stack` client (after warmup), each with its
    wall time, client thread CPU and per-message CPU partition."""
    sc = stack_config(cfg)
    s = R.new_series(f"handshake/{stack}/{cfg.label}", kind="handshake", labels=_labels(stack, cfg), timer=TIMER)
    client, offers = ensure_host_built(stack)
    s.labels["library"] = offers.get("library")
    if sc is None:
        R.add_failure(
            s,
            f"{stack}: the host clients run TLS over TCP, full or ticket-resumed, server "
            f"authentication only, RSA-2048 or ECDSA P-256 at depth 1; {cfg.label!r} is none of these",
        )
        return R.finalize_series(s)
    tls, group, suite = sc
    off = offers.get("offers", {})
    for what, v, have in (
        ("TLS", tls, off.get("tls", ())),
        ("group", group, off.get("groups", ())),
        ("suite", suite, off.get("suites", ())),
    ):
        if v not in have:
            R.add_failure(s, f"{stack} ({offers.get('library')}) offers {what} {', '.join(have)}, not {v}")
            return R.finalize_series(s)
    resumed = cfg.mode == "resume-ticket"
    prime = 1 if resumed else 0
    total = prime + warmup + n
    with tempfile.TemporaryDirectory(prefix="secperf-stack-") as tmp:
        ev = Path(tmp) / "events.txt"
        argv = [
            str(client),
            "--port",
            str(server.port),
            "--ca",
            str(server.certs.ca),
            "--tls",
            tls.replace(".", ""),
            "--group",
            group,
            "--suite",
            suite,
            "--n",
            str(total),
            "--no-app",
        ] + (["--resume"] if resumed else [])
        try:
            p = registry.run(
                argv,
                f"{stack} host client",
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT_S + total,
                env={**os.environ, "SP_HOST_EVENTS": str(ev)},
            )
        except subprocess.TimeoutExpired as exc:
            R.add_failure(s, f"the {stack} client did not finish {total} handshakes within {exc.timeout:g} s")
            return R.finalize_series(s)
        conns: list[dict[str, Any]] = []
        for line in p.stdout.splitlines():
            try:
                conns.append(json.loads(line))
            except ValueError:
                continue
        if not conns or not ev.is_file():
            R.add_failure(s, f"the {stack} client printed nothing (exit {p.returncode}): {p.stderr.strip()[-300:]}")
            return R.finalize_series(s)
        try:
            _, events = A.read_events(ev)
        except MeasurementError as exc:
            R.add_failure(s, str(exc))
            return R.finalize_series(s)
        wall = _wall_ns(ev)
    by = {c.get("conn"): c for c in conns}
    for c in conns:
        if not c.get("ok"):
            R.add_failure(s, f"handshake {c.get('conn')}: {c.get('stage')}: {c.get('error')}")
    per_msg: dict[str, list[float]] = {}
    worst = 0.0
    for h in A.handshakes(events, conns, tls):
        c = by.get(h.index, {})
        if h.index < prime + warmup or not (h.ok and c.get("ok")) or h.index not in wall:
            continue
        if resumed and not c.get("resumed"):
            R.add_failure(s, f"handshake {h.index}: the session was not resumed")
            continue
        s.values_us.append(wall[h.index] / 1e3)
        s.cpu_values_us.append(h.instructions / 1e3)
        worst = max(worst, abs(h.parts_sum - h.instructions) / h.instructions if h.instructions else 0.0)
        seen: dict[str, float] = {}
        for m in h.messages:
            k = _name(m, tls, resumed)
            seen[k] = seen.get(k, 0.0) + m["instructions"] / 1e3
        for k, us in seen.items():
            per_msg.setdefault(k, []).append(us)
    if per_msg:
        s.derived = HandshakeDerived(
            breakdown={
                "messages": [
                    {"message": k, "p50_cpu_us": statistics.median(v), "n": len(v)} for k, v in per_msg.items()
                ],
                "sum_rule_worst_error": worst,
                "sum_rule_ok": worst <= SUM_RULE_TOLERANCE,
                "rule": "thread CPU between the client's markers (native/device/marker_host.c), attributed as on the "
                "emulated cores (device_attrib.py); a sent message owns its write, its building stays with "
                "the message received before it (no watch points on the host)",
            }
        )
    return R.finalize_series(s)


def run_stacks(
    items: list[tuple[str, HandshakeConfig]],
    hp: HandshakeParams,
    doc: Result,
    run: Run | None = None,
    progress: Progress | None = None,
) -> Result:
    """items: (stack, HandshakeConfig); one s_server per certificate type, stopped by PID."""

    by_cert: dict[str, list[tuple[str, HandshakeConfig]]] = {}
    for it in items:
        by_cert.setdefault(it[1].cert_type, []).append(it)
    i = 0
    for cert, its in by_cert.items():
        with Server(cert) as srv:
            for stack, cfg in its:
                if progress:
                    progress("start", (stack, cfg), i, len(items), None)
                try:
                    s = measure(stack, cfg, hp.n, hp.warmup, srv)
                except DeviceSetupError as exc:
                    s = R.new_series(
                        f"handshake/{stack}/{cfg.label}", kind="handshake", labels=_labels(stack, cfg), timer=TIMER
                    )
                    R.add_failure(s, str(exc))
                    R.finalize_series(s)
                doc.series.append(s)
                if run is not None:
                    run.save(doc)
                if progress:
                    progress("done", (stack, cfg), i, len(items), s)
                i += 1
    return doc
