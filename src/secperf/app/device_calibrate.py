"""`secperf device calibrate LOG`: a board's own benchmark log fitted into a named device profile.

Steps: read the log (inputs/board_log.py: wolfCrypt's, Mbed TLS's or pqm4's benchmark output), map
each line to secperf operations (lines it cannot map are listed with the reason), count those
operations on the emulated core with the board's clock and wait states (measure/device_calibrate.py,
cached), fit the core's banded timing parameters inside their sourced bounds, print every row's
published and predicted figure with its leave-one-out error, and save the profile as
$SECPERF_HOME/devices/NAME.toml, which `--device NAME` then takes everywhere.

Decisions:
- `--core` is a shipped profile (its memory geometry and model are the board's: cortex-m4-168 for an
  STM32F4) or a core model name (cortex-m4, cortex-m33, ...): then the shipped profile of that model
  with the board's wait states and the nearest clock (else the nearest clock).
- The library: wolfCrypt rows count on wolfSSL (the build nearest the log's version line: 5.5.4 up to
  5.7, 5.9 after; `--stack` overrides), Mbed TLS rows on Mbed TLS 3.6 (`--stack mbedtls` for 2.28),
  pqm4 rows on PQClean's clean code. `--config` names the build configuration (default: the stack's).
  A wolfSSL 4.x log is counted on 5.5.4 as well: 4.x code is served by no package registry secperf
  reaches, so the record and the terminal say so (`release_note`): those rows' errors include the
  code changes since the log's release, not only the board.
- A fit "fits" when every row is within `--tolerance` (default 15 %) of the fitted prediction; then
  the profile is saved (exit 0). Otherwise nothing is saved, the rows outside are named with the
  parameters that ended at a bound (exit 1): no parameters within their sourced bounds fit the log.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..core.errors import InputError
from ..inputs import board_log as B
from ..inputs import device_profiles as P
from ..inputs.core_profiles import board_memory, shipped_cores
from ..inputs.device_profiles import check_name
from ..inputs.devices import core
from ..lab import registry
from ..measure import device as D
from ..measure import device_calibrate as C
from ..measure.device_build import default_config
from .device_stacks import wolfssl_build_for
from .reporter import reporter

if TYPE_CHECKING:
    from ..inputs.core_profiles import Core


@dataclass
class CalibrateOptions:
    log: str
    board_clock: float
    wait_states: int
    name: str
    core: str = "cortex-m4"
    stack: str | None = None
    config: str | None = None
    scheme: str | None = None
    tolerance: float = 0.15
    icache: bool | None = None  # the board's instruction cache (None: the profile's)
    prefetch: bool | None = None  # the board's flash prefetch (None: the profile's)


def base_core(value: str, clock: float, ws: int) -> Core:
    """The shipped profile a calibration starts from (see the module's decisions)."""

    shipped = shipped_cores()
    if value in shipped:
        return core(value)
    cands = [core(n) for n in shipped]
    cands = [c for c in cands if c.timing is not None and (c.timing.model == value or c.qemu_cpu == value)]
    if not cands:
        models = sorted({core(n).timing.model for n in shipped if core(n).timing is not None})  # type: ignore[union-attr]
        raise InputError(
            f"--core {value}: give a core model ({', '.join(models)}) or a shipped profile ({', '.join(shipped)})"
        )
    return min(cands, key=lambda c: (c.flash_wait_states != ws, abs(c.clock_mhz - clock), c.name))


def stack_for(fmt: str, version: str | None, given: str | None) -> str:
    if fmt == "pqm4":
        return "pqclean"
    if given:
        return given
    if fmt == "mbedtls":
        return "mbedtls3"
    return wolfssl_build_for(version)[0]


def release_note(formats: list[str], version: str | None) -> str | None:
    """Why a wolfCrypt log of an older release series is counted on other code (None: it is not)."""
    if "wolfcrypt" not in formats or not version:
        return None
    try:
        major = int(version.split(".")[0])
    except ValueError:
        return None
    if major >= 5:
        return None
    return (
        f"the log is wolfSSL {version}: 4.x code is served by no package registry secperf reaches, so its rows "
        f"are counted on wolfSSL 5.5.4, the nearest release built here; their errors include the code changes "
        f"since {version}, not only the board"
    )


def _check(o: CalibrateOptions) -> None:
    if not o.board_clock or o.board_clock <= 0:
        raise InputError(f"--board-clock {o.board_clock:g}: give the board's CPU clock in MHz (> 0)")
    if o.wait_states is None or o.wait_states < 0 or o.wait_states > 15:
        raise InputError(
            f"--wait-states {o.wait_states}: give the flash wait states at that clock (0..15, from "
            f"the part's reference manual)"
        )
    if not 0 < o.tolerance < 1:
        raise InputError(f"--tolerance {o.tolerance:g}: give a fraction between 0 and 1 (0.15 = 15 %)")
    check_name(o.name)


def calibrate(o: CalibrateOptions) -> tuple[dict[str, Any], int]:
    """The calibration's record (rows, fit, leave-one-out errors, the saved profile) and exit code."""

    _check(o)
    log, data = B.read(o.log, o.scheme)
    sha = hashlib.sha256(data).hexdigest()
    base = base_core(o.core, o.board_clock, o.wait_states)
    if base.timing is None:
        raise InputError(f"--core {base.name}: it has no timing model to calibrate")
    if (o.icache is not None or o.prefetch is not None) and base.profile != "M":
        raise InputError(
            f"--icache/--prefetch: {base.name} is an application core; they set a microcontroller's flash cache "
            f"and prefetch (a Cortex-M core)"
        )

    shipped = base
    base = board_memory(base, o.icache, o.prefetch)  # the board's memory where it differs from the profile's
    dev = C.board_core(base, o.name, o.board_clock, o.wait_states)
    groups: dict[tuple[str, str | None], list[B.LogRow]] = {}
    for r in log.rows:
        st = stack_for(r.fmt, log.version, o.stack)
        groups.setdefault((st, o.config if st != "pqclean" or o.stack == "pqclean" else None), []).append(r)

    registry.start()  # every emulator under the run registry
    rows: list[C.Row] = []
    not_counted: list[dict[str, Any]] = []
    for (st, conf), lrows in groups.items():
        D.check_stacks(st, dev)
        if conf is not None:
            D.check_build_configs(conf, [st], dev)
        ops = sorted({op for r in lrows for op in r.ops})
        reporter().status(
            f"counting {len(ops)} operations of {st}[{conf or 'default'}] on {base.name} at "
            f"{o.board_clock:g} MHz, {o.wait_states} wait states (cached for the next run)"
        )
        counts, missing = C.count_ops(dev, st, conf, ops, progress=lambda s: reporter().note(f"  counting {s}"))
        for r in lrows:
            why = [missing[op] for op in r.ops if op in missing]
            info = {
                "line": r.line_no,
                "text": r.text.strip(),
                "operation": r.operation,
                "value": r.value,
                "unit": r.unit,
                "stack": st,
                "config": conf or default_config(st, D.target_for(dev)),
                "build": conf,
            }
            if why:
                not_counted.append({**info, "reason": "; ".join(why)})
                continue
            rows.append(
                C.Row(
                    f"{r.operation} (line {r.line_no})",
                    r.cycles(o.board_clock),
                    r.ops,
                    [counts[op] for op in r.ops],
                    info,
                    r.weights,
                )
            )
    if not rows:
        raise InputError(
            f"LOG {o.log}: none of its {len(log.rows)} operations could be counted here ("
            f"{'; '.join(x['reason'] for x in not_counted[:3])})"
        )
    t = dev.timing
    assert t is not None
    f = C.fit(rows, t)
    loo = C.leave_one_out(rows, t)
    reporter().status("counting the fitted profile (its figures are the plugin's own)")
    exact = C.verify(dev, f.params, rows, progress=lambda s: reporter().note(f"  counting {s}"))
    cyc = [x if x is not None else C.predict(r, f.params, t) for r, x in zip(rows, exact)]
    errors = [c / r.published_cycles - 1 for r, c in zip(rows, cyc)]
    bad = C.disagreeing(rows, errors, o.tolerance)
    mhz = o.board_clock * 1e3
    out_rows = [
        {
            **{k: v for k, v in r.info.items() if k != "build"},
            "published_ms": r.published_cycles / mhz,
            "shipped_ms": r.point / mhz,
            "shipped_error": r.point / r.published_cycles - 1,
            "predicted_ms": c / mhz,
            "error": e,
            "loo_error": le,
        }
        for r, c, e, le in zip(rows, cyc, errors, loo)
    ]
    loo_abs = [abs(x) for x in loo if x is not None]
    doc: dict[str, Any] = {
        "log": str(o.log),
        "log_sha256": sha,
        "formats": log.formats,
        "version": log.version,
        "release_note": release_note(log.formats, log.version),
        "core": base.name,
        "board_clock_mhz": o.board_clock,
        "wait_states": o.wait_states,
        "icache": o.icache,
        "prefetch": o.prefetch,
        "name": o.name,
        "rows": out_rows,
        "not_counted": not_counted,
        "unmapped": [{"line": u.line_no, "text": u.text.strip(), "reason": u.reason} for u in log.unmapped],
        "parameters": {
            k: {"shipped": f.bounds[k][1], "fitted": v, "low": f.bounds[k][0], "high": f.bounds[k][2]}
            for k, v in f.params.items()
        },
        "not_fitted": f.fixed,
        "at_bounds": C.at_bounds(f),
        "median_abs_error": statistics.median(abs(e) for e in errors),
        "shipped_median_abs_error": statistics.median(abs(x["shipped_error"]) for x in out_rows),
        "loo_median_abs_error": statistics.median(loo_abs) if loo_abs else None,
        "surrogate_error": C.surrogate_error(
            [r for r, x in zip(rows, exact) if x is not None], t, [x for x in exact if x is not None], f.params
        ),
        "tolerance": o.tolerance,
        "fits": not bad,
        "disagree": [{"row": r.label, "error": e} for r, e in bad],
        "profile": None,
    }
    if bad:
        return doc, 1
    stacks = sorted({f"{st}[{conf or 'default'}]" for st, conf in groups})
    desc = (
        f"board calibrated to {Path(o.log).name} (sha256 {sha[:12]}): {base.qemu_cpu} at {o.board_clock:g} MHz, "
        f"{o.wait_states} flash wait states, timing model and memory of {base.name}"
    )
    path = P.save(
        o.name,
        shipped.name,
        o.board_clock,
        o.wait_states,
        desc,
        {
            "log": Path(o.log).name,
            "log_sha256": sha,
            "stack": ",".join(stacks),
            "config": o.config or "default",
            "rows": len(rows),
            "secperf": _version(),
        },
        {k: v for k, v in f.params.items() if v != f.bounds[k][1]},
        {
            "median_abs_error": round(doc["median_abs_error"], 5),
            "loo_median_abs_error": None
            if doc["loo_median_abs_error"] is None
            else round(doc["loo_median_abs_error"], 5),
        },
        o.icache,
        o.prefetch,
    )
    doc["profile"] = str(path)
    return doc, 0


def _version() -> str:
    return __version__


def text(cal: dict[str, Any]) -> str:
    """The calibration (a summary of the fit, not a Result) for the terminal."""
    out = [
        f"board log {cal['log']} (sha256 {cal['log_sha256'][:12]}; {', '.join(cal['formats'])}"
        f"{', wolfSSL ' + cal['version'] if cal['version'] else ''}) on {cal['core']} at "
        f"{cal['board_clock_mhz']:g} MHz, {cal['wait_states']} wait states",
        *([f"note: {cal['release_note']}"] if cal.get("release_note") else []),
        "",
        f"{'line':>5} {'operation':24} {'build':26} {'published':>11} {'shipped':>9} {'fitted':>11} {'error':>7} "
        f"{'held out':>8}",
    ]
    for r in cal["rows"]:
        loo = "" if r["loo_error"] is None else f"{r['loo_error']:+8.1%}"
        out.append(
            f"{r['line']:>5} {r['operation']:24} {(r['stack'] + '[' + r['config'] + ']')[:26]:26} "
            f"{r['published_ms']:9.3f}ms {r['shipped_error']:+9.1%} {r['predicted_ms']:9.3f}ms "
            f"{r['error']:+7.1%} {loo:>8}"
        )
    out.append(
        f"\nmedian |error|: shipped profile {cal['shipped_median_abs_error']:.1%}, fitted "
        f"{cal['median_abs_error']:.1%}; held out (leave one row out) "
        + ("n/a (one row)" if cal["loo_median_abs_error"] is None else f"{cal['loo_median_abs_error']:.1%}")
    )
    out.append("parameters (shipped -> fitted, sourced bounds):")
    for k, p in cal["parameters"].items():
        out.append(f"  {k:20} {p['shipped']:g} -> {p['fitted']:.3g}   [{p['low']:g}, {p['high']:g}]")
    if cal["not_fitted"]:
        out.append(f"  not fitted (no row depends on them): {', '.join(cal['not_fitted'])}")
    out.append(
        f"  fitted figures are the plugin's own on the fitted profile; the fit's linear cycle model "
        f"(behind the held-out column) was within {cal['surrogate_error']:.2%} of them"
    )
    if cal["not_counted"]:
        out.append("rows not counted:")
        out += [f"  line {x['line']}: {x['operation']}: {x['reason']}" for x in cal["not_counted"]]
    if cal["unmapped"]:
        out.append(f"lines not mapped to a secperf operation ({len(cal['unmapped'])}):")
        out += [f"  line {u['line']}: {u['reason']}" for u in cal["unmapped"]]
    if cal["fits"]:
        out.append(f"\nsaved device profile {cal['name']}: {cal['profile']} (use --device {cal['name']})")
    else:
        out.append(
            f"\nno parameters within their sourced bounds fit this log (tolerance {cal['tolerance']:.0%}); "
            f"rows that disagree: "
            + "; ".join(f"{d['row']} {d['error']:+.1%}" for d in cal["disagree"])
            + (f"; {', '.join(cal['at_bounds'])}" if cal["at_bounds"] else "")
            + ". Nothing saved: check the clock, wait states, --stack and --config of the log's build."
        )
    return "\n".join(out) + "\n"


def run(o: CalibrateOptions, as_json: bool) -> tuple[str, int]:
    doc, code = calibrate(o)
    return (json.dumps(doc, indent=1, default=str) + "\n" if as_json else text(doc)), code
