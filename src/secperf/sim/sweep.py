"""What-if grids: `--sweep rtt=0..300:25,loss=0,1,5` and comma lists over any input, expanded into
scenarios (model/flights.Scenario + a link), and the one-at-a-time sensitivity (tornado) of P95.

Sweep syntax: comma-separated; a token with `=` starts an input, later tokens without `=` add values
to it; `A..B:STEP` is an inclusive range. Inputs: rtt (ms, split evenly over both directions),
delay (one-way ms), jitter (ms), loss (%), rate (kbit/s), mtu (bytes), and the scenario's
protocol, handshake, key, group, cert.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import Any

from ..core.errors import InputError
from ..inputs import netspec as NS
from ..inputs.vocabulary import group
from ..model import flights as F
from ..model import network as N

NETWORK_INPUTS = {"rtt": "ms", "delay": "ms", "jitter": "ms", "loss": "%", "rate": "kbit/s", "mtu": "bytes"}
SCENARIO_INPUTS = ("protocol", "handshake", "key", "group", "cert")
INPUTS = tuple(NETWORK_INPUTS) + SCENARIO_INPUTS


class SweepError(InputError):
    pass


# {input: [values]}: numbers for the network inputs (NETWORK_INPUTS' units), names for the scenario's
Sweep = dict[str, list[Any]]


MAX_VALUES = 1000  # values of one swept input
DEFAULT_MAX_DRAWS = 200_000_000  # cells x --n: simulated connections of one what-if (--max-draws)
DEFAULT_MAX_CELLS = 20_000  # cells of one what-if, each a row of the Result and the report (--max-cells)


def cell_count(scenarios: int, networks: int, sweep: Sweep) -> int:
    """An upper bound of the cells expand() makes, computed without making them."""
    n = scenarios * networks
    for vals in sweep.values():
        n *= max(1, len(vals))
    return n


def check_draws(
    scenarios: int, networks: int, sweep: Sweep, n: int, max_draws: int, max_cells: int = DEFAULT_MAX_CELLS
) -> None:
    """Each bound alone is fine, their product is not: rtt=0..999:1,loss=0..99:0.1 is 10^6 cells."""
    cells = cell_count(scenarios, networks, sweep)
    if cells > max_cells:
        raise SweepError(
            f"{cells} cells (scenarios x networks x --sweep values) is over --max-cells {max_cells}; "
            f"narrow the sweep, or raise --max-cells if you mean it"
        )
    if cells * n > max_draws:
        raise SweepError(
            f"{cells} cells (scenarios x networks x --sweep values) x --n {n} = {cells * n:.3g} simulated "
            f"connections, over --max-draws {max_draws:g}; narrow the sweep, lower --n, or raise "
            f"--max-draws if you mean it"
        )


def _num(key: str, v: str) -> float:
    try:
        x = float(v)
    except ValueError:
        raise SweepError(f"--sweep: {key}={v!r} is not a number") from None
    if math.isnan(x):
        raise SweepError(f"--sweep: {key}={v} is not a number")
    if not math.isfinite(x):  # rtt=0..inf:1 was cut to 0..999 without a word; 1e999 overflows to inf
        raise SweepError(f"--sweep: {key}={v} is too large: give a finite number")
    if x < 0:
        raise SweepError(f"--sweep: {key}={v} is negative; {key} must be 0 or more")
    return x


def _range(key: str, v: str) -> list[float]:
    body, _, step = v.partition(":")
    a, _, b = body.partition("..")
    lo, hi = _num(key, a), _num(key, b)
    st = _num(key, step) if step else (hi - lo) / 10 or 1.0
    if st <= 0 or hi < lo:
        raise SweepError(f"--sweep: {key}={v!r} needs A..B:STEP with A <= B and STEP > 0")
    steps = (hi - lo) / st  # a float: 0..1e300:1e-300 is inf steps, not a number to floor
    if not math.isfinite(steps) or steps + 1 > MAX_VALUES:
        raise SweepError(
            f"--sweep: {key}={v} has {steps + 1:.3g} values, over {MAX_VALUES} per input; take a larger "
            f"STEP or a narrower range"
        )
    count = math.floor(steps + 1e-9) + 1
    return [round(lo + i * st, 9) for i in range(int(count))]


def parse(text: str | None) -> Sweep:
    """{input: [values]} in the order given."""
    if not text:
        return {}
    out: Sweep = {}
    cur = None
    for tok in (t.strip() for t in text.split(",")):
        if not tok:
            raise SweepError(f"--sweep: empty value in {text!r} (two commas in a row?)")
        if "=" in tok:
            cur, v = (x.strip() for x in tok.split("=", 1))
            cur = cur.lower()
            if cur not in INPUTS:
                raise SweepError(f"--sweep: unknown input {cur!r}; known: {', '.join(INPUTS)}")
            if cur in out:
                raise SweepError(f"--sweep: input {cur!r} given twice")
            out[cur] = []
        elif cur is None:
            raise SweepError(f"--sweep: {tok!r} has no input name; write e.g. rtt=0..300:25,loss=0,1,5")
        else:
            v = tok
        if cur in NETWORK_INPUTS:
            out[cur] += _range(cur, v) if ".." in v else [_num(cur, v)]
        elif cur == "group":  # one vocabulary: old spellings (secp256r1, ecdh-p256) mapped with a note
            out[cur].append(group(v, "--sweep group"))
        else:
            out[cur].append(v)
    return out


def _fmt(x: float) -> str:
    return f"{x:g}"


def apply_network(base: NS.NetSpec, values: dict[str, float]) -> NS.NetSpec:
    """The base link with swept fields replaced (rtt splits evenly over both directions)."""
    if not values:
        return base
    fields: list[str] = []
    name = [] if base.loopback else [base.name]
    for k, v in values.items():
        if k == "rtt":
            fields.append(f"delay={_fmt(v / 2)}ms")
        elif k in ("delay", "jitter"):
            fields.append(f"{k}={_fmt(v)}ms")
        elif k == "loss":
            if v >= 100:
                raise SweepError(f"--sweep: loss={v:g}% means nothing arrives; give loss below 100")
            fields.append(f"loss={_fmt(v)}%")
        elif k == "rate":
            fields.append(f"rate={_fmt(v)}kbit")
        elif k == "mtu":
            fields.append(f"mtu={int(v)}")
        name.append(f"{k}={_fmt(v)}")
    return NS.with_fields(base, fields, ",".join(name))


@dataclass(frozen=True)
class Cell:
    scenario: F.Scenario
    network: NS.NetSpec
    inputs: dict[str, Any]  # the swept inputs' values of this cell


def parse_cert(v: str) -> tuple[str, int]:
    t, _, d = v.partition(":")
    if d:
        try:
            depth = int(d)
        except ValueError:
            raise SweepError(
                f"--cert: depth {d!r} in {v!r} is not a whole number (write TYPE[:DEPTH], e.g. ecdsa-p256:2)"
            ) from None
        return t, depth
    return t, 1


def with_input(sc: F.Scenario, k: str, v: str) -> F.Scenario:
    if k == "cert":
        t, d = parse_cert(v)
        return replace(sc, cert=t, depth=d)
    changes: dict[str, Any] = {k: v}
    return replace(sc, **changes)


def expand(scenarios: list[F.Scenario], networks: list[NS.NetSpec], sweep: Sweep) -> list[Cell]:
    net_keys = [k for k in sweep if k in NETWORK_INPUTS]
    sc_keys = [k for k in sweep if k in SCENARIO_INPUTS]
    cells = []
    for sc in scenarios:
        for combo in itertools.product(*(sweep[k] for k in sc_keys)):
            s2 = sc
            for k, v in zip(sc_keys, combo):
                s2 = with_input(s2, k, v)
            if s2.handshake not in F.HANDSHAKES.get(s2.protocol, (s2.handshake,)):
                continue
            for net in networks:
                for ncombo in itertools.product(*(sweep[k] for k in net_keys)):
                    vals = dict(zip(net_keys, ncombo))
                    cells.append(Cell(s2, apply_network(net, vals), {**dict(zip(sc_keys, combo)), **vals}))
    if not cells:
        raise SweepError(
            "no scenario left: every --handshake value is unknown to every PROTOCOL given; see `secperf whatif --list`"
        )
    return cells


def tornado(rows: list[dict[str, Any]], sweep: Sweep, metric: str = "p95_us") -> list[dict[str, Any]]:
    """Per swept input: the P95 range over its values with every other input at its first value."""
    out = []
    for k, vals in sweep.items():
        if len(vals) < 2:
            continue
        others = {j: sweep[j][0] for j in sweep if j != k}
        pts = [
            (r["inputs"][k], r["usable"][metric])
            for r in rows
            if all(r["inputs"].get(j) == v for j, v in others.items())
        ]
        if len(pts) < 2:
            continue
        lo = min(pts, key=lambda p: p[1])
        hi = max(pts, key=lambda p: p[1])
        out.append(
            {
                "input": k,
                "low_value": lo[0],
                "low_us": lo[1],
                "high_value": hi[0],
                "high_us": hi[1],
                "swing_us": hi[1] - lo[1],
            }
        )
    return sorted(out, key=lambda r: -r["swing_us"])


def link_of(cell: Cell, coap_random_factor: float) -> N.LinkModel:
    return N.from_spec(cell.network, coap_random_factor)
