"""Option value types for the CLI: each checks range and finiteness and says what is allowed, so a
bad value is an argparse error (exit 2) naming the option, never a crash later in the run.

Upper bounds are there so a typo (20 digits, inf) cannot start a run that never ends; they are far
above any useful value."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

from ..core.errors import InputError

_T = TypeVar("_T")
Note = Callable[[str], object]  # where a note line goes (the reporter's note)

MAX_SEED = 2**63 - 1


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        pass
    try:  # 1e6 is a whole number too
        f = float(text)
    except ValueError:
        f = math.nan
    if math.isfinite(f) and f == int(f):
        return int(f)
    if math.isinf(f):  # 1e999 overflows to inf: a number, too large for any bound
        raise argparse.ArgumentTypeError(f"{text!r} is too large")
    raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")


def _float(text: str) -> float:
    """A finite number: inf, nan and what overflows to them (1e999) are refused with their reason."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if math.isnan(v):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number")
    if math.isinf(v):
        raise argparse.ArgumentTypeError(f"{text!r} is too {'large' if v > 0 else 'small'}: give a finite number")
    return v


def count(hi: int, lo: int = 1) -> Callable[[str], int]:
    """A whole number in [lo, hi]."""

    def parse(text: str) -> int:
        v = _int(text)
        if v < lo:
            raise argparse.ArgumentTypeError(f"{v} must be at least {lo}")
        if v > hi:
            raise argparse.ArgumentTypeError(f"{v} must be at most {hi}")
        return v

    parse.__name__ = "count"
    return parse


def positive(hi: float) -> Callable[[str], float]:
    """A finite number in (0, hi]."""

    def parse(text: str) -> float:
        v = _float(text)
        if v > hi:
            raise argparse.ArgumentTypeError(f"{text} is too large: at most {hi:g}")
        if not v > 0:
            raise argparse.ArgumentTypeError(f"{text} must be greater than 0 (and at most {hi:g})")
        return v

    parse.__name__ = "number"
    return parse


def nonneg(hi: float) -> Callable[[str], float]:
    """A finite number in [0, hi]."""

    def parse(text: str) -> float:
        v = _float(text)
        if v > hi:
            raise argparse.ArgumentTypeError(f"{text} is too large: at most {hi:g}")
        if v < 0 or math.copysign(1.0, v) < 0:  # -0 too: a negative sign is a mistake, not zero
            raise argparse.ArgumentTypeError(f"{text} must be from 0 to {hi:g}")
        return v

    parse.__name__ = "number"
    return parse


def off_measure_or_ms(hi: float) -> Callable[[str], str | float]:
    """'off', 'measure', or a finite number of milliseconds in [0, hi] (returned as a float)."""

    def parse(text: str) -> str | float:
        v = text.strip().lower()
        if v in ("off", "measure"):
            return v
        try:
            x = float(v[:-2] if v.endswith("ms") else v)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not off, measure or a number of milliseconds") from None
        if x > hi:  # 1e999 (inf) included
            raise argparse.ArgumentTypeError(f"{text} is too large: at most {hi:g} ms")
        if not math.isfinite(x) or not 0 <= x <= hi:
            raise argparse.ArgumentTypeError(f"{x:g} ms must be a finite number from 0 to {hi:g}")
        return x

    parse.__name__ = "off, measure or milliseconds"
    return parse


def share(text: str) -> float:
    """A share between 0 and 1."""
    v = _float(text)
    if not 0 <= v <= 1 or math.copysign(1.0, v) < 0:
        raise argparse.ArgumentTypeError(f"{text} must be a share between 0 and 1")
    return v


def open_probability(text: str) -> float:
    """A probability strictly between 0 and 1 (a significance level, a power): 0 and 1 make infinite
    or empty intervals, -0 is 0."""
    v = _float(text)
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"{text} must be between 0 and 1, both excluded (e.g. 0.05)")
    return v


def seed(text: str) -> int:
    v = _int(text)
    if not 0 <= v <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{v} must be between 0 and 2^63-1")
    return v


def path(text: str) -> str:
    """A file or directory name: not empty (an empty name would silently mean the current
    directory), no NUL byte."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty name: give a file or directory path")
    if "\0" in text:
        raise argparse.ArgumentTypeError("a path cannot contain a NUL byte")
    return text


def name_list(text: str) -> str:
    """A comma list of names that must name at least one (an empty value would silently select the
    default or everything); kept as the text given (the options whose consumers take it as one
    string, e.g. --stack of whatif and plan)."""
    comma_list()(text)
    return text


def name(text: str) -> str:
    """One name (a device, a profile): an empty value would silently select the default."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty name: give one, e.g. cortex-m4-80 (`secperf device list`)")
    if "," in text:
        raise argparse.ArgumentTypeError(f"{text!r}: give one name, not a list")
    return text.strip()


class _CommaList:
    """The argparse type of an option that takes a comma-separated list (see `comma_list`)."""

    def __init__(self, item_type: Callable[[str], Any] | None = None, choices: Iterable[object] | None = None) -> None:
        self.item_type, self.choices = item_type, tuple(choices) if choices else None
        self.__name__ = "comma list"  # argparse names the type in its "invalid ... value" message

    def __call__(self, text: str) -> list[Any]:
        items = [x.strip() for x in str(text).split(",") if x.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"{text!r} names nothing: give one or more values, comma-separated")
        out: list[Any] = []
        for x in items:
            if self.choices is not None and x not in self.choices:
                raise argparse.ArgumentTypeError(f"{x!r} is not one of {', '.join(map(str, self.choices))}")
            value: Any = x
            if self.item_type is not None:
                # plain float/int items are finite numbers: 1e999 is "too large", not inf passed on
                conv = _float if self.item_type is float else _int if self.item_type is int else self.item_type
                try:
                    value = conv(x)
                except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
                    why = str(exc) if isinstance(exc, argparse.ArgumentTypeError) else "not a valid value"
                    raise argparse.ArgumentTypeError(f"{x!r} in {text!r}: {why}") from None
            out.append(value)
        return out


def comma_list(item_type: Callable[[str], Any] | None = None, choices: Iterable[object] | None = None) -> _CommaList:
    """The one type of every option that takes a comma-separated list: 'a,b' becomes ['a', 'b']
    (blank items dropped), each item checked against `choices` and converted by `item_type`. A value
    naming nothing, or a bad item, is an argparse error (exit 2) naming the option and the item.
    With `action="extend"` a repeated option adds to the same flat list."""
    return _CommaList(item_type, choices)


# --- lists as a whole: repeated values, sizes, grids -----------------------------------------------
MAX_LIST_ITEMS = 100  # values of one list option (after repeats are folded)
MAX_LIST_PRODUCT = 100_000  # the grid of a command's list options (rows = product of their lengths)


def _same_key(x: object) -> Hashable:
    """What makes two list values the same request: numbers by value (16, 16.0, 016), names without
    regard to case (names are lower case everywhere), a path (or an existing file) as written."""
    if isinstance(x, bool) or not isinstance(x, (int, float, str)):
        return repr(x)
    if isinstance(x, (int, float)):
        return float(x)
    t = x.strip()
    try:
        f = float(t)
        if math.isfinite(f):
            return f
    except ValueError:
        pass

    return t if "/" in t or os.path.exists(t) else t.casefold()  # a file name keeps its case


def unique(values: list[_T], option: str, note: Note | None = None) -> list[_T]:
    """`values` with repeats folded into the first, in order; a note names each repeat.

    Decision: a repeated value is folded with a note, not refused. It asks for the same row twice;
    measuring it twice would write two series of one id, a Result the readers refuse, and refusing
    would fail a command whose intent is plain (`--size 16,16`, a list built by a script). The note
    on stderr says what was folded, so nothing happens silently."""
    out: list[_T] = []
    seen: dict[Hashable, _T] = {}
    count: dict[Hashable, int] = {}
    for v in values:
        k = _same_key(v)
        if k in seen:
            count[k] += 1
            continue
        seen[k], count[k] = v, 1
        out.append(v)
    folded = [f"{seen[k]} given {n} times" for k, n in count.items() if n > 1]
    if folded and note is not None:
        note(f"note: {option}: {', '.join(folded[:5])}{' ...' if len(folded) > 5 else ''}; each is used once")
    return out


def _leaf_actions(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[argparse.Action]:
    """The actions of the (sub)command that `args` ran, following chosen subcommands."""
    out = []
    for a in parser._actions:  # noqa: SLF001 -- argparse keeps its actions here and nowhere public
        if isinstance(a, argparse._SubParsersAction):  # noqa: SLF001
            chosen = getattr(args, a.dest, None)
            if chosen in a.choices:
                out += _leaf_actions(a.choices[chosen], args)
        else:
            out.append(a)
    return out


def settle_lists(parser: argparse.ArgumentParser, args: argparse.Namespace, note: Note | None = None) -> None:
    """Every comma-list option of the command `args` ran (its parser: `parser`), as a whole, before
    any work starts: repeats folded (`unique`, also across a repeated option), each list at most
    MAX_LIST_ITEMS values, and the grid they make (the product of their lengths) at most
    MAX_LIST_PRODUCT rows unless the command bounds its own grid (--max-cells). Too many: an
    InputError (exit 2) naming the option(s) and the bound."""

    lists = []
    for a in _leaf_actions(parser, args):
        if not isinstance(a.type, _CommaList):
            continue
        v = getattr(args, a.dest, None)
        if not isinstance(v, list):
            continue
        option = a.option_strings[-1] if a.option_strings else a.dest
        v = unique(v, option, note)
        setattr(args, a.dest, v)
        if len(v) > MAX_LIST_ITEMS:
            raise InputError(
                f"{option}: {len(v)} values; at most {MAX_LIST_ITEMS} in one list (each is a row "
                f"to measure or predict): split the run"
            )
        lists.append((option, len(v)))
    if hasattr(args, "max_cells"):
        return  # the command bounds its grid itself, with its own option
    rows = math.prod(n for _, n in lists) if lists else 1
    if rows > MAX_LIST_PRODUCT:
        grid = " × ".join(f"{o} {n}" for o, n in lists if n > 1)
        raise InputError(
            f"{grid} make {rows:,} rows; at most {MAX_LIST_PRODUCT:,} in one run: give fewer values or split the run"
        )
