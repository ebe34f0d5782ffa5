"""What every measuring command takes (--n, --duration, --warmup, --seed, --min-sample-us), as
plain data the library functions read; the CLI fills it from its arguments."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.errors import InputError
from ..measure.crypto import CryptoParams
from ..measure.handshake import HandshakeParams
from .can import CanOptions

DEFAULT_MAX_HOURS = 24.0


@dataclass
class MeasureOptions:
    n: int | None = None  # samples per series (None: the command's or scenario's default)
    duration_s: float | None = None  # time budget per series
    warmup: int | None = None  # samples run and discarded before counting
    seed: int = 1
    min_sample_us: float = 1000.0  # batch operations until a sample lasts this long
    hash: str = "sha256"
    prehashed: bool = False
    timeout_ms: int | None = None  # per-connection stage timeout (handshake, connect)
    max_hours: float = DEFAULT_MAX_HOURS  # the longest run the options may plan (--max-hours)
    max_hours_given: float | None = None  # --max-hours as given (None: each command's own limit, app/bounds.py)

    def pick_n(self, default: int) -> int:
        return self.n or default

    def pick_warmup(self, default: int) -> int:
        return self.warmup if self.warmup is not None else default


def crypto_params(opts: MeasureOptions, defaults: dict[str, Any]) -> CryptoParams:
    p = CryptoParams()
    p.n = opts.n or defaults.get("n", p.n)
    p.warmup = opts.warmup if opts.warmup is not None else defaults.get("warmup", p.warmup)
    p.duration_s = opts.duration_s or defaults.get("duration_s", p.duration_s)
    p.min_sample_us = opts.min_sample_us
    if p.min_sample_us / 1e6 > p.duration_s:
        raise InputError(
            f"--min-sample-us {p.min_sample_us:g}: one sample would last longer than the series' time "
            f"budget (--duration {p.duration_s:g} s); lower --min-sample-us or raise --duration"
        )
    p.seed = opts.seed
    p.hash = opts.hash
    p.prehashed = opts.prehashed
    return p


def handshake_params(opts: MeasureOptions, defaults: dict[str, Any]) -> HandshakeParams:
    hp = HandshakeParams()
    hp.n = opts.n or defaults.get("n", hp.n)
    hp.warmup = opts.warmup if opts.warmup is not None else defaults.get("warmup", hp.warmup)
    hp.timeout_ms = opts.timeout_ms or defaults.get("timeout_ms", hp.timeout_ms)
    hp.seed = opts.seed
    return hp


def check_time_budget(n_series: int, params: CryptoParams, max_hours: float) -> None:
    """Each bound alone can be fine and their product not: rows x min(--duration, (--n + --warmup) x
    --min-sample-us) is the least time the run takes; over --max-hours it is refused before anything
    runs (crypto --n 1000000 --min-sample-us 10000000 --duration 86400 planned months)."""
    per_series_s = min(params.duration_s, (params.n + params.warmup) * params.min_sample_us / 1e6)
    total_h = n_series * max(per_series_s, params.min_sample_us / 1e6) / 3600
    if total_h > max_hours:
        raise InputError(
            f"{n_series} series x {per_series_s:g} s each (the least of --duration {params.duration_s:g} s "
            f"and (--n {params.n} + --warmup {params.warmup}) x --min-sample-us {params.min_sample_us:g}) "
            f"is {total_h:.3g} h, over --max-hours {max_hours:g}; lower one of them, or raise --max-hours "
            f"if you mean it"
        )


@dataclass
class ConnectOptions:
    """What `secperf connect` takes. A list left None was not given: the command's default applies
    (and for edhoc, "not given" and "given" differ: --key software is accepted, another key is not)."""

    protocols: list[str]
    keys: list[str] | None = None
    handshakes: list[str] | None = None
    clients: list[str] | None = None
    auths: list[str] | None = None
    coap_security: list[str] | None = None
    networks: list[str] | None = None
    tls: str = "1.3"
    nagle: bool = False
    key_sessions: list[str] | None = None
    coap_servers: list[str] | None = None
    target: dict[str, Any] | None = None  # the user's own server (--connect HOST:PORT and its options)
    lost: list[str] | None = None  # quic, dtls13, dtls12
    cid: list[str] | None = None  # dtls13
    edhoc_method: list[str] | None = None
    edhoc_suite: list[str] | None = None
    edhoc_cred: list[str] | None = None
    edhoc_flow: list[str] | None = None
    oscore_requests: int | None = None
    measure: MeasureOptions = field(default_factory=MeasureOptions)


@dataclass
class HandshakeExperimentOptions:
    """What `secperf handshake` takes: one experiment (its configurations) against the servers, over
    the links, with the client libraries; `target` is the user's own server (--connect HOST:PORT and
    its options), which replaces the servers."""

    experiment: str
    servers: list[str] = field(default_factory=lambda: ["probe"])
    networks: list[str] | None = None  # None: loopback
    mtls: bool = False
    stacks: list[str] = field(default_factory=lambda: ["openssl"])
    target: dict[str, Any] | None = None
    measure: MeasureOptions = field(default_factory=MeasureOptions)


@dataclass
class JwtOptions:
    """What `secperf jwt` takes: tokens signed with each profile's keys, fresh and cached, over the
    links, and the request rate and lifetime of the signatures-per-hour estimate."""

    profiles: list[str] = field(default_factory=lambda: ["iot-safe-sim"])
    keys: list[str] = field(default_factory=lambda: ["ecdsa-p256"])
    networks: list[str] | None = None  # None: loopback
    lifetime_s: int = 3600
    requests_per_hour: float = 60.0
    key_sessions: list[str] = field(default_factory=lambda: ["warm"])
    measure: MeasureOptions = field(default_factory=MeasureOptions)


@dataclass
class MacOptions:
    """What `secperf mac` takes: the MACs and sizes timed on the host (None: the command's default
    lists), the Cortex-M targets counted under QEMU (["none"]: no target), and the CAN model's options."""

    algs: list[str] | None = None
    sizes: list[str] | None = None
    cortexm: list[str] = field(default_factory=lambda: ["m0", "m3"])
    cortexm_only: bool = False
    cortexm_table: str | None = None  # write the instruction-count table here as JSON
    can: CanOptions = field(default_factory=CanOptions)
    measure: MeasureOptions = field(default_factory=MeasureOptions)
