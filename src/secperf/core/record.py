"""The typed record every part of a Result is built from (core/result_schema.py, the derived
fields' models in core/result_derived.py), and the number types they share: a pydantic model whose
fields are checked on load and on assignment, a wrongly typed value named as a ResultError.

A record is read and written through its fields (`doc.series[0].status`, `s.derived.ops_per_s`), never
by key: it answers none of the mapping protocol (no `[]`, `get`, `in`, `keys`, `len`, `{**rec}`), so a
caller that reads a key no model declares fails at once (tests/test_attributes_only.py). Dicts exist
only at the JSON boundary: `model_validate` of a file's object, `model_dump` to write one."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

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
    """A typed record: its fields are attributes, checked on assignment; an undeclared one is refused."""

    # extra="allow": a Result of schema version 1 or 2 keeps the keys its release never declared (read
    # by no one, written back unchanged); version 3 refuses them (core/result_schema.undeclared_key)
    model_config = ConfigDict(extra="allow", validate_assignment=True, populate_by_name=True)

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("_") and name not in type(self).model_fields:  # a key no reader knows
            raise ResultError(
                f"{type(self).__name__.lower()}: {name!r} is not a declared field (declare it in its model)"
            )
        try:
            super().__setattr__(name, value)
        except ValidationError as exc:  # a wrongly typed field set in memory: named, never a traceback
            raise ResultError(f"{type(self).__name__.lower()} field {problem(exc)}") from None


FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
MAX_US = 1e15  # 31 years: no timer of secperf's measures longer; larger is a damaged or forged file
Duration = Annotated[float, Field(allow_inf_nan=False, ge=0, le=MAX_US)]  # a time: finite, never negative
Millis = Annotated[float, Field(allow_inf_nan=False, ge=0)]
