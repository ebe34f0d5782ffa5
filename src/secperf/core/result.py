"""The Result: versioned JSON holding every raw sample, failures with their reasons, named timer
boundaries and host metadata. Everything downstream (report, compare, model) reads only this.

Schema history (bump SCHEMA_VERSION on any change a reader must know about):
  1  secperf 0.1.0 — first version: run header, host, params, series (labels, timer, raw samples,
     per-operation values in µs, summaries, derived rates, failures, status), analysis.
  2  secperf 0.2.0 — the schema is published (`secperf schema result`, core/result_schema.py) and
     checked with pydantic on load; run status "abandoned" (a run whose process died, found by a
     later run); SIGTERM-interrupted runs exit 143. Version-1 files are still read (same shape).
     Summaries' median_ci95 now comes from scipy.stats.bootstrap (percentile interval, 2000
     resamples, seed 0) instead of a hand-written bootstrap on Python's random; percentiles keep
     numpy's linear definition, so n, mean, sd, min, P50/P90/P99, max are computed as before.
     Later in version 2 (no bump: only files secperf's own bug produced use it): run status
     "internal-error" with an `internal` record (check, problem, withheld, as_written) — a finished
     Result that failed secperf's read-back (core/store.Run.save) keeps what passed, readers show it
     with a note; and a series whose summary is not backed by its values (n > 0, no values_us) is
     refused as inconsistent.
  3  every key is declared: a version-3 Result holding a key no model names (top level, series,
     timer, derived fields, analysis) is refused, naming the key's path. Same shape on disk as 2;
     versions 1 and 2 still read, their undeclared keys kept and written back unchanged
     (core/result_schema.py says why).
  4  series of kind "mqtt" (MqttDerived): `secperf mqtt-load` writes one series per phase and latency
     ("connack ramp", "puback storm", ...) beside its analysis, so metrics and compare read it. A
     version-3 reader would refuse the new kind's derived keys as undeclared: the bump makes it say
     "newer than this secperf" instead. Versions 1-3 still read; an mqtt-load Result of version 3
     holds no series (its figures are in analysis.mqtt_load, which the report reads as before).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from . import stats
from .errors import InputError, ResultError
from .files import read_text_input
from .writes import owner_stamp

SCHEMA = "secperf.result"
SCHEMA_VERSION = 4
DECLARED_ONLY_FROM = 3  # the first version whose undeclared keys are refused

from .result_schema import (  # noqa: E402  (declared once, with the schema)
    RUN_KINDS,
    RUN_STATUSES,
    Failure,
    Result,
    Series,
    Summary,
    Timer,
    _Record,
    problem,
    undeclared_key,
    undeclared_keys,
)


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def new_result(
    *,
    kind: str,
    command: list[str],
    params: dict[str, Any],
    host: dict[str, Any],
    run_id: str,
    series: Sequence[Series] = (),
    status: str = "running",
) -> Result:
    """A Result of a run that starts now. series / status: a Result made whole in one call (rows
    already at hand, status one of RUN_STATUSES: finished now, as finish() would) instead of
    appending each series and finishing it after; with series it is checked as its file would be
    (validate: no undeclared key), so a reader of it need not check it again."""
    if status != "running" and status not in RUN_STATUSES:
        raise ResultError(f"unknown run status {status!r}; known: {', '.join(RUN_STATUSES)}")
    started = now_iso()
    doc = Result.model_validate(
        {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "run_id": run_id,
            "kind": kind,
            "command": list(command),
            "started": started,
            "finished": None if status == "running" else started,
            "status": status,
            "params": dict(params),
            "host": dict(host),
            "owner": _owner(),
            "series": list(series),
            "analysis": {},
        }
    )
    if series:
        found = undeclared_key(doc)
        if found is not None:
            raise ResultError(f"Result {run_id}: {found} (schema version {SCHEMA_VERSION} declares every key)")
    return doc


def _owner() -> dict[str, Any]:
    return owner_stamp()


def new_series(series_id: str, *, kind: str, labels: dict[str, Any], timer: dict[str, Any]) -> Series:
    """A series is one measured thing (e.g. ecdsa-p256 sign of 32 bytes).

    ``timer`` names its boundaries: {"name", "start", "end", ...}; values are in µs.
    """
    for key in ("name", "start", "end"):
        if not timer.get(key):
            raise ResultError(f"series {series_id!r}: timer needs a '{key}' boundary description")
    return Series(
        id=series_id,
        kind=kind,
        labels=dict(labels),
        timer=Timer.model_validate(timer),
        samples=[],
        values_us=[],
        cpu_values_us=[],
        summary=None,
        cpu_summary=None,
        derived={},
        failures=[],
        status="failed",
    )


def add_failure(series: Series, reason: str) -> None:
    series.failures.append(Failure(reason=str(reason), time=now_iso()))


def finalize_series(series: Series, threshold_us: float | None = None) -> Series:
    """Compute summaries from the values and set the status (ok / partial / failed)."""
    vals = series.values_us
    if vals:
        series.summary = Summary.model_validate(stats.summarize(vals, "us", threshold_us))
        if series.cpu_values_us:
            series.cpu_summary = Summary.model_validate(stats.summarize(series.cpu_values_us, "us"))
        series.status = "partial" if series.failures else "ok"
    else:
        series.summary = None
        series.status = "failed"
        if not series.failures:
            add_failure(series, "no samples were taken")
    return series


def finish(doc: Result, status: str = "complete") -> Result:
    if status not in RUN_STATUSES:
        raise ResultError(f"unknown run status {status!r}; known: {', '.join(RUN_STATUSES)}")
    doc.status = status
    doc.finished = now_iso()
    return doc


def validate(doc: object, where: str = "result") -> Result:
    """A JSON document (already parsed) as a Result, or a ResultError naming the first problem and
    where it is. The typed schema (core/result_schema.py) is the one check: every named field with
    its type and range, known kinds and statuses, unique series ids, timers with both boundaries."""

    if isinstance(doc, _Record):  # an object in memory: check it again as the file would be read
        doc = doc.model_dump(mode="python", by_alias=True, exclude_unset=True, warnings=False)
    if not isinstance(doc, dict):
        raise ResultError(f"{where}: expected a JSON object at the top level, got {type(doc).__name__}")
    if doc.get("schema") != SCHEMA:
        raise ResultError(
            f"{where}: not a secperf Result (field 'schema' is {doc.get('schema')!r}, expected {SCHEMA!r})"
        )
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ResultError(f"{where}: 'schema_version' must be a positive whole number (got {version!r})")
    if version > SCHEMA_VERSION:
        raise ResultError(
            f"{where}: schema_version {version} is newer than this secperf understands "
            f"({SCHEMA_VERSION}); upgrade secperf to read it"
        )
    try:
        res = Result.model_validate(doc)
    except ValidationError as exc:
        loc = exc.errors()[0]["loc"]
        known = f"; known: {', '.join(RUN_KINDS)}" if loc and loc[-1] == "kind" else ""
        raise ResultError(f"{where}: {problem(exc)}{known} ({len(exc.errors())} problem(s) in all)") from None
    if version >= DECLARED_ONLY_FROM:
        found = undeclared_key(res)
        if found is not None:
            raise ResultError(f"{where}: {found} (schema version {version} declares every key)")
    return res


def check_schema(doc: object, where: str = "result") -> None:
    """The typed schema (core/result_schema.py): every named field with its type and range."""
    validate(doc, where)


def declared_rows(rows: Mapping[str, Any], where: str = "series") -> dict[str, list[Series]]:
    """Rows of series' JSON objects (a cache: row key -> list of series objects) validated into
    Series in one call: a ResultError naming the field when one does not validate, and a row
    holding a key this release does not declare left out (a Result of this release refuses it)."""
    got = {k: [as_series(x, where) for x in v] for k, v in rows.items()}
    row_of = [k for k, v in got.items() for _ in v]  # the row of each series, in order
    found = undeclared_keys([x for v in got.values() for x in v])  # every series checked in one call
    bad = {k for k, f in zip(row_of, found) if f is not None}
    return {k: v for k, v in got.items() if k not in bad}


def as_series(raw: Mapping[str, Any], where: str = "series") -> Series:
    """A series' JSON object (a cached row, a row a worker sent) validated into a Series: a
    ResultError naming the field."""

    try:
        return Series.model_validate(dict(raw))
    except ValidationError as exc:
        raise ResultError(f"{where}: {problem(exc)} ({len(exc.errors())} problem(s) in all)") from None


# what a reader's code raises on a field of the wrong type or shape inside the open bags (analysis,
# derived, labels, host) that the schema leaves to each experiment
MALFORMED = (TypeError, KeyError, ValueError, AttributeError, IndexError, OverflowError, ZeroDivisionError)


@contextlib.contextmanager
def reading(where: str, part: str) -> Iterator[None]:
    """Read or render `part` of a validated Result: a malformed field there becomes a ResultError
    (exit 2) naming the file and the part, never a traceback; nothing of it is shown."""
    try:
        yield
    except InputError:
        raise
    except MALFORMED as exc:
        raise ResultError(
            f"{where}: {part} is malformed and cannot be read ({type(exc).__name__}: "
            f"{str(exc)[:160]}); was the file changed after secperf wrote it?"
        ) from None


def to_json(doc: Result) -> dict[str, Any]:
    """The Result as its JSON object (the file's content); refuses NaN and infinities."""
    out: dict[str, Any] = doc.model_dump(mode="json", by_alias=True, exclude_unset=True, warnings=False)
    return out


def dumps(doc: Result) -> str:
    return json.dumps(to_json(doc), indent=1, sort_keys=False, allow_nan=False) + "\n"


def load(path: str | Path) -> Result:
    p = Path(path)
    if p.is_dir():
        p = p / "result.json"

    if not p.exists():
        raise ResultError(
            f"{path}: no such file; pass a result.json written by `secperf run` (e.g. results/latest/result.json)"
        )
    try:
        text = read_text_input(p, "result", str(path))
    except ResultError:
        raise
    except InputError as exc:
        raise ResultError(str(exc)) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultError(f"{path}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise ResultError(f"{path}: JSON nested too deeply to be a Result") from None
    try:
        return validate(doc, where=str(path))
    except RecursionError:
        raise ResultError(f"{path}: JSON nested too deeply to be a Result") from None


def series_by_id(doc: Result) -> dict[str, Series]:
    return {s.id: s for s in doc.series}
