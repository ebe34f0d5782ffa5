"""The Result as pydantic v2 models: the objects secperf's code builds and reads (measure builds
them with `core.result.new_result` / `new_series`, model/report/plan read their attributes), and the
schema every reader may rely on, published as JSON Schema by `secperf schema result`. Dicts exist only
at the JSON boundary: `core.result.load` validates a file into a `Result`, `core.result.dumps` writes
one. Open bags (`params`, `labels`, `derived`, `analysis`, a sample's extra fields) stay open on
purpose: each experiment adds its own, documented where it writes them; the fields named here are
typed and checked, on load and on assignment (`validate_assignment`).

`_Record` also answers the mapping protocol (`doc["series"]`, `s.get("summary")`, `"x" in s`,
`{**s}`): a bridge for the code that still reads the open bags and the extra fields by key, and for
callers (tests, the cluster's pickled rows) that hand a plain dict where a Result is expected, which
`core.result.as_result` / `as_series` turn into objects at the boundary."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator, model_validator

from .errors import ResultError


def problem(exc: ValidationError) -> str:
    """The first problem of a validation as `path: what is wrong` (times said in the Result's words)."""
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"]]
    msg = err["msg"][:200]
    if any(p in ("values_us", "cpu_values_us") for p in loc) or (loc and loc[-1].endswith("_us")):
        msg = f"must hold finite, non-negative times of at most {MAX_US:g} µs ({msg})"
    return f"{'.'.join(loc)}: {msg}" if loc else msg


class _Record(BaseModel):
    """A typed record that also reads and writes by key (the JSON field name, aliases included)."""

    model_config = ConfigDict(extra="allow", validate_assignment=True, populate_by_name=True)

    @classmethod
    def _attr(cls, key: str) -> str:
        return "schema_" if key == "schema" and "schema_" in cls.model_fields else key

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            super().__setattr__(name, value)
        except ValidationError as exc:  # a wrongly typed field set in memory: named, never a traceback
            raise ResultError(f"{type(self).__name__.lower()} field {problem(exc)}") from None

    def _has(self, key: str) -> bool:
        """Set on this record: a declared field given a value (not left to its default) or an extra
        key, as a JSON object has a key or not."""
        return self._attr(key) in self.model_fields_set or key in (self.__pydantic_extra__ or {})

    def __getitem__(self, key: str) -> Any:
        if not self._has(key):
            raise KeyError(key)
        name = self._attr(key)
        if name in type(self).model_fields:
            return getattr(self, name)
        return (self.__pydantic_extra__ or {})[key]

    def __setitem__(self, key: str, value: Any) -> None:
        name = self._attr(key)
        if name in type(self).model_fields or not key.startswith("_"):  # declared or public: typed, checked
            setattr(self, name, value)
        else:  # a private, underscore-led extra key: pydantic keeps those off attributes
            assert self.__pydantic_extra__ is not None
            self.__pydantic_extra__[key] = value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._has(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if self._has(key) else default

    def setdefault(self, key: str, default: Any = None) -> Any:
        if not self._has(key):
            self[key] = default
        return self[key]

    def pop(self, key: str, *default: Any) -> Any:
        extra = self.__pydantic_extra__ or {}
        if key in extra:
            return extra.pop(key)
        if default:
            return default[0]
        raise KeyError(key)

    def update(self, other: Any = (), **more: Any) -> None:
        pairs = other.items() if hasattr(other, "items") else other
        for k, v in [*pairs, *more.items()]:
            self[k] = v

    def keys(self) -> list[str]:
        names = [info.alias or name for name, info in type(self).model_fields.items() if name in self.model_fields_set]
        return names + list(self.__pydantic_extra__ or {})

    def items(self) -> list[tuple[str, Any]]:
        return [(k, self[k]) for k in self.keys()]

    def __iter__(self) -> Iterator[str]:  # type: ignore[override]  # iterate keys, as a mapping does
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())


FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
MAX_US = 1e15  # 31 years: no timer of secperf's measures longer; larger is a damaged or forged file
Duration = Annotated[float, Field(allow_inf_nan=False, ge=0, le=MAX_US)]  # a time: finite, never negative

SCHEMA_ID = "secperf.result"
# "internal-error": secperf's own read-back check (core/store.py) refused the Result it was about to
# call finished; what passed the check is kept readable, the whole as written beside it
RUN_STATUSES = ("running", "complete", "failed", "interrupted", "abandoned", "internal-error")
SERIES_STATUSES = ("ok", "partial", "failed", "unsupported")
# what wrote the run (the command); a reader dispatches on it, so an unknown one is refused
RUN_KINDS = (
    "run",
    "crypto",
    "handshake",
    "signer",
    "jwt",
    "connect",
    "mac",
    "can",
    "whatif",
    "plan",
    "server",
    "fleet",
    "device",
)
# analyses a reader renders as tables: each is an object when present
OBJECT_ANALYSES = ("plan", "fleet", "whatif")


class Timer(_Record):
    """A timer's named boundaries: what the first and the last instant of a value are."""

    name: str = Field(min_length=1)
    start: str = Field(min_length=1)
    end: str = Field(min_length=1)


class Failure(_Record):
    reason: str
    time: str | None = None


class Summary(_Record):
    """n, mean, sd, min, P50, P90, P99, max and the median's bootstrap 95% interval, in µs."""

    n: int = Field(ge=1)
    mean_us: Duration
    sd_us: Duration
    min_us: Duration
    p50_us: Duration
    p90_us: Duration
    p99_us: Duration
    max_us: Duration
    median_ci95_us: list[Duration] = Field(min_length=2, max_length=2)
    threshold_us: FiniteFloat | None = None
    over_threshold: int | None = None


Millis = Annotated[float, Field(allow_inf_nan=False, ge=0)]


class Percentiles(_Record):
    """A what-if percentile summary of simulated draws (µs); `percentiles_from` says whether the
    percentiles come from every draw ("exact") or the stored reservoir."""

    n: int | None = None
    mean_us: Duration | None = None
    sd_us: Duration | None = None
    min_us: Duration | None = None
    max_us: Duration | None = None
    p50_us: Duration | None = None
    p90_us: Duration | None = None
    p95_us: Duration | None = None
    p99_us: Duration | None = None
    median_ci95_us: list[Duration] | None = None
    percentiles_from: str | None = None


class WhatifDerived(_Record):
    """A what-if series' derived fields (app/whatif.py writes them): the usable-connection and
    handshake percentiles, where the mean time goes, bytes and packets, round trips, the flights with
    their operations and costs, the secure element, the calibration, the seed and the energy."""

    usable: Percentiles | None = None
    handshake: Percentiles | None = None
    handshake_timer: str | None = None
    breakdown_mean_us: dict[str, FiniteFloat] | None = None
    bytes_up_mean: FiniteFloat | None = None
    bytes_down_mean: FiniteFloat | None = None
    packets_up_mean: FiniteFloat | None = None
    packets_down_mean: FiniteFloat | None = None
    radio: dict[str, Any] | None = None
    failed_share: FiniteFloat | None = Field(default=None, ge=0, le=1)
    end_point: str | None = None
    end_point_description: str | None = None
    round_trips: int | None = None
    round_trips_to_response: int | None = None
    round_trips_to_handshake_done: int | None = None
    security: str | None = None
    no_security: Any = None
    flights: list[dict[str, Any]] | None = None
    crosses: dict[str, bool] | None = None
    costs: list[dict[str, Any]] | None = None
    se: dict[str, Any] | None = None
    calibration: dict[str, Any] | None = None
    seed: int | None = None
    energy: dict[str, Any] | None = None


class LatencyMs(_Record):
    """The load generator's latency percentiles, in ms."""

    p50_ms: Millis | None = None
    p90_ms: Millis | None = None
    p95_ms: Millis | None = None
    p99_ms: Millis | None = None
    max_ms: Millis | None = None


class ServerDerived(_Record):
    """A server load level's derived fields (measure/server.py): handshake counts and rate, both
    sides' CPU per handshake, latency percentiles, what limited the rate, the key operation's split."""

    handshakes: int | None = Field(default=None, ge=0)
    full: int | None = Field(default=None, ge=0)
    resumed: int | None = Field(default=None, ge=0)
    failed: int | None = Field(default=None, ge=0)
    errors: dict[str, Any] | None = None
    elapsed_s: FiniteFloat | None = None
    handshakes_per_s: FiniteFloat | None = Field(default=None, ge=0)
    started_per_s: FiniteFloat | None = Field(default=None, ge=0)
    resumed_share: FiniteFloat | None = None
    server_utilisation: FiniteFloat | None = None
    server_cpu_us_per_handshake: FiniteFloat | None = None
    loadgen_cpu_us_per_handshake: FiniteFloat | None = None
    latency_ms: LatencyMs | None = None
    handshake_ms: LatencyMs | None = None
    split: dict[str, Any] | None = None
    limited_by: str | None = None
    limit_note: str | None = None
    negotiated: dict[str, Any] | None = None
    warning: str | None = None
    private_op: dict[str, Any] | None = None


class DeviceTime(_Record):
    """The timing model's cycles and milliseconds for a counted handshake, with their band."""

    cycles: FiniteFloat | None = None
    cycles_low: FiniteFloat | None = None
    cycles_high: FiniteFloat | None = None
    ms: FiniteFloat | None = None
    ms_low: FiniteFloat | None = None
    ms_high: FiniteFloat | None = None


class DeviceDerived(_Record):
    """A device series' derived fields (measure/device.py): instructions counted under QEMU, the
    application's share, the stack high-water mark, the timing model's time and the footprint."""

    instructions_median: FiniteFloat | None = Field(default=None, ge=0)
    instructions_min: FiniteFloat | None = Field(default=None, ge=0)
    instructions_max: FiniteFloat | None = Field(default=None, ge=0)
    app_instructions_median: FiniteFloat | None = Field(default=None, ge=0)
    stack_bytes_max: int | None = Field(default=None, ge=0)
    time: DeviceTime | None = None
    footprint: dict[str, Any] | None = None


# the series kinds whose derived fields are typed; the others keep an open, documented bag
DERIVED_BY_KIND: dict[str, type[_Record]] = {"whatif": WhatifDerived, "server": ServerDerived, "device": DeviceDerived}
Derived = WhatifDerived | ServerDerived | DeviceDerived | dict[str, Any]
D = TypeVar("D", bound=_Record)


class Series(_Record):
    id: str = Field(min_length=1)
    kind: str
    labels: dict[str, Any]
    timer: Timer
    samples: list[dict[str, Any]]
    values_us: list[Duration]
    cpu_values_us: list[Duration]
    summary: Summary | None
    cpu_summary: Summary | None = None
    derived: Derived
    failures: list[Failure]
    status: Literal[SERIES_STATUSES]  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _summary_of_values(self) -> Series:
        """A summary comes from the series' values: one with n samples over a series that holds
        none (or fewer than its values) is inconsistent, and a reader refuses it rather than
        compare or show figures nothing backs (a what-if's values are a reservoir of its n draws)."""
        sm = self.summary
        if sm is not None and not self.values_us:
            raise ValueError(
                f"summary: n={sm.n} but values_us holds no samples: an inconsistent series "
                f"(a summary is computed from the values it summarises)"
            )
        # a measured series summarises every value it holds; a what-if's values are a reservoir of its draws
        if sm is not None and (sm.n < len(self.values_us) or self.kind != "whatif" and sm.n != len(self.values_us)):
            raise ValueError(
                f"summary: n={sm.n} but values_us holds {len(self.values_us)} samples: an inconsistent series"
            )
        return self

    @model_validator(mode="after")
    def _typed_derived(self) -> Series:
        """A kind with a derived model gets its derived fields as that model (checked), however set."""
        cls = DERIVED_BY_KIND.get(self.kind)
        if cls is not None and not isinstance(self.derived, cls):
            try:
                typed = cls.model_validate(dict(self.derived))
            except ValidationError as exc:
                raise ValueError(f"derived: {problem(exc)}") from None
            self.__dict__["derived"] = typed
        return self

    def derived_as(self, cls: type[D]) -> D:
        """The derived fields as the kind's model (e.g. `s.derived_as(ServerDerived).handshakes_per_s`);
        a ResultError when the series is of another kind."""
        if not isinstance(self.derived, cls):
            raise ResultError(f"series {self.id!r} ({self.kind}) has no {cls.__name__} fields")
        return self.derived

    @property
    def p50_us(self) -> float | None:
        """The series' median in µs (its summary's P50), or None for a series without samples."""
        return self.summary.p50_us if self.summary is not None else None


class Result(_Record):
    """A whole run: header, host metadata, parameters, series, analyses."""

    schema_: Literal["secperf.result"] = Field(alias="schema")
    schema_version: StrictInt = Field(ge=1)
    run_id: str = Field(min_length=1)
    kind: Literal[RUN_KINDS]  # type: ignore[valid-type]
    command: list[str]
    started: str
    finished: str | None
    status: Literal[RUN_STATUSES]  # type: ignore[valid-type]
    params: dict[str, Any]
    host: dict[str, Any]
    series: list[Series]
    analysis: dict[str, Any]

    @field_validator("analysis")
    @classmethod
    def _analyses_are_objects(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key in OBJECT_ANALYSES:
            if key in v and not isinstance(v[key], dict):
                raise ValueError(f"analysis.{key} must be an object, got {type(v[key]).__name__}")
        return v

    @field_validator("series")
    @classmethod
    def _unique_ids(cls, v: list[Series]) -> list[Series]:
        seen: set[str] = set()
        for s in v:
            if s.id in seen:
                raise ValueError(f"duplicate series id {s.id!r}")
            seen.add(s.id)
        return v


def json_schema() -> dict[str, Any]:
    out = Result.model_json_schema(by_alias=True)
    out["title"] = "secperf Result"
    return out
