"""Server CPU per handshake and handshake capacity (study S3 on today's servers).

A real server started by secperf (nginx with `worker_processes 1` and no master process, the probe
server in its concurrent mode, mosquitto) is pinned to one core and driven by secperf-loadgen in
closed loop at each concurrency level. The server's CPU comes from its own accounting: the kernel's
per-thread run time (/proc/PID/task/*/schedstat, ns; /proc/PID/stat's utime+stime as the
fallback), read when the generator starts counting and after every interval it reports. CPU per
handshake = server CPU in the window / handshakes the generator completed in it.

The split "private-key operation vs the rest" takes the private-key operation's cost measured side
by side (`secperf-probe speed`, the same key, sign with SHA-256) times the signatures the server made
(one per full handshake, none per resumed one); the rest is what remains. With the key offloaded to
the token behind the shim, the operation's cost is what the shim's log shows per C_Sign (lock wait,
SoftHSM2 and the injected delay); in `sleep` mode that time is wall time the server's thread slept,
not CPU, which is the point of the comparison (study S3: a busy-polled card does not free the CPU).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from ..core import result as R
from ..core.errors import InputError, MeasurementError, SetupError
from ..core.jsonlines import parse_line
from ..core.native import find_native, find_probe, find_shim
from ..core.paths import private_dir, write_private
from ..lab import registry
from ..lab.token import openssl_engine_conf
from ..lab.services import Nginx, ProbeServer, server_software, stop_process

SERVERS = ("nginx", "probe", "mosquitto", "coap-server")
PROTOCOLS = ("tls", "dtls")
# DTLS: libcoap's coap-server (OpenSSL build) is the target. It keeps one session per client
# address on one UDP socket and interleaves their handshakes in its event loop, so it serves many
# concurrent DTLS clients; the probe server's DTLS mode (and `openssl s_server -dtls`) serves one
# client at a time. coap-server always asks for a cookie (DTLSv1_listen): every handshake carries
# the HelloVerifyRequest round trip, which the load generator counts.
DTLS_SERVERS = ("coap-server",)
KEYS = ("rsa-1024", "rsa-1024-nocrt", "rsa-2048", "rsa-2048-nocrt", "rsa-3072", "rsa-3072-nocrt", "rsa-4096", "rsa-4096-nocrt",
        "ecdsa-p256", "ecdsa-p384", "ed25519")
WAITS = ("busy", "sleep")
# key types the lab token holds (lab/token KEY_SPECS): the ones a server can offload
TOKEN_KEYS = ("rsa-1024", "rsa-2048", "ecdsa-p256")
# the offload profile matching each token key's algorithm (data/secure_elements.toml)
OFFLOAD_PROFILE = {"rsa-1024": "rsa-card-1998", "rsa-2048": "hsm-network-rsa2048", "ecdsa-p256": "atecc608"}
LOADGEN_NAME = "secperf-loadgen"


class ServerMeasureError(MeasurementError):
    """A server or the load generator failed as a whole (not one connection)."""


def find_loadgen() -> Path:
    return find_native(LOADGEN_NAME, "bin", "SECPERF_LOADGEN", "native/loadgen")


@dataclass(frozen=True)
class ServerConfig:
    """One server set-up; measured at every concurrency level of LoadParams."""
    server: str = "nginx"
    key: str = "rsa-2048"               # KEYS; "-nocrt" runs on the probe server only
    source: str = "software"            # software | offload:PROFILE:busy|sleep
    client_auth: bool = False
    resume_ratio: float = 0.0
    depth: int = 1
    tls: str = "1.3"
    protocol: str = "tls"               # tls (TCP) | dtls (DTLS 1.2 over UDP, coap-server)

    @property
    def key_type(self) -> str:
        return self.key.removesuffix("-nocrt")

    @property
    def nocrt(self) -> bool:
        return self.key.endswith("-nocrt")

    @property
    def offload(self) -> tuple[str, str] | None:
        if not self.source.startswith("offload:"):
            return None
        _, profile, wait = self.source.split(":")
        return profile, wait

    def label(self) -> str:
        parts = [self.server, self.key, self.source.replace("offload:", "offload ")]
        if self.protocol == "dtls":
            parts.insert(1, "DTLS 1.2")
        if self.client_auth:
            parts.append("client auth")
        if self.resume_ratio:
            parts.append(f"{self.resume_ratio:.0%} resumed")
        if self.depth != 1:
            parts.append(f"chain depth {self.depth}")
        return ", ".join(parts)

    def series_id(self, concurrency: int, rate: float | None = None) -> str:
        at = f"@r{rate:g}" if rate else f"@c{concurrency}"
        proto = "dtls/" if self.protocol == "dtls" else ""
        return (f"server/{proto}{self.server}/{self.key}/{self.source}/auth-{'on' if self.client_auth else 'off'}/"
                f"resume-{self.resume_ratio:g}/d{self.depth}{at}")


@dataclass
class LoadParams:
    concurrency: list[int] = field(default_factory=lambda: [1, 4, 16])
    rates: list[float] = field(default_factory=list)   # open loop: offered connections/s per level
    duration_s: float = 3.0
    warmup_s: float = 0.5
    seed: int = 1
    core: int = 0                       # the core the server is pinned to
    loadgen_procs: int | None = None    # None: one per core the generator runs on (generator_cores)
    op_n: int = 30                      # private-key operations timed side by side
    workdir: Path | None = None


def validate(cfg: ServerConfig) -> None:
    """Every combination is checked before anything runs; errors name the option."""
    if cfg.server not in SERVERS:
        raise InputError(f"--server {cfg.server!r}: known: {', '.join(SERVERS)}")
    if cfg.key not in KEYS:
        raise InputError(f"--key {cfg.key!r}: known: {', '.join(KEYS)}")
    if cfg.protocol not in PROTOCOLS:
        raise InputError(f"--protocol {cfg.protocol!r}: give tls or dtls")
    if (cfg.protocol == "dtls") != (cfg.server in DTLS_SERVERS):
        raise InputError(f"--server {cfg.server} with --protocol {cfg.protocol}: DTLS runs against "
                         f"{', '.join(DTLS_SERVERS)} (the one target here that serves concurrent DTLS clients), "
                         f"TLS against {', '.join(s for s in SERVERS if s not in DTLS_SERVERS)}")
    if cfg.protocol == "dtls":
        if cfg.resume_ratio:
            raise InputError(f"--resume-ratio {cfg.resume_ratio:g} with --protocol dtls: libcoap's coap-server "
                             "resumes no DTLS session; give 0")
        if cfg.source != "software" or cfg.nocrt:
            raise InputError(f"--key {cfg.key} --key-source {cfg.source} with --protocol dtls: coap-server loads "
                             "its key from a PEM file (software, with CRT) only")
    if cfg.nocrt and cfg.server != "probe":
        raise InputError(f"--key {cfg.key}: a key without CRT runs on the probe server only (--server probe): "
                         "OpenSSL cannot load an n, e, d-only key from a file, the probe builds it in memory")
    if not 0.0 <= cfg.resume_ratio <= 1.0:
        raise InputError(f"--resume-ratio {cfg.resume_ratio}: give a share between 0 and 1")
    if not 1 <= cfg.depth <= 3:
        raise InputError(f"--chain-depth {cfg.depth}: give 1..3")
    if cfg.source != "software":
        parts = cfg.source.split(":")
        if len(parts) != 3 or parts[0] != "offload" or parts[2] not in WAITS:
            raise InputError(f"--key-source {cfg.source!r}: give software or offload:PROFILE:busy|sleep "
                             "(e.g. offload:rsa-card-1998:busy)")
        from ..inputs.se_profiles import get_profile
        get_profile(parts[1])  # an unknown profile is an InputError naming the known ones
        if cfg.server != "nginx":
            raise InputError(f"--key-source {cfg.source}: offload runs with --server nginx (OpenSSL's pkcs11 engine)")
        if cfg.key not in TOKEN_KEYS:
            raise InputError(f"--key {cfg.key} with --key-source {cfg.source}: the lab token holds "
                             f"{', '.join(TOKEN_KEYS)} server-usable keys (no-CRT is a software variant; the "
                             "token's own key format decides)")


# --- the server's own CPU accounting ---------------------------------------------------------------
_TICK = os.sysconf("SC_CLK_TCK")


_SSL_CONF = """
[secperf_ssl]
system_default = secperf_system
[secperf_system]
CipherString = DEFAULT:@SECLEVEL=0
"""


def low_seclevel_conf(base: str | None = None) -> str:
    """An OpenSSL configuration that lets a server load a 1024-bit RSA key (Debian builds OpenSSL with
    security level 2, which rejects it when the certificate is loaded: `ee key too small`); `base`
    is another generated configuration (the pkcs11 engine's) to extend."""
    if base is None:
        return "openssl_conf = openssl_init\n[openssl_init]\nssl_conf = secperf_ssl\n" + _SSL_CONF
    return base.replace("[openssl_init]\n", "[openssl_init]\nssl_conf = secperf_ssl\n", 1) + _SSL_CONF


def process_cpu_s(pid: int) -> float:
    """CPU time the process has run, all threads: schedstat's run time (ns) when the kernel has it,
    else utime + stime from /proc/PID/stat (clock ticks)."""
    total, seen = 0.0, False
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                    total += int(f.read().split()[0]) / 1e9
                    seen = True
            except (OSError, ValueError, IndexError):
                pass
    except OSError:
        pass
    if seen:
        return total
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:  # the server is gone (stopped by a signal, or it died): a named error, no traceback
        raise MeasurementError(f"the server process {pid} is gone; its CPU time cannot be read") from None
    return (int(fields[11]) + int(fields[12])) / _TICK


def pin(pid: int, core: int) -> list[int]:
    """Pin every thread of pid to `core`; returns the affinity set."""
    ncpu = os.cpu_count() or 1
    if not 0 <= core < ncpu:
        raise InputError(f"--core {core}: this machine has cores 0..{ncpu - 1}")
    for t in os.listdir(f"/proc/{pid}/task"):
        os.sched_setaffinity(int(t), {core})
    return sorted(os.sched_getaffinity(pid))


# --- the load generator's side ----------------------------------------------------------------------
BUSY = 0.9   # a side at or above this share of its cores is the one that limits the rate
OTHERS = 0.25  # other processes taking this share of a side's cores disturb the figures
MAX_AUTO_PROCS = 8


def generator_cores(server_core: int) -> list[int]:
    """The cores the load generator runs on: every core secperf may use except the server's, so the
    two never share one (as tls-perf and h2load are run: client and server on separate cores); the
    server's core itself only on a machine with no other."""
    usable = sorted(os.sched_getaffinity(0))
    return [c for c in usable if c != server_core] or usable


def generator_procs(p: "LoadParams") -> int:
    """Generator processes: as asked, else one per generator core (at most MAX_AUTO_PROCS)."""
    return p.loadgen_procs or min(MAX_AUTO_PROCS, len(generator_cores(p.core)))


def core_times() -> dict[int, tuple[int, int]]:
    """Per core: (busy, total) clock ticks since boot from /proc/stat (busy: all but idle and iowait),
    whoever ran there; {} when it cannot be read."""
    out = {}
    try:
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("cpu") and line[3:4].isdigit():
                    name, *vals = line.split()
                    v = [int(x) for x in vals[:8]]
                    out[int(name[3:])] = (sum(v) - v[3] - v[4], sum(v))
    except (OSError, ValueError, IndexError):
        return {}
    return out


def cores_busy(before: dict, after: dict, cores) -> float | None:
    """The share of the time `cores` were busy (any process) between two core_times() readings."""
    busy = total = 0
    for c in cores:
        if c in before and c in after:
            busy += after[c][0] - before[c][0]
            total += after[c][1] - before[c][1]
    return busy / total if total > 0 else None


def rate_limit(level: dict, open_loop: bool = False) -> dict:
    """Which side limited the rate at one load level, from both sides' CPU in the counting window:
    the server (its core at least BUSY busy), the load generator (its cores at least BUSY busy while
    the server is not: the capacity shown is then the generator's, a lower bound of the server's),
    or neither (closed loop: too few clients in flight; open loop: the offered rate)."""
    srv, gen = level.get("server_utilisation") or 0.0, level.get("loadgen_busy")
    if srv >= BUSY:
        return {"limited_by": "server", "limit_note": None}
    if gen is not None and gen >= BUSY:
        return {"limited_by": "load generator", "limit_note": (
            f"the load generator limited the rate, not the server: server {srv:.0%} busy, generator {gen:.0%} of "
            f"its {level.get('loadgen_cores_n', 1)} core(s) at {level.get('loadgen_cpu_us_per_handshake') or 0:.0f} µs "
            f"per handshake; the server's capacity is higher (a machine with more cores: the generator uses all but the "
            f"server's)")}
    # other processes on either side's cores: the cores near full while neither process was, or others
    # taking a quarter of them (the run's own loopback softirq work, charged to no process, was ~1% here)
    crowded = []
    for what, busy, own in (("server's core was", level.get("server_core_busy"), srv),
                            ("generator's cores were", level.get("loadgen_cores_busy"),
                             level.get("loadgen_share_of_cores", gen) or 0.0)):
        if busy is not None and (busy >= BUSY or busy - own >= OTHERS):
            crowded.append((what, busy, own))
    if crowded:
        what, b, own = max(crowded, key=lambda c: c[1] - c[2])
        return {"limited_by": "other work on this machine", "limit_note": (
            f"other work on this machine limited the rate: the {what} {b:.0%} busy in all (server {srv:.0%}, "
            f"generator {gen or 0:.0%}); not the server's capacity: rerun on a quiet machine")}
    why = "the offered rate" if open_loop else "too few clients in flight"
    return {"limited_by": "neither", "limit_note": None, "limited_by_why": why}


def negotiated(port: int, cfg: "ServerConfig", client_pair=None) -> dict:
    """What a handshake with this server negotiates (protocol, suite, group): one `secperf-probe
    client` handshake with the load generator's settings (the same system OpenSSL, its default
    groups and suites, no certificate verification). A failure is recorded, not raised."""
    app = {"nginx": "http", "probe": "http", "mosquitto": "mqtt", "coap-server": "none"}[cfg.server]
    args = ["client", "--port", str(port), "--n", "1", "--warmup", "0", "--timeout-ms", "5000", "--app", app,
            *(["--proto", "dtls", "--tls", "1.2"] if cfg.protocol == "dtls" else ["--tls", cfg.tls])]
    if cfg.key_type == "rsa-1024":
        args += ["--ciphers", "DEFAULT:@SECLEVEL=0"]
    if client_pair:
        args += ["--cert", str(client_pair[0]), "--key", str(client_pair[1])]
    source = "one secperf-probe client handshake with the load generator's settings"
    try:
        r = registry.run([str(find_probe()), *args], "probe client (negotiated)", capture_output=True, text=True,
                         timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return {"error": f"secperf-probe client: {exc}", "source": source}
    conn = next((m for m in map(parse_line, r.stdout.splitlines()) if m and m.get("type") == "conn"), None)
    if conn is None or not conn.get("version"):
        why = (conn or {}).get("error") or (r.stderr or r.stdout).strip()[-200:] or "no connection line"
        return {"error": f"secperf-probe client: {why}", "source": source}
    return {"version": conn.get("version"), "cipher": conn.get("cipher"), "group": conn.get("group"),
            "source": source}


# --- servers -----------------------------------------------------------------------------------------


class Offload:
    """The server key in the lab token behind the shim with a profile and wait mode: the
    certificate, the engine key reference (PIN in its 0600 file, never on a command line), and
    the environment nginx needs (OPENSSL_CONF pointing the pkcs11 engine at the shim)."""

    def __init__(self, profile_name: str, wait: str, key_type: str, workdir: Path, seed: int):
        from ..lab.token import LabToken
        from ..inputs.se_profiles import get_profile
        from .signer import shim_env
        self.token = LabToken().ensure()
        key = self.token.key(key_type)
        profile = dataclasses.replace(get_profile(profile_name), wait=wait)
        shim_dir = private_dir(workdir / "shim")
        env, self.log = shim_env(self.token, profile, shim_dir, seed)
        conf = shim_dir / "openssl.cnf"
        text = openssl_engine_conf(find_shim(), init=True)
        write_private(conf, (low_seclevel_conf(text) if key_type == "rsa-1024" else text).encode())
        env["OPENSSL_CONF"] = str(conf)
        self.env = {k: env[k] for k in ("OPENSSL_CONF", "SOFTHSM2_CONF", "SECPERF_SE_PROFILE") if k in env}
        # the token key's certificate (issued by the lab client CA) serves as the server's: the
        # load generator does not verify, as `openssl s_time`
        self.cert = Path(key["cert_path"])
        self.uri = self.token.uri(key["label"], pin_file=True)
        self.profile = profile
        self.extractable = False

    def prefix(self) -> list[str]:
        return ["env", *[f"{k}={v}" for k, v in self.env.items()]]

    def calls(self, since_ns: int = 0) -> list[dict]:
        out = []
        try:
            with open(self.log) as f:
                for line in f:
                    try:
                        c = json.loads(line)
                    except json.JSONDecodeError:
                        continue
                    if c.get("start_ns", 0) >= since_ns:
                        out.append(c)
        except OSError:
            pass
        return out


def start_server(cfg: ServerConfig, pki, workdir: Path, seed: int, offload: Offload | None = None,
                 backlog: int | None = None):
    certs = pki.server(cfg.key_type, cfg.depth)
    client_ca = pki.client("ecdsa-p256").ca if cfg.client_auth or cfg.server == "mosquitto" else None
    prefix: list[str] = []
    if cfg.key_type == "rsa-1024" and offload is None:
        conf = private_dir(workdir) / "openssl-seclevel0.cnf"
        write_private(conf, low_seclevel_conf().encode())
        prefix = ["env", f"OPENSSL_CONF={conf}"]
    if cfg.server == "nginx":
        if offload is not None:
            certs = SimpleNamespace(chain=offload.cert, key=f'"engine:pkcs11:{offload.uri}"')  # quoted: the URI holds ";"
        srv = Nginx(certs, client_ca=client_ca, workdir=workdir, backlog=backlog)
        srv.prefix = offload.prefix() if offload is not None else prefix
        return srv.start()
    if cfg.server == "probe":
        args = ["--concurrent", "512", "--tls", cfg.tls] + (["--rsa-nocrt"] if cfg.nocrt else [])
        srv = ProbeServer(certs, args=args, client_ca=client_ca, workdir=workdir)
        srv.prefix = prefix
        return srv.start()
    if cfg.server == "coap-server":
        from ..lab.iot_services import CoapServer
        srv = CoapServer(certs, client_ca=client_ca, workdir=workdir, verbosity=3)  # warnings only: no log per session
        srv.prefix = prefix
        return srv.start()
    from ..lab.iot_services import Mosquitto
    srv = Mosquitto(certs, client_ca, nodelay=True, workdir=workdir)
    srv.prefix = prefix
    return srv.start()


# --- the private-key operation, measured side by side ------------------------------------------------
def private_op_us(key: str, n: int, seed: int, core: int | None = None) -> dict:
    """Median wall and CPU µs of one signature with this key (SHA-256 included), `secperf-probe speed`;
    on `core` when given (the server's core: the same cache and sibling load as the server)."""
    from .probe import default_key_cache, ensure_private_dir
    alg = key if key.startswith("rsa") or key == "ed25519" else key
    args = [str(find_probe()), "speed", "--alg", alg, "--op", "sign", "--n", str(n), "--warmup", "3",
            "--min-sample-us", "1000", "--max-seconds", "5", "--seed", str(seed),
            "--key-cache", str(ensure_private_dir(default_key_cache()))]
    if not key.startswith("ed"):
        args += ["--hash", "sha256"]
    pre = (lambda: os.sched_setaffinity(0, {core})) if core is not None else None
    r = subprocess.run(args, capture_output=True, text=True, timeout=300, preexec_fn=pre)
    samples = [m for m in map(parse_line, r.stdout.splitlines()) if m and m.get("type") == "sample"]
    if not samples:
        raise ServerMeasureError(f"secperf-probe speed --alg {alg} --op sign gave no samples: "
                                 f"{(r.stderr or r.stdout).strip()[-300:]}")
    import statistics
    wall = statistics.median(s["wall_ns"] / s["ops"] / 1000 for s in samples)
    cpu = statistics.median(s["cpu_ns"] / s["ops"] / 1000 for s in samples)
    return {"alg": alg, "op": "sign", "wall_us": wall, "cpu_us": cpu, "n": len(samples)}


# --- one load level --------------------------------------------------------------------------------
def loadgen_argv(port: int, cfg: ServerConfig, concurrency: int, p: LoadParams, client_pair=None,
                 app: str = "auto", rate: float | None = None) -> list[str]:
    """The generator's command line: closed loop at `concurrency` clients, or open loop at `rate`
    new connections per second (then `concurrency` is ignored)."""
    if app == "auto":
        app = {"nginx": "http", "probe": "http", "mosquitto": "mqtt", "coap-server": "none"}[cfg.server]
    procs = generator_procs(p)
    load = (["--rate", f"{rate:g}", "--max-inflight", "4000", "--procs", str(procs)] if rate
            else ["--concurrency", str(concurrency), "--procs", str(min(procs, concurrency))])
    argv = [str(find_loadgen()), "--port", str(port), *load,
            "--duration", f"{p.duration_s:g}", "--warmup", f"{p.warmup_s:g}",
            *(["--dtls", "--tls", "1.2"] if cfg.protocol == "dtls" else ["--tls", cfg.tls]),
            "--resume-ratio", f"{cfg.resume_ratio:g}", "--app", app, "--seed", str(p.seed)]
    if cfg.key_type == "rsa-1024":
        argv += ["--ciphers", "DEFAULT:@SECLEVEL=0"]   # a 1024-bit server key is below OpenSSL's level 2
    if client_pair:
        argv += ["--cert", str(client_pair[0]), "--key", str(client_pair[1])]
    return argv


def run_level(argv: list[str], server_pid: int, timeout_s: float, cores: list[int] | None = None) -> dict:
    """Run the generator (pinned to `cores`, default: every core but the server's); read the
    server's CPU when counting starts (first interval boundary is warm-up + interval) and after the
    run. Returns the generator's lines and the CPU readings."""
    if cores is None:
        usable, server = os.sched_getaffinity(0), os.sched_getaffinity(server_pid)
        cores = sorted(usable - server) or sorted(usable)

    def pin_generator():
        os.sched_setaffinity(0, cores)   # inherited by the generator's forked processes
    proc = registry.spawn(argv, "secperf-loadgen", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          preexec_fn=pin_generator)
    lines: list[dict] = []
    readings: list[tuple[float, float]] = []   # (monotonic s, server cpu s) per interval line
    meta_seen = threading.Event()

    def reader():
        for line in proc.stdout:
            m = parse_line(line)
            if m is None:
                continue
            if m.get("type") == "interval" and m.get("proc", 0) == 0:
                try:
                    readings.append((time.monotonic(), process_cpu_s(server_pid)))
                except MeasurementError:
                    pass  # the server stopped (a signal ends the run): this thread just stops reading it
            if m.get("type") == "meta":
                meta_seen.set()
            lines.append(m)
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    # the counting window opens warm-up seconds after start: read the server's CPU then
    meta_seen.wait(10)
    warm = next((m.get("warmup_s", 0) for m in lines if m.get("type") == "meta"), 0)
    time.sleep(warm)
    start = (time.monotonic(), process_cpu_s(server_pid))
    cores0 = core_times()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        stop_process(proc)
        raise ServerMeasureError(f"secperf-loadgen did not finish within {timeout_s:.0f} s") from None
    t.join(5)
    registry.forget(proc)
    end = (time.monotonic(), process_cpu_s(server_pid))
    cores1 = core_times()
    err = proc.stderr.read().strip()
    if proc.returncode == 2:
        raise InputError(f"secperf-loadgen: {err}")
    return {"lines": lines, "start": start, "end": end, "readings": readings, "stderr": err,
            "returncode": proc.returncode, "cores": list(cores),
            "server_core_busy": cores_busy(cores0, cores1, sorted(os.sched_getaffinity(server_pid))
                                           if _alive(server_pid) else []),
            "loadgen_cores_busy": cores_busy(cores0, cores1, cores)}


def _alive(pid: int) -> bool:
    try:
        os.sched_getaffinity(pid)
        return True
    except OSError:
        return False


def summarize_level(run: dict) -> dict:
    """Totals over the generator's processes, the server's CPU in the window, per handshake."""
    ends = [m for m in run["lines"] if m.get("type") == "end"]
    errors = [m for m in run["lines"] if m.get("type") == "error"]
    if not ends:
        why = errors[0]["reason"] if errors else (run["stderr"] or "no end line")
        raise ServerMeasureError(f"secperf-loadgen failed: {why}")
    tot = {k: sum(e.get(k, 0) for e in ends) for k in ("handshakes", "full", "resumed", "resume_missed",
                                                         "failed", "started", "not_started", "cpu_s",
                                                         "target_rate_per_s", "cookie_exchanges", "retransmits")}
    elapsed = max(e["elapsed_s"] for e in ends)
    reasons: dict[str, int] = {}
    for e in ends:
        for k, v in (e.get("errors") or {}).items():
            reasons[k] = reasons.get(k, 0) + v
    cpu_s = run["end"][1] - run["start"][1]
    wall_s = run["end"][0] - run["start"][0]
    hs = tot["handshakes"]
    # latency: the busiest process's percentiles (each process sees the same server)
    lat = max(ends, key=lambda e: e.get("handshakes", 0))
    # the generator's own CPU (getrusage inside its counting window) over the cores it could use
    gen_cores = min(len(ends), len(run.get("cores") or [])) or len(ends)
    meta = next((m for m in run["lines"] if m.get("type") == "meta"), {})
    return {
        "handshakes": hs, "full": tot["full"], "resumed": tot["resumed"], "resume_missed": tot["resume_missed"],
        "failed": tot["failed"], "errors": reasons, "elapsed_s": elapsed,
        "handshakes_per_s": hs / elapsed if elapsed else 0.0,
        "offered_per_s": tot["target_rate_per_s"] or None,
        "started_per_s": tot["started"] / elapsed if elapsed else 0.0,
        "not_started": tot["not_started"],
        "resumed_share": tot["resumed"] / hs if hs else 0.0,
        "cookie_exchanges": tot["cookie_exchanges"], "retransmits": tot["retransmits"],
        "server_cpu_s": cpu_s, "server_wall_s": wall_s,
        "server_utilisation": cpu_s / wall_s if wall_s else 0.0,
        "server_cpu_us_per_handshake": cpu_s * 1e6 / hs if hs else None,
        "loadgen_cpu_us_per_handshake": tot["cpu_s"] * 1e6 / hs if hs else None,
        "loadgen_cpu_s": tot["cpu_s"],
        "loadgen_busy": tot["cpu_s"] / (elapsed * gen_cores) if elapsed else None,
        "loadgen_cores_n": gen_cores,
        # the same CPU over every core it was pinned to (what the cores' own busy share compares with)
        "loadgen_share_of_cores": tot["cpu_s"] / (elapsed * len(run.get("cores") or ends)) if elapsed else None,
        "server_core_busy": run.get("server_core_busy"), "loadgen_cores_busy": run.get("loadgen_cores_busy"),
        "loadgen": {"procs": len(ends), "cores": run.get("cores"), "library": meta.get("library"),
                    "verify": "off (load, not authentication: as openssl s_time, tls-perf and h2load)"},
        "latency_ms": {k: lat.get(k) for k in ("p50_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms")},
        "handshake_ms": {k[3:]: lat.get(k) for k in ("hs_p50_ms", "hs_p95_ms", "hs_p99_ms")},
    }


def interval_cpu_per_hs(run: dict) -> list[float]:
    """Per interval: server CPU µs / handshakes (proc 0's intervals; all processes' counts)."""
    ivs: dict[float, int] = {}
    for m in run["lines"]:
        if m.get("type") == "interval":
            ivs[round(m["t_s"])] = ivs.get(round(m["t_s"]), 0) + m["handshakes"]
    out, prev = [], run["start"]
    for (t, cpu), (k, hs) in zip(run["readings"], sorted(ivs.items())):
        if hs > 0 and cpu > prev[1]:
            out.append((cpu - prev[1]) * 1e6 / hs)
        prev = (t, cpu)
    return out


SLEEP_SPIN_TAIL_US = 400.0   # the shim's sleep mode spins the last 400 µs before its deadline (se_shim.c)


def split(level: dict, op: dict | None, offload_calls: list[dict] | None = None, wait: str | None = None) -> dict:
    """Server CPU per handshake = private-key operations + the rest (both µs per handshake). With
    the key offloaded, the shim's log gives each C_Sign's wall time (lock wait + SoftHSM2's own
    signature + injected delay), the card's occupancy per signature (SoftHSM2 + delay: the token's
    lock serialises them, so 1 / occupancy bounds the capacity) and the emulation's own host CPU:
    SoftHSM2 computes the signature on this CPU (a real card would not) and, in sleep mode, the shim
    spins the last 400 µs before its deadline. SoftHSM2's CPU per signature is taken as the software
    signature's (`op`, measured side by side: SoftHSM2 signs with OpenSSL), at most its wall time in
    the shim log (which on a loaded machine also holds time spent waiting for the CPU).
    `card_host_cpu_us` is the CPU per handshake with that taken out: what the server would spend
    with a real card."""
    total = level.get("server_cpu_us_per_handshake")
    hs = level["handshakes"]
    if total is None or not hs:
        return {}
    signs_per_hs = level["full"] / hs
    out = {"total_us": total, "signatures_per_handshake": signs_per_hs}
    if offload_calls is not None:
        signs = [c for c in offload_calls if c.get("fn") == "C_Sign" and not c.get("length_query")]
        n = len(signs) or 1
        per = sum(c.get("duration_ns", 0) for c in signs) / n / 1000 if signs else 0.0
        real = sum(c.get("real_ns", 0) for c in signs) / n / 1000 if signs else 0.0
        delay = sum(c.get("delay_ns", 0) for c in signs) / n / 1000 if signs else 0.0
        soft = min(real, op["cpu_us"]) if op else real
        emu = soft + (min(SLEEP_SPIN_TAIL_US, delay) if wait == "sleep" else 0.0)
        out.update(key_op_source="shim log (C_Sign duration: lock wait + SoftHSM2 + injected delay)",
                   key_op_wall_us=per, token_signs=len(signs), token_real_us=real, token_delay_us=delay,
                   card_occupancy_us=real + delay,
                   card_bound_per_s=1e6 / (real + delay) if signs and real + delay > 0 else None,
                   emulation_cpu_us=emu * signs_per_hs, softhsm_cpu_us=soft,
                   card_host_cpu_us=max(0.0, total - emu * signs_per_hs))
        return out
    if op is None:
        return out
    key_us = op["cpu_us"] * signs_per_hs
    out.update(key_op_source=f"secperf-probe speed {op['alg']} sign, measured side by side",
               key_op_us=key_us, rest_us=total - key_us, key_op_share=key_us / total if total else None)
    return out


def measure_config(cfg: ServerConfig, p: LoadParams, pki, doc: dict | None = None, on_series=None) -> list[dict]:
    """One server set-up at every concurrency level; one series per level."""
    workdir = private_dir((p.workdir or Path("/tmp")) / "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in cfg.series_id(0)))
    off = None
    series_out = []
    op = None
    try:
        if cfg.offload:
            off = Offload(*cfg.offload, cfg.key_type, workdir, p.seed)
        # offloaded too: SoftHSM2 signs with OpenSSL on this CPU, about the software signature's cost
        op = private_op_us(cfg.key, p.op_n, p.seed)
    except (MeasurementError, SetupError, subprocess.TimeoutExpired, OSError) as exc:
        s = _series(cfg, None if p.rates else p.concurrency[0], p, None, p.rates[0] if p.rates else None)
        R.add_failure(s, f"set-up: {exc}")
        return [R.finalize_series(s)]
    client_pair = None
    if cfg.client_auth or cfg.server == "mosquitto":
        cs = pki.client("ecdsa-p256")
        client_pair = (cs.cert, cs.key)
    srv = None
    try:
        srv = start_server(cfg, pki, workdir, p.seed, off)
        pid = srv.proc.pid
        affinity = pin(pid, p.core)
        gen_cores = generator_cores(p.core)
        software = server_software(cfg.server)
        agreed = negotiated(srv.port, cfg, client_pair)
        levels = [(None, r) for r in p.rates] if p.rates else [(c, None) for c in p.concurrency]
        for conc, rate in levels:
            s = _series(cfg, conc, p, off, rate)
            s["labels"].update(server_pid=pid, pinned_to=affinity, loadgen_cores=gen_cores,
                               loadgen_procs=generator_procs(p), server_software=software)
            t0_ns = time.monotonic_ns()
            try:
                argv = loadgen_argv(srv.port, cfg, conc or 1, p, client_pair, rate=rate)
                run = run_level(argv, pid, p.warmup_s + p.duration_s + 30, gen_cores)
                level = summarize_level(run)
            except ServerMeasureError as exc:
                R.add_failure(s, str(exc))
                series_out.append(R.finalize_series(s))
                continue
            fill_level(s, level, run, op, off.calls(t0_ns) if off else None, off, rate)
            s["derived"]["negotiated"] = agreed
            if rate and level["started_per_s"] < 0.95 * rate:
                # the generator could not start connections at the asked rate: a warning with what it did
                s["derived"]["warning"] = (f"the load generator started {level['started_per_s']:.0f} connections/s "
                                           f"of the {rate:g}/s asked ({level['not_started']} arrivals found no free "
                                           "slot or came late): the achieved rate is reported, not the asked one")
            level_failures(s, level)
            series_out.append(R.finalize_series(s))
            if on_series:
                on_series(series_out[-1])
    except MeasurementError as exc:
        s = _series(cfg, None if p.rates else p.concurrency[0], p, off, p.rates[0] if p.rates else None)
        R.add_failure(s, str(exc))
        series_out.append(R.finalize_series(s))
    finally:
        if srv is not None:
            srv.stop()
    return series_out


def fill_level(s: dict, level: dict, run: dict, op, calls, off, rate) -> None:
    """One load level's numbers into its series (local generators or a cluster's merged ones): the
    level's summary, which side limited the rate, the server CPU split, and the per-interval samples."""
    s["derived"].update(level)
    s["derived"].update(rate_limit(level, open_loop=bool(rate)))
    s["derived"]["split"] = split(level, op, calls, off.profile.wait if off else None)
    if op:
        s["derived"]["private_op"] = op
    per_iv = interval_cpu_per_hs(run)
    s["values_us"] = per_iv or ([level["server_cpu_us_per_handshake"]]
                                if level["server_cpu_us_per_handshake"] else [])
    s["samples"] = [m for m in run["lines"] if m.get("type") == "interval"]


def level_failures(s: dict, level: dict) -> None:
    """The generators' errors of one level as failures, and a level where no handshake completed."""
    for reason, count in level["errors"].items():
        R.add_failure(s, f"{count}× {reason}")
    if level["handshakes"] == 0:
        R.add_failure(s, "no handshake completed: is the server reachable and does it accept this "
                         "configuration?")


def accounting_check(pki, key: str = "rsa-2048", rounds: int = 5, seconds: float = 1.5, share: float = 0.5,
                     core: int = 0, workdir: Path | None = None, seed: int = 1, ref: str = "ecdsa-p256") -> dict:
    """Does the probe server's own accounting add up? Its CPU per full handshake with `key` against
    the sum of its per-operation cost (the signature, `secperf-probe speed` on the server's core)
    and its no-key baseline: the same server's CPU per full handshake with a cheap reference key
    (`ref`) minus that key's own measured signature. That baseline keeps everything a full
    handshake does besides the key's arithmetic (the Certificate message, the transcript hash and
    the signing set-up inside the TLS stack); a resumed handshake (also reported) lacks them, about
    a tenth of a full handshake here, which is why it is not the baseline.

    All handshakes run at the same open-loop rate (`share` of the key's capacity, measured first),
    interleaved `rounds` times with the signature timings; medians are compared. Same rate, because
    CPU per handshake depends on load (at a lower rate every handshake pays more wake-ups and colder
    caches); interleaved, because other work on this machine changes CPU costs minute to minute."""
    import statistics
    wd = private_dir((workdir or Path(tempfile.mkdtemp(prefix="secperf-acc-"))) / f"accounting-{key}")
    cfg, rcfg = ServerConfig("probe", key), ServerConfig("probe", ref)
    srv = start_server(cfg, pki, private_dir(wd / "key"), seed)
    rsrv = None
    try:
        rsrv = start_server(rcfg, pki, private_dir(wd / "ref"), seed)
        pin(srv.proc.pid, core)
        pin(rsrv.proc.pid, core)
        cap_p = LoadParams(concurrency=[8], duration_s=max(1.0, seconds), warmup_s=0.3, seed=seed, core=core)
        cap = summarize_level(run_level(loadgen_argv(srv.port, cfg, 8, cap_p), srv.proc.pid, 60))
        rate = max(10.0, share * cap["handshakes_per_s"])
        p = LoadParams(concurrency=[1], duration_s=seconds, warmup_s=0.3, seed=seed, core=core)
        got: dict[str, list[float]] = {"full": [], "ref_full": [], "resumed": [], "sign": [], "ref_sign": []}
        rates = []
        runs = (("full", srv, cfg), ("ref_full", rsrv, rcfg), ("resumed", srv, dataclasses.replace(cfg, resume_ratio=1.0)))
        for _ in range(rounds):
            for name, sv, c in runs:
                lv = summarize_level(run_level(loadgen_argv(sv.port, c, 1, p, rate=rate), sv.proc.pid, seconds + 30))
                if not lv["server_cpu_us_per_handshake"]:
                    raise ServerMeasureError(f"accounting: no handshakes at {rate:.0f}/s ({c.label()})")
                got[name].append(lv["server_cpu_us_per_handshake"])
                rates.append(lv["handshakes_per_s"])
            got["sign"].append(private_op_us(key, 20, seed, core)["cpu_us"])
            got["ref_sign"].append(private_op_us(ref, 20, seed, core)["cpu_us"])
    finally:
        srv.stop()
        if rsrv is not None:
            rsrv.stop()
    m = {k: statistics.median(v) for k, v in got.items()}
    base = m["ref_full"] - m["ref_sign"]
    return {"key": key, "reference_key": ref, "capacity_per_s": cap["handshakes_per_s"], "rate_per_s": rate,
            "achieved_per_s": [min(rates), max(rates)], "full_cpu_us": m["full"], "sign_cpu_us": m["sign"],
            "no_key_baseline_us": base, "ratio": m["full"] / (m["sign"] + base),
            "resumed_cpu_us": m["resumed"], "ratio_with_resumed_baseline": m["full"] / (m["sign"] + m["resumed"]),
            "rounds": got,
            "baseline": f"full handshakes with {ref} at the same rate minus its measured signature"}


def storm_argv(port: int, clients: int, policy: str, base_s: float, cap_s: float, timeout_s: float,
               duration_s: float, tls: str = "1.3", app: str = "http", spread_s: float = 0.0, seed: int = 1,
               max_attempts: int = 100) -> list[str]:
    return [str(find_loadgen()), "--port", str(port), "--storm", str(clients), "--backoff", policy,
            "--backoff-base-ms", f"{base_s * 1000:g}", "--backoff-cap-ms", f"{cap_s * 1000:g}",
            "--timeout-ms", str(int(timeout_s * 1000)), "--max-attempts", str(max_attempts),
            "--spread-ms", f"{spread_s * 1000:g}", "--duration", f"{duration_s:g}", "--tls", tls,
            "--app", app, "--seed", str(seed)]


def replay_storm(pki, clients: int, policy: str = "exponential", base_s: float = 0.5, cap_s: float = 8.0,
                 timeout_s: float = 10.0, key: str = "rsa-2048", core: int = 0, capacity_s: float = 2.0,
                 duration_s: float = 120.0, workdir: Path | None = None, seed: int = 1) -> dict:
    """A small reconnect storm on a real server: nginx (pinned to `core`, listen backlog and
    worker_connections above `clients`) measured at saturation (closed loop, 32 clients) just before
    and just after the storm (the model gets their mean: other work on the machine moves what the
    server gets), and in between `clients` clients of `secperf-loadgen --storm` connecting at once,
    each retrying after the back-off policy until it is back. Returns the capacity, the storm's end
    line (time until all are back, wait percentiles, failed attempts) and the server's CPU during it."""
    wd = private_dir((workdir or Path(tempfile.mkdtemp(prefix="secperf-storm-"))) / f"storm-{clients}")
    cfg = ServerConfig("nginx", key)
    srv = start_server(cfg, pki, wd, seed, backlog=max(512, clients + 64))
    try:
        pin(srv.proc.pid, core)
        p = LoadParams(concurrency=[32], duration_s=capacity_s, warmup_s=0.3, seed=seed, core=core)
        before = summarize_level(run_level(loadgen_argv(srv.port, cfg, 32, p), srv.proc.pid, capacity_s + 30))
        time.sleep(1.0)   # the capacity run's connections are gone before the storm starts
        cpu0 = process_cpu_s(srv.proc.pid)
        try:
            r = subprocess.run(storm_argv(srv.port, clients, policy, base_s, cap_s, timeout_s, duration_s, seed=seed),
                               capture_output=True, text=True, timeout=duration_s + 60)
        except subprocess.TimeoutExpired:
            raise ServerMeasureError(f"secperf-loadgen --storm did not end within {duration_s + 60:.0f} s") from None
        cpu = process_cpu_s(srv.proc.pid) - cpu0
        time.sleep(1.0)
        after = summarize_level(run_level(loadgen_argv(srv.port, cfg, 32, p), srv.proc.pid, capacity_s + 30))
    finally:
        srv.stop()
    if r.returncode == 2:
        raise InputError(f"secperf-loadgen --storm: {r.stderr.strip()}")
    lines = [m for m in map(parse_line, r.stdout.splitlines()) if m]
    end = next((m for m in lines if m.get("type") == "end"), None)
    if end is None:
        raise ServerMeasureError(f"secperf-loadgen --storm gave no end line: {(r.stderr or r.stdout).strip()[-300:]}")
    return {"server": "nginx", "key": key, "clients": clients, "policy": policy, "base_s": base_s, "cap_s": cap_s,
            "timeout_s": timeout_s,
            "capacity_per_s": (before["handshakes_per_s"] + after["handshakes_per_s"]) / 2,
            "capacity_before_after_per_s": [before["handshakes_per_s"], after["handshakes_per_s"]],
            "capacity_cpu_us_per_handshake": before["server_cpu_us_per_handshake"], "storm": end,
            "server_cpu_s": cpu, "intervals": [m for m in lines if m.get("type") == "interval"]}


def _series(cfg: ServerConfig, conc: int | None, p: LoadParams, off: Offload | None,
            rate: float | None = None) -> dict:
    labels = {"server": cfg.server, "key": cfg.key, "key_source": cfg.source, "client_auth": cfg.client_auth,
              "resume_ratio": cfg.resume_ratio, "chain_depth": cfg.depth,
              "tls": "dtls1.2" if cfg.protocol == "dtls" else cfg.tls, "protocol": cfg.protocol,
              "concurrency": conc, "loop": "open" if rate else "closed", "offered_per_s": rate, "core": p.core, "duration_s": p.duration_s,
              "warmup_s": p.warmup_s, "config": cfg.label(),
              "key_extractable": (False if off else True),
              "key_storage": ("token behind the shim (PKCS#11, not extractable)" if off
                              else "PEM file readable by the server process")}
    if off:
        labels.update(profile=off.profile.name, wait=off.profile.wait, profile_source=off.profile.source)
    return R.new_series(cfg.series_id(conc or 0, rate), kind="server", labels=labels, timer={
        "name": "server CPU per handshake",
        "start": "the load generator's counting window opens (after warm-up): the server's CPU time read",
        "end": "each interval line / the window closes: the server's CPU time read again; the CPU in between "
               "divided by the handshakes completed in it",
        "clock": "/proc/PID/task/*/schedstat (run time, ns)"})


def run_server(configs: list[ServerConfig], p: LoadParams, doc: dict, run=None, progress=None) -> dict:
    from ..lab.pki import LabPKI
    pki = LabPKI().ensure()
    if p.workdir is None and run is not None:
        p.workdir = private_dir(run.dir / "server")
    for i, cfg in enumerate(configs):
        if progress:
            progress("start", cfg, i, len(configs), None)
        doc["series"] += measure_config(cfg, p, pki, doc)
        if run is not None:
            run.save(doc)
        if progress:
            progress("done", cfg, i, len(configs), None)
    return doc
