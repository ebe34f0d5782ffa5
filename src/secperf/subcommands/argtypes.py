"""Option value types for the CLI: each checks range and finiteness and says what is allowed, so a
bad value is an argparse error (exit 2) naming the option, never a crash later in the run.

Upper bounds are there so a typo (20 digits, inf) cannot start a run that never ends; they are far
above any useful value."""

from __future__ import annotations

import argparse
import math

MAX_SEED = 2**63 - 1


def _int(s: str) -> int:
    try:
        return int(s)
    except ValueError:
        pass
    try:  # 1e6 is a whole number too
        f = float(s)
    except ValueError:
        f = math.nan
    if math.isfinite(f) and f == int(f):
        return int(f)
    raise argparse.ArgumentTypeError(f"{s!r} is not a whole number")


def count(hi: int, lo: int = 1):
    """A whole number in [lo, hi]."""
    def parse(s: str) -> int:
        v = _int(s)
        if v < lo:
            raise argparse.ArgumentTypeError(f"{v} must be at least {lo}")
        if v > hi:
            raise argparse.ArgumentTypeError(f"{v} must be at most {hi}")
        return v
    parse.__name__ = "count"
    return parse


def positive(hi: float):
    """A finite number in (0, hi]."""
    def parse(s: str) -> float:
        try:
            v = float(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{s!r} is not a number") from None
        if not math.isfinite(v) or not 0 < v <= hi:
            raise argparse.ArgumentTypeError(f"{v} must be a finite number greater than 0 and at most {hi:g}")
        return v
    parse.__name__ = "number"
    return parse


def nonneg(hi: float):
    """A finite number in [0, hi]."""
    def parse(s: str) -> float:
        try:
            v = float(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{s!r} is not a number") from None
        if not math.isfinite(v) or not 0 <= v <= hi:
            raise argparse.ArgumentTypeError(f"{v} must be a finite number from 0 to {hi:g}")
        return v
    parse.__name__ = "number"
    return parse


def off_measure_or_ms(hi: float):
    """'off', 'measure', or a finite number of milliseconds in [0, hi] (returned as a float)."""
    def parse(s: str) -> str | float:
        v = s.strip().lower()
        if v in ("off", "measure"):
            return v
        try:
            x = float(v[:-2] if v.endswith("ms") else v)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{s!r} is not off, measure or a number of milliseconds") from None
        if not math.isfinite(x) or not 0 <= x <= hi:
            raise argparse.ArgumentTypeError(f"{x:g} ms must be a finite number from 0 to {hi:g}")
        return x
    parse.__name__ = "off, measure or milliseconds"
    return parse


def share(s: str) -> float:
    """A share between 0 and 1."""
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a number") from None
    if not 0 <= v <= 1:
        raise argparse.ArgumentTypeError(f"{v} must be a share between 0 and 1")
    return v


def seed(s: str) -> int:
    v = _int(s)
    if not 0 <= v <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{v} must be between 0 and 2^63-1")
    return v


def path(s: str) -> str:
    """A file or directory name: not empty (an empty name would silently mean the current
    directory), no NUL byte."""
    if not s.strip():
        raise argparse.ArgumentTypeError("an empty name: give a file or directory path")
    if "\0" in s:
        raise argparse.ArgumentTypeError("a path cannot contain a NUL byte")
    return s


def name_list(s: str) -> str:
    """A comma list of names that must name at least one (an empty value would silently select the
    default or everything); kept as the text given (the options whose consumers take it as one
    string, e.g. --stack of whatif and plan)."""
    comma_list()(s)
    return s


def name(s: str) -> str:
    """One name (a device, a profile): an empty value would silently select the default."""
    if not s.strip():
        raise argparse.ArgumentTypeError("an empty name: give one, e.g. cortex-m4-80 (`secperf device list`)")
    if "," in s:
        raise argparse.ArgumentTypeError(f"{s!r}: give one name, not a list")
    return s.strip()


class _CommaList:
    """The argparse type of an option that takes a comma-separated list (see `comma_list`)."""

    def __init__(self, item_type=None, choices=None):
        self.item_type, self.choices = item_type, tuple(choices) if choices else None
        self.__name__ = "comma list"  # argparse names the type in its "invalid ... value" message

    def __call__(self, s: str) -> list:
        items = [x.strip() for x in str(s).split(",") if x.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"{s!r} names nothing: give one or more values, comma-separated")
        out = []
        for x in items:
            if self.choices is not None and x not in self.choices:
                raise argparse.ArgumentTypeError(f"{x!r} is not one of {', '.join(map(str, self.choices))}")
            if self.item_type is not None:
                try:
                    x = self.item_type(x)
                except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
                    why = str(exc) if isinstance(exc, argparse.ArgumentTypeError) else "not a valid value"
                    raise argparse.ArgumentTypeError(f"{x!r} in {s!r}: {why}") from None
            out.append(x)
        return out


def comma_list(item_type=None, choices=None) -> _CommaList:
    """The one type of every option that takes a comma-separated list: 'a,b' becomes ['a', 'b']
    (blank items dropped), each item checked against `choices` and converted by `item_type`. A value
    naming nothing, or a bad item, is an argparse error (exit 2) naming the option and the item.
    With `action="extend"` a repeated option adds to the same flat list."""
    return _CommaList(item_type, choices)
