"""Imports sit at the top of their module, where a reader sees every dependency (and every circle).

An import inside a function is allowed only for an optional dependency (an extra of pyproject.toml:
Ray, the protocols packages; matplotlib), or with a `# reason:` comment on one of its lines; the
optional ones carry a reason too."""

import ast
import shutil
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "secperf"

# pyproject.toml's optional extras: `cluster` (ray) and `protocols` (lakers, aiocoap, aioquic, cbor2); matplotlib
# draws the HTML report's figures only
OPTIONAL = {"ray", "matplotlib", "lakers", "aiocoap", "aioquic", "cbor2"}


def _module(node: ast.Import | ast.ImportFrom) -> str:
    if isinstance(node, ast.Import):
        return node.names[0].name
    return "." * node.level + (node.module or "")


def inner_imports(root: Path) -> list[tuple[str, int, str, bool]]:
    """Every import inside a function under root: (file, line, module, has a `# reason:` comment)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        todo: list[tuple[ast.AST, bool]] = [(ast.parse(text), False)]
        while todo:
            node, in_function = todo.pop()
            for child in ast.iter_child_nodes(node):
                if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                    own = lines[child.lineno - 1 : child.end_lineno]
                    reason = any("# reason:" in line for line in own)
                    out.append((str(path.relative_to(root)), child.lineno, _module(child), reason))
                inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                todo.append((child, inside))
    out.sort()
    return out


def unjustified(root: Path) -> list[str]:
    bad = []
    for file, line, module, reason in inner_imports(root):
        optional = not module.startswith(".") and module.split(".")[0] in OPTIONAL
        if not reason:
            what = "an optional dependency without its `# reason:`" if optional else "not an optional dependency"
            bad.append(f"{file}:{line}: import {module} inside a function ({what})")
    return bad


def test_no_import_inside_a_function_without_its_reason():
    found = inner_imports(SRC)
    assert len(found) >= 1  # the scan sees the optional extras' imports (Ray, the protocols packages)
    assert unjustified(SRC) == []


def test_the_inner_imports_left_are_optional_or_guarded():
    # every inner import left is an optional extra, or an ImportError-guarded one (pkcs11, paho-mqtt)
    # that names its reason: no project module is imported late to hide a circle. The one exception is
    # cli.py's dispatch: the app layer once the arguments parsed, so that --help and a usage error stay
    # light (subcommands/__init__.py; tests/test_cli_parser_halves.py)
    ours = [(f, m) for f, _, m, _ in inner_imports(SRC) if m.startswith(".") or m.startswith("secperf")]
    assert {f for f, _ in ours} <= {"cli.py"}, ours
    assert {m for _, m in ours} <= {".app.option_scope", ".app.reporter", ".app.signals", ".subcommands"}, ours


def test_a_planted_inner_import_is_found(tmp_path):
    copy = tmp_path / "secperf"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert unjustified(copy) == []
    target = copy / "model" / "planted.py"
    target.write_text(
        "def f():\n"
        "    from .costs import load_table\n\n"
        "    return load_table\n\n\n"
        "def g():\n"
        "    import matplotlib\n\n"
        "    return matplotlib\n\n\n"
        "def h():\n"
        "    import json  # reason: planted, with its reason\n\n"
        "    return json\n"
    )
    bad = unjustified(copy)
    assert len(bad) == 2
    assert bad[0].startswith("model/planted.py:2: import .costs inside a function (not an optional dependency)")
    assert bad[1].startswith("model/planted.py:8: import matplotlib inside a function (an optional dependency")
