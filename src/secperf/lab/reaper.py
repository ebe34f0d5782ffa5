"""The watchdog of one secperf process, and the clean-up of a dead run. It runs as a script,
``python -I reaper.py``, and starts on the standard library alone (fast, at every run's start); only
the clean-up imports psutil (process scan) and the same source tree's ``secperf.core.wait`` and
``secperf.lab.ip_json`` (the namespaces listed by `ip -j`).

    python -I reaper.py --registry FILE --mark MARK     # fd 0: the read end of a pipe from the owner

The owner (lab/registry) holds the pipe's write end; nothing else does (close-on-exec, and every
child is spawned with close_fds). When the owner exits for whatever reason -- a clean exit, Ctrl-C,
`kill -9`, the OOM killer -- the kernel closes its end and this process reads end of file. It then
removes what the run left (`clean`): every process that carries the run's mark in its environment
(``SECPERF_RUN_MARK=MARK``: inherited by every child, grandchild, nginx worker and process started
through ``ip netns exec``/``nsenter``, which keep the environment), every process the registry
file lists (PID and start time both matching), then the network namespaces it lists (processes
still inside them first), and finally the registry file. A clean exit has already stopped
everything, so there is nothing to do then.

The watchdog is in its own session and ignores SIGINT, SIGTERM and SIGHUP, so a Ctrl-C or a
terminal hang-up reaching secperf's process group does not take it away before its owner is gone.
`secperf clean` (and every new run) uses `clean` on the registry files of dead owners, which also
covers a watchdog killed together with its owner.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from typing import Any

if __package__:
    from ..core.wait import wait_until
    from .ip_json import IpOutputError, netns_list
else:  # run as a script (python -I .../secperf/lab/reaper.py): this tree's package, not an installed one
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from secperf.core.wait import wait_until
    from secperf.lab.ip_json import IpOutputError, netns_list

ENV = "SECPERF_RUN_MARK"


def start_ticks(pid: int) -> int | None:
    """/proc/PID/stat field 22 (start time in clock ticks since boot); None if gone or a zombie.

    Not psutil's create_time(): that is boot time + these ticks in wall-clock seconds, with the boot
    time re-read from /proc/stat, which moves when the system clock is stepped. This value is kept
    in registry files and compared for equality by other processes and later runs (the same PID
    with the same start is the same process, not a reused PID), so it must be the exact tick count."""
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else int(fields[19])


def marked_pids(mark: str) -> list[int]:
    """Processes whose environment (as they were exec'd) carries this run's mark."""
    # the watchdog runs under whatever interpreter ran secperf (a system python3 in the rootless sandbox
    # has no psutil): it imports it only once its owner is gone, so the watchdog always starts
    import psutil  # reason: the watchdog starts under an interpreter that may lack psutil

    me, out = os.getpid(), []
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        try:
            if proc.environ().get(ENV) == mark:
                out.append(proc.pid)
        except psutil.Error:  # gone meanwhile, or not ours to read
            continue
    return out


def listed_pids(registry: dict[str, Any]) -> list[int]:
    """The registry's processes that are still the same processes (PID and start time match)."""
    out = []
    for p in registry.get("processes", []):
        pid, ticks = p.get("pid"), p.get("start_ticks")
        if isinstance(pid, int) and pid != os.getpid() and ticks is not None and start_ticks(pid) == ticks:
            out.append(pid)
    return out


def _signal(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def stop_processes(
    registry: dict[str, Any], mark: str | None, limit_s: float = 3.0, term_s: float = 1.0, quiet_scans: int = 2
) -> list[int]:
    """SIGTERM every process of the run, SIGKILL after `term_s`; rescan (50 ms apart) until two scans
    in a row find nothing or `limit_s` is over (a child forked but not yet exec'd shows the mark only
    once it execs). Returns the PIDs signalled."""
    first: dict[int, float] = {}
    quiet = 0

    def scan_quiet() -> bool:
        nonlocal quiet
        pids = set(listed_pids(registry)) | (set(marked_pids(mark)) if mark else set())
        pids.discard(os.getpid())
        quiet = 0 if pids else quiet + 1
        now = time.monotonic()
        for pid in pids:
            _signal([pid], signal.SIGKILL if now - first.setdefault(pid, now) >= term_s else signal.SIGTERM)
        return quiet >= quiet_scans

    wait_until(scan_quiet, limit_s, interval_s=0.05)
    return sorted(first)


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    """`ip ARGS`; one that hangs counts as failed (the clean-up goes on with the rest, never a traceback)."""
    try:
        return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(["ip", *args], 1, "", f"ip {' '.join(args)}: no answer within 10 s")


def remove_namespaces(registry: dict[str, Any]) -> list[str]:
    """Delete the run's named network namespaces (veth pairs inside vanish with them), after
    killing what still runs inside. Returns the names deleted."""
    removed = []
    existing = None
    for ns in registry.get("namespaces", []):
        name = ns.get("name") if isinstance(ns, dict) else ns
        if not isinstance(name, str) or not name.startswith("secperf-"):
            continue  # never anything but secperf's own namespaces
        if existing is None:
            try:
                existing = {n.name for n in netns_list()}
            except IpOutputError:
                existing = set()
        if name not in existing:
            continue
        try:
            pids = [int(x) for x in _ip("netns", "pids", name).stdout.split() if x.isdigit()]
            _signal(pids, signal.SIGKILL)
            if _ip("netns", "del", name).returncode == 0:
                removed.append(name)
        except (OSError, subprocess.SubprocessError):
            pass
        state = ns.get("state_file") if isinstance(ns, dict) else None
        if state:
            try:
                os.unlink(state)
            except OSError:
                pass
    return removed


def clean(registry: dict[str, Any], registry_path: str | None = None, quiet_scans: int = 2) -> dict[str, Any]:
    """Remove what a run left: its processes, then its namespaces, then its registry file."""
    pids = stop_processes(registry, registry.get("mark"), quiet_scans=quiet_scans)
    removed = remove_namespaces(registry)
    remove_secrets(registry)
    if registry_path:
        try:
            os.unlink(registry_path)
        except OSError:
            pass
    return {"processes": pids, "namespaces": removed}


def remove_secrets(registry: dict[str, Any]) -> list[str]:
    """Delete the key files the run listed (regular files only: never a directory or a link's target)."""
    gone = []
    for p in registry.get("secrets") or []:
        try:
            if isinstance(p, str) and os.path.isfile(p) and not os.path.islink(p):
                os.unlink(p)
                gone.append(p)
        except OSError:
            pass
    return gone


def read(path: str) -> dict[str, Any]:
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def main(argv: list[str]) -> int:
    args = dict(zip(argv[::2], argv[1::2]))
    path, mark = args.get("--registry"), args.get("--mark")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    while True:  # until end of file: the owner is gone
        try:
            if not os.read(0, 4096):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    registry = read(path) if path else {}
    # no file: the owner exited cleanly and stopped everything; one scan for anything leaked
    clean_exit = not registry
    registry.setdefault("mark", mark)
    clean(registry, path, quiet_scans=1 if clean_exit else 2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
