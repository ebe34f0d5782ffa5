"""Atomic, isolated build directories for what is built at first use under $SECPERF_HOME/device/build.

A build never writes into the directory a later run reuses. It goes into a fresh directory beside
its final place, named for that place and for the building process (.NAME.tmp-PID-STARTTICKS); only
when the build succeeded is a stamp written into it (last) and the directory renamed into place.
A directory is reused only when its stamp is there, so a build killed or timed out (or one left by
a version without stamps) is never reused: the next build of it starts from nothing. Leftover
staging directories are removed by a later build holding the build lock, and only when the process
named in their name is gone (never one another live process is building).

Library objects are cached apart from the clients (one directory per library, version, configuration
and core flags): a build that finds its library complete works on a copy of it, so a make that
recompiles an object (a touched header) never changes a directory others reuse.

The build commands run in a process group of their own, killed whole on a time-out or an error:
a compiler must not outlive its make and go on writing objects after the build was given up.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from ..lab import reaper, registry

STAMP = ".secperf-build-complete"
_TMP = re.compile(r"^\.(?P<name>.+)\.tmp-(?P<pid>\d+)-(?P<ticks>\d+)$")


def is_complete(d: Path) -> bool:
    """The directory holds a finished build (its stamp, written last, is there)."""
    return (d / STAMP).is_file()


def _ticks(pid: int) -> int | None:
    return reaper.start_ticks(pid)


def staging_dir(final: Path) -> Path:
    """This process's staging directory for `final` (the same path for every call of one process)."""
    pid = os.getpid()
    return final.parent / f".{final.name}.tmp-{pid}-{_ticks(pid) or 0}"


def remove_stale(root: Path) -> list[Path]:
    """Remove the staging directories under root whose building process is gone (PID dead, or reused
    by another process); a live builder's are left alone. Call it holding the build lock."""
    removed = []
    for p in sorted(root.glob(".*.tmp-*")) if root.is_dir() else ():
        m = _TMP.match(p.name)
        if m is None or not p.is_dir():
            continue
        pid, ticks = int(m.group("pid")), int(m.group("ticks"))
        if pid == os.getpid() or _ticks(pid) == ticks:
            continue  # this process's own (reset by stage) or a live builder's
        shutil.rmtree(p, ignore_errors=True)
        removed.append(p)
    return removed


def stage(final: Path, seed: Path | None = None) -> Path:
    """A fresh, empty staging directory for final; a copy of seed's files when seed is a complete
    build (the library objects a new client links: make finds them up to date)."""
    tmp = staging_dir(final)
    shutil.rmtree(tmp, ignore_errors=True)
    if seed is not None and is_complete(seed):
        shutil.copytree(seed, tmp, symlinks=True, ignore=shutil.ignore_patterns(STAMP))
    else:
        tmp.mkdir(parents=True)
    return tmp


def invalidate(d: Path) -> None:
    """Take the stamp away (under the build lock): the directory is rebuilt and replaced."""
    (d / STAMP).unlink(missing_ok=True)


def discard(*tmps: Path | None) -> None:
    for t in tmps:
        if t is not None:
            shutil.rmtree(t, ignore_errors=True)


def publish(tmp: Path, final: Path, paths: dict[Path, Path] | None = None) -> None:
    """Stamp the finished staging directory and rename it into place. paths: staging paths the link
    maps name (this directory's, the library's) -> their final paths, rewritten in every *.map. When
    final is complete already (built by another process meanwhile), the staging copy is dropped; an
    incomplete final (a build killed before stamps or a half-built one) is replaced."""
    for mp in tmp.rglob("*.map") if paths else ():
        text = mp.read_text(errors="surrogateescape")
        for old, new in paths.items():  # type: ignore[union-attr]
            text = text.replace(str(old), str(new))
        mp.write_text(text, errors="surrogateescape")
    (tmp / STAMP).write_text(json.dumps({"pid": os.getpid(), "finished": time.time()}) + "\n")
    if is_complete(final):
        discard(tmp)
        return
    if final.exists() or final.is_symlink():
        if final.is_dir() and not final.is_symlink():
            shutil.rmtree(final)
        else:
            final.unlink()
    os.rename(tmp, final)


def run_group(argv: list[str], what: str, timeout: float, cwd: Path | None = None) -> subprocess.CompletedProcess[Any]:
    """registry.run for a build: the command leads a process group of its own (make's compilers are
    in it), and the whole group is killed on a time-out (registry.ChildTimeout) or an error, not make
    alone."""
    return registry.run(argv, what, timeout, capture_output=True, text=True, cwd=cwd, start_new_session=True)
