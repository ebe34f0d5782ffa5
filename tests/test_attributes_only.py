"""A Result's records are read through their fields, never as mappings: `doc.series[0].status`, not
`doc["series"][0]["status"]`. The records (Result, Series, Summary, Timer, Failure, Analysis and every
series kind's derived model) answer none of the mapping protocol, so a caller that reads by key fails
at once instead of reading a key no model declares."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from pydantic import BaseModel

import result_kinds as K
from secperf.core import record
from secperf.core import result_schema as RS

MAPPING = (
    "__getitem__",
    "__setitem__",
    "__delitem__",
    "__contains__",
    "__len__",
    "__iter__",
    "get",
    "setdefault",
    "pop",
    "update",
    "keys",
    "items",
    "values",
)


def _records() -> list[type[record._Record]]:
    out, todo = [], [record._Record]
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo.extend(cls.__subclasses__())
    return out


def test_no_record_class_defines_a_mapping_method():
    classes = _records()
    assert RS.Result in classes and RS.Series in classes and RS.HandshakeDerived in classes and RS.Analysis in classes
    for cls in classes:
        own = {m for c in cls.__mro__ if c not in (BaseModel, object) for m in MAPPING if m in vars(c)}
        assert not own, (cls.__name__, sorted(own))
        assert not issubclass(cls, Mapping), cls.__name__


@pytest.mark.parametrize("kind", sorted(K.BUILT))
def test_a_result_read_by_key_fails_at_once(kind):
    doc = K.BUILT[kind]()
    s = doc.series[0]
    parts = [doc, doc.analysis, s, s.timer, s.derived] + ([s.summary] if s.summary is not None else [])
    for rec in parts:
        assert isinstance(rec, record._Record), type(rec)
        with pytest.raises(TypeError):
            rec["status"]  # noqa: B018
        with pytest.raises(TypeError):
            rec["status"] = "ok"
        with pytest.raises(TypeError):
            len(rec)
        with pytest.raises(TypeError):
            dict(**rec)
        for name in ("get", "keys", "items", "update", "setdefault", "pop"):
            assert not hasattr(rec, name), (type(rec).__name__, name)
    # the same figures, read by attribute
    assert s.id and s.status in ("ok", "partial", "failed") and doc.kind == kind
