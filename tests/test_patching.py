"""The one "replace a function in every module that bound it" (benchmarks/_patching.py), used by the tests'
conftest.patch_everywhere and by the benchmarks' stubs (campaign, bad_inputs): it reaches every binding,
monkeypatch undoes it, and no other copy of the logic is left."""

from pathlib import Path

import pytest

from conftest import _PATCHING, ROOT, patch_everywhere
from secperf.app import runner


def test_every_binding_is_replaced_and_undone():
    original = runner.measure_and_write
    bound = _PATCHING.bindings(runner, "measure_and_write")
    assert runner in bound and len(bound) >= 3  # the runner and the command modules that import it at the top
    marker = object()
    with pytest.MonkeyPatch.context() as mp:
        patch_everywhere(mp, runner, "measure_and_write", marker)
        assert all(m.measure_and_write is marker for m in bound)
    assert all(m.measure_and_write is original for m in bound)


def test_a_module_that_rebound_the_name_to_something_else_is_left_alone(monkeypatch):
    bound = _PATCHING.bindings(runner, "measure_and_write")
    stranger = next(m for m in bound if m is not runner)
    monkeypatch.setattr(stranger, "measure_and_write", "its own")  # no longer the original object
    count = _PATCHING.replace_everywhere(runner, "measure_and_write", "new", setter=monkeypatch.setattr)
    assert count == len(bound) - 1
    assert stranger.measure_and_write == "its own" and runner.measure_and_write == "new"


@pytest.mark.parametrize("path", ["benchmarks/campaign.py", "benchmarks/bad_inputs.py", "tests/conftest.py"])
def test_the_users_keep_no_copy_of_their_own(path):
    text = (ROOT / path).read_text()
    assert "walk_packages" not in text and "sys.modules.values()" not in text, path
    assert "_patching" in text, path


def test_the_shared_module_imports_only_the_standard_library():
    text = (Path(_PATCHING.__file__)).read_text()
    assert "import pytest" not in text and "from secperf" not in text
