"""Rows secperf derives itself (issue 42: errors speak the user's words). A combination secperf built from
the user's input (plan --verify's rows, the device-count rows a what-if or a plan needs, the handshakes a
system file implies) that secperf's own checks then refuse is secperf's bug, not bad input: the InputError
would blame options the user never gave. One wrapper turns it into an InternalError (exit 1, "internal:
...", naming the derived row), and, when a Result is being written, marks the partial Result
`internal-error` (keeping what was measured) before raising.

    with derived("plan --verify derived the row 'x' of ...", doc, run):
        ...
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from . import result as R
from .errors import InputError, InternalError

if TYPE_CHECKING:
    from .result_schema import Result
    from .store import Run


def mark(doc: Result, run: Run, check: str, problem: str) -> None:
    """The partial Result marked as secperf's own failure (status internal-error, what failed and why)."""

    doc.internal = {"check": check, "problem": problem[:400], "withheld": []}
    R.finish(doc, "internal-error")
    run.save(doc)


@contextmanager
def derived(
    what: str, doc: Result | None = None, run: Run | None = None, check: str = "a combination secperf derived"
) -> Iterator[None]:
    """An InputError inside is secperf's: InternalError "internal: {what} and its own checks refused it: ..."
    (the partial Result `doc`, when given, is marked internal-error and saved first)."""
    try:
        yield
    except InputError as exc:
        err = InternalError(f"internal: {what} and its own checks refused it: {exc}")
        if doc is not None and run is not None:
            mark(doc, run, check, str(err))
        raise err from None
