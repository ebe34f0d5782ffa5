"""stdout and stderr while a command runs: the streams the CLI guards and the lines it says.

Decision (standard output is an output): stdout and stderr are GuardedStreams for the length of a
command. A full (`> /dev/full`: ENOSPC), broken (EPIPE) or closed (`>&-`) stream never raises a
traceback: the command ends as it would (a measurement's Result on disk stays whole), then one line
on the stream that still works names the stream and where the Result is kept, and the exit code is
2, or the command's own non-zero code. A module of its own, apart from output.py (which shows
Results through report/): cli.main installs these before it knows the command, so they import
nothing of secperf.app."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, TextIO, cast

from ..core.errors import EXIT_BAD_INPUT


class GuardedStream:
    """sys.stdout or sys.stderr while a command runs (cli.main installs it): a stream that is full
    (`> /dev/full`: ENOSPC), whose reader left (EPIPE) or that was closed at start (`>&-`: None) never
    raises into the command. The first failure is recorded (`failed`: why), the descriptor is pointed at
    /dev/null so no later flush (the interpreter's last one included) fails again, and further writes are
    dropped; the CLI ends the command with one line on the other stream (stream_failures). Decision: a
    failing stream does not stop a measurement half-way (its Result on disk stays whole); the command
    ends as it would, then exits 2."""

    def __init__(self, name: str, raw: IO[str] | None) -> None:
        self.name, self.raw, self.failed = name, raw, ("is closed" if raw is None else None)

    def _fail(self, exc: BaseException) -> None:
        if self.failed is None:
            self.failed = f"cannot be written ({getattr(exc, 'strerror', None) or exc})"
        with contextlib.suppress(Exception):
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                if self.raw is not None:
                    os.dup2(null, self.raw.fileno())
            finally:  # also when the stream has no descriptor (fileno raises): the /dev/null one is not kept
                os.close(null)

    def write(self, text: str) -> int:
        if self.failed is None and self.raw is not None:  # a closed stream (None) has failed from the start
            try:
                return self.raw.write(text)
            except (OSError, ValueError) as exc:  # ValueError: "I/O operation on closed file"
                self._fail(exc)
        return len(text)

    def flush(self) -> None:
        if self.failed is None and self.raw is not None:
            try:
                self.raw.flush()
            except (OSError, ValueError) as exc:
                self._fail(exc)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def isatty(self) -> bool:
        if self.failed is not None or self.raw is None:
            return False
        try:
            return self.raw.isatty()
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        if self.raw is None:
            raise io.UnsupportedOperation(f"{self.name} is closed")
        return self.raw.fileno()

    def reconfigure(self, **kw: Any) -> None:
        reconfigure = getattr(self.raw, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(**kw)

    @property
    def encoding(self) -> str:
        encoding: str | None = getattr(self.raw, "encoding", None)
        return encoding or "utf-8"

    @property
    def errors(self) -> str:
        errors: str | None = getattr(self.raw, "errors", None)
        return errors or "strict"

    def writable(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)  # a closed stream (None) has none of a file's attributes


@contextlib.contextmanager
def guarded_streams() -> Iterator[tuple[GuardedStream, GuardedStream]]:
    """sys.stdout and sys.stderr as GuardedStreams for the length of a command (restored after: a
    test's capture, a caller's own streams)."""
    saved = sys.stdout, sys.stderr
    out = saved[0] if isinstance(saved[0], GuardedStream) else GuardedStream("stdout", saved[0])
    err = saved[1] if isinstance(saved[1], GuardedStream) else GuardedStream("stderr", saved[1])
    # cast: a GuardedStream is a text stream by its methods (write, flush, fileno, isatty, encoding), not by class
    sys.stdout, sys.stderr = cast(TextIO, out), cast(TextIO, err)
    try:
        yield out, err
    finally:
        out.flush()
        err.flush()
        sys.stdout, sys.stderr = saved


KEPT: list[Path] = []  # where the Result this command shows was written (named when stdout fails)


SAID: list[str] = []  # the lines `say` wrote for this command


def say(line: str) -> None:
    """One line for the user on stderr, or on stdout when stderr is the stream that failed."""
    SAID.append(line)
    for stream in (sys.stderr, sys.stdout):
        if stream is not None and getattr(stream, "failed", None) is None:
            stream.write(line + "\n")
            stream.flush()
            if getattr(stream, "failed", None) is None:
                return


def stream_failures(command: str | None, code: int) -> int:
    """After a command: when stdout or stderr failed, one line saying which and where its Result is kept,
    on the stream that still works, and exit 2 (a command that already failed keeps its own code)."""

    failed = [(s.name, why) for s in (sys.stdout, sys.stderr) if (why := getattr(s, "failed", None)) is not None]
    if not failed:
        return code
    if SAID:  # the command already said why it ends, on the stream that works
        return code or EXIT_BAD_INPUT
    kept = f"; the Result is kept in {KEPT[-1]}" if KEPT else ""
    what = "; ".join(f"{name} {why}" for name, why in failed)
    say(f"secperf{' ' + command if command else ''}: error: {what}: its output was lost{kept}")
    return code or EXIT_BAD_INPUT


def write_stdout(text: str, what: str) -> None:
    """`text` (`what`) on stdout; a full or closed stdout is recorded by its GuardedStream and the CLI
    ends the command with exit 2 naming stdout and where the Result is kept (stream_failures)."""
    out = sys.stdout if isinstance(sys.stdout, GuardedStream) else GuardedStream("stdout", sys.stdout)
    out.write(text)
    out.flush()
