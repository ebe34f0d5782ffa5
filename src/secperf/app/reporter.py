"""What the app says while it works (notes, a status line, progress bars), and who hears it.

Decision: the app never prints. Its finished output is what it returns (a Result, or the data of a
listing) and the CLI shows that; what it says *while* working goes to the current Reporter,
`reporter()`. The default Reporter says nothing, so the library used without the CLI writes nothing
to the terminal; the CLI installs its terminal Reporter (subcommands/output.TerminalReporter: notes
on stderr, rich progress bars) for the length of a command with `using(...)`. A test or another
front end installs its own (e.g. one that collects the notes)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator


class Reporter:
    """The silent reporter; the methods a terminal (or any other) reporter overrides."""

    def note(self, text: str) -> None:
        """One line for the person running the command (a skipped row, a default applied)."""

    def line(self, text: str) -> None:
        """A line of the command's own output produced while it works (`secperf device build`
        describes each build as it is done): stdout in the CLI."""

    def status(self, text: str) -> None:
        """A line announcing a step (rich markup allowed: "[bold]secperf crypto[/bold]: 3 series")."""

    @contextlib.contextmanager
    def progress(self, total: int, label: str, quiet: bool = False) -> Iterator[Callable[..., None]]:
        """A progress bar over `total` items; yields update(description=None, advance=0)."""
        yield lambda description=None, advance=0: None


# one per process, not a context variable: notes said from a measuring thread reach it too
_CURRENT: list[Reporter] = [Reporter()]


def reporter() -> Reporter:
    """The reporter of the command running now (the silent one when no front end installed one)."""
    return _CURRENT[-1]


@contextlib.contextmanager
def using(r: Reporter) -> Iterator[Reporter]:
    """Install `r` for the length of the block."""
    _CURRENT.append(r)
    try:
        yield r
    finally:
        _CURRENT.remove(r)


class Lines:
    """The text of a listing, built line by line (`say(...)` takes what print would) and returned
    by the app for the CLI to write: `secperf netem list`, `device list`, `clean`, ..."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def __call__(self, *values: object, sep: str = " ", end: str = "\n") -> None:
        self.parts.append(sep.join(str(v) for v in values) + end)

    def text(self) -> str:
        return "".join(self.parts)
