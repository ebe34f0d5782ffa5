"""MQTT-level load on mosquitto: N persistent MQTT/TLS clients of `secperf-mqttload` (native/loadgen)
connecting at a set rate with client certificates, held connected while they PUBLISH (QoS 0/1) with
keep-alive, then, when asked, a reconnect storm (every connection reset at once, each client back
under a back-off policy). Per phase: CONNACK, PUBACK and wait histograms (the log-linear bins of
core/histogram.py), refused and failed attempts by reason, and the broker's CPU (it runs here,
pinned to one core; the generator runs on the others). The broker's handshake capacity is measured
just before and after with `secperf-loadgen --app mqtt` (closed loop, 32 clients; fewer with the key
on the token, `capacity_clients`): the figure the fleet model of a storm takes.

mosquitto honours the server key (its type and chain depth: the lab's PEM files), client
authentication (require_certificate) and resumption (TLS 1.3 tickets; a resumed client skips its
certificate and so its secure element); what it cannot do is refused before anything runs
(`validate`). With `key_source` offload:PROFILE:busy|sleep the broker's key is the lab token's, loaded
through OpenSSL's pkcs11 engine behind the secure-element shim: every full handshake signs on the
token, and the shim's log counts the signatures in each window (capacity runs, load)."""

from __future__ import annotations

import functools
import math
import os
import resource
import statistics
import subprocess
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..core.errors import InputError, InternalError, MeasurementError
from ..core.histogram import Histogram
from ..core.jsonlines import parse_line
from ..core.native import find_native
from ..core.paths import private_dir, write_private
from ..lab import registry
from ..lab.iot_services import Mosquitto
from .accept_rate import measure_accept_rate
from .server_config import KEYS, LoadParams, ServerConfig, ServerMeasureError, check_offload
from .server_cpu import pin, process_cpu_s
from .server_load import loadgen_argv, run_level, summarize_level
from .server_start import Offload, low_seclevel_conf
from .server_target import SERVER_CPU_NOT_MEASURED
from .storm_capacity import busy_between, cores_busy_s
from .storm_sync import SYNC_OPTION, StormSync, drop_skew
from .tcp_counters import counters_between, tcp_counters, tcp_sysctls

if TYPE_CHECKING:
    from collections.abc import Callable

    # runs the generator's command line (all clients) with the broker's PID and a time budget:
    # run_mqttload here, or app/cluster_mqtt's split over a cluster's generators (run_mqttload's dict)
    LoadRunner = Callable[[list[str], int | None, float], dict[str, Any]]

    from ..inputs.se_profiles import Profile
    from ..lab.pki import CertSet, LabPKI
    from .server_target import LoadTarget

ClientPair = tuple[Path, Path]  # a client certificate and its key

MQTTLOAD_NAME = "secperf-mqttload"
POLICIES = ("none", "fixed", "exponential", "decorrelated")
PHASES = ("ramp", "hold", "storm")
FD_MARGIN = 64  # open files the generator and the broker keep beside their clients' sockets
SE_SAMPLES = 4096  # signing times drawn from the profile, cycled through by the generator


def find_mqttload() -> Path:
    return find_native(MQTTLOAD_NAME, "bin", "SECPERF_MQTTLOAD", "native/loadgen")


@dataclass(frozen=True)
class MqttLoadConfig:
    clients: int = 100
    connect_rate: float = 200.0  # ramp: new connections per second
    hold_s: float = 10.0
    publish_rate: float = 100.0  # PUBLISH per second over all clients
    qos: int = 1
    payload: int = 32  # bytes
    keepalive_s: int = 60
    timeout_s: float = 10.0  # per attempt (connect to CONNACK)
    storm: bool = True
    policy: str = "exponential"
    base_s: float = 0.5
    cap_s: float = 8.0
    max_attempts: int = 100
    storm_max_s: float = 300.0
    spread_s: float = 0.0  # the storm's first attempts spread uniformly over this
    resume_ratio: float = 0.0  # share of (re)connections offering the newest session
    se_profile: str | None = None  # a secure element's signing time per connection (client side)
    key: str = "ecdsa-p256"  # the broker's key
    key_source: str = "software"  # the broker's key: software (PEM file) | offload:PROFILE:busy|sleep (token)
    client_auth: bool = True  # mosquitto's require_certificate
    depth: int = 1
    tls: str = "1.3"
    core: int = 0  # the broker's core
    capacity_s: float = 2.0  # each capacity run (before and after), seconds
    seed: int = 1
    # the profiles `se_profile` and an offloaded `key_source` name, resolved by the command
    # (app/mqtt_load.resolved): the measurement takes the objects; not part of the configuration said
    se: Profile | None = field(default=None, compare=False, repr=False)
    offload_profile: Profile | None = field(default=None, compare=False, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The configuration as the Result says it (names, not the resolved profiles)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.compare}

    @classmethod
    def from_record(cls, d: dict[str, Any]) -> MqttLoadConfig:
        """The configuration a Result or a saved run recorded (as_dict), keys of other secperf versions left out."""
        known = {f.name for f in fields(cls) if f.compare}
        return cls(**{k: v for k, v in d.items() if k in known})

    def client_se(self) -> Profile | None:
        """The clients' secure-element profile (--se), as the command resolved it; None without one."""
        if self.se_profile is None:
            return None
        return _resolved(self.se, self.se_profile, f"--se {self.se_profile}")

    def broker_se(self) -> Profile | None:
        """The broker's offloaded key's profile (--key-source offload:PROFILE:WAIT); None in software."""
        if self.key_source == "software":
            return None
        return _resolved(self.offload_profile, self.key_source.split(":")[1], f"--key-source {self.key_source}")


def _resolved(prof: Profile | None, name: str, option: str) -> Profile:
    if prof is None or prof.name != name:
        raise InternalError(
            f"internal: {option}: the secure-element profile was not resolved at the command (app/mqtt_load.resolved)"
        )
    return prof


def validate(c: MqttLoadConfig) -> None:
    """Every option checked before anything starts; what mosquitto cannot do is named."""
    if not 1 <= c.clients <= 1_000_000:
        raise InputError(f"--clients {c.clients}: give 1..1,000,000")
    checks = (
        ("--connect-rate", c.connect_rate, 0.1, 1e6),
        ("--hold", c.hold_s, 0, 86400),
        ("--publish-rate", c.publish_rate, 0, 1e6),
        ("--timeout", c.timeout_s, 0.01, 3600),
        ("--base", c.base_s, 0, 86400),
        ("--cap", c.cap_s, 0, 86400),
        ("--storm-max", c.storm_max_s, 1, 86400),
        ("--spread", c.spread_s, 0, 86400),
        ("--resume-ratio", c.resume_ratio, 0, 1),
        ("--capacity-seconds", c.capacity_s, 0.2, 600),
    )
    for name, v, lo, hi in checks:
        if not (isinstance(v, (int, float)) and math.isfinite(v) and lo <= v <= hi):
            raise InputError(f"{name} {v}: give {lo:g}..{hi:g}")
    if c.qos not in (0, 1, 2):
        raise InputError(f"--qos {c.qos}: give 0, 1 or 2")
    if not 0 <= c.payload <= 1024:
        raise InputError(f"--payload {c.payload}: give 0..1024 bytes")
    if not 0 <= c.keepalive_s <= 65535:
        raise InputError(f"--keepalive {c.keepalive_s}: give 0..65535 seconds (0: none)")
    if not 1 <= c.max_attempts <= 1_000_000:
        raise InputError(f"--max-attempts {c.max_attempts}: give 1..1,000,000")
    if c.policy not in POLICIES:
        raise InputError(f"--policy {c.policy!r}: known: {', '.join(POLICIES)}")
    if c.tls not in ("1.2", "1.3"):
        raise InputError(f"--tls {c.tls}: give 1.2 or 1.3")
    if c.key not in KEYS:
        raise InputError(f"--key {c.key!r}: known: {', '.join(k for k in KEYS if not k.endswith('-nocrt'))}")
    if c.key.endswith("-nocrt"):
        raise InputError(
            f"--key {c.key}: mosquitto loads its key from a PEM file, which OpenSSL cannot read "
            "without CRT parameters; a no-CRT key runs on `secperf server --server probe` only"
        )
    if not 1 <= c.depth <= 3:
        raise InputError(f"--chain-depth {c.depth}: give 1..3")
    if c.key_source != "software":
        check_offload(c.key_source, c.key)
        if c.depth != 1:
            raise InputError(
                f"--chain-depth {c.depth} with --key-source {c.key_source}: the token's key has one "
                "certificate from the lab CA (depth 1)"
            )
    if not 0 <= c.core < (os.cpu_count() or 1):
        raise InputError(f"--core {c.core}: this machine has cores 0..{(os.cpu_count() or 1) - 1}")
    if c.se_profile is not None:  # its name: resolved by the command (app/mqtt_load.resolved)
        if not c.client_auth:
            raise InputError(
                f"--se {c.se_profile} with --client-auth off: without client authentication the "
                "client never signs, so its secure element costs nothing; turn --client-auth on"
            )


def se_samples_file(prof: Profile, path: Path, seed: int) -> Path:
    """SE_SAMPLES signing times (ms) of the profile, kept session and key handle (C_SignInit + C_Sign,
    data/secure_elements.toml), one a line, in a private file the generator draws from."""

    rng = np.random.default_rng(seed)
    ms = prof.sample_ms("C_SignInit", rng, SE_SAMPLES) + prof.sample_ms("C_Sign", rng, SE_SAMPLES)
    write_private(path, "".join(f"{v:.4f}\n" for v in ms).encode())
    return path


def se_said(prof: Profile | None, path: Path | None) -> dict[str, Any] | None:
    """What the Result says of the secure element: the profile, the calls its time comes from, the
    drawn times' mean and median, and where the figures come from."""
    if prof is None or path is None:
        return None

    ms = [float(x) for x in path.read_text().split()]
    return {
        "profile": prof.name,
        "calls": "C_SignInit + C_Sign (kept session and key handle)",
        "drawn": len(ms),
        "mean_ms": statistics.fmean(ms),
        "p50_ms": statistics.median(ms),
        "where": "the client's handshake pauses this long when the broker asks for its certificate; the "
        "signature itself is the software key's",
        "source": prof.source,
    }


def fd_limits(clients: int) -> dict[str, int]:
    """Raise this process's open-file limit to its hard limit (the broker inherits it) and say whether
    the clients fit; the generator checks its own (one process) and the ephemeral ports."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
    if soft != resource.RLIM_INFINITY and clients + FD_MARGIN > soft:
        raise InputError(
            f"--clients {clients}: the open-file limit binds: RLIMIT_NOFILE {soft} (hard limit {hard}) "
            f"holds at most {soft - FD_MARGIN} clients (one socket each in the generator and in "
            "mosquitto, which inherits the limit)"
        )
    lo, hi = 32768, 60999
    try:
        lo, hi = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        pass
    ports = hi - lo + 1
    return {
        "nofile": soft,
        "nofile_hard": hard,
        "ephemeral_ports": ports,
        "source_addrs": max(1, math.ceil(clients / ports)),
    }


@functools.lru_cache(maxsize=4)
def generator_syncs(exe: str) -> bool:
    """Does this secperf-mqttload take --storm-sync? (A build older than the option does not: its
    storm then starts unsynchronised, as before, and the Result has no storm_sync record.)"""
    try:
        p = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--storm-sync" in p.stdout


def mqttload_argv(
    port: int, c: MqttLoadConfig, client_pair: ClientPair | None, source_addrs: int, se_file: Path | None
) -> list[str]:
    argv = [
        str(find_mqttload()),
        "--port",
        str(port),
        "--clients",
        str(c.clients),
        "--connect-rate",
        f"{c.connect_rate:g}",
        "--hold",
        f"{c.hold_s:g}",
        "--publish-rate",
        f"{c.publish_rate:g}",
        "--qos",
        str(c.qos),
        "--payload",
        str(c.payload),
        "--keepalive",
        str(c.keepalive_s),
        "--timeout-ms",
        str(max(1, int(c.timeout_s * 1000))),
        "--backoff",
        c.policy,
        "--backoff-base-ms",
        f"{c.base_s * 1000:g}",
        "--backoff-cap-ms",
        f"{c.cap_s * 1000:g}",
        "--max-attempts",
        str(c.max_attempts),
        "--storm-max",
        f"{c.storm_max_s:g}",
        "--spread-ms",
        f"{c.spread_s * 1000:g}",
        "--resume-ratio",
        f"{c.resume_ratio:g}",
        "--tls",
        c.tls,
        "--source-addrs",
        str(source_addrs),
        "--seed",
        str(c.seed),
    ]
    if c.storm:  # every generator drops its clients at one instant the driver hands out (storm_sync.py)
        argv += ["--storm", *(["--storm-sync"] if generator_syncs(argv[0]) else [])]
    if client_pair:
        argv += ["--cert", str(client_pair[0]), "--key", str(client_pair[1])]
    if se_file is not None:
        argv += ["--se-samples", str(se_file)]
    return argv


CAPACITY_CLIENTS = 32  # closed-loop clients of a capacity run (software key: enough to saturate the broker)
QUEUE_SHARE = 0.25  # with the key on the token: the clients' queue at the token at most this share of the run


def capacity_clients(c: MqttLoadConfig) -> int:
    """Closed-loop clients of a capacity run: 32, or with the key on the token as many as queue behind
    its one-at-a-time signatures for at most a quarter of the run (profile's mean C_SignInit + C_Sign),
    at least 2: 32 clients on a 60 ms card would wait 2 s per handshake, beyond a short run's window,
    and spill their signatures into the next window."""
    prof = c.broker_se()
    if prof is None:
        return CAPACITY_CLIENTS
    sign_s = sum((d.mean() if (d := prof.dist(fn)) else 0.0) for fn in ("C_SignInit", "C_Sign")) / 1000
    if sign_s <= 0:
        return CAPACITY_CLIENTS
    return max(2, min(CAPACITY_CLIENTS, int(QUEUE_SHARE * c.capacity_s / sign_s)))


def capacity(port: int, broker_pid: int, c: MqttLoadConfig, client_pair: ClientPair | None) -> dict[str, Any]:
    """The broker's capacity: TLS handshake + CONNECT/CONNACK per second at saturation (closed loop,
    secperf-loadgen --app mqtt, `capacity_clients`), its CPU per connection and what limited it."""
    n = capacity_clients(c)
    cfg = ServerConfig("mosquitto", c.key, client_auth=c.client_auth, resume_ratio=0.0, depth=c.depth, tls=c.tls)
    p = LoadParams(concurrency=[n], duration_s=c.capacity_s, warmup_s=0.3, seed=c.seed, core=c.core)
    lv = summarize_level(
        run_level(loadgen_argv(port, cfg, n, p, client_pair, app="mqtt"), broker_pid, c.capacity_s + 30)
    )
    keys = ("handshakes_per_s", "handshakes", "failed", "server_cpu_us_per_handshake", "server_utilisation")
    return {"clients": n, **{k: lv.get(k) for k in (*keys, "limited_by", "errors")}}


def _phase_figures(line: dict[str, Any], cpu_s: float | None) -> dict[str, Any]:
    """A phase line with its histograms read (core/histogram) and the broker's CPU over the phase."""
    out = dict(line)
    for k in ("connack_hist_us", "hs_hist_us", "puback_hist_us", "wait_hist_us"):
        h = Histogram.from_pairs(line.get(k, []), f"secperf-mqttload {line.get('phase')} {k}")
        out[k] = h.to_pairs()
        out[k.replace("_hist_us", "_n")] = h.n
    el = line.get("elapsed_s") or 0
    out["broker_cpu_s"] = cpu_s
    out["broker_utilisation"] = cpu_s / el if cpu_s is not None and el > 0 else None
    return out


def run_mqttload(argv: list[str], broker_pid: int | None, cores: list[int], timeout_s: float) -> dict[str, Any]:
    """Runs the generator (pinned to `cores`), reading the broker's CPU at each phase line as it comes."""

    def pre() -> None:
        os.sched_setaffinity(0, cores)

    cpu0, tcp0 = process_cpu_s(broker_pid) if broker_pid else None, tcp_counters()
    busy0 = cores_busy_s()  # every core's busy time at each phase line: the share other work left
    synced = SYNC_OPTION in argv
    proc = registry.spawn(
        argv,
        "secperf-mqttload",
        stdin=subprocess.PIPE if synced else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=pre,
    )

    def send(_: int, ns: int) -> None:
        try:
            assert proc.stdin is not None
            proc.stdin.write(f"storm-at {ns}\n")
            proc.stdin.flush()
        except (OSError, ValueError):
            pass  # the generator is gone: its lines (or their absence) say so

    sync = StormSync(1, send)
    lines: list[dict[str, Any]] = []
    phases: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout_s
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            m = parse_line(raw)
            if not m:
                continue
            lines.append(m)
            if m.get("type") == "storm_ready":
                sync.ready(0)
            if m.get("type") == "phase":
                try:
                    cpu = process_cpu_s(broker_pid) if broker_pid else None
                except MeasurementError:
                    cpu = None  # the broker is gone: its CPU is not read (the phase still counts)
                phases.append(_phase_figures(m, cpu - cpu0 if cpu is not None and cpu0 is not None else None))
                busy = cores_busy_s()
                phases[-1]["cores_busy_s"] = busy_between(busy0, busy)
                phases[-1]["tcp_counters"] = counters_between(tcp0, tcp := tcp_counters())  # the kernel's
                cpu0, busy0, tcp0 = cpu, busy, tcp
            if time.monotonic() > deadline:
                proc.terminate()
        err = proc.stderr.read() if proc.stderr else ""
        try:
            rc = proc.wait(timeout=30)
        except subprocess.TimeoutExpired as exc:  # closed its output but never exited: named, no traceback
            raise MeasurementError(
                f"secperf-mqttload did not exit within {exc.timeout:g} s of closing its output"
            ) from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        registry.forget(proc)
    if rc == 2:
        raise InputError(f"secperf-mqttload: {err.strip()}")
    end = next((m for m in lines if m.get("type") == "end"), None)
    if end is None:
        raise ServerMeasureError(f"secperf-mqttload gave no end line (exit {rc}): {err.strip()[-300:]}")
    storms = [m for m in lines if m.get("type") == "phase" and m.get("phase") == "storm"]
    return {
        "meta": next((m for m in lines if m.get("type") == "meta"), {}),
        "phases": phases,
        "end": end,
        "intervals": [m for m in lines if m.get("type") == "interval"],
        "generator_cores": cores,
        "tcp_sysctls": tcp_sysctls(),  # the generator's kernel: its SYN timers (fleet's model takes them)
        **({"storm_sync": {**sync.said(), **drop_skew(storms)}} if synced and storms else {}),
    }


def measure(pki: LabPKI, c: MqttLoadConfig, workdir: Path, load: LoadRunner | None = None) -> dict[str, Any]:
    """Starts mosquitto (pinned to c.core) with the lab's certificates, measures its capacity, runs the
    load (and the storm), measures the capacity again, stops it. Returns everything the Result keeps.
    `load` (a LoadRunner) runs the load elsewhere than on this machine's other cores (a cluster)."""

    validate(c)
    limits = fd_limits(c.clients)
    wd = private_dir(workdir)
    certs = pki.server(c.key.removesuffix("-nocrt"), c.depth)
    client = pki.client("ecdsa-p256")
    pair = (client.cert, client.key) if c.client_auth else None
    se_file = se_samples_file(se, wd / "se-signing-ms.txt", c.seed) if (se := c.client_se()) else None
    broker = Mosquitto(
        certs,
        client.ca,
        nodelay=True,
        workdir=wd / "mosquitto",
        require_certificate=c.client_auth,
        max_connections=-1,
        connection_messages=False,
        tls_version=None,
    )
    off = None
    if c.key_source != "software":
        off = Offload(
            cast("Profile", c.broker_se()), c.key_source.split(":")[2], c.key, private_dir(wd / "token"), c.seed
        )
        broker.certs = cast("CertSet", SimpleNamespace(chain=off.cert, key=None))
        broker.engine_key = off.uri  # the PIN in the URI's pin-source file (0600), never in argv
        broker.prefix = off.prefix()
    elif c.key == "rsa-1024":
        conf = wd / "openssl-seclevel0.cnf"
        write_private(conf, low_seclevel_conf().encode())
        broker.prefix = ["env", f"OPENSSL_CONF={conf}"]
    t_ns = [time.monotonic_ns()]
    broker.start()
    try:
        if broker.proc is None or broker.port is None:
            raise ServerMeasureError("mosquitto started, but without its process or its port")
        bpid, bport = broker.proc.pid, broker.port
        pin(bpid, c.core)
        usable = sorted(os.sched_getaffinity(0))
        cores = [x for x in usable if x != c.core] or usable
        t_ns.append(time.monotonic_ns())

        accept = measure_accept_rate(bport)  # the idle broker's accept rate (fleet's model takes it)
        before = capacity(bport, bpid, c, pair)
        time.sleep(0.5)
        t_ns.append(time.monotonic_ns())
        budget = (c.clients / c.connect_rate + c.timeout_s + 30) + c.hold_s + (c.storm_max_s if c.storm else 0) + 120
        argv = mqttload_argv(bport, c, pair, limits["source_addrs"], se_file)
        run = load(argv, bpid, budget) if load is not None else run_mqttload(argv, bpid, cores, budget)
        time.sleep(0.5)
        t_ns.append(time.monotonic_ns())
        after = capacity(bport, bpid, c, pair)
        t_ns.append(time.monotonic_ns())
        described = broker.describe()
    finally:
        broker.stop()
    caps = [x["handshakes_per_s"] for x in (before, after) if x.get("handshakes_per_s")]
    return {
        "config": c.as_dict(),
        "limits": limits,
        "broker": {k: described.get(k) for k in ("set_tcp_nodelay", "require_certificate", "max_connections", "key")},
        "broker_core": c.core,
        "broker_key": broker_key_said(c, off, t_ns),
        "capacity_per_s": sum(caps) / len(caps) if caps else None,
        "capacity_before": before,
        "capacity_after": after,
        "accept_rate": accept,
        "se": se_said(c.client_se(), se_file),
        **run,
    }


def broker_key_said(c: MqttLoadConfig, off: Offload | None, t_ns: list[int]) -> dict[str, Any]:
    """Where the broker's key is and, on the token, the shim's count of its signatures (C_Sign without
    the length query) in each window: start-up and the negotiation probe, the capacity run before,
    the load (ramp, hold, storm), the capacity run after; with their wall time and the profile's
    bound (one signature at a time: 1 / (SoftHSM2 + injected delay))."""
    if off is None:
        return {"source": "software", "where": "PEM file read by mosquitto"}

    calls = [x for x in off.calls() if x.get("fn") == "C_Sign" and not x.get("length_query")]
    windows = ("start", "capacity_before", "load", "capacity_after")
    counts = {w: sum(1 for x in calls if a <= x.get("start_ns", 0) < b) for w, a, b in zip(windows, t_ns, t_ns[1:])}
    occ = [(x.get("real_ns", 0) + x.get("delay_ns", 0)) / 1e6 for x in calls]
    return {
        "source": c.key_source,
        "where": "the lab token (SoftHSM2) behind the secure-element shim, through OpenSSL's pkcs11 engine "
        "(tls_engine pkcs11, tls_keyform engine); the PIN in the URI's 0600 pin-source file",
        "uri": off.uri.split("?", 1)[0],
        "profile": off.profile.name,
        "wait": off.profile.wait,
        "profile_source": off.profile.source,
        "token_signs": counts,
        "token_signs_total": len(calls),
        "sign_wall_ms_p50": statistics.median(x.get("duration_ns", 0) / 1e6 for x in calls) if calls else None,
        "card_bound_per_s": 1000 / statistics.fmean(occ) if occ and statistics.fmean(occ) > 0 else None,
        "source_of_counts": "the shim's call log (C_Sign, not the length query), by monotonic time window",
    }


def measure_target(
    lt: LoadTarget, c: MqttLoadConfig, workdir: Path, load: LoadRunner | None = None, fd_clients: int | None = None
) -> dict[str, Any]:
    """The same load against the user's own broker (`--target`, measure/server_target.LoadTarget with
    app mqtt): its address, server name and client certificate are the target's; its CPU is not read
    (it runs on its own machine); its capacity is measured as for mosquitto here, with the target's
    offer (secperf-loadgen --app mqtt, 32 clients), before and after. `load`: as for `measure`;
    `fd_clients`: the most clients one generator process holds (its share on a cluster)."""

    validate(c)
    limits = fd_limits(c.clients if fd_clients is None else fd_clients)
    wd = private_dir(workdir)
    se_file = se_samples_file(se, wd / "se-signing-ms.txt", c.seed) if (se := c.client_se()) else None
    t = lt.mqtt_args()
    pair = (t["client_cert"], t["client_key"]) if t["client_cert"] else None
    cores = sorted(os.sched_getaffinity(0))

    def cap() -> dict[str, Any]:
        argv = [
            str(find_native("secperf-loadgen", "bin", "SECPERF_LOADGEN", "native/loadgen")),
            *lt.loadgen_args(),
            "--app",
            "mqtt",
            "--concurrency",
            "32",
            "--duration",
            f"{c.capacity_s:g}",
            "--warmup",
            "0.3",
            "--tls",
            c.tls,
            "--seed",
            str(c.seed),
        ]
        lv = summarize_level(run_level(argv, None, c.capacity_s + 30, cores))
        return {k: lv.get(k) for k in ("handshakes_per_s", "handshakes", "failed", "limited_by", "errors")}

    before = cap()
    argv = mqttload_argv(t["port"], c, pair, limits["source_addrs"] if t["host"].startswith("127.") else 1, se_file)
    argv += ["--host", t["host"], "--servername", t["servername"], *lt.tls_args()]
    budget = (c.clients / c.connect_rate + c.timeout_s + 30) + c.hold_s + (c.storm_max_s if c.storm else 0) + 120
    run = load(argv, None, budget) if load is not None else run_mqttload(argv, None, cores, budget)
    after = cap()
    caps = [x["handshakes_per_s"] for x in (before, after) if x.get("handshakes_per_s")]
    return {
        "config": c.as_dict(),
        "limits": limits,
        "target": lt.labels(),
        "broker": {"cpu": SERVER_CPU_NOT_MEASURED},
        "capacity_per_s": sum(caps) / len(caps) if caps else None,
        "capacity_before": before,
        "capacity_after": after,
        "se": se_said(c.client_se(), se_file),
        **run,
    }
