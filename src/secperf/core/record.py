"""The typed record every part of a Result is built from (core/result_schema.py, the derived
fields' models in core/result_derived.py), and the number types they share: a pydantic model whose
fields are checked on load and on assignment, a wrongly typed value named as a ResultError.

`_Record` also answers the mapping protocol (`s.get("summary")`, `"x" in s`, `{**s}`): a bridge for
the callers that still read by key; new code reads attributes."""

from __future__ import annotations

from collections.abc import Iterator
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
    """A typed record that also reads and writes by key (the JSON field name, aliases included)."""

    # extra="allow": a Result of schema version 1 or 2 keeps the keys its release never declared (read
    # by no one, written back unchanged); version 3 refuses them (core/result_schema.undeclared_key)
    model_config = ConfigDict(extra="allow", validate_assignment=True, populate_by_name=True)

    @classmethod
    def _attr(cls, key: str) -> str:
        return "schema_" if key == "schema" and "schema_" in cls.model_fields else key

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("_") and name not in type(self).model_fields:  # a key no reader knows
            raise ResultError(
                f"{type(self).__name__.lower()}: {name!r} is not a declared field (declare it in its model)"
            )
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
Millis = Annotated[float, Field(allow_inf_nan=False, ge=0)]
