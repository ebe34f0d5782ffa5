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

The parts: whether links can be built here (netns_check), root mode's named namespaces and their
owners (netns_owners), the rootless holders (netns_holder), sockets inside a namespace and kernel
receive stamps (netns_socket). This module builds and tears down the Link.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import queue
import signal
import socket
import subprocess
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.jsonlines import parse_lines
from ..core.paths import private_dir, secperf_home
from ..core.wait import wait_until
from ..inputs import netspec as NS
from . import registry
from .ip_json import Interface, IpOutputError, interfaces
from .netns_check import (
    DEFAULT_TUN,
    HOLDER,
    TUN_ENV,
    LinkError,
    check,
    find_netem,
    holder_argv,
    mode,
    rootless,
    tun_device,
    userns_fix,
)
from .netns_holder import Holder
from .netns_owners import NAME_RE, PREFIX, ip, kill_pids, list_namespaces, namespace_pids, proc_start, sweep_stale
from .netns_socket import CLONE_NEWNET, SO_TIMESTAMPNS, kernel_rx_ns, netns_socket
from .nsholder import netns_pids  # the holder's own scan (it runs stdlib-only, as a script)
from .services import stop_process

__all__ = [
    "CLONE_NEWNET",
    "DEFAULT_TUN",
    "DEV_ADDR",
    "HOLDER",
    "IFNAME",
    "NAME_RE",
    "PREFIX",
    "PREFIX_LEN",
    "SO_TIMESTAMPNS",
    "SRV_ADDR",
    "TUN_ENV",
    "TUN_TXQUEUELEN",
    "Holder",
    "Link",
    "LinkError",
    "LinkPerNetwork",
    "check",
    "find_netem",
    "holder_argv",
    "kernel_rx_ns",
    "kill_pids",
    "list_namespaces",
    "mode",
    "namespace_pids",
    "netns_socket",
    "proc_start",
    "rootless",
    "sweep_stale",
    "tun_device",
    "userns_fix",
]

IFNAME = "sp0"
DEV_ADDR, SRV_ADDR, PREFIX_LEN = "10.77.0.1", "10.77.0.2", 30
TUN_TXQUEUELEN = 4096  # as native/netem/tun.h; rootless, set here over netlink (the relay's ioctl needs root)
_SEQ = itertools.count(1)
_LIVE: set[Link] = set()


def _state_dir() -> Path:
    return private_dir(secperf_home() / "netns")


def _stats_of(msg: dict[str, Any]) -> dict[str, Any]:
    return {k: msg[k] for k in ("up", "down", "elapsed_s", "load_sleeps") if k in msg}


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

    def __init__(
        self, network: str | NS.NetSpec = "loopback", seed: int = 1, poll: str = "adaptive", spin_us: float = 10000.0
    ) -> None:
        self.spec = network if isinstance(network, NS.NetSpec) else NS.parse(network)
        if poll not in ("adaptive", "busy"):
            raise InputError(f"poll must be adaptive or busy, not {poll!r}")
        self.seed, self.poll, self.spin_us = seed, poll, spin_us
        self.loopback = self.spec.loopback
        # the namespaces: names (root) or /proc/PID/ns/net paths of the holders (rootless); None until open
        self.dev_ns: str | None = None
        self.srv_ns: str | None = None
        self.server_addr = "127.0.0.1" if self.loopback else SRV_ADDR
        self.dev_addr = "127.0.0.1" if self.loopback else DEV_ADDR
        self.rootless = rootless()
        # the user servers run as, as their namespace names it, when that differs from secperf's:
        # a rootless link's user namespace maps secperf's user to root (servers that drop privileges
        # when started as root must be told to stay that user)
        self.server_user = "root" if self.rootless and not self.loopback else None
        self.relay: subprocess.Popen[str] | None = None
        self.holders: list[Holder] = []  # rootless: the device's holder, then the server's
        self.final_stats: dict[str, Any] | None = None
        self._lines: queue.Queue[dict[str, Any]] = queue.Queue()  # the relay's JSON lines
        self._procs: list[subprocess.Popen[Any]] = []
        self._created: list[str] = []
        self._stderr_path: Path | None = None

    # -- life cycle --
    def __enter__(self) -> Link:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> Link:
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
        argv = [
            str(find_netem()),
            "relay",
            "--dev-netns",
            self.ns_path("dev"),
            "--srv-netns",
            self.ns_path("srv"),
            "--ifname",
            IFNAME,
            "--seed",
            str(self.seed),
            "--spin-us",
            f"{spin:g}",
            "--up",
            self.spec.up.relay_arg(self.spec.mtu),
            "--down",
            self.spec.down.relay_arg(self.spec.mtu),
            "--tun-device",
            tun_device(),
        ]
        if self.rootless:
            argv += ["--userns", self.holders[0].user_ns]
        self._stderr_path = _state_dir() / f"{base}-relay.log"
        with open(self._stderr_path, "wb") as err:
            self.relay = registry.spawn(
                argv, "link relay", stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True
            )
        threading.Thread(target=self._reader, args=(self.relay,), daemon=True).start()
        ready = self._next_line("ready", 10)
        if ready is None:
            raise LinkError(f"the link relay did not start: {self._relay_err() or 'no ready line within 10 s'}")
        for side, addr in (("dev", DEV_ADDR), ("srv", SRV_ADDR)):
            self._ip(side, "addr", "add", f"{addr}/{PREFIX_LEN}", "dev", IFNAME)
            queue = ("txqueuelen", str(TUN_TXQUEUELEN)) if self.rootless else ()
            self._ip(side, "link", "set", IFNAME, "mtu", str(self.spec.mtu), *queue, "up")
            self._check_built(side, f"{addr}/{PREFIX_LEN}")

    def _check_built(self, side: str, cidr: str) -> None:
        """The side's device read back (`ip -j`): up, with the spec's MTU and the side's address."""
        got = self.interface(side)
        if not got.up or got.mtu != self.spec.mtu or cidr not in got.inet():
            raise LinkError(
                f"the {side} side's {IFNAME} came up as flags {','.join(got.flags)}, mtu {got.mtu}, "
                f"addresses {', '.join(got.inet()) or 'none'}; asked: UP, mtu {self.spec.mtu}, {cidr}"
            )

    def interface(self, side: str) -> Interface:
        """The side's TUN device as the kernel has it now (`ip -j addr show dev sp0` inside the side's
        namespace, read into an ip_json.Interface)."""
        if self.loopback:
            raise LinkError("a loopback link has no device of its own")
        if self.rootless:
            found = interfaces(self.prefix(side), dev=IFNAME)
        else:
            found = interfaces(dev=IFNAME, netns=self._ns(side))
        if len(found) != 1:
            raise IpOutputError(
                f"`ip -j addr show dev {IFNAME}` in the {side} namespace gave {len(found)} entries, not 1"
            )
        return found[0]

    def _make_named_namespaces(self, base: str) -> None:
        """Root: ``ip netns add``, each owned by this process (state file for the sweeper)."""
        dev_ns, srv_ns = f"{base}-dev", f"{base}-srv"
        self.dev_ns, self.srv_ns = dev_ns, srv_ns
        start = proc_start(os.getpid())
        for ns in (dev_ns, srv_ns):
            state = _state_dir() / f"{ns}.json"
            state.write_text(json.dumps({"owner_pid": os.getpid(), "owner_start": start}))
            registry.current().add_namespace(ns, "link", str(state))  # listed before it exists: never missed
            ip("netns", "add", ns)
            self._created.append(ns)
            ip("-n", ns, "link", "set", "lo", "up")
            try:
                subprocess.run(
                    [
                        "ip",
                        "netns",
                        "exec",
                        ns,
                        "sysctl",
                        "-qw",
                        "net.ipv6.conf.all.disable_ipv6=1",
                        "net.ipv6.conf.default.disable_ipv6=1",
                    ],
                    capture_output=True,
                    timeout=10,
                )
            except subprocess.TimeoutExpired:
                raise LinkError(f"turning IPv6 off in the namespace {ns} did not finish within 10 s") from None

    def _make_user_namespaces(self) -> None:
        """Rootless: a holder with a new user namespace and the device's network namespace, then a
        holder joining that user namespace with the server's (each comes up with lo up, IPv6 off)."""
        self.holders.append(Holder())
        self.holders.append(Holder(join_userns=self.holders[0].user_ns))
        self.dev_ns, self.srv_ns = self.holders[0].net_ns, self.holders[1].net_ns

    def ns_path(self, side: str) -> str:
        """The side's network namespace as a path (/run/netns/NAME, or the holder's /proc/PID/ns/net)."""
        ns = self._ns(side)
        return ns if self.rootless else f"/run/netns/{ns}"

    def _ns(self, side: str) -> str:
        ns = {"dev": self.dev_ns, "srv": self.srv_ns}[side]
        if ns is None:
            raise LinkError("the link is not open")
        return ns

    def _ip(self, side: str, *args: str) -> None:
        if not self.rootless:
            ip("-n", self._ns(side), *args)
            return
        try:
            p = subprocess.run(self.prefix(side) + ["ip", *args], capture_output=True, text=True, timeout=10, cwd="/")
        except subprocess.TimeoutExpired:
            raise LinkError(f"`ip {' '.join(args)}` in the {side} namespace did not finish within 10 s") from None
        if p.returncode != 0:
            raise LinkError(f"`ip {' '.join(args)}` in the {side} namespace failed: {p.stderr.strip() or p.returncode}")

    def _relay_err(self) -> str:
        try:
            return self._stderr_path.read_text(errors="replace").strip() if self._stderr_path else ""
        except OSError:
            return ""

    def _reader(self, proc: subprocess.Popen[str]) -> None:
        if proc.stdout is None:  # spawned with stdout=PIPE: never
            return
        for msg in parse_lines(proc.stdout):
            self._lines.put(msg)

    def _next_line(self, kind: str, timeout_s: float, final: bool = False) -> dict[str, Any] | None:
        """The relay's next line of this kind (and final, when asked) within timeout_s; None if none
        comes or the relay has exited with nothing left to read."""

        def take() -> dict[str, Any] | None:
            try:
                msg = self._lines.get(timeout=0.05)
            except queue.Empty:
                return None
            return msg if msg.get("type") == kind and (msg.get("final") or not final) else None

        def relay_gone() -> bool:
            return self.relay is not None and self.relay.poll() is not None and self._lines.empty()

        return wait_until(take, timeout_s, interval_s=0.0, give_up=relay_gone)

    def stats(self) -> dict[str, Any] | None:
        """The relay's counters so far: {"up": {...}, "down": {...}, "elapsed_s": ..., "load_sleeps": ...}
        (load_sleeps: spin windows the relay cut short because tasks waited for a CPU)."""
        if self.loopback or self.relay is None or self.relay.poll() is not None:
            return self.final_stats
        self.relay.send_signal(signal.SIGUSR1)
        msg = self._next_line("stats", 5)
        return _stats_of(msg) if msg else None

    def close(self) -> dict[str, Any] | None:
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
            msg = self._next_line("stats", 1.0, final=True)  # the relay's last word (self.relay is None now)
            if msg:
                self.final_stats = _stats_of(msg)
        for ns in self._created:
            ip("netns", "del", ns, check=False)
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
        return self._prefix(0, "dev")

    def srv_prefix(self) -> list[str]:
        return self._prefix(1, "srv")

    def _prefix(self, i: int, side: str) -> list[str]:
        if self.loopback:
            return []
        if not self.rootless:
            return ["ip", "netns", "exec", self._ns(side)]
        if not self.holders:
            raise LinkError("the link is not open")
        # nsenter execs the command (its PID is the command's); --wd=. keeps the caller's directory,
        # which entering a mount namespace would reset to /
        return [
            "nsenter",
            f"--target={self.holders[i].pid}",
            "--user",
            "--net",
            "--mount",
            "--preserve-credentials",
            "--wd=.",
        ]

    def dev_exec(self, argv: list[str]) -> list[str]:
        return self.dev_prefix() + list(argv)

    def srv_exec(self, argv: list[str]) -> list[str]:
        return self.srv_prefix() + list(argv)

    def prefix(self, side: str) -> list[str]:
        return {"dev": self.dev_prefix, "srv": self.srv_prefix}[side]()

    def popen(self, side: str, argv: list[str], **kw: Any) -> subprocess.Popen[Any]:
        """Start argv inside a side's namespace; stopped by PID when the link closes."""
        p = registry.spawn(self.prefix(side) + list(argv), f"{side} side of a link", **kw)
        self._procs.append(p)
        return p

    def snmp(self, side: str) -> dict[str, int]:
        """The side's kernel TCP/UDP counters (/proc/net/snmp as seen inside its namespace), e.g.
        ``Tcp.RetransSegs``; for loopback, the current namespace's. Read by `cat` inside the side's
        namespace on purpose: /proc/net is per network namespace, and psutil reads the caller's (nor
        does it give the retransmission counters)."""
        try:
            p = subprocess.run(
                self.prefix(side) + ["cat", "/proc/net/snmp"], capture_output=True, text=True, timeout=10, cwd="/"
            )  # rootless: nsenter --wd=. needs a readable cwd
        except subprocess.TimeoutExpired:
            return {}  # counters unread: the callers report none rather than wrong ones
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

    def socket(
        self, side: str, family: int = socket.AF_INET, type: int = socket.SOCK_STREAM, proto: int = 0
    ) -> socket.socket:
        """A socket created inside a side's namespace (it stays there whatever thread uses it)."""
        if self.loopback:
            return socket.socket(family, type, proto)
        if self.rootless:
            if not self.holders:
                raise LinkError("the link is not open")
            return self.holders[{"dev": 0, "srv": 1}[side]].socket(family, type, proto)
        return netns_socket(self._ns(side), family, type, proto)


class LinkPerNetwork:
    """One emulated link at a time for a sequence of measurements: consecutive ones on the same
    --network share a link; a new network closes the old link and opens its own; `close()` (or
    leaving the `with` block, also on errors and interrupts) closes the last. A link that cannot be
    built is returned as its reason, so each measurement over it fails with that reason."""

    def __init__(self, seed: int = 1, specs: Iterable[NS.NetSpec] = ()) -> None:
        self.seed = seed
        # the links the command resolved (app/links.networks), by the name the configurations carry:
        # a link is built from its NetSpec, not parsed again from its name
        self.specs = {s.name: s for s in specs}
        self.link: Link | None = None
        self.network: str | None = None
        self.error: str | None = None

    def get(self, network: str) -> tuple[Link | None, str | None]:
        """(link, None) for an emulated network, (None, None) for loopback, (None, reason) on failure."""
        if network != self.network:
            self.close()
            self.network = network
            if network not in NS.LOOPBACK_NAMES:
                try:
                    self.link = Link(self.specs.get(network, network), seed=self.seed).open()
                except (LinkError, IpOutputError, NS.NetSpecError, OSError) as exc:
                    self.error = str(exc)
        return self.link, self.error

    def close(self) -> None:
        if self.link is not None:
            self.link.close()
        self.link, self.network, self.error = None, None, None

    def __enter__(self) -> LinkPerNetwork:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
