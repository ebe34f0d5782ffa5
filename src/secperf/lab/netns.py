"""Emulated links between two network namespaces, with the kernel's own TCP/UDP on both ends.

    with Link("lte-m") as link:                       # a profile, a spec string or a NetSpec
        server = subprocess.Popen(link.srv_exec(["my-server", "--bind", link.server_addr]))
        subprocess.run(link.dev_exec(["my-client", link.server_addr]))
        sock = link.socket("dev")                     # a socket created inside the device namespace
        print(link.stats())                           # the relay's counters so far

Topology: namespaces ``secperf-ln-<pid>-<seq>-dev`` and ``-srv`` (pid: the owning secperf
process), each with loopback up, IPv6 off and a TUN device ``sp0`` (MTU from the spec): device
``10.77.0.1/30``, server ``10.77.0.2/30``, point to point. The native relay
(``secperf-netem relay``) runs in the current namespace holding both TUN fds (it creates each one
inside its namespace by setns()), and applies the link per direction. The TUN devices exist only
while the relay holds them, so they vanish with it.

Teardown: `close()` (also from ``__exit__``, so on exceptions and KeyboardInterrupt) stops every
process this Link started by PID, then the relay, then deletes both namespaces. The relay dies
with its parent (PR_SET_PDEATHSIG). If secperf itself is killed, `sweep_stale()` (called by every
new Link) deletes namespaces named with this module's prefix whose owning pid is dead (or was
reused: the owner's start time is recorded in ``$SECPERF_HOME/netns/<name>.json``), after
stopping the processes left inside them. It never touches other namespaces.

Loopback (``Link("loopback")``) creates nothing: prefixes are empty and the server address is
127.0.0.1, so callers need no special case.

Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN: ``ip netns add`` mounts under /run/netns) and
/dev/net/tun; `check()` says what is missing and how to fix it.
"""

from __future__ import annotations

import atexit
import ctypes
import itertools
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

from ..core.paths import private_dir, secperf_home
from ..measure.probe import find_native
from ..model import netspec as NS
from .services import stop_process

PREFIX = "secperf-ln-"
NAME_RE = re.compile(r"^secperf-ln-(\d+)-(\d+)-(dev|srv)$")
IFNAME = "sp0"
DEV_ADDR, SRV_ADDR, PREFIX_LEN = "10.77.0.1", "10.77.0.2", 30
CLONE_NEWNET = 0x40000000
_SEQ = itertools.count(1)
_LIVE: set["Link"] = set()
_NS_LOCK = threading.Lock()


class LinkError(RuntimeError):
    """The emulated link could not be set up; the message says why and how to fix it."""


def find_netem() -> Path:
    return find_native("secperf-netem", "bin", "SECPERF_NETEM", "native/netem")


def _ip(*args: str, check: bool = True, timeout: float = 10) -> subprocess.CompletedProcess:
    p = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise LinkError(f"`ip {' '.join(args)}` failed: {p.stderr.strip() or p.returncode}")
    return p


def check() -> str | None:
    """None if emulated links can be built here; otherwise what is missing and the fix."""
    if not shutil.which("ip"):
        return "the `ip` command is missing: install iproute2 (scripts/bootstrap does)"
    if os.geteuid() != 0:
        return ("emulated links need root (CAP_NET_ADMIN to create TUN devices and CAP_SYS_ADMIN for "
                "`ip netns`): run secperf as root (e.g. with sudo); rootless user-namespace mode is not "
                "implemented")
    if not os.path.exists("/dev/net/tun"):
        return "/dev/net/tun is missing: load the TUN driver (modprobe tun) or create the node (mknod /dev/net/tun c 10 200)"
    if not os.path.exists("/proc/self/ns/net"):
        return "this kernel has no network namespaces (CONFIG_NET_NS)"
    try:
        find_netem()
    except Exception as exc:  # ProbeNotFound
        return str(exc)
    return None


# --- namespaces and their owners ---------------------------------------------------------------

def _proc_start(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22: start time in clock ticks since boot


def _state_dir() -> Path:
    return private_dir(secperf_home() / "netns")


def list_namespaces() -> list[str]:
    p = _ip("netns", "list", check=False)
    return [line.split()[0] for line in p.stdout.splitlines() if line.strip()]


def namespace_pids(name: str) -> list[int]:
    """The processes running inside a named network namespace (``ip netns pids``)."""
    p = _ip("netns", "pids", name, check=False)
    return [int(x) for x in p.stdout.split() if x.isdigit()]


def _gone(pid: int) -> bool:
    """Exited: no such process, or a zombie (reaped here when it is our own child)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    return _proc_start(pid) is None or _is_zombie(pid)


def kill_pids(pids: list[int], timeout_s: float = 3.0) -> None:
    """SIGTERM each PID (never our own), wait for all, bounded, then SIGKILL what is left."""
    pids = [p for p in pids if p != os.getpid()]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout_s
    for pid in pids:
        while time.monotonic() < deadline and not _gone(pid):
            time.sleep(0.02)
        if not _gone(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _gone(pid)


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _owner_alive(name: str) -> bool:
    m = NAME_RE.match(name)
    if not m:
        return True  # not ours: treat as alive, never touch
    pid = int(m.group(1))
    start = _proc_start(pid)
    if start is None:
        return False
    state = secperf_home() / "netns" / f"{name}.json"
    try:
        rec = json.loads(state.read_text())
    except (OSError, ValueError):
        return True  # pid alive and no record to say otherwise: leave it
    return rec.get("owner_start") == start


def sweep_stale() -> list[str]:
    """Delete secperf link namespaces whose owner is dead; returns the names removed."""
    removed = []
    for name in list_namespaces():
        if not NAME_RE.match(name) or _owner_alive(name):
            continue
        kill_pids(namespace_pids(name))
        if _ip("netns", "del", name, check=False).returncode == 0:
            removed.append(name)
        (secperf_home() / "netns" / f"{name}.json").unlink(missing_ok=True)
    return removed


def _stop_all() -> None:
    for link in list(_LIVE):
        link.close()


atexit.register(_stop_all)


class Link:
    """An emulated link between a device namespace and a server namespace (see the module doc).

    API for experiments: ``server_addr`` / ``dev_addr``; ``dev_prefix()`` / ``srv_prefix()``
    (argv prefixes running a command inside a namespace, empty for loopback);
    ``dev_exec(argv)`` / ``srv_exec(argv)``; ``socket(side, family, type)``; ``popen(side, argv)``
    (a process stopped by PID at close); ``stats()``; ``close()`` returning the final counters.
    """

    def __init__(self, network: str | NS.NetSpec = "loopback", seed: int = 1, poll: str = "adaptive",
                 spin_us: float = 10000.0):
        self.spec = network if isinstance(network, NS.NetSpec) else NS.parse(network)
        if poll not in ("adaptive", "busy"):
            raise ValueError(f"poll must be adaptive or busy, not {poll!r}")
        self.seed, self.poll, self.spin_us = seed, poll, spin_us
        self.loopback = self.spec.loopback
        self.dev_ns = self.srv_ns = None
        self.server_addr = "127.0.0.1" if self.loopback else SRV_ADDR
        self.dev_addr = "127.0.0.1" if self.loopback else DEV_ADDR
        self.relay: subprocess.Popen | None = None
        self.final_stats: dict | None = None
        self._lines: "queue.Queue[dict]" = queue.Queue()
        self._procs: list[subprocess.Popen] = []
        self._created: list[str] = []
        self._stderr_path: Path | None = None

    # -- life cycle --
    def __enter__(self) -> "Link":
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

    def open(self) -> "Link":
        if self.loopback:
            return self
        problem = check()
        if problem:
            raise LinkError(problem)
        sweep_stale()
        _LIVE.add(self)
        try:
            self._open()
        except BaseException:
            self.close()
            raise
        return self

    def _open(self) -> None:
        seq = next(_SEQ)
        base = f"{PREFIX}{os.getpid()}-{seq}"
        self.dev_ns, self.srv_ns = f"{base}-dev", f"{base}-srv"
        start = _proc_start(os.getpid())
        for ns in (self.dev_ns, self.srv_ns):
            (_state_dir() / f"{ns}.json").write_text(json.dumps({"owner_pid": os.getpid(), "owner_start": start}))
            _ip("netns", "add", ns)
            self._created.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                            "net.ipv6.conf.default.disable_ipv6=1"], capture_output=True, timeout=10)
        spin = 1e9 if self.poll == "busy" else self.spin_us
        argv = [str(find_netem()), "relay", "--dev-netns", f"/run/netns/{self.dev_ns}",
                "--srv-netns", f"/run/netns/{self.srv_ns}", "--ifname", IFNAME, "--seed", str(self.seed),
                "--spin-us", f"{spin:g}", "--up", self.spec.up.relay_arg(self.spec.mtu),
                "--down", self.spec.down.relay_arg(self.spec.mtu)]
        self._stderr_path = _state_dir() / f"{base}-relay.log"
        with open(self._stderr_path, "wb") as err:
            self.relay = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                          text=True)
        threading.Thread(target=self._reader, args=(self.relay,), daemon=True).start()
        ready = self._next_line("ready", 10)
        if ready is None:
            raise LinkError(f"the link relay did not start: {self._relay_err() or 'no ready line within 10 s'}")
        for ns, addr, peer in ((self.dev_ns, DEV_ADDR, SRV_ADDR), (self.srv_ns, SRV_ADDR, DEV_ADDR)):
            _ip("-n", ns, "addr", "add", f"{addr}/{PREFIX_LEN}", "dev", IFNAME)
            _ip("-n", ns, "link", "set", IFNAME, "mtu", str(self.spec.mtu), "up")

    def _relay_err(self) -> str:
        try:
            return self._stderr_path.read_text(errors="replace").strip() if self._stderr_path else ""
        except OSError:
            return ""

    def _reader(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            try:
                self._lines.put(json.loads(line))
            except json.JSONDecodeError:
                continue

    def _next_line(self, kind: str, timeout_s: float) -> dict | None:
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                msg = self._lines.get(timeout=min(left, 0.1))
            except queue.Empty:
                if self.relay is not None and self.relay.poll() is not None and self._lines.empty():
                    return None
                continue
            if msg.get("type") == kind:
                return msg

    def stats(self) -> dict | None:
        """The relay's counters so far: {"up": {...}, "down": {...}, "elapsed_s": ...}."""
        if self.loopback or self.relay is None or self.relay.poll() is not None:
            return self.final_stats
        self.relay.send_signal(signal.SIGUSR1)
        msg = self._next_line("stats", 5)
        return {k: msg[k] for k in ("up", "down", "elapsed_s")} if msg else None

    def close(self) -> dict | None:
        """Stop what this Link started (by PID), the relay, and delete the namespaces."""
        for p in self._procs:
            stop_process(p)
        self._procs.clear()
        for ns in self._created:  # anything else started inside (e.g. by srv_exec callers)
            kill_pids(namespace_pids(ns))
        if self.relay is not None:
            relay, self.relay = self.relay, None
            if relay.poll() is None:
                relay.send_signal(signal.SIGTERM)
                try:
                    relay.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    relay.kill()
                    relay.wait()
            msg = None
            deadline = time.monotonic() + 1
            while time.monotonic() < deadline:
                try:
                    m = self._lines.get(timeout=0.05)
                except queue.Empty:
                    continue
                if m.get("type") == "stats" and m.get("final"):
                    msg = m
                    break
            if msg:
                self.final_stats = {k: msg[k] for k in ("up", "down", "elapsed_s")}
        for ns in self._created:
            _ip("netns", "del", ns, check=False)
            (secperf_home() / "netns" / f"{ns}.json").unlink(missing_ok=True)
        self._created.clear()
        if self._stderr_path is not None:
            self._stderr_path.unlink(missing_ok=True)
        _LIVE.discard(self)
        return self.final_stats

    # -- running things on either side --
    def dev_prefix(self) -> list[str]:
        return [] if self.loopback else ["ip", "netns", "exec", self.dev_ns]

    def srv_prefix(self) -> list[str]:
        return [] if self.loopback else ["ip", "netns", "exec", self.srv_ns]

    def dev_exec(self, argv: list[str]) -> list[str]:
        return self.dev_prefix() + list(argv)

    def srv_exec(self, argv: list[str]) -> list[str]:
        return self.srv_prefix() + list(argv)

    def prefix(self, side: str) -> list[str]:
        return {"dev": self.dev_prefix, "srv": self.srv_prefix}[side]()

    def popen(self, side: str, argv: list[str], **kw) -> subprocess.Popen:
        """Start argv inside a side's namespace; stopped by PID when the link closes."""
        p = subprocess.Popen(self.prefix(side) + list(argv), **kw)
        self._procs.append(p)
        return p

    def snmp(self, side: str) -> dict[str, int]:
        """The side's kernel TCP/UDP counters (/proc/net/snmp as seen inside its namespace), e.g.
        ``Tcp.RetransSegs``; for loopback, the current namespace's."""
        p = subprocess.run(self.prefix(side) + ["cat", "/proc/net/snmp"], capture_output=True, text=True, timeout=10)
        out: dict[str, int] = {}
        lines = p.stdout.splitlines()
        for head, vals in zip(lines[::2], lines[1::2]):
            proto, names = head.split(":", 1)
            for k, v in zip(names.split(), vals.split(":", 1)[1].split()):
                try:
                    out[f"{proto}.{k}"] = int(v)
                except ValueError:
                    pass
        return out

    def socket(self, side: str, family: int = socket.AF_INET, type: int = socket.SOCK_STREAM) -> socket.socket:
        """A socket created inside a side's namespace (it stays there whatever thread uses it)."""
        if self.loopback:
            return socket.socket(family, type)
        ns = {"dev": self.dev_ns, "srv": self.srv_ns}[side]
        return netns_socket(ns, family, type)


class LinkPerNetwork:
    """One emulated link at a time for a sequence of measurements: consecutive ones on the same
    --network share a link; a new network closes the old link and opens its own; `close()` (or
    leaving the `with` block, also on errors and interrupts) closes the last. A link that cannot be
    built is returned as its reason, so each measurement over it fails with that reason."""

    def __init__(self, seed: int = 1):
        self.seed = seed
        self.link: Link | None = None
        self.network: str | None = None
        self.error: str | None = None

    def get(self, network: str) -> tuple["Link | None", str | None]:
        """(link, None) for an emulated network, (None, None) for loopback, (None, reason) on failure."""
        if network != self.network:
            self.close()
            self.network = network
            if network not in NS.LOOPBACK_NAMES:
                try:
                    self.link = Link(network, seed=self.seed).open()
                except (LinkError, NS.NetSpecError, OSError) as exc:
                    self.error = str(exc)
        return self.link, self.error

    def close(self) -> None:
        if self.link is not None:
            self.link.close()
        self.link, self.network, self.error = None, None, None

    def __enter__(self) -> "LinkPerNetwork":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_libc = None


def netns_socket(ns: str, family: int = socket.AF_INET, type: int = socket.SOCK_STREAM) -> socket.socket:
    """Create a socket inside the named network namespace: setns() on this thread, socket(), back."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    with _NS_LOCK:
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open(f"/run/netns/{ns}", os.O_RDONLY)
        try:
            if _libc.setns(target, CLONE_NEWNET) != 0:
                raise LinkError(f"cannot enter namespace {ns}: {os.strerror(ctypes.get_errno())}")
            try:
                return socket.socket(family, type)
            finally:
                if _libc.setns(own, CLONE_NEWNET) != 0:
                    raise LinkError(f"cannot return from namespace {ns}: {os.strerror(ctypes.get_errno())}")
        finally:
            os.close(own)
            os.close(target)
