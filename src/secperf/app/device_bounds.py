"""Bounded runs of `secperf device`: the emulator's planning time of a handshake or primitives run,
checked (app/bounds.check_estimate: exit 2 naming the estimate and --max-hours) before anything is built
or run. The rows are the product of the lists given (an upper bound of what measure/device's plan keeps:
it drops a few combinations that make no sense, e.g. a group for a PSK row); the per-row figures are
app/bounds.py's DEVICE_* planning figures."""

from __future__ import annotations

from collections.abc import Iterable
from math import prod
from typing import Protocol

from . import bounds

Names = str | Iterable[str]  # a comma list or its values, as the device options hold them


class HandshakeOptions(Protocol):
    """What the estimate reads of app/device.HandshakeOptions (named here so the arrow runs one way)."""

    @property
    def tls(self) -> Names: ...
    @property
    def mode(self) -> Names: ...
    @property
    def config(self) -> Names | None: ...
    @property
    def stack(self) -> Names: ...
    @property
    def group(self) -> Names: ...
    @property
    def suite(self) -> Names: ...
    @property
    def server_cert(self) -> Names: ...
    @property
    def client_cert(self) -> Names: ...
    @property
    def n(self) -> int: ...
    @property
    def warmup(self) -> int: ...


def _names(value: Names | None) -> list[str]:
    if value is None:
        return []
    return [v.strip().lower() for v in (value.split(",") if isinstance(value, str) else value) if v.strip()]


def _edhoc_variant(mode: str) -> bool:
    return mode.startswith("m") and "-" in mode


def handshake_rows(opts: HandshakeOptions) -> int:
    """The configurations a `device handshake` run plans (TLS/DTLS rows, QUIC rows, EDHOC rows together)."""
    tls, modes = _names(opts.tls), _names(opts.mode)
    configs = max(1, len(_names(opts.config)))
    stacks, groups, suites = len(_names(opts.stack)) or 1, len(_names(opts.group)) or 1, len(_names(opts.suite)) or 1
    certs = (len(_names(opts.server_cert)) or 1) * (len(_names(opts.client_cert)) or 1)
    if "quic" in tls:
        return prod((len(modes) or 1, groups, suites, len(_names(opts.server_cert)) or 1))
    others = [t for t in tls if t != "edhoc"]
    rows = 0
    if others:
        t_modes = [m for m in modes if not _edhoc_variant(m)] or ["full"]
        rows += prod((stacks, len(others), groups, suites, len(t_modes), certs, configs))
    if "edhoc" in tls:
        e_modes = modes if not others else [m for m in modes if m == "full" or _edhoc_variant(m)]
        rows += max(1, len(e_modes)) * stacks * configs
    return max(rows, 1)


def check_handshakes(opts: HandshakeOptions, max_hours: float | None) -> dict[str, float]:
    rows = handshake_rows(opts)
    return bounds.check_estimate(
        "device handshake",
        bounds.device_handshakes_s(rows, opts.n, opts.warmup),
        f"up to {rows} configurations x (1 + --warmup {opts.warmup} + --n {opts.n}) handshakes "
        f"under the emulator, about {bounds.DEVICE_HANDSHAKE_S:g} s each",
        "lower --n, --warmup or the configurations (--group, --suite, --mode, --stack)",
        max_hours,
    )


def check_crypto(
    stacks: Names, ops: list[str] | None, n: int, config: Names | None, max_hours: float | None
) -> dict[str, float]:
    rows = (len(_names(stacks)) or 1) * max(1, len(_names(config)))
    n_ops = len(ops) if ops else None
    what = f"{n_ops}" if n_ops else f"about {bounds.DEVICE_OPS_PER_STACK}"
    return bounds.check_estimate(
        "device crypto",
        bounds.device_ops_s(rows, n_ops, n),
        f"{rows} stacks and builds x {what} operations x --n {n} under the emulator, about "
        f"{bounds.DEVICE_OP_S:g} s each",
        "lower --n, --op or --stack",
        max_hours,
    )


def check_user_code(calls: int | None, max_hours: float | None) -> dict[str, float]:
    """Your own code (--source): --n counted calls (the harness's own count when not given: one row)."""
    k = calls or 1
    return bounds.check_estimate(
        "device crypto --source",
        bounds.device_ops_s(1, 1, k),
        f"{k} counted calls under the emulator, about {bounds.DEVICE_OP_S:g} s each",
        "lower --n (the counted calls)",
        max_hours,
    )
