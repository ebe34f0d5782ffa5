"""Communication patterns (study S2's six, or the user's own) as TOML files, validated once
(pydantic v2) into a Pattern: how often the device talks and how much, how it keeps or loses its
connection, what it must achieve (latency, determinism, energy per day, each with its unit) and
which protocol, authentication and measures it may use. Every section carries a `source`: a
publication, a datasheet, or "example: ..." for a figure chosen to illustrate.

Errors name the key path (`[traffic].interval_s`) and the allowed values; exit 2.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from ..core.errors import InputError
from ..core.files import parse_toml, read_text_input
from .field_errors import Loc, describe
from .vocabulary import note

SCHEDULES = ("periodic", "events", "batch", "bulk")
MODES = ("always-on", "per-message", "after-sleep")
PROTOCOLS = ("mqtt", "coap", "https", "vpn")
AUTHS = ("mtls", "jwt", "psk")
MEASURES = (
    "resumption",
    "keepalive",
    "pooling",
    "token-cache",
    "preauth",
    "psk",
    "precomputed-keyshare",
    "backoff",
    "edhoc-oscore",
    "quic-0rtt",
    "dtls13-cid",
)
TIME_UNITS = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
ENERGY_UNITS = {"mJ": 1e-3, "J": 1.0, "kJ": 1e3, "mWh": 3.6, "Wh": 3600.0}
CHARGE_UNITS = {"mAh": 1.0, "Ah": 1000.0}
_QTY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-zµ]+)\s*$")

Positive = Annotated[float, Field(gt=0, le=1e9, allow_inf_nan=False)]  # bounded: 1e308 overflowed downstream
# a time between events, in s: at least 1 ms (1e-300 s made 1e304 messages a day, figures past any meaning)
Interval = Annotated[float, Field(ge=1e-3, le=1e9, allow_inf_nan=False)]
Source = Annotated[str, Field(min_length=3)]


EXAMPLE_UNIT = {"time": "ms", "energy": "J", "charge": "mAh"}
# the largest quantity accepted, in the base unit: a budget of 1e308 s passed the parse and became inf
# in milliseconds downstream (a limit of "inf s", a threshold a Result cannot hold)
QUANTITY_MAX = {"time": 1e9, "energy": 1e12, "charge": 1e12}  # 31 years; a TJ; a billion mAh


def parse_quantity(text: object, units: dict[str, float], what: str) -> float:
    """'100 ms' -> 0.1 (in the base unit of `units`); a number without a unit is an error."""
    ex = EXAMPLE_UNIT.get(what, next(iter(units)))
    if not isinstance(text, str):
        raise InputError(
            f"{text!r} has no unit: write a {what} as a string such as \"{text} {ex}\"; units: {', '.join(units)}"
        )
    m = _QTY.match(text)
    if not m:
        raise InputError(
            f"{text!r} is not {'an' if what[0] in 'aeiou' else 'a'} {what} with a unit; write e.g. \"100 {ex}\"; "
            f"units: {', '.join(units)}"
        )
    num, unit = float(m.group(1)), m.group(2)
    if unit not in units:
        raise InputError(f"unknown unit {unit!r} in {text!r}; units: {', '.join(units)}")
    v = num * units[unit]
    top = QUANTITY_MAX.get(what, 1e12)
    if not math.isfinite(v) or v > top:  # 1e999 is inf: too large, not "not greater than 0"
        base = next((k for k, f in units.items() if f == 1.0), "")
        raise InputError(
            f"{text!r} is too large: {'an' if what[0] in 'aeiou' else 'a'} {what} of at most {top:g} {base} (a bound far past any "
            f"useful value, so figures derived from it stay finite)"
        )
    if v <= 0:
        raise InputError(f"{text!r} must be greater than 0")
    return v


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Traffic(_Section):
    schedule: Literal["periodic", "events", "batch", "bulk"]
    interval_s: Interval | None = None  # periodic: one message every interval_s
    events_per_day: Positive | None = None  # events: Poisson arrivals at this mean rate
    batches_per_day: Positive | None = None  # batch: this many batches a day ...
    messages_per_batch: Annotated[int, Field(ge=1, le=1_000_000)] | None = None  # ... of this many messages
    transfers_per_day: Positive | None = None  # bulk: transfers a day (1/30: monthly)
    payload_up_bytes: Annotated[int, Field(ge=0, le=1 << 30)] = 64
    payload_down_bytes: Annotated[int, Field(ge=0, le=1 << 30)] = 16
    reachable: bool = False  # the device must receive downlink at any time
    source: Source

    @model_validator(mode="after")
    def _rate(self) -> Traffic:
        need = {
            "periodic": ("interval_s",),
            "events": ("events_per_day",),
            "batch": ("batches_per_day", "messages_per_batch"),
            "bulk": ("transfers_per_day",),
        }[self.schedule]
        for k in need:
            if getattr(self, k) is None:
                raise ValueError(f"schedule {self.schedule!r} needs {k} (a rate greater than 0)")
        return self


class Connection(_Section):
    mode: Literal["always-on", "per-message", "after-sleep"]
    sleep_s: Interval | None = None  # after-sleep: the modem is off after this long idle
    nat_timeout_s: Interval | None = None  # a NAT or server idle time-out that kills sessions
    drops_per_day: Annotated[float, Field(ge=0, le=1e9, allow_inf_nan=False)] = (
        0.0  # sessions lost to handovers, resets
    )
    ticket_lifetime_s: Interval = 7200.0  # how long a session can be resumed
    keepalive_s: Interval | None = None  # keep-alive interval when that measure is used
    source: Source

    @model_validator(mode="after")
    def _sleep(self) -> Connection:
        if self.mode == "after-sleep" and self.sleep_s is None:
            raise ValueError("mode 'after-sleep' needs sleep_s (seconds idle before the modem sleeps)")
        return self


class Requirements(_Section):
    latency: str | int | float  # e.g. "100 ms": the percentile below must stay under it
    latency_percentile: Annotated[float, Field(ge=50, le=99.9)] = 95.0
    determinism: str | int | float | None = None  # e.g. "50 ms": worst regular message - P50
    energy_per_day: str | int | float | None = None  # e.g. "9 J"
    source: Source
    # where each requirement comes from (study S2's pattern table, REFERENCE.md; an issue; or
    # "example: ..."); the planner's verdict cites the deciding one. Optional: `source` otherwise.
    latency_source: Source | None = None
    determinism_source: Source | None = None
    energy_source: Source | None = None

    @field_validator("latency", "determinism")
    @classmethod
    def _time(cls, v: str | int | float | None) -> str | int | float | None:
        if v is not None:
            parse_quantity(v, TIME_UNITS, "time")
        return v

    @field_validator("energy_per_day")
    @classmethod
    def _energy(cls, v: str | int | float | None) -> str | int | float | None:
        if v is not None:
            parse_quantity(v, ENERGY_UNITS, "energy")
        return v


class Stack(_Section):
    protocol: Literal["mqtt", "coap", "https", "vpn"]
    auth: Literal["mtls", "jwt", "psk"] = "mtls"
    key: str = "se:iot-safe-sim"  # software | se:PROFILE | se:PROFILE:cold
    jwt_lifetime_s: Interval = 3600.0
    measures: (
        list[
            Literal[
                "resumption", "keepalive", "pooling", "token-cache", "preauth", "psk", "precomputed-keyshare", "backoff"
            ]
        ]
        | None
    ) = None
    network: str = "lte-m"
    radio: str | None = None  # radio energy profile (default: the network's)
    device: str = "host-default"
    battery: str | int | float | None = None  # e.g. "2600 mAh"
    battery_voltage_v: Positive = 3.6
    source: Source

    @field_validator("battery")
    @classmethod
    def _battery(cls, v: str | int | float | None) -> str | int | float | None:
        if v is not None:
            parse_quantity(v, CHARGE_UNITS, "charge")
        return v

    @field_validator("measures")
    @classmethod
    def _measures_once(cls, v: list[str] | None) -> list[str] | None:
        """A measure named twice is used once, with a note (two rows of one measure in the ranking)."""
        if v is None or len(set(v)) == len(v):
            return v

        note(
            f"[stack].measures: {', '.join(sorted({m for m in v if v.count(m) > 1}))} given more than once; "
            f"each is used once"
        )
        return list(dict.fromkeys(v))

    @field_validator("key")
    @classmethod
    def _key(cls, v: str) -> str:
        if v != "software" and not re.fullmatch(r"se:[a-z0-9-]+(:cold)?", v):
            raise ValueError("must be software, se:PROFILE or se:PROFILE:cold")
        return v


class Pattern(_Section):
    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$")]
    description: str = ""
    source: Source
    traffic: Traffic
    connection: Connection
    requirements: Requirements
    stack: Stack

    # --- derived figures -----------------------------------------------------------------------
    @property
    def latency_s(self) -> float:
        return parse_quantity(self.requirements.latency, TIME_UNITS, "time")

    @property
    def determinism_s(self) -> float | None:
        d = self.requirements.determinism
        return None if d is None else parse_quantity(d, TIME_UNITS, "time")

    @property
    def energy_budget_j(self) -> float | None:
        e = self.requirements.energy_per_day
        return None if e is None else parse_quantity(e, ENERGY_UNITS, "energy")

    @property
    def battery_mah(self) -> float | None:
        b = self.stack.battery
        return None if b is None else parse_quantity(b, CHARGE_UNITS, "charge")


SECTIONS = ("traffic", "connection", "requirements", "stack")
_MODELS: dict[str, type[BaseModel]] = {
    "traffic": Traffic,
    "connection": Connection,
    "requirements": Requirements,
    "stack": Stack,
}


def _allowed_values(loc: Loc) -> str:
    model: type[BaseModel] = Pattern
    for part in loc:
        if isinstance(part, str) and part in _MODELS and model is Pattern:
            model = _MODELS[part]
            continue
        if isinstance(part, str) and part in getattr(model, "model_fields", {}):
            ann = model.model_fields[part].annotation
            vals: list[str] = re.findall(r"Literal\[([^\]]*)\]", str(ann))
            if vals:
                return vals[0].replace("'", "")
    return ""


def _describe(err: ErrorDetails) -> str:
    return describe(
        err, root=Pattern, models=_MODELS, sections=SECTIONS, allowed_values=_allowed_values, sort_fields=True
    )


def validate_pattern(raw: Mapping[str, Any], where: str = "pattern") -> Pattern:
    """The parsed TOML checked against the schema; InputError naming every problem's key path."""
    try:
        return Pattern.model_validate(raw)
    except ValidationError as exc:
        shown: list[str] = []
        more = 0
        for err in exc.errors():  # only the shown ones are described (a set, not a scan of a list)
            if len(shown) >= 6:
                more += 1
                continue
            text = _describe(err)
            if text not in shown:
                shown.append(text)
        raise InputError(f"{where}: " + "; ".join(shown) + (f" (and {more} more)" if more else "")) from None


STUDY_ORDER = (
    "periodic-collection",
    "event-driven",
    "real-time-control",
    "remote-management",
    "bulk-transfer",
    "batch-collection",
)


def builtin_names() -> list[str]:
    """The shipped patterns: study S2's six in the study's order, then any others."""
    d = resources.files("secperf.data").joinpath("patterns")
    names = {p.name.removesuffix(".toml") for p in d.iterdir() if p.name.endswith(".toml")}
    return [n for n in STUDY_ORDER if n in names] + sorted(names - set(STUDY_ORDER))


@lru_cache(maxsize=32)
def _builtin_text(name: str) -> str:
    return resources.files("secperf.data").joinpath("patterns", f"{name}.toml").read_text()


def load_pattern(ref: str) -> Pattern:
    """A pattern by built-in name or from a TOML file."""
    if ref in builtin_names():
        text, where = _builtin_text(ref), f"pattern {ref}"
    else:
        p = Path(ref)
        if not p.is_file():
            raise InputError(
                f"--pattern {ref!r}: neither a built-in pattern ({', '.join(builtin_names())}, or "
                f"'study' for all six) nor a readable TOML file"
            )

        text, where = read_text_input(p, "pattern", f"--pattern {ref}"), str(p)

    try:
        doc = parse_toml(text, where)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{where}: not valid TOML: {exc}") from None
    return validate_pattern(doc, where)


def load_patterns(refs: list[str]) -> list[Pattern]:
    out: list[Pattern] = []
    for r in refs:
        if r in ("study", "all"):
            out += [load_pattern(n) for n in builtin_names()]
        else:
            out.append(load_pattern(r))
    return out


def pattern_json_schema() -> dict[str, Any]:
    return Pattern.model_json_schema()
