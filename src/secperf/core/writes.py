"""The one way secperf writes a file (atomic_write: a temp file, fsync, rename; named errors), and
who writes a run (owner_stamp: this process's PID and start ticks, so a later run can tell whether
the writer is still alive). The lowest layer of the core: paths, result and store build on it."""

from __future__ import annotations

import errno
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from .errors import OutputError


def process_start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22), or None if
    there is no such process. A PID with the same start time is the same process, not a reused PID.
    Read by hand, not with psutil: its create_time() adds the boot time in wall-clock seconds, which
    moves when the clock is stepped, and this value is compared for equality by later runs."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] == "Z" else int(fields[19])


def owner_stamp() -> dict[str, Any]:
    """Who writes a run: this process, so a later run can tell whether it is still alive."""
    return {"pid": os.getpid(), "start_ticks": process_start_ticks(os.getpid())}


def atomic_write(path: Path, data: str | bytes, mode: int = 0o644, *, what: str | None = None) -> None:
    """The one way secperf writes a file: into a temp file in the same directory, fsync, rename into
    place, so a reader never sees half a file and a failed write (no space, no permission, a name too
    long, a read-only file system) leaves nothing behind and raises OutputError (exit 2) naming the
    file and the reason. `what` is the option that named the file, for the message.

    A path that exists and is not a regular file (/dev/null, /dev/stdout) is written into as it is:
    renaming over it would replace the device with a regular file (as root, `-o /dev/null` once
    turned the machine's /dev/null into one); a FIFO nobody reads is refused, not waited on."""
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    try:
        _write_replacing(path, raw, mode)
    except OSError as exc:
        raise OutputError(
            f"{what + ' ' if what else ''}{path}: cannot write ({_os_reason(exc)}); "
            f"name a file on a writable file system with free space"
        ) from None


def _os_reason(exc: OSError) -> str:
    reasons = {
        errno.ENOSPC: "no space left on the device",
        errno.EDQUOT: "disk quota exceeded",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.EROFS: "read-only file system",
        errno.ENAMETOOLONG: "a name in the path is too long",
        errno.ENOENT: "the directory does not exist",
        errno.ENOTDIR: "a part of the path is not a directory",
        errno.EISDIR: "it is a directory",
        errno.ENXIO: "a FIFO or socket with no reader",
        errno.EFBIG: "file too large",
        errno.EIO: "input/output error",
    }
    return reasons.get(exc.errno or 0, exc.strerror or type(exc).__name__)


def _write_replacing(path: Path, raw: bytes, mode: int) -> None:
    # /dev/stdout redirected to a file is a regular file behind a link in /dev: renaming over it
    # would replace the machine's /dev/stdout link; such paths are written into, like devices
    in_place = str(path).startswith("/dev/") or os.path.realpath(path).startswith("/proc/")
    if path.exists() and (in_place or not path.is_file()):
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        fd = _open_special(path)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        return
    # the temp name stays short: a long (but legal) target name must not make the temp name illegal
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:64]}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


FIFO_READER_WAIT_S = 2.0


def _open_special(path: Path) -> int:
    """Open a device or FIFO for writing without blocking: a FIFO gets FIFO_READER_WAIT_S for its
    reader to appear (ENXIO until then), then the write is refused instead of hanging forever."""

    deadline = time.monotonic() + FIFO_READER_WAIT_S
    while True:
        try:
            return os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.02)
