"""`secperf netem`: list link profiles, check what this machine can emulate, sweep stale
namespaces, and run a command over a link."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
from typing import TYPE_CHECKING

from ..core.errors import InputError, MeasurementError
from ..inputs import netspec as NS
from ..lab import netns, registry, vpn
from ..lab.services import wait_listening
from .reporter import Lines, reporter
from .signals import Interrupted, interruptible

if TYPE_CHECKING:
    from ..lab.netns import Link


def list_links() -> str:
    """The link profiles and sweeps with their figures and sources."""
    say = Lines()

    table, sweeps = NS.profile_table(), NS.load_sweeps()
    for name, pr in table.items():
        say(f"{name:14} {pr.spec or '(no emulation)'}\n{'':14} {pr.description}")
        for k, src in pr.sources.items():
            say(f"{'':16}{k}: {src}")
    for name, sw in sweeps.items():
        say(f"sweep {name}: {'; '.join(sw)}")
    return say.text()


def check() -> tuple[bool, str]:
    """Can links be emulated here: (yes or no, what was found)."""
    say = Lines()

    problem = netns.check()
    say(f"mode: {netns.mode()}")
    if problem:
        say(f"emulated links: not available here: {problem}")
        return False, say.text()
    needs = "user and network namespaces, nsenter" if netns.rootless() else "network namespaces"
    say(f"emulated links: ok (TUN device {netns.tun_device()}, {needs}, secperf-netem)")
    return True, say.text()


def sweep() -> str:
    """Delete link namespaces left by dead secperf processes; what was removed."""
    say = Lines()

    if netns.rootless():
        say(
            "mode: rootless (user namespace): links have no named namespaces (they end with their "
            "holder processes); nothing to sweep"
        )
        return say.text()

    removed = netns.sweep_stale() + vpn.sweep_stale()  # link and VPN namespaces of dead owners
    say(f"removed {len(removed)} stale namespace(s)" + (": " + ", ".join(removed) if removed else ""))
    return say.text()


def _start_server(link: Link, server: str, env: dict[str, str], wait_port: int | None, timeout_s: float) -> None:
    """Start the server command in the server namespace and wait until it is ready, so the client's
    first connections are not refused; a clear error if it never is."""

    try:
        argv = shlex.split(server)
        proc = link.popen("srv", argv, env=env, stdin=subprocess.DEVNULL)
    except (OSError, ValueError) as exc:
        raise InputError(f"--server: cannot run {server!r}: {exc}") from None
    ok, what = wait_listening(
        proc,
        timeout_s,
        wait_port,
        link.server_addr,
        None if link.loopback else (lambda kind=socket.SOCK_STREAM, /: link.socket("dev", type=kind)),
    )
    if not ok:
        raise MeasurementError(
            f"--server {server!r} was not ready within {timeout_s:g} s ({what}); the command "
            f"did not run. Check the server command, or name its port with --wait-port and allow "
            f"longer with --wait-timeout"
        )


def run(
    network: str,
    cmd: list[str],
    server: str | None,
    seed: int,
    poll: str,
    stats: bool,
    wait_port: int | None = None,
    wait_timeout_s: float = 10.0,
) -> int:
    """Run `cmd` in the device namespace of a link (and `server` in its server namespace, waited for
    until it is ready: `wait_port` accepts TCP, else it listens on some port); the exit code is the
    command's; on a signal everything started here is stopped by PID."""

    if not cmd:
        raise InputError("netem run: give the command after --, e.g. secperf netem run lte -- ping -c 3 10.77.0.2")
    if wait_port is not None and not (server and 0 < wait_port < 65536):
        raise InputError("--wait-port: " + ("a TCP port between 1 and 65535" if server else "needs --server CMD"))
    if not (0 < wait_timeout_s <= 3600):
        raise InputError(f"--wait-timeout {wait_timeout_s:g}: give seconds in (0, 3600]")
    try:
        spec = NS.parse(network)
    except NS.NetSpecError as exc:
        raise InputError(f"network: {exc}") from None

    registry.start()
    child = None
    try:
        with interruptible(), netns.Link(spec, seed=seed, poll=poll) as link:
            env = {**os.environ, "SECPERF_SERVER_ADDR": link.server_addr, "SECPERF_DEVICE_ADDR": link.dev_addr}
            if server:
                _start_server(link, server, env, wait_port, wait_timeout_s)
            try:
                child = registry.spawn(link.dev_exec(cmd), "netem run command", env=env)
            except OSError as exc:
                raise InputError(f"netem run: cannot run {cmd[0]!r}: {exc}") from None
            rc = child.wait()
            child = None
        if stats and link.final_stats:
            reporter().note(json.dumps(link.final_stats))
        return rc
    except Interrupted as sig:
        return sig.exit_code
    finally:
        if child is not None and child.poll() is None:
            child.terminate()
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
