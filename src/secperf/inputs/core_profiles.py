"""The core profiles secperf ships (data/devices.toml [cores]): clock, cycles-per-instruction range,
flash wait states and the timing model's sourced parameters of every core `secperf device` emulates.
Saved (calibrated) profiles build on these (inputs/device_profiles.py); inputs/devices.py resolves a
`--device` name over both."""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from ..core.errors import InputError


class DeviceError(InputError):
    """Unknown device or MAC, or a malformed profile; the message lists what is known."""


@lru_cache(maxsize=1)
def raw() -> dict[str, Any]:
    text = resources.files("secperf.data").joinpath("devices.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


@dataclass(frozen=True)
class Core:
    """A core secperf emulates: instruction counts are measured on it, milliseconds derived."""

    name: str
    description: str
    profile: str  # "A" (runs Debian's armhf builds) or "M" (needs a Cortex-M build)
    qemu_cpu: str
    clock_mhz: float
    cpi: tuple[float, float]  # cycles per instruction, low and high
    cpi_estimate: bool  # True: the range is secperf's estimate, not a measurement
    cpi_note: str
    sources: dict[str, str]  # what -> source text (clock, cpi, core)
    flash_wait_states: int | None = None
    timing: Timing | None = None  # the per-class timing model (data/devices.toml [timing_models])

    def ms_range(self, instructions: float) -> tuple[float, float]:
        """The DERIVED time range of `instructions` on this core: instructions x CPI / clock."""
        hz = self.clock_mhz * 1e6
        return instructions * self.cpi[0] / hz * 1e3, instructions * self.cpi[1] / hz * 1e3


def shipped_cores() -> dict[str, dict[str, Any]]:
    """The core profiles secperf ships (data/devices.toml)."""
    out: dict[str, dict[str, Any]] = raw().get("cores", {})
    return out


def shipped_core(name: str, c: dict[str, Any]) -> Core:
    """The shipped core `name` from its devices.toml entry `c` (DeviceError naming what is malformed)."""
    srcs = raw().get("core_sources", {})
    try:
        lo, hi = (float(x) for x in c["cpi"])
        if not 0 < lo <= hi:
            raise ValueError
        out = Core(
            name=name,
            description=c["description"],
            profile=c["profile"],
            qemu_cpu=c["qemu_cpu"],
            clock_mhz=float(c["clock_mhz"]),
            cpi=(lo, hi),
            cpi_estimate=c["cpi_source"] == "cpi_estimate",
            cpi_note=c.get("cpi_note", ""),
            sources={k.removesuffix("_source"): srcs.get(c[k], c[k]) for k in c if k.endswith("_source")},
            flash_wait_states=c.get("flash_wait_states"),
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise DeviceError(
            f"devices.toml: cores.{name} is malformed ({exc!r}): it needs description, profile, "
            f"qemu_cpu, clock_mhz, cpi = [low, high] and cpi_source"
        ) from None
    if out.profile not in ("A", "M"):
        raise DeviceError(f"devices.toml: cores.{name}: profile must be A or M, not {out.profile!r}")
    if "timing_model" in c or "memory" in c:
        out = dataclasses.replace(out, timing=timing(name, c))
    return out


# --- the timing model's parameters ---------------------------------------------------------------
# The names the plugin (native/device/plugin/timing.c) reads: class costs from a core model, memory
# and predictor parameters from the core's own table. Every one is required: a missing one is a
# DeviceError naming it and the core.
COST_NAMES = (
    "alu",
    "load",
    "load_pipelined",
    "store",
    "ldrd",
    "strd",
    "ldm_base",
    "ldm_per_reg",
    "stm_base",
    "stm_per_reg",
    "mul",
    "mla",
    "mull",
    "div",
    "branch",
    "branch_taken_extra",
    "mispredict",
    "it",
    "vfp",
    "vfp_mem",
    "vdiv",
    "neon",
    "neon_mem",
    "other",
    "agu_stall",
    "branch_load_extra",
    "store_regoff_extra",
    "branch_unaligned_extra",
    "unaligned_run_extra",
)
# optional: a model without it has no such rule (dual_issue: the cycles of the younger instruction of a
# pair the core issues together, native/device/plugin/dual_issue.h; only partially dual-issuing cores)
OPTIONAL_COSTS = ("dual_issue",)
MEMORY_COSTS = ("flash_ws", "l1_miss", "l2_miss", "no_prefetch")
GEOMETRY_NAMES = (
    "fetch_bytes",
    "icache_entries",
    "icache_ways",
    "dcache_entries",
    "dcache_ways",
    "dfetch_bytes",
    "l1i_bytes",
    "l1i_line",
    "l1i_ways",
    "l1d_bytes",
    "l1d_line",
    "l1d_ways",
    "l2_bytes",
    "l2_line",
    "l2_ways",
    "bp_entries",
)


@dataclass(frozen=True)
class Timing:
    """A core's timing model: cycles per instruction class and memory stalls as (low, point, high),
    cache and predictor geometry, and where each figure comes from."""

    model: str
    costs: dict[str, tuple[float, float, float]]  # name -> (low, point, high) cycles
    geometry: dict[str, int]  # name -> int
    sources: dict[str, str]  # "model" / "memory" -> source text
    notes: dict[str, str]  # name -> why the value has a band or is an estimate

    def banded(self) -> list[str]:
        return [k for k, v in self.costs.items() if v[0] != v[2]]


def _triple(where: str, key: str, v: Any) -> tuple[float, float, float]:
    vals = v if isinstance(v, list) else [v]
    if len(vals) == 1:
        vals = vals * 3
    try:
        lo, mid, hi = (float(x) for x in vals)
    except (TypeError, ValueError):
        raise DeviceError(f"devices.toml: {where}.{key} must be a number or [low, point, high], not {v!r}") from None
    if not (0 <= lo <= mid <= hi):
        raise DeviceError(f"devices.toml: {where}.{key} = {v!r}: needs 0 <= low <= point <= high")
    return lo, mid, hi


def timing(name: str, c: dict[str, Any]) -> Timing:
    """The timing model of core `name` (its [cores] entry `c`), every parameter checked."""
    models = raw().get("timing_models", {})
    model = c.get("timing_model")
    if not isinstance(model, str) or model not in models:
        raise DeviceError(f"devices.toml: cores.{name}: timing_model {model!r} is unknown; known: {', '.join(models)}")
    m, mem = models[model], c.get("memory")
    if not isinstance(mem, dict):
        raise DeviceError(
            f"devices.toml: cores.{name} has no [cores.{name}.memory] table (the timing model needs "
            f"{', '.join(MEMORY_COSTS + GEOMETRY_NAMES)})"
        )
    costs = {}
    for key in COST_NAMES:
        if key not in m:
            raise DeviceError(
                f"devices.toml: timing_models.{model} is missing the timing parameter {key!r}; it has "
                f"{', '.join(k for k in m if k in COST_NAMES)}"
            )
        costs[key] = _triple(f"timing_models.{model}", key, m[key])
    for key in OPTIONAL_COSTS:
        if key in m:
            costs[key] = _triple(f"timing_models.{model}", key, m[key])
    for key in MEMORY_COSTS:
        if key not in mem:
            raise DeviceError(
                f"devices.toml: cores.{name}.memory is missing the timing parameter {key!r}; it has "
                f"{', '.join(k for k in mem if k in MEMORY_COSTS + GEOMETRY_NAMES)}"
            )
        costs[key] = _triple(f"cores.{name}.memory", key, mem[key])
    geometry = {}
    for key in GEOMETRY_NAMES:
        v = mem.get(key)
        if v is None:
            raise DeviceError(
                f"devices.toml: cores.{name}.memory is missing the timing parameter {key!r}; it has "
                f"{', '.join(k for k in mem if k in MEMORY_COSTS + GEOMETRY_NAMES)}"
            )
        v = v[0] if isinstance(v, list) and len(v) == 1 else v
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise DeviceError(f"devices.toml: cores.{name}.memory.{key} must be a whole number >= 0, not {v!r}")
        geometry[key] = v
    tsrc = raw().get("timing_sources", {})
    for what, tab in (("model", m), ("memory", mem)):
        if tab.get("source") not in tsrc:
            raise DeviceError(
                f"devices.toml: the {what} table of cores.{name} names no known source "
                f"({tab.get('source')!r}); known: {', '.join(tsrc)}"
            )
    notes = {k.removesuffix("_note"): v for tab in (m, mem) for k, v in tab.items() if k.endswith("_note")}
    return Timing(
        model=model,
        costs=costs,
        geometry=geometry,
        sources={"model": tsrc[m["source"]], "memory": tsrc[mem["source"]]},
        notes=notes,
    )


# old device names, accepted for one release with a note: the hand-written Cortex-M4 cost table
# became the emulated core's own counts
DEVICE_ALIASES = {"cortex-m4-120mhz": "cortex-m4-120"}


def shipped(name: str) -> Core:
    """The shipped core profile `name` (DeviceError listing the shipped ones otherwise)."""
    known = shipped_cores()
    if name not in known:
        raise DeviceError(f"unknown core profile {name!r}; shipped: {', '.join(known)}")
    return shipped_core(name, known[name])


def board_memory(base: Core, icache: bool | None = None, prefetch: bool | None = None) -> Core:
    """`base` with the board's memory where it differs from the profile's (None: the profile's): the
    instruction cache off (`icache=False`; on a Cortex-M33 the flash data reads lose their cache too: the
    STM32 M33 parts read constants over the same C-AHB code bus, through the same ICACHE, ST's "Cache
    coherence and hit rate on STM32C5"), the flash prefetch on or off as the board's HAL configuration
    sets it. A-profile cores and cores without a timing model are returned as they are."""
    if (icache is not False and prefetch is None) or base.timing is None or base.profile != "M":
        return base
    g, costs = dict(base.timing.geometry), dict(base.timing.costs)
    what = []
    if icache is False:
        g.update(icache_entries=0, icache_ways=0)
        if base.qemu_cpu == "cortex-m33":
            g.update(dcache_entries=0, dcache_ways=0)
        what.append("instruction cache off")
    if prefetch is not None:
        costs["no_prefetch"] = (0.0, 0.0, 0.0) if prefetch else (1.0, 1.0, 1.0)
        what.append(f"flash prefetch {'on' if prefetch else 'off'}")
    said = "; ".join(what)
    return dataclasses.replace(
        base,
        name=f"{base.name}-{said.replace(' ', '-').replace(';', '')}",
        description=f"{base.description}; as the board ran: {said}",
        timing=dataclasses.replace(base.timing, geometry=g, costs=costs),
    )
