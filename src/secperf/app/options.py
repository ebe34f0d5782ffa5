"""What every measuring command takes (--n, --duration, --warmup, --seed, --min-sample-us), as
plain data the library functions read; the CLI fills it from its arguments."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import InputError


@dataclass
class MeasureOptions:
    n: int | None = None              # samples per series (None: the command's or scenario's default)
    duration_s: float | None = None   # time budget per series
    warmup: int | None = None         # samples run and discarded before counting
    seed: int = 1
    min_sample_us: float = 1000.0     # batch operations until a sample lasts this long
    hash: str = "sha256"
    prehashed: bool = False
    timeout_ms: int | None = None     # per-connection stage timeout (handshake, connect)

    def pick_n(self, default: int) -> int:
        return self.n or default

    def pick_warmup(self, default: int) -> int:
        return self.warmup if self.warmup is not None else default


def crypto_params(opts: MeasureOptions, defaults: dict):
    from ..measure.crypto import CryptoParams
    p = CryptoParams()
    p.n = opts.n or defaults.get("n", p.n)
    p.warmup = opts.warmup if opts.warmup is not None else defaults.get("warmup", p.warmup)
    p.duration_s = opts.duration_s or defaults.get("duration_s", p.duration_s)
    p.min_sample_us = opts.min_sample_us
    if p.min_sample_us / 1e6 > p.duration_s:
        raise InputError(f"--min-sample-us {p.min_sample_us:g}: one sample would last longer than the series' time "
                         f"budget (--duration {p.duration_s:g} s); lower --min-sample-us or raise --duration")
    p.seed = opts.seed
    p.hash = opts.hash
    p.prehashed = opts.prehashed
    return p


def handshake_params(opts: MeasureOptions, defaults: dict):
    from ..measure.handshake import HandshakeParams
    hp = HandshakeParams()
    hp.n = opts.n or defaults.get("n", hp.n)
    hp.warmup = opts.warmup if opts.warmup is not None else defaults.get("warmup", hp.warmup)
    hp.timeout_ms = opts.timeout_ms or defaults.get("timeout_ms", hp.timeout_ms)
    return hp
