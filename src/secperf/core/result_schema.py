"""The Result as pydantic v2 models: the objects secperf's code builds and reads (measure builds
them with `core.result.new_result` / `new_series`, model/report/plan read their attributes), and the
schema every reader may rely on, published as JSON Schema by `secperf schema result`. Dicts exist only
at the JSON boundary: `core.result.load` validates a file into a `Result`, `core.result.dumps` writes
one. The open bags (`params`, `host`, `labels`, a sample's fields, and the fields a model types as a
plain object, e.g. a plan row's numbers or a flight's inner rows) stay open on purpose: each experiment adds its
own, documented where it writes them. Every other field is named here, typed and checked, on load and
on assignment (`validate_assignment`).

Every series kind's derived fields are a model (core/result_derived.py), and so is the run's
`analysis` (Analysis: one field per analysis a command writes; the tables a reader draws, a plan's,
a fleet's and a what-if's, are models with their rows in core/analysis_schema.py). The base record
and its number types live in core/record.py.

Undeclared keys: a Result of schema version 3 or later (this release's is 4) holding a key no model declares (at
the top level, in a series, its timer, its derived fields or the analysis) is refused with the key's
path and what it is not a field of (`undeclared_key`, called by `core.result.validate`): a misspelt
or invented key would otherwise read without a word and show nothing. Results of versions 1 and 2
(written by older releases, which let any key through) still read: their undeclared keys are kept
as they are, read by no one and written back unchanged, so an old file reads and writes back
byte-identical. Why a version and not a refusal for all: an old release wrote keys it never
declared (a measuring path that ran nowhere we could check, a key declared later), and an old file
must not become unreadable because this release is stricter; the version tells the two apart. An
in-memory record refuses an undeclared attribute as it is set (core/record.py)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Literal, TypeVar

from pydantic import Field, StrictInt, ValidationError, ValidationInfo, field_validator, model_validator

from .analysis_schema import ANALYSIS_WHAT, FleetAnalysis, PlanAnalysis, WhatifAnalysis
from .errors import ResultError
from .record import MAX_US, Duration, FiniteFloat, Millis, _Record, problem
from .result_derived import (
    DERIVED_BY_KIND,
    ConnectDerived,
    CortexmDerived,
    CountedDerived,
    CryptoDerived,
    Derived,
    DeviceCryptoDerived,
    DeviceDerived,
    DeviceTime,
    HandshakeDerived,
    JwtDerived,
    LatencyMs,
    LinkCounts,
    LinkedDerived,
    MqttDerived,
    Percentiles,
    ServerDerived,
    SignerDerived,
    WhatifDerived,
)

__all__ = [
    "MAX_US",
    "Duration",
    "FiniteFloat",
    "Millis",
    "_Record",
    "problem",
    "DERIVED_BY_KIND",
    "ConnectDerived",
    "CortexmDerived",
    "CountedDerived",
    "CryptoDerived",
    "Derived",
    "DeviceCryptoDerived",
    "DeviceDerived",
    "DeviceTime",
    "HandshakeDerived",
    "JwtDerived",
    "LatencyMs",
    "LinkedDerived",
    "LinkCounts",
    "MqttDerived",
    "Percentiles",
    "ServerDerived",
    "SignerDerived",
    "WhatifDerived",
    "Analysis",
    "Failure",
    "Result",
    "Series",
    "Summary",
    "Timer",
    "json_schema",
    "undeclared_key",
]

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


class Analysis(_Record):
    """What a run computed over its series or its inputs (not measured samples), one field per
    analysis: the S5 answers, the libraries compared, the CAN and Cortex-M MAC models, a plan, a
    fleet, a what-if's tables, a cluster's workers, an MQTT load, a --target's description, the
    strength table. Each is written by its command and read by its report view."""

    s5: list[dict[str, Any]] | None = None
    libraries: dict[str, Any] | None = None
    can: dict[str, Any] | None = None
    cortexm: dict[str, Any] | None = None
    plan: PlanAnalysis | None = None  # the tables a reader draws are models (core/analysis_schema.py)
    fleet: FleetAnalysis | None = None
    whatif: WhatifAnalysis | None = None
    cluster: dict[str, Any] | None = None
    mqtt_load: dict[str, Any] | None = None
    target: dict[str, Any] | None = None
    strength: dict[str, Any] | None = None

    @field_validator(*OBJECT_ANALYSES, mode="before")
    @classmethod
    def _analyses_are_objects(cls, v: Any, info: ValidationInfo) -> Any:
        """A table's analysis is an object when present (null included: a reader would draw nothing)."""
        if not isinstance(v, (dict, _Record)):
            raise ValueError(f"analysis.{info.field_name} must be an object, got {type(v).__name__}")
        return v


class Timer(_Record):
    """A timer's named boundaries: what the first and the last instant of a value are."""

    name: str = Field(min_length=1)
    start: str = Field(min_length=1)
    end: str = Field(min_length=1)
    # what the measuring tool adds about its clock and its batches (crypto's backends, connect's clients)
    clock: str | None = None
    unit: str | None = None
    value: str | None = None
    rule: str | None = None
    tool: str | None = None
    key_source: str | None = None
    batch: Any = None  # operations per timed sample, as the backend reports it
    detail: Any = None
    stopped: Any = None  # why sampling stopped (count or time budget), as the backend reports it
    jmh: Any = None
    cpu: str | None = None  # what the CPU values cover when they are not the timer's own span's (EDHOC's initiator)


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
    p95_us: Duration | None = None  # a what-if's: the P95 of its simulated draws
    percentiles_from: str | None = None  # a what-if's: every draw ("exact") or its histogram


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
    warnings: list[str] | None = None  # e.g. a crypto row whose timer overhead is too large a share

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
                given = self.derived
                raw = given if isinstance(given, dict) else given.model_dump(by_alias=True, exclude_unset=True)
                typed = cls.model_validate(raw)
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
    run_id: str = Field(min_length=1, max_length=255)  # the run directory's name: a file name's length at most
    kind: Literal[RUN_KINDS]  # type: ignore[valid-type]
    command: list[str]
    started: str
    finished: str | None
    status: Literal[RUN_STATUSES]  # type: ignore[valid-type]
    params: dict[str, Any]
    host: dict[str, Any]
    series: list[Series]
    analysis: Analysis
    owner: dict[str, Any] | None = None  # the process writing the run (core/writes.owner_stamp)
    notes: list[str] | None = None  # what happened to the run after it was written (e.g. abandoned)
    internal: dict[str, Any] | None = None  # secperf's own read-back refused it: check, problem, withheld

    @field_validator("series")
    @classmethod
    def _unique_ids(cls, v: list[Series]) -> list[Series]:
        seen: set[str] = set()
        for s in v:
            if s.id in seen:
                raise ValueError(f"duplicate series id {s.id!r}")
            seen.add(s.id)
        return v


# what each record is, in a reader's words: a refused key names the record it is not a field of
_WHAT: dict[type[_Record], str] = {
    Result: "a Result",
    Series: "a series",
    Timer: "a series' timer",
    Failure: "a series' failure",
    Summary: "a series' summary",
    Analysis: "a Result's analysis",
    LinkCounts: "an emulated link's counters",
    DeviceTime: "a device's modelled time",
    Percentiles: "a what-if percentile summary",
    LatencyMs: "a load generator's latency percentiles",
    **ANALYSIS_WHAT,
}


def _what(rec: _Record, path: str, kind: str | None) -> str:
    if path.endswith(".derived") and kind is not None:
        return f"a {kind} series' derived figures"
    return _WHAT.get(type(rec), f"a {type(rec).__name__}")


def undeclared_key(doc: _Record) -> str | None:
    """The first key of `doc` (a Result, or one of its records: a series from a cache) no model
    declares, as `where: 'key' is not a field of what`, or None.
    Walks every record (the run, its series, their timers, failures, summaries, derived fields and
    the records inside them, the analysis); the open bags (params, host, labels, samples and the
    fields typed as plain objects) are left to the experiment that writes them. A series of a kind
    without a derived model declares no derived field."""
    for path, rec, kind in _records(doc, "", None):
        if isinstance(rec, dict):  # a series kind without a derived model: every key is undeclared
            if rec:
                return (
                    f"{path}: {next(iter(rec))!r} is not a field of a {kind} series' derived figures (none is declared)"
                )
            continue
        for key in rec.__pydantic_extra__ or {}:
            return f"{path or 'the top level'}: {key!r} is not a field of {_what(rec, path, kind)}"
    return None


def undeclared_keys(recs: Iterable[_Record]) -> list[str | None]:
    """undeclared_key of each record, in one call (a cache's series checked together)."""
    return [undeclared_key(r) for r in recs]


def _records(rec: _Record, path: str, kind: str | None) -> Iterator[tuple[str, Any, str | None]]:
    yield path, rec, kind
    untyped = None
    if isinstance(rec, Series):
        kind = rec.kind
        if kind not in DERIVED_BY_KIND:  # its derived keys, whichever model the union read them as
            d, untyped = rec.derived, "derived"
            yield f"{path}.derived", d if isinstance(d, dict) else d.model_dump(by_alias=True, exclude_unset=True), kind
    for name, info in type(rec).model_fields.items():
        if name == untyped:
            continue
        value = getattr(rec, name)
        where = f"{path}.{info.alias or name}".lstrip(".")
        if isinstance(value, _Record):
            yield from _records(value, where, kind)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, _Record):
                    yield from _records(item, f"{where}[{i}]", kind)


def json_schema() -> dict[str, Any]:
    """The Result's JSON Schema as this release writes it: every record's keys are its declared
    fields (additionalProperties false); the open bags stay open."""
    out = Result.model_json_schema(by_alias=True)
    out["title"] = "secperf Result"
    for rec in [out, *out.get("$defs", {}).values()]:
        if "properties" in rec:
            rec["additionalProperties"] = False
    return out
