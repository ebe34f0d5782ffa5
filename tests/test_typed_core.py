"""The typed core: a Result, a series and a summary are objects (core/result_schema.py) everywhere in
the code; dicts exist only at the JSON boundary. An AST scan of src/secperf finds every function that
takes or returns one of them as a bare dict (or leaves such a parameter unannotated, which hides a
dict just as well)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from secperf.core import result as R

SRC = Path(__file__).resolve().parents[1] / "src" / "secperf"

# parameter names that mean a Result, a series or a summary in this code base
RESULT_PARAMS = {"doc", "result", "series", "summary", "cpu_summary"}
# a function whose name says it makes or reads one of them
RESULT_WORDS = ("series", "result", "summary")
MODEL_TYPES = ("Result", "Series", "Summary")
DICTS = ("dict", "Dict", "Mapping", "MutableMapping")


def _text(node: ast.expr | None) -> str:
    return "" if node is None else ast.unparse(node)


def _bare_dict(annotation: str) -> bool:
    """A dict-like annotation that names none of the models (`Result | Mapping[str, Any]`, the
    boundary's "object or JSON", is typed; `dict[str, Any]` is not)."""
    return any(d in annotation for d in DICTS) and not any(m in annotation for m in MODEL_TYPES)


def violations(root: Path = SRC) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(root.parent)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            for a in args:
                ann = _text(a.annotation)
                if a.arg in RESULT_PARAMS and (not ann or _bare_dict(ann)):
                    out.append(f"{rel}:{node.lineno} {node.name}({a.arg}: {ann or 'unannotated'})")
                elif a.arg == "s" and _bare_dict(ann):
                    out.append(f"{rel}:{node.lineno} {node.name}(s: {ann})")
            ret = _text(node.returns)
            if any(w in node.name.lower() for w in RESULT_WORDS) and _bare_dict(ret):
                out.append(f"{rel}:{node.lineno} {node.name}() -> {ret}")
    return out


def test_no_function_takes_or_returns_a_result_series_or_summary_as_a_bare_dict():
    found = violations()
    assert not found, f"{len(found)} function(s) pass a Result, series or summary as a dict:\n" + "\n".join(found)


def test_the_scan_finds_a_dict_typed_result_parameter(tmp_path):
    """The scan itself can fail: a module with `def f(doc: dict)` is reported."""
    bad = tmp_path / "secperf"
    bad.mkdir()
    (bad / "m.py").write_text(
        "def f(doc: dict) -> None: ...\ndef new_series() -> dict: ...\n"
        "def g(doc: 'Result | Mapping[str, Any]') -> None: ...\n"
    )
    found = violations(bad)
    assert len(found) == 2 and "f(doc: dict)" in found[0] and "new_series() -> dict" in found[1]


def test_results_in_memory_are_the_models_and_round_trip_through_json():
    doc = R.new_result(kind="crypto", command=["secperf"], params={}, host={}, run_id="t")
    s = R.new_series("a", kind="crypto", labels={"alg": "x"}, timer={"name": "n", "start": "s", "end": "e"})
    s.values_us.extend([3.0, 1.0, 2.0])
    doc.series.append(R.finalize_series(s))
    assert isinstance(doc, R.Result) and isinstance(doc.series[0].summary, R.Summary)
    assert doc.series[0].p50_us == 2.0
    back = R.validate(R.to_json(R.finish(doc)))
    assert isinstance(back, R.Result) and back.series[0].summary == doc.series[0].summary


def test_a_wrongly_typed_field_is_refused_where_it_is_set():
    s = R.new_series("a", kind="crypto", labels={}, timer={"name": "n", "start": "s", "end": "e"})
    with pytest.raises(R.ResultError, match="summary"):
        s.summary = {"n": "many"}
