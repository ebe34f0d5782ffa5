"""Can emulated links be built here? The mode (root or rootless), the TUN device node, the user
namespaces a rootless link needs, the relay; `check()` names what is missing and how to fix it."""

from __future__ import annotations

import errno
import grp
import os
import pwd
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from ..core.errors import SetupError
from ..core.native import find_native

DEFAULT_TUN, TUN_ENV = "/dev/net/tun", "SECPERF_TUN_DEVICE"
HOLDER = Path(__file__).with_name("nsholder.py")


class LinkError(SetupError):
    """The emulated link could not be set up; the message says why and how to fix it."""


def find_netem() -> Path:
    return find_native("secperf-netem", "bin", "SECPERF_NETEM", "native/netem")


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
    problems: list[str | None] = []  # None: that check found nothing
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
            return (
                f"{DEFAULT_TUN} is missing: load the TUN driver (modprobe tun) or create the node "
                f"(mknod {DEFAULT_TUN} c 10 200)"
            )
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
        return (
            f"{path} cannot be opened by {who} although its mode allows it ({perms}): its file system is "
            f"probably mounted nodev; make the node elsewhere and set {TUN_ENV} to it"
        )
    fixes = ["run as root"]
    if path == DEFAULT_TUN:
        fixes.append(f"`chmod 0666 {DEFAULT_TUN}` (Debian's default mode)")
    else:
        fixes.append(f"give {who} read and write access to it (chgrp/chmod)")
    fixes.append(
        f"set {TUN_ENV} to a TUN node {who} can open (as root: mknod DIR/tun c 10 200, then chgrp/chmod "
        f"it; DIR on a file system without nodev)"
    )
    return f"{path} is not accessible to {who} ({perms}): " + ", or ".join(fixes)


def _name(id_: int, db: str) -> str:
    try:
        if db == "pw":
            return pwd.getpwuid(id_).pw_name

        return grp.getgrgid(id_).gr_name
    except KeyError:
        return str(id_)


_USERNS_PROBE: list[str | None] = []


def _userns_problem() -> str | None:
    """Can this user create a user namespace with a network namespace? Tried once per process."""
    if not _USERNS_PROBE:
        argv = holder_argv("--probe")
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


def userns_fix(detail: str, read: Callable[[str], str | None] = _read_sysctl) -> str:
    """The message for a failed user-namespace probe: the setting that forbids it and its fix."""
    fixes = []
    if read("kernel.unprivileged_userns_clone") == "0":
        fixes.append("sysctl -w kernel.unprivileged_userns_clone=1")
    if read("user.max_user_namespaces") == "0":
        fixes.append("sysctl -w user.max_user_namespaces=10000")
    if read("kernel.apparmor_restrict_unprivileged_userns") == "1":
        fixes.append(
            "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile "
            "allowing userns for this Python)"
        )
    if not fixes:  # none of the known switches is off: name them all, and the usual container cause
        fixes.append(
            "check kernel.unprivileged_userns_clone (must be 1 where it exists) and "
            "user.max_user_namespaces (> 0); in a container, its seccomp profile may forbid unshare"
        )
    return f"unprivileged user namespaces are disabled here ({detail}): " + "; ".join(fixes) + "; or run as root"


def holder_argv(*args: str) -> list[str]:
    # -I: the holder is stdlib only and should not pick up the caller's environment or cwd
    return [sys.executable, "-I", str(HOLDER), *args]
