"""Fitting a core profile's banded timing parameters to a board's own published figures.

How it works:
1. Counting (cached). Each operation a log names is run once (one cold, one warm repetition) on the
   emulated core under the timing model, with the board's clock and wait states. The plugin runs
   three parameter sets side by side; a calibration chooses them: set 1 is the base profile's point,
   set 0 the point with the discrete switch (no_prefetch) at its other band end, set 2 every fitted
   parameter at its high end. The warm operation's cycles in the three sets and its class counters
   (instruction classes, taken branches, flash misses) are kept, per build fingerprint and core,
   under $SECPERF_HOME/device/calibrate.
2. The cycles of a parameter vector. The plugin's cycles are linear in the class costs given the
   counters (a class's cost x how many instructions of it ran; branch_taken_extra x taken branches;
   ...), except the flash stalls behind the prefetch buffer: a sequential line's wait is what is left
   of the wait states after the cycles spent in the previous line, so slower instructions hide more
   of it. So: cycles(theta) = set-1 cycles + absorption x sum over the fitted parameters of counter x
   (theta - point), where the absorption (the share of a change that reaches the total) is measured
   per operation from sets 1 and 2; with the switch flipped (prefetch off: nothing overlaps) it is
   set-0 cycles + the plain sum. The fitted profile is then counted once more (its point is the fit):
   its cycles are the plugin's own, and `surrogate_error` says how far this shortcut was from them.
3. The fit. Robust least squares (soft L1, scale 5 %) on log(predicted / published) over the rows,
   every parameter bounded by its sourced band (scipy's trust-region reflective method from the
   shipped point, a small pull to the point so an undetermined parameter stays where its source put
   it; deterministic), for each value of the switch; the lower cost wins. A parameter no row's cycles depend on (its effect under
   0.2 % of every row) is not fitted. The fit "fits" when every row is within the tolerance; else the
   rows outside it are named (no parameters within their bounds explain them).
4. Leave one out: for each row, the fit without it, then its prediction (the held-out error).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..core.errors import InputError, MeasurementError
from ..core.result_schema import CountedDerived
from ..core.writes import atomic_write
from ..inputs.core_profiles import Core, DeviceError, Timing
from . import device as D
from .device_build import device_home, ensure_built

# the plugin's counters each class cost multiplies (native/device/plugin/timing.c cost_of/resolve_branch);
# a name with a leading "-" is subtracted: a taken branch that loads the PC (LDR PC, POP/LDM with PC,
# TBB/TBH) pays branch_load_extra instead of branch_taken_extra, so it counts once, in branch_load_extra
COEFFICIENTS: dict[str, tuple[str, ...]] = {
    "alu": ("alu", "pc_write"),
    "load": ("load",),
    "load_pipelined": ("load_pipelined",),
    "store": ("store",),
    "ldrd": ("ldrd",),
    "strd": ("strd",),
    "ldm_base": ("ldm",),
    "ldm_per_reg": ("ldstm_regs",),
    "stm_base": ("stm",),
    "stm_per_reg": ("ldstm_regs",),
    "mul": ("mul",),
    "mla": ("mla",),
    "mull": ("mull",),
    "div": ("div",),
    "branch": ("branch",),
    "branch_taken_extra": ("branch_taken", "-branch_load_taken"),
    "branch_load_extra": ("branch_load_taken",),
    "branch_unaligned_extra": ("branch_taken_unaligned",),
    "unaligned_run_extra": ("unaligned_run",),
    "agu_stall": ("agu_stall",),
    "store_regoff_extra": ("store_regoff",),
    "dual_issue": ("dual_issue",),
    "mispredict": ("mispredict",),
    "it": ("it",),
    "vfp": ("vfp",),
    "vfp_mem": ("vfp_mem",),
    "vdiv": ("vdiv",),
    "neon": ("neon",),
    "neon_mem": ("neon_mem",),
    "other": ("other",),
    "l1_miss": ("l1i_miss", "l1d_miss"),
    "l2_miss": ("l2_miss",),
}


def counter_sum(counters: dict[str, int], name: str) -> int:
    """How many times cost `name` was paid, from the plugin's counters (COEFFICIENTS)."""
    return sum(-counters.get(k[1:], 0) if k.startswith("-") else counters.get(k, 0) for k in COEFFICIENTS.get(name, ()))


SWITCH = "no_prefetch"  # discrete: the prefetch buffer on (0) or off (1)
TOLERANCE = 0.15
PULL = 1e-3  # weight of the pull towards the shipped point (per band width)
MIN_EFFECT = 0.002
# a robust loss on the log errors: one row far off (a build unlike the board's, a known model error)
# pulls the fit less than with plain squares; residuals under F_SCALE count as squares
LOSS, F_SCALE = "soft_l1", 0.05


class CalibrationFitError(InputError):
    """Rows that cannot be counted or fitted (exit 2)."""


@dataclass(frozen=True)
class OpCount:
    op: str
    instructions: float
    cycles: tuple[float, float, float]  # the calibration's sets: switch flipped, point, fitted at high
    counters: dict[str, int]


@dataclass
class Row:
    """One published figure and the counts of the secperf operations it is made of: their sum, or with
    `weights` (one per op) a weighted sum (a streamed hash: the difference of two message sizes)."""

    label: str
    published_cycles: float
    ops: tuple[str, ...]
    counts: list[OpCount] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    weights: tuple[float, ...] = ()

    def _w(self) -> list[float]:
        return list(self.weights) if self.weights else [1.0] * len(self.counts)

    def coef(self, name: str, t: Timing | None = None) -> float:
        """Cycles per unit of parameter `name`: its counter, scaled (with `t`) by how much of a change
        of the class costs reaches the total at the point (see `absorption`)."""
        return float(
            sum(
                w * counter_sum(c.counters, name) * (absorption(c, t) if t is not None else 1.0)
                for w, c in zip(self._w(), self.counts)
            )
        )

    def _sum(self, k: int) -> float:
        return sum(w * c.cycles[k] for w, c in zip(self._w(), self.counts))

    @property
    def point(self) -> float:
        return self._sum(1)

    @property
    def flipped(self) -> float:
        return self._sum(0)

    @property
    def high(self) -> float:
        return self._sum(2)


def absorption(c: OpCount, t: Timing) -> float:
    """The share of a change of the class costs that reaches an operation's cycles with the prefetch
    as at the point: behind the prefetch buffer, a sequential flash line's wait is what is left of the
    wait states after the cycles spent in the previous line, so slower instructions hide more of it.
    Measured per operation from the plugin's own sets: (set 2 - set 1) / the change the counters give."""
    linear = sum(counter_sum(c.counters, n) * (t.costs[n][2] - t.costs[n][1]) for n in fitted_names(t))
    if linear <= 0:
        return 1.0
    return min(max((c.cycles[2] - c.cycles[1]) / linear, 0.0), 1.0)


# --- the board's core and its counting sets -----------------------------------------------------


def board_core(base: Core, name: str, clock_mhz: float, wait_states: int) -> Core:
    """`base` with the board's clock and flash wait states (its model and memory geometry kept)."""
    if clock_mhz <= 0 or not math.isfinite(clock_mhz):
        raise InputError(f"--board-clock {clock_mhz:g}: give the board's CPU clock in MHz (> 0)")
    if wait_states < 0:
        raise InputError(f"--wait-states {wait_states}: give the flash wait states at that clock (>= 0)")
    t = base.timing
    if t is None:
        raise DeviceError(f"--core {base.name} has no timing model to calibrate")
    costs = dict(t.costs)
    if base.profile == "M":
        costs["flash_ws"] = (float(wait_states),) * 3
    return dataclasses.replace(
        base,
        name=name,
        clock_mhz=float(clock_mhz),
        flash_wait_states=wait_states if base.profile == "M" else base.flash_wait_states,
        timing=dataclasses.replace(t, costs=costs),
    )


def fitted_names(t: Timing) -> list[str]:
    """The continuous parameters a fit may move: banded ones with a counter (flash_ws is the board's)."""
    return [k for k in t.costs if k in COEFFICIENTS and t.costs[k][0] != t.costs[k][2]]


def switch_values(t: Timing) -> tuple[float, float] | None:
    """(point, the other band end) of the prefetch switch when its band has both values."""
    lo, mid, hi = t.costs.get(SWITCH, (0.0, 0.0, 0.0))
    if lo == hi:
        return None
    return mid, (hi if hi != mid else lo)


def counting_core(dev: Core) -> Core:
    """`dev` with the three plugin sets a calibration needs (see the module's docstring)."""
    t = dev.timing
    assert t is not None
    costs = {k: (v[1], v[1], v[1]) for k, v in t.costs.items()}
    for k in fitted_names(t):
        costs[k] = (t.costs[k][1], t.costs[k][1], t.costs[k][2])
    sw = switch_values(t)
    if sw is not None:
        costs[SWITCH] = (sw[1], sw[0], sw[0])
    return dataclasses.replace(dev, name=f"calibrate-{dev.name}", timing=dataclasses.replace(t, costs=costs))


# --- counting (cached) ---------------------------------------------------------------------------


def _cache_path(stack: str, config: str, target: str) -> Path:
    d = device_home() / "calibrate"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{stack}-{config}-{target}.json"


def count_ops(
    dev: Core, stack: str, config: str | None, ops: Sequence[str], progress: Callable[[str], None] | None = None
) -> tuple[dict[str, OpCount], dict[str, str]]:
    """The counts of `ops` of one build on the board's core: ({op: counts}, {op: why not counted})."""

    cdev = counting_core(dev)
    target = D.target_for(dev)
    build = ensure_built(stack, target, config)
    known = set(build.crypto_ops)
    missing = {op: f"the {stack} build ({build.config}) does not run {op}" for op in ops if op not in known}
    key = "|".join(
        (
            build.client.parent.name,
            hashlib.sha256(repr(dataclasses.replace(cdev, name="", description="")).encode()).hexdigest()[:16],
            __version__,
        )
    )
    path = _cache_path(stack, build.config, target)
    try:
        cache = json.loads(path.read_text())
        rows = cache["rows"] if cache.get("key") == key else {}
    except (OSError, ValueError, KeyError, TypeError):
        rows = {}
    out: dict[str, OpCount] = {}
    for op in ops:
        if op in missing:
            continue
        if op not in rows:
            if progress:
                progress(f"{stack}[{build.config}] {op}")
            series = D.measure_crypto(cdev, stack, [op], 1, build, timed=True)  # the fit's core, as an object
            s = series[0]
            d = s.derived_as(CountedDerived)
            t = d.time
            if s.status == "failed" or t is None or t.cycles is None:
                missing[op] = "; ".join(f.reason for f in s.failures)[:300] or "no cycles counted"
                continue
            rows[op] = {
                "instructions": d.instructions_median,
                "cycles": [t.cycles_low, t.cycles, t.cycles_high],
                "counters": t.counters or {},
            }

            atomic_write(path, json.dumps({"key": key, "rows": rows}))
        r = rows[op]
        out[op] = OpCount(
            op,
            float(r["instructions"]),
            tuple(float(x) for x in r["cycles"]),  # type: ignore[arg-type]
            {k: int(v) for k, v in r["counters"].items()},
        )
    return out, missing


# --- the fit --------------------------------------------------------------------------------------


@dataclass
class Fit:
    params: dict[str, float]  # fitted value of every fitted parameter (and the switch)
    bounds: dict[str, tuple[float, float, float]]  # the sourced (low, point, high)
    errors: list[float]  # predicted / published - 1, per row, at the fit
    cost: float
    fixed: list[str]  # banded parameters no row depends on (kept at their point)

    @property
    def median_abs_error(self) -> float:
        return statistics.median(abs(e) for e in self.errors) if self.errors else float("nan")


def _flipped(values: dict[str, float], t: Timing) -> bool:
    sw = switch_values(t)
    return sw is not None and SWITCH in values and values[SWITCH] != sw[0]


def predict(row: Row, values: dict[str, float], t: Timing) -> float:
    """The row's cycles with the parameters at `values` (others at their point). With the switch
    flipped the flash wait is not overlapped and every class cycle counts in full."""
    flip = _flipped(values, t)
    c = row.flipped if flip else row.point
    for k, v in values.items():
        if k != SWITCH:
            c += row.coef(k, None if flip else t) * (v - t.costs[k][1])
    return c


def surrogate_error(rows: Sequence[Row], t: Timing, exact: Sequence[float], values: dict[str, float]) -> float:
    """The largest |predicted / plugin - 1| at `values`, against the plugin's own cycles `exact` there."""
    errs = [abs(predict(r, values, t) / e - 1) for r, e in zip(rows, exact) if e > 0]
    return max(errs, default=0.0)


def fit(rows: Sequence[Row], t: Timing) -> Fit:
    """The bounded least-squares fit of `rows` (at least one) over t's banded parameters."""
    from scipy.optimize import least_squares  # reason: scipy: ~1 s to import (start-up)

    if not rows:
        raise CalibrationFitError("no rows to fit")
    names = fitted_names(t)
    pub = np.array([r.published_cycles for r in rows])
    base = np.array([r.point for r in rows])
    coef = np.array([[r.coef(k, t) for k in names] for r in rows]).reshape(len(rows), len(names))
    coef_flip = np.array([[r.coef(k) for k in names] for r in rows]).reshape(len(rows), len(names))
    width = np.array([t.costs[k][2] - t.costs[k][0] for k in names])
    effect = np.abs(coef) * width / np.maximum(base, 1.0)[:, None] if names else np.zeros((len(rows), 0))
    use = [i for i, k in enumerate(names) if effect[:, i].max(initial=0.0) >= MIN_EFFECT]
    fixed = [names[i] for i in range(len(names)) if i not in use]
    lo = np.array([t.costs[names[i]][0] for i in use])
    hi = np.array([t.costs[names[i]][2] for i in use])
    x0 = np.array([t.costs[names[i]][1] for i in use])
    sw = switch_values(t)
    best: Fit | None = None
    for flip in [False, True] if sw is not None else [False]:
        start = base + ((np.array([r.flipped for r in rows]) - base) if flip else 0.0)
        a = (coef_flip if flip else coef)[:, use]

        def resid(x: Any, start: Any = start, a: Any = a) -> Any:
            c = start + a @ (x - x0)
            r = np.log(np.maximum(c, 1.0) / pub)
            return np.concatenate([r, PULL * (x - x0) / (hi - lo)]) if len(x) else r

        if use:
            sol = least_squares(
                resid,
                x0,
                bounds=(lo, hi),
                method="trf",
                x_scale=hi - lo,
                xtol=1e-10,
                ftol=1e-12,
                gtol=1e-12,
                max_nfev=2000,
                loss=LOSS,
                f_scale=F_SCALE,
            )
            x = np.clip(sol.x, lo, hi)
        else:
            x = x0
        r = resid(x)
        z = (r[: len(rows)] / F_SCALE) ** 2
        cost = float(np.sum(2 * (np.sqrt(1 + z) - 1)))  # soft_l1, as the solver minimised
        params = {names[i]: float(v) for i, v in zip(use, x)}
        if sw is not None:
            params[SWITCH] = sw[1] if flip else sw[0]
        errs = [float(math.exp(v) - 1) for v in r[: len(rows)]]
        cand = Fit(params, {k: t.costs[k] for k in list(params)}, errs, cost, fixed)
        if best is None or cand.cost < best.cost - 1e-12:
            best = cand
    assert best is not None
    return best


def leave_one_out(rows: Sequence[Row], t: Timing) -> list[float | None]:
    """Per row: predicted / published - 1 by the fit made without the row (None for a single row)."""
    out: list[float | None] = []
    for i, r in enumerate(rows):
        rest = [x for j, x in enumerate(rows) if j != i]
        if not rest:
            out.append(None)
            continue
        f = fit(rest, t)
        out.append(predict(r, f.params, t) / r.published_cycles - 1)
    return out


def disagreeing(rows: Sequence[Row], errors: Sequence[float], tolerance: float = TOLERANCE) -> list[tuple[Row, float]]:
    """The rows left outside the tolerance (errors: predicted / published - 1 per row), worst first."""
    bad = [(r, e) for r, e in zip(rows, errors) if abs(e) > tolerance]
    return sorted(bad, key=lambda x: -abs(x[1]))


def fitted_core(dev: Core, params: dict[str, float]) -> Core:
    """`dev` with each fitted parameter's point at its fitted value (bands kept)."""
    t = dev.timing
    assert t is not None
    costs = dict(t.costs)
    for k, v in params.items():
        lo, _mid, hi = costs[k]
        costs[k] = (lo, min(max(v, lo), hi), hi)
    return dataclasses.replace(dev, timing=dataclasses.replace(t, costs=costs))


def verify(
    dev: Core, params: dict[str, float], rows: Sequence[Row], progress: Callable[[str], None] | None = None
) -> list[float | None]:
    """The plugin's own cycles of each row on the fitted profile (None where an operation failed)."""
    fdev = fitted_core(dev, params)
    groups: dict[tuple[str, str | None], set[str]] = {}
    for r in rows:
        groups.setdefault((r.info["stack"], r.info.get("build")), set()).update(r.ops)
    got: dict[tuple[str, str | None, str], float] = {}
    for (stack, config), ops in groups.items():
        counts, _missing = count_ops(fdev, stack, config, sorted(ops), progress)
        got.update({(stack, config, op): c.cycles[1] for op, c in counts.items()})
    out: list[float | None] = []
    for r in rows:
        parts = [got.get((r.info["stack"], r.info.get("build"), op)) for op in r.ops]
        out.append(
            None if any(p is None for p in parts) else float(sum(w * p for w, p in zip(r._w(), parts) if p is not None))
        )
    return out


def at_bounds(f: Fit) -> list[str]:
    """The fitted parameters that ended at an end of their band ('name at high 3')."""
    out = []
    for k, v in f.params.items():
        lo, _mid, hi = f.bounds[k]
        if k != SWITCH and (math.isclose(v, lo, abs_tol=1e-6) or math.isclose(v, hi, abs_tol=1e-6)):
            out.append(f"{k} at its {'low' if math.isclose(v, lo, abs_tol=1e-6) else 'high'} end {v:g}")
    return out


def check_counted(rows: Sequence[Row]) -> None:
    if not rows:
        raise MeasurementError("no row of the log could be counted on the emulated core")
