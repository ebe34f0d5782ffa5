"""Device commands with any SECPERF_HOME and any user (issue 43, item 1): every lookup of the device
builds' third-party sources goes through measure/device_sources -- the user's SECPERF_HOME, then the
installation's read-only cache (scripts/bootstrap), else fetched into SECPERF_HOME with the
registries' own clients -- and nothing is ever written into the checkout."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, skip
from secperf.measure import device_build, device_sources


@pytest.fixture
def homes(tmp_path, monkeypatch):
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    cache.mkdir()
    monkeypatch.setenv("SECPERF_HOME", str(home))
    monkeypatch.setenv("SECPERF_DEVICE_CACHE", str(cache))
    monkeypatch.delenv("SECPERF_ARMHF_SYSROOT", raising=False)
    return home, cache


def test_a_fresh_home_reads_the_installation_cache_in_place(homes):
    home, cache = homes
    wolf = cache / "src" / "wolfssl-5.5.4" / "wolfcrypt" / "src"
    wolf.mkdir(parents=True)
    xk = cache / "src" / "xkcp-armv7m-0.0.5"
    xk.mkdir(parents=True)
    (xk / "KeccakP-1600-inplace-32bi-armv7m-le-gcc.s").write_text("")
    assert device_build.source_dir("wolfssl") == wolf.parent.parent
    assert device_build.xkcp_dir() == xk
    assert list(home.rglob("*")) == []  # read in place: nothing copied, nothing fetched


def test_the_users_copy_comes_before_the_cache(homes):
    home, cache = homes
    for root in (home / "device", cache):
        (root / "src" / "mbedtls-2.28.3" / "library").mkdir(parents=True)
    assert device_build.source_dir("mbedtls") == home / "device" / "src" / "mbedtls-2.28.3"


def test_a_half_unpacked_directory_is_not_a_source(homes):
    _home, cache = homes
    (cache / "src" / "wolfssl-sys-5.3.0" / "wolfssl-src").mkdir(parents=True)  # no wolfcrypt/src
    with pytest.raises(device_sources.DeviceSetupError, match="was not found in"):
        device_sources.locate("wolfssl59", fetch=False)


def test_without_cache_and_without_cargo_the_fetch_names_what_is_missing(homes, monkeypatch, tmp_path):
    home, _cache = homes
    bare = tmp_path / "bin"
    bare.mkdir()
    monkeypatch.setenv("PATH", str(bare))  # no cargo, no apt-get
    with pytest.raises(device_sources.DeviceSetupError, match=r"cargo is not installed.*source cache"):
        device_sources.locate("xkcp")
    assert not any(p.is_file() and "xkcp" in p.name for p in home.rglob("*"))


def test_a_sysroot_in_the_cache_serves_the_cortex_a_builds(homes):
    _home, cache = homes
    libdir = cache / "sysroot-armhf" / "usr" / "lib" / "arm-linux-gnueabihf"
    libdir.mkdir(parents=True)
    for lib in device_build.STACKS["mbedtls"][2]:
        (libdir / lib).write_bytes(b"!<arch>\n")
    assert device_build.sysroot_for("mbedtls") == cache / "sysroot-armhf"


def test_an_unknown_part_is_a_named_error():
    with pytest.raises(device_sources.DeviceSetupError, match="no source part 'nope'"):
        device_sources.locate("nope")


def test_no_module_looks_for_device_sources_on_its_own():
    """One lookup: no other module globs SECPERF_HOME/device/src or the sysroot itself."""
    offenders = []
    for p in (ROOT / "src" / "secperf").rglob("*.py"):
        if p.name == "device_sources.py":
            continue
        text = p.read_text()
        if 'device_home() / "src"' in text or "'sysroot-armhf'" in text or '"sysroot-armhf"' in text:
            offenders.append(str(p.relative_to(ROOT)))
    assert offenders == []


WRITES = (
    "open",
    "openat",
    "creat",
    "mkdir",
    "mkdirat",
    "rename",
    "renameat",
    "renameat2",
    "unlink",
    "unlinkat",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "truncate",
)


def _writes_into(root: Path, trace: Path) -> list[str]:
    """Every call in an strace log that created, changed or removed something under `root` (tried or done)."""
    import re

    hits = []
    for line in trace.read_text(errors="replace").splitlines():
        m = re.search(r"\b(\w+)\((.*)", line)
        if not m or m.group(1) not in WRITES:
            continue
        call, args = m.groups()
        if call in ("open", "openat") and not re.search(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC", args):
            continue
        if any(p == str(root) or p.startswith(f"{root}/") for p in re.findall(r'"([^"]*)"', args)):
            hits.append(line.strip())
    return hits


def _checkout_state() -> tuple[str, dict]:
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    build = ROOT / "build"
    mtimes = {str(p): p.stat().st_mtime_ns for p in [build, *build.rglob("*")] if p.exists()} if build.is_dir() else {}
    return status, mtimes


@pytest.mark.slow
def test_a_device_command_from_an_empty_home_writes_nothing_into_the_checkout(tmp_path):
    """The cheapest device command that builds from sources (a Cortex-M4 SHA-256 count) with a
    SECPERF_HOME it has never seen runs, and neither it nor anything it starts writes into the checkout:
    every file call of the process tree is traced (strace), or, without strace, the checkout's state
    (git status, build/ mtimes) is compared before and after."""
    if not (device_sources.install_cache() / "src").is_dir() and not os.access("/usr/bin/apt-get", os.X_OK):
        skip("needs-bootstrap", "no installation source cache and no apt-get to fetch the sources")
    import secperf

    here = str(Path(secperf.__file__).resolve().parents[1])  # this secperf, whatever the directory it runs in
    env = {
        **os.environ,
        "SECPERF_HOME": str(tmp_path / "fresh"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    cmd = [
        sys.executable,
        "-m",
        "secperf",
        "device",
        "crypto",
        "--device",
        "cortex-m4-80",
        "--stack",
        "wolfssl",
        "--op",
        "sha256-1024",
        "--json",
    ]
    strace = shutil.which("strace")
    trace = tmp_path / "strace.log"
    if strace:
        cmd = [strace, "-f", "-qq", "-e", f"trace={','.join(WRITES)}", "-e", "signal=none", "-o", str(trace), *cmd]
    before = _checkout_state()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3000, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    assert '"sha256-1024"' in p.stdout
    made = Path(tmp_path / "fresh" / "device")
    assert (made / "build").is_dir()  # the builds went into the fresh home
    if strace:
        assert _writes_into(ROOT, trace) == []
        assert _writes_into(made, trace)  # the trace does see the writes (into the fresh home)
    else:  # on a machine where nothing else edits the checkout meanwhile
        assert _checkout_state() == before


def test_the_two_wolfssl_crates_are_told_apart(homes):
    # wolfssl-sys 1.2.0 carries wolfSSL 5.6.6, 5.3.0 carries 5.9.4: each stack finds its own crate
    # in a root holding both, never the other's (a shared glob took the highest version for both)
    _, cache = homes
    for crate in ("wolfssl-sys-1.2.0", "wolfssl-sys-5.3.0"):
        (cache / "src" / crate / "wolfssl-src" / "wolfcrypt" / "src").mkdir(parents=True)
    assert device_sources.locate("wolfssl56", fetch=False).parent.name == "wolfssl-sys-1.2.0"
    assert device_sources.locate("wolfssl59", fetch=False).parent.name == "wolfssl-sys-5.3.0"
