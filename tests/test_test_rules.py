"""Rules the tests themselves keep: no skip without a known category (the conftest plugin, checked on
a small test file run by its own pytest), and no measured time against a fixed number in the default
run (an AST scan of tests/*.py)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import secperf
from conftest import IS_ROOT, SKIP_CATEGORIES, skip

TESTS = Path(__file__).resolve().parent


# --- the skip plugin, run on a small test file -----------------------------------------------------


def _run_pytest(tmp_path: Path, files: dict[str, str], ci: bool = False) -> subprocess.CompletedProcess:
    """pytest on a few test files, with tests/conftest.py's plugin loaded through a local conftest."""
    (tmp_path / "conftest.py").write_text(
        textwrap.dedent(f"""
        import importlib.util
        _spec = importlib.util.spec_from_file_location("secperf_tests_conftest", {str(TESTS / "conftest.py")!r})
        _mod = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_mod)
        pytest_runtest_makereport = _mod.pytest_runtest_makereport
        pytest_make_collect_report = _mod.pytest_make_collect_report
        pytest_terminal_summary = _mod.pytest_terminal_summary
        skip, skip_if = _mod.skip, _mod.skip_if
    """)
    )
    for name, body in files.items():
        (tmp_path / name).write_text(textwrap.dedent(body))
    env = {k: v for k, v in os.environ.items() if k not in ("SECPERF_CI", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = str(Path(secperf.__file__).resolve().parents[1])
    if ci:
        env["SECPERF_CI"] = "1"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rfEs",
            "--continue-on-collection-errors",
            str(tmp_path),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


SAMPLE = """
    import pytest
    from conftest import skip, skip_if

    def test_bare():
        pytest.skip("no reason category")

    def test_bracket_inside():
        pytest.skip("not at the start: [needs-root] ")

    def test_made_up():
        skip("feels-slow", "no such category")

    def test_root():
        skip("needs-root", "needs root here")

    @skip_if(True, "needs-root", "marker form")
    def test_root_marker():
        pass

    def test_load():
        skip("host-load", "busy")

    def test_not_built():
        skip("needs-build", "the tool is not built")

    def test_runs():
        assert True
"""
MODULE_SKIP = """
    import pytest
    pytest.importorskip("secperf_no_such_module")

    def test_never():
        pass
"""


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory):
    """One pytest run of SAMPLE and MODULE_SKIP without SECPERF_CI."""
    return _run_pytest(tmp_path_factory.mktemp("skips"), {"test_sample.py": SAMPLE, "test_modskip.py": MODULE_SKIP})


def test_an_uncategorised_skip_fails_the_run_and_categorised_ones_are_counted(plain_run):
    out = plain_run.stdout
    assert plain_run.returncode == 1, out
    assert "3 failed, 1 passed, 4 skipped, 1 error" in out, out
    assert "test_sample.py::test_bare skipped without a known category" in out, out
    assert "test_sample.py::test_bracket_inside skipped without a known category" in out, out
    assert "skipped needs-root: 2" in out and "skipped host-load: 1" in out and "skipped needs-build: 1" in out, out
    assert "skipped uncategorised: 3 (failed: uncategorised)" in out, out


def test_a_skip_with_an_unknown_category_fails(plain_run):
    assert "FAILED test_sample.py::test_made_up" in plain_run.stdout, plain_run.stdout
    assert "unknown skip category 'feels-slow'" in plain_run.stdout, plain_run.stdout


def test_a_module_level_importorskip_without_a_category_fails_collection(plain_run):
    assert "ERROR test_modskip.py" in plain_run.stdout, plain_run.stdout
    assert "test_modskip.py skipped without a known category" in plain_run.stdout, plain_run.stdout


def test_in_ci_as_root_a_skip_the_set_up_should_prevent_fails_and_an_allowed_one_does_not(tmp_path, plain_run):
    if not IS_ROOT:
        skip("needs-root", "SECPERF_CI judges skips only when the tests run as root")
    p = _run_pytest(
        tmp_path,
        {
            "test_ci.py": """
        from conftest import skip

        def test_not_built():
            skip("needs-build", "the tool is not built")

        def test_rootless_only():
            skip("needs-non-root", "as a normal user only")
    """
        },
        ci=True,
    )
    assert p.returncode == 1 and "1 failed, 1 skipped" in p.stdout, p.stdout
    assert "test_ci.py::test_not_built skipped in CI as root (SECPERF_CI=1)" in p.stdout, p.stdout
    assert "skipped needs-build: 1 (failed: 1 not allowed in CI as root)" in p.stdout, p.stdout
    assert "skipped needs-non-root: 1\n" in p.stdout, p.stdout
    # without SECPERF_CI the same needs-build skip is a skip
    summary = plain_run.stdout.split("short test summary info")[-1]
    assert "SKIPPED" in summary and "[needs-build] the tool is not built" in summary, plain_run.stdout
    assert "test_sample.py::test_not_built" not in plain_run.stdout, plain_run.stdout  # neither failed nor named


def bare_skips(source: str) -> list[str]:
    """pytest.skip, pytest.mark.skip(if), pytest.importorskip and unittest.skip in a test file's source."""
    return [
        f"{node.lineno} {ast.unparse(node)}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and node.attr in ("skip", "skipif", "importorskip")
        and ast.unparse(node.value) in ("pytest", "pytest.mark", "unittest")
    ]


def test_no_test_file_skips_past_the_categories():
    """A bare pytest skip that never fires on this machine (say, only as a normal user) would still
    be uncategorised where it does: every skip in tests/*.py goes through conftest's helpers."""
    sample = textwrap.dedent(SAMPLE) + textwrap.dedent(MODULE_SKIP)
    assert sorted(line.split()[1] for line in bare_skips(sample)) == [
        "pytest.importorskip",
        "pytest.skip",
        "pytest.skip",
    ]
    bare = {
        path.name: found
        for path in sorted(TESTS.glob("*.py"))
        if path.name not in ("conftest.py", "test_test_rules.py")  # the helpers; the samples above
        and (found := bare_skips(path.read_text()))
    }
    assert not bare, bare


def test_every_skip_category_is_described_and_named_in_lower_case_with_dashes():
    assert SKIP_CATEGORIES and all(
        re.fullmatch(r"[a-z]+(-[a-z]+)*", c) and len(d) > 20 for c, d in SKIP_CATEGORIES.items()
    )


# --- no measured time against a fixed number in the default run ------------------------------------
#
# The heuristic: in a test function the default run collects (not @pytest.mark.slow, no module-wide
# slow mark), an upper bound (`<`, `<=`, or `>`/`>=` written the other way round) whose smaller side
# is a time and whose larger side is a number literal (or arithmetic of literals). A time: a name,
# attribute or dict key ending in _ms/_us/_ns/_s or holding elapsed, duration, wall, took, rtt, cpu
# or latency (rates like ops_per_s are not), a call to time.*, or a local variable assigned from one.
# Not flagged: bounds against 0 (a sign), a floor (a measured time at least a configured delay: a
# slow or busy machine only adds time), a ratio of two times, a bound whose other side is a named
# value (a configured delay or timeout, or a calibration measured beside it), len(...).
TIME_NAME = re.compile(r"(_ms|_us|_ns|_s|elapsed|duration|wall|took|rtts?|latency|seconds)(_|$)|(^|_)cpu(_|$)", re.I)
RATE_NAME = re.compile(r"_per_s(_|$)", re.I)

# Deliberate exemptions, "file::test" (or "file" for the whole file), each with its reason.
EXEMPT = {
    "test_reliability4b_bounds.py": "estimate_s is secperf's computed estimate of a run (link, timers, --n), "
    "not a measured time",
    "test_whatif_model.py": "model predictions (simulated, deterministic for a seed), not measured time",
    "test_se_profiles.py::test_iot_safe_sim_matches_s2": "samples drawn from a profile's distribution, not measured",
    "test_own_server.py::test_cold_key_session_pays_session_login_and_key_search_per_connection": "the phases add up to the total within a microsecond of rounding: an identity, not a speed",
    "test_services_wait.py::test_a_server_that_exits_is_not_ready_even_when_its_port_accepts": "the bound (4 s) sits under the 5 s deadline the waits are given: it shows they gave up when the "
    "process was gone rather than at the deadline",
}


def _literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _literal(node.operand)
    if isinstance(node, ast.BinOp):
        return _literal(node.left) and _literal(node.right)
    return False


def _is_zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0


# calls whose result is a time when their arguments are (everything else: only the callee is read)
TIME_KEEPING_CALLS = {
    "min",
    "max",
    "sum",
    "abs",
    "sorted",
    "float",
    "int",
    "round",
    "get",
    "median",
    "mean",
    "fmean",
    "quantiles",
    "pstdev",
    "stdev",
}


def _words(node: ast.AST, tainted: set[str]):
    """The names in an expression that can make it a time (not inside a comparison, a boolean, nor
    under a division by a time, a ratio or a count of round trips)."""
    if isinstance(node, (ast.Compare, ast.Lambda)):
        return
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and _is_time(node.right, tainted):
        return
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Attribute):
        yield node.attr
        yield from _words(node.value, tainted)
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.Call):
        yield from _words(node.func, tainted)
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if callee in TIME_KEEPING_CALLS:
            for a in node.args:
                yield from _words(a, tainted)
    else:
        for child in ast.iter_child_nodes(node):
            yield from _words(child, tainted)


def _is_time(node: ast.AST, tainted: set[str]) -> bool:
    nodes = list(ast.walk(node))
    if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" for n in nodes):
        return False
    if any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == "time"
        for n in nodes
    ):
        return True
    return any(w in tainted or (TIME_NAME.search(w) and not RATE_NAME.search(w)) for w in _words(node, tainted))


def _slow(fn: ast.AST, module_slow: bool) -> bool:
    return module_slow or any(
        isinstance(n, ast.Attribute) and n.attr == "slow" for d in fn.decorator_list for n in ast.walk(d)
    )


def _tainted(fn: ast.AST) -> set[str]:
    """Local names assigned (directly or by unpacking) from a time, to a fixed point."""
    names: set[str] = set()
    assigns = [n for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value]
    while True:
        before = len(names)
        for a in assigns:
            if _is_time(a.value, names):
                for t in a.targets if isinstance(a, ast.Assign) else [a.target]:
                    names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        if len(names) == before:
            return names


def _helper_runs_only_slow(name: str, fns: list, module_slow: bool) -> bool:
    """A helper (a function not named test*) is part of the default run unless every function that
    names it is a slow test or a helper that itself runs only under slow tests (to a fixed point).
    A helper nothing in the file names is scanned: another file may import it."""
    users: dict[str, set[str]] = {}
    for fn in fns:
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and n.id != fn.name:
                users.setdefault(n.id, set()).add(fn.name)
    by_name = {fn.name: fn for fn in fns}
    slow_only: set[str] = {fn.name for fn in fns if fn.name.startswith("test") and _slow(fn, module_slow)}
    changed = True
    while changed:
        changed = False
        for fn in fns:
            if fn.name.startswith("test") or fn.name in slow_only:
                continue
            who = users.get(fn.name, set())
            if who and all(u in slow_only for u in who if u in by_name):
                slow_only.add(fn.name)
                changed = True
    return name in slow_only


def fixed_time_bounds(path: Path) -> list[str]:
    """The default-run upper bounds of a measured time by a fixed number in one test file."""
    tree = ast.parse(path.read_text())
    module_slow = any(
        isinstance(s, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in s.targets)
        and any(isinstance(n, ast.Attribute) and n.attr == "slow" for n in ast.walk(s.value))
        for s in tree.body
    )
    found = []
    fns = [fn for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for fn in fns:
        if fn.name.startswith("test"):
            if _slow(fn, module_slow):
                continue
        elif module_slow or _helper_runs_only_slow(fn.name, fns, module_slow):
            continue
        if path.name in EXEMPT or f"{path.name}::{fn.name}" in EXEMPT:
            continue
        tainted = _tainted(fn)
        for c in ast.walk(fn):
            if not isinstance(c, ast.Compare):
                continue
            sides = [c.left, *c.comparators]
            for op, a, b in zip(c.ops, sides, sides[1:]):
                if not isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
                    continue
                small, big = (a, b) if isinstance(op, (ast.Lt, ast.LtE)) else (b, a)
                if _literal(big) and not _is_zero(big) and not _literal(small) and _is_time(small, tainted):
                    found.append(f"{path.name}:{c.lineno} {fn.name}: {ast.unparse(c)[:120]}")
    return found


def test_no_default_run_test_bounds_a_measured_time_by_a_fixed_number():
    found = [f for p in sorted(TESTS.glob("*.py")) for f in fixed_time_bounds(p)]
    assert not found, (
        "measured times bounded by fixed numbers in the default run: make them relative to a "
        "calibration measured beside them, mark the test slow, or exempt it here with a reason:\n" + "\n".join(found)
    )


def test_the_time_bound_scan_finds_what_it_should_and_leaves_the_rest(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        textwrap.dedent("""
        import time, pytest

        def test_absolute():
            t0 = time.monotonic()
            took = time.monotonic() - t0
            assert took < 2.5
            assert 39.5 <= min(rtts) <= 41.0
            q1, q3 = statistics.quantiles(rtts, n=4)[0], 1
            assert q1 < 1.0
            assert 100 > s["summary"]["p50_us"]

        def test_relative():
            assert new_s < base_s / 4 and fresh_us > 15_000 and overhead_ns / wall_ns < 0.01
            assert len(samples_ms) < 10 and ops_per_s < 1e9 and elapsed_s > 0

        @pytest.mark.slow
        def test_fidelity():
            assert elapsed_s < 1.0
            _slow_check(1)

        def _check(x):
            assert 0 < x["usable_us"] < 5_000_000

        def _slow_check(x):
            assert x["took_s"] < 3

        def test_uses_helper():
            _check({"usable_us": 1})
    """)
    )
    found = fixed_time_bounds(sample)
    assert [f.split(":")[1].split()[0] for f in found] == ["7", "8", "10", "11", "23"], found
    assert all("test_absolute" in f for f in found[:4]) and "_check" in found[4]
