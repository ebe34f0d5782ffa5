"""Host and library metadata recorded with every Result: a number without its context cannot be
compared (CPU model, cores, kernel, library versions, secperf version and git revision, date)."""

from __future__ import annotations

import datetime as _dt
import platform
import ssl
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from .. import __version__

if TYPE_CHECKING:
    pass


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo: psutil has no model name)."""
    info = _read("/proc/cpuinfo") or ""
    for line in info.splitlines():
        if line.lower().startswith(("model name", "hardware", "cpu model")):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def os_release() -> str:
    text = _read("/etc/os-release") or ""
    for line in text.splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return platform.system()


def git_revision(start: Path | None = None) -> str | None:
    """The secperf checkout's commit (with '-dirty' when it has uncommitted changes), or None."""
    candidates = [start] if start else []
    candidates += [Path.cwd(), Path(__file__).resolve().parents[3]]
    for c in candidates:
        if not (c / "pyproject.toml").is_file():
            continue
        try:
            rev = subprocess.run(
                ["git", "-C", str(c), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=5
            )
            if rev.returncode != 0:
                continue
            dirty = subprocess.run(
                # --no-optional-locks: a read only (git status otherwise refreshes .git/index under
                # index.lock: a write into the checkout, which another user may not even be allowed)
                ["git", "--no-optional-locks", "-C", str(c), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                timeout=5,
            )
            return rev.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
        except (OSError, subprocess.SubprocessError):
            continue
    return None


def _cryptography_info() -> dict[str, Any]:
    try:
        import cryptography  # reason: guarded: cryptography may be missing
        from cryptography.hazmat.backends.openssl.backend import backend  # reason: guarded: cryptography may be missing

        return {"version": cryptography.__version__, "openssl": backend.openssl_version_text()}
    except Exception as exc:  # an optional library: record why it is missing
        return {"version": None, "error": str(exc)}


def cpu_governor() -> str | None:
    return _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")


def collect(probe_meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything needed to trust or compare a Result later."""
    cpus = psutil.cpu_count(logical=True)
    affinity: int | None
    try:
        affinity = len(psutil.Process().cpu_affinity())
    except (AttributeError, psutil.Error):  # a platform without affinity
        affinity = cpus
    try:
        load = psutil.getloadavg()
    except (AttributeError, OSError):
        load = None
    memory = psutil.virtual_memory()
    meta = {
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "hostname": platform.node(),
        "cpu_model": cpu_model(),
        "cpu_count": cpus,
        "cpu_affinity": affinity,
        "memory_total_bytes": int(memory.total),
        "memory_available_bytes_at_start": int(memory.available),
        "cpu_governor": cpu_governor(),
        "machine": platform.machine(),
        "kernel": platform.release(),
        "os": os_release(),
        "python": platform.python_version(),
        "python_ssl": ssl.OPENSSL_VERSION,
        "cryptography": _cryptography_info(),
        "secperf_version": __version__,
        "secperf_git": git_revision(),
        "loadavg_at_start": list(load) if load else None,
    }
    if probe_meta:
        record_probe_meta(meta, probe_meta)
    return meta


def record_probe_meta(block: dict[str, Any], meta: dict[str, Any] | None) -> None:
    """Put the native probe's library and timer facts into a host block (a Result's `host`, or one
    being collected), the first time only."""
    if meta and "probe" not in block:
        block["probe"] = {
            k: meta.get(k)
            for k in ("tool", "version", "openssl_version", "openssl_version_num", "timer_overhead_ns", "clock")
        }
        block["openssl"] = meta.get("openssl_version")
