"""The campaign's file cases generated from the JSON Schemas (issue 42): the system file's schema
(`secperf schema system`) and the Result's (`secperf schema result`). Each key the schema declares is, in
turn, missing, of a wrong type, out of its range, huge, nested and joined by an unknown key, on top of a
valid document (the example system file; a Result secperf wrote). benchmarks/campaign.py runs them.

    system_cases(example) -> [(name, argv, toml_text)]     argv holds {file}
    result_cases(result_json) -> [(name, argv, json_text)]  argv holds {file}
"""

from __future__ import annotations

import copy
import json
import math
import tomllib
from pathlib import Path
from typing import Any

HUGE_STRING = "y" * 100_000


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref:
        return _resolve(schema, schema["$defs"][ref.rsplit("/", 1)[-1]])
    return node


def _alternatives(schema: dict[str, Any], node: dict[str, Any]) -> list[dict[str, Any]]:
    node = _resolve(schema, node)
    alts = node.get("anyOf") or node.get("oneOf")
    return [_resolve(schema, a) for a in alts] if alts else [node]


def bad_values(schema: dict[str, Any], node: dict[str, Any]) -> list[tuple[str, Any]]:
    """(what, value) a key declared by `node` must refuse: a wrong type, out of range, huge, nested."""
    alts = [a for a in _alternatives(schema, node) if a.get("type") != "null"]
    types = {a.get("type") for a in alts}
    out: list[tuple[str, Any]] = []
    if not types & {"string"}:
        out.append(("wrong type", "x"))
    if not types & {"number", "integer"}:
        out.append(("wrong type", 7))
    if not types & {"array"}:
        out.append(("wrong type", ["a", "a"]))
    if not types & {"boolean"}:
        out.append(("wrong type", True))
    for a in alts:
        if "minimum" in a:
            out.append(("out of range", a["minimum"] - 1))
        if "exclusiveMinimum" in a:
            out.append(("out of range", a["exclusiveMinimum"]))
        if "maximum" in a:
            out.append(("out of range", a["maximum"] + 1))
        if "exclusiveMaximum" in a:
            out.append(("out of range", a["exclusiveMaximum"]))
        if a.get("type") in ("number", "integer"):
            out.append(("huge", 1e308))
            out.append(("not finite", math.inf))
        if a.get("type") == "string":
            out.append(("huge", HUGE_STRING))
            if a.get("minLength"):
                out.append(("out of range", ""))
            if "enum" in a:
                out.append(("out of range", "no-such-" + str(a["enum"][0])))
        if a.get("type") == "array":
            out.append(("huge", ["a"] * 5000))
            out.append(("nested", [["a"]]))
    out.append(("nested", {"a": {"b": {"c": 1}}}))
    return out


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def to_toml(doc: dict[str, Any]) -> str:
    """A document of top-level keys and one level of tables (the system file's shape) as TOML text."""
    lines = [f"{json.dumps(k)} = {_toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    for k, v in doc.items():
        if isinstance(v, dict):
            lines.append(f"\n[{json.dumps(k)}]")
            lines += [f"{json.dumps(kk)} = {_toml_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"


def _keys(schema: dict[str, Any]) -> list[tuple[tuple[str, ...], dict[str, Any], bool]]:
    """(key path, its schema node, required) for every key the schema declares, one table deep."""
    out = []
    required = set(schema.get("required", []))
    for k, node in schema.get("properties", {}).items():
        sub = [a for a in _alternatives(schema, node) if a.get("type") == "object" or "properties" in a]
        if sub:
            req = set(sub[0].get("required", []))
            out += [((k, kk), nn, kk in req) for kk, nn in sub[0].get("properties", {}).items()]
        out.append(((k,), node, k in required))
    return out


def _set(doc: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    d = copy.deepcopy(doc)
    cur = d
    for k in path[:-1]:
        if not isinstance(cur.get(k), dict):
            cur[k] = {}
        cur = cur[k]
    cur[path[-1]] = value
    return d


def _drop(doc: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
    d = copy.deepcopy(doc)
    cur = d
    for k in path[:-1]:
        if not isinstance(cur.get(k), dict):
            return None
        cur = cur[k]
    if path[-1] not in cur:
        return None
    del cur[path[-1]]
    return d


def mutations(schema: dict[str, Any], doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(name, mutated document) for every key of the schema: missing, each bad value, an unknown key beside it."""
    out: list[tuple[str, dict[str, Any]]] = []
    for path, node, _required in _keys(schema):
        name = ".".join(path)
        dropped = _drop(doc, path)
        if dropped is not None:
            out.append((f"{name} missing", dropped))
        for what, v in bad_values(schema, node):
            out.append((f"{name} {what} {str(v)[:16]}", _set(doc, path, v)))
        if len(path) == 2 and isinstance(doc.get(path[0]), dict):
            out.append((f"{path[0]}.no_such_key unknown key", _set(doc, (path[0], "no_such_key"), 1)))
    out.append(("no_such_section unknown key", {**doc, "no_such_section": {"a": 1}}))
    return list({n: d for n, d in out}.items())  # one case per name


def system_cases(example: Path) -> list[tuple[str, list[str], str]]:
    """The example system file mutated key by key as the system file's JSON Schema declares them; each run as
    `whatif --system` (the plan reads the same loader)."""
    from secperf.inputs.system import json_schema

    schema = json_schema()
    doc = tomllib.loads(example.read_text())
    return [
        (f"system {name}", ["whatif", "--system", "{file}", "--n", "200"], to_toml(d))
        for name, d in mutations(schema, doc)
    ]


def result_cases(result: Path | None = None) -> list[tuple[str, list[str], str]]:
    """A Result secperf wrote (default: a `secperf can` Result, written now: no measurement), mutated key by
    key (top level and one level down) as the Result's JSON Schema declares them; each read by `secperf
    report` (the readers must name what is wrong, exit 2, never a traceback)."""
    from secperf.core.result_schema import json_schema

    schema = json_schema()
    if result is None:
        result = a_result()
    doc = json.loads(result.read_text())
    return [
        (f"result {name}", ["report", "{file}"], json.dumps(d, allow_nan=True)) for name, d in mutations(schema, doc)
    ]


def a_result() -> Path:
    """A Result secperf writes without measuring (`secperf can`), in a directory of its own."""
    import contextlib
    import io
    import tempfile

    from secperf import cli

    out = Path(tempfile.mkdtemp(prefix="secperf-campaign-result-"))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = cli.main(["can", "--no-report", "--out", str(out)])
    if code != 0:
        raise RuntimeError(f"secperf can exited {code}: no Result to mutate")
    return next(p for p in out.glob("*/result.json") if not p.parent.is_symlink())
