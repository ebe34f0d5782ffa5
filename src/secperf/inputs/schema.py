"""Typed inputs: the scenario file's schema (pydantic v2), checked once when it is loaded.

Unknown keys and tables, wrong types ("three" for n, "yes" for a table) and values out of range are
input errors that name the key path (e.g. `[handshake].n`) and say what is expected. Names inside
lists (algorithms, profiles, networks) are checked against their catalogues by the loaders that use
them, with the catalogue's own message."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails

from ..core.errors import InputError

MAX_N = 1_000_000  # samples per series: beyond this a run would never end on any machine
MAX_WARMUP = 100_000
MAX_DURATION_S = 86_400.0  # a day per series
MAX_TIMEOUT_MS = 3_600_000

Count = Annotated[int, Field(ge=1, le=MAX_N)]
Warmup = Annotated[int, Field(ge=0, le=MAX_WARMUP)]
Names = list[Annotated[str, Field(min_length=1)]]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class CryptoSelect(_Section):
    alg: Names | str | None = None
    op: Names | str | None = None
    size: list[int | str] | int | str | None = None


class CryptoSection(_Section):
    n: Count | None = None
    warmup: Warmup | None = None
    duration_s: float | None = None
    message_bytes: Annotated[int, Field(ge=1, le=1 << 20)] | None = None  # the signed message (S5: 3 bytes)
    libraries: Names | str | None = None  # secperf crypto --library: openssl, wolfcrypt, mbedtls, jce, ...
    select: list[CryptoSelect] = []

    @field_validator("duration_s")
    @classmethod
    def _finite(cls, v: float | None) -> float | None:
        if v is not None and not (math.isfinite(v) and 0 < v <= MAX_DURATION_S):
            raise ValueError(f"must be a finite number of seconds in (0, {MAX_DURATION_S:g}]")
        return v


class HandshakeSection(_Section):
    experiments: Names = []
    servers: Names = ["probe"]
    networks: Names | str = ["loopback"]
    n: Count | None = None
    warmup: Warmup | None = None
    timeout_ms: Annotated[int, Field(ge=1, le=MAX_TIMEOUT_MS)] | None = None


class SignerSection(_Section):
    profiles: Names = ["iot-safe-sim"]
    keys: Names = ["ecdsa-p256"]
    modes: Names = ["local_sw", "sign_only", "total"]
    n: Count = 10
    warmup: Warmup = 1


class JwtSection(_Section):
    profiles: Names = ["iot-safe-sim"]
    keys: Names = ["ecdsa-p256"]
    n: Count = 10
    warmup: Warmup = 1
    lifetime_s: Annotated[int, Field(ge=1, le=10 * 365 * 86_400)] = 3600
    networks: Names | str = ["loopback"]
    key_sessions: Names = ["warm"]


class ConnectSection(_Section):
    protocols: Names = ["https", "mqtt", "coap"]
    keys: Names = ["software", "se:iot-safe-sim"]
    handshakes: Names = ["full", "resumed"]
    n: Count = 10
    warmup: Warmup = 1
    networks: Names | str = ["loopback"]
    key_sessions: Names = ["warm"]


class WhatifSection(_Section):
    """Predictions next to the measured rows: calibrated on this run's own loopback rows."""

    protocols: Names = ["https", "mqtt", "coap"]
    keys: Names = ["software", "se:iot-safe-sim"]
    handshakes: Names = ["full", "resumed"]
    networks: Names | str = ["loopback"]
    n: Annotated[int, Field(ge=100, le=10_000_000)] = 20_000


class DeviceSection(_Section):
    """An emulated-device handshake comparison (secperf device handshake)."""

    device: str = "cortex-a9-400"
    stack: str = "wolfssl"
    groups: Names = ["x25519", "p-256"]
    suites: Names = ["aes128gcm"]
    n: Annotated[int, Field(ge=1, le=1000)] = 5
    warmup: Annotated[int, Field(ge=0, le=100)] = 2


class Scenario(_Section):
    name: str | None = None
    description: str | None = None
    crypto: CryptoSection | None = None
    handshake: HandshakeSection | None = None
    signer: SignerSection | None = None
    jwt: JwtSection | None = None
    connect: ConnectSection | None = None
    whatif: WhatifSection | None = None
    device: DeviceSection | None = None


SECTIONS = ("crypto", "handshake", "signer", "jwt", "connect", "whatif", "device")


def _path(loc: tuple[int | str, ...]) -> str:
    """('handshake', 'n') -> [handshake].n ; ('crypto', 'select', 0, 'alg') -> [crypto].select[0].alg"""
    out = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif i == 0 and part in SECTIONS:
            out += f"[{part}]"
        elif part in ("list[str]", "str", "int", "list[union[int,str]]", "list[int|str]") or "[" in str(part):
            continue  # pydantic's union branch names are not key paths
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def _describe(err: ErrorDetails) -> str:
    kind, loc = err["type"], tuple(err["loc"])
    if kind == "extra_forbidden":
        parent, key = _path(loc[:-1]), loc[-1]
        allowed = _allowed(loc[:-1])
        where = "the top level" if parent == "(top level)" else parent
        return f"{where} has unknown keys [{key!r}]; allowed: {', '.join(allowed)}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return (
            f"{_path(loc)}: must be a table, e.g. [{_path(loc).strip('[]')}] on its own line (got {err.get('input')!r})"
        )
    got = err.get("input")
    shown = repr(got) if not isinstance(got, dict) else "a table"
    return f"{_path(loc)}: {err['msg'].lower()} (got {shown})"


def _allowed(loc: tuple[int | str, ...]) -> list[str]:
    model: Any = Scenario
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            break
        ann = field.annotation
        for cand in getattr(ann, "__args__", (ann,)):
            inner = getattr(cand, "__args__", (cand,))
            hit = next((c for c in inner if isinstance(c, type) and issubclass(c, BaseModel)), None)
            if hit is not None:
                model = hit
                break
            if isinstance(cand, type) and issubclass(cand, BaseModel):
                model = cand
                break
    return sorted(model.model_fields)


SHOWN_PROBLEMS = 6


def _first_problems(errors: list[ErrorDetails], limit: int) -> tuple[list[str], int]:
    """The first `limit` distinct problems and how many more there are. Only those shown are
    described (a file with 300 000 unknown keys once took minutes: each new message was looked up
    in the list of all earlier ones)."""
    shown: list[str] = []
    seen: set[str] = set()
    more = 0
    for err in errors:
        if len(shown) >= limit:
            more += 1
            continue
        text = _describe(err)
        if text not in seen:
            seen.add(text)
            shown.append(text)
    return shown, more


def validate_scenario(raw: Mapping[str, Any]) -> Scenario:
    """The parsed TOML checked against the schema; InputError naming every problem's key path."""
    try:
        scn = Scenario.model_validate(raw)
    except ValidationError as exc:
        shown, more = _first_problems(exc.errors(), SHOWN_PROBLEMS)
        raise InputError("; ".join(shown) + (f" (and {more} more)" if more else "")) from None
    if not any(getattr(scn, s) is not None for s in SECTIONS):
        raise InputError(f"nothing to run: give at least one of the tables {', '.join(f'[{s}]' for s in SECTIONS)}")
    return scn


def scenario_json_schema() -> dict[str, Any]:
    return Scenario.model_json_schema()
