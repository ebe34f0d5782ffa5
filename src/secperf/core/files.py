"""Reading a file the user named, with bounds: it must be a regular file (a FIFO blocks forever,
/dev/zero never ends) no larger than its kind's limit, and TOML no deeper than MAX_TOML_DEPTH, so
a wrong path is an input error (exit 2) naming the limit, never a hang or all the machine's memory."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from .errors import InputError

MiB = 1 << 20
# the largest file of each kind secperf reads; far above any real one (a day-long crypto run's
# Result is a few MiB), far below what would exhaust memory
LIMITS = {
    "result": 256 * MiB,
    "scenario": 1 * MiB,
    "pattern": 1 * MiB,
    "system": 1 * MiB,
    "profiles": 1 * MiB,
    "pem": 1 * MiB,
    "harness": 1 * MiB,  # device crypto --harness (TOML)
    "board log": 16 * MiB,  # device calibrate LOG: a board's benchmark output
}
MAX_TOML_DEPTH = 32


def _size_text(n: int) -> str:
    return f"{n // MiB} MiB" if n >= MiB else f"{n} bytes"


def read_input(path: str | Path, kind: str, where: str | None = None) -> bytes:
    """The bytes of a regular file of at most LIMITS[kind]; InputError naming the file otherwise."""
    where = where or str(path)
    limit = LIMITS[kind]
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)  # O_NONBLOCK: a FIFO never blocks the open
    except FileNotFoundError:
        raise InputError(f"{where}: no such file") from None
    except OSError as exc:
        raise InputError(f"{where}: cannot open ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"{where}: is a directory; name a file")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{where}: not a regular file (a device, FIFO or socket); name a {kind} file")
        if st.st_size > limit:
            raise InputError(
                f"{where}: {_size_text(st.st_size)} is over the {_size_text(limit)} limit for a "
                f"{kind} file; is this the right file?"
            )
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)  # a file that grew since fstat is cut at the limit, never read on
    except OSError as exc:
        raise InputError(f"{where}: cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise InputError(f"{where}: over the {_size_text(limit)} limit for a {kind} file")
    return data


def read_text_input(path: str | Path, kind: str, where: str | None = None) -> str:
    where = where or str(path)
    try:
        return read_input(path, kind, where).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not UTF-8 text (byte {exc.start}); name a {kind} file") from None


def toml_depth(value: object, depth: int = 0) -> int:
    """The nesting depth of parsed TOML (tables and arrays), iteratively."""
    deepest, stack = depth, [(value, depth)]
    while stack:
        v, d = stack.pop()
        deepest = max(deepest, d)
        if isinstance(v, dict):
            stack += [(x, d + 1) for x in v.values()]
        elif isinstance(v, list):
            stack += [(x, d + 1) for x in v]
    return deepest


def parse_toml(text: str, where: str) -> dict[str, Any]:
    """TOML with its nesting bounded; a syntax error, or nesting deeper than MAX_TOML_DEPTH, is an
    InputError naming the file (tomllib recurses: 1000 levels of [[[ was a RecursionError)."""
    if _bracket_depth(text) > 4 * MAX_TOML_DEPTH:
        raise InputError(f"{where}: nested more than {MAX_TOML_DEPTH} levels deep; no secperf file needs that")
    try:
        doc = tomllib.loads(text)
    except RecursionError:
        raise InputError(
            f"{where}: nested more than {MAX_TOML_DEPTH} levels deep; no secperf file needs that"
        ) from None
    if toml_depth(doc) > MAX_TOML_DEPTH:
        raise InputError(f"{where}: nested more than {MAX_TOML_DEPTH} levels deep; no secperf file needs that")
    return doc


def _bracket_depth(text: str) -> int:
    """An upper bound of the nesting written with [ and { outside strings and comments (a pre-check
    before tomllib, which recurses): a `description` holding 200 `[` nests nothing."""
    depth = deepest = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "#":  # a comment runs to the end of its line
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if ch in "\"'":
            i = _string_end(text, i)
            continue
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
        i += 1
    return deepest


def _string_end(text: str, i: int) -> int:
    """The index after the TOML string that starts at text[i] (basic "..." with escapes, literal
    '...', and their triple-quoted multi-line forms); an unterminated one runs to the end (tomllib
    then says what is wrong)."""
    q = text[i]
    if text.startswith(q * 3, i):
        j = i + 3
        while True:
            k = text.find(q * 3, j)
            if k < 0:
                return len(text)
            if q == "'" or not _escaped(text, k):
                end = k + 3
                while end < len(text) and text[end] == q and end - k < 5:  # up to two quotes close it too
                    end += 1
                return end
            j = k + 1
    j = i + 1
    while j < len(text):
        c = text[j]
        if c == "\n":
            return j
        if c == q and (q == "'" or not _escaped(text, j)):
            return j + 1
        j += 1
    return len(text)


def _escaped(text: str, k: int) -> bool:
    """Whether the quote at text[k] is escaped (an odd number of backslashes before it)."""
    b = 0
    while k - b - 1 >= 0 and text[k - b - 1] == "\\":
        b += 1
    return b % 2 == 1
