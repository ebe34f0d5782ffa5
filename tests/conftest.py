import contextlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[1]

# the one "replace a function in every module that bound it" (benchmarks/_patching.py), loaded by path:
# the benchmarks import it as their sibling, and this conftest is also loaded by path from a copy
_spec = importlib.util.spec_from_file_location("secperf_bench_patching", ROOT / "benchmarks" / "_patching.py")
assert _spec is not None and _spec.loader is not None
_PATCHING = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_PATCHING)
# what-ifs and plans cost the host's side from the table shipped with secperf unless a test asks for
# this host's measured costs (app/host_costs.py): figures that do not depend on the machine, no cost run
os.environ.setdefault("SECPERF_HOST_COSTS", "shipped")


# --- skips: every one names its category ----------------------------------------------------------
#
# A test that cannot run here says why with one of these categories: `skip(category, reason)` inside
# a test or fixture, `skip_if(condition, category, reason)` as a marker, `import_or_skip(module, installed_by)`
# for a Python package. The reason reads "[category] reason". A skip without a known category (a bare
# pytest.skip, pytest.importorskip, a skipif mark of its own) fails the test, so nothing skips
# silently; the end of the run prints how many tests skipped in each category.
SKIP_CATEGORIES = {
    "needs-root": "needs root: network namespaces, veth, TUN nodes, OpenVPN, switching to another user",
    "needs-non-root": "the rootless path: only meaningful as a normal user (as root secperf takes the root path)",
    "needs-links": "emulated links cannot be built on this machine (no /dev/net/tun, no ip, user namespaces off)",
    "needs-bootstrap": "a package or toolchain scripts/bootstrap installs is missing (nginx, OpenVPN, a Python "
    "extra, the ARM cross-compiler and qemu-arm, fetched sources)",
    "needs-build": "a tool `make build` builds is missing (the native tools, the Go tool, the JMH jar)",
    "optional-toolchain": "a toolchain no package registry provides and bootstrap does not force (Rust's "
    "thumbv7em-none-eabihf standard library, fetched by rustup)",
    "checkout-location": "where the checkout lies, not the machine's set-up: a clone in a private directory "
    "(mode 0700) that the unprivileged user of the rootless tests cannot read",
    "host-load": "the machine was busy during every attempt, so a behaviour that only shows on an idle CPU "
    "cannot be judged now (the test says what it saw)",
}
# With SECPERF_CI=1 (set by .ci/run) and running as root on a machine `make test` bootstrapped and built,
# a skip in any other category hides a broken set-up and fails the run. Allowed there, each because
# no set-up step of the project can make the test run:
CI_ROOT_ALLOWED = {
    "needs-non-root",  # root takes the root path; the rootless one is exercised by switching to nobody
    "optional-toolchain",  # rustup's target is not on a package registry; bootstrap cannot promise it
    "checkout-location",  # CI may clone into a private temporary directory
    "host-load",  # a busy shared host is a moment, not a set-up; the skip says what it measured
}
CI_AS_ROOT = os.environ.get("SECPERF_CI") == "1" and os.geteuid() == 0
_REASON_RE = re.compile(r"(?:Skipped: )?\[([a-z-]+)\] ")  # at the start of the reason
SKIP_COUNTS: Counter = Counter()
CI_FAILED: Counter = Counter()


def _reason(category: str, reason: str) -> str:
    if category not in SKIP_CATEGORIES:
        raise ValueError(f"unknown skip category {category!r}: one of {', '.join(SKIP_CATEGORIES)}")
    return f"[{category}] {reason}"


def skip(category: str, reason: str, *, allow_module_level: bool = False) -> NoReturn:
    """Skip this test (or module) for a reason of a known category."""
    pytest.skip(_reason(category, reason), allow_module_level=allow_module_level)


def skip_if(condition: bool, category: str, reason: str) -> pytest.MarkDecorator:
    """A skipif marker whose reason carries its category."""
    return pytest.mark.skipif(condition, reason=_reason(category, reason))


def load_benchmark(filename: str) -> Iterator[types.ModuleType]:
    """A module fixture's body: benchmarks/<filename> loaded by path under a name of its own (registered
    while the module's tests run, so that its dataclasses resolve), removed after."""
    spec = importlib.util.spec_from_file_location(f"{Path(filename).stem}_under_test", ROOT / "benchmarks" / filename)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop(spec.name, None)


def device_build_or_skip(stack: str, target: str, config: str | None = None):
    """The device build of `stack` for `target` (and `config`), built through the project's own function,
    or a needs-bootstrap skip naming what is missing (scripts/bootstrap installs it)."""
    from secperf.core.errors import SetupError
    from secperf.measure.device_build import ensure_built

    try:
        return ensure_built(stack, target, config)
    except SetupError as exc:
        skip(
            "needs-bootstrap",
            f"the emulated-device build {stack}/{target} is unavailable (run scripts/bootstrap): {exc}",
        )


def import_or_skip(module: str, installed_by: str):
    """The module, or a needs-bootstrap skip saying what installs it (e.g. "scripts/bootstrap installs
    the 'cluster' extra")."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        skip("needs-bootstrap", f"{module} is not installed ({installed_by}): {exc}", allow_module_level=True)


def _skip_text(rep) -> str:
    return str(rep.longrepr[-1]) if isinstance(rep.longrepr, tuple) else str(rep.longrepr)


def _judge_skip(rep, where: str) -> None:
    """Count a skip by category; an uncategorised one, or one CI as root must not see, becomes a failure."""
    text = _skip_text(rep)
    m = _REASON_RE.match(text)
    category = m.group(1) if m and m.group(1) in SKIP_CATEGORIES else None
    if category is None:
        SKIP_COUNTS["uncategorised"] += 1
        rep.outcome = "failed"
        rep.longrepr = (
            f"{where} skipped without a known category: {text}\n"
            f"skip through conftest.skip/skip_if/import_or_skip with one of: {', '.join(SKIP_CATEGORIES)}"
        )
        return
    SKIP_COUNTS[category] += 1
    if CI_AS_ROOT and category not in CI_ROOT_ALLOWED:
        CI_FAILED[category] += 1
        rep.outcome = "failed"
        rep.longrepr = (
            f"{where} skipped in CI as root (SECPERF_CI=1), where category {category!r} must not "
            f"happen on a bootstrapped, built machine: {text}"
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped and not hasattr(rep, "wasxfail"):
        _judge_skip(rep, item.nodeid)
        if rep.skipped and isinstance(rep.longrepr, tuple) and rep.longrepr[0] == __file__:
            # raised inside skip() here: report the test's own place instead of this file's
            rep.longrepr = (str(item.path), (item.location[1] or 0) + 1, rep.longrepr[2])


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped:  # a module-level skip
        _judge_skip(rep, collector.nodeid)


def pytest_terminal_summary(terminalreporter):
    terminalreporter.section("skips by category")
    if not SKIP_COUNTS:  # said even when nothing skipped: CI's log shows the count was taken
        terminalreporter.write_line("skipped: 0 (no category)")
        return
    for category in [*SKIP_CATEGORIES, "uncategorised"]:
        if SKIP_COUNTS[category]:
            note = (
                " (failed: uncategorised)"
                if category == "uncategorised"
                else f" (failed: {CI_FAILED[category]} not allowed in CI as root)"
                if CI_FAILED[category]
                else ""
            )
            terminalreporter.write_line(f"skipped {category}: {SKIP_COUNTS[category]}{note}")


# --- emulated links and root ----------------------------------------------------------------------


def _link_problem() -> str | None:
    from secperf.lab import netns

    return netns.check()


# Why emulated links cannot be built here (None when they can), and the marker for tests that need them
LINK_PROBLEM = _link_problem()
needs_links = skip_if(LINK_PROBLEM is not None, "needs-links", f"cannot emulate links here: {LINK_PROBLEM}")
IS_ROOT = os.geteuid() == 0
# root with /dev/net/tun: the OpenVPN lab and the root-mode relay can run
CAPABLE = IS_ROOT and os.path.exists("/dev/net/tun")


# A secure-element profile for tests: every signature takes exactly 100 ms (sleeping), so its
# effect on a handshake, a tunnel or a connection is known in advance.
SLOW_SIGN = """
[profiles.slow-sign]
description = "test profile: 100 ms per signature"
wait = "sleep"
source = "test"
[profiles.slow-sign.C_Sign]
dist = "fixed"
value = 100.0
"""


@pytest.fixture
def key_cache(tmp_path_factory):
    """A private key cache shared by the session (RSA keys are slow to make)."""
    return _shared_cache(tmp_path_factory)


_CACHE = {}


def _shared_cache(factory):
    if "dir" not in _CACHE:
        _CACHE["dir"] = factory.mktemp("keys")
    return _CACHE["dir"]


def proc_cmdlines() -> list[str]:
    """Every running process's command line (arguments joined by spaces), for the scans that check
    no secret reaches one; a process gone while read is left out."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                out.append((d / "cmdline").read_bytes().replace(b"\0", b" ").decode("latin-1"))
            except OSError:
                pass
    return out


def pids_marked(mark: str) -> list[int]:
    """Live processes (this one aside) whose command line or environment holds `mark` (a test's temp
    dir, run tag or driver PID): the processes a test started, found without a name pattern."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            blob = (d / "cmdline").read_bytes() + b"\0" + (d / "environ").read_bytes()
        except OSError:
            continue
        if mark.encode() in blob and alive(int(d.name)):
            out.append(int(d.name))
    return out


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (tests checking that nothing outlives a link)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def run_cli(*args, cwd=None, timeout=600, env=None):
    """Run the installed `secperf` console script as a user would (env: the whole environment;
    pass dict(os.environ) to hand over this process's view of it: the one the C library holds
    can differ, e.g. COLUMNS=80 inside pytest)."""
    exe = shutil.which("secperf", path=str(Path(sys.executable).parent)) or "secperf"
    p = subprocess.run([exe, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env)
    check_results_written(args, p, cwd)
    return p


def check_results_written(args, p, cwd=None) -> None:
    """Every Result a test produces must match the published schema (secperf schema result)."""
    import json

    from secperf.core.result import check_schema

    args = [str(a) for a in args]
    if "--out" in args:
        out = Path(args[args.index("--out") + 1])
        out = out if out.is_absolute() or cwd is None else Path(cwd) / out
        for res in sorted(out.glob("*/result.json")):
            check_schema(json.loads(res.read_text()), str(res))
    if "--json" in args and p.returncode in (0, 1) and p.stdout.lstrip().startswith("{"):
        doc = json.loads(p.stdout)
        if doc.get("schema") == "secperf.result":
            check_schema(doc, "stdout")


def chromium_exe() -> str:
    """Debian's Chromium (installed by scripts/bootstrap); a missing browser fails the test."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.fail("headless Chromium not found: run scripts/bootstrap (installs Debian's chromium)")
    return exe


def run_chromium(profile_dir: Path, url: str, *extra: str, timeout: int = 120) -> subprocess.CompletedProcess:
    """Headless Chromium with the flags this closed network needs (no background connections)."""
    cmd = [
        chromium_exe(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile_dir}",
        *extra,
        url,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def patch_everywhere(monkeypatch: pytest.MonkeyPatch, module: types.ModuleType, name: str, value: object) -> None:
    """Replace `module.name` with `value` in the module and in every loaded secperf module that bound the
    same object by `from module import name` at its top: such a name is the module's own attribute,
    which a patch of the source module alone never reaches (the imports are at the modules' tops). The
    logic is benchmarks/_patching.py's, shared with the benchmarks' stubs; monkeypatch undoes it."""
    _PATCHING.replace_everywhere(module, name, value, setter=monkeypatch.setattr)


@contextlib.contextmanager
def short_tmpdir(prefix: str) -> Iterator[Path]:
    """A directory directly under the system temp dir, removed afterwards: Ray puts AF_UNIX sockets
    (at most 107 bytes a path) two levels and a session name deep in its --temp-dir, and pytest's own
    tmp paths grow with the number of earlier runs on the machine (pytest-of-root/pytest-1006/...)."""
    d = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
