"""The Result's schema as pydantic v2 models: what every reader may rely on, published as JSON
Schema by `secperf schema result`. Open bags (`params`, `labels`, `derived`, `analysis`, a sample's
extra fields) stay open on purpose: each experiment adds its own, documented where it writes them;
the fields named here are typed and checked."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator

FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
MAX_US = 1e15  # 31 years: no timer of secperf's measures longer; larger is a damaged or forged file
Duration = Annotated[float, Field(allow_inf_nan=False, ge=0, le=MAX_US)]  # a time: finite, never negative

SCHEMA_ID = "secperf.result"
RUN_STATUSES = ("running", "complete", "failed", "interrupted", "abandoned")
SERIES_STATUSES = ("ok", "partial", "failed", "unsupported")
# what wrote the run (the command); a reader dispatches on it, so an unknown one is refused
RUN_KINDS = ("run", "crypto", "handshake", "signer", "jwt", "connect", "mac", "can", "whatif", "plan", "server",
             "fleet", "device")
# analyses a reader renders as tables: each is an object when present
OBJECT_ANALYSES = ("plan", "fleet", "whatif")


class Timer(BaseModel):
    """A timer's named boundaries: what the first and the last instant of a value are."""
    model_config = ConfigDict(extra="allow")
    name: str = Field(min_length=1)
    start: str = Field(min_length=1)
    end: str = Field(min_length=1)


class Failure(BaseModel):
    model_config = ConfigDict(extra="allow")
    reason: str
    time: str | None = None


class Summary(BaseModel):
    """n, mean, sd, min, P50, P90, P99, max and the median's bootstrap 95% interval, in µs."""
    model_config = ConfigDict(extra="allow")
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


class Series(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str = Field(min_length=1)
    kind: str
    labels: dict[str, Any]
    timer: Timer
    samples: list[dict[str, Any]]
    values_us: list[Duration]
    cpu_values_us: list[Duration]
    summary: Summary | None
    cpu_summary: Summary | None = None
    derived: dict[str, Any]
    failures: list[Failure]
    status: Literal[SERIES_STATUSES]  # type: ignore[valid-type]


class Result(BaseModel):
    """A whole run: header, host metadata, parameters, series, analyses."""
    model_config = ConfigDict(extra="allow")
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
    def _analyses_are_objects(cls, v):
        for key in OBJECT_ANALYSES:
            if key in v and not isinstance(v[key], dict):
                raise ValueError(f"analysis.{key} must be an object, got {type(v[key]).__name__}")
        return v

    @field_validator("series")
    @classmethod
    def _unique_ids(cls, v):
        seen = set()
        for s in v:
            if s.id in seen:
                raise ValueError(f"duplicate series id {s.id!r}")
            seen.add(s.id)
        return v


def json_schema() -> dict:
    out = Result.model_json_schema(by_alias=True)
    out["title"] = "secperf Result"
    return out
