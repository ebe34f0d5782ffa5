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

Two modes (`mode()`), the same topology and API in both:

- *root*: named namespaces as above (``ip netns add`` needs CAP_SYS_ADMIN, TUN needs CAP_NET_ADMIN).
- *rootless* (any other user): a user namespace instead. A holder process (lab/nsholder.py)
  unshares a user namespace (the user mapped to 0 inside) with the device's network namespace; a
  second holder joins that user namespace and unshares the server's. ``dev_ns``/``srv_ns`` are
  then the holders' ``/proc/PID/ns/net``; prefixes are ``nsenter --target PID --user --net
  --mount --preserve-credentials --wd=.`` (each holder's mount namespace has its own /sys, as
  ``ip netns exec`` gives); the relay joins the user namespace first (``--userns``); sockets are
  made by the holder and passed back (SCM_RIGHTS), since a multithreaded Python process cannot
  setns() into a user namespace. The namespaces exist as long as their holders: `close()` stops
  what runs inside, the relay, then the holders by PID; a holder exits when its owner dies (end of
  file on its control socket, PR_SET_PDEATHSIG) after stopping what is left inside, so there is
  nothing for the sweeper (which only handles the root mode's named namespaces).

Both need a TUN device node: /dev/net/tun, or ``$SECPERF_TUN_DEVICE`` (any character device
10:200 this user can open, e.g. a copy made with mknod; passed to the relay as --tun-device).
`check()` says what is missing and how to fix it.
"""

from __future__ import annotations

import atexit
import ctypes
import errno
import itertools
import json
import os
import queue
import re
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..core.paths import private_dir, secperf_home
from ..core.jsonlines import parse_lines
from ..core.native import find_native
from ..inputs import netspec as NS
from .nsholder import netns_pids  # the holder's own scan (it runs stdlib-only, as a script)
from . import registry
from .services import stop_process
from ..core.errors import SetupError

PREFIX = "secperf-ln-"
NAME_RE = re.compile(r"^secperf-ln-(\d+)-(\d+)-(dev|srv)$")
IFNAME = "sp0"
DEV_ADDR, SRV_ADDR, PREFIX_LEN = "10.77.0.1", "10.77.0.2", 30
CLONE_NEWNET = 0x40000000
DEFAULT_TUN, TUN_ENV = "/dev/net/tun", "SECPERF_TUN_DEVICE"
TUN_TXQUEUELEN = 4096  # as native/netem/tun.h; rootless, set here over netlink (the relay's ioctl needs root)
HOLDER = Path(__file__).with_name("nsholder.py")
_SEQ = itertools.count(1)
_LIVE: set["Link"] = set()
_NS_LOCK = threading.Lock()


def _stats_of(msg: dict) -> dict:
    return {k: msg[k] for k in ("up", "down", "elapsed_s", "load_sleeps") if k in msg}


class LinkError(SetupError):
    """The emulated link could not be set up; the message says why and how to fix it."""


def find_netem() -> Path:
    return find_native("secperf-netem", "bin", "SECPERF_NETEM", "native/netem")


def _ip(*args: str, check: bool = True, timeout: float = 10) -> subprocess.CompletedProcess:
    p = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise LinkError(f"`ip {' '.join(args)}` failed: {p.stderr.strip() or p.returncode}")
    return p


def rootless() -> bool:
    """Links use a user namespace (see the module doc) unless secperf runs as root."""
    return os.geteuid() != 0


def mode() -> str:
    return "rootless (user namespace)" if rootless() else "root"


def tun_device() -> str:
    """The TUN device node the relay opens: $SECPERF_TUN_DEVICE, else /dev/net/tun."""
    return os.environ.get(TUN_ENV) or DEFAULT_TUN


def check() -> str | None:
    """None if emulated links can be built here; otherwise what is missing and the fix (every
    problem found, separated by "; ")."""
    if not shutil.which("ip"):
        return "the `ip` command is missing: install iproute2 (scripts/bootstrap does)"
    if not os.path.exists("/proc/self/ns/net"):
        return "this kernel has no network namespaces (CONFIG_NET_NS)"
    problems = []
    if rootless() and not shutil.which("nsenter"):
        problems.append("the `nsenter` command is missing: install util-linux")
    problems.append(_tun_problem())
    if rootless():
        problems.append(_userns_problem())
    try:
        find_netem()
    except Exception as exc:  # ProbeNotFound
        problems.append(str(exc))
    return "; ".join(p for p in problems if p) or None


def _tun_problem() -> str | None:
    """Can this process open the TUN device node? (Opening creates nothing; TUNSETIFF would.)"""
    path = tun_device()
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if path == DEFAULT_TUN:
            return (f"{DEFAULT_TUN} is missing: load the TUN driver (modprobe tun) or create the node "
                    f"(mknod {DEFAULT_TUN} c 10 200)")
        return f"{TUN_ENV}={path} does not exist: create a TUN node there (mknod {path} c 10 200) or unset {TUN_ENV}"
    except OSError as exc:
        return f"cannot inspect the TUN device {path}: {exc.strerror}"
    if not stat.S_ISCHR(st.st_mode) or (os.major(st.st_rdev), os.minor(st.st_rdev)) != (10, 200):
        return f"{path} is not the TUN device (a character device 10:200): point {TUN_ENV} at one (mknod PATH c 10 200)"
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CLOEXEC))
    except PermissionError:
        return _tun_access_fix(path, st)
    except OSError as exc:
        if exc.errno in (errno.ENODEV, errno.ENXIO):
            return f"cannot open {path}: {exc.strerror}: the TUN driver is not loaded (modprobe tun)"
        return f"cannot open {path}: {exc.strerror}"
    return None


def _tun_access_fix(path: str, st: os.stat_result) -> str:
    who = f"uid {os.geteuid()}"
    owner = f"{_name(st.st_uid, 'pw')}:{_name(st.st_gid, 'gr')}"
    perms = f"mode {stat.S_IMODE(st.st_mode):04o}, owner {owner}"
    if os.access(path, os.R_OK | os.W_OK):  # the mode allows it: the file system forbids device nodes
        return (f"{path} cannot be opened by {who} although its mode allows it ({perms}): its file system is "
                f"probably mounted nodev; make the node elsewhere and set {TUN_ENV} to it")
    fixes = ["run as root"]
    if path == DEFAULT_TUN:
        fixes.append(f"`chmod 0666 {DEFAULT_TUN}` (Debian's default mode)")
    else:
        fixes.append(f"give {who} read and write access to it (chgrp/chmod)")
    fixes.append(f"set {TUN_ENV} to a TUN node {who} can open (as root: mknod DIR/tun c 10 200, then chgrp/chmod "
                 f"it; DIR on a file system without nodev)")
    return f"{path} is not accessible to {who} ({perms}): " + ", or ".join(fixes)


def _name(id_: int, db: str) -> str:
    try:
        if db == "pw":
            import pwd
            return pwd.getpwuid(id_).pw_name
        import grp
        return grp.getgrgid(id_).gr_name
    except KeyError:
        return str(id_)


_USERNS_PROBE: list[str | None] = []


def _userns_problem() -> str | None:
    """Can this user create a user namespace with a network namespace? Tried once per process."""
    if not _USERNS_PROBE:
        argv = _holder_argv("--probe")
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"cannot run the namespace holder ({argv[0]} {HOLDER.name}): {exc}"
        detail = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
        if p.returncode == 0:
            _USERNS_PROBE.append(None)
        elif p.returncode == 3:  # nsholder.PROBE_REFUSED: the kernel said no
            _USERNS_PROBE.append(userns_fix(detail))
        else:
            return f"the namespace holder ({argv[0]} {HOLDER.name}) failed: {detail}"
    return _USERNS_PROBE[0]


def _read_sysctl(name: str) -> str | None:
    try:
        return Path("/proc/sys", name.replace(".", "/")).read_text().strip()
    except OSError:
        return None


def userns_fix(detail: str, read=_read_sysctl) -> str:
    """The message for a failed user-namespace probe: the setting that forbids it and its fix."""
    fixes = []
    if read("kernel.unprivileged_userns_clone") == "0":
        fixes.append("sysctl -w kernel.unprivileged_userns_clone=1")
    if read("user.max_user_namespaces") == "0":
        fixes.append("sysctl -w user.max_user_namespaces=10000")
    if read("kernel.apparmor_restrict_unprivileged_userns") == "1":
        fixes.append("sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile "
                     "allowing userns for this Python)")
    if not fixes:  # none of the known switches is off: name them all, and the usual container cause
        fixes.append("check kernel.unprivileged_userns_clone (must be 1 where it exists) and "
                     "user.max_user_namespaces (> 0); in a container, its seccomp profile may forbid unshare")
    return (f"unprivileged user namespaces are disabled here ({detail}): " + "; ".join(fixes)
            + "; or run as root")


def _holder_argv(*args: str) -> list[str]:
    # -I: the holder is stdlib only and should not pick up the caller's environment or cwd
    return [sys.executable, "-I", str(HOLDER), *args]


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
    """Delete secperf link namespaces whose owner is dead; returns the names removed. Root mode
    only: rootless links have no named namespaces (theirs die with their holders)."""
    removed = []
    if rootless():
        return removed
    for name in list_namespaces():
        if not NAME_RE.match(name) or _owner_alive(name):
            continue
        kill_pids(namespace_pids(name))
        if _ip("netns", "del", name, check=False).returncode == 0:
            removed.append(name)
        (secperf_home() / "netns" / f"{name}.json").unlink(missing_ok=True)
    return removed


class _Holder:
    """A holder process of a rootless link (lab/nsholder.py): a network namespace in a user
    namespace, kept while it runs; it makes sockets inside on request."""

    def __init__(self, join_userns: str | None = None, timeout_s: float = 10.0):
        self.ctl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = _holder_argv("--parent", str(os.getpid()), *(("--join-userns", join_userns) if join_userns else ()))
        self._lock = threading.Lock()
        try:
            self.proc = registry.spawn(argv, "netns holder", stdin=theirs, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, cwd="/")
        finally:
            theirs.close()
        self.pid = self.proc.pid
        self.ctl.settimeout(timeout_s)
        try:
            msg = self.ctl.recv(4096)
        except OSError:
            msg = b""
        if msg != b"ok":
            self.ctl.close()
            why = msg.decode(errors="replace").removeprefix("err ") or self._stderr() or "no answer within 10 s"
            self.close()
            raise LinkError(f"cannot create the link's user/network namespace: {why}")
        self.user_ns, self.net_ns = f"/proc/{self.pid}/ns/user", f"/proc/{self.pid}/ns/net"
        self.net_ident = os.readlink(self.net_ns)

    def _stderr(self) -> str:
        try:
            _, err = self.proc.communicate(timeout=2)
        except (subprocess.TimeoutExpired, ValueError):
            return ""
        return (err or b"").decode(errors="replace").strip()

    def socket(self, family: int, type: int, proto: int = 0) -> socket.socket:
        with self._lock:
            self.ctl.send(f"socket {int(family)} {int(type)} {int(proto)}".encode())
            msg, fds, _, _ = socket.recv_fds(self.ctl, 256, 1)
        if msg == b"ok" and len(fds) == 1:
            return socket.socket(fileno=fds[0])
        for fd in fds:
            os.close(fd)
        if not msg:
            raise LinkError("the link's namespace holder is gone (the link was closed?)")
        _, code, text = (msg.decode(errors="replace").split(" ", 2) + ["", ""])[:3]
        raise OSError(int(code) if code.isdigit() else errno.EIO, text)

    def close(self) -> None:
        """End of file tells the holder to stop what is left inside and exit; SIGKILL if it does not."""
        self.ctl.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        registry.forget(self.proc)
        if self.proc.stderr:
            self.proc.stderr.close()


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
        self.rootless = rootless()
        # the user servers run as, as their namespace names it, when that differs from secperf's:
        # a rootless link's user namespace maps secperf's user to root (servers that drop privileges
        # when started as root must be told to stay that user)
        self.server_user = "root" if self.rootless and not self.loopback else None
        self.relay: subprocess.Popen | None = None
        self.holders: list[_Holder] = []   # rootless: the device's holder, then the server's
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
        if self.rootless:
            self._make_user_namespaces()
        else:
            self._make_named_namespaces(base)
        spin = 1e9 if self.poll == "busy" else self.spin_us
        argv = [str(find_netem()), "relay", "--dev-netns", self.ns_path("dev"),
                "--srv-netns", self.ns_path("srv"), "--ifname", IFNAME, "--seed", str(self.seed),
                "--spin-us", f"{spin:g}", "--up", self.spec.up.relay_arg(self.spec.mtu),
                "--down", self.spec.down.relay_arg(self.spec.mtu), "--tun-device", tun_device()]
        if self.rootless:
            argv += ["--userns", self.holders[0].user_ns]
        self._stderr_path = _state_dir() / f"{base}-relay.log"
        with open(self._stderr_path, "wb") as err:
            self.relay = registry.spawn(argv, "link relay", stdout=subprocess.PIPE, stderr=err,
                                        stdin=subprocess.DEVNULL, text=True)
        threading.Thread(target=self._reader, args=(self.relay,), daemon=True).start()
        ready = self._next_line("ready", 10)
        if ready is None:
            raise LinkError(f"the link relay did not start: {self._relay_err() or 'no ready line within 10 s'}")
        for side, addr in (("dev", DEV_ADDR), ("srv", SRV_ADDR)):
            self._ip(side, "addr", "add", f"{addr}/{PREFIX_LEN}", "dev", IFNAME)
            queue = ("txqueuelen", str(TUN_TXQUEUELEN)) if self.rootless else ()
            self._ip(side, "link", "set", IFNAME, "mtu", str(self.spec.mtu), *queue, "up")

    def _make_named_namespaces(self, base: str) -> None:
        """Root: ``ip netns add``, each owned by this process (state file for the sweeper)."""
        self.dev_ns, self.srv_ns = f"{base}-dev", f"{base}-srv"
        start = _proc_start(os.getpid())
        for ns in (self.dev_ns, self.srv_ns):
            state = _state_dir() / f"{ns}.json"
            state.write_text(json.dumps({"owner_pid": os.getpid(), "owner_start": start}))
            registry.current().add_namespace(ns, "link", str(state))  # listed before it exists: never missed
            _ip("netns", "add", ns)
            self._created.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                            "net.ipv6.conf.default.disable_ipv6=1"], capture_output=True, timeout=10)

    def _make_user_namespaces(self) -> None:
        """Rootless: a holder with a new user namespace and the device's network namespace, then a
        holder joining that user namespace with the server's (each comes up with lo up, IPv6 off)."""
        self.holders.append(_Holder())
        self.holders.append(_Holder(join_userns=self.holders[0].user_ns))
        self.dev_ns, self.srv_ns = self.holders[0].net_ns, self.holders[1].net_ns

    def ns_path(self, side: str) -> str:
        """The side's network namespace as a path (/run/netns/NAME, or the holder's /proc/PID/ns/net)."""
        ns = {"dev": self.dev_ns, "srv": self.srv_ns}[side]
        return ns if self.rootless else f"/run/netns/{ns}"

    def _ip(self, side: str, *args: str) -> None:
        if not self.rootless:
            _ip("-n", {"dev": self.dev_ns, "srv": self.srv_ns}[side], *args)
            return
        p = subprocess.run(self.prefix(side) + ["ip", *args], capture_output=True, text=True, timeout=10, cwd="/")
        if p.returncode != 0:
            raise LinkError(f"`ip {' '.join(args)}` in the {side} namespace failed: {p.stderr.strip() or p.returncode}")

    def _relay_err(self) -> str:
        try:
            return self._stderr_path.read_text(errors="replace").strip() if self._stderr_path else ""
        except OSError:
            return ""

    def _reader(self, proc: subprocess.Popen) -> None:
        for msg in parse_lines(proc.stdout):
            self._lines.put(msg)

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
        """The relay's counters so far: {"up": {...}, "down": {...}, "elapsed_s": ..., "load_sleeps": ...}
        (load_sleeps: spin windows the relay cut short because tasks waited for a CPU)."""
        if self.loopback or self.relay is None or self.relay.poll() is not None:
            return self.final_stats
        self.relay.send_signal(signal.SIGUSR1)
        msg = self._next_line("stats", 5)
        return _stats_of(msg) if msg else None

    def close(self) -> dict | None:
        """Stop what this Link started (by PID), the relay, and delete the namespaces."""
        for p in self._procs:
            stop_process(p)
            registry.forget(p)
        self._procs.clear()
        for ns in self._created:  # anything else started inside (e.g. by srv_exec callers)
            kill_pids(namespace_pids(ns))
        ours = {h.pid for h in self.holders} | ({self.relay.pid} if self.relay is not None else set())
        for h in self.holders:  # rootless: the same, found by the namespace's identity
            kill_pids([p for p in netns_pids(h.net_ident) if p not in ours])
        if self.relay is not None:
            relay, self.relay = self.relay, None
            if relay.poll() is None:
                relay.send_signal(signal.SIGTERM)
                try:
                    relay.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    relay.kill()
                    relay.wait()
            registry.forget(relay)
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
                self.final_stats = _stats_of(msg)
        for ns in self._created:
            _ip("netns", "del", ns, check=False)
            (secperf_home() / "netns" / f"{ns}.json").unlink(missing_ok=True)
            registry.current().remove_namespace(ns)
        self._created.clear()
        for h in reversed(self.holders):  # rootless: the namespaces vanish with their holders
            h.close()
        self.holders.clear()
        if self._stderr_path is not None:
            self._stderr_path.unlink(missing_ok=True)
        _LIVE.discard(self)
        return self.final_stats

    # -- running things on either side --
    def dev_prefix(self) -> list[str]:
        return self._prefix(0, self.dev_ns)

    def srv_prefix(self) -> list[str]:
        return self._prefix(1, self.srv_ns)

    def _prefix(self, i: int, ns: str | None) -> list[str]:
        if self.loopback:
            return []
        if not self.rootless:
            return ["ip", "netns", "exec", ns]
        if not self.holders:
            raise LinkError("the link is not open")
        # nsenter execs the command (its PID is the command's); --wd=. keeps the caller's directory,
        # which entering a mount namespace would reset to /
        return ["nsenter", f"--target={self.holders[i].pid}", "--user", "--net", "--mount",
                "--preserve-credentials", "--wd=."]

    def dev_exec(self, argv: list[str]) -> list[str]:
        return self.dev_prefix() + list(argv)

    def srv_exec(self, argv: list[str]) -> list[str]:
        return self.srv_prefix() + list(argv)

    def prefix(self, side: str) -> list[str]:
        return {"dev": self.dev_prefix, "srv": self.srv_prefix}[side]()

    def popen(self, side: str, argv: list[str], **kw) -> subprocess.Popen:
        """Start argv inside a side's namespace; stopped by PID when the link closes."""
        p = registry.spawn(self.prefix(side) + list(argv), f"{side} side of a link", **kw)
        self._procs.append(p)
        return p

    def snmp(self, side: str) -> dict[str, int]:
        """The side's kernel TCP/UDP counters (/proc/net/snmp as seen inside its namespace), e.g.
        ``Tcp.RetransSegs``; for loopback, the current namespace's."""
        p = subprocess.run(self.prefix(side) + ["cat", "/proc/net/snmp"], capture_output=True, text=True, timeout=10,
                           cwd="/")  # rootless: nsenter --wd=. needs a readable cwd
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

    def socket(self, side: str, family: int = socket.AF_INET, type: int = socket.SOCK_STREAM,
               proto: int = 0) -> socket.socket:
        """A socket created inside a side's namespace (it stays there whatever thread uses it)."""
        if self.loopback:
            return socket.socket(family, type, proto)
        if self.rootless:
            if not self.holders:
                raise LinkError("the link is not open")
            return self.holders[{"dev": 0, "srv": 1}[side]].socket(family, type, proto)
        ns = {"dev": self.dev_ns, "srv": self.srv_ns}[side]
        return netns_socket(ns, family, type, proto)


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


# Kernel receive timestamps, to time what crosses a link as ping does (the benchmark's echoes, the
# tests' one-way delays): Linux's SO_TIMESTAMPNS (asm-generic/socket.h), which Python's socket
# module does not name; the stamp comes as a struct timespec on CLOCK_REALTIME.
SO_TIMESTAMPNS = 35


def kernel_rx_ns(ancdata) -> int | None:
    """The kernel's receive time (ns, CLOCK_REALTIME) in a recvmsg() result's ancillary data, from
    a socket with SO_TIMESTAMPNS set; None if it carries none."""
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
            sec, nsec = struct.unpack("ll", data[:16])
            return sec * 1_000_000_000 + nsec
    return None


def netns_socket(ns: str, family: int = socket.AF_INET, type: int = socket.SOCK_STREAM,
                 proto: int = 0) -> socket.socket:
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
                return socket.socket(family, type, proto)
            finally:
                if _libc.setns(own, CLONE_NEWNET) != 0:
                    raise LinkError(f"cannot return from namespace {ns}: {os.strerror(ctypes.get_errno())}")
        finally:
            os.close(own)
            os.close(target)
