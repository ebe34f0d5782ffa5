"""Several network namespaces on one bridge: a small network of "machines" on this host, each with
its own address, for cluster nodes and a target server that must not share loopback (root only).

    with Fabric(["head", "n1", "n2", "target"]) as fab:
        subprocess.run(fab.exec_prefix("n1") + ["ping", "-c1", fab.addr("target")])
        fab.cut("n2", "target")       # n2 can no longer reach the target's address (a blackhole route)

Topology: a hub namespace ``secperf-fb-<pid>-<seq>-hub`` holding a bridge ``br0``; per member a
namespace ``secperf-fb-<pid>-<seq>-<member>`` with loopback up and ``eth0``, the end of a veth pair
whose other end is a port of the bridge; member k gets 10.78.<seq>.<k+1>/24. Nothing is added to
the namespace secperf runs in: every packet stays inside these namespaces, on this machine.

Teardown: `close()` (also from ``__exit__`` and at exit) stops every process inside each namespace
by PID (``ip netns pids``), then deletes the namespaces (the veth pairs and the bridge go with them).
Each namespace is listed in the run's registry before it exists, so when secperf is killed (kill -9)
its watchdog kills what runs inside and deletes them (lab/reaper.remove_namespaces)."""

from __future__ import annotations

import atexit
import itertools
import os
import re
import socket
import subprocess
from typing import Any, TypeVar

from . import registry
from .netns_check import LinkError
from .netns_owners import ip, kill_pids, namespace_pids
from .netns_socket import netns_socket
from .services import Service

_S = TypeVar("_S", bound=Service)

PREFIX = "secperf-fb-"
NAME_RE = re.compile(r"^secperf-fb-(\d+)-(\d+)-([a-z0-9]+)$")
MEMBER_RE = re.compile(r"^[a-z][a-z0-9]{0,11}$")
_SEQ = itertools.count(1)
_LIVE: set[Fabric] = set()


def _close_all() -> None:
    for f in list(_LIVE):
        f.close()


atexit.register(_close_all)


class Fabric:
    def __init__(self, members: list[str]):
        if os.geteuid() != 0:
            raise LinkError("a namespace fabric needs root (ip netns, veth, bridge)")
        bad = [m for m in members if not MEMBER_RE.match(m) or m == "hub"]
        if bad or len(set(members)) != len(members) or not 1 <= len(members) <= 250:
            raise LinkError(f"fabric members {members}: give distinct short names (a-z, 0-9), not 'hub'")
        self.members = list(members)
        self.seq = next(_SEQ) % 250 + 1
        self.base = f"{PREFIX}{os.getpid()}-{self.seq}"
        self.created: list[str] = []
        self.cuts: list[tuple[str, str]] = []

    def ns(self, member: str) -> str:
        return f"{self.base}-{member}"

    def addr(self, member: str) -> str:
        return f"10.78.{self.seq}.{self.members.index(member) + 1}"

    def exec_prefix(self, member: str) -> list[str]:
        return ["ip", "netns", "exec", self.ns(member)]

    def __enter__(self) -> Fabric:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _add(self, name: str) -> None:
        registry.current().add_namespace(name, "fabric")  # listed before it exists: never missed
        ip("netns", "add", name)
        self.created.append(name)
        ip("-n", name, "link", "set", "lo", "up")

    def open(self) -> Fabric:
        _LIVE.add(self)
        try:
            hub = self.ns("hub")
            self._add(hub)
            ip("-n", hub, "link", "add", "br0", "type", "bridge")
            ip("-n", hub, "link", "set", "br0", "up")
            for i, m in enumerate(self.members):
                ns = self.ns(m)
                self._add(ns)
                ip("-n", hub, "link", "add", f"v{i}", "type", "veth", "peer", "name", "eth0", "netns", ns)
                ip("-n", hub, "link", "set", f"v{i}", "master", "br0", "up")
                ip("-n", ns, "addr", "add", f"{self.addr(m)}/24", "dev", "eth0")
                ip("-n", ns, "link", "set", "eth0", "up")
        except BaseException:
            self.close()
            raise
        return self

    def cut(self, member: str, peer: str) -> None:
        """`member` can no longer reach `peer`'s address (a blackhole route in member's namespace);
        everything else on the fabric still reaches both."""
        ip("-n", self.ns(member), "route", "add", "blackhole", f"{self.addr(peer)}/32")
        self.cuts.append((member, peer))

    def place(self, service: _S, member: str) -> _S:
        """A lab service (lab/services.py) run inside a member's namespace, bound to its address."""

        ns = self.ns(member)
        return service.place(
            self.exec_prefix(member), self.addr(member), lambda kind=socket.SOCK_STREAM: netns_socket(ns, type=kind)
        )

    def pids(self) -> dict[str, list[int]]:
        return {m: namespace_pids(self.ns(m)) for m in self.members}

    def close(self) -> None:
        for name in reversed(self.created):
            kill_pids(namespace_pids(name))
        for name in reversed(self.created):
            ip("netns", "del", name, check=False)
            registry.current().remove_namespace(name)
        self.created = []
        _LIVE.discard(self)


def run_in(
    fab: Fabric, member: str, argv: list[str], what: str, timeout: float = 120, **kw: Any
) -> subprocess.CompletedProcess[str]:
    """A command inside a member's namespace, known to the run's registry (its PID while it runs)."""
    return registry.run(fab.exec_prefix(member) + argv, what, timeout=timeout, capture_output=True, text=True, **kw)
