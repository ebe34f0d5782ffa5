"""What `secperf server` and `secperf fleet` are asked (ServerOptions, FleetOptions), the server
configurations a request makes (plan, the issue-15 matrices), and a replayed storm set beside the
fleet model (replay_compare): what app/server.py and the generators elsewhere (app/cluster_load.py on a
Ray cluster, app/server_target.py against the user's server) share, so none of them imports another."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.errors import InputError
from ..measure import server as S
from ..measure.server_target import label
from ..model.fleet import FleetModel, simulate
from .se_keys import offload_name, profiles_named

if TYPE_CHECKING:
    from ..measure.server import ServerConfig

T = TypeVar("T")


@dataclass
class ServerOptions:
    servers: list[str] = field(default_factory=lambda: ["nginx"])
    cluster: str | None = None  # --cluster: the load generators on a Ray cluster (app/cluster_load.py)
    keys: list[str] = field(default_factory=lambda: ["rsa-2048"])
    sources: list[str] = field(default_factory=lambda: ["software"])
    client_auth: list[bool] = field(default_factory=lambda: [False])
    resume_ratios: list[float] = field(default_factory=lambda: [0.0])
    depths: list[int] = field(default_factory=lambda: [1])
    tls: str = "1.3"
    protocol: str = "tls"  # tls | dtls (DTLS 1.2 against coap-server)
    concurrency: list[int] = field(default_factory=lambda: [1, 4, 16])
    rates: list[float] = field(default_factory=list)
    matrix: bool = False
    duration_s: float = 3.0
    warmup_s: float = 0.5
    core: int | None = 0  # None: not given (--core: the server's core 0; with --target, none kept off)
    procs: int | None = None  # None: one generator process per core other than the server's
    seed: int = 1
    target: Any = None  # --target: a measure.server_target.LoadTarget (the user's server)
    max_hours: float | None = None  # --max-hours: the limit of the run's estimate (app/bounds.py)

    def params(self) -> dict[str, Any]:
        """What a server Result records of the options, here or on a cluster (each adds its own keys)."""
        return {
            "servers": self.servers,
            "keys": self.keys,
            "sources": self.sources,
            "client_auth": self.client_auth,
            "resume_ratios": self.resume_ratios,
            "depths": self.depths,
            "tls": self.tls,
            "protocol": self.protocol,
            "concurrency": self.concurrency,
            "rates": self.rates,
            "matrix": self.matrix,
            "duration_s": self.duration_s,
            "warmup_s": self.warmup_s,
            "core": self.core,
            "seed": self.seed,
        }


def _canonical(values: list[T], order: tuple[T, ...]) -> list[T]:
    """A list option in one fixed order, repeats dropped: `--key rsa-2048,ecdsa-p256` and
    `--key ecdsa-p256,rsa-2048` measure and show the same rows in the same order, so two runs' tables
    line up (names outside `order` keep their place after the known ones; validation names them)."""
    seen = list(dict.fromkeys(values))
    return sorted(seen, key=lambda v: order.index(v) if v in order else len(order) + seen.index(v))


def check_levels(o: ServerOptions) -> None:
    """The load levels and their timing asked for, whichever server is loaded (InputError naming the option)."""
    if not o.concurrency or any(not 1 <= c <= 4096 for c in o.concurrency):
        raise InputError(f"--concurrency {o.concurrency}: give 1..4096 clients per level")
    if not 0.2 <= o.duration_s <= 3600:
        raise InputError(f"--duration {o.duration_s}: give 0.2..3600 seconds per level")
    if not 0 <= o.warmup_s <= 60:
        raise InputError(f"--warmup {o.warmup_s}: give 0..60 seconds")
    if o.tls not in ("1.2", "1.3"):
        raise InputError(f"--tls {o.tls}: give 1.2 or 1.3")


def plan(o: ServerOptions) -> list[ServerConfig]:
    """Every combination that makes sense, validated before anything runs (nocrt keys: probe only;
    offload: nginx and mosquitto with the token's key types)."""

    check_levels(o)
    if o.protocol not in S.PROTOCOLS:
        raise InputError(f"--protocol {o.protocol}: give {' or '.join(S.PROTOCOLS)}")
    if o.rates and any(not 1 <= r <= 1e6 for r in o.rates):
        raise InputError(f"--rates {o.rates}: give offered rates of 1..1,000,000 connections/s")
    if o.matrix:
        return dtls_matrix_plan() if o.protocol == "dtls" else with_profiles(matrix_plan(o.tls))
    out = []
    for server in _canonical(o.servers, S.SERVERS):
        for key in _canonical(o.keys, S.KEYS):
            for src in list(dict.fromkeys(o.sources)):
                if key.endswith("-nocrt") and server != "probe" and len(o.servers) > 1:
                    continue  # the no-CRT key runs on the probe server only: skip it for the others
                if src != "software" and server not in S.OFFLOAD_SERVERS and len(o.servers) > 1:
                    continue
                for auth in o.client_auth:
                    for r in o.resume_ratios:
                        for d in o.depths:
                            cfg = S.ServerConfig(server, key, src, auth, r, d, o.tls, o.protocol)
                            S.validate(cfg)
                            out.append(cfg)
    if not out:
        raise InputError(
            "nothing to measure: the --server, --key and --key-source combinations all exclude "
            "each other (no-CRT keys run on --server probe; offload on --server nginx or mosquitto)"
        )
    return with_profiles(out)


def with_profiles(cfgs: list[ServerConfig]) -> list[ServerConfig]:
    """The configurations with their offloaded keys' secure-element profiles resolved, once for all
    of them (app/se_keys): the measurement takes ServerConfig.profile, never the name."""

    wanted = {n: f"--key-source {c.source}" for c in cfgs if (n := offload_name(c.source))}
    profiles = profiles_named(wanted)
    return [replace(c, profile=profiles[n]) if (n := offload_name(c.source)) else c for c in cfgs]


def matrix_plan(tls: str = "1.3") -> list[ServerConfig]:
    """The capacity table of issue 15 as one list of configurations: every server key in software on
    nginx (CRT keys) and on the probe server (with and without CRT: OpenSSL cannot load an n, e,
    d-only key from a file, the probe builds it in memory); the token's keys offloaded behind the
    shim with the profile of their algorithm, busy-poll and sleep; client authentication,
    resumption ratio and chain depth on nginx RSA-2048; mosquitto with RSA-2048 and P-256."""

    C = S.ServerConfig
    rsa = ("rsa-1024", "rsa-2048", "rsa-3072", "rsa-4096")
    out = [C("nginx", k, tls=tls) for k in (*rsa, "ecdsa-p256", "ecdsa-p384", "ed25519")]
    out += [C("probe", k + suf, tls=tls) for k in rsa for suf in ("", "-nocrt")]
    out += [C("nginx", k, f"offload:{S.OFFLOAD_PROFILE[k]}:{w}", tls=tls) for k in S.TOKEN_KEYS for w in S.WAITS]
    out += [C("nginx", "rsa-2048", client_auth=True, tls=tls)]
    out += [C("nginx", "rsa-2048", resume_ratio=r, tls=tls) for r in (0.5, 1.0)]
    out += [C("nginx", "rsa-2048", depth=d, tls=tls) for d in (2, 3)]
    out += [C("mosquitto", k, tls=tls) for k in ("rsa-2048", "ecdsa-p256")]
    for c in out:
        S.validate(c)
    return out


def dtls_matrix_plan() -> list[ServerConfig]:
    """DTLS 1.2 handshake capacity of libcoap's coap-server (the concurrent DTLS target) by server
    key, and with client authentication on P-256 (no resumption: coap-server resumes no DTLS
    session; no offload: it loads its key from a PEM file)."""

    C = S.ServerConfig
    keys = ("rsa-1024", "rsa-2048", "rsa-3072", "rsa-4096", "ecdsa-p256", "ecdsa-p384")
    out = [C("coap-server", k, tls="1.2", protocol="dtls") for k in keys]
    out += [C("coap-server", "ecdsa-p256", client_auth=True, tls="1.2", protocol="dtls")]
    for c in out:
        S.validate(c)
    return out


@dataclass
class FleetOptions:
    devices: list[int] = field(default_factory=lambda: [100_000])
    cluster: str | None = None  # --cluster: a --replay storm's clients over a Ray cluster's generators
    policies: list[str] = field(default_factory=lambda: ["exponential"])
    capacity: float | None = None  # full handshakes/s; None: measure
    resumed_capacity: float | None = None
    resumed_share: float = 0.0
    base_s: float = 1.0
    cap_s: float = 60.0
    timeout_s: float = 10.0
    backlog: int = 4096
    spread_s: float = 0.0
    device_handshake_s: float = 0.0
    horizon_s: float = 7200.0
    from_result: str | None = None
    server: str = "nginx"
    key: str | None = None  # the server key; None: not chosen (DEFAULT_FLEET_KEY when measured)
    measure_s: float = 2.0
    seed: int = 1
    abandoned_work: bool = False  # the model: the server also serves attempts whose client gave up
    replay: int | None = None  # replay a storm of this many clients against nginx and compare
    target: Any = None  # --target with --replay: the storm against the user's server (LoadTarget)
    target_backlog: int | None = None  # the target's listen backlog ([server].backlog of --system); None: assumed
    target_accept_per_s: float | None = None  # the target's accept rate ([server].accept_per_s); None: probed
    allow_partial: bool = False  # --from may name a running or abandoned run
    max_hours: float | None = None  # --max-hours: the limit of the run's estimate (app/bounds.py)


def replay_backlog(o: FleetOptions, clients: int) -> tuple[int, str]:
    """The listen backlog the replay's model takes, and where it comes from: the one secperf started
    nginx with, a target's from its system file ([server].backlog), or for a target without it an
    assumption (max(512, clients + 64): every client queued, as nginx here)."""
    if o.target is None:
        return max(512, clients + 64), "nginx started by secperf with listen backlog max(512, clients + 64)"
    if o.target_backlog is not None:
        return o.target_backlog, "[server].backlog of the --system file"
    return max(512, clients + 64), (
        "assumed: max(512, clients + 64), the target's backlog is not known; give [server].backlog in a "
        "--system file (`ss -ltn` on the server shows it as the listening socket's Send-Q)"
    )


def replay_accept(measured: dict[str, Any]) -> tuple[float, str]:
    """The accept rate the replay's model takes and where it comes from: the target's (its system file's
    [server].accept_per_s or the probe before the replay, measured["accept_rate"]), else fleet's assumed one."""
    acc = measured.get("accept_rate") or {}
    if acc.get("accept_per_s"):
        return float(acc["accept_per_s"]), str(acc.get("from") or "measured (accept_rate)")
    why = f" (the probe: {acc['why_none']})" if acc.get("why_none") else ""
    return FleetModel.accept_per_s, f"assumed (fleet's model default): no measured accept rate{why}"


def replay_compare(o: FleetOptions, policy: str, measured: dict[str, Any]) -> dict[str, Any]:
    """A replayed storm beside the model given the capacity measured just before it: the model with
    and without the server's abandoned work, and the ratios measured / model."""

    st = measured["storm"]
    backlog, backlog_from = replay_backlog(o, measured["clients"])
    accept_per_s, accept_from = replay_accept(measured)
    out: dict[str, Any] = {
        "clients": measured["clients"],
        "policy": policy,
        "capacity_per_s": measured["capacity_per_s"],
        "capacity_before_after_per_s": measured.get("capacity_before_after_per_s"),
        "timeout_s": o.timeout_s,
        "base_s": o.base_s,
        "cap_s": o.cap_s,
        "server_cpu_s": measured["server_cpu_s"],
        "backlog": backlog,
        "backlog_from": backlog_from,
        "accept_per_s": accept_per_s,
        "accept_from": accept_from,
        "accept_rate": measured.get("accept_rate"),  # the probe's rounds (or the file's figure), as taken
        "measured": {
            k: st.get(k)
            for k in (
                "time_all_back_s",
                "wait_p50_s",
                "wait_p90_s",
                "wait_p99_s",
                "back",
                "gave_up",
                "failed_attempts",
                "attempts",
                "stopped",
                "elapsed_s",
                "errors",
            )
        },
        "intervals": measured["intervals"],
        "models": {},
    }
    for ab in (True, False):
        r = simulate(
            FleetModel(
                devices=measured["clients"],
                capacity_full_per_s=measured["capacity_per_s"],
                policy=policy,
                base_s=o.base_s,
                cap_s=o.cap_s,
                timeout_s=o.timeout_s,
                backlog=backlog,
                accept_per_s=accept_per_s,
                abandoned_work=ab,
                horizon_s=o.horizon_s,
            )
        )
        m = {
            "time_all_back_s": r["time_all_back_s"],
            "wait_p50_s": r["wait_s"]["p50"],
            "wait_p99_s": r["wait_s"]["p99"],
            "failed_attempts": r["failed_attempts"],
            "syn_drops": r["syn_drops"],
        }
        for k in ("time_all_back_s", "wait_p99_s"):
            mv, pv = st.get(k), m[k]
            m[f"ratio_{k}"] = mv / pv if mv and pv else None
        out["models"]["abandoned work" if ab else "late work dropped"] = m
    return out


# --- the user's own server (--target): what its rows are called and what the Result records -----------
def label_of(o: ServerOptions, resume_ratio: float) -> str:
    return label(o.target, resume_ratio)


def params_of(o: ServerOptions) -> dict[str, Any]:
    return {
        "target": o.target.labels(),
        "resume_ratios": o.resume_ratios,
        "tls": o.tls,
        "protocol": o.target.protocol,
        "concurrency": o.concurrency,
        "rates": o.rates,
        "duration_s": o.duration_s,
        "warmup_s": o.warmup_s,
        "core": o.core,
        "seed": o.seed,
        "server_cpu": "not measured (a target secperf did not start)",
    }
