"""The layout checks itself: import contracts (pyproject), one error hierarchy, a thin CLI."""

import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold_on_the_source_tree():
    exe = Path(sys.executable).parent / "lint-imports"
    p = subprocess.run([str(exe)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    assert "0 broken" in p.stdout


def test_a_broken_contract_is_reported(tmp_path):
    # the checker is real: a copy of the tree where core imports measure must fail the run
    import shutil
    shutil.copytree(ROOT / "src" / "secperf", tmp_path / "secperf")
    (tmp_path / "secperf" / "core" / "bad.py").write_text("from ..measure import crypto  # noqa\n")
    exe = Path(sys.executable).parent / "lint-imports"
    p = subprocess.run([str(exe), "--config", str(ROOT / "pyproject.toml")], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert p.returncode != 0
    assert "core imports nothing else of secperf BROKEN" in p.stdout


def test_every_anticipated_error_is_a_secperf_error():
    from secperf.core.errors import SecperfError
    import secperf
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
