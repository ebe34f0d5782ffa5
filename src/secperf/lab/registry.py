"""The run registry: what this secperf process started, so that nothing outlives it.

Three layers, each enough on its own for most cases:

1. *Parent-death signal.* Long-lived children (servers, the probe, the relay, namespace holders,
   OpenVPN) are spawned through `spawn`, which (servers: in their own session, so their own
   children, e.g. nginx workers, share a process group that `stop` ends) from the main thread runs them under
   ``setpriv --pdeathsig KILL``: the kernel kills them when secperf dies, `kill -9` included. The
   signal is kept across execve (``ip netns exec`` and ``nsenter`` exec the command), but it fires
   when the spawning *thread* exits and does not reach grandchildren: hence the next layers.
2. *A watchdog* (lab/reaper.py), started with the registry: it holds the read end of a pipe whose
   write end only secperf holds, so it wakes the moment secperf is gone, however it died, and
   stops every process carrying this run's mark (the environment variable ``SECPERF_RUN_MARK``,
   set in secperf's environment and so inherited by every descendant, through ``ip netns exec``
   and ``nsenter`` too), the processes listed here, and deletes the listed namespaces.
3. *The registry file* ``$SECPERF_HOME/runs/<pid>-<start>.json`` (directory 0700, file 0600):
   owner PID and start time, the mark, the run directory, processes (PID, start time, what),
   network namespaces, ports. If the watchdog died too (its owner's whole process group killed),
   the next run or `secperf clean` finds the file of a dead owner and cleans up with it.

No process is ever found by its name: by PID with its start time, by the run's own mark, or by the
namespaces this run created.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import psutil

from ..core.errors import InputError, MeasurementError
from ..core.paths import private_dir, secperf_home, write_private
from . import reaper

ENV = reaper.ENV
REAPER = Path(__file__).with_name("reaper.py")
_LOCK = threading.RLock()
_CURRENT: Registry | None = None


def runs_dir() -> Path:
    return private_dir(secperf_home() / "runs")


class Registry:
    """This process's registry file and watchdog (one per process: `current()`)."""

    def __init__(self) -> None:
        pid = os.getpid()
        self.owner: dict[str, Any] = {"pid": pid, "start_ticks": reaper.start_ticks(pid)}
        self.mark = f"{pid}-{self.owner['start_ticks']}-{secrets.token_hex(6)}"
        self.path = runs_dir() / f"{pid}-{self.owner['start_ticks']}.json"
        # the registry file's JSON document (read back by the watchdog and by later runs)
        self.doc: dict[str, Any] = {
            "owner": self.owner,
            "mark": self.mark,
            "run_dirs": [],
            "processes": [],
            "namespaces": [],
            "ports": [],
            "argv": sys.argv[:4],
        }
        self.watchdog: subprocess.Popen[bytes] | None = None
        self._pipe_w: int | None = None
        os.environ[ENV] = self.mark  # every child from now on carries it (putenv: exec'd children see it)
        self._save()
        self._start_watchdog()

    def _start_watchdog(self) -> None:
        r, w = os.pipe()  # both close-on-exec; the watchdog gets `r` as its stdin only
        try:
            self.watchdog = subprocess.Popen(
                [sys.executable, "-I", str(REAPER), "--registry", str(self.path), "--mark", self.mark],
                stdin=r,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                start_new_session=True,
            )
        except OSError:
            os.close(w)
            return
        finally:
            os.close(r)
        self._pipe_w = w
        self.doc["watchdog"] = {"pid": self.watchdog.pid, "start_ticks": reaper.start_ticks(self.watchdog.pid)}
        self._save()

    def _save(self) -> None:
        write_private(self.path, json.dumps(self.doc, indent=1).encode())

    # -- what the run owns --
    def add_process(self, pid: int, what: str) -> None:
        with _LOCK:
            self.doc["processes"].append({"pid": pid, "start_ticks": reaper.start_ticks(pid), "what": what})
            self._save()

    def remove_process(self, pid: int) -> None:
        with _LOCK:
            self.doc["processes"] = [p for p in self.doc["processes"] if p["pid"] != pid]
            self._save()

    def add_namespace(self, name: str, kind: str, state_file: str | None = None) -> None:
        with _LOCK:
            self.doc["namespaces"].append({"name": name, "kind": kind, "state_file": state_file})
            self._save()

    def remove_namespace(self, name: str) -> None:
        with _LOCK:
            self.doc["namespaces"] = [n for n in self.doc["namespaces"] if n["name"] != name]
            self._save()

    def add_port(self, port: int, proto: str, what: str, pid: int | None = None) -> None:
        with _LOCK:
            self.doc["ports"].append({"port": port, "proto": proto, "what": what, "pid": pid})
            self._save()

    def remove_ports(self, pid: int) -> None:
        with _LOCK:
            self.doc["ports"] = [p for p in self.doc["ports"] if p.get("pid") != pid]
            self._save()

    def add_secret(self, path: Path) -> None:
        """A key file written for a child (e.g. a server's PKCS#8 copy of its key): removed on any
        exit -- by its owner, at close, or by the watchdog or `secperf clean` after a kill."""
        with _LOCK:
            self.doc.setdefault("secrets", []).append(str(Path(path).resolve()))
            self._save()

    def remove_secret(self, path: Path) -> None:
        with _LOCK:
            p = str(Path(path).resolve())
            self.doc["secrets"] = [x for x in self.doc.get("secrets", []) if x != p]
            self._save()

    def add_run_dir(self, path: Path) -> None:
        with _LOCK:
            self.doc["run_dirs"].append(str(Path(path).resolve()))
            self._save()

    def close(self) -> None:
        """At a clean exit: everything has been stopped; drop the file and let the watchdog go
        (it still stops anything carrying the mark that something leaked)."""
        with _LOCK:
            reaper.remove_secrets(self.doc)  # whatever its owner did not remove already
            if not self.doc["processes"] and not self.doc["namespaces"]:
                self.path.unlink(missing_ok=True)
            if self._pipe_w is not None:
                os.close(self._pipe_w)
                self._pipe_w = None
                # its last scan, so that nothing of this run (the watchdog included) outlives the exit
                if self.watchdog is not None:
                    try:
                        self.watchdog.wait(timeout=3)
                    except subprocess.TimeoutExpired:
                        pass


def current() -> Registry:
    """This process's registry, created (with its watchdog) on first use."""
    global _CURRENT
    with _LOCK:
        if _CURRENT is None or _CURRENT.owner["pid"] != os.getpid():
            _CURRENT = Registry()
            atexit.register(_CURRENT.close)
        return _CURRENT


def track_secret(path: Path) -> None:
    """List a secret file in this process's registry, if it has one (a run); else nothing to do."""
    if _CURRENT is not None and _CURRENT.owner["pid"] == os.getpid():
        _CURRENT.add_secret(path)


def forget_secret(path: Path) -> None:
    """Remove a secret file and its listing."""
    try:
        os.unlink(path)
    except OSError:
        pass
    if _CURRENT is not None and _CURRENT.owner["pid"] == os.getpid():
        _CURRENT.remove_secret(path)


def start(run_dir: Path | None = None) -> Registry:
    """Start the registry (and clean what dead runs left) before a run spawns anything. A bad
    $SECPERF_LIMIT_SCALE is refused here, before anything starts (an InputError: exit 2)."""
    limit_scale()
    fresh = _CURRENT is None
    reg = current()
    if run_dir is not None:
        reg.add_run_dir(run_dir)
    if fresh:
        clean_dead()
    return reg


# --- spawning ----------------------------------------------------------------------------------------

_SETPRIV: list[str | None] = []


def _setpriv() -> str | None:
    if not _SETPRIV:
        exe = shutil.which("setpriv")
        ok = False
        if exe:
            try:
                ok = "pdeathsig" in subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=5).stdout
            except (OSError, subprocess.SubprocessError):
                ok = False
        _SETPRIV.append(exe if ok else None)
    return _SETPRIV[0]


def pdeathsig_prefix() -> list[str]:
    """``setpriv --pdeathsig KILL`` when spawning from the main thread (the signal fires when the
    spawning thread exits, so never from a worker thread), else nothing."""
    exe = _setpriv()
    if exe is None or threading.current_thread() is not threading.main_thread():
        return []
    return [exe, "--pdeathsig", "KILL", "--"]


def spawn(argv: list[str], what: str, pdeathsig: bool = True, **popen_kw: Any) -> subprocess.Popen[Any]:
    """Popen a child the registry knows: under the parent-death signal, listed in the registry until
    `forget`. The child's PID is its command's (setpriv, ip netns exec and nsenter exec it). It stays
    in secperf's session unless the caller passes start_new_session=True (servers do): with the
    scheduler's autogroups (one per session) a new session would change how measured clients and
    the link relay share the CPU."""
    reg = current()
    env = popen_kw.get("env")
    if env is not None:
        popen_kw["env"] = {**env, ENV: reg.mark}
    prefix = pdeathsig_prefix() if pdeathsig else []
    proc = subprocess.Popen([*prefix, *argv], **popen_kw)
    reg.add_process(proc.pid, what)
    return proc


def forget(proc: subprocess.Popen[Any] | int | None) -> None:
    """The child was stopped and reaped: drop it (and its ports) from the registry."""
    if proc is None or _CURRENT is None:
        return
    pid = proc if isinstance(proc, int) else proc.pid
    _CURRENT.remove_process(pid)
    _CURRENT.remove_ports(pid)


LIMIT_SCALE_ENV = "SECPERF_LIMIT_SCALE"


class ChildTimeout(MeasurementError, subprocess.TimeoutExpired):
    """A child that did not finish within its limit (it and everything it started killed). Callers
    turn it into a failed sample, an input error or a build failure naming the tool; where none
    does, it is still a named error (exit 1), never a traceback. `timeout` is the limit applied."""

    def __init__(self, what: str, cmd: Any, limit_s: float, output: Any = None, stderr: Any = None):
        subprocess.TimeoutExpired.__init__(self, cmd, limit_s, output, stderr)
        self.what = what
        self.args = (f"{what} did not finish within {limit_s:g} s (stopped, with every process it started)",)

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self) -> tuple[Any, ...]:  # pickled whole (a Ray worker's error reaches its driver)
        return (type(self), (self.what, self.cmd, self.timeout, self.output, self.stderr))


def limit_scale() -> float:
    """The factor every child's time limit is multiplied by ($SECPERF_LIMIT_SCALE, default 1): above 1
    on a slow or loaded host (an emulator sharing two cores), below 1 to reach a time-out sooner."""
    raw = os.environ.get(LIMIT_SCALE_ENV, "").strip()
    if not raw:
        return 1.0
    try:
        v = float(raw)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and v > 0):
        raise InputError(f"{LIMIT_SCALE_ENV}={raw!r}: expected a number above 0 (e.g. 2 on a slow host)")
    return v


def scaled(limit_s: float | None) -> float | None:
    """A child's time limit after $SECPERF_LIMIT_SCALE."""
    return None if limit_s is None else limit_s * limit_scale()


def kill_tree(proc: subprocess.Popen[Any], reap: bool = True) -> None:
    """SIGKILL a child, its process group when it leads one (spawned with start_new_session) and
    every process below it (found before the kill: an orphan is re-parented and cannot be found
    after), then (reap) reap it and drop it from the registry; reap=False from another thread than
    the one reading its pipes. Never signals a process it did not find under the child (psutil
    checks each PID is still the process it found)."""
    try:
        below = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        below = []
    try:
        leads_group = os.getpgid(proc.pid) == proc.pid
    except OSError:
        leads_group = False
    if leads_group:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        proc.kill()
    except OSError:
        pass
    for p in below:
        try:
            p.kill()
        except psutil.Error:
            pass
    if not reap:
        return
    try:
        proc.communicate(timeout=5)  # closes the pipes (whatever is left in them is dropped)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        proc.wait()
    forget(proc)


def run(
    argv: list[str],
    what: str,
    timeout: float | None = None,
    input: str | bytes | None = None,
    capture_output: bool = False,
    **popen_kw: Any,
) -> subprocess.CompletedProcess[Any]:
    """`subprocess.run` for a child the registry knows (see `spawn`). The limit is scaled by
    $SECPERF_LIMIT_SCALE; on a time-out the child and all it started are killed (`kill_tree`) and
    ChildTimeout (a subprocess.TimeoutExpired and a named error) is raised; on any other error or an
    interruption they are killed too and the exception goes on."""
    limit = scaled(timeout)
    if capture_output:
        popen_kw["stdout"] = popen_kw["stderr"] = subprocess.PIPE
    if input is not None:
        popen_kw["stdin"] = subprocess.PIPE
    proc = spawn(argv, what, **popen_kw)
    try:
        out, err = proc.communicate(input, timeout=limit)
    except subprocess.TimeoutExpired as exc:
        kill_tree(proc)
        raise ChildTimeout(what, proc.args, float(limit or 0), exc.output, exc.stderr) from None
    except BaseException:
        kill_tree(proc)
        raise
    forget(proc)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


# --- the runs of others ------------------------------------------------------------------------------


def dead_runs() -> list[tuple[Path, dict[str, Any]]]:
    """Registry files whose owner is gone (PID dead, or reused by another process)."""
    out = []
    for path in sorted(runs_dir().glob("*.json")):
        registry = reaper.read(str(path))
        owner = registry.get("owner") or {}
        pid = owner.get("pid")
        if not isinstance(pid, int):
            out.append((path, registry))
            continue
        if reaper.start_ticks(pid) != owner.get("start_ticks"):
            out.append((path, registry))
    return out


def clean_dead() -> list[dict[str, Any]]:
    """Clean up after every dead run (processes, namespaces, registry file); what was removed, per run."""
    done = []
    for path, registry in dead_runs():
        wd = registry.get("watchdog") or {}
        if isinstance(wd.get("pid"), int) and reaper.start_ticks(wd["pid"]) == wd.get("start_ticks"):
            continue  # its watchdog is at work right now
        res = reaper.clean(registry, str(path))
        done.append(
            {
                "registry": str(path),
                "owner": registry.get("owner"),
                "run_dirs": registry.get("run_dirs", []),
                "ports": registry.get("ports", []),
                **res,
            }
        )
    return done
