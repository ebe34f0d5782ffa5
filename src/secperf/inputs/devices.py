"""Device profiles (data/devices.toml): what a MAC costs on a microcontroller, and the cores
`secperf device` emulates (clock, cycles-per-instruction range, flash wait states), with sources."""

from __future__ import annotations

import math
import sys
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, overload

from ..core.errors import InputError
from . import device_profiles
from .core_profiles import (  # noqa: F401 - handed on: callers name them as devices.X
    COST_NAMES,
    DEVICE_ALIASES,
    GEOMETRY_NAMES,
    MEMORY_COSTS,
    Core,
    DeviceError,
    Timing,
    raw,
    shipped_core,
    shipped_cores,
    timing,
)

BLOCK_BYTES = 16


@dataclass(frozen=True)
class MacCost:
    device: str
    mac: str
    unit: str  # "cycles" or "instructions"
    basis: str  # how a per-message figure is made from the profile
    source: str
    cycles_per_byte: float | None = None
    cycles_per_block: float | None = None
    instructions: tuple[tuple[int, int], ...] = ()

    def per_message(self, nbytes: int) -> float:
        """Cost of one tag over nbytes (cycles, or instructions for measured profiles)."""
        blocks = max(1, math.ceil(nbytes / BLOCK_BYTES))
        if self.cycles_per_block is not None:
            return self.cycles_per_block * blocks
        if self.cycles_per_byte is not None:
            return self.cycles_per_byte * BLOCK_BYTES * blocks
        pts = self.instructions
        if nbytes <= pts[0][0]:
            return float(pts[0][1])
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            if nbytes <= x1:
                return y0 + (y1 - y0) * (nbytes - x0) / (x1 - x0)
        (x0, y0), (x1, y1) = pts[-2], pts[-1]
        return y1 + (y1 - y0) * (nbytes - x1) / (x1 - x0)


def devices() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = raw()["devices"]
    return out


def mac_cost(device: str, mac: str) -> MacCost:
    devs = devices()
    if device not in devs:
        raise DeviceError(f"unknown device {device!r}; known: {', '.join(devs)}")
    macs = devs[device].get("macs", {})
    if mac not in macs:
        raise DeviceError(f"device {device!r} has no figure for MAC {mac!r}; it has: {', '.join(macs)}")
    e = macs[mac]
    src = raw()["sources"].get(e.get("source", ""), e.get("source", "no source"))
    if "cycles_per_block" in e:
        return MacCost(
            device,
            mac,
            "cycles",
            "published cycles per 16-byte block x blocks",
            src,
            cycles_per_block=float(e["cycles_per_block"]),
        )
    if "cycles_per_byte" in e:
        return MacCost(
            device,
            mac,
            "cycles",
            "published long-message cycles/byte x 16 per 16-byte block (short messages cost more in reality)",
            src,
            cycles_per_byte=float(e["cycles_per_byte"]),
        )
    if "instructions" in e:
        pts = tuple(sorted((int(k), int(v)) for k, v in e["instructions"].items()))
        if len(pts) < 2:
            raise DeviceError(f"devices.toml: {device}/{mac}: instructions needs at least two sizes")
        return MacCost(
            device,
            mac,
            "instructions",
            "measured instructions per tag (QEMU), interpolated between measured lengths; a lower bound for cycles",
            src,
            instructions=pts,
        )
    raise DeviceError(f"devices.toml: {device}/{mac} has no cycles_per_byte, cycles_per_block or instructions")


# --- cores for `secperf device` ------------------------------------------------------------------


def cores() -> dict[str, dict[str, Any]]:
    """Every core profile `--device` takes: the shipped ones, then the user's saved (calibrated)
    profiles under $SECPERF_HOME/devices (their entry names the file; core() reads it)."""
    out = dict(shipped_cores())
    for name, path in saved_profiles().items():
        out.setdefault(name, {"saved_profile": str(path)})
    return out


def core(name: str) -> Core:
    found = find_core(name)
    if found is None:
        raise DeviceError(f"unknown device {name!r}; known: {', '.join(cores())}")
    return found


def find_core(name: str) -> Core | None:
    """The core profile `name` names, or None when no core has that name (a saved profile that
    fails to read is its own error): one look-up where a caller would ask `in cores()` and then core()."""
    if name in _TEMPORARY:
        return _TEMPORARY[name]
    c = cores().get(name)
    if c is None:
        return None
    if "saved_profile" in c:
        return device_profiles.load(name, c["saved_profile"])
    return shipped_core(name, c)


# --- --device as one object (whatif, plan, plan --verify and a system file's [device].core) ----------
@lru_cache(maxsize=1)
def cost_tables() -> tuple[str, ...]:
    """The shipped cost tables' names (data/whatif_costs.toml), read directly: the spec layer imports no model."""
    text = resources.files("secperf.data").joinpath("whatif_costs.toml").read_text(encoding="utf-8")
    return tuple(tomllib.loads(text).get("tables", {}))


@dataclass(frozen=True)
class DeviceChoice:
    """A --device value resolved once: its name with an old spelling mapped, whether it names a shipped
    cost table (which takes precedence over a core of the same name), else the emulated core it names
    (None: unknown, or no --device). The layers below take this object, never the name again."""

    name: str | None
    core: Core | None = None
    table: bool = False

    @property
    def known(self) -> bool:
        return self.name is None or self.table or self.core is not None

    def unknown(self, opt: str = "--device") -> InputError:
        """The error for a name that is neither a core nor a cost table, naming both lists."""
        return InputError(
            f"{opt}: unknown device {self.name!r}; emulated cores: {', '.join(cores())}; "
            f"cost tables: {', '.join(cost_tables())}"
        )


def choose_device(name: str | None) -> DeviceChoice:
    """`name` (a --device value, a pattern's or a system file's device) as a DeviceChoice: the alias
    mapped, the cost tables asked first, then the cores, in one call."""
    name = resolve_device(name)
    if not name:
        return DeviceChoice(None)
    if name in cost_tables():
        return DeviceChoice(name, table=True)
    return DeviceChoice(name, find_core(name))


def resolve_core(name: str) -> Core:
    """A --device value as the emulated core it names, old spellings mapped: resolved once, at the
    command's edge; the layers below (measure, model) take the Core, never the name (InputError
    naming the known cores)."""
    try:
        return core(resolve_device(name))
    except DeviceError as exc:
        raise InputError(str(exc)) from None


def core_names(pred: Callable[[Core], bool]) -> list[str]:
    """The cores (shipped and saved) for which `pred` holds: the lists an error message names."""
    return [n for n in cores() if pred(core(n))]


# --- saved profiles (secperf device calibrate) ---------------------------------------------------
# A saved profile is a shipped core profile with the board's clock and wait states and fitted timing
# parameters, read from $SECPERF_HOME/devices/NAME.toml (inputs/device_profiles.py). A temporary core
# is one a calibration counts on (its parameter sets are the fit's, not a profile's): known to core()
# in this process only, while the `temporary_core` block runs.
_TEMPORARY: dict[str, Core] = {}


def saved_profiles() -> dict[str, Path]:
    """name -> file of the saved device profiles (none when the directory does not exist)."""
    return device_profiles.saved()


@contextmanager
def temporary_core(dev: Core) -> Iterator[str]:
    """`dev` known to core() by its name inside the block (a calibration's counting runs)."""
    if dev.name in shipped_cores():
        raise DeviceError(f"a temporary core may not take the shipped profile's name {dev.name!r}")
    _TEMPORARY[dev.name] = dev
    try:
        yield dev.name
    finally:
        _TEMPORARY.pop(dev.name, None)


_NOTED: set[str] = set()


@overload
def resolve_device(name: str) -> str: ...
@overload
def resolve_device(name: None) -> None: ...
def resolve_device(name: str | None) -> str | None:
    """A --device value with an old spelling mapped to today's name (a note on stderr, once)."""
    if name in DEVICE_ALIASES:
        new = DEVICE_ALIASES[name]
        if name not in _NOTED:
            _NOTED.add(name)

            print(
                f"note: --device {name} is now the emulated core {new} (its client costs are counted on the "
                f"emulator; the server keeps this host's); the old name is accepted for this release",
                file=sys.stderr,
            )
        return new
    return name
