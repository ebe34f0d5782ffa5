"""Interruption: Ctrl-C (SIGINT) and SIGTERM end a run cleanly. Both raise `Interrupted` inside
the measuring loop so every `with` block (servers, links, tokens) unwinds and the partial Result is
saved; the exit code follows the shell convention, 128 + the signal number (130, 143)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

from ..core.errors import EXIT_SIGINT, EXIT_SIGTERM
from ..core.store import created_runs

if TYPE_CHECKING:
    from ..core.result_schema import Result


class Interrupted(KeyboardInterrupt):
    """The run was interrupted by a signal; `exit_code` is 130 (SIGINT) or 143 (SIGTERM)."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.exit_code = EXIT_SIGTERM if signum == signal.SIGTERM else EXIT_SIGINT
        self.result: Result | None = None  # the partial Result, set by the runner that was interrupted


def _raise(signum: int, _frame: FrameType | None) -> NoReturn:
    raise Interrupted(signum)


@contextmanager
def interruptible() -> Iterator[None]:
    """Turn SIGINT and SIGTERM into `Interrupted` for the duration of the block. A plain
    KeyboardInterrupt raised before the handler was installed is treated as SIGINT."""
    old = {s: signal.signal(s, _raise) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    except Interrupted:
        raise
    except KeyboardInterrupt:
        raise Interrupted(signal.SIGINT) from None
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextmanager
def on_sigterm_raise() -> Iterator[None]:
    """SIGTERM raises `Interrupted` for the whole command (the default ended the process without a
    word: `whatif` killed with SIGTERM wrote nothing and said nothing). Only in the main thread."""

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def interruption_note(exc: BaseException) -> tuple[int, str]:
    """Exit code and one line for an interruption that reached the CLI: which signal, and whether
    a partial Result exists (no run directory yet means nothing was kept, and it says so)."""

    signum = getattr(exc, "signum", signal.SIGINT)
    code = EXIT_SIGTERM if signum == signal.SIGTERM else EXIT_SIGINT
    name = signal.Signals(signum).name
    runs = [r for r in created_runs() if (r / "result.json").exists()]
    if runs:
        return code, f"interrupted ({name}); the partial result is in {runs[-1] / 'result.json'}"
    return code, f"interrupted ({name}) before any result was written; nothing was kept"
