"""Holder of a rootless link's namespaces (lab/netns.Link without root); run as a script on the
standard library and the same source tree's ``secperf.core.wait``.

    python -I nsholder.py --parent PID [--join-userns PATH]   # fd 0: a SOCK_SEQPACKET control socket
    python -I nsholder.py --probe                              # may this user make user namespaces? (3: no)

Without --join-userns it creates a user namespace (the caller's uid and gid mapped to 0, as
``unshare --map-root-user``) with a network and a mount namespace inside; with it, it joins that
user namespace and creates another network and mount namespace there. Either way the network
namespace comes up with loopback up and IPv6 off, and the mount namespace gets its own /sys, so
/sys/class/net shows the namespace's devices (as with ``ip netns exec``). Processes enter with
``nsenter --target PID --user --net --mount --preserve-credentials``; the namespaces
exist as long as this process (or anything inside) does.

Protocol on fd 0: the holder first sends ``ok`` or ``err MESSAGE``; then each request
``socket FAMILY TYPE PROTO`` is answered with ``ok`` and the new socket's fd (SCM_RIGHTS), created
here inside the namespace, or ``err ERRNO MESSAGE``. A Python thread cannot setns() into a user
namespace (the process is multithreaded), so sockets for Link.socket() are made by this
single-threaded process instead.

It exits on end of file (the owner closed the socket or died), on SIGTERM/SIGINT/SIGHUP, and when
its parent dies (PR_SET_PDEATHSIG); before exiting it stops every other process still inside its
network namespace (SIGTERM, then SIGKILL after a second), so nothing outlives the link.
"""

import ctypes
import fcntl
import os
import select
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable

if __package__:
    from ..core.wait import wait_until
else:  # run as a script (python -I .../secperf/lab/nsholder.py): this tree's package, not an installed one
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from secperf.core.wait import wait_until

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 0x4000, 1 << 18
PR_SET_PDEATHSIG = 1
PROBE_REFUSED = 3  # --probe: the kernel refused the user namespace (other failures exit 1)
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1

libc = ctypes.CDLL(None, use_errno=True)


class Failed(Exception):
    pass


def _call(fn: Callable[..., int], *args: object, what: str) -> None:
    if fn(*args) != 0:
        e = ctypes.get_errno()
        raise Failed(f"{what}: {os.strerror(e)} (errno {e})")


def make_userns_netns() -> None:
    """unshare a user namespace (uid/gid -> 0), a network and a mount namespace; map the ids."""
    uid, gid = os.getuid(), os.getgid()
    _call(libc.unshare, CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS, what="unshare(CLONE_NEWUSER|CLONE_NEWNET)")
    try:
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write(f"0 {uid} 1")
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"0 {gid} 1")
    except OSError as exc:
        raise Failed(f"cannot map uid {uid} into the new user namespace: {exc.strerror} (errno {exc.errno})") from None


def join_userns_make_netns(userns: str) -> None:
    fd = os.open(userns, os.O_RDONLY | os.O_CLOEXEC)
    try:
        _call(libc.setns, fd, CLONE_NEWUSER, what=f"setns({userns})")
    finally:
        os.close(fd)
    _call(libc.unshare, CLONE_NEWNET | CLONE_NEWNS, what="unshare(CLONE_NEWNET)")


def own_sysfs() -> None:
    """A /sys of this network namespace (best effort: without it /sys/class/net shows the host's)."""
    libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None)
    libc.mount(b"sysfs", b"/sys", b"sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)


def net_defaults() -> None:
    """Loopback up; IPv6 off (best effort, as the root path's sysctl)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sH22x", fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sH22x", b"lo", 0)))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))
    for conf in ("all", "default"):
        try:
            with open(f"/proc/sys/net/ipv6/conf/{conf}/disable_ipv6", "w") as f:
                f.write("1")
        except OSError:
            pass


def netns_pids(ident: str) -> list[int]:
    """Processes (those this user may inspect) whose network namespace is `ident` (``net:[inode]``,
    as /proc/PID/ns/net reads). Also lab/netns's, for a rootless Link's close(). Read from /proc by
    hand: psutil has no view of a process's namespaces."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.readlink(f"/proc/{d}/ns/net") == ident:
                    out.append(int(d))
            except OSError:
                pass
    return out


def stop_others(quiet_scans: int = 3, limit_s: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after a second, to every other process in this network namespace,
    rescanning until `quiet_scans` scans in a row (50 ms apart) find none: a process that was still
    entering (nsenter between opening our namespace and joining it) is caught by a later scan."""
    ident = os.readlink("/proc/self/ns/net")
    me = os.getpid()
    first_seen: dict[int, float] = {}
    quiet = 0

    def scan_quiet() -> bool:
        nonlocal quiet
        pids = [p for p in netns_pids(ident) if p != me]
        quiet = 0 if pids else quiet + 1
        now = time.monotonic()
        for p in pids:
            sig = signal.SIGKILL if now - first_seen.setdefault(p, now) > 1.0 else signal.SIGTERM
            try:
                os.kill(p, sig)
            except OSError:
                pass
        return quiet >= quiet_scans

    wait_until(scan_quiet, limit_s, interval_s=0.05)


def serve(ctl: socket.socket, wake: socket.socket) -> None:
    """Answer requests until end of file on `ctl` or a signal (a byte on `wake`)."""
    while True:
        readable, _, _ = select.select([ctl, wake], [], [])
        if wake in readable:
            return
        req = ctl.recv(256)
        if not req:
            return
        parts = req.decode(errors="replace").split()
        if len(parts) == 4 and parts[0] == "socket":
            try:
                s = socket.socket(int(parts[1]), int(parts[2]), int(parts[3]))
            except OSError as exc:
                ctl.send(f"err {exc.errno} {exc.strerror}".encode())
                continue
            try:
                socket.send_fds(ctl, [b"ok"], [s.fileno()])
            finally:
                s.close()
        else:
            ctl.send(b"err 22 unknown request")


def main(argv: list[str]) -> int:
    if argv == ["--probe"]:
        try:
            make_userns_netns()
        except Failed as exc:
            print(exc, file=sys.stderr)
            return PROBE_REFUSED
        return 0
    args = dict(zip(argv[::2], argv[1::2]))
    parent = int(args.get("--parent", "0"))
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if parent and os.getppid() != parent:
        return 1  # the owner died before we could watch it
    ctl = socket.socket(fileno=0)
    try:
        if "--join-userns" in args:
            join_userns_make_netns(args["--join-userns"])
        else:
            make_userns_netns()
        own_sysfs()
        net_defaults()
    except (Failed, OSError) as exc:
        ctl.send(f"err {exc}".encode())
        return 1

    # Signals only wake the loop (a byte on a socket pair); the handler never raises, so a signal
    # arriving together with end of file (the owner died: PR_SET_PDEATHSIG and EOF at once) cannot
    # cut the clean-up short
    wake_r, wake_w = socket.socketpair()
    wake_w.setblocking(False)
    signal.set_wakeup_fd(wake_w.fileno(), warn_on_full_buffer=False)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda _sig, _frm: None)
    try:
        ctl.send(b"ok")
        serve(ctl, wake_r)
    except OSError:
        pass
    stop_others()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
