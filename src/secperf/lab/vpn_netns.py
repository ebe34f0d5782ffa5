"""The VPN lab's namespaces: a pair secperf creates, joined by a veth pair (NetnsPair), or an
emulated link's two namespaces (LinkNamespaces); a ping across them; sweeping the pairs a dead
owner left behind. Also the VPN lab's errors."""

from __future__ import annotations

import atexit
import itertools
import math
import os
import re
import subprocess

from ..core.errors import InputError, MeasurementError
from . import registry
from .netns import Link, kill_pids, list_namespaces, namespace_pids

PREFIX = "secperf-vpn-"
_NAME_RE = re.compile(r"^secperf-vpn-(\d+)-(\d+)-(srv|dev)$")
VETH_SRV, VETH_DEV = "vpn-srv", "vpn-dev"
LINK_SRV_IP, LINK_DEV_IP, LINK_PREFIX = "10.200.0.1", "10.200.0.2", 30
TUN_NET, TUN_MASK, TUN_SERVER_IP = "10.201.0.0", "255.255.255.0", "10.201.0.1"
_IP_TIMEOUT_S = 10

_LIVE_NS: set[NetnsPair] = set()


class VpnError(MeasurementError):
    """The VPN lab could not be set up (not root, ip failed, openvpn missing); the message says which."""


class VpnConfigError(InputError):
    """A VPN server, client or key asked for in a way that cannot run (transport, key type, a path
    or id that cannot go into OpenVPN's config, a PIN file others can read); the message says which."""


def _teardown_all() -> None:
    for ns in list(_LIVE_NS):
        ns.teardown()


atexit.register(_teardown_all)


def require_root() -> None:
    if os.geteuid() != 0:
        raise VpnError("the OpenVPN lab needs root (network namespaces, veth and tun devices)")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        r = subprocess.run(
            ["ip", *args], capture_output=True, text=True, timeout=_IP_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        raise VpnError(f"`ip {' '.join(args)}` did not finish within {_IP_TIMEOUT_S} s") from None
    except FileNotFoundError:
        raise VpnError("the `ip` command is missing: install iproute2") from None
    if check and r.returncode != 0:
        raise VpnError(f"`ip {' '.join(args)}` failed (exit {r.returncode}): {r.stderr.strip()[-300:]}")
    return r


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale() -> list[str]:
    """Delete ``secperf-vpn-`` namespaces whose owner (the pid in the name) is no longer alive,
    stopping by PID any process still inside them (an OpenVPN left by the dead owner). Other
    namespaces are never touched. Returns the names deleted."""
    deleted = []
    for name in list_namespaces():
        m = _NAME_RE.match(name)
        if not m or _pid_alive(int(m.group(1))):
            continue
        kill_pids(namespace_pids(name))
        if _ip("netns", "del", name, check=False).returncode == 0:
            deleted.append(name)
    return deleted


class NetnsPair:
    """Two network namespaces (server, device) joined by a veth pair with a private /30.

    Use as a context manager; teardown stops any process left inside (by PID) and deletes both
    namespaces, also on KeyboardInterrupt and at interpreter exit."""

    _counter = itertools.count()

    def __init__(self) -> None:
        self.base = f"{PREFIX}{os.getpid()}-{next(self._counter)}"
        self.srv, self.dev = f"{self.base}-srv", f"{self.base}-dev"
        self.server_ip, self.device_ip = LINK_SRV_IP, LINK_DEV_IP
        self._created: list[str] = []

    def __enter__(self) -> NetnsPair:
        try:
            self.create()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.teardown()

    def create(self) -> NetnsPair:
        require_root()
        sweep_stale()
        _LIVE_NS.add(self)
        for name in (self.srv, self.dev):
            registry.current().add_namespace(name, "vpn")  # listed before it exists: never missed
            _ip("netns", "add", name)
            self._created.append(name)
        # created directly inside the namespaces: no name is ever taken in the host namespace
        _ip("link", "add", VETH_SRV, "netns", self.srv, "type", "veth", "peer", "name", VETH_DEV, "netns", self.dev)
        for ns, dev, addr in ((self.srv, VETH_SRV, self.server_ip), (self.dev, VETH_DEV, self.device_ip)):
            _ip("-n", ns, "addr", "add", f"{addr}/{LINK_PREFIX}", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        return self

    def exec_argv(self, side: str, argv: list[str]) -> list[str]:
        """``ip netns exec NS argv``: ip execs the command, so the child's PID is the command's own."""
        _check_side(side)
        return ["ip", "netns", "exec", self.srv if side == "srv" else self.dev, *argv]

    def ping(self, target: str = TUN_SERVER_IP, timeout_s: float = 2.0) -> tuple[bool, float | None]:
        """One ICMP echo from the device namespace; (ok, rtt in µs from ping's output)."""
        return ping_from(self, target, timeout_s)

    def teardown(self) -> None:
        _LIVE_NS.discard(self)
        created, self._created = self._created, []
        for name in created:
            # only processes inside a namespace this object created: ours (an OpenVPN it started)
            try:
                kill_pids(namespace_pids(name))
            except VpnError:
                pass
        for name in created:
            try:
                _ip("netns", "del", name, check=False)
            except VpnError:
                pass
            registry.current().remove_namespace(name)


def _check_side(side: str) -> None:
    if side not in ("srv", "dev"):
        raise VpnConfigError(f"namespace side {side!r} must be 'srv' or 'dev'")


def ping_from(
    ns: NetnsPair | LinkNamespaces, target: str = TUN_SERVER_IP, timeout_s: float = 2.0
) -> tuple[bool, float | None]:
    """One ICMP echo from the device side of ``ns`` (a NetnsPair or a LinkNamespaces) to ``target``;
    (ok, rtt in µs from ping's output). ``-W`` is whole seconds (rounded up, at least 1)."""
    wait_s = max(1, math.ceil(timeout_s))
    try:
        r = subprocess.run(
            ns.exec_argv("dev", ["ping", "-n", "-c", "1", "-W", str(wait_s), target]),
            capture_output=True,
            text=True,
            timeout=wait_s + 3,
            stdin=subprocess.DEVNULL,
            cwd="/",
        )
    except subprocess.TimeoutExpired:
        return False, None
    m = re.search(r"time=([\d.]+) ms", r.stdout)
    return r.returncode == 0, (float(m.group(1)) * 1000 if m else None)


class LinkNamespaces:
    """The NetnsPair interface (``exec_argv``, ``server_ip``, ``device_ip``, ``srv``, ``dev``,
    ``ping``) over an open emulated link (lab/netns.Link): OpenVPN's server runs in the link's server
    namespace bound to ``link.server_addr``, its client in the device namespace, and every packet
    between them (the control channel, the tunnel's data channel, the tunnel ping) crosses the
    link's relay. The Link owns the namespaces: this adapter creates and deletes nothing, and its
    ``with`` block leaves them to the Link's own ``close()``."""

    def __init__(self, link: Link | None) -> None:
        if link is None or link.loopback:
            raise VpnConfigError("LinkNamespaces needs an emulated link (for loopback use NetnsPair)")
        if link.dev_ns is None or link.srv_ns is None:
            raise VpnError("the emulated link is not open")
        self.link = link
        self.srv, self.dev = str(link.srv_ns), str(link.dev_ns)
        self.server_ip, self.device_ip = link.server_addr, link.dev_addr

    def __enter__(self) -> LinkNamespaces:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def exec_argv(self, side: str, argv: list[str]) -> list[str]:
        _check_side(side)
        return self.link.prefix(side) + list(argv)

    def ping(self, target: str = TUN_SERVER_IP, timeout_s: float = 2.0) -> tuple[bool, float | None]:
        """One ICMP echo from the device namespace over the link; (ok, rtt in µs)."""
        return ping_from(self, target, timeout_s)
