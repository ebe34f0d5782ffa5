"""The user's own server as the load's target (`secperf server --target HOST:PORT`, `fleet --replay
--target`): what the generators dial and offer, a bounded probe that turns an unusable target into
an input error, what the server negotiated, and the load levels against it.

LoadTarget is the one description of a target every load path shares: the TLS/DTLS handshake load
here (secperf-loadgen), the cluster's generators (app/cluster_generators.py: the same `loadgen_args()` on
every node) and the MQTT-level load (`app == "mqtt"`: `mqtt_args()` gives an MQTT client the
address, verification and client certificate without knowing the rest).

What the server's CPU is for a remote target: not measured. Its CPU is on its own machine, which
secperf does not reach; every row says so (derived.server_cpu) instead of a number, and "which side
limited the rate" can only name the generator (or say that it did not).
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import result as R
from ..core.errors import InputError
from ..core.jsonlines import parse_line
from ..core.native import find_probe
from ..core.result_schema import Series, ServerDerived
from ..lab import registry
from .server import level_failures
from .server_config import LoadParams, ServerMeasureError, find_loadgen
from .server_cpu import BUSY, generator_procs
from .server_load import run_level, summarize_level
from .server_storm import storm_argv, storm_output, storm_record
from .target import Target, parse_target

APPS = ("http", "none", "mqtt")  # the step after the handshake: HTTP GET, none, MQTT CONNECT -> CONNACK
PROTOCOLS = ("tls", "dtls")
PROBE_TIMEOUT_S = 5.0  # the bound of the reachability probe and of the probe handshake
SERVER_CPU_NOT_MEASURED = (
    "not measured: the target runs on its own machine (or namespace), whose CPU secperf "
    "does not read; CPU per handshake is the generator's only"
)
# a handshake failure that says the peer does not speak TLS at all
NOT_TLS = (
    "wrong version number",
    "packet length too long",
    "unexpected eof",
    "record layer failure",
    "http request",
    "unknown protocol",
    "timed out after",
    "record_layer_failure",
)
# what a server says when it refuses the client's certificate (or wants one it did not get)
REFUSED_CERT = (
    "certificate required",
    "bad certificate",
    "unknown ca",
    "certificate unknown",
    "unsupported certificate",
    "access denied",
    "decrypt error",
    "client certificate",
)


@dataclass(frozen=True)
class LoadTarget:
    """A server the generators load instead of one secperf starts."""

    target: Target
    protocol: str = "tls"  # tls (TCP) | dtls (DTLS 1.2 over UDP)
    app: str = "http"  # APPS
    groups: str | None = None  # the key-exchange groups offered (OpenSSL list), e.g. x25519:P-256
    ciphersuites: str | None = None  # TLS 1.3 suites offered
    ciphers: str | None = None  # TLS 1.2 cipher list offered
    sigalgs: str | None = None  # signature algorithms offered
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def addr(self) -> str:
        return self.target.addr

    @property
    def port(self) -> int:
        return self.target.port

    def tls_args(self) -> list[str]:
        """The offered groups, suites and signature algorithms (options of both native clients)."""
        a: list[str] = []
        for opt, v in (
            ("--groups", self.groups),
            ("--ciphersuites", self.ciphersuites),
            ("--ciphers", self.ciphers),
            ("--sigalgs", self.sigalgs),
        ):
            if v:
                a += [opt, v]
        return a

    def loadgen_args(self) -> list[str]:
        """secperf-loadgen's address, name and offer for this target (the client key is a path to a
        0600 file: the key itself is never on a command line)."""
        a = ["--host", self.addr, "--port", str(self.port), "--servername", self.target.sni, *self.tls_args()]
        if self.target.client_cert:
            a += ["--cert", str(self.target.client_cert), "--key", str(self.target.client_key)]
        return a

    def mqtt_args(self) -> dict[str, Any]:
        """What an MQTT client needs of the target: address, port, verification, client certificate."""
        t = self.target
        return {
            "host": t.addr,
            "port": t.port,
            "servername": t.sni,
            "ca": str(t.ca) if t.ca else None,
            "client_cert": str(t.client_cert) if t.client_cert else None,
            "client_key": t.client_key,
        }

    def labels(self) -> dict[str, Any]:
        return {
            **self.target.labels(),
            "target_protocol": self.protocol,
            "target_app": self.app,
            "offered": {
                k: v
                for k, v in (
                    ("groups", self.groups),
                    ("ciphersuites", self.ciphersuites),
                    ("ciphers", self.ciphers),
                    ("sigalgs", self.sigalgs),
                )
                if v
            },
        }


def parse_load_target(
    text: str,
    protocol: str = "tls",
    app: str | None = None,
    ca: str | None = None,
    servername: str | None = None,
    client_cert: str | None = None,
    client_key: str | None = None,
    groups: str | None = None,
    ciphersuites: str | None = None,
    ciphers: str | None = None,
    sigalgs: str | None = None,
) -> LoadTarget:
    """--target HOST:PORT and its companions checked (no network yet: `probe` does that); InputError
    naming the option."""
    if protocol not in PROTOCOLS:
        raise InputError(f"--protocol {protocol}: give {' or '.join(PROTOCOLS)} with --target")
    app = app or ("none" if protocol == "dtls" else "http")
    if app not in APPS:
        raise InputError(f"--target-app {app}: give {', '.join(APPS)}")
    if protocol == "dtls" and app != "none":
        raise InputError(
            f"--target-app {app} with --protocol dtls: the DTLS load is the handshake only; give --target-app none"
        )
    if client_key is not None and client_key.startswith("pkcs11:"):
        raise InputError(
            f"--client-key {client_key}: the load generator loads its client key from a PEM file; "
            "a pkcs11: URI works with `secperf handshake --connect`, not with --target"
        )
    t = parse_target(text, ca, servername, client_cert, client_key, option="--target")
    if t.client_key is not None:
        check_private(Path(t.client_key), "--client-key")
    for opt, v in (
        ("--groups", groups),
        ("--ciphersuites", ciphersuites),
        ("--ciphers", ciphers),
        ("--sigalgs", sigalgs),
    ):
        if v is not None and (not v.strip() or any(c.isspace() for c in v) or v.startswith("-")):
            raise InputError(f"{opt} {v!r}: give an OpenSSL list without spaces (e.g. x25519:P-256)")
    return LoadTarget(t, protocol, app, groups, ciphersuites, ciphers, sigalgs)


def check_private(path: Path, opt: str) -> None:
    """A key file others can read is refused (exit 2): secrets stay in 0600 files."""
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise InputError(
            f"{opt} {path}: others can read it (mode {mode:04o}); a private key belongs in a file "
            f"only its owner reads: chmod 600 {path}"
        )


def probe(
    lt: LoadTarget, tls: str = "1.3", timeout_s: float = PROBE_TIMEOUT_S, netns_prefix: list[str] | None = None
) -> dict[str, Any]:
    """The target checked before any load: reachable (a TCP connect bounded by `timeout_s`), speaking
    TLS (or DTLS), accepting the client certificate and, with --ca, verified; returns what it
    negotiated (version, suite, group, the server's signature). Every failure is an InputError
    naming the target and what to change. `netns_prefix` runs the probe handshake inside a network
    namespace (a node that reaches the target from there)."""
    if lt.protocol == "tls" and not netns_prefix:
        reach(lt, timeout_s)
    conn = handshake_once(lt, tls, timeout_s, netns_prefix)
    if not conn.get("ok"):
        raise InputError(refusal(lt, conn.get("stage", "?"), conn.get("reason") or "no reason given"))
    out = {
        "version": conn.get("version"),
        "cipher": conn.get("cipher"),
        "group": conn.get("group"),
        "kex": conn.get("kex"),
        "client_cert_sent": conn.get("client_cert_sent"),
        "server_verified": lt.target.ca is not None,
        "source": "one secperf-probe client handshake with the generators' offer, before the first level",
    }
    out.update(peer_signature(lt, tls, timeout_s, netns_prefix))
    return out


def reach(lt: LoadTarget, timeout_s: float) -> None:
    t0 = time.monotonic()
    try:
        with socket.create_connection((lt.addr, lt.port), timeout=timeout_s):
            pass
    except TimeoutError:
        raise InputError(
            f"--target {lt.name}: unreachable (no TCP answer within {timeout_s:g} s); check the "
            f"address, the port and any firewall between here and it"
        ) from None
    except OSError as exc:
        raise InputError(
            f"--target {lt.name}: unreachable ({exc.strerror or exc} after "
            f"{time.monotonic() - t0:.1f} s); is the server listening on {lt.addr}:{lt.port}?"
        ) from None


def handshake_once(lt: LoadTarget, tls: str, timeout_s: float, netns_prefix: list[str] | None = None) -> dict[str, Any]:
    """One counted handshake (and the app step) of secperf-probe client with the generators' offer."""
    args = [
        *(netns_prefix or []),
        str(find_probe()),
        "client",
        *lt.target.probe_args(),
        *lt.tls_args(),
        "--n",
        "1",
        "--warmup",
        "0",
        "--timeout-ms",
        str(int(timeout_s * 1000)),
        "--app",
        lt.app,
        *(["--proto", "dtls", "--tls", "1.2"] if lt.protocol == "dtls" else ["--tls", tls]),
    ]
    try:
        r = registry.run(
            args, "probe client (target check)", capture_output=True, text=True, timeout=timeout_s * 3 + 10
        )
    except subprocess.TimeoutExpired as exc:  # it answers TCP (reach) but never completes a handshake
        raise InputError(
            f"--target {lt.name}: no handshake within {exc.timeout:g} s (it accepts TCP but the TLS "
            f"handshake never ends); is a {'DTLS' if lt.protocol == 'dtls' else 'TLS'} server listening there?"
        ) from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise ServerMeasureError(f"secperf-probe client against {lt.name}: {exc}") from None
    if r.returncode == 2:
        raise InputError(f"--target {lt.name}: the client refused the options: {r.stderr.strip()[-300:]}")
    conn = next((m for m in map(parse_line, r.stdout.splitlines()) if m and m.get("type") == "conn"), None)
    if conn is None:
        err = next((m for m in map(parse_line, r.stdout.splitlines()) if m and m.get("type") == "error"), None)
        why = (err or {}).get("reason") or (err or {}).get("error") or (r.stderr or r.stdout).strip()[-300:]
        if lt.target.client_cert and ("cert" in why.lower() or "key" in why.lower()):
            raise InputError(f"--client-cert {lt.target.client_cert}: the client could not load it: {why}")
        raise ServerMeasureError(f"secperf-probe client against {lt.name}: {why or 'no connection line'}")
    return conn


def refusal(lt: LoadTarget, stage: str, reason: str) -> str:
    """The input error for a probe handshake that failed, by what the failure says."""
    low = reason.lower()
    name = f"--target {lt.name}"
    if stage == "connect":
        return f"{name}: unreachable ({reason})"
    if lt.target.ca is not None and "certificate verify failed" in low and "client certificate" not in low:
        return (
            f"{name}: its certificate does not verify against --ca {lt.target.ca} for the name "
            f"{lt.target.sni!r} ({reason}); give the CA that issued it, or --servername with the name it carries"
        )
    if any(k in low for k in REFUSED_CERT) or ("400" in low and stage == "app"):
        if lt.target.client_cert:
            return (
                f"--client-cert {lt.target.client_cert}: {lt.name} refuses it ({reason}); give a certificate "
                f"its CA issued"
            )
        return f"{name}: it asks for a client certificate ({reason}); give --client-cert and --client-key"
    if any(k in low for k in NOT_TLS):
        what = "DTLS" if lt.protocol == "dtls" else "TLS"
        return f"{name}: does not speak {what} ({reason}); point --target at the {what} port" + (
            ", or give --protocol dtls for a DTLS server" if lt.protocol == "tls" else ""
        )
    if stage == "app":
        return (
            f"{name}: the handshake worked but the step after it failed ({reason}); give --target-app "
            f"{'none' if lt.app != 'none' else 'http'} if the server does not speak {lt.app}"
        )
    return f"{name}: refused the handshake ({reason}); check --tls, --groups, --ciphersuites and --ciphers"


def peer_signature(lt: LoadTarget, tls: str, timeout_s: float, netns_prefix: list[str] | None = None) -> dict[str, Any]:
    """The server's handshake signature (type and digest) as `openssl s_client -brief` reports it, over
    DTLS 1.2 (UDP) for a DTLS target and from inside a node's namespace when given; {} when it cannot
    tell (the field is a label, the probe handshake already proved the target)."""
    t = lt.target
    version = "-dtls1_2" if lt.protocol == "dtls" else "-tls1_3" if tls == "1.3" else "-tls1_2"
    argv = [
        *(netns_prefix or []),
        "openssl",
        "s_client",
        "-connect",
        f"{t.addr}:{t.port}",
        "-servername",
        t.sni,
        "-brief",
        version,
    ]
    if t.client_cert:
        argv += ["-cert", str(t.client_cert), "-key", str(t.client_key)]
    if lt.groups:
        argv += ["-groups", lt.groups]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s + 5, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return {}
    out = {}
    for line in r.stderr.splitlines():
        k, _, v = line.partition(":")
        k = k.strip()
        if k in ("Peer signature type", "Signature type"):  # OpenSSL 3.0's -brief says the latter
            out["signature"] = v.strip()
        elif k in ("Peer signing digest", "Hash used"):
            out["signature_digest"] = v.strip()
        elif k == "Peer certificate":
            out["server_certificate"] = v.strip()
    return out


def loadgen_argv(
    lt: LoadTarget, tls: str, resume_ratio: float, concurrency: int, p: LoadParams, rate: float | None = None
) -> list[str]:
    """The generator's command line against the target (closed loop at `concurrency`, or open loop)."""
    procs = generator_procs(p)
    load = (
        ["--rate", f"{rate:g}", "--max-inflight", "4000", "--procs", str(procs)]
        if rate
        else ["--concurrency", str(concurrency), "--procs", str(min(procs, concurrency))]
    )
    return [
        str(find_loadgen()),
        *lt.loadgen_args(),
        *load,
        "--duration",
        f"{p.duration_s:g}",
        "--warmup",
        f"{p.warmup_s:g}",
        *(["--dtls", "--tls", "1.2"] if lt.protocol == "dtls" else ["--tls", tls]),
        "--resume-ratio",
        f"{resume_ratio:g}",
        "--app",
        lt.app,
        "--seed",
        str(p.seed),
        "--timeout-ms",
        str(int(PROBE_TIMEOUT_S * 1000)),
    ]


def series_id(lt: LoadTarget, tls: str, resume_ratio: float, conc: int | None, rate: float | None) -> str:
    at = f"@r{rate:g}" if rate else f"@c{conc}"
    return f"server/target/{lt.name}/{lt.protocol}-{tls}/{lt.app}/resume-{resume_ratio:g}{at}"


def new_series(
    lt: LoadTarget, tls: str, resume_ratio: float, conc: int | None, p: LoadParams, rate: float | None = None
) -> Series:
    labels = {
        "server": f"target {lt.name}",
        "key": "the target's own",
        "key_source": "the target's own",
        "client_auth": lt.target.client_cert is not None,
        "resume_ratio": resume_ratio,
        "chain_depth": None,
        "tls": "dtls1.2" if lt.protocol == "dtls" else tls,
        "protocol": lt.protocol,
        "concurrency": conc,
        "loop": "open" if rate else "closed",
        "offered_per_s": rate,
        "duration_s": p.duration_s,
        "warmup_s": p.warmup_s,
        "config": label(lt, resume_ratio),
        "key_extractable": None,
        "key_storage": "the target's own (not known here)",
        **lt.labels(),
    }
    return R.new_series(
        series_id(lt, lt.protocol == "dtls" and "1.2" or tls, resume_ratio, conc, rate),
        kind="server",
        labels=labels,
        timer={
            "name": "connection latency against the target (values: each interval's median)",
            "start": "the connection scheduled (closed loop: the previous one ended)",
            "end": "the step after the handshake done (HTTP response, CONNACK, or the handshake)",
            "clock": "CLOCK_MONOTONIC in each generator process",
        },
    )


def label(lt: LoadTarget, resume_ratio: float) -> str:
    parts = [f"target {lt.name}", "DTLS 1.2" if lt.protocol == "dtls" else f"TLS + {lt.app}"]
    if lt.target.client_cert:
        parts.append("client certificate")
    if resume_ratio:
        parts.append(f"{resume_ratio:.0%} resumed")
    return ", ".join(parts)


def fill_level(
    s: Series, level: dict[str, Any], run: dict[str, Any], rate: float | None, negotiated: dict[str, Any]
) -> None:
    """One level's numbers against a target: the generator's counts and latencies; the server's CPU
    not measured (said), which side limited the rate as far as the generator can tell."""
    d = s.derived_as(ServerDerived)
    for k in ("server_cpu_s", "server_wall_s", "server_utilisation", "server_cpu_us_per_handshake", "server_core_busy"):
        level[k] = None
    for k, v in level.items():
        setattr(d, k, v)  # the generator's figures, each a ServerDerived field (checked)
    d.server_cpu = SERVER_CPU_NOT_MEASURED
    gen = level.get("loadgen_busy")
    if gen is not None and gen >= BUSY:
        d.limited_by, d.limit_note = (
            "load generator",
            (
                f"the load generator limited the rate ({gen:.0%} of its {level.get('loadgen_cores_n', 1)} core(s) busy, "
                f"{level.get('loadgen_cpu_us_per_handshake') or 0:.0f} µs per handshake): the target's capacity is higher; "
                f"add generators (--cluster)"
            ),
        )
    else:
        d.limited_by, d.limit_note = (
            "the target or the network",
            "the generator was not busy: the target (or the path to it) set the rate" if not rate else None,
        )
        if rate:
            d.limited_by = "neither"
            d.limited_by_why = "the offered rate"
    d.negotiated = negotiated
    # the local path's values are the server's CPU per handshake per interval (not measured here):
    # each interval's median connection latency instead (the timer says so)
    s.values_us = [m["p50_ms"] * 1000 for m in run["lines"] if m.get("type") == "interval" and m.get("p50_ms")]
    s.samples = [m for m in run["lines"] if m.get("type") == "interval"]
    if rate and level["started_per_s"] < 0.95 * rate:
        d.warning = (
            f"the load generator started {level['started_per_s']:.0f} connections/s of the {rate:g}/s asked "
            f"({level['not_started']} arrivals found no free slot or came late)"
        )


def measure_target(
    lt: LoadTarget,
    tls: str,
    resume_ratio: float,
    p: LoadParams,
    negotiated: dict[str, Any],
    cores: list[int] | None = None,
    on_series: Callable[[Series], object] | None = None,
) -> list[Series]:
    """Every level of LoadParams against the target, one series each (generators here)."""

    cores = cores or sorted(os.sched_getaffinity(0))
    out = []
    levels = [(None, r) for r in p.rates] if p.rates else [(c, None) for c in p.concurrency]
    for conc, rate in levels:
        s = new_series(lt, tls, resume_ratio, conc, p, rate)
        s.labels.update(loadgen_cores=cores, loadgen_procs=generator_procs(p))
        try:
            argv = loadgen_argv(lt, tls, resume_ratio, conc or 1, p, rate)
            run = run_level(argv, None, p.warmup_s + p.duration_s + 30, cores)
            level = summarize_level(run)
        except ServerMeasureError as exc:
            R.add_failure(s, str(exc))
            out.append(R.finalize_series(s))
            continue
        fill_level(s, level, run, rate, negotiated)
        level_failures(s, level)
        out.append(R.finalize_series(s))
        if on_series:
            on_series(out[-1])
    return out


def retarget(argv: list[str], lt: LoadTarget) -> list[str]:
    """A generator command line made for a local server (`--port P`), aimed at the target instead."""
    a = list(argv)
    if "--port" in a:
        i = a.index("--port")
        del a[i : i + 2]
    return [a[0], *lt.loadgen_args(), *a[1:]]


def replay_storm(
    lt: LoadTarget,
    clients: int,
    policy: str = "exponential",
    base_s: float = 0.5,
    cap_s: float = 8.0,
    timeout_s: float = 10.0,
    capacity_s: float = 2.0,
    duration_s: float = 120.0,
    seed: int = 1,
    tls: str = "1.3",
) -> dict[str, Any]:
    """measure.server_storm.replay_storm against the target: its capacity at 32 clients just before
    and after, and in between `clients` clients of `secperf-loadgen --storm` connecting at once.
    The server's CPU during the storm is not measured (None)."""

    cores = sorted(os.sched_getaffinity(0))
    p = LoadParams(concurrency=[32], duration_s=capacity_s, warmup_s=0.3, seed=seed, core=-1)
    cap = loadgen_argv(lt, tls, 0.0, 32, p)
    before = summarize_level(run_level(cap, None, capacity_s + 30, cores))
    time.sleep(1.0)
    argv = retarget(
        storm_argv(lt.port, clients, policy, base_s, cap_s, timeout_s, duration_s, tls=tls, app=lt.app, seed=seed), lt
    )
    try:
        r = registry.run(
            argv, "secperf-loadgen --storm (target)", capture_output=True, text=True, timeout=duration_s + 60
        )
    except subprocess.TimeoutExpired as exc:
        raise ServerMeasureError(f"secperf-loadgen --storm did not end within {exc.timeout:g} s") from None
    time.sleep(1.0)
    after = summarize_level(run_level(cap, None, capacity_s + 30, cores))
    lines, end = storm_output(r)
    return storm_record(
        f"target {lt.name}",
        "the target's own",
        (clients, policy, base_s, cap_s, timeout_s),
        before,
        after,
        end,
        None,
        None,
        server_cpu=SERVER_CPU_NOT_MEASURED,
        intervals=[m for m in lines if m.get("type") == "interval"],
    )
