"""Option value types for the CLI: each checks range and finiteness and says what is allowed, so a
bad value is an argparse error (exit 2) naming the option, never a crash later in the run.

Upper bounds are there so a typo (20 digits, inf) cannot start a run that never ends; they are far
above any useful value."""

from __future__ import annotations

import argparse
import math

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
    raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")


def count(hi: int, lo: int = 1):
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


def positive(hi: float):
    """A finite number in (0, hi]."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(v) or not 0 < v <= hi:
            raise argparse.ArgumentTypeError(f"{v} must be a finite number greater than 0 and at most {hi:g}")
        return v
    parse.__name__ = "number"
    return parse


def nonneg(hi: float):
    """A finite number in [0, hi]."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(v) or not 0 <= v <= hi:
            raise argparse.ArgumentTypeError(f"{v} must be a finite number from 0 to {hi:g}")
        return v
    parse.__name__ = "number"
    return parse


def off_measure_or_ms(hi: float):
    """'off', 'measure', or a finite number of milliseconds in [0, hi] (returned as a float)."""
    def parse(text: str) -> str | float:
        v = text.strip().lower()
        if v in ("off", "measure"):
            return v
        try:
            x = float(v[:-2] if v.endswith("ms") else v)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not off, measure or a number of milliseconds") from None
        if not math.isfinite(x) or not 0 <= x <= hi:
            raise argparse.ArgumentTypeError(f"{x:g} ms must be a finite number from 0 to {hi:g}")
        return x
    parse.__name__ = "off, measure or milliseconds"
    return parse


def share(text: str) -> float:
    """A share between 0 and 1."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= v <= 1:
        raise argparse.ArgumentTypeError(f"{v} must be a share between 0 and 1")
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

    def __init__(self, item_type=None, choices=None):
        self.item_type, self.choices = item_type, tuple(choices) if choices else None
        self.__name__ = "comma list"  # argparse names the type in its "invalid ... value" message

    def __call__(self, text: str) -> list:
        items = [x.strip() for x in str(text).split(",") if x.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"{text!r} names nothing: give one or more values, comma-separated")
        out = []
        for x in items:
            if self.choices is not None and x not in self.choices:
                raise argparse.ArgumentTypeError(f"{x!r} is not one of {', '.join(map(str, self.choices))}")
            if self.item_type is not None:
                try:
                    x = self.item_type(x)
                except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
                    why = str(exc) if isinstance(exc, argparse.ArgumentTypeError) else "not a valid value"
                    raise argparse.ArgumentTypeError(f"{x!r} in {text!r}: {why}") from None
            out.append(x)
        return out


def comma_list(item_type=None, choices=None) -> _CommaList:
    """The one type of every option that takes a comma-separated list: 'a,b' becomes ['a', 'b']
    (blank items dropped), each item checked against `choices` and converted by `item_type`. A value
    naming nothing, or a bad item, is an argparse error (exit 2) naming the option and the item.
    With `action="extend"` a repeated option adds to the same flat list."""
    return _CommaList(item_type, choices)
