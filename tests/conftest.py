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
    return subprocess.run([exe, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env)


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
