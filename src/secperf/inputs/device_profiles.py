"""Saved device profiles: a board's own calibration (`secperf device calibrate`), kept as
$SECPERF_HOME/devices/NAME.toml and taken by `--device NAME` wherever a shipped core profile is.

A saved profile is a shipped core profile (its `base`: core model, memory geometry, sources) with
the board's clock and flash wait states and the fitted point of each timing parameter the fit moved.
A fitted point stays inside the parameter's sourced band (low and high are the shipped ones), so a
figure made with the profile keeps the model's band; the profile's description and its sources
name the log it was fitted to (file name and sha256), so every label and table that names the core
names the log.

File layout (written by `save`, read by `load`):

    [profile]   name, base, clock_mhz, flash_wait_states, description, and icache / prefetch
                where the board's memory differs from the base profile's
    [source]    log, log_sha256, stack, config, rows, made, secperf
    [timing]    parameter = fitted point (inside the base profile's band)
    [fit]       the fit's figures (median |error|, leave-one-out median |error|), for the record
"""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.paths import secperf_home
from ..core.writes import atomic_write
from . import core_profiles as D
from .core_profiles import DEVICE_ALIASES, Core, shipped_cores

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def profiles_dir() -> Path:
    return secperf_home() / "devices"


def saved() -> dict[str, Path]:
    """name -> file of every saved profile (sorted by name)."""
    try:
        d = profiles_dir()
        files = sorted(d.glob("*.toml")) if d.is_dir() else []
    except (OSError, InputError):
        return {}
    return {f.stem: f for f in files if NAME_RE.match(f.stem)}


def check_name(name: str) -> str:
    """A new profile's name: lower case, digits, '.', '-' or '_', and not a shipped profile's."""
    if not NAME_RE.match(name or ""):
        raise InputError(
            f"--name {name!r}: give a profile name of lower-case letters, digits, '.', '-' and '_' "
            f"(up to 64 characters), e.g. my-stm32l4-board"
        )
    if name in shipped_cores() or name in DEVICE_ALIASES:
        raise InputError(
            f"--name {name}: that is a shipped core profile's name; give the board's own name "
            f"(shipped: {', '.join(shipped_cores())})"
        )
    return name


def _q(v: Any) -> str:
    """A TOML value: strings quoted (JSON escapes are TOML's basic-string escapes), numbers as is."""

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v), ensure_ascii=False)


def save(
    name: str,
    base: str,
    clock_mhz: float,
    wait_states: int,
    description: str,
    source: dict[str, Any],
    points: dict[str, float],
    fit: dict[str, Any],
    icache: bool | None = None,
    prefetch: bool | None = None,
) -> Path:
    """Write the profile (atomically) and return its path; the profile is checked by reading it back."""

    check_name(name)
    b = D.board_memory(D.shipped(base), icache, prefetch)
    for k, v in points.items():  # checked before anything is written: no invalid profile on disk
        lo, _mid, hi = b.timing.costs.get(k, (1.0, 0.0, -1.0)) if b.timing else (1.0, 0.0, -1.0)
        if not lo <= float(v) <= hi:
            raise D.DeviceError(
                f"profile {name}: {k} = {v:g} is outside its sourced band {lo:g}..{hi:g} of {base}"
                if lo <= hi
                else f"profile {name}: {k} is no timing parameter of {base}"
            )
    lines = [
        "# secperf device profile, made by `secperf device calibrate` from a board's benchmark log",
        "[profile]",
        f"name = {_q(name)}",
        f"base = {_q(base)}",
        f"clock_mhz = {_q(float(clock_mhz))}",
        f"flash_wait_states = {_q(int(wait_states))}",
        f"description = {_q(description)}",
    ]
    # the board's memory where it differs from the base profile's (`device calibrate --icache/--prefetch`)
    lines += [
        f"{k} = {'true' if v else 'false'}" for k, v in (("icache", icache), ("prefetch", prefetch)) if v is not None
    ]
    lines += ["", "[source]"]
    lines += [f"{k} = {_q(v)}" for k, v in source.items()]
    lines += ["", "# fitted points, each inside the base profile's sourced band", "[timing]"]
    lines += [f"{k} = {_q(float(v))}" for k, v in points.items()]
    lines += ["", "[fit]"] + [f"{k} = {_q(v)}" for k, v in fit.items() if v is not None]
    d = profiles_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create {d}: {exc.strerror or exc}; check SECPERF_HOME") from None
    path = d / f"{name}.toml"
    atomic_write(path, ("\n".join(lines) + "\n").encode())
    load(name, path)
    return path


def load(name: str, path: str | Path) -> Core:
    """The saved profile `name` at `path` as a Core; DeviceError naming the file and the key otherwise."""
    where = f"saved device profile {path}"
    try:
        doc = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise D.DeviceError(f"{where}: cannot read it ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise D.DeviceError(f"{where}: not TOML ({exc}); remove it or calibrate again") from None
    prof, src, tim = doc.get("profile"), doc.get("source", {}), doc.get("timing", {})
    if not isinstance(prof, dict) or not isinstance(src, dict) or not isinstance(tim, dict):
        raise D.DeviceError(f"{where}: needs the tables [profile], [source] and [timing]")
    base_name = prof.get("base")
    if base_name not in D.shipped_cores():
        raise D.DeviceError(
            f"{where}: [profile].base {base_name!r} is no shipped core profile; known: {', '.join(D.shipped_cores())}"
        )
    memory = {k: prof.get(k) for k in ("icache", "prefetch")}
    for k, v in memory.items():
        if v is not None and not isinstance(v, bool):
            raise D.DeviceError(f"{where}: [profile].{k} = {v!r} must be true or false")
    base = D.board_memory(D.shipped(base_name), memory["icache"], memory["prefetch"])
    try:
        clock = float(prof["clock_mhz"])
        ws = int(prof["flash_wait_states"])
        desc = str(prof["description"])
    except (KeyError, TypeError, ValueError) as exc:
        raise D.DeviceError(
            f"{where}: [profile] needs clock_mhz, flash_wait_states and description ({exc!r})"
        ) from None
    if clock <= 0 or ws < 0:
        raise D.DeviceError(f"{where}: clock_mhz must be > 0 and flash_wait_states >= 0 (got {clock:g}, {ws})")
    log = f"board log {src.get('log', '?')} (sha256 {src.get('log_sha256', '?')})"
    sources = {
        **base.sources,
        "calibration": f"fitted by secperf device calibrate to {log}; "
        f"{src.get('stack', '?')}[{src.get('config', '?')}], "
        f"{src.get('rows', '?')} rows",
    }
    timing = base.timing
    if timing is not None:
        costs = dict(timing.costs)
        for k, v in tim.items():
            if k not in costs:
                raise D.DeviceError(
                    f"{where}: [timing].{k} is no timing parameter of {base_name}; known: {', '.join(costs)}"
                )
            lo, _mid, hi = costs[k]
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not lo <= float(v) <= hi:
                raise D.DeviceError(f"{where}: [timing].{k} = {v!r} is outside its sourced band {lo:g}..{hi:g}")
            costs[k] = (lo, float(v), hi)
        if "flash_ws" in costs and (base.profile == "M" or costs["flash_ws"][2]):
            costs["flash_ws"] = (float(ws),) * 3
        timing = dataclasses.replace(
            timing, costs=costs, sources={**timing.sources, "calibration": sources["calibration"]}
        )
    elif tim:
        raise D.DeviceError(f"{where}: the base profile {base_name} has no timing model to calibrate")
    return dataclasses.replace(
        base,
        name=name,
        description=desc,
        clock_mhz=clock,
        flash_wait_states=ws if base.profile == "M" else base.flash_wait_states,
        sources=sources,
        timing=timing,
    )
