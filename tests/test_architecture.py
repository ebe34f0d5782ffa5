"""The layout checks itself: import contracts (pyproject), one error hierarchy, a thin CLI."""

import ast
import importlib
import importlib.util
import inspect
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold_on_the_source_tree():
    exe = Path(sys.executable).parent / "lint-imports"
    p = subprocess.run(
        [str(exe)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    assert "0 broken" in p.stdout


def test_a_broken_contract_is_reported(tmp_path):
    # the checker is real: a copy of the tree where core imports measure must fail the run
    import shutil

    shutil.copytree(ROOT / "src" / "secperf", tmp_path / "secperf")
    (tmp_path / "secperf" / "core" / "bad.py").write_text("from ..measure import crypto  # noqa\n")
    exe = Path(sys.executable).parent / "lint-imports"
    p = subprocess.run(
        [str(exe), "--config", str(ROOT / "pyproject.toml")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert p.returncode != 0
    assert "core imports nothing else of secperf BROKEN" in p.stdout


def test_every_anticipated_error_is_a_secperf_error():
    import secperf
    from secperf.core.errors import SecperfError

    found = []
    for m in pkgutil.walk_packages(secperf.__path__, "secperf."):
        if m.name.endswith(("__main__", "nsholder", "paho_client", "signer_worker")):
            continue  # scripts run as their own processes
        mod = importlib.import_module(m.name)
        for name, obj in vars(mod).items():
            if inspect.isclass(obj) and issubclass(obj, Exception) and obj.__module__ == m.name:
                found.append(obj)
                if obj.__name__ != "Interrupted":
                    assert issubclass(obj, SecperfError), f"{m.name}.{name} is not a SecperfError"
    assert len(found) >= 15


def test_the_cli_only_parses():
    lines = (ROOT / "src" / "secperf" / "cli.py").read_text().count("\n")
    assert lines <= 420, f"cli.py has {lines} lines; move logic into secperf.app"


# --- every raise in the source is a SecperfError, or one of the documented exceptions ---------------
SRC = ROOT / "src" / "secperf"
# modules not imported here: run as their own processes (__main__ runs the CLI on import; nsholder
# runs as a stdlib-only script, `python -I nsholder.py`, so it cannot import secperf's errors)
NOT_IMPORTED = ("secperf.__main__", "secperf.lab.nsholder")
# (module, exception class): why that raise is right where it is
ALLOWED = {
    ("secperf.core.writes", "IsADirectoryError"): "an OSError of the writing helper; its one caller turns every "
    "OSError into OutputError with the OS's reason",
    ("secperf.lab.netns_holder", "OSError"): "the errno the holder's socket() call got, raised as socket() "
    "raises it, so callers handle both alike",
    ("secperf.subcommands.argtypes", "ArgumentTypeError"): "argparse's protocol for type functions: argparse "
    "turns it into a usage error (exit 2)",
    ("secperf.subcommands.streams", "UnsupportedOperation"): "the file protocol: a closed guarded stream's "
    "fileno() raises what io's own streams raise there",
}


def _module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_names(tree, mod) -> dict:
    """Every name a module imports anywhere (functions import lazily), resolved to its object."""
    names = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = importlib.util.resolve_name("." * node.level + (node.module or ""), mod.__package__)
        for a in node.names:
            try:
                m = importlib.import_module(base)
                obj = getattr(m, a.name) if hasattr(m, a.name) else importlib.import_module(f"{base}.{a.name}")
            except ImportError:
                continue
            names.setdefault(a.asname or a.name, obj)
    return names


def _raise_sites(tree):
    """(raise node, enclosing function or None, exception names the enclosing try blocks catch)."""
    out = []

    def visit(node, func, caught):
        if isinstance(node, ast.Raise):
            out.append((node, func, caught))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            func, caught = node, ()
        if isinstance(node, ast.Try):
            handled = set()
            for h in node.handlers:
                types = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type] if h.type else []
                handled |= {ast.unparse(t).split(".")[-1] for t in types}
            for child in node.body:
                visit(child, func, caught + tuple(handled))
            for child in node.handlers + node.orelse + node.finalbody:
                visit(child, func, caught)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, func, caught)

    visit(tree, None, ())
    return out


def _why_allowed(mod_name: str, cls: type, func, caught) -> str | None:
    from secperf.core.errors import SecperfError

    if issubclass(cls, SecperfError):
        return "a SecperfError"
    if not issubclass(cls, Exception):
        return "an exit or interruption (SystemExit, KeyboardInterrupt, the signal handler's Interrupted)"
    if issubclass(cls, NotImplementedError):
        return "an abstract or unsupported method"
    if issubclass(cls, AssertionError):
        return "an unreachable branch: a bug in secperf, never an anticipated error"
    decorators = [ast.unparse(d) for d in getattr(func, "decorator_list", [])]
    if issubclass(cls, ValueError) and any("validator" in d for d in decorators):
        return "a pydantic validator: pydantic turns its ValueError into the field's validation error"
    if issubclass(cls, KeyError) and getattr(func, "name", "") in ("__getitem__", "__delitem__", "pop", "popitem"):
        return "the mapping protocol (dict-style access: `in` and .get() rely on KeyError)"
    if any(c.__name__ in caught for c in cls.__mro__):
        return "caught by an enclosing try in the same function (control flow to the handler that names it)"
    return ALLOWED.get((mod_name, cls.__name__))


def _offending_raises(src: Path = SRC) -> list[str]:
    """Every `raise X(...)` / `raise X` in src whose class is not a SecperfError or documented above.
    A raised name that is no class (a local exception object being re-raised, or a factory's result:
    `raise self.fail(...)`) is left alone: the class it holds was built where this check sees no raise."""
    import builtins

    bad = []
    for path in sorted(src.rglob("*.py")):
        name = _module_name(path, src)
        if name in NOT_IMPORTED:
            continue
        mod = importlib.import_module(name)
        tree = ast.parse(path.read_text())
        imported = _imported_names(tree, mod)
        for node, func, caught in _raise_sites(tree):
            if node.exc is None:
                continue  # a bare re-raise
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            dotted = []
            while isinstance(target, ast.Attribute):
                dotted.insert(0, target.attr)
                target = target.value
            if not isinstance(target, ast.Name):
                continue
            scope = {**vars(builtins), **imported, **vars(mod)}
            if target.id not in scope:
                continue  # a local variable: an exception object re-raised
            obj = scope[target.id]
            for attr in dotted:
                obj = getattr(obj, attr, None)
            if not (inspect.isclass(obj) and issubclass(obj, BaseException)):
                continue
            if _why_allowed(name, obj, func, caught) is None:
                bad.append(f"{path.relative_to(src.parent)}:{node.lineno}: raise {obj.__name__}")
    return bad


def test_every_raise_in_the_source_is_in_the_error_hierarchy():
    bad = _offending_raises()
    assert not bad, (
        "raise a secperf.core.errors class (InputError, SetupError, MeasurementError or a "
        "subclass) instead of:\n" + "\n".join(bad)
    )


def test_a_plain_builtin_raise_is_caught_by_the_check(tmp_path, monkeypatch):
    # the check is real: a module raising ValueError (and one raising RuntimeError inside a try that
    # catches something else) is reported; the same raise in a pydantic validator is not
    pkg = tmp_path / "secperf"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "planted.py").write_text(
        "from pydantic import BaseModel, field_validator\n\n"
        "def parse(x):\n    raise ValueError('x')\n\n"
        "def run():\n    try:\n        raise RuntimeError('y')\n    except KeyError:\n        pass\n\n"
        "class M(BaseModel):\n    a: int\n\n    @field_validator('a')\n    @classmethod\n"
        "    def _a(cls, v):\n        raise ValueError('must be positive')\n"
    )
    import secperf

    monkeypatch.setattr(secperf, "__path__", [str(pkg)] + list(secperf.__path__))
    monkeypatch.delitem(sys.modules, "secperf.planted", raising=False)
    bad = _offending_raises(pkg)
    assert [b.split(": ", 1)[1] for b in bad] == ["raise ValueError", "raise RuntimeError"], bad


def test_no_module_is_over_600_lines():
    # one concern per module: a module that grows past this is split by concern (as connect, server,
    # netns, vpn and token were), its old name re-exporting the public names
    long = {str(p.relative_to(SRC)): n for p in SRC.rglob("*.py") if (n := p.read_text().count("\n")) > 600}
    assert not long, f"modules over 600 lines: {long}"
