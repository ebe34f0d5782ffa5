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
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
from pathlib import Path

from . import stats
from .errors import InputError

SCHEMA = "secperf.result"
SCHEMA_VERSION = 2

from .result_schema import MAX_US, OBJECT_ANALYSES, RUN_KINDS, RUN_STATUSES, SERIES_STATUSES  # noqa: E402  (declared once, with the schema)


class ResultError(InputError):
    """A Result document that cannot be read or is not valid; the message says what and where."""


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def new_result(*, kind: str, command: list[str], params: dict, host: dict, run_id: str) -> dict:
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "kind": kind,
        "command": list(command),
        "started": now_iso(),
        "finished": None,
        "status": "running",
        "params": dict(params),
        "host": dict(host),
        "owner": _owner(),
        "series": [],
        "analysis": {},
    }


def _owner() -> dict:
    from .store import owner_stamp
    return owner_stamp()


def new_series(series_id: str, *, kind: str, labels: dict, timer: dict) -> dict:
    """A series is one measured thing (e.g. ecdsa-p256 sign of 32 bytes).

    ``timer`` names its boundaries: {"name", "start", "end", ...}; values are in µs.
    """
    for key in ("name", "start", "end"):
        if not timer.get(key):
            raise ResultError(f"series {series_id!r}: timer needs a '{key}' boundary description")
    return {
        "id": series_id,
        "kind": kind,
        "labels": dict(labels),
        "timer": dict(timer),
        "samples": [],
        "values_us": [],
        "cpu_values_us": [],
        "summary": None,
        "cpu_summary": None,
        "derived": {},
        "failures": [],
        "status": "failed",
    }


def add_failure(series: dict, reason: str) -> None:
    series["failures"].append({"reason": str(reason), "time": now_iso()})


def finalize_series(series: dict, threshold_us: float | None = None) -> dict:
    """Compute summaries from the values and set the status (ok / partial / failed)."""
    vals = series["values_us"]
    if vals:
        series["summary"] = stats.summarize(vals, "us", threshold_us)
        if series["cpu_values_us"]:
            series["cpu_summary"] = stats.summarize(series["cpu_values_us"], "us")
        series["status"] = "partial" if series["failures"] else "ok"
    else:
        series["summary"] = None
        series["status"] = "failed"
        if not series["failures"]:
            add_failure(series, "no samples were taken")
    return series


def finish(doc: dict, status: str = "complete") -> dict:
    if status not in RUN_STATUSES:
        raise ResultError(f"unknown run status {status!r}; known: {', '.join(RUN_STATUSES)}")
    doc["status"] = status
    doc["finished"] = now_iso()
    return doc


def _finite_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def validate(doc, where: str = "result") -> dict:
    """Check the structure a reader relies on; raise ResultError naming the first problem."""
    if not isinstance(doc, dict):
        raise ResultError(f"{where}: expected a JSON object at the top level, got {type(doc).__name__}")
    if doc.get("schema") != SCHEMA:
        raise ResultError(f"{where}: not a secperf Result (field 'schema' is {doc.get('schema')!r}, "
                          f"expected {SCHEMA!r})")
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ResultError(f"{where}: 'schema_version' must be a positive whole number (got {version!r})")
    if version > SCHEMA_VERSION:
        raise ResultError(f"{where}: schema_version {version} is newer than this secperf understands "
                          f"({SCHEMA_VERSION}); upgrade secperf to read it")
    for key, typ in (("run_id", str), ("kind", str), ("status", str), ("host", dict),
                     ("params", dict), ("series", list)):
        if not isinstance(doc.get(key), typ):
            raise ResultError(f"{where}: field {key!r} missing or not a {typ.__name__}")
    if doc["status"] not in RUN_STATUSES:
        raise ResultError(f"{where}: unknown status {doc['status']!r}")
    if doc["kind"] not in RUN_KINDS:
        raise ResultError(f"{where}: unknown kind {doc['kind'][:40]!r}; known: {', '.join(RUN_KINDS)}")
    analysis = doc.get("analysis", {})
    if not isinstance(analysis, dict):
        raise ResultError(f"{where}: field 'analysis' must be an object")
    for key in OBJECT_ANALYSES:
        if key in analysis and not isinstance(analysis[key], dict):
            raise ResultError(f"{where}: analysis.{key} must be an object, got {type(analysis[key]).__name__}")
    seen = set()
    for i, s in enumerate(doc["series"]):
        w = f"{where}: series[{i}]"
        if not isinstance(s, dict) or not isinstance(s.get("id"), str):
            raise ResultError(f"{w}: needs an object with a string 'id'")
        if s["id"] in seen:
            raise ResultError(f"{w}: duplicate series id {s['id']!r}")
        seen.add(s["id"])
        if s.get("status") not in SERIES_STATUSES:
            raise ResultError(f"{w} ({s['id']}): unknown status {s.get('status')!r}")
        for key in ("values_us", "cpu_values_us", "samples", "failures"):
            if not isinstance(s.get(key), list):
                raise ResultError(f"{w} ({s['id']}): field {key!r} missing or not a list")
        for key in ("values_us", "cpu_values_us"):
            if not all(_finite_number(v) and 0 <= v <= MAX_US for v in s[key]):
                raise ResultError(f"{w} ({s['id']}): {key!r} must hold finite, non-negative times of at most "
                                  f"{MAX_US:g} µs")
        if not isinstance(s.get("timer"), dict) or not s["timer"].get("start") or not s["timer"].get("end"):
            raise ResultError(f"{w} ({s['id']}): 'timer' must name its start and end boundaries")
    if version >= 2:
        check_schema(doc, where)
    return doc


def check_schema(doc: dict, where: str = "result") -> None:
    """The typed schema (core/result_schema.py): every named field with its type and range."""
    from pydantic import ValidationError

    from .result_schema import Result
    try:
        Result.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        path = ".".join(str(p) for p in err["loc"])
        raise ResultError(f"{where}: {path}: {err['msg']} ({len(exc.errors())} problem(s) in all)") from None


# what a reader's code raises on a field of the wrong type or shape inside the open bags (analysis,
# derived, labels, host) that the schema leaves to each experiment
MALFORMED = (TypeError, KeyError, ValueError, AttributeError, IndexError, OverflowError, ZeroDivisionError)


@contextlib.contextmanager
def reading(where: str, part: str):
    """Read or render `part` of a validated Result: a malformed field there becomes a ResultError
    (exit 2) naming the file and the part, never a traceback; nothing of it is shown."""
    try:
        yield
    except InputError:
        raise
    except MALFORMED as exc:
        raise ResultError(f"{where}: {part} is malformed and cannot be read ({type(exc).__name__}: "
                          f"{str(exc)[:160]}); was the file changed after secperf wrote it?") from None


def dumps(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=False, allow_nan=False) + "\n"


def load(path: str | Path) -> dict:
    p = Path(path)
    if p.is_dir():
        p = p / "result.json"
    from .files import read_text_input
    if not p.exists():
        raise ResultError(f"{path}: no such file; pass a result.json written by `secperf run` "
                          f"(e.g. results/latest/result.json)")
    try:
        text = read_text_input(p, "result", str(path))
    except ResultError:
        raise
    except InputError as exc:
        raise ResultError(str(exc)) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultError(f"{path}: malformed JSON at line {exc.lineno}, column {exc.colno}: "
                          f"{exc.msg}") from None
    except RecursionError:
        raise ResultError(f"{path}: JSON nested too deeply to be a Result") from None
    try:
        return validate(doc, where=str(path))
    except RecursionError:
        raise ResultError(f"{path}: JSON nested too deeply to be a Result") from None


def series_by_id(doc: dict) -> dict[str, dict]:
    return {s["id"]: s for s in doc["series"]}
