"""Emulated network links: spec strings, named profiles (data/networks.toml) and sweeps.

A spec is comma-separated ``key=value`` fields, optionally led by a profile name whose fields it
overrides::

    delay=50ms,jitter=5ms,loss=1%,rate=250kbit
    lte-m,loss=5%
    delay=25ms,up.rate=62kbit,down.rate=26kbit

Fields (each applies to both directions unless prefixed ``up.`` — device to server — or
``down.`` — server to device):

- ``delay``   one-way propagation delay (``50ms``, ``500us``, ``1.5s``; ``0`` needs no unit)
- ``jitter``  standard deviation of the delay variation (same units)
- ``jitter-dist`` ``normal`` (default) or ``pareto`` (shape 3, heavy right tail, same mean and sd).
  Jitter never reorders packets: a packet is never released before the one ahead of it (a link
  is a FIFO); use ``reorder`` for reordering.
- ``loss``    Bernoulli loss (``1%`` or ``0.01``)
- ``ge``      Gilbert–Elliott burst loss ``P/R[/BAD[/GOOD]]``: P(good→bad), P(bad→good) per
  packet, loss in the bad state (default 100%) and in the good state (default 0%); as Linux netem's
  ``loss gemodel``. Mean loss = (P·BAD + R·GOOD)/(P+R). Excludes ``loss``.
- ``dup``     duplication probability
- ``reorder`` probability that a packet skips the propagation delay and overtakes the packets in
  flight (needs ``delay`` > 0 to show)
- ``rate``    serialisation rate (``bit``, ``kbit``, ``mbit``, ``gbit``; decimal SI multiples as tc)
- ``queue``   packets that may wait for serialisation (drop-tail beyond; default 1000)
- ``mtu``     MTU of both TUN devices (68–9000, default 1500; not per direction)

The profile ``loopback`` (or ``none``) means no emulation at all: everything runs on 127.0.0.1 in
the current namespace, as without ``--network``.

A ``--network`` value may also be a comma list of profile or sweep names (``wifi,lte,nb-iot``, or
``rtt-sweep``): a list of links to run the same experiment over. A value containing ``=`` is one
spec.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any

from ..core.errors import InputError

LOOPBACK_NAMES = ("loopback", "none")
MTU_MIN, MTU_MAX = 68, 9000
QUEUE_MAX = 65536


class NetSpecError(InputError):
    """A spec or profile the user must fix; the message names the offending field."""


@dataclass(frozen=True)
class Direction:
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    jitter_dist: str = "normal"
    loss: float = 0.0
    ge: tuple[float, float, float, float] | None = None  # p, r, bad_loss, good_loss
    dup: float = 0.0
    reorder: float = 0.0
    rate_bps: float = 0.0
    queue: int = 1000

    @property
    def mean_loss(self) -> float:
        if self.ge:
            p, r, bad, good = self.ge
            return (p * bad + r * good) / (p + r) if p + r > 0 else good
        return self.loss

    def _relay_loss(self) -> float:
        """With P (good→bad) 0 the chain never leaves the good state: its loss is GOOD. The relay runs
        Gilbert-Elliott only for P > 0 and fell back to loss=0 (ge=0%/0%/100%/100% lost nothing while
        the Result said 100 %)."""
        if self.ge and self.ge[0] == 0:
            return self.ge[3]
        return self.loss

    def relay_arg(self, mtu: int) -> str:
        """The canonical form the native relay reads (ns, probabilities 0..1, bit/s)."""
        a = [
            f"delay_ns={round(self.delay_ms * 1e6)}",
            f"jitter_ns={round(self.jitter_ms * 1e6)}",
            f"jitter_dist={self.jitter_dist}",
            f"loss={self._relay_loss()!r}",
            f"dup={self.dup!r}",
            f"reorder={self.reorder!r}",
            f"rate_bps={self.rate_bps!r}",
            f"queue={self.queue}",
            f"mtu={mtu}",
        ]
        if self.ge and self.ge[0] > 0:
            p, r, bad, good = self.ge
            a += [f"ge_p={p!r}", f"ge_r={r!r}", f"ge_bad_loss={bad!r}", f"ge_good_loss={good!r}"]
        return ",".join(a)


@dataclass(frozen=True)
class NetSpec:
    """One emulated link. `name` is what the user wrote (a profile name or the spec text)."""

    name: str
    up: Direction = field(default_factory=Direction)
    down: Direction = field(default_factory=Direction)
    mtu: int = 1500
    loopback: bool = False

    @property
    def rtt_ms(self) -> float:
        """Configured round-trip propagation delay (no serialisation, no jitter)."""
        return self.up.delay_ms + self.down.delay_ms

    @property
    def loss(self) -> float:
        """Mean one-way loss, the larger of the two directions."""
        return max(self.up.mean_loss, self.down.mean_loss)

    def canonical(self) -> str:
        """The spec with every field spelled out (recorded in Results)."""
        if self.loopback:
            return "loopback"
        parts = []
        for d in ("up", "down"):
            x: Direction = getattr(self, d)
            parts.append(f"{d}.delay={_fmt_ms(x.delay_ms)}")
            if x.jitter_ms:
                parts.append(f"{d}.jitter={_fmt_ms(x.jitter_ms)}")
                if x.jitter_dist != "normal":
                    parts.append(f"{d}.jitter-dist={x.jitter_dist}")
            if x.ge:
                parts.append(f"{d}.ge=" + "/".join(f"{v * 100:g}%" for v in x.ge))
            elif x.loss:
                parts.append(f"{d}.loss={x.loss * 100:g}%")
            for k in ("dup", "reorder"):
                if getattr(x, k):
                    parts.append(f"{d}.{k}={getattr(x, k) * 100:g}%")
            if x.rate_bps:
                parts.append(f"{d}.rate={fmt_rate(x.rate_bps)}")
                parts.append(f"{d}.queue={x.queue}")
        parts.append(f"mtu={self.mtu}")
        return ",".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "spec": self.canonical(),
            "rtt_ms": self.rtt_ms,
            "loss": self.loss,
            "mtu": self.mtu,
            "up_rate_bps": self.up.rate_bps,
            "down_rate_bps": self.down.rate_bps,
        }


def fmt_rate(bps: float) -> str:
    for unit, mult in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if bps >= mult:
            return f"{bps / mult:g}{unit}"
    return f"{bps:g}bit"


def _fmt_ms(ms: float) -> str:
    return f"{ms:g}ms"


_NUM = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"  # 1e999 is a number (too large), not a typo
_TIME = re.compile(rf"^{_NUM}(us|µs|ms|s)?$")
_RATE = re.compile(rf"^{_NUM}(bit|kbit|mbit|gbit)$", re.I)
_RATE_MULT = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}


def _time_ms(key: str, v: str) -> float:
    m = _TIME.match(v.strip())
    if not m or (m.group(2) is None and float(m.group(1)) != 0):
        raise NetSpecError(f"field {key!r}: {v!r} is not a duration (write e.g. 50ms, 500us, 1.5s)")
    x = float(m.group(1))
    unit = m.group(2) or "ms"
    ms = x * {"us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3}[unit]
    if ms > 60_000:  # inf (1e999) included
        raise NetSpecError(f"field {key!r}: {v!r} is too large: longer than 60 s")
    return ms


def _prob(key: str, v: str) -> float:
    s = v.strip()
    try:
        x = float(s[:-1]) / 100 if s.endswith("%") else float(s)
    except ValueError:
        raise NetSpecError(f"field {key!r}: {v!r} is not a probability (write e.g. 1% or 0.01)") from None
    if math.isnan(x):
        raise NetSpecError(f"field {key!r}: {v!r} is not a probability (write e.g. 1% or 0.01)")
    if not 0 <= x <= 1:
        raise NetSpecError(f"field {key!r}: {v!r} must be between 0% and 100%")
    return x


def _rate(key: str, v: str) -> float:
    m = _RATE.match(v.strip())
    if not m:
        raise NetSpecError(f"field {key!r}: {v!r} is not a rate (write e.g. 250kbit, 1mbit, 20mbit)")
    bps = float(m.group(1)) * _RATE_MULT[m.group(2).lower()]
    if bps > 10e9:
        raise NetSpecError(f"field {key!r}: {v!r} is too large: at most 10gbit")
    if not 1000 <= bps <= 10e9:
        raise NetSpecError(f"field {key!r}: {v!r} must be between 1kbit and 10gbit")
    return bps


def _int(key: str, v: str, lo: int, hi: int) -> int:
    try:
        x = int(v)
    except ValueError:
        raise NetSpecError(f"field {key!r}: {v!r} is not a whole number") from None
    if not lo <= x <= hi:
        raise NetSpecError(f"field {key!r}: {x} must be between {lo} and {hi}")
    return x


def _ge(key: str, v: str) -> tuple[float, float, float, float]:
    parts = v.split("/")
    if not 2 <= len(parts) <= 4:
        raise NetSpecError(f"field {key!r}: {v!r} must be P/R[/BAD[/GOOD]] (e.g. 1%/25%)")
    p, r = _prob(key, parts[0]), _prob(key, parts[1])
    bad = _prob(key, parts[2]) if len(parts) > 2 else 1.0
    good = _prob(key, parts[3]) if len(parts) > 3 else 0.0
    if p > 0 and r == 0:
        raise NetSpecError(f"field {key!r}: R (bad→good) of 0 would stay in the bad state forever")
    return (p, r, bad, good)


def _jitter_dist(key: str, v: str) -> str:
    if v not in ("normal", "pareto"):
        raise NetSpecError(f"field {key!r}: {v!r} must be normal or pareto")
    return v


# a direction's field -> (Direction attribute, converter of its text)
DIRECTION_FIELDS: dict[str, tuple[str, Callable[[str, str], object]]] = {
    "delay": ("delay_ms", _time_ms),
    "jitter": ("jitter_ms", _time_ms),
    "jitter-dist": ("jitter_dist", _jitter_dist),
    "loss": ("loss", _prob),
    "ge": ("ge", _ge),
    "dup": ("dup", _prob),
    "reorder": ("reorder", _prob),
    "rate": ("rate_bps", _rate),
    "queue": ("queue", lambda k, v: _int(k, v, 1, QUEUE_MAX)),
}
FIELDS = tuple(DIRECTION_FIELDS) + ("mtu",)


def _apply(d: dict[str, dict[str, Any]], key: str, value: str) -> None:
    """Set one field (with optional up./down. prefix) in the per-direction dicts."""
    dirs: tuple[str, ...] = ("up", "down")
    base = key
    if "." in key:
        pre, base = key.split(".", 1)
        if pre not in dirs:
            raise NetSpecError(f"field {key!r}: direction prefix must be 'up.' or 'down.'")
        dirs = (pre,)
    if base == "mtu":
        if len(dirs) == 1:
            raise NetSpecError(f"field {key!r}: the MTU applies to both directions (write mtu=...)")
        d["_"]["mtu"] = _int(key, value, MTU_MIN, MTU_MAX)
        return
    if base not in DIRECTION_FIELDS:
        raise NetSpecError(f"unknown field {key!r}; known: {', '.join(FIELDS)} (optionally prefixed up. or down.)")
    attr, conv = DIRECTION_FIELDS[base]
    v = conv(key, value)
    for x in dirs:
        d[x][attr] = v


def parse(text: str, profiles: dict[str, str] | None = None) -> NetSpec:
    """A NetSpec from a spec string or a profile name (optionally followed by overriding fields)."""
    text = text.strip()
    if not text:
        raise NetSpecError(
            "empty network spec; give a profile name (see `secperf netem list`) or fields like delay=50ms,loss=1%"
        )
    if text in LOOPBACK_NAMES:
        return NetSpec(name="loopback", loopback=True)
    profiles = load_profiles() if profiles is None else profiles
    tokens = [t.strip() for t in text.split(",")]
    d: dict[str, dict[str, Any]] = {"up": {}, "down": {}, "_": {}}
    user_models: dict[str, set[str]] = {"up": set(), "down": set()}
    written: set[str] = set()  # keys the user wrote (a profile's own fields may be overridden once)
    for i, tok in enumerate(tokens):
        if not tok:
            raise NetSpecError(f"empty field in network spec {text!r} (two commas in a row?)")
        if "=" not in tok:
            if i == 0 and tok in profiles:
                for k, v in _fields(profiles[tok]):
                    _apply(d, k, v)
                continue
            if i == 0:
                raise NetSpecError(f"unknown network profile {tok!r}; known: {', '.join(['loopback', *profiles])}")
            raise NetSpecError(f"field {tok!r}: expected key=value")
        k, v = tok.split("=", 1)
        if v.strip().startswith("-"):  # said as such, not as "not a duration"
            raise NetSpecError(
                f"field {k.strip()!r} is negative ({tok}); delays, jitter, loss and rates must be 0 or more"
            )
        k = k.strip().lower()
        if k in written:  # the later one silently won: delay=50ms,...,delay=5ms measured 5 ms
            raise NetSpecError(f"field {k!r}: given twice in {text!r}; give each field once")
        written.add(k)
        base = k.split(".", 1)[-1]
        if base in ("loss", "ge"):
            # an explicit loss model replaces the profile's; both models given here is an error
            other = "ge" if base == "loss" else "loss"
            for x in ("up", "down") if "." not in k else (k.split(".")[0],):
                if x not in user_models:
                    continue  # a bad prefix: _apply names it
                if other in user_models[x]:
                    raise NetSpecError(f"field {k!r}: loss and ge (Gilbert-Elliott) exclude each other")
                user_models[x].add(base)
                d[x].pop(other, None)
        _apply(d, k, v.strip())
    up, down = Direction(**d["up"]), Direction(**d["down"])
    for side, way in (("up", up), ("down", down)):
        _check_jitter(text, side, way)
    return NetSpec(name=text, up=up, down=down, mtu=d["_"].get("mtu", 1500))


JITTER_FREE_MS = 10.0  # a jitter up to this passes whatever the delay (a LAN of 0 ms with 5 ms jitter)
JITTER_PER_DELAY = 100.0


def _check_jitter(text: str, side: str, x: Direction) -> None:
    """Decision: a jitter far past the delay is refused, not warned. Delays are drawn as delay ±
    jitter and cut at zero; with jitter 100× the delay about half the draws are cut, so the link has
    neither the delay nor the jitter written, and the run measures something else (and its
    retransmission timers wait on the jitter's tail)."""
    if x.jitter_ms > JITTER_FREE_MS and x.jitter_ms > JITTER_PER_DELAY * x.delay_ms:
        raise NetSpecError(
            f"{text!r}: {side} jitter {_fmt_ms(x.jitter_ms)} is more than {JITTER_PER_DELAY:g}× the delay "
            f"{_fmt_ms(x.delay_ms)}: delay ± jitter would fall below zero for about half the packets (cut to 0), "
            f"so the link would have neither value; give a delay of at least {_fmt_ms(x.jitter_ms / JITTER_PER_DELAY)}"
            f" or a jitter of at most {_fmt_ms(max(JITTER_FREE_MS, JITTER_PER_DELAY * x.delay_ms))}"
        )


def _fields(spec: str) -> list[tuple[str, str]]:
    out = []
    for tok in spec.split(","):
        k, v = tok.split("=", 1)
        out.append((k.strip().lower(), v.strip()))
    return out


# --- profiles ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    spec: str
    sources: dict[str, str]


def _load_toml() -> dict[str, Any]:
    return tomllib.loads(resources.files("secperf.data").joinpath("networks.toml").read_text())


def profile_table() -> dict[str, Profile]:
    """Every profile of data/networks.toml, validated: its spec parses and every field has a source."""
    raw = _load_toml()
    out: dict[str, Profile] = {}
    for name, p in raw.get("profiles", {}).items():
        out[name] = Profile(name, p.get("description", ""), p.get("spec", ""), dict(p.get("sources", {})))
    for name, p in out.items():
        if name in LOOPBACK_NAMES:
            continue
        try:
            parse(p.spec, {})
        except NetSpecError as exc:
            raise NetSpecError(f"networks.toml profile {name!r}: {exc}") from None
        for k, _ in _fields(p.spec):
            base = k.split(".", 1)[-1]
            if k not in p.sources and base not in p.sources:
                raise NetSpecError(f"networks.toml profile {name!r}: field {k!r} has no source")
    return out


def load_profiles() -> dict[str, str]:
    """Profile name -> spec string (loopback excluded: it means no emulation)."""
    return {n: p.spec for n, p in profile_table().items() if n not in LOOPBACK_NAMES}


def load_sweeps() -> dict[str, list[str]]:
    return {n: list(s["networks"]) for n, s in _load_toml().get("sweeps", {}).items()}


def parse_networks(values: list[str] | None) -> list[NetSpec]:
    """`--network` values (repeatable) to a list of links: each value is a spec, a sweep name, or a
    comma list of profile/sweep names."""
    profiles, sweeps = load_profiles(), load_sweeps()
    out: list[NetSpec] = []
    for v in values or ["loopback"]:
        v = v.strip()
        tokens = [t.strip() for t in v.split(",")]
        names = set(profiles) | set(sweeps) | set(LOOPBACK_NAMES)
        if "=" not in v and len(tokens) > 1 and all(t in names for t in tokens):
            items = tokens
        else:
            items = [v]
        for it in items:
            if it in sweeps:
                out += [parse(s, profiles) for s in sweeps[it]]
            else:
                out.append(parse(it, profiles))
    seen, uniq = set(), []
    for n in out:
        if n.name not in seen:
            seen.add(n.name)
            uniq.append(n)
    return uniq


def with_name(spec: NetSpec, name: str) -> NetSpec:
    return replace(spec, name=name)


def with_fields(base: NetSpec, fields: list[str], name: str) -> NetSpec:
    """`base` (a resolved link) with `fields` (``key=value`` as in a spec) written over its own and
    checked as a spec is, named `name`; no profile is looked up (a swept link: sim/sweep.py)."""
    text = ",".join(([] if base.loopback else [base.canonical()]) + fields) or "delay=0"
    return with_name(parse(text, {}), name)
