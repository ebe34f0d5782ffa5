import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _link_problem() -> str | None:
    from secperf.lab import netns
    return netns.check()


# Why emulated links cannot be built here (None when they can), and the marker for tests that need them
LINK_PROBLEM = _link_problem()
needs_links = pytest.mark.skipif(LINK_PROBLEM is not None, reason=f"cannot emulate links here: {LINK_PROBLEM}")

# As root with /dev/net/tun present, every link and root test can run: a skip there hides a broken
# set-up (a missing package, a relay that failed to build), so it is turned into a failure.
CAPABLE = os.geteuid() == 0 and os.path.exists("/dev/net/tun")
SKIP_IS_FAILURE_WORDS = ("emulate links", "root", "rootless tests", "TUN")
# not the machine's set-up but where the checkout lies: a clone in a private directory (mktemp -d,
# mode 0700) cannot be read by the unprivileged user the rootless tests switch to
SKIP_IS_LEGITIMATE_WORDS = ("cannot import the installed package",)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if not CAPABLE or not rep.skipped or item.get_closest_marker("may_skip"):
        return
    reason = str(rep.longrepr[-1]) if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
    if any(w in reason for w in SKIP_IS_FAILURE_WORDS) and not any(w in reason for w in SKIP_IS_LEGITIMATE_WORDS):
        rep.outcome = "failed"
        rep.longrepr = f"skipped as root with /dev/net/tun present, where it must run: {reason}"


def pytest_configure(config):
    config.addinivalue_line("markers", "may_skip: a skip that is legitimate even as root with TUN (says why)")

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
    cmd = [chromium_exe(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--hide-scrollbars", f"--user-data-dir={profile_dir}", *extra, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
